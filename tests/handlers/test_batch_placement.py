"""The operator decides the single pods pending together as one batch (AllocationPolicy spec.batchOrders).

node-a has 2 GPUs, node-b 8. Four pods wait for 1, 4, 3 and 2 GPUs, in that order (by age, then
name), and one scheduling pass takes them together: a Runtime fed the test's objects runs one
pass (`scheduling.run_pass`), which writes its decisions to the API server as the operator's
loop would. One by one, FragmentationAware puts the 1-GPU pod on node-a and the 2-GPU pod, last,
fits nowhere (`dralloc simulate` on the same objects says the same). Decided as one batch with 4
orders, a hardest-first order places all four: the 2-GPU pod on node-a, the others on node-b, and
the batch is counted as reordered. A batch never loses a pod that arrival order places: with one
pod more than fits anywhere, the pods arrival order places are placed. Both ways run here, so
the tests show what batching changes.
"""

from __future__ import annotations

import io
import pathlib
import random

import pytest
import yaml
from tests.handlers import helpers
from tests.handlers.conftest import Cluster, OperatorThread, wait_for
from tests.handlers.onepass import run_one_pass
from tests.handlers.test_fragmentation_aware_operator import _tainted

from dralloc import metrics
from dralloc.handlers import batches
from dralloc.handlers.runtime import Runtime
from dralloc.offline import simulating
from dralloc.testing import cluster

PODS = (("a-one", 1), ("b-four", 4), ("c-three", 3), ("d-two", 2))  # arrival order


async def _one_pass(apiserver: Cluster, orders: int, pods: tuple[tuple[str, int], ...] = PODS) -> dict[str, str | None]:
    """node-a (2 GPUs), node-b (8) and the pods; one scheduling pass under FragmentationAware with `orders`
    (its writes done). Where each pod went: node-a, node-b or None."""
    node_a, node_b, gpu = apiserver.name("node-a"), apiserver.name("node-b"), apiserver.name("gpu")
    apiserver.seed([cluster.node(node_a), cluster.node(node_b), cluster.gpu_slice(node_a, 2),
                    cluster.gpu_slice(node_b, 8), cluster.gpu_class(gpu)])
    apiserver.seed([cluster.template(f"gpus-{count}", count=count, device_class=gpu)
                    for count in sorted({count for _, count in pods})])
    for name, count in pods:
        apiserver.seed([cluster.pod(name, template_name=f"gpus-{count}")])

    def batches_of(rt: Runtime) -> None:
        rt.policy, rt.batch_orders = "fragmentation-aware", orders

    await run_one_pass(apiserver, [node_a, node_b], [name for name, _ in pods], batches_of)
    where = {name: helpers.node_of(apiserver, name) for name, _ in pods}
    return {name: {node_a: "node-a", node_b: "node-b"}.get(node or "") for name, node in where.items()}


async def test_one_by_one_the_last_pod_fits_nowhere(apiserver: Cluster) -> None:
    assert await _one_pass(apiserver, 1) == {"a-one": "node-a", "b-four": "node-b", "c-three": "node-b",
                                             "d-two": None}
    message = (helpers.condition(helpers.pod(apiserver, "d-two"), "PodScheduled") or {}).get("message") or ""
    assert "0/2 nodes are available" in message


async def test_a_batch_places_all_four(apiserver: Cluster) -> None:
    reordered = metrics.batch_decisions.labels("reordered")._value.get()
    assert await _one_pass(apiserver, 4) == {"a-one": "node-b", "b-four": "node-b", "c-three": "node-b",
                                             "d-two": "node-a"}
    assert metrics.batch_decisions.labels("reordered")._value.get() == reordered + 1


@pytest.mark.parametrize("orders", [1, 4])
async def test_a_batch_keeps_every_pod_arrival_order_places(apiserver: Cluster, orders: int) -> None:
    """1, 8 and 2 GPUs: arrival order places the 1-GPU pod on node-a and the 8-GPU pod on node-b; the
    2-GPU pod fits nowhere. Largest first would allocate more (the 8- and 2-GPU pods: 10 GPUs, not 9)
    but leave out the 1-GPU pod, which arrival order places: the batch keeps arrival order."""
    pods = (("a-one", 1), ("b-eight", 8), ("c-two", 2))
    assert await _one_pass(apiserver, orders, pods) == {"a-one": "node-a", "b-eight": "node-b", "c-two": None}


def _accepted(apiserver: Cluster) -> dict[str, str]:
    policy = apiserver.get("dralloc.io/v1alpha1", "AllocationPolicy", "default") or {}
    return next((c for c in (policy.get("status") or {}).get("conditions") or [] if c.get("type") == "Accepted"), {})


def _policy(apiserver: Cluster, spec: dict[str, object]) -> None:
    apiserver.request("PATCH", "/apis/dralloc.io/v1alpha1/allocationpolicies/default", {"spec": spec},
                      content_type="application/merge-patch+json")


