"""DRA extended resources: a container asking for `<resource>: N` gets a claim for the class naming it."""

from __future__ import annotations

from tests.handlers import cluster, helpers
from tests.handlers.conftest import OperatorThread, wait_for

from dralloc.sandbox import ThreadedApiServer


def test_extended_resource_request_is_served_by_a_claim(apiserver: ThreadedApiServer, operator: OperatorThread) -> None:
    """`example.com/gpu: 2` on a pod becomes one claim for 2 devices of the class with that extendedResourceName."""
    device_class = cluster.gpu_class()
    device_class["spec"]["extendedResourceName"] = "example.com/gpu"
    apiserver.seed([cluster.node("node-a"), cluster.gpu_slice("node-a", 3), device_class])
    pod = cluster.pod("legacy-style")
    pod["spec"]["containers"][0]["resources"] = {"requests": {"example.com/gpu": "2"},
                                                 "limits": {"example.com/gpu": "2"}}
    apiserver.seed([pod])
    assert wait_for(lambda: helpers.node_of(apiserver, "legacy-style"), what="pod bound") == "node-a"
    (claim,) = helpers.claims(apiserver)
    assert claim["metadata"]["annotations"]["resource.kubernetes.io/extended-resource-claim"] == "true"
    results = claim["status"]["allocation"]["devices"]["results"]
    assert sorted(r["device"] for r in results) == ["gpu-0", "gpu-1"]
    status = helpers.pod(apiserver, "legacy-style")["status"]["extendedResourceClaimStatus"]
    assert status["resourceClaimName"] == claim["metadata"]["name"]
    assert status["requestMappings"] == [{"containerName": "main", "resourceName": "example.com/gpu",
                                          "requestName": results[0]["request"]}]
