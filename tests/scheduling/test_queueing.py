"""The pending pods' queue: kube-scheduler's backoff, queueing hints and fairness across namespaces."""

from __future__ import annotations

import hypothesis.strategies as st
import pytest
from hypothesis import given

from dralloc.scheduling import queueing
from dralloc.scheduling.queueing import Change, Place, PodQueue, Wants


def _queue(**kwargs: float) -> PodQueue:
    return PodQueue(initial_backoff=kwargs.get("initial", 1.0), max_backoff=kwargs.get("maximum", 10.0),
                    max_unschedulable=kwargs.get("flush", 300.0))


def _wants(name: str = "p", **kwargs: frozenset) -> Wants:  # type: ignore[type-arg]
    return Wants(pod=("ns", name), **kwargs)


class TestBackoff:
    def test_backoff_doubles_from_one_second_up_to_ten_as_kube_scheduler(self) -> None:
        queue = _queue()
        queue.add("u", ("ns", "p"))
        delays = [queue.back_off("u", now=100.0) for _ in range(6)]
        assert delays == [1.0, 2.0, 4.0, 8.0, 10.0, 10.0]

    def test_a_pod_in_backoff_is_ready_only_when_its_backoff_is_over(self) -> None:
        queue = _queue()
        queue.add("u", ("ns", "p"))
        queue.back_off("u", now=100.0)
        queue.back_off("u", now=100.0)  # second attempt: 2 s
        assert queue.ready(101.9) == []
        assert [e.uid for e in queue.ready(102.0)] == ["u"]

    def test_success_forgets_the_attempts(self) -> None:
        queue = _queue()
        queue.add("u", ("ns", "p"))
        for _ in range(4):
            queue.back_off("u", now=0.0)
        queue.succeeded("u")
        assert queue.back_off("u", now=0.0) == 1.0

    def test_backoff_settings_are_checked(self) -> None:
        with pytest.raises(ValueError, match="initial 5"):
            PodQueue(initial_backoff=5.0, max_backoff=1.0)


class TestHints:
    def test_a_parked_pod_waits_for_a_change_it_wants_then_for_its_backoff(self) -> None:
        queue = _queue()
        queue.add("u", ("ns", "p"))
        queue.unschedulable("u", now=10.0, wants=_wants(claims=frozenset({("ns", "c")})))
        assert queue.ready(1000.0) == []  # no change: parked, however long the backoff has been over
        assert queue.note(Change(claims=frozenset({("ns", "other")}))) == 0
        assert queue.note(Change(claims=frozenset({("ns", "c")}))) == 1
        assert queue.entries["u"].place is Place.BACKOFF
        assert [e.uid for e in queue.ready(11.0)] == ["u"]  # its 1 s backoff since the attempt is over

    def test_a_change_before_the_backoff_ends_waits_for_it(self) -> None:
        queue = _queue()
        queue.add("u", ("ns", "p"))
        queue.unschedulable("u", now=10.0, wants=_wants())
        queue.note(queueing.EVERYTHING)
        assert queue.ready(10.5) == []
        assert len(queue.ready(11.0)) == 1

    @pytest.mark.parametrize(("wants", "change", "woken"), [
        (_wants(), Change(any_pod=True), True),
        (_wants(), Change(pods=frozenset({("ns", "p")})), True),
        (_wants(), Change(pods=frozenset({("ns", "q")})), False),
        (_wants(classes=frozenset({"gpu"})), Change(classes=frozenset({"gpu"})), True),
        (_wants(classes=frozenset({"gpu"})), Change(classes=frozenset({"nic"})), False),
        (_wants(templates=frozenset({("ns", "t")})), Change(templates=frozenset({("ns", "t")})), True),
        (_wants(templates=frozenset({("ns", "t")})), Change(templates=frozenset({("other", "t")})), False),
        (Wants(pod=("ns", "p"), pod_group=("ns", "g")), Change(pod_groups=frozenset({("ns", "g")})), True),
        (Wants(pod=("ns", "p"), pod_group=("ns", "g")), Change(pod_groups=frozenset({("ns", "h")})), False),
    ])
    def test_which_changes_wake_which_pods(self, wants: Wants, change: Change, woken: bool) -> None:
        assert wants.woken_by(change) is woken

    def test_a_gated_pod_waits_only_for_its_own_object_and_is_then_tried_at_once(self) -> None:
        """Held by another scheduling gate (Kueue's): no attempt counted, nothing but a change of the pod
        itself (a gate removed) wakes it, and then it is ready without a backoff, as kube-scheduler
        moves a pod whose gates are gone straight to its active queue."""
        queue = _queue()
        queue.add("u", ("ns", "p"))
        queue.add("v", ("ns", "q"))
        queue.gated("u", now=10.0)
        queue.unschedulable("v", now=10.0, wants=_wants("q"))
        assert queue.note(queueing.EVERYTHING) == 1 and queue.entries["u"].place is Place.UNSCHEDULABLE
        assert queue.note(Change(any_pod=True, pods=frozenset({("ns", "p")}))) == 1
        assert queue.entries["u"].attempts == 0
        assert [e.uid for e in queue.ready(10.0)] == ["u"]

    def test_a_gated_pod_is_flushed_as_any_parked_pod(self) -> None:
        queue = _queue()
        queue.add("u", ("ns", "p"))
        queue.gated("u", now=0.0)
        assert queue.ready(299.0) == [] and queue.flush(300.0) == 1
        assert [e.uid for e in queue.ready(300.0)] == ["u"]

    def test_pods_parked_longer_than_five_minutes_are_flushed(self) -> None:
        queue = _queue()
        queue.add("u", ("ns", "p"))
        queue.unschedulable("u", now=0.0, wants=_wants())
        assert queue.flush(299.0) == 0
        assert queue.next_due(299.0) == pytest.approx(1.0)
        assert queue.flush(300.0) == 1
        assert [e.uid for e in queue.ready(300.0)] == ["u"]