def test_the_allocation_policy_turns_batches_on(apiserver: Cluster, operator: OperatorThread) -> None:
    """spec.batchOrders under FirstFit is refused, naming the field (pods are placed one by one); under
    FragmentationAware the condition says what is done."""
    wait_for(lambda: apiserver.get("dralloc.io/v1alpha1", "AllocationPolicy", "default"), what="the default policy")
    try:
        _policy(apiserver, {"batchOrders": 4})
        refused = wait_for(lambda: (c := _accepted(apiserver)).get("status") == "False" and c,
                           what="batchOrders refused under FirstFit")
        assert refused["reason"] == "InvalidBatchOrders"
        assert refused["message"] == "spec.batchOrders: 4 needs strategy FragmentationAware; placing one by one"
        _policy(apiserver, {"strategy": "FragmentationAware"})
        accepted = wait_for(lambda: (c := _accepted(apiserver)).get("status") == "True" and c,
                            what="batchOrders accepted under FragmentationAware")
        assert accepted["message"] == ("placing with fragmentation-aware; batches of up to 32 pods, 4 orders tried; "
                                       "preemption on")
        wait_for(lambda: operator.runtime.batch_orders == 4, what="the operator deciding batches")
    finally:
        _policy(apiserver, {"strategy": "FirstFit", "batchOrders": 1})
    wait_for(lambda: _accepted(apiserver).get("message") == "placing with first-fit; preemption on",
             what="one by one again")


async def test_a_batch_that_fails_is_decided_one_by_one(apiserver: Cluster, monkeypatch: pytest.MonkeyPatch) -> None:
    """A bug of ours while deciding a batch (here: the decision raises) costs its pods nothing but the batch:
    they are decided one by one, as without batches, and the batch counts as an error."""
    def broken(*_: object) -> None:
        raise RuntimeError("a bug of ours")

    monkeypatch.setattr(batches, "decide", broken)
    errors = metrics.batch_decisions.labels("error")._value.get()
    assert await _one_pass(apiserver, 4) == {"a-one": "node-a", "b-four": "node-b", "c-three": "node-b",
                                             "d-two": None}
    assert metrics.batch_decisions.labels("error")._value.get() == errors + 1


CASES = [  # (GPUs per node, GPUs per pod in arrival order): the example above, and a few drawn at random
    ((2, 8), (1, 4, 3, 2)),
    *[(tuple(rng.choice((1, 2, 4, 8)) for _ in range(rng.randint(2, 3))),
       tuple(rng.choice((1, 2, 3, 4)) for _ in range(rng.randint(3, 6))))
      for rng in (random.Random(seed) for seed in range(4))],
]


@pytest.mark.parametrize(("node_gpus", "pod_gpus"), CASES, ids=[f"{n}-{p}" for n, p in CASES])
async def test_the_operator_decides_a_batch_as_simulate_does(apiserver: Cluster, tmp_path: pathlib.Path,
                                                             node_gpus: tuple[int, ...],
                                                             pod_gpus: tuple[int, ...]) -> None:
    """One pass of the operator with batchOrders 4 and `dralloc simulate --batch N --batch-orders 4` on the
    same objects (the cluster and the pods as the API server has them) put every pod on the same node."""
    gpu = apiserver.name("gpu")
    nodes = [apiserver.name(f"node-{chr(ord('a') + i)}") for i in range(len(node_gpus))]
    apiserver.seed([cluster.gpu_class(gpu), *[cluster.node(n) for n in nodes],
                    *[cluster.gpu_slice(n, count) for n, count in zip(nodes, node_gpus, strict=True)]])
    apiserver.seed([cluster.template(f"gpus-{count}", count=count, device_class=gpu) for count in sorted(set(pod_gpus))])
    names = [f"p{i}" for i in range(len(pod_gpus))]
    for name, count in zip(names, pod_gpus, strict=True):
        apiserver.seed([cluster.pod(name, template_name=f"gpus-{count}")])
    # A real cluster's new nodes are tainted not-ready until kube-controller-manager clears them.
    wait_for(lambda: not any(_tainted(apiserver, n) for n in nodes), timeout=60, what="the nodes untainted")
    snapshot = tmp_path / "snapshot.yaml"
    snapshot.write_text(yaml.safe_dump_all(
        [_bare(o) for o in apiserver.list_objects("v1", "Node") if o["metadata"]["name"] in nodes]
        + [_bare(o) for o in apiserver.list_objects("resource.k8s.io/v1", "ResourceSlice")
           if o["spec"].get("nodeName") in nodes]
        + [_bare(o) for o in apiserver.list_objects("resource.k8s.io/v1", "DeviceClass")
           if o["metadata"]["name"] == gpu]))
    workload = tmp_path / "workload.yaml"
    pods_now = {o["metadata"]["name"]: o for o in apiserver.list_objects("v1", "Pod", apiserver.namespace)}
    workload.write_text(yaml.safe_dump_all(
        [_bare(o) for o in apiserver.list_objects("resource.k8s.io/v1", "ResourceClaimTemplate", apiserver.namespace)]
        + [_bare(pods_now[name], status=False) for name in names]))
    simulated = simulating.simulate(simulating.Request(
        snapshot_files=[str(snapshot)], workload_files=[str(workload)], policy="fragmentation-aware",
        progress=False, batch=len(names), batch_orders=4), io.StringIO())
    expected = {name: None for name in names} | {
        line.split()[0].rpartition("/")[2]: line.split()[1] for line in simulated["placements"]}

    def batches_of(rt: Runtime) -> None:
        rt.policy, rt.batch_orders = "fragmentation-aware", 4

    await run_one_pass(apiserver, nodes, names, batches_of)
    assert {name: helpers.node_of(apiserver, name) for name in names} == expected


def _bare(obj: dict[str, object], *, status: bool = True) -> dict[str, object]:
    """The object as a user's file would hold it (no server-set metadata; a pod without its status)."""
    meta = dict(obj["metadata"])  # type: ignore[call-overload]
    kept = {k: v for k, v in meta.items() if k in ("name", "namespace", "labels", "annotations")}
    found = {k: v for k, v in obj.items() if k != "metadata" and (status or k != "status")}
    return {"metadata": kept, **found}
