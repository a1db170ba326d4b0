"""Claim constraints as add/remove pairs (allocation.constraints): rollback leaves no trace."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from tests.builders import DRIVER, device, slice_

from dralloc.allocation.constraints import DistinctAttribute, MatchAttribute
from dralloc.allocation.pools import DeviceInfo

NUMA = f"{DRIVER}/numa"


def info(name: str = "d", driver: str = DRIVER, **attributes: Any) -> DeviceInfo:
    built = device(name)
    for key, value in attributes.items():
        built = built.attr(key.replace("__", "/"), value)
    s = slice_("s", driver=driver, devices=[built]).build()
    return DeviceInfo(s, s.spec.devices[0])


def match(attribute: str = NUMA, *, list_types: bool = False, requests: tuple[str, ...] = ()) -> MatchAttribute:
    return MatchAttribute(requests, attribute, list_types=list_types, owner="claim default/c0, constraint #0")


def distinct(attribute: str = NUMA, *, list_types: bool = False) -> DistinctAttribute:
    return DistinctAttribute((), attribute, list_types=list_types, owner="claim default/c0, constraint #0")


class TestMatchAttribute:
    def test_first_device_sets_the_value(self) -> None:
        """Any device with the attribute is accepted first."""
        assert match().add(info(numa=1)) is True

    def test_device_with_other_value_is_rejected(self) -> None:
        """Once a value is set, a device with another value is rejected."""
        constraint = match()
        constraint.add(info(numa=1))
        assert constraint.add(info(numa=2)) is False

    def test_device_without_the_attribute_is_rejected(self) -> None:
        """A device lacking the attribute never satisfies matchAttribute."""
        assert match().add(info(model="a")) is False

    def test_int_never_equals_string(self) -> None:
        """int 1 and string "1" are different values."""
        constraint = match()
        constraint.add(info(numa=1))
        assert constraint.add(info(numa="1")) is False

    def test_short_name_qualified_with_the_driver(self) -> None:
        """A short attribute name belongs to the device's driver domain."""
        assert match(NUMA).add(info(numa=0)) is True

    def test_other_domain_does_not_see_short_names(self) -> None:
        """A qualified name of another domain does not find the driver's short-named attribute."""
        assert match("other.example.com/numa").add(info(numa=0)) is False

    def test_explicitly_qualified_name_wins_over_short_name(self) -> None:
        """If a device has both `numa` and `<driver>/numa`, the qualified one is used."""
        constraint = match()
        constraint.add(info(numa=5, **{f"{DRIVER}__numa": 1}))
        assert constraint.add(info(numa=1)) is True

    def test_removing_everything_forgets_the_value(self) -> None:
        """After removing every added device, a device with a different value is accepted again."""
        constraint = match()
        constraint.add(info(numa=1))
        constraint.add(info(numa=1))
        constraint.remove()
        constraint.remove()
        assert (constraint.current, constraint.add(info(numa=2))) == (None, True)

    def test_partial_rollback_keeps_the_earlier_value(self) -> None:
        """Removing the last device keeps the value set by the earlier ones."""
        constraint = match()
        constraint.add(info(numa=1))
        constraint.add(info(numa=1))
        constraint.remove()
        assert constraint.add(info(numa=2)) is False

    def test_rejected_add_changes_nothing(self) -> None:
        """A rejected device needs no remove and leaves the state as it was."""
        constraint = match()
        constraint.add(info(numa=1))
        before = constraint.current
        constraint.add(info(numa=2))
        assert constraint.current == before

    def test_list_values_keep_a_running_intersection(self) -> None:
        """With list attributes, devices match while the intersection of their lists stays non-empty."""
        constraint = match(list_types=True)
        assert (constraint.add(info(numa=[1, 2])), constraint.add(info(numa=[2, 3])),
                constraint.add(info(numa=[3]))) == (True, True, False)

    def test_list_intersection_restored_on_rollback(self) -> None:
        """Removing a list device restores the intersection before it (upstream forgets to)."""
        constraint = match(list_types=True)
        constraint.add(info(numa=[1, 2]))
        constraint.add(info(numa=[2, 3]))
        constraint.remove()
        assert constraint.add(info(numa=[1])) is True

    def test_scalar_matches_list_containing_it(self) -> None:
        """A scalar value matches a list attribute that includes it."""
        constraint = match(list_types=True)
        constraint.add(info(numa=[1, 2]))
        assert constraint.add(info(numa=2)) is True

    def test_list_value_without_the_gate_is_taken_first_and_matches_nothing(self) -> None:
        """Without DRAListTypeAttributes a list value cannot be compared: as upstream, it may be
        the first device, and no later device matches it (nor a later list value a scalar)."""
        constraint = match()
        assert constraint.add(info(numa=[1, 2])) is True
        assert constraint.add(info(numa=1)) is False
        scalar_first = match()
        assert scalar_first.add(info(numa=1)) is True
        assert scalar_first.add(info(numa=[1, 2])) is False

    def test_attribute_without_a_value_matches_nothing_with_the_gate_on(self) -> None:
        """With DRAListTypeAttributes an attribute without a value is no set of elements at all."""
        assert match(list_types=True).add(info(numa={})) is False

    def test_versions_compare_as_strings(self) -> None:
        """Versions are equal when their strings are equal."""
        s = slice_("s", devices=[device("a").version("v", "1.2.3"), device("b").version("v", "1.2.3"),
                                 device("c").version("v", "1.2.4")]).build()
        a, b, c = (DeviceInfo(s, d) for d in s.spec.devices)
        constraint = match(f"{DRIVER}/v")
        assert (constraint.add(a), constraint.add(b), constraint.add(c)) == (True, True, False)


