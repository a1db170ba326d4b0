"""Kueue and other scheduling gates (issue 30): dralloc allocates nothing for a pod another gate holds.

A pod may carry scheduling gates that are not dralloc's: Kueue's `kueue.x-k8s.io/admission`
until its quota system admits the workload, any admission controller's. kube-scheduler does
not even queue such a pod. dralloc waits likewise: a gate-mode pod until `dralloc.io/allocate`
is its only gate, a scheduler-mode pod until it has none. Meanwhile its `PodScheduled=False`
says `SchedulingGated` and names the gates; once the test removes them (a patch of
`spec.schedulingGates`: the API server allows removing gates, never adding one), the pod is
placed at once. A gang with such a member waits whole, as kube-scheduler 1.37 gates a
PodGroup's queue entry while any of its pods is gated.

Each test runs on the sandbox and, with `--e2e-real`, on a real control plane, where
kube-apiserver itself gives a gated pod `SchedulingGated` with its own message at creation:
the tests wait for dralloc's words.
"""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from tests.handlers import helpers
from tests.handlers.conftest import Cluster, OperatorThread, wait_for
from tests.handlers.test_gangs import member, pod_group

from dralloc import metrics
from dralloc.testing import cluster

Obj = dict[str, Any]
GATE = "dralloc.io/allocate"
KUEUE = "kueue.x-k8s.io/admission"
STRATEGIC = "application/strategic-merge-patch+json"


def _seed(server: Cluster, nodes: int = 1, gpus: int = 1) -> list[str]:
    """`nodes` nodes with `gpus` GPUs each, the class and the template `one-gpu`; the nodes' names, once
    every one of them can take pods."""
    names, gpu = [server.name(f"node-{i}") for i in range(nodes)], server.name("gpu")
    server.seed([cluster.gpu_class(gpu), cluster.template("one-gpu", device_class=gpu)])
    server.seed([obj for name in names for obj in (cluster.node(name), cluster.gpu_slice(name, gpus))])
    wait_for(lambda: helpers.nodes_schedulable(server, names), timeout=90, what="the nodes ready")
    return names


def _with_kueue_gate(pod: Obj) -> Obj:
    """The pod as Kueue's webhook leaves it: its admission gate added to whatever gates it had."""
    pod["spec"]["schedulingGates"] = [*pod["spec"].get("schedulingGates", []), {"name": KUEUE}]
    return pod


def _gates(server: Cluster, name: str) -> list[str]:
    return [g["name"] for g in helpers.pod(server, name)["spec"].get("schedulingGates") or []]


def _remove_gate(server: Cluster, name: str, gate: str) -> None:
    """What Kueue does when it admits the workload: remove its gate by name (a strategic merge patch)."""
    server.request("PATCH", f"/api/v1/namespaces/{server.namespace}/pods/{name}",
                   {"spec": {"schedulingGates": [{"$patch": "delete", "name": gate}]}}, STRATEGIC)


def _gated_condition(server: Cluster, name: str, words: str) -> Obj | None:
    """The pod's PodScheduled condition once it says SchedulingGated with `words` (dralloc's, not only
    kube-apiserver's)."""
    found = helpers.condition(helpers.pod(server, name), "PodScheduled")
    if found and found.get("reason") == "SchedulingGated" and words in (found.get("message") or ""):
        return found
    return None


def _queue(state: str) -> float:
    """dralloc_scheduling_queue_pods{state}, as Prometheus would scrape it."""
    return sum(sample.value for family in text_string_to_metric_families(generate_latest(metrics.REGISTRY).decode())
               for sample in family.samples
               if sample.name == "dralloc_scheduling_queue_pods" and sample.labels.get("state") == state)


def _allocated(server: Cluster) -> list[Obj]:
    return [c for c in helpers.claims(server) if (c.get("status") or {}).get("allocation")]


