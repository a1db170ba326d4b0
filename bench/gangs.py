"""Gangs: does dralloc place every gang that fits, how many does greedy miss, and how fast (issue 14).

    .venv/bin/python bench/gangs.py [--scenarios N] [--seed S] [--latency [--repeat R] [--nodes 500,5000]
                                    [--members 8,64,256]]

Corpus (seeded): clusters of 8-64 nodes with 4-8 GPUs in two NVLink domains per node
(attribute `nvlink`), nodes in racks (label `rack`), some GPUs already in use; one gang of
2-16 members asking for 60-105 % of the roomiest rack's free GPUs, each member one claim for 1-4 GPUs that must share an NVLink domain
(matchAttribute), all members in one rack (the PodGroup's topology constraint). For each
scenario three answers:

  exact    does a placement exist: OR-Tools CP-SAT over (node, NVLink domain) free counts,
           which is exact here because the GPUs of one domain are interchangeable;
  greedy   kube-scheduler's way: member by member, each on the first node it fits, never
           moved again (`gangs.place_gang(..., greedy=True)`);
  dralloc  `gangs.place_gang`: joint search across members.

Prints how many gangs fit, how many each found, and any scenario where dralloc missed a
gang that fits (the goal is none) or placed one the judge says cannot fit (a bug). Then,
with --latency, the decision time for gangs of 8, 64 and 256 members on 500 and 5,000
nodes: the first decision against the snapshot apart (it builds the per-node caches: each
node's pools, its free devices), then the median and p99 of the repeated ones after it.
The cluster's objects are frozen out of CPython's cyclic GC (`dralloc.offline.heap`, as
`dralloc simulate` does; `--gc-as-it-comes` leaves them in, and its full collections then
traverse them during decisions). Times are printed, never asserted. Needs ortools
(`.venv/bin/pip install ortools`) for the judge.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import pathlib
import random
import statistics
import sys
import time
from typing import Any

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "operator"))

from dralloc.allocation import gangs
from dralloc.allocation.features import Features
from dralloc.allocation.pools import NodeView
from dralloc.allocation.snapshots import Snapshot
from dralloc.model import claims, classes, conversion, devices
from dralloc.offline import heap

DRIVER = "gpu.example.com"
FEATURES = Features()
GPU_CLASS = conversion.parse_as(classes.DeviceClass, {
    "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"},
    "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}})


@dataclasses.dataclass
class Scenario:
    seed: int
    nodes: list[NodeView]
    slices: list[devices.ResourceSlice]
    in_use: list[claims.ResourceClaim]
    free: dict[tuple[str, int], int]  # (node, nvlink domain) -> free GPUs
    rack_of: dict[str, str]
    sizes: list[int]  # GPUs per member

    def snapshot(self) -> Snapshot:
        return Snapshot.build(device_classes=[GPU_CLASS], resource_slices=self.slices,
                              allocated_claims=self.in_use, features=FEATURES)

    def members(self) -> list[gangs.Member]:
        return [member(f"m{i}", size) for i, size in enumerate(self.sizes)]


def member(name: str, size: int) -> gangs.Member:
    request: dict[str, Any] = {"name": "gpus", "exactly": {"deviceClassName": "gpu", "allocationMode": "ExactCount",
                                                          "count": size}}
    spec: dict[str, Any] = {"devices": {"requests": [request]}}
    if size > 1:
        spec["devices"]["constraints"] = [{"matchAttribute": f"{DRIVER}/nvlink"}]
    claim = conversion.parse_as(claims.ResourceClaim, {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": f"{name}-gpus", "namespace": "default"}, "spec": spec})
    return gangs.Member(name, (claim,), size)


def cluster(rng: random.Random, n_nodes: int, *, busy: float, rack_size: int | None = None,
            per_domain: int | None = None) -> tuple[list[NodeView], list[devices.ResourceSlice],
                                                    list[claims.ResourceClaim], dict[tuple[str, int], int],
                                                    dict[str, str]]:
    rack_size = rack_size or rng.choice([4, 8])
    nodes, slices, in_use = [], [], []
    free: dict[tuple[str, int], int] = {}
    rack_of: dict[str, str] = {}
    for i in range(n_nodes):
        name = f"node-{i:04d}"
        rack = f"rack-{i // rack_size}"
        nodes.append(NodeView(name, {"rack": rack}))
        rack_of[name] = rack
        gpus_per_domain = per_domain or rng.choice([2, 3, 4])
        devs = [{"name": f"gpu-{d * gpus_per_domain + k}", "attributes": {"nvlink": {"int": d}}}
                for d in range(2) for k in range(gpus_per_domain)]
        slices.append(conversion.parse_as(devices.ResourceSlice, {
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{name}-gpus"},
            "spec": {"driver": DRIVER, "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                     "nodeName": name, "devices": devs}}))
        results = []
        for d in range(2):
            taken = sum(1 for _ in range(gpus_per_domain) if rng.random() < busy)
            free[(name, d)] = gpus_per_domain - taken
            results += [{"request": "r", "driver": DRIVER, "pool": name, "device": f"gpu-{d * gpus_per_domain + k}"}
                        for k in range(taken)]
        if results:
            in_use.append(conversion.parse_as(claims.ResourceClaim, {
                "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                "metadata": {"name": f"{name}-busy", "namespace": "default"},
                "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "gpu"}}]}},
                "status": {"allocation": {"devices": {"results": results}}}}))
    return nodes, slices, in_use, free, rack_of


def scenario(seed: int) -> Scenario:
    """A cluster and one gang that asks for 60-105 % of the free GPUs of the roomiest rack: tight
    enough that where members go matters."""
    rng = random.Random(seed)
    nodes, slices, in_use, free, rack_of = cluster(rng, rng.choice([8, 16, 32, 64]), busy=rng.choice([0.2, 0.4, 0.6]))
    per_rack: dict[str, int] = {}
    for (name, _), n in free.items():
        per_rack[rack_of[name]] = per_rack.get(rack_of[name], 0) + n
    target = max(per_rack.values()) * rng.uniform(0.6, 1.05)
    sizes: list[int] = []
    while sum(sizes) < target and len(sizes) < 16:
        sizes.append(rng.choice([1, 2, 2, 3, 4]))
    rng.shuffle(sizes)
    return Scenario(seed, nodes, slices, in_use, free, rack_of, sizes or [1, 1])


def exists(s: Scenario) -> bool:
    """CP-SAT: each member to one (node, domain) with room, all in one rack."""
    from ortools.sat.python import cp_model

    model = cp_model.CpModel()
    places = [key for key, n in s.free.items() if n > 0]
    racks = sorted(set(s.rack_of.values()))
    in_rack = {r: model.new_bool_var(f"rack-{r}") for r in racks}
    model.add_exactly_one(in_rack.values())
    x = {(m, p): model.new_bool_var(f"x{m}-{p}") for m in range(len(s.sizes)) for p in places if s.free[p] >= s.sizes[m]}
    for m in range(len(s.sizes)):
        model.add_exactly_one([v for (mm, _), v in x.items() if mm == m] or [model.new_constant(0)])
    for p in places:
        model.add(sum(s.sizes[m] * v for (m, pp), v in x.items() if pp == p) <= s.free[p])
    for (_, p), v in x.items():
        model.add_implication(v, in_rack[s.rack_of[p[0]]])
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = 30
    solver.parameters.num_workers = 1
    status = solver.solve(model)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE, cp_model.INFEASIBLE):
        raise RuntimeError(f"scenario {s.seed}: CP-SAT undecided")
    return status != cp_model.INFEASIBLE


def corpus(n: int, seed: int) -> int:
    rng = random.Random(seed)
    fit = greedy_found = dralloc_found = exhausted = 0
    missed: list[int] = []
    wrong: list[int] = []
    steps: list[int] = []
    for _ in range(n):
        s = scenario(rng.getrandbits(40))
        snap, members = s.snapshot(), s.members()
        judge = exists(s)
        greedy = gangs.place_gang(snap, members, s.nodes, features=FEATURES, topology_key="rack", greedy=True)
        ours = gangs.place_gang(snap, members, s.nodes, features=FEATURES, topology_key="rack")
        fit += judge
        greedy_found += isinstance(greedy, gangs.GangPlaced)
        dralloc_found += isinstance(ours, gangs.GangPlaced)
        exhausted += isinstance(ours, gangs.GangBudgetExhausted)
        steps.append(ours.steps)
        if judge and not isinstance(ours, gangs.GangPlaced):
            missed.append(s.seed)
        if not judge and isinstance(ours, gangs.GangPlaced):
            wrong.append(s.seed)
    print(f"corpus: {n} scenarios (seed {seed}): {fit} gangs fit (CP-SAT); greedy placed {greedy_found} "
          f"({fit - greedy_found} missed), dralloc placed {dralloc_found} "
          f"({len(missed)} missed, {exhausted} out of budget); dralloc placed {len(wrong)} the judge says cannot fit")
    print(f"  dralloc steps (allocator calls) per decision: median {statistics.median(steps):.0f}, "
          f"max {max(steps)}")
    if missed:
        print(f"  MISSED (fit, dralloc did not): seeds {missed[:20]}")
    if wrong:
        print(f"  WRONG (placed, judge says no fit): seeds {wrong[:20]}")
    return 1 if missed or wrong else 0


def latency(repeat: int, node_counts: list[int], sizes: list[int], *, long_lived: bool = True) -> None:
    print("decision latency (one gang, every member one claim for 2 GPUs on one NVLink domain, all in one rack of "
          "100 nodes with 2 x 4 GPUs, 30 % in use; `first` is the first decision against the snapshot, which builds "
          "the per-node caches; median and p99 of the decisions after it; "
          + ("the cluster's objects frozen out of the cyclic GC as `dralloc simulate` does):" if long_lived else
             "the cyclic GC as it comes):"))
    print(f"{'nodes':>6} {'members':>8} {'result':>20} {'first ms':>9} {'median ms':>10} {'p99 ms':>8} {'steps':>6}")
    for n_nodes in node_counts:
        with heap.LongLived() if long_lived else contextlib.nullcontext() as frozen:
            rng = random.Random(n_nodes)
            nodes, slices, in_use, _, _ = cluster(rng, n_nodes, busy=0.3, rack_size=100, per_domain=4)
            # A fresh snapshot per row: its first decision is cold, as a scheduling pass's first gang is.
            snaps = [Snapshot.build(device_classes=[GPU_CLASS], resource_slices=slices, allocated_claims=in_use,
                                    features=FEATURES) for _ in sizes]
            if frozen is not None:
                frozen.built()
            for size, snap in zip(sizes, snaps, strict=True):
                members = [member(f"m{i}", 2) for i in range(size)]
                times = []
                outcome: gangs.GangOutcome | None = None
                for _ in range(repeat + 1):
                    started = time.perf_counter()
                    outcome = gangs.place_gang(snap, members, nodes, features=FEATURES, topology_key="rack")
                    times.append((time.perf_counter() - started) * 1000)
                first, rest = times[0], sorted(times[1:])
                p99 = rest[min(len(rest) - 1, int(len(rest) * 0.99))]
                assert outcome is not None
                print(f"{n_nodes:>6} {size:>8} {type(outcome).__name__:>20} {first:>9.1f} "
                      f"{statistics.median(rest):>10.1f} {p99:>8.1f} {outcome.steps:>6}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenarios", type=int, default=200)
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--latency", action="store_true", help="also time gangs of 8/64/256 on 500/5,000 nodes")
    parser.add_argument("--repeat", type=int, default=20, help="decisions per latency row after the first (default 20)")
    parser.add_argument("--nodes", default="500,5000", help="cluster sizes for --latency (default 500,5000)")
    parser.add_argument("--members", default="8,64,256", help="gang sizes for --latency (default 8,64,256)")
    parser.add_argument("--gc-as-it-comes", action="store_true",
                        help="--latency without freezing the cluster's objects out of the cyclic GC")
    args = parser.parse_args()
    status = corpus(args.scenarios, args.seed) if args.scenarios > 0 else 0
    if args.latency:
        latency(max(1, args.repeat), [int(n) for n in args.nodes.split(",")], [int(m) for m in args.members.split(",")],
                long_lived=not args.gc_as_it_comes)
    return status


if __name__ == "__main__":
    sys.exit(main())