class TestDistinctAttribute:
    def test_uncomparable_value_is_only_accepted_first(self) -> None:
        """Without DRAListTypeAttributes a list value may be the first device; later scalars stay
        distinct from it, a later list value is rejected (upstream's type switch falls through)."""
        constraint = distinct()
        assert constraint.add(info(numa=[1, 2])) is True
        assert constraint.add(info(numa=1)) is True
        assert constraint.add(info(numa=[3])) is False

    def test_repeated_value_is_rejected(self) -> None:
        """A value already taken by a covered device is rejected."""
        constraint = distinct()
        constraint.add(info(numa=1))
        assert constraint.add(info(numa=1)) is False

    def test_every_earlier_value_counts_not_only_the_last(self) -> None:
        """A value taken two devices ago is still rejected (upstream compares only the last one)."""
        constraint = distinct()
        constraint.add(info(numa=1))
        constraint.add(info(numa=2))
        assert constraint.add(info(numa=1)) is False

    def test_removed_value_is_free_again(self) -> None:
        """After rollback the removed device's value can be taken again."""
        constraint = distinct()
        constraint.add(info(numa=1))
        constraint.add(info(numa=2))
        constraint.remove()
        assert constraint.add(info(numa=2)) is True

    def test_device_without_the_attribute_is_rejected(self) -> None:
        """A device lacking the attribute never satisfies distinctAttribute."""
        assert distinct().add(info(model="a")) is False

    def test_overlapping_lists_are_not_distinct(self) -> None:
        """With list attributes, two devices sharing any element are not distinct."""
        constraint = distinct(list_types=True)
        constraint.add(info(numa=[1, 2]))
        assert (constraint.add(info(numa=[2, 3])), constraint.add(info(numa=[3, 4]))) == (False, True)


class TestCovers:
    def test_empty_request_list_covers_everything(self) -> None:
        """A constraint without requests applies to every request and subrequest."""
        assert (match().covers("r0", None), match().covers("r1", "s0")) == (True, True)

    def test_parent_name_covers_every_subrequest(self) -> None:
        """Naming a firstAvailable request covers whichever subrequest gets chosen."""
        assert match(requests=("r1",)).covers("r1", "s0") is True

    def test_subrequest_name_covers_only_that_subrequest(self) -> None:
        """Naming `req/sub` covers that subrequest and no other."""
        constraint = match(requests=("r1/s0",))
        assert (constraint.covers("r1", "s0"), constraint.covers("r1", "s1"), constraint.covers("r0", None)) == (
            True, False, False)


OPS = st.lists(st.one_of(st.integers(0, 2).map(lambda v: ("add", v)), st.just(("remove", None))), max_size=12)


@settings(max_examples=200, deadline=None)
@given(OPS, st.booleans())
def test_any_add_remove_sequence_equals_a_fresh_replay(ops: list[tuple[str, int | None]], is_match: bool) -> None:
    """After any sequence of adds and rollbacks, the constraint accepts exactly what a fresh one given the kept devices accepts."""
    make = match if is_match else distinct
    constraint = make()
    kept: list[int] = []
    for op, value in ops:
        if op == "add":
            assert value is not None
            if constraint.add(info(numa=value)):
                kept.append(value)
        elif kept:
            constraint.remove()
            kept.pop()
    fresh = make()
    for value in kept:
        assert fresh.add(info(numa=value)) is True
    for probe in range(3):
        accepted = constraint.add(info(numa=probe))
        if accepted:
            constraint.remove()
        expected = fresh.add(info(numa=probe))
        if expected:
            fresh.remove()
        assert accepted is expected
