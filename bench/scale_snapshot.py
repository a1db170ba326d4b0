"""A large kubectl-style cluster snapshot for bench/scale.py (issue 15), generated from a seed.

Nodes x 8 GPUs of driver gpu.nvidia.com with the attributes NVIDIA's DRA driver publishes
(productName, architecture, brand, cudaComputeCapability, driverVersion and
cudaDriverVersion as versions, uuid, index, minor, resource.kubernetes.io/pciBusID and
pcieRoot, memory capacity), even nodes H100s and odd nodes A100s; the driver chart's
DeviceClass (a CEL selector on driver and type); unallocated ResourceClaims for 1, 2, 4 or 8
GPUs, each with a CEL selector (a product name, or an architecture and a memory minimum).
Objects carry the metadata and status a real `kubectl get -o json` shows (uids, resource
versions, timestamps, node conditions and addresses), so the files have a real file's size
and shape: about 25 MB of JSON at 5,000 nodes and 10,000 claims.
"""

from __future__ import annotations

import json
import pathlib
import random
import sys
from typing import Any

import yaml

DRIVER = "gpu.nvidia.com"
CLASS = "gpu.nvidia.com"
GPUS_PER_NODE = 8
# (productName, architecture, cudaComputeCapability, memory) for even and odd nodes.
PRODUCTS = (("NVIDIA H100 80GB HBM3", "Hopper", "9.0.0", "81559Mi"),
            ("NVIDIA A100-SXM4-80GB", "Ampere", "8.0.0", "81920Mi"))
SELECTORS = (
    f'device.attributes["{DRIVER}"].productName == "{PRODUCTS[0][0]}"',
    f'device.attributes["{DRIVER}"].architecture == "Ampere" && '
    f'device.capacity["{DRIVER}"].memory.compareTo(quantity("40Gi")) >= 0',
)
# GPUs per claim and their weights: 2.6 GPUs per claim on average, so 10,000 claims use
# about 65% of 5,000 x 8 GPUs and every claim finds room (no explanation runs).
COUNTS = ((1, 4), (2, 3), (4, 2), (8, 1))
STAMP = "2026-01-15T08:00:00Z"


def _uid(rng: random.Random) -> str:
    h = f"{rng.getrandbits(128):032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def node_name(i: int) -> str:
    return f"gpu-node-{i:05d}"


def node(i: int, rng: random.Random) -> dict[str, Any]:
    name = node_name(i)
    product = PRODUCTS[i % 2]
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {
            "annotations": {"node.alpha.kubernetes.io/ttl": "0",
                            "volumes.kubernetes.io/controller-managed-attach-detach": "true"},
            "creationTimestamp": STAMP,
            "labels": {"kubernetes.io/arch": "amd64", "kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                       "node.kubernetes.io/instance-type": "p5.48xlarge" if i % 2 == 0 else "p4de.24xlarge",
                       "nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": product[0].replace(" ", "-"),
                       "topology.kubernetes.io/zone": f"zone-{i % 3}"},
            "name": name, "resourceVersion": str(1000 + i), "uid": _uid(rng),
        },
        "spec": {"podCIDR": f"10.{i // 256 % 256}.{i % 256}.0/24", "providerID": f"aws:///zone-{i % 3}/i-{i:017x}"},
        "status": {
            "addresses": [{"address": f"10.0.{i // 256 % 256}.{i % 256}", "type": "InternalIP"},
                          {"address": name, "type": "Hostname"}],
            "allocatable": {"cpu": "191500m", "ephemeral-storage": "1800Gi", "memory": "2000Gi", "pods": "110"},
            "capacity": {"cpu": "192", "ephemeral-storage": "1900Gi", "memory": "2048Gi", "pods": "110"},
            "conditions": [{"lastHeartbeatTime": STAMP, "lastTransitionTime": STAMP, "message": message,
                            "reason": reason, "status": status, "type": kind}
                           for kind, status, reason, message in (
                               ("MemoryPressure", "False", "KubeletHasSufficientMemory",
                                "kubelet has sufficient memory available"),
                               ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                               ("PIDPressure", "False", "KubeletHasSufficientPID",
                                "kubelet has sufficient PID available"),
                               ("Ready", "True", "KubeletReady", "kubelet is posting ready status"))],
            "nodeInfo": {"architecture": "amd64", "containerRuntimeVersion": "containerd://2.1.4",
                         "kernelVersion": "6.8.0-1024-aws", "kubeProxyVersion": "", "kubeletVersion": "v1.35.0",
                         "operatingSystem": "linux", "osImage": "Ubuntu 24.04.3 LTS"},
        },
    }


