"""Evaluations per second of typical DRA selectors over 10,000 devices.

Compiles each selector once, builds every device's CEL environment once (as the
allocator does), then evaluates each selector against every device: with the
fast path where the selector has one, and with the celpy reference program
(`compile_reference`), whose first evaluation on a device also builds that
device's celpy scope. The last column is what the allocator pays for a device it
has not seen: building its environment plus one evaluation. Prints numbers only;
it never asserts on time.

Run: .venv/bin/python bench/cel.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "operator"))

from dralloc.cel import devices, selectors
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


def main() -> None:
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


if __name__ == "__main__":
    main()
