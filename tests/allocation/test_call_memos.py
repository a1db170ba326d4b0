"""What the allocator remembers from one call to the next (issue 31) never answers for inputs that changed.

Placement calls `allocate` with the same claim objects and node views again and again, so plans,
node scopes and selector read plans are kept between calls. Each is keyed by what it depends on:
these tests change one input between two calls and expect the answer of the changed input.
"""

from __future__ import annotations

import dataclasses

import pytest
from tests.builders import DRIVER, SliceBuilder, claim, class_, device, node, slice_, snapshot

from dralloc.allocation import allocate, errors, outcomes
from dralloc.allocation.features import Features

MODEL = f'device.attributes["{DRIVER}"].model'


def _devices(outcome: outcomes.Outcome) -> list[str]:
    assert isinstance(outcome, outcomes.Allocated), outcome
    return [r.device for result in outcome.results for r in result.devices.results]


def _slice(*models: str) -> SliceBuilder:
    return slice_("s1", devices=[device(f"gpu-{i}").attr("model", m) for i, m in enumerate(models)])


def test_a_device_class_replaced_between_calls_is_read_again() -> None:
    """The same claim object planned against a new class object of the same name gets the new selectors."""
    wanted = claim("c").request("r", "gpu").build()
    first = snapshot(classes=[class_("gpu", f'{MODEL} == "a"')], slices=[_slice("a", "b")])
    assert _devices(allocate(first, [wanted], node(), features=Features())) == ["gpu-0"]
    second = dataclasses.replace(first, classes={"gpu": class_("gpu", f'{MODEL} == "b"').build()})
    assert _devices(allocate(second, [wanted], node(), features=Features())) == ["gpu-1"]
    assert _devices(allocate(first, [wanted], node(), features=Features())) == ["gpu-0"]


def test_the_same_claim_under_other_features_is_checked_again() -> None:
    """A claim planned without error is refused when the next call's features disable what it asks for."""
    wanted = claim("c").request("r", "gpu", admin=True).build()
    snap = snapshot(classes=[class_("gpu")], slices=[_slice("a")])
    assert _devices(allocate(snap, [wanted], node(), features=Features())) == ["gpu-0"]
    with pytest.raises(errors.FeatureDisabledError, match="admin access is requested"):
        allocate(snap, [wanted], node(), features=Features(admin_access=False))


def test_other_claims_with_one_in_common_are_planned_as_themselves() -> None:
    """Plans kept for a list of claims answer only that very list, in that order."""
    one = claim("one").request("r", "gpu", selectors=[f'{MODEL} == "b"']).build()
    two = claim("two").request("r", "gpu", count=2).build()
    snap = snapshot(classes=[class_("gpu")], slices=[_slice("a", "b", "c", "d")])
    assert _devices(allocate(snap, [one, two], node(), features=Features())) == ["gpu-1", "gpu-0", "gpu-2"]
    assert _devices(allocate(snap, [two, one], node(), features=Features())) == ["gpu-0", "gpu-2", "gpu-1"]
    assert _devices(allocate(snap, [two], node(), features=Features())) == ["gpu-0", "gpu-1"]


def test_a_changed_device_attribute_is_seen() -> None:
    """Devices alike in what a selector reads share its result; a new slice object whose device changed
    one of those attributes gets its own."""
    wanted = claim("c").request("r", "gpu", selectors=[f'{MODEL} == "a"']).build()
    gpu = class_("gpu", f'device.driver == "{DRIVER}" && {MODEL} != "broken"')
    before = snapshot(classes=[gpu], slices=[_slice("a", "a")])
    assert _devices(allocate(before, [wanted], node(), features=Features())) == ["gpu-0"]
    after = snapshot(classes=[gpu], slices=[_slice("broken", "a")])
    assert _devices(allocate(after, [wanted], node(), features=Features())) == ["gpu-1"]
    gone = snapshot(classes=[gpu], slices=[_slice("b", "broken")])
    assert isinstance(allocate(gone, [wanted], node(), features=Features()), outcomes.Unsatisfiable)


def test_one_node_view_under_other_features_gets_its_own_pools() -> None:
    """A node's pools are kept per view object and features: other features gather them again (here
    a slice with shared counters, which only DRAPartitionableDevices reads)."""
    partitioned = slice_("s1", devices=[device("gpu-0").attr("model", "a").consumes("set", {"mem": "1"})])
    partitioned = partitioned.counter_set("set", {"mem": "8"})
    wanted = claim("c").request("r", "gpu").build()
    snap = snapshot(classes=[class_("gpu")], slices=[partitioned])
    view = node()
    assert _devices(allocate(snap, [wanted], view, features=Features())) == ["gpu-0"]
    assert isinstance(allocate(snap, [wanted], view, features=Features(partitionable_devices=False)),
                      outcomes.Unsatisfiable)
    assert _devices(allocate(snap, [wanted], view, features=Features())) == ["gpu-0"]