def resource_slice(i: int, rng: random.Random) -> dict[str, Any]:
    name = node_name(i)
    product, architecture, capability, memory = PRODUCTS[i % 2]
    devices = []
    for g in range(GPUS_PER_NODE):
        bus = f"0000:{0x18 + 0x10 * g:02x}:00.0"
        devices.append({
            "attributes": {
                "addressingMode": {"string": "None"}, "architecture": {"string": architecture},
                "brand": {"string": "Nvidia"}, "cudaComputeCapability": {"version": capability},
                "cudaDriverVersion": {"version": "12.9.0"}, "driverVersion": {"version": "575.57.8"},
                "index": {"int": g}, "minor": {"int": g}, "productName": {"string": product},
                "resource.kubernetes.io/pciBusID": {"string": bus},
                "resource.kubernetes.io/pcieRoot": {"string": f"pci0000:{0x10 * g:02x}"},
                "type": {"string": "gpu"}, "uuid": {"string": "GPU-" + _uid(rng)},
            },
            "capacity": {"memory": {"value": memory}},
            "name": f"gpu-{g}",
        })
    suffix = "".join(rng.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(5))
    return {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
        "metadata": {
            "creationTimestamp": STAMP, "generateName": f"{name}-{DRIVER}-", "generation": 1,
            "name": f"{name}-{DRIVER}-{suffix}",
            "ownerReferences": [{"apiVersion": "v1", "controller": True, "kind": "Node", "name": name,
                                 "uid": _uid(rng)}],
            "resourceVersion": str(20000 + i), "uid": _uid(rng),
        },
        "spec": {"devices": devices, "driver": DRIVER, "nodeName": name,
                 "pool": {"generation": 1, "name": name, "resourceSliceCount": 1}},
    }


def device_class() -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
        "metadata": {"creationTimestamp": STAMP, "generation": 1, "name": CLASS, "resourceVersion": "100",
                     "uid": "5c1b4a3e-0000-4000-8000-000000000001"},
        "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{DRIVER}' && "
                                                     f"device.attributes['{DRIVER}'].type == 'gpu'"}}]},
    }


def claim(j: int, rng: random.Random) -> dict[str, Any]:
    count = rng.choices([c for c, _ in COUNTS], weights=[w for _, w in COUNTS])[0]
    selector = SELECTORS[rng.randrange(len(SELECTORS))]
    return {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"creationTimestamp": STAMP, "name": f"job-{j:05d}-gpus", "namespace": "ml",
                     "resourceVersion": str(100000 + j), "uid": _uid(rng)},
        "spec": {"devices": {"requests": [{"exactly": {
            "allocationMode": "ExactCount", "count": count, "deviceClassName": CLASS,
            "selectors": [{"cel": {"expression": selector}}]}, "name": "gpus"}]}},
        "status": {},
    }


def objects(nodes: int, claims: int, seed: int) -> dict[str, Any]:
    """The whole snapshot as `kubectl get nodes,deviceclasses,resourceslices,resourceclaims -A -o json`."""
    rng = random.Random(seed)
    items: list[dict[str, Any]] = [node(i, rng) for i in range(nodes)]
    items.append(device_class())
    items += [resource_slice(i, rng) for i in range(nodes)]
    items += [claim(j, rng) for j in range(claims)]
    return {"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"resourceVersion": ""}}


def write(directory: pathlib.Path, nodes: int, claims: int, seed: int, formats: tuple[str, ...]
          ) -> dict[str, pathlib.Path]:
    """snapshot.json (kubectl's 4-space indent) and/or snapshot.yaml (sorted keys, block style)."""
    directory.mkdir(parents=True, exist_ok=True)
    snapshot = objects(nodes, claims, seed)
    paths: dict[str, pathlib.Path] = {}
    if "json" in formats:
        paths["json"] = directory / "snapshot.json"
        paths["json"].write_text(json.dumps(snapshot, indent=4) + "\n")
    if "yaml" in formats:
        paths["yaml"] = directory / "snapshot.yaml"
        dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
        with paths["yaml"].open("w") as out:
            yaml.dump(snapshot, out, Dumper=dumper, default_flow_style=False, sort_keys=True)
    return paths


if __name__ == "__main__":
    # bench/scale.py generates in a child process: a parent that held the snapshot would pass its
    # RSS on to every child it starts (Linux keeps ru_maxrss across exec), spoiling max RSS.
    directory, nodes, claims, seed, formats = sys.argv[1:6]
    write(pathlib.Path(directory), int(nodes), int(claims), int(seed), tuple(formats.split(",")))
