"""A gang member's bad claim is an input error, also where the gang could not fit anyway.

The counting bound of `gangs.place_gang` (the devices the gang needs against the free ones)
must not stand in for the allocator's validation: on a full cluster a member whose claim
names a DeviceClass that does not exist got "the gang needs 2 devices, 0 are free", the
gang was reported unfit, and no error was counted anywhere (issue 16).
"""

from __future__ import annotations

import pytest
from tests.builders import DRIVER, built, claim, class_, device, node, result, slice_, snapshot

from dralloc.allocation import errors, gangs
from dralloc.allocation.features import Features

GPU = class_("gpu", f'device.driver == "{DRIVER}"')


def _member(name: str, device_class: str) -> gangs.Member:
    return gangs.Member(name, (built(claim(f"{name}-c").request("r", device_class)),), device_class)


def test_a_missing_class_is_an_error_on_a_full_cluster() -> None:
    full = snapshot(classes=[GPU], slices=[slice_("s", node="n1", pool="n1", devices=[device("gpu-0")])],
                    allocated=[claim("taken").allocated(result("r", "gpu-0", pool="n1"))])
    with pytest.raises(errors.AllocationInputError, match="no-such-class"):
        gangs.place_gang(full, [_member("a", "gpu"), _member("b", "no-such-class")], [node("n1")], features=Features())


def test_the_bound_still_prunes_a_gang_of_good_claims() -> None:
    full = snapshot(classes=[GPU], slices=[slice_("s", node="n1", pool="n1", devices=[device("gpu-0")])],
                    allocated=[claim("taken").allocated(result("r", "gpu-0", pool="n1"))])
    outcome = gangs.place_gang(full, [_member("a", "gpu"), _member("b", "gpu")], [node("n1")], features=Features())
    assert isinstance(outcome, gangs.GangUnfit)
    assert outcome.steps == 0  # decided by counting, without an allocator call
    assert "the gang needs 2 devices, 0 are free" in outcome.message(2)
