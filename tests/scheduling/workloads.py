"""Small generated clusters and mixed workloads, plus the naive placement loop they are checked against.

One generator serves both the seeded examples and the Hypothesis property: it asks a
`Chooser` for every decision, and a chooser is either a seeded `random.Random` or a
Hypothesis `draw`.

The naive loop is the definition of first-fit placement: for each item, try every node in
name order from scratch (node fit, then `dralloc.allocation.allocate`) and take the
first success, adding the result to the in-use state before the next item.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

from hypothesis import strategies as st
from tests.builders import ClaimBuilder, SliceBuilder, claim, class_, device, slice_
from tests.scheduling.objects import node_, node_taint, pod_

from dralloc import allocation
from dralloc.allocation import outcomes
from dralloc.allocation.features import Features
from dralloc.allocation.pools import NodeView
from dralloc.allocation.snapshots import Snapshot
from dralloc.model import claims as model_claims
from dralloc.model import conversion, nodes, pods
from dralloc.scheduling import nodefit, placement

T = TypeVar("T")
FEATURES = Features()
CLASSES = (
    class_("gpu", 'device.driver == "gpu.example.com"'),
    class_("gpu-y", 'device.attributes["gpu.example.com"].model == "y"'),
)


class Chooser(Protocol):
    def integer(self, low: int, high: int) -> int: ...

    def choice(self, options: Sequence[T]) -> T: ...


@dataclasses.dataclass
class Seeded:
    rng: random.Random

    def integer(self, low: int, high: int) -> int:
        return self.rng.randint(low, high)

    def choice(self, options: Sequence[T]) -> T:
        return self.rng.choice(list(options))


@dataclasses.dataclass
class Drawn:
    draw: Callable[[st.SearchStrategy[Any]], Any]

    def integer(self, low: int, high: int) -> int:
        value: int = self.draw(st.integers(low, high))
        return value

    def choice(self, options: Sequence[T]) -> T:
        value: T = self.draw(st.sampled_from(list(options)))
        return value


@dataclasses.dataclass(frozen=True)
class Place:
    item: placement.Item


@dataclasses.dataclass(frozen=True)
class Release:
    step: int  # index of an earlier Place step; released only if it was placed


Step = Place | Release


@dataclasses.dataclass(frozen=True)
class Scenario:
    node_list: tuple[nodes.Node, ...]  # in input order (not sorted)
    slices: tuple[SliceBuilder, ...]
    steps: tuple[Step, ...]

    def snapshot(self) -> Snapshot:
        return Snapshot.build(device_classes=[c.build() for c in CLASSES],
                              resource_slices=[s.build() for s in self.slices], features=FEATURES)


def _devices(chooser: Chooser, count: int, shares: str | None = None) -> list[Any]:
    """`shares`: GPUs that allow multiple allocations with a `compute` capacity of 1000 ("plain"),
    some of them with a request policy ("policies": valid values, which round and refuse)."""
    built = []
    for i in range(count):
        gpu = device(f"gpu-{i}").attr("model", chooser.choice(["x", "y"])).attr("numa", chooser.integer(0, 1))
        if shares is not None:
            gpu = gpu.shared()
            if shares == "policies" and chooser.integer(0, 1):
                gpu = gpu.capacity("compute", 1000, valid_values=(300, 500, 1000))
            else:
                gpu = gpu.capacity("compute", 1000)
        built.append(gpu)
    return built


SHARES = (100, 300, 400, 500, 700, 1000, 1200)  # milli-GPUs; 1200 fits no GPU


def _claim(chooser: Chooser, name: str, shares: str | None = None) -> ClaimBuilder:
    kinds = ["one", "two", "one-y", "two-same-numa", "three", "too-many"]
    if shares is not None:
        kinds += ["share"] * 4 + ["share-y", "two-shares"]
    shape = chooser.choice(kinds)
    built = claim(name)
    if shape == "share":
        return built.request("r0", "gpu", capacity={"compute": chooser.choice(SHARES)})
    if shape == "share-y":
        return built.request("r0", "gpu-y", capacity={"compute": chooser.choice(SHARES)})
    if shape == "two-shares":
        return built.request("r0", "gpu", count=2, capacity={"compute": chooser.choice(SHARES)})
    if shape == "one":
        return built.request("r0", "gpu")
    if shape == "two":
        return built.request("r0", "gpu", count=2)
    if shape == "one-y":
        return built.request("gpu", "gpu-y")
    if shape == "two-same-numa":
        return built.request("a", "gpu").request("b", "gpu").constraint_match("gpu.example.com/numa")
    if shape == "three":
        return built.request("r0", "gpu", count=3)
    return built.request("r0", "gpu", count=9)  # fits nowhere


def _item(chooser: Chooser, index: int, shares: str | None = None) -> placement.Item:
    name = f"item-{index}"
    kind = chooser.choice(["claim", "claim", "pod-with-claim", "pod-only", "two-claims"])
    if kind == "claim":
        return placement.Item(name, claims=(_claim(chooser, f"{name}-c", shares).build(),))
    if kind == "two-claims":
        return placement.Item(name, claims=(_claim(chooser, f"{name}-a", shares).build(),
                                            _claim(chooser, f"{name}-b", shares).build()))
    fields: dict[str, Any] = {"cpu": chooser.choice(["500m", "1", "2", "3"])}
    selector = chooser.choice([None, "a", "b"])
    if selector is not None:
        fields["node_selector"] = {"zone": selector}
    if chooser.integer(0, 2) == 0:
        fields["tolerations"] = [{"key": "dedicated", "operator": "Exists"}]
    pod = pod_(name, **fields)
    claims = (_claim(chooser, f"{name}-c", shares).build(),) if kind == "pod-with-claim" else ()
    return placement.Item(name, claims=claims, pod=pod)


def scenario(chooser: Chooser, *, network_pool: bool = False, releases: bool = True, max_nodes: int = 5,
             max_steps: int = 12, shares: str | None = None) -> Scenario:
    """A cluster of 2..max_nodes nodes with node-local GPUs (and optionally an all-nodes pool) and a
    workload; `shares` ("plain" or "policies", see `_devices`) makes the GPUs shareable and adds
    claims for amounts of their capacity."""
    count = chooser.integer(2, max_nodes)
    node_list: list[nodes.Node] = []
    slices: list[SliceBuilder] = []
    for i in range(count):
        name = f"node-{i}"
        taints = [node_taint("dedicated", "gpu")] if chooser.integer(0, 3) == 0 else []
        node_list.append(node_(name, labels={"zone": chooser.choice(["a", "b"])},
                               cpu=str(chooser.integer(1, 6)), pods=str(chooser.integer(1, 4)), taints=taints))
        devices = chooser.integer(0, 4)
        if devices:
            slices.append(slice_(f"{name}-slice", pool=name, node=name, devices=_devices(chooser, devices, shares)))
    if network_pool:
        slices.append(slice_("fabric", pool="fabric", all_nodes=True,
                             devices=_devices(chooser, chooser.integer(1, 3), shares)))
    order = list(range(count))
    for i in range(count - 1, 0, -1):  # the Placer must not depend on input order
        j = chooser.integer(0, i)
        order[i], order[j] = order[j], order[i]
    steps: list[Step] = []
    for index in range(chooser.integer(3, max_steps)):
        places = [i for i, s in enumerate(steps) if isinstance(s, Place)]
        if releases and places and chooser.integer(0, 3) == 0:
            steps.append(Release(chooser.choice(places)))
        else:
            steps.append(Place(_item(chooser, index, shares)))
    return Scenario(tuple(node_list[i] for i in order), tuple(slices), tuple(steps))


# A step's answer: the node and the raw allocation results, or None (fits nowhere / released).
Answer = tuple[str, list[dict[str, Any]]] | None


def _raw(results: Sequence[model_claims.AllocationResult]) -> list[dict[str, Any]]:
    return [conversion.to_raw(r) for r in results]


def run_naive(s: Scenario) -> list[Answer]:
    """Every node, in name order, from scratch, for every item."""
    ordered = sorted(s.node_list, key=lambda n: n.metadata.name)
    snapshot = s.snapshot()
    usage = {n.metadata.name: nodefit.NodeUsage() for n in ordered}
    answers: list[Answer] = []
    placed: dict[int, tuple[str, tuple[model_claims.AllocationResult, ...], pods.Pod | None]] = {}
    for index, step in enumerate(s.steps):
        if isinstance(step, Release):
            if step.step in placed:
                where, results, pod = placed.pop(step.step)
                snapshot = snapshot.without_allocations(results, FEATURES)
                if pod is not None:
                    usage[where].remove(nodefit.pod_requests(pod))
            answers.append(None)
            continue
        item = step.item
        answer: Answer = None
        for node in ordered:
            name = node.metadata.name
            if item.pod is not None and nodefit.misfit(
                    item.pod, node, usage[name], nodefit.pod_requests(item.pod)) is not None:
                continue
            outcome = allocation.allocate(snapshot, item.claims, NodeView.of(node), features=FEATURES)
            if isinstance(outcome, outcomes.Allocated):
                snapshot = snapshot.with_allocations(outcome.results, FEATURES)
                if item.pod is not None:
                    usage[name].add(nodefit.pod_requests(item.pod))
                placed[index] = (name, outcome.results, item.pod)
                answer = (name, _raw(outcome.results))
                break
        answers.append(answer)
    return answers


def run_placer(s: Scenario, policy: str = "first-fit", *,
               explained: bool = False) -> tuple[list[Answer | str], placement.Placer]:
    """The scenario through one Placer; `explained`: a step that fits nowhere answers its explanation's text."""
    placer = placement.Placer(node_list=s.node_list, snapshot=s.snapshot(), features=FEATURES, policy=policy)
    answers: list[Answer | str] = []
    placed: dict[int, tuple[placement.Item, placement.Placement]] = {}
    for index, step in enumerate(s.steps):
        if isinstance(step, Release):
            if step.step in placed:
                item, done = placed.pop(step.step)
                placer.release(done.node, done.results, item.pod)
            answers.append(None)
            continue
        decision = placer.place(step.item)
        if isinstance(decision, placement.Placement):
            placer.commit(step.item, decision)
            placed[index] = (step.item, decision)
            answers.append((decision.node, _raw(decision.results)))
        else:
            answers.append(decision.message() if explained else None)
    return answers, placer
