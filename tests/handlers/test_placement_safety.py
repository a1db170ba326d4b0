"""No device is given out twice, and no write is lost, under contention and failures."""

from __future__ import annotations

import pytest
from tests.handlers import helpers
from tests.handlers.conftest import Cluster, OperatorThread, operator_settings, wait_for

from dralloc.sandbox import Faults
from dralloc.testing import cluster
from dralloc.testing.cluster import crds


def _cluster(server: Cluster, nodes: int, gpus: int) -> list[str]:
    """`nodes` nodes with `gpus` GPUs each, the class and the template `one-gpu`; returns the node names."""
    gpu = server.name("gpu")
    names = [server.name(f"node-{i}") for i in range(nodes)]
    objs = [cluster.gpu_class(gpu), cluster.template("one-gpu", device_class=gpu)]
    for name in names:
        objs += [cluster.node(name), cluster.gpu_slice(name, gpus)]
    server.seed(objs)
    return names


def _bound(server: Cluster) -> list[str]:
    return [p["metadata"]["name"] for p in helpers.pods(server) if (p.get("spec") or {}).get("nodeName")]


def test_racing_pods_never_share_a_device(apiserver: Cluster, operator: OperatorThread) -> None:
    """200 pods for 100 GPUs: exactly 100 are bound, each GPU in exactly one allocation, the rest explained."""
    _cluster(apiserver, 10, 10)
    apiserver.seed([cluster.pod(f"worker-{i:03d}", template_name="one-gpu") for i in range(200)])
    wait_for(lambda: len(_bound(apiserver)) >= 100, timeout=120, what="100 pods bound")

    def settled() -> bool:
        pending = [p for p in helpers.pods(apiserver) if not p["spec"].get("nodeName")]
        return len(pending) == 100 and all(helpers.condition(p, "PodScheduled") for p in pending)

    wait_for(settled, timeout=120, what="100 pods pending with PodScheduled=False")
    assert len(_bound(apiserver)) == 100
    devices = helpers.allocated_devices(apiserver)
    assert len(devices) == 100
    assert set(devices.values()) == {1}


def test_failed_bind_is_retried_without_a_second_allocation(
    apiserver: Cluster, faults: Faults, operator: OperatorThread
) -> None:
    """The binding fails twice (500): the pod is retried with backoff and bound with its one allocation."""
    (node_0,) = _cluster(apiserver, 1, 2)
    faults.next("POST", f"/api/v1/namespaces/{apiserver.namespace}/pods/*/binding", status=500, times=2)
    apiserver.seed([cluster.pod("flaky", template_name="one-gpu")])
    assert wait_for(lambda: helpers.node_of(apiserver, "flaky"), timeout=60, what="pod bound") == node_0
    (claim,) = helpers.claims(apiserver)
    assert len(claim["status"]["allocation"]["devices"]["results"]) == 1
    assert sum(helpers.allocated_devices(apiserver).values()) == 1


def test_operator_killed_between_claim_write_and_bind_recovers(apiserver: Cluster, faults: Faults) -> None:
    """Claims written, then the operator dies before binding: a new operator binds with the same devices."""
    apiserver.seed(crds())
    _cluster(apiserver, 2, 2)
    faults.next("POST", f"/api/v1/namespaces/{apiserver.namespace}/pods/*/binding", status=500, times=10_000)
    first = OperatorThread(operator_settings(apiserver)).start()
    try:
        apiserver.seed([cluster.pod("survivor", template_name="one-gpu")])
        allocated = wait_for(
            lambda: [c for c in helpers.claims(apiserver) if (c.get("status") or {}).get("reservedFor")],
            timeout=60, what="claim allocated and reserved")
    finally:
        first.stop()
    devices_before = allocated[0]["status"]["allocation"]["devices"]["results"]
    faults.clear()
    second = OperatorThread(operator_settings(apiserver)).start()
    try:
        node = wait_for(lambda: helpers.node_of(apiserver, "survivor"), timeout=60, what="pod bound after restart")
    finally:
        second.stop()
    (claim,) = helpers.claims(apiserver)
    assert claim["status"]["allocation"]["devices"]["results"] == devices_before
    assert node == devices_before[0]["pool"]
    assert sum(helpers.allocated_devices(apiserver).values()) == 1


async def test_a_preemption_in_a_run_does_not_hide_the_runs_later_placements(
        apiserver: Cluster, monkeypatch: pytest.MonkeyPatch) -> None:
    """A pass decides its ready pods in runs; a preemption renews the pass's placer (the nominated node is
    held from then on). Renewed before the run's later pods were reserved, the placer did not know their
    devices were taken, and the next run gave them out again. Runs of two here: [P, a], then [b]. P (high
    priority, 2 GPUs) preempts the low pod on node-b; a takes node-a's only GPU; b must not get it too."""
    from tests.handlers.onepass import run_one_pass
    from tests.handlers.test_preemption import admitted, priority_class

    from dralloc.handlers import scheduling

    node_a, node_b, gpu = apiserver.name("node-a"), apiserver.name("node-b"), apiserver.name("gpu")
    low, high = apiserver.name("low"), apiserver.name("high")
    apiserver.seed([cluster.node(node_a), cluster.node(node_b), cluster.gpu_slice(node_a, 1),
                    cluster.gpu_slice(node_b, 2), cluster.gpu_class(gpu), cluster.template("one-gpu", device_class=gpu),
                    cluster.template("two-gpus", count=2, device_class=gpu), priority_class(low, 10),
                    priority_class(high, 1000)])
    victim = cluster.pod("low", template_name="one-gpu")
    victim["spec"].update(priorityClassName=low, terminationGracePeriodSeconds=1,
                          nodeSelector={"kubernetes.io/hostname": node_b})
    admitted(apiserver, [victim])
    await run_one_pass(apiserver, [node_a, node_b], ["low"])
    assert helpers.node_of(apiserver, "low") == node_b
    big = cluster.pod("p-high", template_name="two-gpus")
    big["spec"].update(priorityClassName=high)
    admitted(apiserver, [big, cluster.pod("q-a", template_name="one-gpu"), cluster.pod("r-b", template_name="one-gpu")])
    monkeypatch.setattr(scheduling, "BATCH", 2)
    await run_one_pass(apiserver, [node_a, node_b], ["p-high", "q-a", "r-b"])
    assert (helpers.pod(apiserver, "p-high").get("status") or {}).get("nominatedNodeName") == node_b
    assert helpers.node_of(apiserver, "q-a") == node_a
    devices = [(r["pool"], r["device"]) for c in helpers.claims(apiserver)
               for r in (((c.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results", [])]
    assert len(devices) == len(set(devices)), f"a device in two claims: {sorted(devices)}"
    assert helpers.node_of(apiserver, "r-b") is None
