"""Synthetic clusters for the benchmarks (plain dicts in API JSON form).

Shapes follow kube-scheduler's scheduler_perf DRA workloads: nodes with a
local pool of identical GPUs (index, model, numa, driverVersion, memory), or
partitionable GPUs whose partitions consume shared counters.
"""

from __future__ import annotations

from typing import Any

DRIVER = "test-driver.cdi.k8s.io"
CEL_SELECTOR = (f'device.attributes["{DRIVER}"].model == "A100" && '
                f'device.capacity["{DRIVER}"].memory.compareTo(quantity("40Gi")) >= 0')


def node(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}}}


def gpu(index: int, numa: int) -> dict[str, Any]:
    return {"name": f"gpu-{index}",
            "attributes": {"index": {"int": index}, "model": {"string": "A100"}, "numa": {"int": numa},
                           "driverVersion": {"version": "1.2.3"}},
            "capacity": {"memory": {"value": "80Gi"}}}


def resource_slice(name: str, node_name: str, devices: list[dict[str, Any]] | None = None,
                   counters: list[dict[str, Any]] | None = None, count: int = 1) -> dict[str, Any]:
    spec: dict[str, Any] = {"driver": DRIVER, "nodeName": node_name,
                            "pool": {"name": node_name, "generation": 1, "resourceSliceCount": count}}
    if devices is not None:
        spec["devices"] = devices
    if counters is not None:
        spec["sharedCounters"] = counters
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": name}, "spec": spec}


def device_class(name: str, expression: str) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name},
            "spec": {"selectors": [{"cel": {"expression": expression}}]}}


def claim(name: str, requests: list[dict[str, Any]], constraints: list[dict[str, Any]] | None = None,
          allocation: dict[str, Any] | None = None) -> dict[str, Any]:
    devices: dict[str, Any] = {"requests": requests}
    if constraints:
        devices["constraints"] = constraints
    obj: dict[str, Any] = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                           "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
                           "spec": {"devices": devices}}
    if allocation:
        obj["status"] = {"allocation": allocation}
    return obj


def request(name: str, device_class_name: str, count: int = 1, selector: str | None = None) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": device_class_name, "allocationMode": "ExactCount", "count": count}
    if selector:
        exactly["selectors"] = [{"cel": {"expression": selector}}]
    return {"name": name, "exactly": exactly}


def plain(nodes: int = 500, per_node: int = 10) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    names = [f"node-{i:03d}" for i in range(nodes)]
    slices = [resource_slice(f"{n}-slice", n, [gpu(i, i // (per_node // 2 or 1)) for i in range(per_node)])
              for n in names]
    return [node(n) for n in names], slices


def partitionable(nodes: int = 100, gpus: int = 8) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Per node: one counters slice (a counter set per GPU) and one slice of 1 full + 7 partitions per GPU."""
    names = [f"node-{i:03d}" for i in range(nodes)]
    slices: list[dict[str, Any]] = []
    for n in names:
        counters = [{"name": f"gpu-{g}-counters", "counters": {"memory": {"value": "80Gi"}}} for g in range(gpus)]
        devices: list[dict[str, Any]] = []
        for g in range(gpus):
            devices.append({"name": f"gpu-{g}", "attributes": {"profile": {"string": "full"}},
                            "consumesCounters": [{"counterSet": f"gpu-{g}-counters",
                                                  "counters": {"memory": {"value": "80Gi"}}}]})
            for p in range(7):
                devices.append({"name": f"gpu-{g}-part-{p}", "attributes": {"profile": {"string": "1g.10gb"}},
                                "consumesCounters": [{"counterSet": f"gpu-{g}-counters",
                                                      "counters": {"memory": {"value": "10Gi"}}}]})
        slices.append(resource_slice(f"{n}-counters", n, counters=counters, count=2))
        slices.append(resource_slice(f"{n}-devices", n, devices=devices, count=2))
    return [node(n) for n in names], slices
