"""Dropping stale `reservedFor` entries (lifecycle.claims.claim_plan, first step).

A pod's reservation goes when the pod is gone (its UID is not in the view, which
also covers a same-named successor), has finished, or was deleted before being
scheduled. Live pods, running pods being deleted, and consumers that are not pods
keep theirs, in their order. Also: the reservedFor entry format, and properties
over random sets of consumers.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.lifecycle.objects import by_uid, claim, consumer, pod

from dralloc.lifecycle import claims, plans
from dralloc.model.pods import Pod

RUNNING = pod("run", phase="Running", node="n1")
PENDING = pod("pend", phase="Pending")
DONE = pod("done", phase="Succeeded", node="n1")
FAILED = pod("fail", phase="Failed", node="n1")
GONE = pod("gone", phase="Running", node="n1")  # never in the view
DELETED_UNSCHEDULED = pod("del-unsched", phase="Pending", deleting=True)
DELETED_RUNNING = pod("del-run", phase="Running", node="n1", deleting=True)
SUCCESSOR = pod("gone", uid="uid-gone-2", phase="Running", node="n1")  # same name as GONE, new UID
DAEMON = {"apiGroup": "apps", "resource": "daemonsets", "name": "agent", "uid": "uid-ds"}
VIEW = by_uid(RUNNING, PENDING, DONE, FAILED, DELETED_UNSCHEDULED, DELETED_RUNNING, SUCCESSOR)


@dataclasses.dataclass(frozen=True)
class Case:
    reserved: tuple[dict[str, Any], ...]
    keep: tuple[dict[str, Any], ...] | None  # None: no DropReservations step


CASES: dict[str, Case] = {
    "running-pod-kept": Case((consumer(RUNNING),), None),
    "pending-pod-kept": Case((consumer(PENDING),), None),
    "running-pod-being-deleted-kept": Case((consumer(DELETED_RUNNING),), None),
    "succeeded-pod-dropped": Case((consumer(DONE),), ()),
    "failed-pod-dropped": Case((consumer(FAILED),), ()),
    "gone-pod-dropped": Case((consumer(GONE),), ()),
    "replaced-pod-dropped": Case((consumer(GONE),), ()),
    "deleted-before-scheduling-dropped": Case((consumer(DELETED_UNSCHEDULED),), ()),
    "non-pod-consumer-kept": Case((DAEMON,), None),
    "non-pod-consumer-kept-beside-dropped-pod": Case((DAEMON, consumer(DONE)), (DAEMON,)),
    "only-stale-entries-go-order-kept": Case(
        (consumer(DONE), consumer(RUNNING), consumer(GONE), consumer(PENDING)),
        (consumer(RUNNING), consumer(PENDING))),
    "nothing-reserved-nothing-dropped": Case((), None),
}


@pytest.mark.parametrize("case", list(CASES.values()), ids=list(CASES))
def test_reservation_cleanup(case: Case) -> None:
    c = claim("shared", reserved=case.reserved, allocated=bool(case.reserved))
    drops = [s for s in claims.claim_plan(c, pods_by_uid=VIEW) if isinstance(s, plans.DropReservations)]
    if case.keep is None:
        assert drops == []
    else:
        assert drops == [plans.DropReservations("default", "shared", case.keep)]


def test_pod_with_explicit_empty_api_group_is_a_pod() -> None:
    """`apiGroup: ""` written out is the core group, same as omitting it."""
    c = claim("shared", reserved=[{"apiGroup": "", **consumer(DONE)}], allocated=True)
    assert plans.DropReservations("default", "shared", ()) in claims.claim_plan(c, pods_by_uid=VIEW)


def test_pods_resource_of_another_group_is_not_a_pod() -> None:
    """A consumer `example.com/pods` is somebody else's resource and is kept."""
    other = {"apiGroup": "example.com", "resource": "pods", "name": "x", "uid": "uid-x"}
    c = claim("shared", reserved=[other], allocated=True)
    assert claims.claim_plan(c, pods_by_uid=VIEW) == ()


