"""A pod with a claim template goes all the way: claim created, allocated, reserved, pod bound."""

from __future__ import annotations

from tests.handlers import helpers
from tests.handlers.conftest import Cluster, OperatorThread, wait_for

from dralloc.testing import cluster


def test_template_claim_allocated_and_pod_bound(apiserver: Cluster, operator: OperatorThread) -> None:
    """template -> claim (owned by the pod) -> allocated -> reserved for the pod -> pod bound to that node."""
    node_a, gpu = apiserver.name("node-a"), apiserver.name("gpu")
    apiserver.seed([cluster.node(node_a), cluster.gpu_slice(node_a, 2),
                    cluster.gpu_class(gpu), cluster.template("one-gpu", device_class=gpu)])
    apiserver.seed([cluster.pod("trainer", template_name="one-gpu")])
    bound = wait_for(lambda: helpers.node_of(apiserver, "trainer"), what="pod bound")
    assert bound == node_a
    (claim,) = helpers.claims(apiserver)
    pod = helpers.pod(apiserver, "trainer")
    assert claim["metadata"]["ownerReferences"][0]["uid"] == pod["metadata"]["uid"]
    assert claim["metadata"]["annotations"]["resource.kubernetes.io/pod-claim-name"] == "gpus"
    assert "resource.kubernetes.io/delete-protection" in claim["metadata"]["finalizers"]
    results = claim["status"]["allocation"]["devices"]["results"]
    assert [(r["pool"], r["device"]) for r in results] == [(node_a, "gpu-0")]
    assert [r["uid"] for r in claim["status"]["reservedFor"]] == [pod["metadata"]["uid"]]
    statuses = pod["status"]["resourceClaimStatuses"]
    assert statuses == [{"name": "gpus", "resourceClaimName": claim["metadata"]["name"]}]
