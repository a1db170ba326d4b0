"""The operator under the FragmentationAware AllocationPolicy: the pods waiting shape the choice.

node-a has two GPUs, node-b one. A one-GPU pod and a two-GPU pod wait; the one-GPU pod is
decided first (same age: by name). FirstFit would put it on node-a (first by name) and leave the
two-GPU pod nowhere; FragmentationAware sees the two-GPU pod waiting, puts the one-GPU pod on
node-b, and both are bound.
"""

from __future__ import annotations

import time

from tests.handlers import cluster, helpers
from tests.handlers.conftest import Cluster, OperatorThread, wait_for

POLICY = ("dralloc.io/v1alpha1", "AllocationPolicy", "default")


def _strategy(apiserver: Cluster, strategy: str) -> None:
    apiserver.request("PATCH", "/apis/dralloc.io/v1alpha1/allocationpolicies/default",
                      {"spec": {"strategy": strategy}}, content_type="application/merge-patch+json")


def _accepted(apiserver: Cluster, strategy: str) -> bool:
    policy = apiserver.get(*POLICY) or {}
    conditions = (policy.get("status") or {}).get("conditions") or []
    return policy.get("spec", {}).get("strategy") == strategy and any(
        c.get("type") == "Accepted" and c.get("status") == "True" for c in conditions)


def test_waiting_two_gpu_pod_keeps_node_a_whole(apiserver: Cluster, operator: OperatorThread) -> None:
    wait_for(lambda: apiserver.get(*POLICY), what="the default AllocationPolicy")
    _strategy(apiserver, "FragmentationAware")
    try:
        wait_for(lambda: _accepted(apiserver, "FragmentationAware"), what="FragmentationAware accepted")
        time.sleep(0.5)  # the policy event reaches the scheduling loop's memo with the status write
        node_a, node_b, gpu = apiserver.name("node-a"), apiserver.name("node-b"), apiserver.name("gpu")
        # Pods first, on no nodes: both wait, so one pass decides them together once the nodes
        # come. node-b comes first: a pass between the two sees only node-b and puts the small
        # pod there under any policy (the large one then takes node-a).
        apiserver.seed([cluster.gpu_slice(node_a, 2), cluster.gpu_slice(node_b, 1), cluster.gpu_class(gpu),
                        cluster.template("one-gpu", device_class=gpu),
                        cluster.template("two-gpus", count=2, device_class=gpu)])
        apiserver.seed([cluster.pod("a-small", template_name="one-gpu"),
                        cluster.pod("b-large", template_name="two-gpus")])  # by name: small decided first
        time.sleep(0.5)
        apiserver.seed([cluster.node(node_b), cluster.node(node_a)])
        assert wait_for(lambda: helpers.node_of(apiserver, "a-small"), what="small bound") == node_b
        assert wait_for(lambda: helpers.node_of(apiserver, "b-large"), what="large bound") == node_a
    finally:
        _strategy(apiserver, "FirstFit")
