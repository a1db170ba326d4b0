"""Objects to start a sandbox with: the demo cluster, or files.

The demo cluster (`--seed demo`) is four nodes, each publishing through two drivers:

- `gpu.dralloc.dev`: 8 GPUs per node (nodes 0-1 modelled on an H100 80GB, 2-3 on an
  A100 80GB), attributes productName, architecture, driverVersion (a version),
  cudaComputeCapability (a version), nvlinkDomain, pcieRoot, index, uuid and a `type`
  of `gpu` or `partition`; memory and multiprocessors as capacity. GPUs are
  partitionable the resource.k8s.io/v1 (1.35+) way: one slice of the pool carries
  only `sharedCounters` (one counter set per GPU: memory, memory slices, compute
  slices), the whole-GPU devices and MIG-like partition devices (1g.10gb x7, 2g.20gb
  x3, 3g.40gb x2, 7g.80gb x1 per GPU) live in other slices and consume those counters,
  so a GPU and its partitions exclude each other through the counters alone. A pool
  is one node: 4 slices (counters, GPUs, partitions of GPUs 0-3, of 4-7), since a
  slice may hold at most 64 devices that consume counters.
- `nic.dralloc.dev`: 2 NICs per node, shareable (`allowMultipleAllocations: true`)
  with 200G of consumable bandwidth whose requestPolicy defaults to 10G in 1G steps.

DeviceClasses `gpu`, `gpu-partition` and `nic` select them; each node also has its
heartbeat Lease in kube-node-lease (so `kubectl describe node` looks as usual). Everything is
deterministic, so tests and docs can name devices (`node-0` / `gpu-3-1g-10gb-2`).
"""

from __future__ import annotations

import hashlib
import json
import os
import pathlib
from collections.abc import Iterable
from typing import Any

import yaml

Obj = dict[str, Any]
GPU_DRIVER = "gpu.dralloc.dev"
NIC_DRIVER = "nic.dralloc.dev"
NODES = 4
GPUS_PER_NODE = 8
NICS_PER_NODE = 2
_MODELS: tuple[dict[str, str], ...] = (
    {"productName": "NVIDIA H100 80GB HBM3", "architecture": "Hopper", "cc": "9.0.0", "sms": "132"},
    {"productName": "NVIDIA A100-SXM4-80GB", "architecture": "Ampere", "cc": "8.0.0", "sms": "108"},
)
# profile, compute slices, memory slices, memory, count per GPU
_PROFILES = (("1g.10gb", 1, 1, "10Gi", 7), ("2g.20gb", 2, 2, "20Gi", 3), ("3g.40gb", 3, 4, "40Gi", 2),
             ("7g.80gb", 7, 8, "80Gi", 1))


def _uuid(*parts: object) -> str:
    digest = hashlib.sha256("/".join(map(str, parts)).encode()).hexdigest()
    return f"GPU-{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"


def _slice(name: str, driver: str, node: str, count: int, **spec: Any) -> Obj:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": name},
        "spec": {"driver": driver, "nodeName": node,
                 "pool": {"name": node, "generation": 1, "resourceSliceCount": count}, **spec},
    }


def _node(i: int) -> Obj:
    name = f"node-{i}"
    model = _MODELS[0 if i < NODES // 2 else 1]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {
            "kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
            "topology.kubernetes.io/zone": f"zone-{i % 2}",
            "gpu.dralloc.dev/architecture": model["architecture"].lower()}},
        "spec": {},
        "status": {
            "capacity": {"cpu": "64", "memory": "512Gi", "pods": "110"},
            "allocatable": {"cpu": "63", "memory": "500Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                            "message": "sandbox node is always ready"}],
            "nodeInfo": {"kubeletVersion": "v1.37.0", "architecture": "amd64", "operatingSystem": "linux"},
        },
    }