def test_gate_mode_waits_until_its_gate_is_the_only_one(apiserver: Cluster, operator: OperatorThread) -> None:
    """A gate-mode pod that Kueue has not admitted: no claim allocated, no node pinned, its own gate kept,
    and its condition names the gate it waits for; once Kueue's gate goes, dralloc allocates, pins and
    removes its gate."""
    (node,) = _seed(apiserver)
    apiserver.seed([_with_kueue_gate(cluster.pod("held", template_name="one-gpu", scheduler=None, gate=GATE))])
    said = wait_for(lambda: _gated_condition(apiserver, "held", f"once {GATE} is its only scheduling gate"),
                    what="the pod told it waits for the other gate")
    assert said["status"] == "False" and KUEUE in said["message"]
    assert not _allocated(apiserver)
    pod = helpers.pod(apiserver, "held")
    assert not pod["spec"].get("nodeSelector") and not pod["spec"].get("nodeName")
    assert _gates(apiserver, "held") == [GATE, KUEUE]
    assert not helpers.events(apiserver, "AllocationFailed"), "being gated is not a failure"
    assert _queue("gated") == 1 and _queue("pending") == 0

    _remove_gate(apiserver, "held", KUEUE)
    wait_for(lambda: not _gates(apiserver, "held"), what="dralloc's gate removed")
    assert helpers.pod(apiserver, "held")["spec"]["nodeSelector"] == {"kubernetes.io/hostname": node}
    (claim,) = _allocated(apiserver)
    assert [r["uid"] for r in claim["status"]["reservedFor"]] == [helpers.pod(apiserver, "held")["metadata"]["uid"]]


def test_scheduler_mode_binds_only_a_pod_without_gates(apiserver: Cluster, operator: OperatorThread) -> None:
    """`schedulerName: dralloc` with Kueue's gate: not bound and nothing allocated while the gate is on
    (its condition says so); bound once the gate is removed."""
    (node,) = _seed(apiserver)
    apiserver.seed([_with_kueue_gate(cluster.pod("held", template_name="one-gpu"))])
    said = wait_for(lambda: _gated_condition(apiserver, "held", "dralloc places this pod once it has no scheduling gates"),
                    what="the pod told it waits for its gate")
    assert KUEUE in said["message"]
    assert not helpers.node_of(apiserver, "held") and not _allocated(apiserver)

    _remove_gate(apiserver, "held", KUEUE)
    assert wait_for(lambda: helpers.node_of(apiserver, "held"), what="the pod bound") == node
    assert len(_allocated(apiserver)) == 1


@pytest.mark.parametrize("mode", ["scheduler", "gate"])
def test_a_gang_member_held_by_another_gate_holds_the_gang(
        apiserver: Cluster, operator: OperatorThread, mode: str) -> None:
    """A PodGroup of minCount 2 whose second member Kueue has not admitted: both members exist, yet no
    member is placed and nothing is allocated; the free member says which member holds the gang, the held
    one which gate holds it. Once the gate goes, the whole gang is placed."""
    names = _seed(apiserver, nodes=2)
    apiserver.seed([pod_group("held", 2)])
    extra: dict[str, Any] = {"scheduler": None, "gate": GATE} if mode == "gate" else {}
    apiserver.seed([member("m0", "one-gpu", "held", **extra),
                    _with_kueue_gate(member("m1", "one-gpu", "held", **extra))])
    wait_for(lambda: _gated_condition(apiserver, "m1", KUEUE), what="m1 told it waits for its gate")

    def gang_waits() -> bool:
        found = helpers.condition(helpers.pod(apiserver, "m0"), "PodScheduled")
        return bool(found and found["status"] == "False" and "is held back by scheduling gate(s)" in found["message"]
                    and f"{apiserver.namespace}/m1" in found["message"])

    wait_for(gang_waits, what="m0 told the gang waits for m1")
    assert not _allocated(apiserver)
    assert not any(helpers.pod(apiserver, p)["spec"].get(field) for p in ("m0", "m1")
                   for field in ("nodeName", "nodeSelector"))
    if mode == "gate":
        assert _gates(apiserver, "m0") == [GATE] and _gates(apiserver, "m1") == [GATE, KUEUE]

    _remove_gate(apiserver, "m1", KUEUE)
    if mode == "scheduler":
        wait_for(lambda: all(helpers.node_of(apiserver, p) for p in ("m0", "m1")), what="the whole gang bound")
        placed = {helpers.node_of(apiserver, p) for p in ("m0", "m1")}
    else:
        wait_for(lambda: not _gates(apiserver, "m0") and not _gates(apiserver, "m1"), what="the whole gang ungated")
        placed = {helpers.pod(apiserver, p)["spec"]["nodeSelector"]["kubernetes.io/hostname"] for p in ("m0", "m1")}
    assert placed == set(names)
    assert len(_allocated(apiserver)) == 2
