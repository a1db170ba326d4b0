"""The operator makes room by moving a movable pod (AllocationPolicy spec.consolidationMoves).

node-a has 2 GPUs and holds `mover`, a one-GPU replica of a ReplicaSet annotated
`dralloc.io/movable: "true"`; node-b, added after, has 1 GPU. A two-GPU pod of the same priority
fits nowhere (one GPU free on each node) and preemption finds nobody of lower priority to remove.
With consolidationMoves 1 under FragmentationAware, dralloc nominates the pod to node-a and
deletes `mover` (DisruptionTarget `ConsolidationByDralloc`, Events `Moved` and `MakingRoom`); the
ReplicaSet's replacement goes to node-b (node-a is held for the pod) and the pod is bound to node-a.
On a real cluster kube-controller-manager's ReplicaSet controller makes the replicas; the sandbox
runs no controllers, so there the test makes each one as that controller would. Without the
setting nobody moves and the pod says it fits nowhere; nor when a PodDisruptionBudget allows no
disruption of the replica.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from tests.handlers import helpers
from tests.handlers.conftest import Cluster, OperatorThread, wait_for
from tests.handlers.test_fragmentation_aware_operator import _tainted

from dralloc.testing import cluster

POLICY = "/apis/dralloc.io/v1alpha1/allocationpolicies/default"
MOVABLE = {"dralloc.io/movable": "true"}


def _policy(apiserver: Cluster, spec: dict[str, object]) -> None:
    apiserver.request("PATCH", POLICY, {"spec": spec}, content_type="application/merge-patch+json")


def _accepted(apiserver: Cluster, said: str) -> bool:
    policy = apiserver.get("dralloc.io/v1alpha1", "AllocationPolicy", "default") or {}
    return any(c.get("type") == "Accepted" and c.get("status") == "True" and said in (c.get("message") or "")
               for c in (policy.get("status") or {}).get("conditions") or [])


def _replica_set(apiserver: Cluster, app: str) -> dict[str, Any]:
    template = cluster.pod("unused", template_name="one-gpu")
    template["spec"]["terminationGracePeriodSeconds"] = 1
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": app, "namespace": apiserver.namespace},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": app}},
                     "template": {"metadata": {"labels": {"app": app}, "annotations": MOVABLE},
                                  "spec": template["spec"]}}}


def _replicas(apiserver: Cluster, app: str) -> list[dict[str, Any]]:
    return [p for p in apiserver.list_objects("v1", "Pod", apiserver.namespace)
            if (p["metadata"].get("labels") or {}).get("app") == app and not p["metadata"].get("deletionTimestamp")]


def _as_the_controller_would(apiserver: Cluster, app: str, name: str) -> None:
    """The sandbox runs no ReplicaSet controller: make its one replica (labels, annotation, owner) when
    there is none. A real cluster's kube-controller-manager does it itself."""
    if apiserver.real or _replicas(apiserver, app):
        return
    owner = apiserver.get("apps/v1", "ReplicaSet", app, apiserver.namespace) or {}
    pod = cluster.pod(name, template_name="one-gpu")
    pod["spec"]["terminationGracePeriodSeconds"] = 1
    pod["metadata"].update(labels={"app": app}, annotations=MOVABLE, ownerReferences=[{
        "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": app, "uid": owner["metadata"]["uid"],
        "controller": True, "blockOwnerDeletion": True}])
    apiserver.seed([pod])


