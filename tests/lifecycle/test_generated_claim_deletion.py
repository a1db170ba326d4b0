"""Deleting claims generated for pods (lifecycle.claims.claim_plan, last step).

A claim whose controller owner is a core/v1 Pod is deleted, with its UID as the
precondition, once nobody reserves it and that pod (that very UID) is gone or
done. Claims of live pods, user claims, claims owned by other kinds and claims
already being deleted stay. A property checks that a claim reserved by anyone is
never deleted.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.lifecycle.objects import by_uid, claim, consumer, pod

from dralloc.lifecycle import claims, plans
from dralloc.model import conversion
from dralloc.model.claims import ResourceClaim
from dralloc.model.pods import Pod

RUNNING = pod("run", phase="Running", node="n1")
PENDING = pod("pend", phase="Pending")
DONE = pod("done", phase="Succeeded", node="n1")
FAILED = pod("fail", phase="Failed", node="n1")
GONE = pod("gone")
DELETED_UNSCHEDULED = pod("del-unsched", deleting=True)
DELETED_RUNNING = pod("del-run", phase="Running", node="n1", deleting=True)
VIEW = by_uid(RUNNING, PENDING, DONE, FAILED, DELETED_UNSCHEDULED, DELETED_RUNNING)


def delete(name: str = "c") -> plans.DeleteClaim:
    return plans.DeleteClaim("default", name, f"uid-{name}")


def owned_by(kind: str, api_version: str, *, controller: bool = True) -> ResourceClaim:
    raw: dict[str, Any] = conversion.to_raw(claim("c"))
    raw["metadata"]["ownerReferences"] = [
        {"apiVersion": api_version, "kind": kind, "name": "run", "uid": "uid-run", "controller": controller}]
    parsed: ResourceClaim = conversion.parse_as(ResourceClaim, raw)
    return parsed


@dataclasses.dataclass(frozen=True)
class Case:
    claim: ResourceClaim
    deleted: bool


CASES: dict[str, Case] = {
    "pod-succeeded-claim-deleted": Case(claim("c", owner=DONE, entry="gpu"), True),
    "pod-failed-claim-deleted": Case(claim("c", owner=FAILED, entry="gpu"), True),
    "pod-gone-claim-deleted": Case(claim("c", owner=GONE, entry="gpu"), True),
    "pod-replaced-by-same-name-claim-deleted": Case(claim("c", owner=pod("run", uid="older"), entry="gpu"), True),
    "pod-deleted-before-scheduling-claim-deleted": Case(claim("c", owner=DELETED_UNSCHEDULED, entry="gpu"), True),
    "pod-running-claim-kept": Case(claim("c", owner=RUNNING, entry="gpu"), False),
    "pod-pending-claim-kept": Case(claim("c", owner=PENDING, entry="gpu"), False),
    "pod-terminating-on-node-claim-kept": Case(claim("c", owner=DELETED_RUNNING, entry="gpu"), False),
    "extended-resource-claim-without-annotation-deleted": Case(claim("c", owner=DONE), True),
    "user-claim-never-deleted": Case(claim("c"), False),
    "already-deleting-not-deleted-again": Case(claim("c", owner=DONE, entry="gpu", deleting=True), False),
    "reserved-by-finished-owner-dropped-then-deleted": Case(
        claim("c", owner=DONE, entry="gpu", reserved=[consumer(DONE)], allocated=True), True),
    "reserved-by-another-live-pod-kept": Case(
        claim("c", owner=DONE, entry="gpu", reserved=[consumer(RUNNING)], allocated=True), False),
    "owner-not-controller-kept": Case(owned_by("Pod", "v1", controller=False), False),
    "controller-of-other-kind-kept": Case(owned_by("Job", "batch/v1"), False),
    "controller-pod-of-other-api-version-kept": Case(owned_by("Pod", "example.com/v1"), False),
}


@pytest.mark.parametrize("case", list(CASES.values()), ids=list(CASES))
def test_generated_claim_deletion(case: Case) -> None:
    steps = claims.claim_plan(case.claim, pods_by_uid=VIEW)
    deletes = [s for s in steps if isinstance(s, plans.DeleteClaim)]
    assert deletes == ([delete()] if case.deleted else [])


def test_delete_comes_after_release() -> None:
    """A protected, allocated claim of a finished pod: drop, deallocate, unprotect, then delete."""
    c = claim("c", owner=DONE, entry="gpu", reserved=[consumer(DONE)], allocated=True, protected=True)
    kinds = [type(s) for s in claims.claim_plan(c, pods_by_uid=VIEW)]
    assert kinds == [plans.DropReservations, plans.Deallocate, plans.RemoveFinalizer, plans.DeleteClaim]


def test_delete_carries_the_claim_uid() -> None:
    """The delete is preconditioned on this claim's UID, never a successor of the same name."""
    c = claim("c", uid="the-one", owner=GONE, entry="gpu")
    assert plans.DeleteClaim("default", "c", "the-one") in claims.claim_plan(c, pods_by_uid={})


POPULATION = [RUNNING, PENDING, DONE, FAILED, GONE, DELETED_UNSCHEDULED, DELETED_RUNNING]


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(POPULATION), st.lists(st.sampled_from(POPULATION), max_size=4),
       st.lists(st.sampled_from(POPULATION), max_size=7))
def test_reserved_or_needed_claims_are_never_deleted(owner: Pod, reservers: list[Pod], present: list[Pod]) -> None:
    """A generated claim is deleted only if no reservation survives and its pod is gone or done."""
    view = by_uid(*present)
    c = claim("c", owner=owner, entry="gpu", reserved=[consumer(p) for p in reservers], allocated=bool(reservers))
    steps = claims.claim_plan(c, pods_by_uid=view)
    if any(isinstance(s, plans.DeleteClaim) for s in steps):
        assert all(p.metadata.uid not in view or claims.pod_is_done(p) for p in reservers)
        assert owner.metadata.uid not in view or claims.pod_is_done(owner)
