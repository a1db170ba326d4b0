"""The capacity gauges (dralloc.state.capacity) at fleet size: series count and cost per scrape.

A 5,000-node GPU fleet (dralloc.testing.fleet, the one tests/monitoring/test_capacity_metrics.py
builds smaller: 8 GPUs per node, each a counter set with two MIG halves, a shareable NIC per
node; classes gpu, mig, nic). Prints the number of capacity series, the time to build the
inventory (once per slice, class or taint-rule change) and the time of one scrape's counting
(`device_gauges`), next to what the scrape cost before the inventory existed: classifying every
device against every class on each scrape.
Numbers, never assertions (bench/ habit).
"""

from __future__ import annotations

import argparse
import dataclasses
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "operator"))

from dralloc.allocation import selectors
from dralloc.allocation.pools import SliceIndex
from dralloc.state import capacity
from dralloc.testing.fleet import exported_series, fleet


def _per_scrape_classification(snap: object) -> None:
    """What each scrape did before: every device against every class (the CEL results are memoized)."""
    for s in snap.slices.slices:  # type: ignore[attr-defined]
        for info in snap.slices.device_infos(s):  # type: ignore[attr-defined]
            [name for name, c in snap.classes.items() if selectors.in_class(info, c)]  # type: ignore[attr-defined]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=5000)
    args = parser.parse_args()
    started = time.perf_counter()
    snap = fleet(args.nodes)
    print(f"{args.nodes} nodes: snapshot built in {time.perf_counter() - started:.1f} s")
    started = time.perf_counter()
    inventory = capacity.Inventory.build(snap)
    print(f"inventory ({len(inventory.index)} devices): {time.perf_counter() - started:.3f} s "
          "(when DeviceClasses or DeviceTaintRules change: every device against every class)")
    started = time.perf_counter()
    capacity.Inventory.build(snap, inventory)
    print(f"inventory again, slices unchanged: {time.perf_counter() - started:.3f} s (when a ResourceSlice changes)")
    for _ in range(2):
        started = time.perf_counter()
        capacity.device_gauges(inventory, snap.allocated)
        print(f"one scrape's counting: {1000 * (time.perf_counter() - started):.1f} ms")
    started = time.perf_counter()
    _per_scrape_classification(snap)
    print(f"classifying every device per scrape (before), CEL results memoized: "
          f"{1000 * (time.perf_counter() - started):.1f} ms")
    # Any ResourceSlice change rebuilds the operator's SliceIndex (state/views.py), whose DeviceInfos
    # hold the memoized CEL results: the old per-scrape classification then started cold.
    fresh = dataclasses.replace(snap, slices=SliceIndex(list(snap.slices.slices)))
    started = time.perf_counter()
    _per_scrape_classification(fresh)
    print(f"classifying every device per scrape (before), after a slice change: "
          f"{time.perf_counter() - started:.1f} s")
    started = time.perf_counter()
    capacity.Inventory.build(fresh, inventory)
    print(f"inventory after a slice change (now): {time.perf_counter() - started:.3f} s")
    print(f"capacity series exported: {exported_series(snap)}")


if __name__ == "__main__":
    main()
