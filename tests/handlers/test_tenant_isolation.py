"""One tenant never stops the scheduler: a claim too costly to decide stops only its own pod.

A tenant may legally write a claim whose search takes minutes (five requests of eight
firstAvailable alternatives, all in one NVLink domain: every field within kube-apiserver's
limits). Its pod is told it is too costly to decide, within the decision's CPU budget; the
leader keeps its Lease, the other pods are placed, and a second replica taking over is not
stopped either.
"""

from __future__ import annotations

import asyncio
from typing import Any

from tests.handlers import helpers
from tests.handlers.conftest import Cluster, OperatorThread, operator_settings, wait_for

from dralloc.handlers import recording
from dralloc.kube.session import Session
from dralloc.testing import cluster
from dralloc.testing.cluster import crds

Obj = dict[str, Any]
BUDGET = 0.3


def costly_claim(name: str, device_class: str, *, requests: int = 5, alternatives: int = 8) -> Obj:
    """Five GPUs in one NUMA domain of four, each request any of eight alternatives: the search tries every
    combination before it knows (minutes); kube-apiserver allows up to 32 requests of 8 alternatives."""
    entries = [{"name": f"r{r}", "firstAvailable": [
        {"name": f"a{a}", "deviceClassName": device_class, "allocationMode": "ExactCount", "count": 1}
        for a in range(alternatives)]} for r in range(requests)]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name},
            "spec": {"devices": {"requests": entries,
                                 "constraints": [{"matchAttribute": f"{cluster.DRIVER}/numa"}]}}}


def _lease(apiserver: Cluster) -> Obj:
    lease = apiserver.get("coordination.k8s.io/v1", "Lease", apiserver.name("dralloc"), apiserver.namespace)
    return (lease or {}).get("spec") or {}


def _too_costly(apiserver: Cluster, name: str) -> Obj | None:
    found = helpers.condition(helpers.pod(apiserver, name), "PodScheduled")
    return found if found and "CPU budget" in found.get("message", "") else None


def test_a_claim_too_costly_to_decide_stops_only_its_pod_with_one_replica_and_two(apiserver: Cluster) -> None:
    node, gpu = apiserver.name("node-0"), apiserver.name("gpu")
    apiserver.seed([*crds(), cluster.gpu_class(gpu), cluster.template("one-gpu", device_class=gpu),
                    cluster.node(node), cluster.gpu_slice(node, 8, numa_split=4)])
    first = OperatorThread(operator_settings(apiserver, elect="replica-a", decision_cpu_budget=BUDGET)).start()
    second: OperatorThread | None = None
    try:
        wait_for(lambda: _lease(apiserver).get("holderIdentity") == "replica-a", what="replica-a holds the Lease")
        apiserver.seed([costly_claim("heavy", gpu), cluster.pod("heavy", claim_name="heavy")])
        condition = wait_for(lambda: _too_costly(apiserver, "heavy"), timeout=60, what="the pod told it is too costly")
        assert condition["reason"] == "Unschedulable"
        assert f"CPU budget of {BUDGET:g} s" in condition["message"]
        assert f"{apiserver.namespace}/heavy" in condition["message"]  # names the claim
        event = wait_for(lambda: helpers.events(apiserver, "DecisionTooCostly"), what="a DecisionTooCostly Event")
        assert event[0]["regarding"]["name"] == "heavy"

        # The loop was never held: other pods are placed, the Lease stayed with replica-a throughout.
        apiserver.seed([cluster.pod(f"good-{i}", template_name="one-gpu") for i in range(3)])
        wait_for(lambda: all(helpers.node_of(apiserver, f"good-{i}") for i in range(3)), timeout=60,
                 what="the other pods bound")
        lease = _lease(apiserver)
        assert lease.get("holderIdentity") == "replica-a" and (lease.get("leaseTransitions") or 0) == 0

        # Two replicas: the standby takes over and decides the same pod, and is not stopped by it either.
        second = OperatorThread(operator_settings(apiserver, elect="replica-b", decision_cpu_budget=BUDGET)).start()
        first.stop()
        wait_for(lambda: _lease(apiserver).get("holderIdentity") == "replica-b", what="replica-b holds the Lease")
        heavy = _uid(apiserver, "heavy")
        wait_for(lambda: getattr(second.runtime.pods.get(heavy), "failure", "") == "too-costly",
                 timeout=60, what="replica-b found the pod too costly too")
        apiserver.seed([cluster.pod("good-3", template_name="one-gpu")])
        wait_for(lambda: helpers.node_of(apiserver, "good-3"), timeout=60, what="replica-b binds the next pod")
        assert _lease(apiserver).get("holderIdentity") == "replica-b"
        assert helpers.node_of(apiserver, "heavy") is None
        # Its reason did not change: the new leader wrote no second condition or Event for it.
        assert len(helpers.events(apiserver, "DecisionTooCostly")) == 1
    finally:
        for replica in (first, second):
            if replica is not None and replica.thread.is_alive():
                replica.stop()


