"""Re-verify every conformance vector against the upstream allocator itself (`make oracle-conformance`).

    python -m tests.differential.conformance [--version v0.37|v0.36] [--runs N] [--json FILE]

Runs tests/conformance/vectors/*.yaml through `oracle batch` (N times, default 3: a
result that depends on map order shows up as a flip) and compares each outcome with
the vector's `expect` (tests/differential/expecting.py). `beyond-*` vectors are
dralloc's deliberate differences: they are expected NOT to reproduce, and one that
does is reported. Prints one line per vector that does not reproduce, then a summary;
exit 1 when an upstream-derived vector does not reproduce or a beyond-* vector does,
unless CHANGED_IN_1_37 explains it (a release that changed the semantics on purpose).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from tests.conformance import vectors
from tests.differential import expecting, oracle

# Vectors whose `expect` (releases 1.34-1.36) the 1.37 allocator no longer produces, because
# 1.37 changed the semantics on purpose (read in k8s.io/dynamic-resource-allocation v0.37.2).
# The vectors stay as they are while dralloc implements 1.36; these are reported, not failed.
CHANGED_IN_1_37 = {
    "with-class-device-config": "a config that applies to every request of the claim gets no `requests` "
                                "list ('empty means all'; structured/internal/*/allocator_*.go)",
    "prioritized-list-class-config": "as with-class-device-config, for the chosen subrequest",
    "prioritized-list-device-config": "as with-class-device-config, for a claim's own config",
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-in-use-insufficient":
        "allocationMode All checks only static capacity when it gathers the devices; a device whose "
        "remaining capacity is too small stays in 'all' and the request fails instead of skipping it",
    "list-attributes-disabled-distinct-constraint-with-lists":
        "with DRAListTypeAttributes off CEL no longer fails on list-typed attributes (cel/compile.go "
        "converts them whatever the gate); the distinctAttribute constraint rejects the list value, so "
        "the claim does not fit instead of failing with 'unsupported attribute value'",
    "beyond-distinct-attribute-same-request":
        "distinctAttribute now compares a device with every device already picked (constraint.go keeps "
        "a list), which is what dralloc does on purpose: at 1.37 this is no longer a difference",
}


def verify(version: str | None, runs: int) -> list[dict[str, Any]]:
    cases = vectors.load_all()
    rows: list[dict[str, Any]] = [{"name": c["name"], "beyond": "beyondUpstream" in (c.get("tags") or []),
                                   "exact": c["expect"].get("exact", True), "problems": [], "strictProblems": []}
                                  for c in cases]
    for _ in range(runs):
        for row, case, outcome in zip(rows, cases, oracle.ask(cases, version=version), strict=True):
            problem = expecting.difference(case["expect"], outcome)
            if problem is not None and problem not in row["problems"]:
                row["problems"].append(problem)
            if not row["exact"]:
                strict = expecting.difference(case["expect"], outcome, strict=True)
                if strict is not None and strict not in row["strictProblems"]:
                    row["strictProblems"].append(strict)
            row["allocator"] = outcome.get("allocator")
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", default=None, help="oracle release: v0.37 (default) or v0.36")
    parser.add_argument("--runs", type=int, default=3, help="times every vector is asked (default 3)")
    parser.add_argument("--json", metavar="FILE", help="also write the per-vector rows as JSON")
    args = parser.parse_args(argv)
    release = oracle.version_of(args.version)
    rows = verify(args.version, args.runs)
    changed = CHANGED_IN_1_37 if release.startswith("v0.37.") else {}
    for r in rows:
        r["changedInRelease"] = changed.get(r["name"])
        # Reproducing: an upstream-derived vector that matches; a beyond-* one that does not.
        r["asIntended"] = bool(r["problems"]) == r["beyond"]
    upstream = [r for r in rows if not r["beyond"]]
    for r in rows:
        if r["asIntended"]:
            if not r["beyond"] and r["strictProblems"]:
                print(f"SHAPE    {r['name']} (exact: false: valid, other devices): {r['strictProblems'][0]}")
            continue
        kind = "CHANGED " if r["changedInRelease"] else "DIFFERS "
        what = r["problems"] or ["reproduces upstream, though tagged beyondUpstream"]
        for p in what:
            print(f"{kind} {r['name']} [{r['allocator']}]: {p}")
        if r["changedInRelease"]:
            print(f"           changed in {release}: {r['changedInRelease']}")
    unexplained = [r for r in rows if not r["asIntended"] and not r["changedInRelease"]]
    print(f"k8s.io/dynamic-resource-allocation {release}, {args.runs} run(s): "
          f"{sum(r['asIntended'] for r in upstream)} of {len(upstream)} upstream-derived vectors reproduce"
          f" ({sum(1 for r in upstream if not r['exact'] and r['asIntended'] and not r['strictProblems'])}"
          f" of {sum(1 for r in upstream if not r['exact'])} exact: false ones with the listed devices);"
          f" {sum(1 for r in rows if r['beyond'] and r['asIntended'])} of {sum(1 for r in rows if r['beyond'])}"
          f" beyond-* vectors differ; {sum(1 for r in rows if not r['asIntended'] and r['changedInRelease'])}"
          f" known changes of this release, {len(unexplained)} unexplained")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump({"release": release, "runs": args.runs, "vectors": rows}, handle, indent=2)
    return 1 if unexplained else 0


if __name__ == "__main__":
    sys.exit(main())
