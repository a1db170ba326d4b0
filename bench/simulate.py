"""Placement throughput on the five workloads of bench/workloads.py, next to upstream's numbers.

Runs exactly what `dralloc simulate --policy first-fit` runs (the operator's
`Placer`), in process, and times only the placement loop (parsing excluded, as
in upstream's protocol). Prints placements/s and the ratio to upstream's Go
allocator measured on the same kind of machine (GOMAXPROCS=1 / =2); w5 prints
the time of its single call. Prints numbers, asserts nothing.

Goals (issue 6): >= 10x upstream on w1 and w2, >= 20x on w3, >= 100x on w4,
w5 <= 10 ms.

Usage: .venv/bin/python bench/simulate.py [WORKLOAD ...] [--placements-dir DIR]
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "operator"))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import workloads

from dralloc.allocation.features import Features
from dralloc.allocation.snapshots import Snapshot
from dralloc.model import claims, classes, conversion, devices, nodes
from dralloc.scheduling import placement

FEATURES = Features.only([
    "DRAAdminAccess", "DRAPrioritizedList", "DRAPartitionableDevices", "DRADeviceTaints",
    "DRAConsumableCapacity", "DRADeviceBindingConditions", "DRAResourceClaimDeviceStatus",
])


def run(name: str, placements_dir: pathlib.Path | None) -> None:
    node_objs, class_objs, slice_objs, allocated_objs, claim_objs = workloads.WORKLOADS[name]()
    snapshot = Snapshot.build(
        device_classes=[conversion.parse_as(classes.DeviceClass, c) for c in class_objs],
        resource_slices=[conversion.parse_as(devices.ResourceSlice, s) for s in slice_objs],
        allocated_claims=[conversion.parse_as(claims.ResourceClaim, c) for c in allocated_objs],
        features=FEATURES,
    )
    placer = placement.Placer(node_list=[conversion.parse_as(nodes.Node, n) for n in node_objs],
                              snapshot=snapshot, features=FEATURES, policy="first-fit")
    items = [placement.Item(name=c["metadata"]["name"], claims=(conversion.parse_as(claims.ResourceClaim, c),))
             for c in claim_objs]
    lines: list[str] = []
    placed = 0
    start = time.perf_counter()
    for item in items:
        decision = placer.place(item)
        if isinstance(decision, placement.Placement):
            placer.commit(item, decision)
            placed += 1
            if placements_dir is not None:
                devices_text = " ".join(f"{r.request}={r.driver}/{r.pool}/{r.device}"
                                        for a in decision.results for r in a.devices.results)
                lines.append(f"{item.name} {decision.node} {devices_text}")
    elapsed = time.perf_counter() - start
    one, two = workloads.UPSTREAM[name]
    if name == "w5-pathological":
        print(f"{name:18} single call {elapsed * 1000:8.2f} ms ({placed} placed)   upstream {one:.0f} / {two:.0f} ms"
              f"   -> {one / (elapsed * 1000):7.0f}x / {two / (elapsed * 1000):7.0f}x faster")
    else:
        rate = placed / elapsed
        print(f"{name:18} {placed:5d} placed in {elapsed:7.3f} s = {rate:8.0f}/s "
              f"({placer.allocator_calls} allocator calls)   upstream {one:g} / {two:g}/s"
              f"   -> {rate / one:6.1f}x / {rate / two:6.1f}x")
    if placements_dir is not None:
        placements_dir.mkdir(parents=True, exist_ok=True)
        (placements_dir / f"{name}.txt").write_text("".join(line + "\n" for line in lines))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", default=list(workloads.WORKLOADS))
    parser.add_argument("--placements-dir", type=pathlib.Path)
    args = parser.parse_args()
    for name in args.names:
        run(name, args.placements_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
