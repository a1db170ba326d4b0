"""dralloc against the upstream allocator, both as processes, on the workloads w1-w5 (bench/workloads.py).

Each workload (generated into a temp dir by bench/workloads.py, or by the workloads.py of
--generator, or read from --workloads DIR: w1-fill/ ... w5-pathological/, each with its YAML
and a protocol.yaml) is run through two commands, as a user runs them:

  dralloc   `dralloc simulate -f deviceclasses.yaml -f nodes.yaml -f resourceslices.yaml
            -f resourceclaims.yaml --policy first-fit --features <protocol.yaml's gates>
            --placements-out FILE -o json --no-progress` (its unallocated claims are the work);
  upstream  `oracle first-fit --dir DIR --placements-out FILE` (oracle/bin/oracle, `make
            oracle`: k8s.io/dynamic-resource-allocation v0.37.2 called by the protocol of
            protocol.yaml: one NewAllocator per claim, Allocate(node, [claim]) per node in
            nodes.yaml order, first success wins).

The two sides alternate per workload (with --repeat N: dralloc first on odd runs,
upstream first on even ones), so load on the shared machine hits both alike; each number
is the median of the N runs. Per side it prints:

  wall   whole process, start to exit (interpreter or runtime start-up, YAML parsing,
         placement, writing the report)
  cpu    the child's user + system CPU seconds (getrusage(RUSAGE_CHILDREN) delta; the Go
         runtime may use both cores, so cpu can exceed wall)
  place  placement-only seconds as the program reports them: dralloc, the "seconds" of
         `simulate -o json` (its placement loop over already parsed objects: build each
         item, place, commit; its snapshot and node indexes are built before that clock
         starts, and the utilization/fragmentation report after it stops); upstream, the
         oracle's "placement-only" (NewAllocator per claim + every Allocate call, parsing
         excluded)

then the ratios upstream/dralloc of each, with the goals of issue 12 next to them:
>= 10x on w1 and w2, >= 20x on w3, >= 100x on w4, measured on whole-process wall time;
w5 <= 10 ms in dralloc, both placement-only and whole process.

Placements are compared claim by claim (same claim -> same node -> same request=driver/pool/device
results): OK, or the first differences. The exit status is 1 when any workload's
placements differ or a side failed, 0 otherwise; times are printed, never asserted.

--limit [W=]N places only the first N claims of workload W (of every workload without
W=) on BOTH sides: both get the same input files, holding the pre-allocated claims and
the first N unallocated ones (the oracle also gets --limit N). Ratios then compare the
same work; the output marks such rows and says so. Upstream's cost per claim grows as
nodes fill up (claim k tries every full node before its own), so a ratio over the first
N claims understates the full run's. By default no workload is limited: upstream v0.37.2
places all of w4 in about a minute on 2 cores (38-65 s; release-1.36, in the authors'
measurements, needed about 10 minutes), and the whole default run takes about 5 minutes;
`--limit w4=1120 --limit w3=500` gives a quick one.

Usage:
  .venv/bin/python bench/vs_upstream.py [--only w1,w2,...] [--repeat N] [--limit [W=]N ...]
      [--workloads DIR | --generator PATH] [--keep DIR] [--oracle PATH] [--dralloc PATH] [--gomaxprocs N]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import pathlib
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from typing import Any

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[1]
# The repository's own generator of w1-w5; --generator names another with the same command line.
GENERATOR = ROOT / "bench" / "workloads.py"
KEYS = ("w1", "w2", "w3", "w4", "w5")
FILES = ("deviceclasses.yaml", "nodes.yaml", "resourceslices.yaml", "resourceclaims.yaml")
# Issue 12's goals: upstream/dralloc whole-process wall time for w1-w4, dralloc's own
# seconds for w5 (placement-only and whole process).
RATIO_GOALS = {"w1": 10.0, "w2": 10.0, "w3": 20.0, "w4": 100.0}
W5_GOAL_SECONDS = 0.010
SIDES = ("dralloc", "upstream")


@dataclasses.dataclass
class Run:
    """One process run of one side on one workload."""

    wall: float
    cpu: float
    place: float
    placed: int
    unplaced: int
    placements: list[str]
    note: str = ""  # e.g. the oracle's matchesExpected, or a count mismatch


@dataclasses.dataclass
class Workload:
    key: str
    name: str
    directory: pathlib.Path  # the input both sides get (a limited copy when limit is set)
    protocol: dict[str, Any]
    total_claims: int  # claims to place in the full workload
    limit: int | None  # None: the full workload


class SideFailed(Exception):
    """A command exited with an error or printed something unreadable."""


def _timed(cmd: Sequence[str], stdout: pathlib.Path, env: dict[str, str] | None = None
           ) -> tuple[int, float, float, str]:
    """Run cmd to completion: (exit status, wall seconds, child CPU seconds, stderr)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    with stdout.open("wb") as out:
        proc = subprocess.run(cmd, stdout=out, stderr=subprocess.PIPE, env=env, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return proc.returncode, wall, cpu, proc.stderr.decode(errors="replace")


def _gates(protocol: dict[str, Any]) -> str:
    gates = [f"{g}=true" for g in protocol.get("featureGatesOn") or []]
    gates += [f"{g}=false" for g in protocol.get("featureGatesOff") or []]
    return ",".join(gates)


def run_dralloc(dralloc: str, w: Workload, scratch: pathlib.Path) -> Run:
    placements = scratch / f"{w.name}.dralloc.txt"
    report = scratch / f"{w.name}.dralloc.json"
    cmd = [dralloc, "simulate", *(a for f in FILES for a in ("-f", str(w.directory / f))),
           "--policy", "first-fit", "--features", _gates(w.protocol),
           "--placements-out", str(placements), "-o", "json", "--no-progress"]
    status, wall, cpu, err = _timed(cmd, report)
    if status not in (0, 1):  # 1: some claim found no room, as w3 and w5 expect
        raise SideFailed(f"dralloc simulate exited {status}: {err.strip()[-2000:]}")
    try:
        data = json.loads(report.read_text())
        place = float(data["seconds"])
        placed, unplaced = int(data["placed"]), len(data["unplaced"])
    except (ValueError, KeyError, TypeError) as exc:
        raise SideFailed(f"dralloc simulate -o json: unreadable report ({exc})") from exc
    note = ""
    expected = w.protocol.get("expected") or {}
    if w.limit is None and "claimsPlaced" in expected:
        want = (expected["claimsPlaced"], expected["claimsUnplaced"])
        note = "counts as expected" if (placed, unplaced) == want else \
            f"expected {want[0]} placed / {want[1]} unplaced"
    return Run(wall, cpu, place, placed, unplaced, placements.read_text().splitlines(), note)


def run_upstream(oracle: str, w: Workload, scratch: pathlib.Path, gomaxprocs: int | None) -> Run:
    placements = scratch / f"{w.name}.upstream.txt"
    report = scratch / f"{w.name}.upstream.json"
    cmd = [oracle, "first-fit", "--dir", str(w.directory), "--placements-out", str(placements)]
    if w.limit is not None:
        cmd += ["--limit", str(w.limit)]
    env = None
    if gomaxprocs is not None:
        env = {**os.environ, "GOMAXPROCS": str(gomaxprocs)}
    status, wall, cpu, err = _timed(cmd, report, env)
    if status != 0:
        raise SideFailed(f"oracle first-fit exited {status}: {err.strip()[-2000:]}")
    try:
        data = json.loads(report.read_text())
        place = float(data["seconds"])
        placed, unplaced = int(data["claimsPlaced"]), int(data["claimsUnplaced"])
    except (ValueError, KeyError, TypeError) as exc:
        raise SideFailed(f"oracle first-fit: unreadable summary ({exc})") from exc
    notes = [f"GOMAXPROCS={data.get('gomaxprocs')}", f"{data.get('allocateCalls')} Allocate calls"]
    if data.get("matchesExpected") is not None:
        notes.append("counts as expected" if data["matchesExpected"] else "counts NOT as expected")
    if data.get("capHit"):
        notes.append("cap hit")
    return Run(wall, cpu, place, placed, unplaced, placements.read_text().splitlines(), ", ".join(notes))


def _shown(placement: tuple[str, list[str]] | None) -> str:
    return "not placed" if placement is None else f"{placement[0]} {' '.join(placement[1])}"


def differences(dralloc: list[str], upstream: list[str], most: int = 5) -> list[str]:
    """The first differences between two placement listings (claim -> node -> devices)."""
    def parse(lines: list[str]) -> dict[str, tuple[str, list[str]]]:
        out: dict[str, tuple[str, list[str]]] = {}
        for line in lines:
            claim, node, *devices = line.split()
            out[claim] = (node, devices)
        return out

    mine, theirs = parse(dralloc), parse(upstream)
    order = [line.split()[0] for line in upstream]
    order += [c for c in (line.split()[0] for line in dralloc) if c not in theirs]
    found: list[str] = []
    for claim in order:
        a, b = mine.get(claim), theirs.get(claim)
        if a == b:
            continue
        if a is not None and b is not None and a[0] == b[0] and sorted(a[1]) == sorted(b[1]):
            continue  # same node and devices, results listed in another order
        found.append(f"{claim}: dralloc {_shown(a)} | upstream {_shown(b)}")
        if len(found) == most:
            break
    return found


def limited_copy(source: pathlib.Path, target: pathlib.Path, limit: int) -> None:
    """source's workload with only its pre-allocated claims and the first `limit` others."""
    target.mkdir(parents=True, exist_ok=True)
    for name in ("deviceclasses.yaml", "nodes.yaml", "resourceslices.yaml", "protocol.yaml"):
        shutil.copyfile(source / name, target / name)
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    kept: list[Any] = []
    work = 0
    with (source / "resourceclaims.yaml").open() as f:
        for claim in yaml.load_all(f, Loader=loader):
            if claim is None:
                continue
            if (claim.get("status") or {}).get("allocation"):
                kept.append(claim)
            elif work < limit:
                kept.append(claim)
                work += 1
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    with (target / "resourceclaims.yaml").open("w") as f:
        yaml.dump_all(kept, f, Dumper=dumper, sort_keys=False, explicit_start=True)


def parse_limits(values: list[str]) -> dict[str, int]:
    """--limit N / --limit W=N (repeatable) -> {key: N}; N 0 means no limit."""
    limits: dict[str, int] = {}
    for value in values:
        key, sep, number = value.rpartition("=")
        keys = [key.split("-")[0]] if sep else list(KEYS)
        if not number.isdigit() or any(k not in KEYS for k in keys):
            raise SystemExit(f"--limit {value}: expected N or W=N (W one of {', '.join(KEYS)})")
        for k in keys:
            limits[k] = int(number)
    return limits


def prepare(args: argparse.Namespace, keys: list[str], scratch: pathlib.Path) -> list[Workload]:
    base: pathlib.Path = args.workloads
    if base is None:
        base = scratch / "workloads"
        print(f"generating {', '.join(keys)} with {args.generator} into {base} ...", file=sys.stderr)
        subprocess.run([sys.executable, str(args.generator), str(base), *keys], check=True,
                       stdout=subprocess.DEVNULL)
    limits = parse_limits(args.limit)
    out = []
    for key in keys:
        found = sorted(p for p in base.glob(f"{key}-*") if (p / "protocol.yaml").is_file())
        if len(found) != 1:
            raise SystemExit(f"{base}: want exactly one {key}-* directory with a protocol.yaml, found {len(found)}")
        directory = found[0]
        protocol = yaml.safe_load((directory / "protocol.yaml").read_text())
        total = int(protocol["counts"]["claimsToPlace"])
        limit: int | None = limits.get(key) or None
        if limit is not None and limit >= total:
            limit = None
        if limit is not None:
            limited = scratch / "limited" / directory.name
            limited_copy(directory, limited, limit)
            directory = limited
        out.append(Workload(key, protocol["workload"], directory, protocol, total, limit))
    return out


def median(runs: list[Run], field: str) -> float:
    return statistics.median(float(getattr(r, field)) for r in runs)


def fmt_ratio(upstream: float, dralloc: float) -> str:
    return f"{upstream / dralloc:.1f}x" if dralloc > 0 else "-"


def report(results: list[tuple[Workload, dict[str, list[Run]], list[str]]], repeat: int) -> None:
    print()
    print(f"median of {repeat} run(s) per side; wall and cpu: the whole process; place: placement-only; "
          f"rest: wall - place (start-up, parsing, setup, report); ratio: upstream / dralloc")
    header = (f"{'workload':20} {'claims':>11} {'side':9} {'wall s':>8} {'cpu s':>8} {'place s':>9} "
              f"{'rest s':>8} {'placed':>7}")
    print(header)
    print("-" * len(header))
    for w, runs, _ in results:
        claims = f"{w.limit}/{w.total_claims}*" if w.limit is not None else str(w.total_claims)
        for side in SIDES:
            r = runs[side]
            label = w.name if side == "dralloc" else ""
            shown = claims if side == "dralloc" else ""
            rest = statistics.median(x.wall - x.place for x in r)
            print(f"{label:20} {shown:>11} {side:9} {median(r, 'wall'):8.3f} {median(r, 'cpu'):8.3f} "
                  f"{median(r, 'place'):9.4f} {rest:8.3f} {r[0].placed:7d}  {r[0].note}".rstrip())
        d, u = runs["dralloc"], runs["upstream"]
        ratios = (f"wall {fmt_ratio(median(u, 'wall'), median(d, 'wall'))}, "
                  f"cpu {fmt_ratio(median(u, 'cpu'), median(d, 'cpu'))}, "
                  f"place {fmt_ratio(median(u, 'place'), median(d, 'place'))}")
        if w.key in RATIO_GOALS:
            goal = RATIO_GOALS[w.key]
            got = median(u, "wall") / median(d, "wall")
            verdict = f"goal >= {goal:g}x (whole process): {'met' if got >= goal else 'NOT met'}"
        else:
            place, wall = median(d, "place"), median(d, "wall")
            verdict = (f"goal dralloc <= {W5_GOAL_SECONDS * 1000:g} ms: placement-only {place * 1000:.1f} ms "
                       f"{'met' if place <= W5_GOAL_SECONDS else 'NOT met'}, whole process "
                       f"{wall * 1000:.0f} ms {'met' if wall <= W5_GOAL_SECONDS else 'NOT met'}")
        print(f"{'':20} {'':11} {'ratio':9} {ratios}   {verdict}")
    print()
    limited = [w for w, _, _ in results if w.limit is not None]
    for w in limited:
        print(f"* {w.name}: limited to the first {w.limit} of {w.total_claims} claims on BOTH sides")
    if limited:
        print("  (both sides read the same input files: the pre-allocated claims and the first N unallocated ones; "
              "the oracle also got --limit N), so the ratios compare the same work: time over the same first N "
              "claims. Upstream's cost per claim grows as nodes fill up, so a full run's ratio would be higher.")
    print("placements (claim -> node -> devices, every run):")
    for w, _, diffs in results:
        if not diffs:
            print(f"  {w.name:20} OK (identical)")
        else:
            print(f"  {w.name:20} DIFFER; first differences:")
            for line in diffs:
                print(f"    {line}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", default=",".join(KEYS), help="comma-separated workloads (default: all five)")
    parser.add_argument("--repeat", type=int, default=1, help="runs per side and workload; medians are printed")
    parser.add_argument("--limit", action="append", default=[], metavar="[W=]N",
                        help="place only the first N claims of W (of every workload without W=), on both sides")
    parser.add_argument("--workloads", type=pathlib.Path,
                        help="directory with w1-fill/ ... w5-pathological/ (default: generate into a temp dir)")
    parser.add_argument("--generator", type=pathlib.Path, default=GENERATOR,
                        help="a workloads.py to generate with, called as `workloads.py OUTDIR W...` "
                             "(default: bench/workloads.py)")
    parser.add_argument("--keep", type=pathlib.Path, help="write placements and reports here (default: a temp dir)")
    parser.add_argument("--oracle", default=str(ROOT / "oracle" / "bin" / "oracle"), help="oracle binary")
    parser.add_argument("--dralloc", default=str(ROOT / ".venv" / "bin" / "dralloc"), help="dralloc command")
    parser.add_argument("--gomaxprocs", type=int, help="GOMAXPROCS for the oracle (default: the Go runtime's)")
    args = parser.parse_args()
    keys = [k.strip().split("-")[0] for k in args.only.split(",") if k.strip()]
    unknown = [k for k in keys if k not in KEYS]
    if unknown or not keys or args.repeat < 1:
        parser.error(f"--only takes some of {', '.join(KEYS)}; --repeat at least 1")
    for path in (args.oracle, args.dralloc):
        if not os.access(path, os.X_OK):
            parser.error(f"{path} is not executable (make oracle / make install)")
    if args.workloads is None and not args.generator.is_file():
        parser.error(f"no workload generator at {args.generator}: pass --generator PATH (a workloads.py writing "
                     "OUTDIR/w1-fill/ ... with a protocol.yaml each) or --workloads DIR (those folders, already "
                     "generated)")

    with tempfile.TemporaryDirectory(prefix="vs-upstream-") as tmp:
        scratch = pathlib.Path(tmp)
        workloads = prepare(args, keys, scratch)
        keep = args.keep if args.keep is not None else scratch / "out"
        keep.mkdir(parents=True, exist_ok=True)
        results: list[tuple[Workload, dict[str, list[Run]], list[str]]] = []
        failed = False
        for w in workloads:
            runs: dict[str, list[Run]] = {side: [] for side in SIDES}
            diffs: list[str] = []
            try:
                for i in range(args.repeat):
                    order = SIDES if i % 2 == 0 else SIDES[::-1]
                    for side in order:
                        if side == "dralloc":
                            r = run_dralloc(args.dralloc, w, keep)
                        else:
                            r = run_upstream(args.oracle, w, keep, args.gomaxprocs)
                        runs[side].append(r)
                        print(f"{w.name} run {i + 1}/{args.repeat} {side}: wall {r.wall:.3f} s, cpu {r.cpu:.3f} s, "
                              f"place {r.place:.4f} s, {r.placed} placed", file=sys.stderr, flush=True)
                    diffs = diffs or differences(runs["dralloc"][-1].placements, runs["upstream"][-1].placements)
            except SideFailed as exc:
                print(f"{w.name}: {exc}", file=sys.stderr)
                failed = True
                continue
            failed = failed or bool(diffs)
            results.append((w, runs, diffs))
        report(results, args.repeat)
        if args.keep is not None:
            print(f"placements and reports of the last run: {keep}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
