"""Small clusters for the operator's tests and benchmarks, as raw API objects.

Owns the objects a test or a benchmark seeds an API server with: Nodes, a GPU
ResourceSlice per node, the GPU DeviceClass, claims, claim templates, pods,
namespaces, and our CRDs as the repository's crds/ holds them (`crds()`).

Namespaced objects carry no namespace unless given one (`namespace_=`): seeding puts
them in the test's namespace, as `kubectl apply` would. Cluster-scoped names come from
the caller (`apiserver.name("node-a")`) so that tests on a shared cluster never collide.

Imports: the standard library and PyYAML only (no other dralloc module), so that a
benchmark of the pure layers can use it without loading the operator.
"""

from __future__ import annotations

import pathlib
from typing import Any

import yaml

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


def repository() -> pathlib.Path:
    """The source checkout this module runs from: the nearest folder above it holding operator/dralloc/
    and crds/. FileNotFoundError when there is none (an installed dralloc: the CRDs ship in the
    repository and in manifests/, not in the package)."""
    here = pathlib.Path(__file__).resolve()
    for folder in here.parents:
        if (folder / "operator" / "dralloc").is_dir() and (folder / "crds").is_dir():
            return folder
    raise FileNotFoundError(f"{here}: not in a dralloc source checkout (no folder above it holds operator/dralloc/ "
                            "and crds/); dralloc.testing.cluster.crds() reads the CRDs from the repository's crds/")


def crds(directory: pathlib.Path | None = None) -> list[Obj]:
    """Our CustomResourceDefinitions: every document of every *.yaml in `directory` (default: the
    repository's crds/), files in name order. FileNotFoundError when the folder is missing or holds
    no CRD, so that a test never runs the operator without them."""
    folder = directory if directory is not None else repository() / "crds"
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder}: no such folder (the CRDs are read from crds/)")
    objects = [doc for path in sorted(folder.glob("*.yaml")) for doc in yaml.safe_load_all(path.read_text())]
    if not any(isinstance(o, dict) and o.get("kind") == "CustomResourceDefinition" for o in objects):
        raise FileNotFoundError(f"{folder}: no CustomResourceDefinition in its *.yaml files")
    return objects
