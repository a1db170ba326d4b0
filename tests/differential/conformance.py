"""Re-verify every conformance vector against the upstream allocator itself (`make oracle-conformance`).

    python -m tests.differential.conformance [--version v0.37|v0.36|v0.38] [--runs N] [--json FILE]

Runs tests/conformance/vectors/*.yaml through `oracle batch` (N times, default 3: a
result that depends on map order shows up as a flip) and compares each outcome with
the vector's `expect` (tests/differential/expecting.py). A vector *claims* a release when
its `versions` lists it (1.37 for v0.37.x): every upstream-derived vector that claims the
oracle's release must reproduce. The others are reported with whether they reproduce
(CHANGED_IN_1_37 says why the 1.36-only ones do not at 1.37). `beyond-*` vectors are
dralloc's deliberate differences: they are expected NOT to reproduce, and one that does is
reported (and fails the run unless BEYOND_UPSTREAM_SINCE says that release caught up).
Prints one line per vector that does not behave as its `versions` says, then a summary;
exit 1 when a vector fails its claim.

A release no vector lists yet (1.38 while the vectors stop at 1.37) is compared with the
latest release they list: the vectors that list that one and still reproduce are not printed,
the others are (CHANGED_IN_1_38 says why, where it is known), and one more summary line
counts them. Nothing fails a claim then.
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
# They do not claim 1.37; each has a `-1-37` twin with 1.37's answer.
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
}

# Vectors that the 1.38 allocator (k8s.io/dynamic-resource-allocation v0.38.0-beta.0) answers
# differently from 1.37, read in its source. They do not claim 1.38; each has a `-1-38` twin with
# 1.38's answer (list-attributes-disabled-distinct-constraint-with-lists lists 1.38 again).
CHANGED_IN_1_38 = {
    "list-attributes-disabled-distinct-constraint-with-lists-1-37":
        "matchAttribute/distinctAttribute on a value they cannot compare (here a list, DRAListTypeAttributes "
        "off) is an error ('device D: unsupported attribute value for A', structured/internal/*/constraint.go) "
        "instead of a device that does not fit",
    "list-attributes-disabled-distinct-constraint-with-lists":
        "reproduces again, for another reason: the error now comes from the distinctAttribute constraint on "
        "the list value (structured/internal/*/constraint.go), not from CEL",
    "derived-attributes-list-without-list-types-matches-nothing":
        "as list-attributes-disabled-distinct-constraint-with-lists-1-37, for a derived attribute whose "
        "value is a list",
    "derived-attributes-error-not-hidden-by-the-counting-bound":
        "the first device reached (dev-0) has a list-valued derived attribute: the distinctAttribute "
        "constraint fails on it ('unsupported attribute value') before the search reaches dev-2's CEL error",
    "list-attributes-disabled-dropped-values-fail-selector":
        "CEL reads a device's attributes lazily (cel/compile.go nameToAttributes): an attribute without a "
        "value fails only an expression that reads it, and `device.driver == ...` does not "
        "(twin: cel-lazy-attribute-not-read-1-38)",
}

# beyond-* vectors that a later release reproduces: upstream caught up with dralloc.
BEYOND_UPSTREAM_SINCE = {
    "beyond-distinct-attribute-same-request": (
        "1.37", "distinctAttribute compares a device with every device already picked (constraint.go keeps "
        "a list), which is what dralloc does on purpose: at 1.37 this is no longer a difference"),
    "beyond-share-on-a-device-without-multiple-allocations-is-in-use": (
        "1.38", "a device without allowMultipleAllocations that an allocated claim holds by a share is in use "
        "(allocator_stable.go checks deviceCapacityInUse), as dralloc always had it"),
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


def _minor(release: str) -> tuple[int, ...]:
    return tuple(int(part) for part in release.split("."))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", default=None, help="oracle release: v0.37 (default), v0.36 or v0.38")
    parser.add_argument("--runs", type=int, default=3, help="times every vector is asked (default 3)")
    parser.add_argument("--json", metavar="FILE", help="also write the per-vector rows as JSON")
    args = parser.parse_args(argv)
    version = oracle.version_of(args.version)
    release = "1." + version.lstrip("v").split(".")[1]
    rows = verify(args.version, args.runs)
    versions = {c["name"]: [str(v) for v in c.get("versions") or []] for c in vectors.load_all()}
    # The release the vectors are compared with: this one, or the latest they list below it.
    listed = {v for vs in versions.values() for v in vs}
    baseline = max((v for v in listed if _minor(v) <= _minor(release)), key=_minor, default=release)
    for r in rows:
        r["claims"] = release in versions[r["name"]]
        since = BEYOND_UPSTREAM_SINCE.get(r["name"])
        caught_up = since is not None and _minor(release) >= _minor(since[0])
        r["note"] = (since[1] if caught_up else None) or (
            CHANGED_IN_1_38.get(r["name"]) if _minor(release) >= (1, 38) else None) or (
            CHANGED_IN_1_37.get(r["name"]) if _minor(release) >= (1, 37) else None)
        if r["beyond"]:
            r["asIntended"] = bool(r["problems"]) or caught_up
        else:
            r["asIntended"] = not r["problems"] or not r["claims"]
    for r in rows:
        if r["claims"] and not r["beyond"] and not r["problems"] and r["strictProblems"]:
            print(f"SHAPE    {r['name']} (exact: false: valid, other devices): {r['strictProblems'][0]}")
        if r["asIntended"] and (r["claims"] or r["beyond"]) and not r["note"]:
            continue
        if baseline != release and baseline in versions[r["name"]] and not r["beyond"] and not r["problems"] \
                and not r["note"]:
            continue
        if not r["claims"] and not r["beyond"]:
            kind = "OTHER   " if r["problems"] else "ALSO    "
        else:
            kind = "OK      " if r["asIntended"] else "FAILS   "
        what = r["problems"] or ["reproduces upstream" + (", though tagged beyondUpstream" if r["beyond"] else "")]
        print(f"{kind} {r['name']} (versions {', '.join(versions[r['name']]) or 'none'}) [{r['allocator']}]: {what[0]}")
        if r["note"]:
            print(f"           {version}: {r['note']}")
    upstream = [r for r in rows if not r["beyond"]]
    claiming = [r for r in upstream if r["claims"]]
    failing = [r for r in rows if not r["asIntended"]]
    print(f"k8s.io/dynamic-resource-allocation {version}, {args.runs} run(s): "
          f"{sum(not r['problems'] for r in claiming)} of {len(claiming)} upstream-derived vectors that list "
          f"{release} reproduce ({sum(1 for r in claiming if not r['exact'] and not r['strictProblems'])}"
          f" of {sum(1 for r in claiming if not r['exact'])} exact: false ones with the listed devices); "
          f"of the {len(upstream) - len(claiming)} that do not list it, "
          f"{sum(1 for r in upstream if not r['claims'] and not r['problems'])} reproduce anyway; "
          f"{sum(1 for r in rows if r['beyond'] and r['problems'])} of {sum(1 for r in rows if r['beyond'])}"
          f" beyond-* vectors differ; {len(failing)} fail their claim")
    if baseline != release:
        listing = [r for r in upstream if baseline in versions[r["name"]]]
        print(f"no vector lists {release}: of the {len(listing)} upstream-derived vectors that list {baseline}, "
              f"{sum(not r['problems'] for r in listing)} reproduce at {release}; of the {len(upstream) - len(listing)} "
              f"that do not, {sum(1 for r in upstream if r not in listing and not r['problems'])} reproduce")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump({"release": version, "runs": args.runs, "vectors": rows}, handle, indent=2)
    return 1 if failing else 0


if __name__ == "__main__":
    sys.exit(main())
