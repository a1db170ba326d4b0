"""Allocator throughput on synthetic clusters (prints numbers, asserts nothing).

Cases (500 nodes x 10 devices unless noted), each filling the cluster node by
node: a claim is allocated on the current node; when that node answers "does
not fit", the next node becomes current.

  single       one-device claims
  cel          the same with a CEL selector in the request (results cached per device)
  match        claims of two requests with matchAttribute on numa
  counters     100 nodes x 8 partitionable GPUs (1 full + 7 partitions, shared counters),
               claims for one partition
  pathological one call: N devices, one in use, a claim for N with matchAttribute
  cel-evals    raw CEL evaluations per second over 10,000 devices

Targets on a 2-core machine: >= 5,000/s single and cel, >= 2,000/s match,
pathological <= 50 ms. Run: `make bench` or `.venv/bin/python bench/allocation.py`.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time
from typing import Any

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "operator"))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import clusters

from dralloc import allocation
from dralloc.allocation import outcomes
from dralloc.allocation.features import Features
from dralloc.allocation.pools import NodeView
from dralloc.allocation.snapshots import Snapshot
from dralloc.cel import devices as cel_devices
from dralloc.cel import selectors as cel_selectors
from dralloc.model import claims, classes, conversion, devices, nodes

FEATURES = Features()


def fill(name: str, node_objs: list[dict[str, Any]], slice_objs: list[dict[str, Any]],
         class_objs: list[dict[str, Any]], claim_objs: list[dict[str, Any]]) -> None:
    node_views = [NodeView.of(conversion.parse_as(nodes.Node, n)) for n in node_objs]
    snapshot = Snapshot.build(
        device_classes=[conversion.parse_as(classes.DeviceClass, c) for c in class_objs],
        resource_slices=[conversion.parse_as(devices.ResourceSlice, s) for s in slice_objs],
        features=FEATURES,
    )
    to_place = [conversion.parse_as(claims.ResourceClaim, c) for c in claim_objs]
    placed = calls = 0
    current = 0
    start = time.perf_counter()
    for claim in to_place:
        while current < len(node_views):
            calls += 1
            outcome = allocation.allocate(snapshot, [claim], node_views[current], features=FEATURES, explain=False)
            if isinstance(outcome, outcomes.Allocated):
                snapshot = snapshot.with_allocations(outcome.results, FEATURES)
                placed += 1
                break
            current += 1
    elapsed = time.perf_counter() - start
    print(f"{name:14} {placed:6d} placed of {len(to_place):5d} in {elapsed:7.3f} s -> "
          f"{placed / elapsed:9.0f} allocations/s ({calls} calls, {calls / elapsed:9.0f} calls/s)")


def pathological(devices_count: int = 32) -> None:
    node_objs, slice_objs = clusters.plain(1, devices_count)
    in_use = clusters.claim("in-use", [clusters.request("gpu", "gpu")], allocation={"devices": {"results": [
        {"request": "gpu", "driver": clusters.DRIVER, "pool": "node-000", "device": "gpu-0"}]}})
    big = clusters.claim("big", [clusters.request("gpu", "gpu", devices_count)],
                         [{"matchAttribute": f"{clusters.DRIVER}/numa"}])
    snapshot = Snapshot.build(
        device_classes=[conversion.parse_as(classes.DeviceClass, clusters.device_class(
            "gpu", f'device.driver == "{clusters.DRIVER}"'))],
        resource_slices=[conversion.parse_as(devices.ResourceSlice, s) for s in slice_objs],
        allocated_claims=[conversion.parse_as(claims.ResourceClaim, in_use)],
        features=FEATURES,
    )
    node = NodeView.of(conversion.parse_as(nodes.Node, node_objs[0]))
    claim = conversion.parse_as(claims.ResourceClaim, big)
    start = time.perf_counter()
    outcome = allocation.allocate(snapshot, [claim], node, features=FEATURES)
    elapsed = time.perf_counter() - start
    print(f"{'pathological':14} {devices_count} devices, 1 in use, claim for {devices_count}: "
          f"{elapsed * 1000:7.2f} ms -> {outcome.status} ({outcome.steps} steps)")


def cel_evals(count: int = 10_000) -> None:
    program = cel_selectors.compile_selector(clusters.CEL_SELECTOR)
    from dralloc.model.quantities import Quantity
    envs = [cel_devices.device_env(driver=clusters.DRIVER,
                                   attributes={"model": {"string": "A100"}, "numa": {"int": i % 2}},
                                   capacity={"memory": Quantity.parse("80Gi")},
                                   allow_multiple_allocations=False) for i in range(count)]
    start = time.perf_counter()
    for env in envs:
        program.evaluate(env)
    elapsed = time.perf_counter() - start
    print(f"{'cel-evals':14} {count / elapsed:9.0f} evaluations/s (compiled once, fresh device each time)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--claims", type=int, default=5000)
    parser.add_argument("cases", nargs="*", default=["single", "cel", "match", "counters", "pathological",
                                                     "cel-evals"])
    args = parser.parse_args(argv)
    gpu_class = clusters.device_class("gpu", f'device.driver == "{clusters.DRIVER}"')
    if "single" in args.cases:
        n, s = clusters.plain(args.nodes)
        fill("single", n, s, [gpu_class],
             [clusters.claim(f"c-{i:05d}", [clusters.request("gpu", "gpu")]) for i in range(args.claims)])
    if "cel" in args.cases:
        n, s = clusters.plain(args.nodes)
        fill("cel", n, s, [gpu_class],
             [clusters.claim(f"c-{i:05d}", [clusters.request("gpu", "gpu", selector=clusters.CEL_SELECTOR)])
              for i in range(args.claims)])
    if "match" in args.cases:
        n, s = clusters.plain(args.nodes)
        constraint = [{"requests": ["r0", "r1"], "matchAttribute": f"{clusters.DRIVER}/numa"}]
        fill("match", n, s, [gpu_class],
             [clusters.claim(f"c-{i:05d}", [clusters.request("r0", "gpu"), clusters.request("r1", "gpu")],
                             constraint) for i in range(args.claims // 2)])
    if "counters" in args.cases:
        n, s = clusters.partitionable(max(1, args.nodes // 5))
        part_class = clusters.device_class(
            "gpu-1g10gb", f'device.driver == "{clusters.DRIVER}" && '
            f'device.attributes["{clusters.DRIVER}"].profile == "1g.10gb"')
        fill("counters", n, s, [part_class],
             [clusters.claim(f"c-{i:05d}", [clusters.request("p", "gpu-1g10gb")]) for i in range(args.claims)])
    if "pathological" in args.cases:
        pathological()
    if "cel-evals" in args.cases:
        cel_evals()
    return 0


if __name__ == "__main__":
    sys.exit(main())
