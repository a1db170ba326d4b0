"""A case through dralloc's allocation library, in-process, answered in the oracle's shape.

The call is the conformance runner's (tests/conformance/test_vectors_library.py):
`Features.only(gates)`, `Snapshot.build(...)` from the case's objects, one
`allocation.allocate(...)` of all claims on the case's node. The answer has the keys of
an `oracle batch` outcome: `status` (allocated, unschedulable, error, budget-exhausted,
input-error when dralloc cannot read the objects, crash for anything else), `claims`
(namespace, name, allocation) and `message`.
"""

from __future__ import annotations

import traceback
from typing import Any

import pydantic

from dralloc import allocation
from dralloc.allocation import errors, outcomes
from dralloc.allocation import features as features_
from dralloc.allocation.features import Features
from dralloc.allocation.pools import NodeView
from dralloc.allocation.snapshots import Snapshot
from dralloc.model import claims, classes, conversion, devices


def release_of_module(version: str) -> str:
    """The Kubernetes release of a k8s.io/dynamic-resource-allocation version: 'v0.37.2' -> '1.37'."""
    major_minor = version.lstrip("v").split(".")
    return f"1.{major_minor[1]}"


def release_of(case: dict[str, Any]) -> str:
    """The newest release dralloc reproduces that the case's `versions` lists (default: dralloc's)."""
    listed = [str(v) for v in case.get("versions") or []]
    return next((r for r in reversed(features_.RELEASES) if r in listed), features_.DEFAULT_RELEASE)


def answer(case: dict[str, Any], *, release: str | None = None,
           budget: int | None = allocation.DEFAULT_BUDGET) -> dict[str, Any]:
    """dralloc's answer at `release` (default: `release_of(case)`)."""
    objects = case["objects"]
    out: dict[str, Any] = {"name": case.get("name"), "claims": [], "message": ""}
    try:
        features = Features.only(case.get("features") or [], release=release or release_of(case))
        snapshot = Snapshot.build(
            device_classes=[conversion.parse_as(classes.DeviceClass, o) for o in objects.get("deviceClasses") or []],
            resource_slices=[conversion.parse_as(devices.ResourceSlice, o)
                             for o in objects.get("resourceSlices") or []],
            allocated_claims=[conversion.parse_as(claims.ResourceClaim, o)
                              for o in objects.get("allocatedClaims") or []],
            features=features,
        )
        node = NodeView(case["node"]["name"], case["node"].get("labels") or {},
                        frozenset(case["node"].get("declaredFeatures") or ()))
        to_allocate = [conversion.parse_as(claims.ResourceClaim, o) for o in objects.get("claims") or []]
        outcome = allocation.allocate(snapshot, to_allocate, node, features=features, budget=budget, explain=False)
    except errors.AllocationInputError as exc:
        out.update(status="error", message=str(exc),
                   failedOnNode=isinstance(exc, errors.InvalidPoolOnNodeError))
        return out
    except (conversion.ObjectError, pydantic.ValidationError) as exc:
        out.update(status="input-error", message=str(exc))
        return out
    except Exception as exc:  # a crash is a finding, not a reason to stop the run
        out.update(status="crash", message=f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}")
        return out
    if isinstance(outcome, outcomes.Allocated):
        out["status"] = "allocated"
        for claim, result in zip(to_allocate, outcome.results, strict=True):
            out["claims"].append({"namespace": claim.metadata.namespace or "default", "name": claim.metadata.name,
                                  "allocation": conversion.to_raw(result)})
    elif isinstance(outcome, outcomes.BudgetExhausted):
        out.update(status="budget-exhausted", message=outcome.message())
    else:
        out.update(status="unschedulable", message=outcome.message())
    return out
