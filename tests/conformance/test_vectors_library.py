"""Every conformance vector, run through the allocation library.

Exact vectors must produce upstream's devices; `exact: false` vectors must
produce a valid allocation of the same shape (and, with our sorted search
order, in practice the listed one). Unschedulable and error vectors must end
the same way (errors: the distinctive phrase of upstream's message).
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.conformance import validity, vectors

from dralloc import allocation
from dralloc.allocation import errors, outcomes
from dralloc.allocation.features import Features
from dralloc.allocation.pools import NodeView
from dralloc.allocation.snapshots import Snapshot
from dralloc.model import claims, classes, conversion, devices

CASES = vectors.load_all()


def run_vector(case: dict[str, Any], release: str) -> outcomes.Outcome:
    features = Features.only(case.get("features") or [], release=release)
    objects = case["objects"]
    snapshot = Snapshot.build(
        device_classes=[conversion.parse_as(classes.DeviceClass, o) for o in objects.get("deviceClasses") or []],
        resource_slices=[conversion.parse_as(devices.ResourceSlice, o) for o in objects.get("resourceSlices") or []],
        allocated_claims=[conversion.parse_as(claims.ResourceClaim, o) for o in objects.get("allocatedClaims") or []],
        features=features,
    )
    node = NodeView(case["node"]["name"], case["node"].get("labels") or {},
                    frozenset(case["node"].get("declaredFeatures") or ()))
    to_allocate = [conversion.parse_as(claims.ResourceClaim, o) for o in objects.get("claims") or []]
    return allocation.allocate(snapshot, to_allocate, node, features=features)


RUNS = [(c, r) for c in CASES for r in vectors.releases(c)]


@pytest.mark.parametrize(("case", "release"), RUNS, ids=[f"{c['name']}@{r}" for c, r in RUNS])
def test_vector(case: dict[str, Any], release: str) -> None:
    expect = case["expect"]
    if "error" in expect:
        with pytest.raises(errors.AllocationInputError) as info:
            run_vector(case, release)
        assert expect["error"] in str(info.value)
        if "failedOnNode" in expect:  # upstream's ErrFailedAllocationOnNode: only this node is ruled out
            assert isinstance(info.value, errors.InvalidPoolOnNodeError) == expect["failedOnNode"], info.value
        return
    outcome = run_vector(case, release)
    if expect.get("unschedulable"):
        assert isinstance(outcome, outcomes.Unsatisfiable), outcome
        return
    assert isinstance(outcome, outcomes.Allocated), outcome
    assert len(outcome.results) == len(expect["results"])
    for actual_model, wanted in zip(outcome.results, expect["results"], strict=True):
        actual = conversion.to_raw(actual_model)
        if expect.get("exact", True):
            problem = vectors.same_allocation(actual, wanted["allocation"])
        else:
            problem = vectors.same_shape(actual, wanted["allocation"])
        assert problem is None, problem
    if not expect.get("exact", True):
        assert validity.problems(case, outcome) == []