class TestReservedForPod:
    def test_entry_format(self) -> None:
        """resource pods, name and UID; the empty core apiGroup is omitted, as the API writes it."""
        assert claims.reserved_for_pod(pod("train", uid="u-1")) == {"resource": "pods", "name": "train", "uid": "u-1"}


class TestPodIsDone:
    @pytest.mark.parametrize(("p", "done"), [
        (RUNNING, False), (PENDING, False), (DONE, True), (FAILED, True),
        (DELETED_UNSCHEDULED, True), (DELETED_RUNNING, False), (pod("fresh"), False),
    ], ids=["running", "pending", "succeeded", "failed", "deleted-unscheduled", "deleted-running", "no-phase"])
    def test_done(self, p: Pod, done: bool) -> None:
        """Done means terminal phase, or deleted before it was ever scheduled."""
        assert claims.pod_is_done(p) is done


# --- properties ---------------------------------------------------------------------------

POPULATION = [RUNNING, PENDING, DONE, FAILED, GONE, DELETED_UNSCHEDULED, DELETED_RUNNING]
consumers = st.lists(st.sampled_from([*(consumer(p) for p in POPULATION), DAEMON]), max_size=6)
views = st.lists(st.sampled_from(POPULATION), max_size=7).map(lambda ps: by_uid(*ps))


@settings(max_examples=200, deadline=None)
@given(consumers, views, st.booleans(), st.booleans())
def test_live_unfinished_pods_keep_their_reservation(
    reserved: list[dict[str, Any]], view: dict[str, Pod], protected: bool, deleting: bool
) -> None:
    """No plan drops the reservation of a pod that is in the view and not done, nor a non-pod consumer."""
    c = claim("shared", reserved=reserved, allocated=bool(reserved), protected=protected, deleting=deleting)
    steps = claims.claim_plan(c, pods_by_uid=view)
    keep = next((s.keep for s in steps if isinstance(s, plans.DropReservations)), tuple(reserved))
    for ref in reserved:
        live = ref.get("resource") != "pods" or (ref["uid"] in view and not claims.pod_is_done(view[ref["uid"]]))
        assert (ref in keep) is live


@settings(max_examples=200, deadline=None)
@given(consumers, views)
def test_cleanup_is_idempotent(reserved: list[dict[str, Any]], view: dict[str, Pod]) -> None:
    """Planning again after the drop was written drops nothing more."""
    c = claim("shared", reserved=reserved, allocated=bool(reserved))
    steps = claims.claim_plan(c, pods_by_uid=view)
    keep = next((s.keep for s in steps if isinstance(s, plans.DropReservations)), tuple(reserved))
    again = claims.claim_plan(claim("shared", reserved=keep, allocated=bool(keep)), pods_by_uid=view)
    assert not any(isinstance(s, plans.DropReservations) for s in again)


GROUP = {"apiGroup": "scheduling.k8s.io", "resource": "podgroups", "name": "train", "uid": "uid-train"}


def test_a_pod_groups_reservation_goes_with_the_pod_group() -> None:
    """KEP-5729 (DRAWorkloadResourceClaims): a claim reserved for a PodGroup keeps the entry while a
    PodGroup of that UID exists; gone or replaced (another UID), the entry is dropped and the claim
    deallocated, as kube-controller-manager 1.37 does."""
    c = claim("fabric", reserved=[GROUP], allocated=True)
    assert claims.claim_plan(c, pods_by_uid=VIEW, pod_groups={("default", "train", "uid-train")}) == ()
    for present in (set(), {("default", "train", "uid-train-2")}):
        planned = claims.claim_plan(c, pods_by_uid=VIEW, pod_groups=present)
        assert planned[:2] == (plans.DropReservations("default", "fabric", ()), plans.Deallocate("default", "fabric"))


def test_pod_group_reservations_are_kept_when_pod_groups_are_not_watched() -> None:
    """No PodGroup API served (or not watched): such an entry is not ours to judge."""
    c = claim("fabric", reserved=[GROUP, consumer(DONE)], allocated=True)
    assert claims.claim_plan(c, pods_by_uid=VIEW) == (plans.DropReservations("default", "fabric", (GROUP,)),)
