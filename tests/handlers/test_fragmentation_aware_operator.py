"""The operator under the FragmentationAware AllocationPolicy: the pods waiting shape the choice.

node-a has two GPUs, node-b one. A one-GPU pod and a two-GPU pod wait; the one-GPU pod is
decided first (same age: by name). FirstFit would put it on node-a (first by name) and leave the
two-GPU pod nowhere; FragmentationAware sees the two-GPU pod waiting, puts the one-GPU pod on
node-b, and both are bound.
"""

from __future__ import annotations

import time

from tests.handlers import helpers
from tests.handlers.conftest import Cluster, OperatorThread, wait_for

from dralloc.testing import cluster

POLICY = ("dralloc.io/v1alpha1", "AllocationPolicy", "default")


def _strategy(apiserver: Cluster, strategy: str) -> None:
    apiserver.request("PATCH", "/apis/dralloc.io/v1alpha1/allocationpolicies/default",
                      {"spec": {"strategy": strategy}}, content_type="application/merge-patch+json")


def _accepted(apiserver: Cluster, strategy: str) -> bool:
    policy = apiserver.get(*POLICY) or {}
    conditions = (policy.get("status") or {}).get("conditions") or []
    return policy.get("spec", {}).get("strategy") == strategy and any(
        c.get("type") == "Accepted" and c.get("status") == "True" for c in conditions)


def _tainted(apiserver: Cluster, node: str) -> bool:
    """A NoSchedule/NoExecute taint on the node (a real cluster's not-ready taint on a new node)."""
    taints = ((apiserver.get("v1", "Node", node) or {}).get("spec") or {}).get("taints") or []
    return any(t.get("effect") in ("NoSchedule", "NoExecute") for t in taints)


def test_waiting_two_gpu_pod_keeps_node_a_whole(apiserver: Cluster, operator: OperatorThread) -> None:
    wait_for(lambda: apiserver.get(*POLICY), what="the default AllocationPolicy")
    _strategy(apiserver, "FragmentationAware")
    try:
        wait_for(lambda: _accepted(apiserver, "FragmentationAware"), what="FragmentationAware accepted")
        time.sleep(0.5)  # the policy event reaches the scheduling loop's memo with the status write
        node_a, node_b, gpu = apiserver.name("node-a"), apiserver.name("node-b"), apiserver.name("gpu")
        # Both pods must wait for the same pass that first sees both nodes' GPUs. The pods and the
        # nodes come first, without any GPU: once the operator reports both pods unschedulable on
        # 2 nodes it has both (a real cluster's new nodes are tainted not-ready until
        # kube-controller-manager clears them, in no set order). Then the slices, node-b's first:
        # they reach the operator in order, so a pass between the two sees only node-b and puts
        # the small pod there under any policy (the large one then takes node-a).
        apiserver.seed([cluster.gpu_class(gpu), cluster.template("one-gpu", device_class=gpu),
                        cluster.template("two-gpus", count=2, device_class=gpu)])
        apiserver.seed([cluster.pod("a-small", template_name="one-gpu"),
                        cluster.pod("b-large", template_name="two-gpus")])  # by name: small decided first
        apiserver.seed([cluster.node(node_b), cluster.node(node_a)])
        for pod in ("a-small", "b-large"):
            wait_for(lambda pod=pod: "0/2 nodes are available" in ((helpers.condition(
                helpers.pod(apiserver, pod), "PodScheduled") or {}).get("message") or "")
                and not _tainted(apiserver, node_a) and not _tainted(apiserver, node_b),
                timeout=60, what=f"{pod} unschedulable on both untainted nodes")
        apiserver.seed([cluster.gpu_slice(node_b, 1)])
        apiserver.seed([cluster.gpu_slice(node_a, 2)])
        assert wait_for(lambda: helpers.node_of(apiserver, "a-small"), what="small bound") == node_b
        assert wait_for(lambda: helpers.node_of(apiserver, "b-large"), what="large bound") == node_a
    finally:
        _strategy(apiserver, "FirstFit")
