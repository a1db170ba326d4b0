"""Random cpu-only gang preemption scenarios, for comparing dralloc's gang preemption with kube-scheduler's
workload-aware preemption (pure, seeded).

`scenario(seed, index)`: one node (two scenarios in three) or two, of 8 cpu each, mostly full of pods already
bound, of priority 10 or 100 (the PriorityClasses `low` and `mid` of preemption_scenarios), each with a start
time of its own (kube-scheduler orders victims by start time, and reads "now" for a pod that has none). They
come as three kinds of victim unit: lone pods; members of a PodGroup with `disruptionMode: single` (2-3
pods, each its own unit, ranking above a lone pod of its priority); members of a PodGroup with
`disruptionMode: all` (2 pods, on different nodes at times, removed together or not at all). Every pod of a
PodGroup has its PodGroup's PriorityClass: kube-scheduler refuses a group whose pods' priority differs.
The preemptor is a PodGroup of priority 1000 (`high`) whose gang policy wants all its 2-3 members (1-3 cpu
each) placed at once. No claims: kube-scheduler's preemption then sees everything dralloc does.

The mix (`flavour`): most scenarios leave too little room (preemption needed); some leave room for the gang
(it fits without removing anyone); a few, on one node, hold a pod of the preemptor's own priority that no
preemption may remove, and the gang cannot fit even once every other pod is gone (nothing helps).

`objects(scenario, twin)` / `pending(scenario, twin, scheduler)` build a twin as preemption_scenarios does:
its own namespace and nodes, labelled with the twin, which the gang's members select. `placeable(scenario)`
says whether removing every pod of lower priority lets the gang fit (a small exhaustive packing); `units`
lists the victim units most important first, as kube-scheduler orders them.
"""

from __future__ import annotations

import itertools
import random
from typing import Any

from tests.differential.preemption_scenarios import PRIORITIES, TWIN_LABEL, Twin, priority_classes

__all__ = ["GROUP", "NODE_CPU", "Twin", "member_names", "objects", "pending", "placeable", "priority_classes",
           "scenario", "units"]

Obj = dict[str, Any]
NODE_CPU = 8000  # millicores
GROUP = "gang"  # the preemptor PodGroup; its members are gang-0, gang-1, ...
_SIZES = (500, 1000, 1500, 2000)


def scenario(seed: int, index: int) -> Obj:
    """Scenario `index` of the run `seed`: nodes, bound pods (`group`: the PodGroup a member belongs to),
    bound PodGroups (name -> class and disruption mode), the gang's member requests."""
    rng = random.Random(f"gang-preemption-differential:{seed}:{index}")
    node_names = ["n0"] if rng.random() < 2 / 3 else ["n0", "n1"]
    gang = [rng.choice((1000, 2000, 3000)) for _ in range(rng.choice((2, 3)))]
    flavour = rng.choices(("preempt", "fits", "stuck"), weights=(75, 13, 12))[0]
    if flavour == "stuck" and len(node_names) > 1:
        flavour = "preempt"  # two emptied nodes always hold a gang of at most 9 cpu
    left = dict.fromkeys(node_names, NODE_CPU)
    pods: list[Obj] = []
    groups: dict[str, Obj] = {}

    def add(name: str, node: str, cpu: int, klass: str, group: str | None = None) -> None:
        left[node] -= cpu
        pods.append({"name": name, "node": node, "cpu": cpu, "class": klass, "group": group})

    if flavour == "stuck":  # a pod no preemption removes, taking the room the gang would need
        add("h0", "n0", min(NODE_CPU, max(500, NODE_CPU - sum(gang) + 500)), "high")
    elif len(node_names) == 1 and rng.random() < 0.25 and sum(gang) + 1000 <= NODE_CPU:
        add("h0", "n0", rng.choice((500, 1000)), "high")  # not a victim, but in the way
    if flavour == "fits":  # room kept free: the gang fits as its members split between the nodes
        for cpu in gang:
            node = rng.choice(node_names)
            left[node] -= cpu
    serial = 0
    while any(v >= 500 for v in left.values()) and rng.random() > 0.015:
        kind = rng.choices(("lone", "single", "all"), weights=(2, 1, 1))[0]
        klass = rng.choice(("low", "low", "mid"))
        count = {"lone": 1, "single": rng.choice((2, 3)), "all": 2}[kind]
        room = dict(left)
        where: list[tuple[str, int]] = []
        for _ in range(count):  # each member on a node with room for it; all-mode pairs may split
            cpu = rng.choice([c for c in _SIZES if c <= max(room.values())] or [0])
            if not cpu:
                break
            node = rng.choice([n for n in node_names if room[n] >= cpu])
            room[node] -= cpu
            where.append((node, cpu))
        if len(where) < count:
            continue  # too little room left for a group: a lone pod may still fit
        if kind == "lone":
            add(f"e{serial}", *where[0], klass)
        else:
            name = f"g{len(groups)}"
            groups[name] = {"class": klass, "mode": kind}
            for i, (node, cpu) in enumerate(where):
                add(f"{name}-{i}", node, cpu, klass, name)
        serial += 1
    # Start times: each pod its own, not in creation order (an all-mode unit starts with its earliest pod).
    minutes = list(range(len(pods)))
    rng.shuffle(minutes)
    for pod, minute in zip(pods, minutes, strict=True):
        pod["started"] = f"2026-01-01T{minute // 60:02d}:{minute % 60:02d}:00Z"
    return {"seed": seed, "index": index, "flavour": flavour, "nodes": node_names, "pods": pods,
            "groups": groups, "gang": gang}


