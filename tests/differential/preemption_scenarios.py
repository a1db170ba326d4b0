"""Random cpu-only preemption scenarios, for comparing dralloc's preemption with kube-scheduler's (pure, seeded).

`scenario(seed, index)`: 2-3 nodes of 4 cpu, mostly full of pods already bound, each of priority 10 or 100 (the
PriorityClasses `low` and `mid`), a cpu request and a start time of its own (no two alike: kube-scheduler
orders victims by start time, and reads "now" for a pod that has none); one pending pod of priority 1000
(`high`) asking 1-4 cpu. No claims: kube-scheduler's preemption then sees everything dralloc does.

`objects(scenario, twin)` / `pending(scenario, twin, scheduler)` build a twin: its own namespace and nodes
(labelled with the twin; the pending pod selects them), so twins never see each other. `expected(scenario)`
is dralloc's own answer from the pure core (scheduling/preemption.py): the node and victims it will
choose, and whether that node is the only best one (kube-scheduler breaks ties by its sampling order,
which starts at a random node: only a unique best is compared by node).
"""

from __future__ import annotations

import dataclasses
import random
from typing import Any

from dralloc.allocation.features import Features
from dralloc.allocation.snapshots import Snapshot
from dralloc.model import conversion, nodes, pods
from dralloc.scheduling import placement, preemption

Obj = dict[str, Any]
TWIN_LABEL = "preempt.dralloc.io/twin"
PRIORITIES = {"low": 10, "mid": 100, "high": 1000}
PENDING = "pending"


def scenario(seed: int, index: int) -> Obj:
    """Scenario `index` of the run `seed`."""
    rng = random.Random(f"preemption-differential:{seed}:{index}")
    node_names = [f"n{i}" for i in range(rng.randint(2, 3))]
    existing = []
    serial = 0
    for node in node_names:  # mostly full nodes: the pending pod fits rarely without removing someone
        left = 4000
        while left >= 500 and rng.random() < 0.95:
            cpu = rng.choice([c for c in (500, 1000, 1500, 2000) if c <= left])
            left -= cpu
            existing.append({"name": f"e{serial}", "node": node, "cpu": cpu,
                             "class": rng.choice(("low", "low", "mid")), "started": f"2026-01-01T00:{serial:02d}:00Z"})
            serial += 1
    rng.shuffle(existing)  # start times are not in creation order
    return {"seed": seed, "index": index, "nodes": node_names, "pods": existing,
            "pending": {"cpu": rng.choice((1500, 2500, 3000, 3500, 4000, 4500))}}


@dataclasses.dataclass(frozen=True)
class Twin:
    side: str  # "k" (kube-scheduler) or "d" (dralloc)
    run: str
    index: int

    @property
    def key(self) -> str:
        return f"{self.side}-{self.run}-s{self.index}"

    @property
    def namespace(self) -> str:
        return f"preempt-{self.key}"

    def node(self, name: str) -> str:
        return f"{self.key}-{name}"

    def class_name(self, name: str) -> str:
        return f"preempt-{self.run}-{name}"


def priority_classes(run: str) -> list[Obj]:
    return [{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": f"preempt-{run}-{n}"},
             "value": v} for n, v in PRIORITIES.items()]


def _millis(value: int) -> str:
    return f"{value}m"


def objects(scenario_: Obj, twin: Twin) -> list[Obj]:
    """The twin's namespace, nodes and bound pods (with their start times, written as status)."""
    found: list[Obj] = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": twin.namespace}}]
    for name in scenario_["nodes"]:
        node = twin.node(name)
        amounts = {"cpu": "4", "memory": "64Gi", "pods": "110"}
        found.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": node, "labels": {
            "kubernetes.io/hostname": node, TWIN_LABEL: twin.key}},
            "status": {"allocatable": dict(amounts), "capacity": dict(amounts)}})
    for pod in scenario_["pods"]:
        found.append({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": pod["name"], "namespace": twin.namespace, "labels": {"role": "existing"}},
            "spec": {"nodeName": twin.node(pod["node"]), "priorityClassName": twin.class_name(pod["class"]),
                     "terminationGracePeriodSeconds": 0, "tolerations": [{"operator": "Exists"}],
                     "containers": [{"name": "main", "image": "busybox",
                                     "resources": {"requests": {"cpu": _millis(pod["cpu"])}}}]},
            "status": {"startTime": pod["started"]}})
    return found


def pending(scenario_: Obj, twin: Twin, scheduler: str | None) -> Obj:
    spec: Obj = {"priorityClassName": twin.class_name("high"), "nodeSelector": {TWIN_LABEL: twin.key},
                 "terminationGracePeriodSeconds": 0,
                 "containers": [{"name": "main", "image": "busybox",
                                 "resources": {"requests": {"cpu": _millis(scenario_["pending"]["cpu"])}}}]}
    if scheduler:
        spec["schedulerName"] = scheduler
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": PENDING, "namespace": twin.namespace}, "spec": spec}


@dataclasses.dataclass(frozen=True)
class Expected:
    fits: bool  # the pending pod fits without preemption
    node: str | None  # the node dralloc preempts on (scenario name), None: no preemption helps
    victims: frozenset[str]
    unique: bool  # no other node's victims rank as well


def expected(scenario_: Obj) -> Expected:
    """dralloc's answer from the pure core, on the scenario as plain nodes and pods."""
    twin = Twin("x", "x", scenario_["index"])
    raw = objects(scenario_, twin)
    node_list = [conversion.parse_as(nodes.Node, o) for o in raw if o["kind"] == "Node"]
    bound = []
    for o in raw:
        if o["kind"] == "Pod":
            o = {**o, "spec": {**o["spec"], "priority": PRIORITIES[o["spec"]["priorityClassName"].rsplit("-", 1)[1]]}}
            bound.append(conversion.parse_as(pods.Pod, o))
    snap = Snapshot.build(device_classes=[], resource_slices=[], features=Features())
    placer = placement.Placer(node_list=node_list, snapshot=snap, features=Features(), bound_pods=bound)
    want = pending(scenario_, twin, None)
    want["spec"]["priority"] = PRIORITIES["high"]
    want["metadata"]["uid"] = "pending"
    item = placement.Item(PENDING, pod=conversion.parse_as(pods.Pod, want))
    if isinstance(placer.place(item), placement.Placement):
        return Expected(True, None, frozenset(), True)
    candidates = []
    for index, victims in preemption.victims_by_node(placer, item.pod).items():  # type: ignore[arg-type]
        trial = preemption.NodeTrial(placer, item, index, victims, ())
        chosen = preemption.select_on_node(placer.nodes[index].metadata.name, victims, trial)
        if chosen is not None:
            candidates.append(chosen)
    best = preemption.pick_one(candidates)
    if best is None:
        return Expected(False, None, frozenset(), True)
    ties = sum(1 for c in candidates if preemption.rank(c) == preemption.rank(best))
    prefix = f"{twin.key}-"
    return Expected(False, best.node.removeprefix(prefix), frozenset(p.metadata.name for p in best.pods), ties == 1)
