"""`dralloc simulate` on a large kubectl-style snapshot (issue 15): input, placement, memory.

Generates the snapshot of bench/scale_snapshot.py (seeded: --nodes x 8 NVIDIA-like GPUs,
the driver's DeviceClass, --claims unallocated ResourceClaims for 1, 2, 4 or 8 GPUs with a
CEL selector) as one `kind: List` file, JSON as `kubectl get -o json` writes it and YAML as
`kubectl get -o yaml` does, then prints, each next to a baseline measured in the same run:

  input     per format, the whole `dralloc simulate -f SNAPSHOT -o json` process (what the
            user waits for: start-up, reading, placing every claim, the report), its CPU
            seconds and max RSS (os.wait4's rusage of that child: the same ru_maxrss that
            getrusage(RUSAGE_CHILDREN) reports, for this child alone; the snapshot is generated
            in a child too, as Linux hands a parent's RSS on to the children it starts), against a bare
            `json.load` (JSON) or `yaml.load(Loader=yaml.CSafeLoader)` (YAML) of the same
            file, each a whole process too. Goals: JSON ≤ 8x json.load and ≤ 800 MB RSS,
            YAML ≤ 1.5x libyaml.
  placement in process, simulate's own placement loop (`Placer.place` + `commit` per claim,
            first-fit) over the snapshot's claims at --small-nodes nodes (claims scaled
            alike) and at --nodes: claims/s, the ratio big/small (goal ≥ 0.7), CPU seconds
            and tracemalloc allocations per placement (a second pass over the first
            --traced claims with tracemalloc on: bytes allocated at peak and retained, per
            placement), and the loop's cProfile (--profile N lines; 0: none). Goal: ≥ 5,000
            placements/s at 5,000 nodes.

Prints numbers, asserts nothing. Usage:
  .venv/bin/python bench/scale.py [--nodes 5000] [--claims 10000] [--small-nodes 500]
      [--only json|yaml] [--keep DIR] [--seed N] [--profile 25] [--traced 1000] [--no-placement]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "operator"))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import scale_placement
import scale_snapshot

ROOT = pathlib.Path(__file__).resolve().parents[1]
GOAL_JSON_RATIO, GOAL_RSS_MB, GOAL_YAML_RATIO = 8.0, 800.0, 1.5
BARE = {
    "json": "import json, sys\nwith open(sys.argv[1]) as f: json.load(f)",
    "yaml": "import sys, yaml\nwith open(sys.argv[1]) as f: yaml.load(f, Loader=yaml.CSafeLoader)",
}


@dataclasses.dataclass(frozen=True)
class Process:
    status: int
    wall: float
    cpu: float
    rss_mb: float
    stdout: bytes
    stderr: bytes


def run_process(cmd: list[str]) -> Process:
    """Run cmd to completion: wall seconds, the child's own CPU seconds and max RSS (wait4)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return Process(proc.returncode, wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024,
                       out.read(), err.read())


def measure_input(fmt: str, path: pathlib.Path, dralloc: str) -> None:
    size = path.stat().st_size / 1e6
    bare = run_process([sys.executable, "-c", BARE[fmt], str(path)])
    if bare.status != 0:
        print(f"  bare {fmt} load failed: {bare.stderr.decode(errors='replace')[-500:]}")
        return
    sim = run_process([dralloc, "simulate", "-f", str(path), "-o", "json", "--no-progress"])
    if sim.status not in (0, 1):
        print(f"  dralloc simulate failed ({sim.status}): {sim.stderr.decode(errors='replace')[-1000:]}")
        return
    report = json.loads(sim.stdout)
    baseline = "json.load" if fmt == "json" else "libyaml (CSafeLoader)"
    ratio = sim.wall / bare.wall
    goal = GOAL_JSON_RATIO if fmt == "json" else GOAL_YAML_RATIO
    print(f"{fmt}: {path.name} {size:.1f} MB")
    print(f"  bare {baseline:21} wall {bare.wall:6.2f} s  cpu {bare.cpu:6.2f} s  max RSS {bare.rss_mb:6.0f} MB")
    print(f"  dralloc simulate{'':14} wall {sim.wall:6.2f} s  cpu {sim.cpu:6.2f} s  max RSS {sim.rss_mb:6.0f} MB"
          f"  (placed {report['placed']} of {report['items']}, placement loop {report['seconds']:.2f} s)")
    verdict = "met" if ratio <= goal else "not met"
    print(f"  ratio simulate / bare load: {ratio:5.2f}x (goal <= {goal:g}x: {verdict})", end="")
    if fmt == "json":
        print(f"; max RSS goal <= {GOAL_RSS_MB:.0f} MB: {'met' if sim.rss_mb <= GOAL_RSS_MB else 'not met'}")
    else:
        print()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--claims", type=int, default=10000)
    parser.add_argument("--small-nodes", type=int, default=500, help="the smaller placement run (claims scaled alike)")
    parser.add_argument("--only", choices=("json", "yaml"), help="one input format (default both)")
    parser.add_argument("--keep", type=pathlib.Path, help="write the snapshots into DIR and keep them")
    parser.add_argument("--seed", type=int, default=15)
    parser.add_argument("--profile", type=int, default=25, help="lines of the placement loop's profile (0: none)")
    parser.add_argument("--traced", type=int, default=1000, help="claims placed with tracemalloc on")
    parser.add_argument("--no-placement", action="store_true", help="only the whole-process input runs")
    parser.add_argument("--dralloc", default=str(ROOT / ".venv" / "bin" / "dralloc"))
    args = parser.parse_args()
    formats = (args.only,) if args.only else ("json", "yaml")
    with tempfile.TemporaryDirectory(prefix="dralloc-scale-") as scratch:
        where = args.keep or pathlib.Path(scratch)
        start = time.perf_counter()
        directory = where / str(args.nodes)
        subprocess.run([sys.executable, scale_snapshot.__file__, str(directory), str(args.nodes), str(args.claims),
                        str(args.seed), ",".join(formats)], check=True)
        paths = {fmt: directory / f"snapshot.{fmt}" for fmt in formats}
        print(f"snapshot: {args.nodes} nodes x {scale_snapshot.GPUS_PER_NODE} GPUs, {args.claims} claims, "
              f"seed {args.seed}, in {where} (generated in {time.perf_counter() - start:.0f} s)\n")
        for fmt in formats:
            measure_input(fmt, paths[fmt], args.dralloc)
        if not args.no_placement:
            print()
            small_claims = max(1, args.claims * args.small_nodes // args.nodes)
            small = scale_placement.Scenario(args.small_nodes, small_claims, args.seed)
            big = scale_placement.Scenario(args.nodes, args.claims, args.seed)
            scale_placement.report(small, big, profile_lines=args.profile, traced=args.traced)
    return 0


if __name__ == "__main__":
    sys.exit(main())
