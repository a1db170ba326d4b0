"""Choosing among nodes where the claims fit: FirstFit, BinPack, Spread, FragmentationAware.

Upstream has no scoring: the scheduler takes the first node that fits (in our
offline tools: node-name order). dralloc scores nodes where the allocation
succeeded by how much of the node's devices would then be in use:

- `first-fit`: the first node, by name, that fits (upstream behaviour);
- `binpack`: the most used node (share of its devices in use) where the claims
  fit, so whole nodes (and whole GPUs behind partitions) stay free for large
  requests;
- `spread`: the least used node where they fit;
- `fragmentation-aware`: the node and devices whose choice makes the least of the free
  capacity unusable for the workload's request shapes (fragmentation.py; the Placer
  orders nodes and devices by it, scheduling/fragmenting.py).

Nodes are tried in that order and the first fit wins, so a placement costs one
allocator call per node tried, not one per node.

Ties break by node name, so the choice is deterministic.
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction

from dralloc.allocation.features import Features
from dralloc.allocation.pools import NodeView
from dralloc.allocation.snapshots import Snapshot

POLICIES = ("first-fit", "binpack", "spread", "fragmentation-aware")


@dataclasses.dataclass(frozen=True)
class NodeUse:
    devices: int
    in_use: int

    @property
    def fraction(self) -> Fraction:
        return Fraction(self.in_use, self.devices) if self.devices else Fraction(0)


def node_use(snapshot: Snapshot, node: NodeView, features: Features) -> NodeUse:
    """Devices of the node's pools, and how many of them are in use."""
    exclusive, shared = snapshot.allocated.exclusive, snapshot.allocated.shared
    total = used = 0
    for pool in snapshot.slices.pools_for(node, features):
        for info in pool.devices:
            total += 1
            if info.id in exclusive or info.id in shared:
                used += 1
    return NodeUse(total, used)


def sort_key(policy: str, node_name: str, use: NodeUse) -> tuple[object, ...]:
    """Smaller is better."""
    if policy == "binpack":
        return (-use.fraction, node_name)
    if policy == "spread":
        return (use.fraction, node_name)
    return (node_name,)