def _gpu_attrs(node: int, gpu: int, kind: str) -> Obj:
    model = _MODELS[0 if node < NODES // 2 else 1]
    return {
        "type": {"string": kind},
        "productName": {"string": model["productName"]},
        "architecture": {"string": model["architecture"]},
        "driverVersion": {"version": "550.54.15"},
        "cudaComputeCapability": {"version": model["cc"]},
        "nvlinkDomain": {"string": f"node-{node}-nvl-{gpu // 4}"},
        "pcieRoot": {"string": f"pci0000:{gpu // 2:02x}"},
        "index": {"int": gpu},
        "uuid": {"string": _uuid(node, gpu)},
    }


def _gpu_slices(node: int) -> list[Obj]:
    name = f"node-{node}"
    model = _MODELS[0 if node < NODES // 2 else 1]
    counters = [{"name": f"gpu-{g}-counters", "counters": {
        "memory": {"value": "80Gi"}, "memory-slices": {"value": "8"}, "compute-slices": {"value": "7"}}}
        for g in range(GPUS_PER_NODE)]
    gpus = [{
        "name": f"gpu-{g}",
        "attributes": _gpu_attrs(node, g, "gpu"),
        "capacity": {"memory": {"value": "80Gi"}, "multiprocessors": {"value": model["sms"]}},
        "consumesCounters": [{"counterSet": f"gpu-{g}-counters", "counters": {
            "memory": {"value": "80Gi"}, "memory-slices": {"value": "8"}, "compute-slices": {"value": "7"}}}],
    } for g in range(GPUS_PER_NODE)]
    partitions: list[list[Obj]] = [[], []]
    for g in range(GPUS_PER_NODE):
        for profile, compute, mem_slices, memory, count in _PROFILES:
            for k in range(count):
                attrs = _gpu_attrs(node, g, "partition")
                attrs["profile"] = {"string": profile}
                attrs["parentUUID"] = attrs.pop("uuid")
                attrs["uuid"] = {"string": _uuid(node, g, profile, k)}
                partitions[g * 2 // GPUS_PER_NODE].append({
                    "name": f"gpu-{g}-{profile.replace('.', '-')}-{k}",
                    "attributes": attrs,
                    "capacity": {"memory": {"value": memory},
                                 "multiprocessors": {"value": str(int(model["sms"]) * compute // 7)}},
                    "consumesCounters": [{"counterSet": f"gpu-{g}-counters", "counters": {
                        "memory": {"value": memory}, "memory-slices": {"value": str(mem_slices)},
                        "compute-slices": {"value": str(compute)}}}],
                })
    return [
        _slice(f"{name}-gpu-counters", GPU_DRIVER, name, 4, sharedCounters=counters),
        _slice(f"{name}-gpus", GPU_DRIVER, name, 4, devices=gpus),
        _slice(f"{name}-gpu-partitions-a", GPU_DRIVER, name, 4, devices=partitions[0]),
        _slice(f"{name}-gpu-partitions-b", GPU_DRIVER, name, 4, devices=partitions[1]),
    ]


def _nic_slice(node: int) -> Obj:
    nics = [{
        "name": f"nic-{n}",
        "allowMultipleAllocations": True,
        "attributes": {"productName": {"string": "ConnectX-7"}, "linkSpeed": {"string": "200G"},
                       "rdma": {"bool": True}, "pcieRoot": {"string": f"pci0000:{n * 2:02x}"},
                       "numaNode": {"int": n}},
        "capacity": {"bandwidth": {"value": "200G", "requestPolicy": {
            "default": "10G", "validRange": {"min": "1G", "max": "200G", "step": "1G"}}}},
    } for n in range(NICS_PER_NODE)]
    return _slice(f"node-{node}-nics", NIC_DRIVER, f"node-{node}", 1, devices=nics)


def _device_class(name: str, expression: str) -> Obj:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name},
            "spec": {"selectors": [{"cel": {"expression": expression}}]}}


def demo_objects() -> list[Obj]:
    """The demo cluster: nodes, DeviceClasses, ResourceSlices (see the module docstring)."""
    gpu_type = f'device.driver == "{GPU_DRIVER}" && device.attributes["{GPU_DRIVER}"].type == '
    objs: list[Obj] = [
        _device_class("gpu", gpu_type + '"gpu"'),
        _device_class("gpu-partition", gpu_type + '"partition"'),
        _device_class("nic", f'device.driver == "{NIC_DRIVER}"'),
    ]
    for i in range(NODES):
        objs.append(_node(i))
        objs.append({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",  # the kubelet heartbeat
                     "metadata": {"name": f"node-{i}", "namespace": "kube-node-lease"},
                     "spec": {"holderIdentity": f"node-{i}", "leaseDurationSeconds": 40}})
        objs.extend(_gpu_slices(i))
        objs.append(_nic_slice(i))
    return objs


def _peering_crd(kind: str, plural: str, scope: str) -> Obj:
    status = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.kopf.dev"},
        "spec": {"group": "kopf.dev", "scope": scope,
                 "names": {"kind": kind, "plural": plural, "singular": kind.lower()},
                 "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                     "type": "object", "properties": {"status": status}}}}]},
    }


def kopf_peering_objects(namespaces: Iterable[str] = ()) -> list[Obj]:
    """kopf's peering CRDs and the `default` peering objects, so operators can run with peering
    (cluster-wide, and in each of `namespaces`) instead of `--standalone`."""
    objs = [_peering_crd("ClusterKopfPeering", "clusterkopfpeerings", "Cluster"),
            _peering_crd("KopfPeering", "kopfpeerings", "Namespaced"),
            {"apiVersion": "kopf.dev/v1", "kind": "ClusterKopfPeering", "metadata": {"name": "default"}}]
    objs += [{"apiVersion": "kopf.dev/v1", "kind": "KopfPeering", "metadata": {"name": "default", "namespace": ns}}
             for ns in namespaces]
    return objs


def load_files(paths: Iterable[str | os.PathLike[str]]) -> list[Obj]:
    """Objects from YAML (multi-document) or JSON files.

    A document may be one object, a list of objects (a JSON array or a YAML sequence), or
    a list object (`kind: List` or `PodList` ..., as `kubectl get -o yaml|json` prints);
    lists are unpacked. Anything else (a number, an item without apiVersion and kind, a
    file that does not parse or holds no object) is a ValueError naming the file.
    """
    out: list[Obj] = []
    for path in paths:
        text = pathlib.Path(path).read_text()
        try:
            # libyaml's C loader when there is one (the sandbox imports no other dralloc package,
            # so not dralloc.documents, which does the same for the operator's readers).
            loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
            docs = [json.loads(text)] if str(path).endswith(".json") else list(yaml.load_all(text, Loader=loader))
        except (ValueError, yaml.YAMLError) as exc:
            raise ValueError(f"seed file {path}: not valid {'JSON' if str(path).endswith('.json') else 'YAML'}: "
                             f"{exc}") from exc
        found = [obj for doc in docs if doc is not None for obj in _objects(doc, f"seed file {path}")]
        if not found:
            raise ValueError(f"seed file {path}: no Kubernetes objects in it")
        out.extend(found)
    return out


def _objects(doc: Any, where: str) -> list[Obj]:
    if isinstance(doc, list):
        return [obj for i, item in enumerate(doc) for obj in _objects(item, f"{where}, item {i}")]
    if not isinstance(doc, dict):
        raise ValueError(f"{where}: expected a Kubernetes object or a list of them, found {type(doc).__name__}")
    if str(doc.get("kind", "")).endswith("List") and isinstance(doc.get("items"), list):
        return _objects(doc["items"], f"{where}, {doc['kind']}")
    if not doc.get("apiVersion") or not doc.get("kind"):
        raise ValueError(f"{where}: an object needs apiVersion and kind (got keys {sorted(doc)})")
    return [doc]
