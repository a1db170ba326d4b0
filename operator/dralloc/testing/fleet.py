"""A large GPU fleet for the capacity gauges, and the number of capacity series it exports.

Owns `fleet()`, the allocator's Snapshot of a GPU fleet of any size (the capacity gauge
tests build it with 50 to 1,000 nodes, bench/capacity_metrics.py with 5,000), and
`exported_series()`, what /metrics would carry of the capacity families for a snapshot.
The objects are written as API JSON and parsed through `dralloc.model.conversion`, as
the operator reads them from its watches.

Imports: dralloc.model, dralloc.allocation, dralloc.state.capacity, dralloc.metrics and
prometheus_client's exposition (to count series as a scrape sees them).
"""

from __future__ import annotations

from typing import Any

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from dralloc import metrics
from dralloc.allocation.features import Features
from dralloc.allocation.snapshots import Snapshot
from dralloc.model import claims, classes, conversion, devices
from dralloc.state import capacity

GPU_DRIVER = "gpu.example.com"
NIC_DRIVER = "nic.example.com"
API_VERSION = "resource.k8s.io/v1"
Obj = dict[str, Any]


def _gpu(name: str, kind: str, counter_set: str, memory: str) -> Obj:
    return {"name": name, "attributes": {"kind": {"string": kind}},
            "consumesCounters": [{"counterSet": counter_set, "counters": {"memory": {"value": memory}}}]}


def _slice(name: str, driver: str, node: str, devices_: list[Obj], counters: list[Obj] | None = None) -> Obj:
    spec: Obj = {"driver": driver, "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                 "nodeName": node, "devices": devices_}
    if counters:
        spec["sharedCounters"] = counters
    return {"apiVersion": API_VERSION, "kind": "ResourceSlice", "metadata": {"name": name}, "spec": spec}


def _class(name: str, expression: str) -> Obj:
    return {"apiVersion": API_VERSION, "kind": "DeviceClass", "metadata": {"name": name},
            "spec": {"selectors": [{"cel": {"expression": expression}}]}}


def fleet(nodes: int, gpus: int = 8) -> Snapshot:
    """A GPU fleet: `nodes` nodes of `gpus` GPUs (each a 80Gi counter set, whole GPU or two MIG halves),
    a shareable 100G NIC per node, classes gpu, mig, nic; every third GPU allocated."""
    slices = []
    for n in range(nodes):
        node = f"node-{n}"
        gpu_devices = []
        for g in range(gpus):
            gpu_devices.append(_gpu(f"gpu-{g}", "full", f"gpu-{g}", "80Gi"))
            gpu_devices += [_gpu(f"gpu-{g}-mig-{h}", "mig", f"gpu-{g}", "40Gi") for h in range(2)]
        counters = [{"name": f"gpu-{g}", "counters": {"memory": {"value": "80Gi"}}} for g in range(gpus)]
        slices.append(_slice(f"n{n}-gpus", GPU_DRIVER, node, gpu_devices, counters))
        nic = {"name": "nic-0", "allowMultipleAllocations": True,
               "capacity": {"bandwidth": {"value": "100G", "requestPolicy": {"validRange": {"min": "1G"}}}}}
        slices.append(_slice(f"n{n}-nic", NIC_DRIVER, node, [nic]))
    device_classes = [
        _class("gpu", f'device.driver == "{GPU_DRIVER}" && device.attributes["{GPU_DRIVER}"].kind == "full"'),
        _class("mig", f'device.driver == "{GPU_DRIVER}" && device.attributes["{GPU_DRIVER}"].kind == "mig"'),
        _class("nic", f'device.driver == "{NIC_DRIVER}"'),
    ]
    taken = [{"request": "r", "driver": GPU_DRIVER, "pool": f"node-{n}", "device": f"gpu-{g}"}
             for n in range(nodes) for g in range(0, gpus, 3)]
    allocated = {"apiVersion": API_VERSION, "kind": "ResourceClaim",
                 "metadata": {"name": "fleet", "namespace": "default"}, "spec": {},
                 "status": {"allocation": {"devices": {"results": taken}}}}
    return Snapshot.build(
        device_classes=[conversion.parse_as(classes.DeviceClass, c) for c in device_classes],
        resource_slices=[conversion.parse_as(devices.ResourceSlice, s) for s in slices],
        allocated_claims=[conversion.parse_as(claims.ResourceClaim, allocated)],
        features=Features(),
    )


def exported_series(snap: Snapshot) -> int:
    """How many samples of the capacity families (and dralloc_devices) a scrape of dralloc.metrics.REGISTRY
    carries for `snap`, with no claims. Sets the registry's cluster source for the scrape and clears it
    after: not for a process whose operator serves /metrics at the same time."""
    gauges = capacity.device_gauges(capacity.Inventory.build(snap), snap.allocated)
    gauges["claim_states"] = capacity.claim_gauges([])
    metrics.set_cluster_source(lambda: gauges)
    try:
        text = generate_latest(metrics.REGISTRY).decode()
    finally:
        metrics.set_cluster_source(None)
    names = {name for _, name, _, _ in metrics.CAPACITY_FAMILIES} | {"dralloc_devices"}
    return sum(len(f.samples) for f in text_string_to_metric_families(text) if f.name in names)