def _uid(apiserver: Cluster, name: str) -> str:
    return str(helpers.pod(apiserver, name)["metadata"]["uid"])


def _scheduled(apiserver: Cluster, name: str) -> Obj | None:
    return helpers.condition(helpers.pod(apiserver, name), "PodScheduled")


def _failed_events(apiserver: Cluster, name: str) -> list[Obj]:
    return [e for e in helpers.events(apiserver, "AllocationFailed") if e["regarding"]["name"] == name]


def test_a_pending_pod_is_told_why_once_not_how_busy_others_keep_the_node(
        apiserver: Cluster, operator: OperatorThread) -> None:
    """Issue 26: every placement anywhere rewrote PodScheduled and posted an Event on every pending pod,
    whose message counted the devices others used on each node. Now the message says why (which causes
    rule devices out) without counting others' use, and is written again only when that reason changes."""
    node, gpu = apiserver.name("node-0"), apiserver.name("gpu")
    apiserver.seed([cluster.gpu_class(gpu), cluster.template("one-gpu", device_class=gpu),
                    cluster.template("five-gpus", count=5, device_class=gpu),
                    cluster.node(node), cluster.gpu_slice(node, 4)])
    apiserver.seed([cluster.pod(f"user-{i}", template_name="one-gpu") for i in range(2)])
    wait_for(lambda: all(helpers.node_of(apiserver, f"user-{i}") for i in range(2)), what="two pods bound")
    apiserver.seed([cluster.pod("big", template_name="five-gpus")])
    said = wait_for(lambda: _scheduled(apiserver, "big"), what="the big pod told why")
    assert said["reason"] == "Unschedulable"
    assert "5 needed of the 4 devices of class" in said["message"] and "ruled out: in use" in said["message"]
    assert "usable, 5 needed" not in said["message"] and "2 in use" not in said["message"]  # no counts of others' use
    wait_for(lambda: _failed_events(apiserver, "big"), what="its AllocationFailed Event")

    # Others come and go: more devices in use, then some freed (which sends the big pod back to the queue
    # and decides it again); its reason is the same, so nothing is written again.
    apiserver.seed([cluster.pod("user-2", template_name="one-gpu")])
    wait_for(lambda: helpers.node_of(apiserver, "user-2"), what="a third pod bound")
    helpers.delete_pod(apiserver, "user-0")
    wait_for(lambda: helpers.gone_or_deleting(apiserver, "user-0"), what="a pod gone")
    apiserver.seed([cluster.pod("user-3", template_name="one-gpu")])
    wait_for(lambda: helpers.node_of(apiserver, "user-3"), timeout=60, what="its device used by another pod")
    assert _scheduled(apiserver, "big") == said
    assert len(_failed_events(apiserver, "big")) == 1


def test_an_event_that_repeats_is_counted_on_one_event_as_client_go_does(apiserver: Cluster) -> None:
    """The same Event again within 6 minutes becomes series.count on the first one, not a new object; a
    different note is a new Event."""
    pod = apiserver.seed([cluster.pod("watched")])[0]
    recorder = recording.Recorder()

    async def post_three() -> None:
        session = await Session.connect(kubeconfig=str(apiserver.kubeconfig) if apiserver.kubeconfig else None)
        try:
            for note in ("no node fits", "no node fits", "waiting for its claim"):
                await recorder.post(session, regarding=pod, reason="AllocationFailed", type_="Warning",
                                    action="Scheduling", message=note)
        finally:
            await session.close()

    asyncio.run(post_three())
    mine = [e for e in helpers.events(apiserver, "AllocationFailed") if e["regarding"]["name"] == "watched"]
    by_note = {e["note"]: e for e in mine}
    assert len(mine) == 2 and set(by_note) == {"no node fits", "waiting for its claim"}
    assert by_note["no node fits"]["series"]["count"] == 2
    assert "series" not in by_note["waiting for its claim"]
