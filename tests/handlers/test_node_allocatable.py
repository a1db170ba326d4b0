"""DRANodeAllocatableResources on a cluster: a CPU driver's cores count as the node's cpu.

With the gate on, dralloc writes the pod's `status.nodeAllocatableResourceClaimStatuses` before
it binds (as kube-scheduler's PreBind does; the kubelet sizes cgroups from it) and counts the
mapped cpu on the node, so a second pod whose cores would overcommit the node's cpu waits with
kube-scheduler's reason. Runs on the sandbox and on the real control plane (its kube-apiserver
has the gate on).
"""

from __future__ import annotations

from typing import Any

from tests.handlers import helpers
from tests.handlers.conftest import Cluster, OperatorThread, operator_settings, wait_for

from dralloc.allocation.features import Features
from dralloc.testing import cluster
from dralloc.testing.cluster import crds

Obj = dict[str, Any]


def _cpu_slice(node: str, driver: str) -> Obj:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{node}-cpus"},
            "spec": {"driver": driver, "nodeName": node,
                     "pool": {"name": f"{node}-cpus", "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": "cpus", "allowMultipleAllocations": True,
                                  "capacity": {"cores": {"value": "32", "requestPolicy": {
                                      "default": "1", "validRange": {"min": "1", "step": "1"}}}},
                                  "nodeAllocatableResources": {"cpu": {"mapping": {
                                      "capacityKey": "cores", "capacityMultiplier": "2"}}}}]}}


def _template(name: str, device_class: str, cores: str) -> Obj:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": name},
            "spec": {"spec": {"devices": {"requests": [{"name": "cpus", "exactly": {
                "deviceClassName": device_class, "allocationMode": "ExactCount", "count": 1,
                "capacity": {"requests": {"cores": cores}}}}]}}}}


def test_mapped_cores_are_written_on_the_pod_and_fill_the_nodes_cpu(apiserver: Cluster) -> None:
    node, klass = apiserver.name("node-a"), apiserver.name("cpu")
    driver = f"{apiserver.name('cpu')}.example.com"
    node_obj = cluster.node(node, cpu="16")
    # kube-apiserver admits such a slice only from a node that declares the feature.
    node_obj["status"]["declaredFeatures"] = ["DRANodeAllocatableResources"]
    apiserver.seed([*crds(), node_obj, _cpu_slice(node, driver),
                    {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": klass},
                     "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]}},
                    _template("five-cores", klass, "5")])
    settings = operator_settings(apiserver, features=Features.from_gates({"DRANodeAllocatableResources": True}))
    operator = OperatorThread(settings).start()
    try:
        apiserver.seed([cluster.pod("first", template_name="five-cores")])
        wait_for(lambda: helpers.node_of(apiserver, "first"), what="the first pod bound")
        pod = helpers.pod(apiserver, "first")
        (entry,) = [s for s in pod["status"]["resourceClaimStatuses"] if s["name"] == "gpus"]
        assert pod["status"]["nodeAllocatableResourceClaimStatuses"] == [{
            "resourceClaimName": entry["resourceClaimName"], "containers": ["main"],
            "mapping": [{"name": "cpu", "quantity": "10"}]}]
        # 10 cpu more would make 20 of the node's 16: the second pod waits, saying why.
        apiserver.seed([cluster.pod("second", template_name="five-cores")])
        found = wait_for(lambda: (c := helpers.condition(helpers.pod(apiserver, "second"), "PodScheduled"))
                         and "Insufficient cpu" in c.get("message", "") and c,
                         what="the second pod unschedulable for cpu")
        assert found["status"] == "False"
        assert helpers.node_of(apiserver, "second") is None
    finally:
        operator.stop()