def _bound_pod(name: str, **status: str) -> dict[str, object]:
    return {"metadata": {"namespace": "ns", "name": name}, "spec": {"nodeName": "node-0"},
            "status": {"phase": "Running", **status}}


def _claim(name: str, allocated: bool) -> dict[str, object]:
    return {"metadata": {"namespace": "ns", "name": name},
            "status": {"allocation": {"devices": {"results": []}}} if allocated else {}}


def _node(**labels: str) -> dict[str, object]:
    return {"metadata": {"name": "node-0", "labels": labels},
            "status": {"conditions": [{"type": "Ready", "lastHeartbeatTime": "t1"}]}}


class TestClassify:
    def test_a_claim_allocated_for_someone_else_wakes_nobody_but_its_users(self) -> None:
        change = queueing.classify("ResourceClaim", _claim("c", False), _claim("c", True))
        assert change == Change(claims=frozenset({("ns", "c")}))

    def test_a_claim_deallocated_or_deleted_frees_devices_for_everyone(self) -> None:
        assert queueing.classify("ResourceClaim", _claim("c", True), _claim("c", False)).any_pod  # type: ignore[union-attr]
        assert queueing.classify("ResourceClaim", _claim("c", True), None).any_pod  # type: ignore[union-attr]
        assert not queueing.classify("ResourceClaim", _claim("c", False), None).any_pod  # type: ignore[union-attr]

    def test_a_pod_bound_elsewhere_wakes_itself_and_pods_counting_neighbours_a_pod_leaving_wakes_everyone(self) -> None:
        pending = {"metadata": {"namespace": "ns", "name": "a"}, "spec": {}}
        bound = queueing.classify("Pod", pending, _bound_pod("a"))
        assert bound == Change(pods=frozenset({("ns", "a")}), neighbours=True)
        plain = Wants(pod=("ns", "b"))
        counting = Wants(pod=("ns", "c"), neighbours=True)  # required pod affinity or a spread constraint
        assert bound is not None and not plain.woken_by(bound) and counting.woken_by(bound)
        assert queueing.classify("Pod", _bound_pod("a"), None).any_pod  # type: ignore[union-attr]
        assert queueing.classify("Pod", _bound_pod("a"), _bound_pod("a", phase="Succeeded")).any_pod  # type: ignore[union-attr]

    def test_a_bound_pods_labels_changing_wakes_everyone(self) -> None:
        before = _bound_pod("a")
        after = {**before, "metadata": {**before["metadata"], "labels": {"app": "web"}}}
        assert queueing.classify("Pod", before, after).any_pod  # type: ignore[union-attr]

    def test_a_namespaces_labels_changing_wakes_pods_counting_neighbours(self) -> None:
        before = {"metadata": {"name": "team-a", "labels": {}}}
        after = {"metadata": {"name": "team-a", "labels": {"tier": "gold"}}}
        assert queueing.classify("Namespace", before, after) == Change(neighbours=True)
        assert queueing.classify("Namespace", before, before) is None

    def test_a_gang_member_changing_wakes_its_gang(self) -> None:
        member = {"metadata": {"namespace": "ns", "name": "m"}, "spec": {"schedulingGroup": {"podGroupName": "g"}}}
        change = queueing.classify("Pod", None, member)
        assert change is not None and change.pod_groups == frozenset({("ns", "g")})

    def test_a_node_heartbeat_is_not_a_change_its_labels_are(self) -> None:
        beat = _node(zone="a")
        beat["status"] = {"conditions": [{"type": "Ready", "lastHeartbeatTime": "t2"}]}
        assert queueing.classify("Node", _node(zone="a"), beat) is None
        assert queueing.classify("Node", _node(zone="a"), _node(zone="b")) == queueing.EVERYTHING
        assert queueing.classify("Node", None, _node()) == queueing.EVERYTHING

    def test_classes_templates_and_pod_groups_wake_their_users(self) -> None:
        assert queueing.classify("DeviceClass", None, {"metadata": {"name": "gpu"}}) == Change(
            classes=frozenset({"gpu"}))
        template = {"metadata": {"namespace": "ns", "name": "t"}}
        assert queueing.classify("ResourceClaimTemplate", None, template) == Change(templates=frozenset({("ns", "t")}))
        assert queueing.classify("PodGroup", template, None) == Change(pod_groups=frozenset({("ns", "t")}))
        assert queueing.classify("ResourceSlice", None, {"metadata": {"name": "s"}}) == queueing.EVERYTHING
        assert queueing.classify("DeviceHealthPolicy", None, {"metadata": {"name": "h"}}) is None


