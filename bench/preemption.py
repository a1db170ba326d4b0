"""Priority preemption on a full GPU cluster (issue 29): how many pods it removes, and how fast it decides.

A cluster of --nodes nodes x 8 node-local GPUs, every GPU held by a priority-100 pod of 1, 2, 4 or 8 GPUs
(seeded: --seed). Then --arrivals priority-1000 pods of 1, 2 or 4 GPUs arrive one after another. For each,
in-process against the operator's own core (a `Placer` and `scheduling/preemption.py`, as the decider thread
runs them): place it; when it fits nowhere, find the victims, remove them (their pods and claims), place it
again. Three ways, measured in the same run:

  none        no preemption (kube-scheduler 1.37 for a pod with claims: its preemption never counts what a
              victim's claims free, so it never finds room): the baseline for "placed"
  first-fit   the naive way: on the first node (by name) where removing lower-priority pods can help, remove
              them in order (least important first) until the pod fits; no reprieve, no choice of node
  dralloc     kube-scheduler's DefaultPreemption with devices counted (dralloc's): on each node the fewest
              victims by the reprieve, sparing the most important first; the best node by upstream's order

Printed per way: pods placed, victims per placed pod, GPUs freed beyond what the pods asked for (victims' GPUs
minus the pods' GPUs), and the decision time per pod (p50/p99 of place + find + place again: the CPU the
decider thread spends; the writes and the victims' termination are not in it). Then, on --exact-nodes nodes (a
smaller cluster, same seed), each pod's fewest possible victims over every node (every subset of every
node's pods, exhaustively) against dralloc's: with every victim of equal priority, upstream's order reduces to
the fewest victims, so this is the goal upstream's semantics aim for; the reprieve spares by importance,
not by count, so it may remove more (printed: how often, by how much).

Then --gangs priority-1000 gangs of 4 members x 2 GPUs, each on one rack (8 nodes share a rack label), on
a fresh full cluster: searched, and preempting as one where they fit nowhere (the handlers' gang search).

Not measured here (left for the operator bench): the time from a pod's creation to its bind through the API
server (nomination, deletions, the claim lifecycle).

Prints numbers; asserts nothing.
Usage: .venv/bin/python bench/preemption.py [--nodes 500] [--arrivals 200] [--gangs 10] [--exact-nodes 12] [--seed 1]
"""

from __future__ import annotations

import argparse
import itertools
import random
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

from dralloc.allocation.features import Features
from dralloc.allocation.snapshots import Snapshot
from dralloc.handlers import ganging
from dralloc.model import claims as model_claims
from dralloc.model import conversion, nodes, pods
from dralloc.scheduling import placement, preemption

DRIVER = "gpu.example.com"
GPUS = 8
FEATURES = Features()


RACK = "example.com/rack"
NODES_PER_RACK = 8


def _node(name: str, index: int) -> nodes.Node:
    labels = {"kubernetes.io/hostname": name, RACK: f"rack-{index // NODES_PER_RACK}"}
    found: nodes.Node = conversion.parse_as(nodes.Node, {
        "apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
        "status": {"allocatable": {"cpu": "64", "memory": "512Gi", "pods": "110"}}})
    return found


def _slice(node: str) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{node}-gpus"},
            "spec": {"driver": DRIVER, "nodeName": node, "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": f"gpu-{i}"} for i in range(GPUS)]}}


def _claim(name: str, count: int, devices: Sequence[tuple[str, int]] = ()) -> model_claims.ResourceClaim:
    raw: dict[str, Any] = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                           "metadata": {"name": name, "namespace": "default", "uid": f"claim-{name}"},
                           "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                               "deviceClassName": "gpu", "allocationMode": "ExactCount", "count": count}}]}}}
    if devices:
        raw["status"] = {"allocation": {"devices": {"results": [
            {"request": "gpu", "driver": DRIVER, "pool": node, "device": f"gpu-{i}"} for node, i in devices]}}}
    found: model_claims.ResourceClaim = conversion.parse_as(model_claims.ResourceClaim, raw)
    return found


def _pod(name: str, priority: int, node: str | None, started: str | None = None) -> pods.Pod:
    raw: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod",
                           "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
                           "spec": {"priority": priority, "containers": [{"name": "main", "resources": {
                               "requests": {"cpu": "1"}}}]}}
    if node:
        raw["spec"]["nodeName"] = node
    if started:
        raw["status"] = {"startTime": started}
    found: pods.Pod = conversion.parse_as(pods.Pod, raw)
    return found


