"""Derived views: the allocator snapshot and the placement view, rebuilt only when needed.

The slice index (per-device precomputation, per-node pools, memoized CEL
results) is the expensive part; it is rebuilt only when ResourceSlices or
DeviceClasses changed. The allocated state is rebuilt from the claims plus
the ledger whenever either changed. A `Placer` is built per scheduling pass.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from dralloc import allocation
from dralloc.allocation import taintrules
from dralloc.allocation.features import Features
from dralloc.allocation.pools import DeviceID, SliceIndex
from dralloc.allocation.snapshots import AllocatedState, Snapshot
from dralloc.model import nodes
from dralloc.scheduling import nodefit, placedpods, placement, volumes
from dralloc.state import capacity
from dralloc.state.cluster import ClusterState
from dralloc.state.ledger import Ledger


class Views:
    def __init__(self, cluster: ClusterState, ledger: Ledger, features: Features,
                 budget: int | None = allocation.DEFAULT_BUDGET) -> None:
        self.cluster = cluster
        self.ledger = ledger
        self.features = features
        self.budget = budget  # allocator search steps per node (--budget)
        self._index: SliceIndex | None = None
        self._index_key: tuple[int, ...] = ()
        self._snapshot: Snapshot | None = None
        self._snapshot_key: tuple[Any, ...] = ()
        self._usage: tuple[list[nodes.Node], dict[str, nodefit.NodeUsage], placedpods.PlacedPods] | None = None
        self._usage_key: tuple[int, int, int] = (-1, -1, -1)
        self._nodes: tuple[int, placement.NodeTable] | None = None  # (the Nodes' version, their table)
        self._effective: dict[DeviceID, tuple[taintrules.EffectiveTaint, ...]] | None = None
        self._effective_key: tuple[int, ...] = ()
        self._storage: volumes.Storage | None = None
        self._storage_key: tuple[int, ...] = ()
        self._inventory: capacity.Inventory | None = None
        self._inventory_key: tuple[int, ...] = ()

    def slice_index(self) -> SliceIndex:
        key = (self.cluster.slices.version,)
        if self._index is None or key != self._index_key:
            self._index = SliceIndex(sorted(self.cluster.slices.all(), key=lambda s: s.metadata.name))
            self._index_key = key
        return self._index

    def snapshot(self) -> Snapshot:
        index = self.slice_index()
        key = (self.cluster.slices.version, self.cluster.classes.version, self.cluster.claims.version,
               self.ledger.version, self.cluster.taint_rules.version)
        if self._snapshot is None or key != self._snapshot_key:
            observed = [c for c in self.cluster.claims.all() if c.status.allocation is not None]
            observed_uids = {c.metadata.uid for c in observed}
            state = AllocatedState.from_claims(observed, self.features)
            pending = [r.allocation for r in self.ledger.pending() if r.claim_uid not in observed_uids]
            state = state.plus((res for a in pending for res in a.devices.results), self.features)
            device_classes = {c.metadata.name: c for c in self.cluster.classes.all()}
            self._snapshot = Snapshot(
                classes=device_classes,
                slices=index,
                allocated=state,
                extra_taints=taintrules.rule_taints(self.cluster.taint_rules.all(), index, device_classes),
            )
            self._snapshot_key = key
        return self._snapshot

    def inventory(self) -> capacity.Inventory:
        """The devices' classes, taint effects and counter sets for the capacity gauges (claims not involved)."""
        steps = self.inventory_steps()
        if steps is not None:
            for _ in steps:
                pass
        assert self._inventory is not None
        return self._inventory

    def inventory_steps(self) -> Iterator[None] | None:
        """None when the inventory is current; else its build, one pause per step (see
        capacity.Inventory.build_steps), which stores the inventory when run to its end."""
        key = (self.cluster.slices.version, self.cluster.classes.version, self.cluster.taint_rules.version)
        if self._inventory is not None and key == self._inventory_key:
            return None
        # Unchanged DeviceClasses: the devices of unchanged slices keep their classes (no CEL).
        same = self._inventory is not None and self._inventory_key[1] == key[1]
        return self._build_inventory(key, self._inventory if same else None)

    def _build_inventory(self, key: tuple[int, ...], previous: capacity.Inventory | None) -> Iterator[None]:
        built = yield from capacity.Inventory.build_steps(self.snapshot(), previous)
        self._inventory, self._inventory_key = built, key

    def effective_taints(self) -> dict[DeviceID, tuple[taintrules.EffectiveTaint, ...]]:
        """Per tainted device, its slice taints and the DeviceTaintRule taints that select it."""
        index = self.slice_index()
        key = (self.cluster.slices.version, self.cluster.classes.version, self.cluster.taint_rules.version)
        if self._effective is None or key != self._effective_key:
            device_classes = {c.metadata.name: c for c in self.cluster.classes.all()}
            self._effective = taintrules.effective_taints(self.cluster.taint_rules.all(), index, device_classes)
            self._effective_key = key
        return self._effective

    def storage(self) -> volumes.Storage:
        """What the volume filters read, rebuilt when a PVC, PV, StorageClass, CSINode, CSIDriver or
        CSIStorageCapacity changed."""
        cluster = self.cluster
        stores = (cluster.volume_claims, cluster.volumes, cluster.storage_classes, cluster.csi_nodes,
                  cluster.csi_drivers, cluster.storage_capacities)
        key = tuple(store.version for store in stores)
        if self._storage is None or key != self._storage_key:
            self._storage = volumes.Storage.of(cluster.volume_claims.all(), cluster.volumes.all(),
                                               cluster.storage_classes.all(), cluster.csi_nodes.all(),
                                               cluster.csi_drivers.all(), cluster.storage_capacities.all())
            self._storage_key = key
        return self._storage

    def placer(self, policy: str) -> placement.Placer:
        if self._nodes is None or self._nodes[0] != self.cluster.nodes.version:
            self._nodes = (self.cluster.nodes.version, placement.NodeTable.of(self.cluster.nodes.all()))
        table = self._nodes[1]
        key = (self.cluster.nodes.version, self.cluster.relevant_changes, self.cluster.namespaces.version)
        if self._usage is None or key != self._usage_key:
            nodes = table.nodes
            bound = [p for p in self.cluster.pods.all() if p.spec.node_name and not p.finished()]
            namespaces = {n.metadata.name: n.metadata.labels for n in self.cluster.namespaces.all()}
            self._usage = (nodes, placement.used_nodes(table.index, bound),
                           placedpods.PlacedPods(table.by_name, bound, namespaces))
            self._usage_key = key
        nodes, usage, placed = self._usage
        placer = placement.Placer(node_list=table, snapshot=self.snapshot(), features=self.features,
                                  policy=policy, usage=usage, budget=self.budget, placed=placed,
                                  storage=self.storage())
        placer.usage_in_reasons = False  # pods are told why, not how busy other tenants keep each node
        return placer
