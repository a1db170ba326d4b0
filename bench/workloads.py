"""The five placement workloads (shapes of kube-scheduler's scheduler_perf DRA tests).

  w1-fill          500 nodes x 10 devices, 5,000 one-device claims
  w2-cel           as w1, each request with a CEL selector on model and memory
  w3-match         as w1, 2,500 claims of two requests with matchAttribute on numa (2,000 fit)
  w4-partitionable 100 nodes x 8 GPUs (1 full + 7 partitions each, shared counters), 5,000 claims
                   for one 1g.10gb partition
  w5-pathological  1 node x 32 devices, one in use, one claim for 32 with matchAttribute: no solution

Each returns (nodes, device classes, slices, allocated claims, claims to place) as API JSON.
"""

from __future__ import annotations

from typing import Any

import clusters

Objects = list[dict[str, Any]]
GPU_CLASS = clusters.device_class("gpu", f'device.driver == "{clusters.DRIVER}"')

# Upstream's allocator (release-1.36, Go) on our machines, from the shared bench README:
# placements per second at GOMAXPROCS=1 and =2 (w5: milliseconds for its single call).
UPSTREAM = {
    "w1-fill": (399.0, 496.0),
    "w2-cel": (376.0, 493.0),
    "w3-match": (42.0, 56.0),
    "w4-partitionable": (6.8, 8.4),
    "w5-pathological": (386.0, 322.0),
}


def _numa_cluster() -> tuple[Objects, Objects]:
    nodes, slices = [], []
    for n in range(500):
        name = f"node-{n:03d}"
        nodes.append(clusters.node(name))
        slices.append(clusters.resource_slice(f"{name}-slice", name, [clusters.gpu(i, i // 5) for i in range(10)]))
    return nodes, slices


def w1(selector: str | None = None) -> tuple[Objects, Objects, Objects, Objects, Objects]:
    nodes, slices = _numa_cluster()
    claims = [clusters.claim(f"claim-{c:04d}", [clusters.request("gpu", "gpu", 1, selector)]) for c in range(5000)]
    return nodes, [GPU_CLASS], slices, [], claims


def w2() -> tuple[Objects, Objects, Objects, Objects, Objects]:
    return w1(clusters.CEL_SELECTOR)


def w3() -> tuple[Objects, Objects, Objects, Objects, Objects]:
    nodes, slices = _numa_cluster()
    constraint = [{"requests": ["r0", "r1"], "matchAttribute": f"{clusters.DRIVER}/numa"}]
    claims = [clusters.claim(f"claim-{c:04d}", [clusters.request("r0", "gpu"), clusters.request("r1", "gpu")],
                             constraint) for c in range(2500)]
    return nodes, [GPU_CLASS], slices, [], claims


def w4() -> tuple[Objects, Objects, Objects, Objects, Objects]:
    nodes, slices = clusters.partitionable(100, 8)
    part_class = clusters.device_class(
        "gpu-1g10gb", f'device.driver == "{clusters.DRIVER}" && '
        f'device.attributes["{clusters.DRIVER}"].profile == "1g.10gb"')
    claims = [clusters.claim(f"claim-{c:04d}", [clusters.request("gpu", "gpu-1g10gb")]) for c in range(5000)]
    return nodes, [part_class], slices, [], claims


def w5() -> tuple[Objects, Objects, Objects, Objects, Objects]:
    nodes = [clusters.node("node-000")]
    slices = [clusters.resource_slice("node-000-slice", "node-000", [clusters.gpu(i, i % 2) for i in range(32)])]
    in_use = clusters.claim("in-use", [clusters.request("gpu", "gpu")], allocation={"devices": {"results": [
        {"request": "gpu", "driver": clusters.DRIVER, "pool": "node-000", "device": "gpu-0"}]}})
    claim = clusters.claim("claim-0000", [clusters.request("gpu", "gpu", 32)],
                           [{"matchAttribute": f"{clusters.DRIVER}/numa"}])
    return nodes, [GPU_CLASS], slices, [in_use], [claim]


WORKLOADS = {"w1-fill": w1, "w2-cel": w2, "w3-match": w3, "w4-partitionable": w4, "w5-pathological": w5}
