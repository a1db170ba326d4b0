"""`dralloc simulate --compare-policies`: the same workload under every placement policy.

Each policy places the workload on its own fresh copy of the snapshot with simulate's
own loop (explanations included), one after the other in this process; the table
says per policy how many items were placed, how many failed before the first one
did, the devices and consumable capacity in use per DeviceClass at the end, and
decisions per second (items decided, placed or not, over the loop's seconds: compare
ratios, the machine's load moves them all).

What a process pays once is paid before the first policy's clock starts (the CEL engine's
import, about half a second, once charged to first-fit alone), and the selectors' results
memoized by one policy are forgotten before the next: each policy's seconds are its own.
"""

from __future__ import annotations

import dataclasses
import io
import json
import time
from typing import Any, TextIO

from dralloc.allocation import errors, selectors
from dralloc.offline import inputs, simulating
from dralloc.scheduling import placement
from dralloc.wording import plural


def compare(request: simulating.Request, err: TextIO) -> list[dict[str, Any]]:
    """One row per policy; raises InputError / AllocationInputError on bad input (as simulate)."""
    rows: list[dict[str, Any]] = []
    simulating.load_cel_engine()
    for policy in placement.POLICIES:
        mine = dataclasses.replace(request, policy=policy, progress=False)
        # The notes about the inputs once, from the first run; the others read the same files.
        notes = err if not rows else io.StringIO()
        placer, workload, templates, claims_by_ref = simulating.prepare(mine, notes)
        selectors.forget_results()
        start = time.perf_counter()
        results = simulating.place_workload(placer, workload, templates, claims_by_ref, mine, io.StringIO())
        elapsed = time.perf_counter() - start
        first_failure = next((i for i, r in enumerate(results) if r.placement is None), len(results))
        use = simulating.utilization(placer.snapshot, placer.views, mine.features)["classes"]
        rows.append({
            "policy": policy, "items": len(results), "placed": sum(r.placement is not None for r in results),
            "errors": sum(r.error for r in results), "placedBeforeFirstFailure": first_failure,
            "seconds": elapsed, "decisionsPerSecond": len(results) / elapsed if elapsed > 0 else 0.0,
            "classes": use,
        })
    return rows


def _capacity_text(use: dict[str, Any]) -> str:
    parts = [f"{use['percent']:.1f}% devices" if use["percent"] is not None else "- devices"]
    parts += [f"{a['percent']:.1f}% {name}" for name, a in use["capacity"].items() if a["percent"] is not None]
    return ", ".join(parts)


def print_table(rows: list[dict[str, Any]], out: TextIO) -> None:
    width = max(len(r["policy"]) for r in rows)
    classes = sorted({name for r in rows for name in r["classes"]})
    placed = [f"{r['placed']}/{r['items']}" for r in rows]
    placed_width = max(len("placed"), *map(len, placed))
    out.write(f"{'policy':{width}}  {'placed':>{placed_width}}  {'before 1st failure':>18}  {'decisions/s':>11}  "
              "in use per class\n")
    for r, placed_text in zip(rows, placed, strict=True):
        used = "; ".join(f"{name}: {_capacity_text(r['classes'][name])}" for name in classes if name in r["classes"])
        out.write(f"{r['policy']:{width}}  {placed_text:>{placed_width}}  {r['placedBeforeFirstFailure']:>18}  "
                  f"{r['decisionsPerSecond']:>11.0f}  {used}\n")


def run(request: simulating.Request, out: TextIO, err: TextIO) -> int:
    try:
        rows = compare(request, err)
    except (inputs.InputError, errors.AllocationInputError) as exc:
        err.write(f"error: {errors.for_users(exc)}\n")
        return simulating.EXIT_INPUT_ERROR
    if request.output == "json":
        out.write(json.dumps({"policies": rows}, indent=2) + "\n")
    else:
        print_table(rows, out)
    if any(r["errors"] for r in rows):
        one = rows[0]["errors"] == 1
        err.write(f"error: {plural(rows[0]['errors'], 'item')} {'is' if one else 'are'} invalid and "
                  f"{'was' if one else 'were'} not placed (simulate without --compare-policies lists "
                  f"{'it' if one else 'them'})\n")
        return simulating.EXIT_INPUT_ERROR
    return simulating.EXIT_ALL_PLACED if all(r["placed"] == r["items"] for r in rows) else simulating.EXIT_SOME_UNPLACED
