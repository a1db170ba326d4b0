"""`dralloc simulate --add-nodes FILE`: the fewest nodes like this one that let the leftovers fit.

The template is a Node and the ResourceSlices it publishes (as `kubectl get node X -o
yaml` and its slices give them). After the simulation, copies of it are added to the
cluster as it is then (everything placed stays where it is) and the unplaced items are
placed again, in their order, with the same policy: the answer is the smallest number of
copies with which every one of them is placed. Each copy is named `<node>-added-<i>`;
its slices and pools are renamed after it (pools named after the node, as drivers
name them, follow the new name; `nodeName` too).

Items that do not fit even on an empty copy alone (too large, another device class, a
selector the template's devices do not pass) cannot be helped by any number of copies:
they are named and left out of the count. Adding nodes only adds room, so the search
doubles the count until everything fits, then halves back to the smallest count that
still does (placing in order is greedy: more copies could in principle place fewer,
so every count the answer rests on is checked, not assumed).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from dralloc.allocation.features import Features
from dralloc.allocation.pools import SliceIndex
from dralloc.model import devices, nodes
from dralloc.offline import inputs
from dralloc.scheduling import placement

MAX_NODES = 10_000  # a template that would need more than this is reported as not enough


@dataclasses.dataclass(frozen=True)
class Template:
    node: nodes.Node
    slices: tuple[devices.ResourceSlice, ...]

    def copy(self, index: int) -> tuple[nodes.Node, list[devices.ResourceSlice]]:
        old = self.node.metadata.name
        name = f"{old}-added-{index}"
        labels = dict(self.node.metadata.labels)
        if labels.get("kubernetes.io/hostname") == old:
            labels["kubernetes.io/hostname"] = name
        node = self.node.model_copy(update={"metadata": self.node.metadata.model_copy(update={
            "name": name, "labels": labels, "uid": None, "resource_version": None})})
        slices = []
        for s in self.slices:
            pool = s.spec.pool
            pool_name = pool.name.replace(old, name) if old in pool.name else f"{pool.name}-added-{index}"
            spec = s.spec.model_copy(update={
                "node_name": name if s.spec.node_name == old else s.spec.node_name,
                "pool": pool.model_copy(update={"name": pool_name})})
            slices.append(s.model_copy(update={
                "metadata": s.metadata.model_copy(update={"name": f"{s.metadata.name}-added-{index}",
                                                          "uid": None, "resource_version": None}),
                "spec": spec}))
        return node, slices


def read_template(path: str) -> Template:
    """The Node and its ResourceSlices from the file; InputError naming the file and what is wrong."""
    cluster = inputs.load([path])
    if len(cluster.nodes) != 1:
        raise inputs.InputError(f"--add-nodes {path}: expected exactly one Node, found {len(cluster.nodes)}")
    node = cluster.nodes[0]
    name = node.metadata.name
    own = [s for s in cluster.resource_slices if s.spec.node_name == name]
    others = [s.metadata.name for s in cluster.resource_slices if s.spec.node_name != name]
    if others:
        raise inputs.InputError(f"--add-nodes {path}: ResourceSlice {others[0]}: spec.nodeName: expected {name!r} "
                                f"(the template's Node); a template's slices are its own")
    return Template(node, tuple(own))


def _placed_all(base: placement.Placer, template: Template, count: int, items: Sequence[placement.Item],
                features: Features) -> bool:
    """Whether every item is placed, in order, after `count` copies join the cluster as it is."""
    added_nodes, added_slices = [], []
    for index in range(count):
        node, slices = template.copy(index)
        added_nodes.append(node)
        added_slices.extend(slices)
    snapshot = dataclasses.replace(base.snapshot, slices=SliceIndex([*base.snapshot.slices.slices, *added_slices]))
    usage = {n.metadata.name: u for n, u in zip(base.nodes, base.usage, strict=True)}
    placer = placement.Placer(node_list=[*base.nodes, *added_nodes], snapshot=snapshot, features=features,
                              policy=base.policy, usage=usage, budget=base.budget)
    placer.expect(items)
    for item in items:
        decision = placer.place(item, explain=False)
        if not isinstance(decision, placement.Placement):
            return False
        placer.commit(item, decision)
    return True


def fewest(base: placement.Placer, template: Template, items: Sequence[placement.Item], features: Features
           ) -> dict[str, Any]:
    """{"nodes": the fewest copies (None: not enough within MAX_NODES), "items": how many they place,
    "unfit": names of the items that fit no empty copy}."""
    empty = dataclasses.replace(base.snapshot, slices=SliceIndex(list(template.slices)),
                                allocated=type(base.snapshot.allocated)())
    alone = placement.Placer(node_list=[template.node], snapshot=empty, features=features, policy="first-fit",
                             budget=base.budget)
    helped: list[placement.Item] = []
    unfit: list[placement.Item] = []
    for item in items:
        (helped if isinstance(alone.place(item, explain=False), placement.Placement) else unfit).append(item)
    result: dict[str, Any] = {"template": template.node.metadata.name, "items": len(helped),
                              "unfit": [i.name for i in unfit],
                              "nodes": 0}
    if not helped:
        return result
    high = 1
    while not _placed_all(base, template, high, helped, features):
        if high >= MAX_NODES:
            result["nodes"] = None
            return result
        high = min(2 * high, MAX_NODES)
    low = high // 2  # known (or assumed at 0) not to be enough
    while high - low > 1:
        middle = (low + high) // 2
        if _placed_all(base, template, middle, helped, features):
            high = middle
        else:
            low = middle
    result["nodes"] = high
    return result
