"""A pod with a claim template goes all the way: claim created, allocated, reserved, pod bound."""

from __future__ import annotations

from typing import Any

from tests.handlers import cluster
from tests.handlers.conftest import OperatorThread, wait_for

from dralloc.sandbox import ThreadedApiServer


def _pod(server: ThreadedApiServer, name: str) -> dict[str, Any] | None:
    return server.get("v1", "Pod", name, "default")


def _claims(server: ThreadedApiServer) -> list[dict[str, Any]]:
    return server.list_objects("resource.k8s.io/v1", "ResourceClaim", "default")


def test_template_claim_allocated_and_pod_bound(apiserver: ThreadedApiServer, operator: OperatorThread) -> None:
    """template -> claim (owned by the pod) -> allocated -> reserved for the pod -> pod bound to that node."""
    apiserver.seed([cluster.node("node-a"), cluster.gpu_slice("node-a", 2),
                    cluster.gpu_class(), cluster.template("one-gpu")])
    apiserver.seed([cluster.pod("trainer", template_name="one-gpu")])
    bound = wait_for(lambda: (_pod(apiserver, "trainer") or {}).get("spec", {}).get("nodeName"), what="pod bound")
    assert bound == "node-a"
    (claim,) = _claims(apiserver)
    pod = _pod(apiserver, "trainer")
    assert pod is not None
    assert claim["metadata"]["ownerReferences"][0]["uid"] == pod["metadata"]["uid"]
    assert claim["metadata"]["annotations"]["resource.kubernetes.io/pod-claim-name"] == "gpus"
    assert "resource.kubernetes.io/delete-protection" in claim["metadata"]["finalizers"]
    results = claim["status"]["allocation"]["devices"]["results"]
    assert [(r["pool"], r["device"]) for r in results] == [("node-a", "gpu-0")]
    assert [r["uid"] for r in claim["status"]["reservedFor"]] == [pod["metadata"]["uid"]]
    statuses = pod["status"]["resourceClaimStatuses"]
    assert statuses == [{"name": "gpus", "resourceClaimName": claim["metadata"]["name"]}]
