"""Deallocation and the delete-protection finalizer (lifecycle.claims.claim_plan).

Deallocation follows the transition "the last consumer went away" (a drop that
leaves nobody), a claim being deleted that nobody reserves, or, only when `now`
is given, a stranded allocation: nobody reserves it, no pod that may still run
refers to it, and it is older than the grace period. The finalizer goes right
after a deallocation and from an unreserved claim being deleted. Properties: a
reserved claim is never deallocated, and `Deallocate` always follows a state in
which nobody reserves the claim.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.lifecycle.objects import by_uid, claim, claim_entry, consumer, pod, template_entry

from dralloc.lifecycle import claims, plans
from dralloc.model.claims import ResourceClaim
from dralloc.model.pods import Pod

FINALIZER = claims.DELETE_PROTECTION_FINALIZER
RUNNING = pod("run", phase="Running", node="n1")
DONE = pod("done", phase="Succeeded", node="n1")
NOW = dt.datetime(2030, 1, 1, 12, 0, 0, tzinfo=dt.UTC)
LONG_AGO = "2030-01-01T11:00:00Z"
JUST_NOW = "2030-01-01T11:59:50Z"

DROP_ALL = plans.DropReservations("default", "c", ())
DEALLOC = plans.Deallocate("default", "c")
UNPROTECT = plans.RemoveFinalizer("default", "c", FINALIZER)


@dataclasses.dataclass(frozen=True)
class Case:
    claim: ResourceClaim
    expect: tuple[plans.PlanStep, ...]
    pods: tuple[Pod, ...] = (RUNNING, DONE)
    now: dt.datetime | None = None


CASES: dict[str, Case] = {
    "last-consumer-finished-deallocates-and-unprotects": Case(
        claim("c", reserved=[consumer(DONE)], allocated=True, protected=True), (DROP_ALL, DEALLOC, UNPROTECT)),
    "last-consumer-finished-without-finalizer-still-deallocates": Case(
        claim("c", reserved=[consumer(DONE)], allocated=True), (DROP_ALL, DEALLOC)),
    "one-consumer-left-keeps-allocation": Case(
        claim("c", reserved=[consumer(DONE), consumer(RUNNING)], allocated=True, protected=True),
        (plans.DropReservations("default", "c", (consumer(RUNNING),)),)),
    "reserved-and-live-nothing-to-do": Case(
        claim("c", reserved=[consumer(RUNNING)], allocated=True, protected=True), ()),
    "allocated-never-reserved-is-left-alone": Case(claim("c", allocated=True, protected=True), ()),
    "unallocated-unreserved-keeps-finalizer-until-deletion": Case(claim("c", protected=True), ()),
    "deleting-allocated-unreserved-deallocates-then-unprotects": Case(
        claim("c", allocated=True, protected=True, deleting=True), (DEALLOC, UNPROTECT)),
    "deleting-unallocated-unprotects": Case(claim("c", protected=True, deleting=True), (UNPROTECT,)),
    "deleting-but-reserved-waits": Case(
        claim("c", reserved=[consumer(RUNNING)], allocated=True, protected=True, deleting=True), ()),
    "deleting-last-consumer-finished": Case(
        claim("c", reserved=[consumer(DONE)], allocated=True, protected=True, deleting=True),
        (DROP_ALL, DEALLOC, UNPROTECT)),
    "deleting-without-finalizer-nothing-to-release": Case(claim("c", deleting=True), ()),
    "stranded-old-allocation-deallocated-with-clock": Case(
        claim("c", allocated=True, allocated_at=LONG_AGO, protected=True), (DEALLOC, UNPROTECT), now=NOW),
    "stranded-young-allocation-kept": Case(
        claim("c", allocated=True, allocated_at=JUST_NOW, protected=True), (), now=NOW),
    "stranded-without-clock-kept": Case(claim("c", allocated=True, allocated_at=LONG_AGO, protected=True), ()),
    "stranded-falls-back-to-creation-time": Case(
        claim("c", allocated=True, created_at=JUST_NOW), (), now=NOW),
    "stranded-without-any-timestamp-counts-as-old": Case(claim("c", allocated=True), (DEALLOC,), now=NOW),
    "unreserved-but-wanted-by-pending-pod-kept": Case(
        claim("c", allocated=True, allocated_at=LONG_AGO),
        (), pods=(pod("waiting", phase="Pending", entries={"g": claim_entry("c")}),), now=NOW),
    "unreserved-wanted-by-pod-via-generated-status-kept": Case(
        claim("c", allocated=True, allocated_at=LONG_AGO),
        (), pods=(pod("waiting", entries={"g": template_entry("t")}, statuses={"g": "c"}),), now=NOW),
    "unreserved-wanted-by-pod-via-extended-status-kept": Case(
        claim("c", allocated=True, allocated_at=LONG_AGO),
        (), pods=(pod("waiting", extended_status={"resourceClaimName": "c", "requestMappings": []}),), now=NOW),
    "unreserved-wanted-only-by-finished-pod-deallocated": Case(
        claim("c", allocated=True, allocated_at=LONG_AGO),
        (DEALLOC,), pods=(pod("old", phase="Failed", entries={"g": claim_entry("c")}),), now=NOW),
    "unreserved-wanted-by-pod-in-other-namespace-deallocated": Case(
        claim("c", allocated=True, allocated_at=LONG_AGO),
        (DEALLOC,), pods=(pod("w", namespace="other", entries={"g": claim_entry("c")}),), now=NOW),
    "naive-clock-is-utc": Case(
        claim("c", allocated=True, allocated_at=JUST_NOW), (), now=NOW.replace(tzinfo=None)),
}


@pytest.mark.parametrize("case", list(CASES.values()), ids=list(CASES))
def test_deallocation(case: Case) -> None:
    assert claims.claim_plan(case.claim, pods_by_uid=by_uid(*case.pods), now=case.now) == case.expect


def test_grace_is_adjustable() -> None:
    """A shorter grace makes a young stranded allocation eligible."""
    c = claim("c", allocated=True, allocated_at=JUST_NOW)
    plan = claims.claim_plan(c, pods_by_uid={}, now=NOW, unreserved_grace=dt.timedelta(seconds=5))
    assert plan == (DEALLOC,)


class TestFinalizersForAllocation:
    def test_adds_the_finalizer(self) -> None:
        """An allocator writes the claim's finalizers plus delete protection, keeping others."""
        c = claim("c").model_copy(update={"metadata": claim("c").metadata.model_copy(update={"finalizers": ("x",)})})
        assert claims.finalizers_for_allocation(c) == ("x", FINALIZER)

    def test_present_finalizer_is_not_repeated(self) -> None:
        """Adding it twice leaves one."""
        assert claims.finalizers_for_allocation(claim("c", protected=True)) == (FINALIZER,)


