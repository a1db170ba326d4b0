"""DRA extended resources: a container asking for `<resource>: N` gets a claim for the class naming it."""

from __future__ import annotations

import pytest
from tests.handlers import helpers
from tests.handlers.conftest import Cluster, OperatorThread, wait_for

from dralloc.testing import cluster


def test_extended_resource_request_is_served_by_a_claim(apiserver: Cluster, operator: OperatorThread) -> None:
    """`example.com/gpu: 2` on a pod becomes one claim for 2 devices of the class with that extendedResourceName."""
    node_a = apiserver.name("node-a")
    resource = f"{apiserver.name('gpu')}.example.com/gpu"  # one class per extended resource name, cluster-wide
    device_class = cluster.gpu_class(apiserver.name("gpu"))
    device_class["spec"]["extendedResourceName"] = resource
    (stored_class,) = apiserver.seed([device_class])
    if not stored_class["spec"].get("extendedResourceName"):
        pytest.skip("the cluster drops DeviceClass.spec.extendedResourceName (feature gate DRAExtendedResource off)")
    apiserver.seed([cluster.node(node_a), cluster.gpu_slice(node_a, 3)])
    pod = cluster.pod("legacy-style")
    pod["spec"]["containers"][0]["resources"] = {"requests": {resource: "2"}, "limits": {resource: "2"}}
    apiserver.seed([pod])
    assert wait_for(lambda: helpers.node_of(apiserver, "legacy-style"), what="pod bound") == node_a
    (claim,) = helpers.claims(apiserver)
    assert claim["metadata"]["annotations"]["resource.kubernetes.io/extended-resource-claim"] == "true"
    results = claim["status"]["allocation"]["devices"]["results"]
    assert sorted(r["device"] for r in results) == ["gpu-0", "gpu-1"]
    status = helpers.pod(apiserver, "legacy-style")["status"]["extendedResourceClaimStatus"]
    assert status["resourceClaimName"] == claim["metadata"]["name"]
    assert status["requestMappings"] == [{"containerName": "main", "resourceName": resource,
                                          "requestName": results[0]["request"]}]


def test_pod_seen_before_its_device_class_is_served_once_the_class_arrives(
        apiserver: Cluster, operator: OperatorThread) -> None:
    """A pod asking for an extended resource no class names yet waits; the class's arrival (not a resync)
    gets it its claim and a node."""
    node_a = apiserver.name("node-a")
    resource = f"{apiserver.name('late')}.example.com/gpu"
    apiserver.seed([cluster.node(node_a), cluster.gpu_slice(node_a, 2)])
    pod = cluster.pod("early-pod")
    pod["spec"]["containers"][0]["resources"] = {"requests": {resource: "1"}, "limits": {resource: "1"}}
    apiserver.seed([pod])
    assert wait_for(lambda: helpers.condition(helpers.pod(apiserver, "early-pod"), "PodScheduled"),
                    what="the pod reported unschedulable") is not None
    assert helpers.node_of(apiserver, "early-pod") is None
    device_class = cluster.gpu_class(apiserver.name("late"))
    device_class["spec"]["extendedResourceName"] = resource
    (stored_class,) = apiserver.seed([device_class])
    if not stored_class["spec"].get("extendedResourceName"):
        pytest.skip("the cluster drops DeviceClass.spec.extendedResourceName (feature gate DRAExtendedResource off)")
    assert wait_for(lambda: helpers.node_of(apiserver, "early-pod"), what="pod bound") == node_a