def _packs(requests: list[int], free: dict[str, int]) -> bool:
    """Whether the requests fit the nodes' free cpu together (every assignment tried: at most 3 members)."""
    for nodes in itertools.product(list(free), repeat=len(requests)):
        used = dict.fromkeys(free, 0)
        for node, cpu in zip(nodes, requests, strict=True):
            used[node] += cpu
        if all(used[n] <= free[n] for n in free):
            return True
    return False


def placeable(scenario_: Obj) -> bool:
    """Whether the gang fits once every pod of lower priority than it is gone."""
    kept = {n: sum(p["cpu"] for p in scenario_["pods"] if p["node"] == n and PRIORITIES[p["class"]] >= PRIORITIES["high"])
            for n in scenario_["nodes"]}
    return _packs(scenario_["gang"], {n: NODE_CPU - used for n, used in kept.items()})


def _pod_group(name: str, namespace: str, class_name: str, min_count: int, mode: str) -> Obj:
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}, "priorityClassName": class_name,
                     "disruptionMode": {mode: {}}}}


def _pod(name: str, namespace: str, class_name: str, cpu: int, group: str | None) -> Obj:
    spec: Obj = {"priorityClassName": class_name, "terminationGracePeriodSeconds": 0,
                 "containers": [{"name": "main", "image": "busybox",
                                 "resources": {"requests": {"cpu": f"{cpu}m"}}}]}
    if group is not None:
        spec["schedulingGroup"] = {"podGroupName": group}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace}, "spec": spec}


def objects(scenario_: Obj, twin: Twin) -> list[Obj]:
    """The twin's namespace, nodes, bound PodGroups and bound pods (with their start times, written as
    status); each PodGroup before its pods."""
    found: list[Obj] = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": twin.namespace}}]
    for name in scenario_["nodes"]:
        node = twin.node(name)
        amounts = {"cpu": f"{NODE_CPU // 1000}", "memory": "64Gi", "pods": "110"}
        found.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": node, "labels": {
            "kubernetes.io/hostname": node, TWIN_LABEL: twin.key}},
            "status": {"allocatable": dict(amounts), "capacity": dict(amounts)}})
    for name, group in scenario_["groups"].items():
        size = sum(1 for p in scenario_["pods"] if p["group"] == name)
        found.append(_pod_group(name, twin.namespace, twin.class_name(group["class"]), size, group["mode"]))
    for pod in scenario_["pods"]:
        obj = _pod(pod["name"], twin.namespace, twin.class_name(pod["class"]), pod["cpu"], pod["group"])
        obj["metadata"]["labels"] = {"role": "existing"}
        obj["spec"].update(nodeName=twin.node(pod["node"]), tolerations=[{"operator": "Exists"}])
        obj["status"] = {"startTime": pod["started"]}
        found.append(obj)
    return found


def member_names(scenario_: Obj) -> list[str]:
    return [f"{GROUP}-{i}" for i in range(len(scenario_["gang"]))]


def pending(scenario_: Obj, twin: Twin, scheduler: str | None) -> list[Obj]:
    """The preemptor: its PodGroup (gang policy, minCount = every member), then its members, which select
    the twin's nodes."""
    high = twin.class_name("high")
    found = [_pod_group(GROUP, twin.namespace, high, len(scenario_["gang"]), "single")]
    for name, cpu in zip(member_names(scenario_), scenario_["gang"], strict=True):
        obj = _pod(name, twin.namespace, high, cpu, GROUP)
        obj["spec"]["nodeSelector"] = {TWIN_LABEL: twin.key}
        if scheduler:
            obj["spec"]["schedulerName"] = scheduler
        found.append(obj)
    return found


def units(scenario_: Obj) -> list[frozenset[str]]:
    """The victim units of lower priority than the gang, most important first (upstream's MoreImportantVictim:
    higher priority, then a PodGroup's pods above a lone pod, then the bigger unit, then the earlier start):
    a lone pod, a member of a single-mode PodGroup, or every member of an all-mode PodGroup."""
    found: dict[str, list[Obj]] = {}
    for pod in scenario_["pods"]:
        if PRIORITIES[pod["class"]] >= PRIORITIES["high"]:
            continue
        whole = pod["group"] is not None and scenario_["groups"][pod["group"]]["mode"] == "all"
        found.setdefault(pod["group"] if whole else pod["name"], []).append(pod)

    def importance(members: list[Obj]) -> tuple[int, int, int, str]:
        return (-PRIORITIES[members[0]["class"]], -int(members[0]["group"] is not None), -len(members),
                min(p["started"] for p in members))

    return [frozenset(p["name"] for p in members) for members in sorted(found.values(), key=importance)]