class TestUnschedulableCondition:
    def test_shape(self) -> None:
        """PodScheduled=False with reason Unschedulable and the message, as kube-scheduler writes it."""
        assert claims.pod_condition_unschedulable("0/3 nodes are available") == {
            "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
            "message": "0/3 nodes are available"}

    def test_transition_time_and_generation(self) -> None:
        """With a clock and a generation, lastTransitionTime (UTC, seconds) and observedGeneration are set."""
        cond = claims.pod_condition_unschedulable("m", now=NOW.replace(microsecond=5), observed_generation=3)
        assert cond["lastTransitionTime"] == "2030-01-01T12:00:00Z"
        assert cond["observedGeneration"] == 3


# --- properties ---------------------------------------------------------------------------

POPULATION = [RUNNING, DONE, pod("pend", phase="Pending"), pod("gone"), pod("x", deleting=True)]
DAEMON = {"apiGroup": "apps", "resource": "daemonsets", "name": "agent", "uid": "uid-ds"}


@st.composite
def situations(draw: st.DrawFn) -> tuple[ResourceClaim, dict[str, Pod], dt.datetime | None]:
    reserved: list[dict[str, Any]] = draw(
        st.lists(st.sampled_from([*(consumer(p) for p in POPULATION), DAEMON]), max_size=4))
    allocated = draw(st.booleans()) or bool(reserved)
    owner = draw(st.sampled_from([None, *POPULATION]))
    c = claim("c", reserved=reserved, allocated=allocated, owner=owner,
              allocated_at=draw(st.sampled_from([None, LONG_AGO, JUST_NOW])),
              protected=draw(st.booleans()), deleting=draw(st.booleans()))
    view = by_uid(*draw(st.lists(st.sampled_from(POPULATION), max_size=5)))
    return c, view, draw(st.sampled_from([None, NOW]))


def _keep_after(c: ResourceClaim, steps: tuple[plans.PlanStep, ...]) -> tuple[Any, ...]:
    for step in steps:
        if isinstance(step, plans.DropReservations):
            return step.keep
    return tuple(c.status.reserved_for)


@settings(max_examples=150, deadline=None)
@given(situations())
def test_never_deallocates_a_reserved_claim(situation: tuple[ResourceClaim, dict[str, Pod], dt.datetime | None]) -> None:
    """Deallocate appears only when the reservations left after the plan's drop are none."""
    c, view, now = situation
    steps = claims.claim_plan(c, pods_by_uid=view, now=now)
    if any(isinstance(s, plans.Deallocate) for s in steps):
        assert _keep_after(c, steps) == ()
        assert c.status.allocation is not None


@settings(max_examples=150, deadline=None)
@given(situations())
def test_finalizer_goes_only_from_unallocated_unreserved(
    situation: tuple[ResourceClaim, dict[str, Pod], dt.datetime | None],
) -> None:
    """RemoveFinalizer comes after the plan leaves the claim unreserved and unallocated, never before."""
    c, view, now = situation
    steps = claims.claim_plan(c, pods_by_uid=view, now=now)
    kinds = [type(s) for s in steps]
    if plans.RemoveFinalizer in kinds:
        assert _keep_after(c, steps) == ()
        if c.status.allocation is not None:
            assert kinds.index(plans.Deallocate) < kinds.index(plans.RemoveFinalizer)


@settings(max_examples=150, deadline=None)
@given(situations())
def test_steps_come_in_upstream_order(situation: tuple[ResourceClaim, dict[str, Pod], dt.datetime | None]) -> None:
    """Drop, then deallocate, then release the finalizer, then delete; each at most once."""
    c, view, now = situation
    order = [plans.DropReservations, plans.Deallocate, plans.RemoveFinalizer, plans.DeleteClaim]
    kinds = [type(s) for s in claims.claim_plan(c, pods_by_uid=view, now=now)]
    assert kinds == [k for k in order if k in kinds]
