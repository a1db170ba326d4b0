"""Small clusters for the operator tests, as raw API objects.

Namespaced objects carry no namespace unless given one (`namespace_=`): seeding puts
them in the test's namespace, as `kubectl apply` would. Cluster-scoped names come from
the test (`apiserver.name("node-a")`) so that tests on a shared cluster never collide.
"""

from __future__ import annotations

from typing import Any

DRIVER = "gpu.example.com"
Obj = dict[str, Any]


def node(name: str, *, cpu: str = "16", pods: str = "110", labels: dict[str, str] | None = None) -> Obj:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
            "status": {"allocatable": {"cpu": cpu, "memory": "64Gi", "pods": pods},
                       "capacity": {"cpu": cpu, "memory": "64Gi", "pods": pods}}}


def gpu_slice(node_name: str, count: int, *, numa_split: int = 0) -> Obj:
    devices = [{"name": f"gpu-{i}", "attributes": {"index": {"int": i},
                                                   "numa": {"int": i // numa_split if numa_split else 0}},
                "capacity": {"memory": {"value": "40Gi"}}} for i in range(count)]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": f"{node_name}-gpus"},
            "spec": {"driver": DRIVER, "nodeName": node_name,
                     "pool": {"name": node_name, "generation": 1, "resourceSliceCount": 1}, "devices": devices}}


def gpu_class(name: str = "gpu") -> Obj:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}}


def namespace(name: str = "default") -> Obj:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def _meta(name: str, namespace_: str | None) -> Obj:
    return {"name": name, "namespace": namespace_} if namespace_ else {"name": name}


def template(name: str, *, count: int = 1, namespace_: str | None = None, device_class: str = "gpu") -> Obj:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": _meta(name, namespace_),
            "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                "deviceClassName": device_class, "allocationMode": "ExactCount", "count": count}}]}}}}


def claim(name: str, *, count: int = 1, namespace_: str | None = None, device_class: str = "gpu") -> Obj:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": _meta(name, namespace_),
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                "deviceClassName": device_class, "allocationMode": "ExactCount", "count": count}}]}}}


def pod(name: str, *, template_name: str | None = None, claim_name: str | None = None,
        scheduler: str | None = "dralloc", gate: str | None = None, namespace_: str | None = None,
        cpu: str | None = None) -> Obj:
    spec: Obj = {"containers": [{"name": "main", "image": "busybox"}]}
    if scheduler:
        spec["schedulerName"] = scheduler
    if gate:
        spec["schedulingGates"] = [{"name": gate}]
    if cpu:
        spec["containers"][0]["resources"] = {"requests": {"cpu": cpu}}
    entries = []
    if template_name:
        entries.append({"name": "gpus", "resourceClaimTemplateName": template_name})
    if claim_name:
        entries.append({"name": "shared", "resourceClaimName": claim_name})
    if entries:
        spec["resourceClaims"] = entries
        spec["containers"][0]["resources"] = {**spec["containers"][0].get("resources", {}),
                                              "claims": [{"name": e["name"]} for e in entries]}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": _meta(name, namespace_), "spec": spec}