def _setup(apiserver: Cluster, moves: int, *, budget: bool = False) -> tuple[str, str, dict[str, Any]]:
    """node-a holding the movable replica, then node-b, then the two-GPU pod; node-a's and node-b's names
    and the replica as it was bound."""
    wait_for(lambda: apiserver.get("dralloc.io/v1alpha1", "AllocationPolicy", "default"), what="the default policy")
    _policy(apiserver, {"strategy": "FragmentationAware", "consolidationMoves": moves})
    said = f"moving up to {moves} movable pod(s)" if moves else "placing with fragmentation-aware; preemption on"
    wait_for(lambda: _accepted(apiserver, said), what=f"consolidationMoves {moves} accepted")
    time.sleep(0.5)  # the policy event reaches the scheduling loop with the status write
    node_a, node_b, gpu = apiserver.name("node-a"), apiserver.name("node-b"), apiserver.name("gpu")
    apiserver.seed([cluster.node(node_a), cluster.gpu_slice(node_a, 2), cluster.gpu_class(gpu),
                    cluster.template("one-gpu", device_class=gpu), cluster.template("two-gpus", count=2, device_class=gpu)])
    app = apiserver.name("mover")
    apiserver.seed([_replica_set(apiserver, app)])
    _as_the_controller_would(apiserver, app, "mover-1")
    first = wait_for(lambda: [p for p in _replicas(apiserver, app) if p["spec"].get("nodeName") == node_a],
                     timeout=60, what="the movable replica bound to node-a")[0]
    if budget:  # one replica, at least one available: no disruption allowed
        apiserver.seed([{"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                         "metadata": {"name": app, "namespace": apiserver.namespace},
                         "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": app}}}}])
        wait_for(lambda: ((apiserver.get("policy/v1", "PodDisruptionBudget", app, apiserver.namespace) or {})
                          .get("status") or {}).get("expectedPods") == 1, timeout=60,
                 what="the PodDisruptionBudget counting the replica")
    apiserver.seed([cluster.node(node_b), cluster.gpu_slice(node_b, 1)])
    wait_for(lambda: not _tainted(apiserver, node_b), timeout=60, what="node-b untainted")
    apiserver.seed([cluster.pod("big", template_name="two-gpus")])
    return node_a, node_b, first


def _restore(apiserver: Cluster) -> None:
    _policy(apiserver, {"strategy": "FirstFit", "consolidationMoves": 0})


def test_a_movable_pod_moves_to_make_room(apiserver: Cluster, operator: OperatorThread) -> None:
    try:
        node_a, node_b, first = _setup(apiserver, 1)
        app = first["metadata"]["labels"]["app"]
        moved = wait_for(lambda: [e for e in helpers.events(apiserver, "Moved")
                                  if e["regarding"]["name"] == first["metadata"]["name"]],
                         timeout=60, what="the movable replica told it is moved")[0]
        assert f"to make room for pod {apiserver.namespace}/big" in moved["note"] and node_b in moved["note"]
        making = wait_for(lambda: helpers.events(apiserver, "MakingRoom"), what="the pod told room is made")[0]
        assert making["regarding"]["name"] == "big" and first["metadata"]["name"] in making["note"]
        assert (helpers.pod(apiserver, "big").get("status") or {}).get("nominatedNodeName") == node_a
        # The replacement (the ReplicaSet's) goes elsewhere: node-a is held for the pod.
        wait_for(lambda: not [p for p in _replicas(apiserver, app) if p["metadata"]["uid"] == first["metadata"]["uid"]],
                 timeout=60, what="the moved replica gone")
        _as_the_controller_would(apiserver, app, "mover-2")
        assert wait_for(lambda: helpers.node_of(apiserver, "big"), timeout=60, what="the pod bound") == node_a
        replacement = wait_for(lambda: [p for p in _replicas(apiserver, app) if p["spec"].get("nodeName")],
                               timeout=60, what="the replacement bound")[0]
        assert replacement["spec"]["nodeName"] == node_b
    finally:
        _restore(apiserver)


@pytest.mark.parametrize("moves, budget", [(0, False), (1, True)], ids=["setting-off", "disruption-budget"])
def test_nobody_moves_without_the_setting_or_beyond_a_budget(apiserver: Cluster, operator: OperatorThread,
                                                             moves: int, budget: bool) -> None:
    try:
        _, _, first = _setup(apiserver, moves, budget=budget)
        wait_for(lambda: "0/2 nodes are available" in ((helpers.condition(helpers.pod(apiserver, "big"), "PodScheduled")
                                                         or {}).get("message") or ""),
                 timeout=60, what="the pod told it fits nowhere")
        assert not helpers.events(apiserver, "Moved")
        assert [p["metadata"]["uid"] for p in _replicas(apiserver, first["metadata"]["labels"]["app"])] == [
            first["metadata"]["uid"]]
        assert helpers.node_of(apiserver, "big") is None
    finally:
        _restore(apiserver)
