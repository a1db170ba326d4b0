"""The counting bound (allocation.bounds): hopeless cases end at once; feasible ones are untouched.

Speed is asserted on `outcome.steps` (search recursion steps), never on time.
"""

from __future__ import annotations

from unittest import mock

import pytest
from tests.builders import (
    DRIVER,
    ClaimBuilder,
    SliceBuilder,
    built,
    claim,
    class_,
    device,
    node,
    slice_,
    snapshot,
)

from dralloc import allocation
from dralloc.allocation import errors, outcomes
from dralloc.allocation.features import Features

GPU = class_("gpu", f'device.driver == "{DRIVER}"')


def gpus(count: int) -> SliceBuilder:
    return slice_("s1", devices=[device(f"gpu-{i}").attr("model", "a100" if i < 2 else "t4") for i in range(count)])


def run(slices: list[SliceBuilder], claims: list[ClaimBuilder], *, budget: int | None = 1_000_000) -> outcomes.Outcome:
    snap = snapshot(classes=[GPU], slices=slices)
    return allocation.allocate(snap, [built(c) for c in claims], node(), features=Features(), budget=budget)


def thirteen_of_eleven() -> tuple[list[SliceBuilder], list[ClaimBuilder]]:
    return [gpus(11)], [claim("c0").request("r0", "gpu", count=5), claim("c1").request("r0", "gpu", count=4),
                        claim("c2").request("r0", "gpu", count=4)]


def test_thirteen_of_eleven_is_unsatisfiable_without_searching() -> None:
    """11 devices, 3 claims asking for 13: "does not fit" within the search's short probe."""
    outcome = run(*thirteen_of_eleven())
    assert isinstance(outcome, outcomes.Unsatisfiable)
    assert outcome.steps <= allocation.PROBE_STEPS + 1


def test_thirteen_of_eleven_fits_a_tiny_budget() -> None:
    """The bound answers even with a budget far too small for a search."""
    assert isinstance(run(*thirteen_of_eleven(), budget=2), outcomes.Unsatisfiable)


def test_without_the_bound_the_same_case_needs_a_real_search() -> None:
    """The case is hard for plain backtracking: without the bound it runs out of a 10,000-step budget."""
    with mock.patch("dralloc.allocation.bounds.impossible", return_value=False):
        assert isinstance(run(*thirteen_of_eleven(), budget=10_000), outcomes.BudgetExhausted)


def test_n_wanted_n_minus_one_free_answers_at_once() -> None:
    """Asking for N devices of which only N-1 are free ends in a few steps."""
    slices = [gpus(20)]
    holder = claim("holder").request("r", "gpu").allocated(
        {"request": "r", "driver": DRIVER, "pool": "pool-1", "device": "gpu-7"})
    snap = snapshot(classes=[GPU], slices=slices, allocated=[holder])
    outcome = allocation.allocate(snap, [claim("c0").request("r0", "gpu", count=20).build()], node(),
                                  features=Features())
    assert isinstance(outcome, outcomes.Unsatisfiable)
    assert outcome.steps <= allocation.PROBE_STEPS + 1


def test_matching_not_just_counting() -> None:
    """Enough devices in total but not for the requests' own candidates: two a100 requests of 2 and 1 over 2 a100s."""
    a100 = f'device.attributes["{DRIVER}"].model == "a100"'
    claims = [claim("c0").request("r0", "gpu", count=2, selectors=[a100]),
              claim("c1").request("r0", "gpu", count=1, selectors=[a100]),
              claim("c2").request("r0", "gpu", count=1)]
    outcome = run([gpus(6)], claims)
    assert isinstance(outcome, outcomes.Unsatisfiable)
    assert outcome.steps <= allocation.PROBE_STEPS + 1


def test_feasible_case_is_allocated() -> None:
    """When the requests fit, the bound lets the search find the first-fit answer."""
    outcome = run([gpus(13)], thirteen_of_eleven()[1])
    assert isinstance(outcome, outcomes.Allocated)
    assert [len(a.devices.results) for a in outcome.results] == [5, 4, 4]


def test_admin_requests_are_not_counted() -> None:
    """Admin-access requests can share devices, so they never make the bound give up."""
    claims = [claim("c0").request("r0", "gpu", count=2), claim("c1").request("r0", "gpu", count=2, admin=True)]
    assert isinstance(run([gpus(2)], claims), outcomes.Allocated)


def test_shared_devices_are_not_counted() -> None:
    """Devices allowing multiple allocations can serve several requests, so the bound leaves them alone."""
    slices = [slice_("s1", devices=[device("gpu-0").shared()])]
    claims = [claim("c0").request("r0", "gpu"), claim("c1").request("r0", "gpu")]
    assert isinstance(run(slices, claims), outcomes.Allocated)


def test_bound_never_hides_a_cel_error() -> None:
    """A selector failing at run time on a device the search reaches still fails the call."""
    slices = [slice_("s1", devices=[device("gpu-0"), device("gpu-1").attr("model", "x")])]
    claims = [claim("c0").request("r0", "gpu"),
              claim("c1").request("r0", "gpu", count=2, selectors=[f'device.attributes["{DRIVER}"].model == "x"'])]
    with pytest.raises(errors.InvalidSelectorError, match="CEL runtime error"):
        run(slices, claims)


def test_a_search_past_the_probe_uses_the_whole_budget() -> None:
    """The probe's steps count once: a search that outlives the probe stops at the budget itself.

    Nine devices with one numa value out of eight and eight: the bound (which ignores
    constraints) cannot rule it out, and the search runs until its budget is spent (before,
    the fresh search's limit left out the probe's steps while counting them: 300 of 500).
    """
    slices = [slice_("s1", devices=[device(f"gpu-{i}").attr("numa", i % 2) for i in range(16)])]
    claims = [claim("c0").request("r0", "gpu", count=9).constraint_match(f"{DRIVER}/numa")]
    outcome = run(slices, claims, budget=500)  # the search needs about 700 steps
    assert isinstance(outcome, outcomes.BudgetExhausted), outcome
    assert outcome.steps >= 500
