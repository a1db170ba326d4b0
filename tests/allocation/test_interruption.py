"""A caller's check stops a costly decision inside the core, and changes nothing when it never fires."""

from __future__ import annotations

from typing import Any

import pytest
from tests import builders as b

from dralloc import allocation
from dralloc.allocation import interruption
from dralloc.allocation.features import Features
from dralloc.allocation.snapshots import Snapshot
from dralloc.model import claims, pods
from dralloc.model import nodes as model_nodes
from dralloc.scheduling import placedpods, placement, podaffinity, preferences, topologyspread


def costly(alternatives: int, requests: int = 5) -> tuple[Snapshot, claims.ResourceClaim]:
    """A node with two NVLink domains of 4 GPUs and a claim a tenant may write (every field within the
    API's limits): `requests` requests of `alternatives` firstAvailable GPUs, all in one NVLink domain.
    Five do not fit in four, and the search tries every combination of alternatives to find out."""
    devices = [b.device(f"gpu-{i}").attr("nvlink", i // 4) for i in range(8)]
    claim = b.claim("heavy")
    for r in range(requests):
        claim = claim.first_available(f"r{r}", *[b.subrequest(f"a{a}", "gpu") for a in range(alternatives)])
    claim = claim.constraint_match(f"{b.DRIVER}/nvlink")
    return b.snapshot(classes=[b.class_("gpu")], slices=[b.slice_("s", devices=devices)]), claim.build()


class Counting:
    """A check that says stop on its n-th consultation."""

    def __init__(self, stop_at: int) -> None:
        self.calls = 0
        self.stop_at = stop_at

    def __call__(self) -> bool:
        self.calls += 1
        return self.calls >= self.stop_at


def test_a_search_stops_when_the_check_says_so() -> None:
    snapshot, claim = costly(alternatives=8)
    check = Counting(stop_at=3)
    with interruption.interrupt_when(check), pytest.raises(interruption.Interrupted):
        allocation.allocate(snapshot, [claim], b.node(), features=Features(), explain=False)
    assert check.calls == 3  # consulted every STEPS_BETWEEN_CHECKS steps, and obeyed at once


def test_a_check_that_never_fires_changes_no_outcome() -> None:
    snapshot, claim = costly(alternatives=2)
    plain = allocation.allocate(snapshot, [claim], b.node(), features=Features())
    check = Counting(stop_at=10**9)
    with interruption.interrupt_when(check):
        checked = allocation.allocate(snapshot, [claim], b.node(), features=Features())
    assert checked == plain and check.calls > 0


def test_the_check_is_gone_after_the_block() -> None:
    with interruption.interrupt_when(lambda: True):
        assert interruption.current() is not None
    assert interruption.current() is None
    interruption.checkpoint()  # no check: never raises


def test_a_placer_stops_between_nodes_and_stays_usable() -> None:
    """An interrupted place() leaves the placer consistent: the next item is placed as on a fresh one."""
    snapshot, heavy = costly(alternatives=8)
    node = model_nodes.Node.model_validate({"metadata": {"name": b.NODE}})
    placer = placement.Placer(node_list=[node], snapshot=snapshot, features=Features())
    with interruption.interrupt_when(Counting(stop_at=2)), pytest.raises(interruption.Interrupted):
        placer.place(placement.Item("heavy", claims=(heavy,)))
    light = b.claim("light").request("gpu", "gpu", 2).build()
    fresh = placement.Placer(node_list=[node], snapshot=snapshot, features=Features())
    assert placer.place(placement.Item("light", claims=(light,))) == fresh.place(placement.Item("light",
                                                                                                claims=(light,)))


def _crowded(node_count: int) -> placedpods.PlacedPods:
    """Nodes in two zones with one pod of app=web each."""
    node_list = [model_nodes.Node.model_validate({"metadata": {"name": f"n{i}", "labels": {
        "kubernetes.io/hostname": f"n{i}", "topology.kubernetes.io/zone": "ab"[i % 2]}}}) for i in range(node_count)]
    bound = [pods.Pod.model_validate({"metadata": {"name": f"p{i}", "namespace": "default", "uid": f"u{i}",
                                                   "labels": {"app": "web"}},
                                      "spec": {"nodeName": f"n{i}", "containers": [{"name": "c"}]}})
             for i in range(node_count)]
    return placedpods.PlacedPods(node_list, bound)


def _incoming(**spec: object) -> pods.Pod:
    return pods.Pod.model_validate({"metadata": {"name": "in", "namespace": "default", "labels": {"app": "web"}},
                                    "spec": {"containers": [{"name": "c"}], **spec}})


WEB = {"matchLabels": {"app": "web"}}


@pytest.mark.parametrize("prepare, incoming", [
    (podaffinity.prepare, _incoming(affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": WEB, "topologyKey": "topology.kubernetes.io/zone"}]}})),
    (topologyspread.prepare, _incoming(topologySpreadConstraints=[
        {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
         "labelSelector": WEB}])),
    (lambda pod, placed: preferences.evaluate(pod, placed, list(placed.nodes.values())), _incoming(topologySpreadConstraints=[
        {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway",
         "labelSelector": WEB}])),
], ids=["inter-pod-affinity", "topology-spread", "preferences"])
def test_a_scan_over_every_placed_pod_stops_when_the_check_says_so(prepare: Any, incoming: pods.Pod) -> None:
    """A pod's filters gather every placed pod of the cluster before the first node is tried: in a large
    cluster that scan alone may outlast the decision's budget, so it consults the check too."""
    placed = _crowded(4 * interruption.ITEMS_BETWEEN_CHECKS)
    check = Counting(stop_at=2)
    with interruption.interrupt_when(check), pytest.raises(interruption.Interrupted):
        prepare(incoming, placed)
    assert check.calls == 2
    assert prepare(incoming, placed) is not None  # without a check, the same scan answers