class TestFairness:
    def test_namespaces_take_turns_then_priority_then_age(self) -> None:
        queue = _queue()
        for i in range(5):
            queue.add(f"noisy-{i}", ("noisy", f"p{i}"), created=f"2026-01-01T00:00:0{i}Z")
        queue.add("good", ("good", "web"), created="2026-01-01T00:00:09Z")
        queue.add("urgent", ("noisy", "urgent"), priority=1000, created="2026-01-01T00:00:09Z")
        order = [e.uid for e in queue.order(queue.ready(0.0))]
        assert order[:2] == ["good", "urgent"]
        assert order[2:] == [f"noisy-{i}" for i in range(5)]

    def test_the_first_namespace_rotates_between_passes(self) -> None:
        queue = _queue()
        for namespace in ("a", "b", "c"):
            queue.add(namespace, (namespace, "p"))
        firsts = [queue.order(queue.ready(0.0))[0].uid for _ in range(4)]
        assert firsts == ["a", "b", "c", "a"]

    @given(st.lists(st.tuples(st.sampled_from("abcd"), st.integers(0, 3)), min_size=1, max_size=40))
    def test_a_namespace_waits_at_most_one_pod_per_other_namespace(self, pods: list[tuple[str, int]]) -> None:
        """Whatever the queue holds, each namespace's first pod is among the first (namespaces) pods taken,
        and every pod is taken exactly once."""
        queue = _queue()
        for i, (namespace, priority) in enumerate(pods):
            queue.add(f"u{i}", (namespace, f"p{i}"), priority=priority)
        order = queue.order(queue.ready(0.0))
        assert sorted(e.uid for e in order) == sorted(f"u{i}" for i in range(len(pods)))
        namespaces = {namespace for namespace, _ in pods}
        assert {e.key[0] for e in order[:len(namespaces)]} == namespaces

    def test_pods_no_longer_pending_leave_the_queue(self) -> None:
        queue = _queue()
        queue.add("a", ("ns", "a"))
        queue.add("b", ("ns", "b"))
        assert queue.keep_only(["b"]) == 1
        assert "a" not in queue and len(queue) == 1


_KEYS = st.sampled_from([("ns", "a"), ("ns", "b"), ("other", "a")])
_WANTS = st.builds(lambda pod, claims, classes, templates, group, neighbours, volume_claims: Wants(
    pod=pod, claims=frozenset(claims), classes=frozenset(classes), templates=frozenset(templates), pod_group=group,
    neighbours=neighbours, volume_claims=frozenset(volume_claims)),
    _KEYS, st.sets(_KEYS), st.sets(st.sampled_from(["gpu", "nic"])), st.sets(_KEYS), st.none() | _KEYS, st.booleans(),
    st.sets(_KEYS))
_CHANGES = st.builds(lambda any_pod, claims, classes, templates, groups, pods, neighbours, volume_claims: Change(
    any_pod, frozenset(claims), frozenset(classes), frozenset(templates), frozenset(groups), frozenset(pods),
    neighbours, frozenset(volume_claims)),
    st.booleans(), st.sets(_KEYS), st.sets(st.sampled_from(["gpu", "nic"])), st.sets(_KEYS), st.sets(_KEYS),
    st.sets(_KEYS), st.booleans(), st.sets(_KEYS))


@given(st.lists(_WANTS, max_size=8), st.lists(_CHANGES, max_size=4))
def test_a_change_moves_exactly_the_parked_pods_it_may_make_fit(parked: list[Wants], changes: list[Change]) -> None:
    """The index `note` looks changes up in wakes what `Wants.woken_by` says, and nothing else."""
    queue = _queue()
    for i, wants in enumerate(parked):
        queue.add(f"u{i}", ("ns", f"p{i}"))
        queue.unschedulable(f"u{i}", now=0.0, wants=wants)
    still = dict(enumerate(parked))
    for change in changes:
        expected = {i for i, wants in still.items() if wants.woken_by(change)}
        assert queue.note(change) == len(expected)
        for i in expected:
            assert queue.entries[f"u{i}"].place is Place.BACKOFF
            del still[i]
        assert all(queue.entries[f"u{i}"].place is Place.UNSCHEDULABLE for i in still)