class Cluster:
    """The full cluster: a Placer, and each resident pod's claim and GPU count."""

    def __init__(self, node_count: int, seed: int) -> None:
        rng = random.Random(seed)
        names = [f"node-{i:04d}" for i in range(node_count)]
        residents: list[pods.Pod] = []
        claims: list[model_claims.ResourceClaim] = []
        self.gpus: dict[str, int] = {}  # pod uid -> GPUs
        self.held: dict[str, list[preemption.HeldClaim]] = {}
        serial = itertools.count()
        for node in names:
            free = list(range(GPUS))
            while free:
                size = rng.choice([s for s in (1, 2, 4, 8) if s <= len(free)])
                taken, free = free[:size], free[size:]
                number = next(serial)
                pod = _pod(f"low-{number}", 100, node, f"2026-01-01T{number // 3600 % 24:02d}:{number // 60 % 60:02d}:"
                                                       f"{number % 60:02d}Z")
                claim = _claim(f"low-{number}", size, [(node, i) for i in taken])
                residents.append(pod)
                claims.append(claim)
                uid = pod.metadata.uid or ""
                self.gpus[uid] = size
                assert claim.status is not None and claim.status.allocation is not None
                self.held[uid] = [preemption.HeldClaim(claim.status.allocation, frozenset({uid}))]
        classes = [conversion.parse({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                                     "metadata": {"name": "gpu"}, "spec": {"selectors": [
                                         {"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}})]
        slices = [conversion.parse(_slice(n)) for n in names]
        snapshot = Snapshot.build(device_classes=classes, resource_slices=slices, allocated_claims=claims,
                                  features=FEATURES)
        self.placer = placement.Placer(node_list=[_node(n, i) for i, n in enumerate(names)], snapshot=snapshot,
                                       features=FEATURES, bound_pods=residents)

    def remove(self, victims: Sequence[pods.Pod]) -> int:
        """Take the victims out (their pods and claims); the GPUs freed."""
        freed = 0
        for pod in victims:
            uid = pod.metadata.uid or ""
            self.placer.release(pod.spec.node_name or "", [h.results for h in self.held.pop(uid, [])], pod)
            freed += self.gpus.pop(uid, 0)
        return freed


def _naive(cluster: Cluster, item: placement.Item) -> list[pods.Pod] | None:
    """First node by name where removing lower-priority pods (least important first) makes room."""
    assert item.pod is not None
    for index, victims in preemption.victims_by_node(cluster.placer, item.pod).items():
        trial = preemption.NodeTrial(cluster.placer, item, index, victims,
                                     [h for v in victims for u in v.uids for h in cluster.held.get(u, [])])
        order = list(reversed(victims))  # least important first
        for count in range(1, len(order) + 1):
            removed = frozenset(victims.index(v) for v in order[:count])
            if trial(removed):
                return [p for v in order[:count] for p in v.pods]
    return None


def _dralloc(cluster: Cluster, item: placement.Item) -> list[pods.Pod] | None:
    chosen = preemption.find(cluster.placer, item, lambda uid: cluster.held.get(uid, ()))
    return list(chosen.pods) if chosen is not None else None


def run(way: str, node_count: int, seed: int, arrivals: int,
        chooser: Callable[[Cluster, placement.Item], list[pods.Pod] | None] | None) -> dict[str, Any]:
    cluster = Cluster(node_count, seed)
    rng = random.Random(seed + 1)
    placed = victims = waste = 0
    times = []
    for number in range(arrivals):
        size = rng.choice((1, 2, 4))
        pod = _pod(f"high-{number}", 1000, None)
        item = placement.Item(pod.metadata.name, claims=(_claim(f"high-{number}", size),), pod=pod)
        started = time.process_time()
        decision = cluster.placer.place(item, explain=False)
        if not isinstance(decision, placement.Placement) and chooser is not None:
            chosen = chooser(cluster, item)
            if chosen:
                freed = cluster.remove(chosen)
                decision = cluster.placer.place(item, explain=False)
                if isinstance(decision, placement.Placement):
                    victims += len(chosen)
                    waste += freed - size
        times.append(time.process_time() - started)
        if isinstance(decision, placement.Placement):
            cluster.placer.commit(item, decision)
            placed += 1
    times.sort()
    return {"way": way, "placed": placed, "victims": victims, "waste": waste,
            "p50": statistics.median(times) * 1000, "p99": times[int(len(times) * 0.99) - 1] * 1000}


def gangs(node_count: int, seed: int, count: int, size: int, gpus: int) -> dict[str, Any]:
    """`count` priority-1000 gangs of `size` members x `gpus` GPUs, each on one rack, on the full cluster:
    each searched, preempting as one when it fits nowhere (handlers/ganging.py's search and preempt_search,
    as the decider thread runs them)."""
    cluster = Cluster(node_count, seed)
    placed = victims = waste = 0
    times = []
    for number in range(count):
        members = [_pod(f"gang-{number}-{i}", 1000, None) for i in range(size)]
        items = tuple(placement.Item(p.metadata.name, claims=(_claim(p.metadata.name, gpus),), pod=p) for p in members)
        prepared = ganging.Prepared(("default", f"gang-{number}"), f"default/gang-{number}", tuple(members), items,
                                    frozenset(), RACK, None, (), False, {})
        started = time.process_time()
        outcome = ganging.search(cluster.placer, prepared)
        if not isinstance(outcome, ganging.Decided):
            found = ganging.preempt_search(cluster.placer, prepared, lambda uid: cluster.held.get(uid, ()), (), 1000)
            if found is not None:
                chosen, _ = found
                freed = cluster.remove(chosen.pods)
                outcome = ganging.search(cluster.placer, prepared)
                if isinstance(outcome, ganging.Decided):
                    victims += len(chosen.pods)
                    waste += freed - size * gpus
        times.append(time.process_time() - started)
        if isinstance(outcome, ganging.Decided):
            for member in outcome.members:
                cluster.placer.commit(member.item, member.placement)
            placed += 1
    times.sort()
    return {"placed": placed, "victims": victims, "waste": waste, "p50": statistics.median(times) * 1000,
            "max": times[-1] * 1000}


def exact_gap(node_count: int, seed: int, arrivals: int) -> tuple[int, int, int, int]:
    """On a small cluster: (pods compared, where dralloc removes more than the fewest possible, its victims,
    the fewest possible victims), summed over the pods that preempt."""
    cluster = Cluster(node_count, seed)
    rng = random.Random(seed + 1)
    compared = worse = mine = best = 0
    for number in range(arrivals):
        size = rng.choice((1, 2, 4))
        pod = _pod(f"high-{number}", 1000, None)
        item = placement.Item(pod.metadata.name, claims=(_claim(f"high-{number}", size),), pod=pod)
        fits = cluster.placer.place(item, explain=False)
        if isinstance(fits, placement.Placement):
            cluster.placer.commit(item, fits)
            continue
        fewest = None
        for index, victims in preemption.victims_by_node(cluster.placer, pod).items():
            trial = preemption.NodeTrial(cluster.placer, item, index, victims,
                                         [h for v in victims for u in v.uids for h in cluster.held.get(u, [])])
            for count in range(1, len(victims) + 1):
                if fewest is not None and count >= fewest:
                    break
                if any(trial(frozenset(c)) for c in itertools.combinations(range(len(victims)), count)):
                    fewest = count
                    break
        chosen = _dralloc(cluster, item)
        if chosen is None or fewest is None:
            continue
        compared += 1
        mine += len(chosen)
        best += fewest
        worse += len(chosen) > fewest
        cluster.remove(chosen)
        decision = cluster.placer.place(item, explain=False)
        if isinstance(decision, placement.Placement):
            cluster.placer.commit(item, decision)
    return compared, worse, mine, best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--arrivals", type=int, default=200)
    parser.add_argument("--exact-nodes", type=int, default=12)
    parser.add_argument("--gangs", type=int, default=10)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    print(f"{args.nodes} nodes x {GPUS} GPUs, all held by priority-100 pods of 1/2/4/8 GPUs; "
          f"{args.arrivals} priority-1000 pods of 1/2/4 GPUs arrive (seed {args.seed})")
    print(f"{'way':<10} {'placed':>7} {'victims/placed':>15} {'GPUs freed beyond need':>23} "
          f"{'decision p50 ms':>16} {'p99 ms':>8}")
    for way, chooser in (("none", None), ("first-fit", _naive), ("dralloc", _dralloc)):
        found = run(way, args.nodes, args.seed, args.arrivals, chooser)
        per = found["victims"] / found["placed"] if found["placed"] else 0.0
        print(f"{way:<10} {found['placed']:>7} {per:>15.2f} {found['waste']:>23} {found['p50']:>16.1f} "
              f"{found['p99']:>8.1f}")
    found = gangs(args.nodes, args.seed, args.gangs, 4, 2)
    print(f"{args.gangs} priority-1000 gangs of 4 x 2 GPUs, each on one rack of {NODES_PER_RACK} nodes (full cluster): "
          f"{found['placed']} placed, {found['victims']} victims ({found['victims'] / max(found['placed'], 1):.1f} per "
          f"gang), {found['waste']} GPUs freed beyond need; decision p50 {found['p50']:.0f} ms, max {found['max']:.0f} ms")
    compared, worse, mine, best = exact_gap(args.exact_nodes, args.seed, args.arrivals)
    print(f"exact, {args.exact_nodes} nodes: {compared} preempting pods; dralloc {mine} victims, the fewest possible "
          f"{best} ({(mine / best - 1) * 100 if best else 0:.1f} % more); more than the fewest for {worse} pods")


if __name__ == "__main__":
    main()
