"""Evaluations per second of typical DRA selectors over 10,000 devices.

Compiles each selector once, builds every device's CEL environment once (as the
allocator does), then evaluates each selector against every device: with the
fast path where the selector has one, and with the celpy reference program
(`compile_reference`), whose first evaluation on a device also builds that
device's celpy scope. The last column is what the allocator pays for a device it
has not seen: building its environment plus one evaluation. Prints numbers only;
it never asserts on time.

Then the allocator's memo of selector results (`dralloc.allocation.selectors.evaluate`,
a bounded LRU of expressions): the first evaluation of each selector on every device, a
memoized one (best of several rounds), and churn: many distinct selectors over the devices,
more than the memo keeps, with what it holds afterwards.

Run: .venv/bin/python bench/cel.py [--quick] [--memo-only]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "operator"))

from dralloc.allocation import selectors as allocation_selectors
from dralloc.allocation.pools import DeviceInfo
from dralloc.cel import devices, selectors
from dralloc.model import conversion
from dralloc.model import devices as device_models
from dralloc.model.quantities import Quantity

DEVICES = 10_000
SELECTORS = {
    "driver": 'device.driver == "gpu.example.com"',
    "model+memory": (
        'device.attributes["gpu.example.com"].model == "a100" && '
        'device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0'
    ),
    "semver": 'device.attributes["gpu.example.com"].driverVersion.isGreaterThan(semver("1.2.0"))',
    "cel.bind": (
        'cel.bind(g, device.attributes["gpu.example.com"], '
        'g.model in ["a100", "h100"] && has(g.numa) && g.numa == 1)'
    ),
}


def make_devices() -> list[devices.DeviceEnv]:
    models = ("a100", "h100", "t4")
    return [
        devices.device_env(
            driver="gpu.example.com",
            attributes={
                "model": {"string": models[i % 3]},
                "numa": {"int": i % 2},
                "driverVersion": {"version": f"1.{i % 4}.{i % 7}"},
            },
            capacity={"memory": Quantity.parse(f"{16 * (1 + i % 6)}Gi")},
            allow_multiple_allocations=False,
        )
        for i in range(DEVICES)
    ]


def engine() -> None:
    start = time.perf_counter()
    envs = make_devices()
    built = time.perf_counter() - start
    print(f"device environments: {DEVICES / built:,.0f} builds/s ({built / DEVICES * 1e6:.1f} us each)")
    print(f"{'selector':14s} {'fast path':>16s} {'celpy reference':>22s} {'new device':>16s}")
    for name, text in SELECTORS.items():
        selector = selectors.compile_selector(text)
        start = time.perf_counter()
        matched = sum(selector.evaluate(env) for env in envs)
        fast = time.perf_counter() - start
        reference = selectors.compile_reference(text)
        fresh = make_devices()
        start = time.perf_counter()
        same = sum(reference.evaluate(env) for env in fresh)
        slow = time.perf_counter() - start
        assert same == matched
        per_device = (built + (fast if selector.has_fast_path else slow)) / DEVICES * 1e6
        label = f"{DEVICES / fast:10,.0f} evals/s" if selector.has_fast_path else f"{'(none)':>16s}"
        print(f"{name:14s} {label} {DEVICES / slow:14,.0f} evals/s {per_device:12.1f} us"
              f"  ({matched} of {DEVICES} match)")


def device_infos(count: int) -> list[DeviceInfo]:
    """DeviceInfos of one slice with `count` GPUs that differ in a UUID (as the allocator sees them)."""
    models = ("a100", "h100", "t4")
    slice_ = conversion.parse_as(device_models.ResourceSlice, {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "s"},
        "spec": {"driver": "gpu.example.com", "nodeName": "n", "pool": {"name": "n", "resourceSliceCount": 1},
                 "devices": [{"name": f"gpu-{i}", "attributes": {
                     "model": {"string": models[i % 3]}, "numa": {"int": i % 2},
                     "driverVersion": {"version": f"1.{i % 4}.{i % 7}"}, "uuid": {"string": f"GPU-{i}"}},
                     "capacity": {"memory": {"value": f"{16 * (1 + i % 6)}Gi"}}} for i in range(count)]}})
    return [DeviceInfo(slice_, device) for device in slice_.spec.devices]


def memo(count: int, rounds: int, churn: int) -> None:
    infos = device_infos(count)
    evaluate = allocation_selectors.evaluate
    # The full view, and the stable variant's (the default features: no allowMultipleAllocations).
    views = {"full": allocation_selectors.FULL_VIEW, "stable": allocation_selectors.CelView(allow_multiple=False)}
    print(f"memo of results over {count:,} devices: ns per evaluate() call, first and memoized, per view")
    print(f"{'selector':14s}" + "".join(f" {name + ' first':>13s} {name + ' memo':>12s}" for name in views))
    for name, text in SELECTORS.items():
        line = f"{name:14s}"
        for view in views.values():
            start = time.perf_counter()
            for info in infos:
                evaluate(info, text, owner="bench", index=0, view=view)
            first = time.perf_counter() - start
            best = float("inf")
            for _ in range(rounds):
                start = time.perf_counter()
                for info in infos:
                    evaluate(info, text, owner="bench", index=0, view=view)
                best = min(best, time.perf_counter() - start)
            line += f" {first / count * 1e9:13,.0f} {best / count * 1e9:12,.0f}"
        print(line)
    # Churn: distinct selectors (different thresholds), each over every device.
    texts = [f'device.attributes["gpu.example.com"].numa == {i % 2} && '
             f'device.capacity["gpu.example.com"].memory.compareTo(quantity("{i}Mi")) >= 0' for i in range(churn)]
    for text in texts:
        selectors.compile_selector(text)  # compiling is not what this measures
    start = time.perf_counter()
    for text in texts:
        for info in infos:
            evaluate(info, text, owner="bench", index=0)
    elapsed = time.perf_counter() - start
    usage = getattr(allocation_selectors, "cache_usage", lambda: ("-", "-"))()
    print(f"churn: {churn:,} selectors x {count:,} devices: {elapsed / (churn * count) * 1e9:,.0f} ns per call; "
          f"memo holds (expressions, results) {usage}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="1,000 devices and fewer rounds")
    parser.add_argument("--memo-only", action="store_true", help="only the memo of results")
    args = parser.parse_args()
    if not args.memo_only:
        engine()
    if args.quick:
        memo(1_000, 5, 200)
    else:
        memo(DEVICES, 10, 1_200)


if __name__ == "__main__":
    main()
