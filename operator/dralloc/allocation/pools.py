"""Gather ResourceSlices into the pools a node can allocate from.

A pool is identified by (driver, pool name). For one node, the allocator sees
only slices whose devices can be used from that node (`nodeName`, `allNodes`,
`nodeSelector`, per-device node selection; slices with `sharedCounters` always
count). Within a pool only the newest generation is kept. A pool is complete
when it has `resourceSliceCount` slices of that generation; when the slices for
this node do not add up, the whole cluster's slices of the pool are consulted,
which is what multi-node pools need, and a newer generation anywhere makes the
pool obsolete for this node. Incomplete pools are never allocated from. A
complete pool is invalid when device names repeat or counter references do not
resolve; invalid pools are skipped by the search (see search.py).

`SliceIndex` does the expensive part once per set of slices: per-device
precomputation (`DeviceInfo`) and the per-node gathering, cached per node. It is
immutable from the outside and safe to share between allocation calls whose
slices did not change.
"""

from __future__ import annotations

import dataclasses
import functools
import sys
from collections import defaultdict
from collections.abc import Hashable, Mapping, Sequence
from typing import Any, NamedTuple

from dralloc.allocation import errors, nodeaffinity
from dralloc.allocation.features import Features
from dralloc.model import devices, nodes


class DeviceID(NamedTuple):
    driver: str
    pool: str
    device: str

    def __str__(self) -> str:
        return f"{self.driver}/{self.pool}/{self.device}"


class PoolID(NamedTuple):
    driver: str
    pool: str

    def __str__(self) -> str:
        return f"{self.driver}/{self.pool}"


def qualify(name: str, driver: str) -> str:
    """The fully qualified name of an attribute or capacity published by `driver`."""
    return name if "/" in name else f"{driver}/{name}"


# (driver, a device's attribute names in order) -> how its `DeviceInfo.attributes` are keyed
# (`AttributeKeys`). Bounded: emptied when full.
_ATTRIBUTE_KEYS: dict[tuple[str, tuple[str, ...]], AttributeKeys] = {}
_ATTRIBUTE_KEYS_MAX = 1 << 12
_QUALIFIED: dict[tuple[str, str], str] = {}  # (driver, short attribute name) -> "driver/name", interned


class AttributeKeys(NamedTuple):
    """How the devices of a driver that publish the same attribute names in the same order key their
    `DeviceInfo.attributes`: shared by all of them (memory at fleet size)."""

    # The device's own attribute names, in its order.
    names: tuple[str, ...]
    # The fully qualified names in the dict's order (interned).
    keys: tuple[str, ...]
    # The positions of the device's attributes in that order (None: the device's own order).
    order: tuple[int, ...] | None
    # Whether a short and a qualified name mean one attribute (the dict then holds fewer entries).
    collide: bool


def _attribute_keys(driver: str, names: tuple[str, ...]) -> AttributeKeys:
    # Short names first so that an explicitly qualified name wins (exact match first): a later
    # duplicate key keeps the first one's place and takes its own value.
    order = [i for i, name in enumerate(names) if "/" not in name] + [i for i, name in enumerate(names) if "/" in name]
    keys: list[str] = []
    for i in order:
        name = names[i]
        if "/" not in name:
            qualified = _QUALIFIED.get((driver, name))
            if qualified is None:
                if len(_QUALIFIED) >= 1 << 14:
                    _QUALIFIED.clear()
                qualified = _QUALIFIED[(driver, name)] = sys.intern(f"{driver}/{name}")
            name = qualified
        keys.append(name)
    found = AttributeKeys(names, tuple(keys), None if order == sorted(order) else tuple(order),
                          len(set(keys)) != len(keys))
    if len(_ATTRIBUTE_KEYS) >= _ATTRIBUTE_KEYS_MAX:
        _ATTRIBUTE_KEYS.clear()
    _ATTRIBUTE_KEYS[(driver, names)] = found
    return found


class DeviceInfo:
    """Everything the search needs about one published device, computed once.

    What selectors need of the device itself is memoized here (`selector_results`: its CEL
    value, whether its attributes convert); selector results are memoized per expression in
    `dralloc.allocation.selectors`, by `serial` (set there on first use): a device's attributes
    cannot change without a new slice object.

    `attributes` (by fully qualified name) is built on first use: selectors read the device's own
    attributes (`attribute`), and most devices of a large snapshot never meet a constraint.
    """

    __slots__ = (
        "_attributes", "allow_multiple", "attribute_keys", "binding_conditions", "binding_failure_conditions",
        "binds_to_node", "capacity", "consumes", "content", "device", "driver", "groups", "id", "per_device_node", "plain_capacity",
        "selector_results", "serial", "slice", "taints",
    )

    def __init__(self, slice_: devices.ResourceSlice, device: devices.Device) -> None:
        spec = slice_.spec
        self.slice = slice_
        self.device = device
        self.driver = spec.driver
        self.id = DeviceID(spec.driver, spec.pool.name, device.name)
        driver = spec.driver
        names = tuple(device.attributes)
        keyed = _ATTRIBUTE_KEYS.get((driver, names))
        if keyed is None:
            keyed = _attribute_keys(driver, names)
        self.attribute_keys = keyed
        self._attributes: dict[str, devices.DeviceAttribute] | None = None
        capacity = self.capacity = device.capacity
        # No request policies: a request without capacity amounts takes all of every capacity.
        plain = True
        for c in capacity.values():
            if c.request_policy is not None:
                plain = False
                break
        self.plain_capacity = plain
        consumptions = device.consumes_counters
        if consumptions:
            # Counter amounts in exact integer nano-units: counter arithmetic is on the hot path.
            self.consumes: tuple[tuple[str, tuple[tuple[str, int], ...]], ...] = tuple(
                (c.counter_set, tuple((name, counter.value.nanos) for name, counter in c.counters.items()))
                for c in consumptions
            )
            # DRADeviceCompatibilityGroups: the groups of each counter set consumption, in order.
            self.groups: tuple[tuple[str, frozenset[str]], ...] = tuple(
                (c.counter_set, frozenset(c.compatibility_groups)) for c in consumptions)
        else:
            self.consumes = self.groups = ()
        self.taints = device.taints
        self.allow_multiple = bool(device.allow_multiple_allocations)
        self.binding_conditions = device.binding_conditions
        self.binding_failure_conditions = device.binding_failure_conditions
        self.binds_to_node = bool(device.binds_to_node)
        self.per_device_node = bool(spec.per_device_node_selection)
        self.selector_results: dict[Any, Any] = {}
        self.serial: int | None = None  # see dralloc.allocation.selectors._serial
        self.content: Hashable | None = None  # see dralloc.allocation.equivalence._content

    @property
    def attributes(self) -> dict[str, devices.DeviceAttribute]:
        """The device's attributes by fully qualified name (a short name is the driver's); where a
        short and a qualified name mean one attribute, the qualified one's value."""
        found = self._attributes
        if found is None:
            _, keys, order, _ = self.attribute_keys
            values = self.device.attributes.values()
            if order is None:
                found = dict(zip(keys, values, strict=True))
            else:
                listed = tuple(values)
                found = dict(zip(keys, [listed[i] for i in order], strict=True))
            self._attributes = found
        return found

    def attribute(self, domain: str, ident: str) -> devices.DeviceAttribute | None:
        """`attributes.get(f"{domain}/{ident}")`, read from the device's own attributes."""
        own = self.device.attributes
        found = own.get(f"{domain}/{ident}")
        if found is None and domain == self.driver and "/" not in ident:
            found = own.get(ident)
        return found

    def node_fields(self) -> tuple[str | None, nodes.NodeSelector | None]:
        """The nodeName / nodeSelector that restrict where this device can be used."""
        if self.per_device_node:
            return self.device.node_name, self.device.node_selector
        return self.slice.spec.node_name, self.slice.spec.node_selector


@dataclasses.dataclass(frozen=True)
class Pool:
    """One pool as seen from one node."""

    id: PoolID
    slices: tuple[devices.ResourceSlice, ...]
    devices: tuple[DeviceInfo, ...]
    incomplete: bool
    invalid_reason: str | None
    has_binding_conditions: bool
    # counter set name -> counter name -> total value, from the pool's sharedCounters.
    counter_sets: Mapping[str, Mapping[str, int]]  # nano-units
    # Every device of the pool's current generation cluster-wide that consumes counters:
    # allocated ones among them use up the pool's counters wherever they are.
    counter_consumers: tuple[DeviceInfo, ...]

    @property
    def invalid(self) -> bool:
        return self.invalid_reason is not None


@dataclasses.dataclass(frozen=True)
class NodeView:
    """What the allocator needs to know about the node it allocates for."""

    name: str
    labels: Mapping[str, str] = dataclasses.field(default_factory=dict)
    # node.status.declaredFeatures (1.37): DRAOptionalNodeOperations lets devices skip node calls.
    declared_features: frozenset[str] = frozenset()

    @classmethod
    def of(cls, node: nodes.Node) -> NodeView:
        return cls(node.metadata.name, dict(node.metadata.labels), frozenset(node.status.declared_features))


@dataclasses.dataclass(frozen=True)
class NodeScope:
    """The pools of one node and the flattened candidate order the search walks."""

    pools: tuple[Pool, ...]
    # Devices of complete, valid pools in search order, and the pool of each; incomplete and invalid
    # pools are skipped. Two tuples rather than a pair per device: a scope lives as long as its slices,
    # and the garbage collector walks every pair at each full collection.
    devices: tuple[DeviceInfo, ...]
    pool_at: tuple[Pool, ...]
    invalid_pool_seen: bool

    @functools.cached_property
    def order(self) -> tuple[tuple[Pool, DeviceInfo], ...]:
        """(pool, device) in search order."""
        return tuple(zip(self.pool_at, self.devices, strict=True))

    def reordered(self, positions: Sequence[int]) -> NodeScope:
        """This scope with its search order permuted: the device at positions[i] comes i-th."""
        return NodeScope(pools=self.pools, devices=tuple([self.devices[p] for p in positions]),
                         pool_at=tuple([self.pool_at[p] for p in positions]), invalid_pool_seen=self.invalid_pool_seen)

    @classmethod
    def of(cls, pools: tuple[Pool, ...]) -> NodeScope:
        usable = [pool for pool in pools if not pool.incomplete and not pool.invalid]
        if len(usable) == 1:
            devices = usable[0].devices
            pool_at = (usable[0],) * len(devices)
        else:
            devices = tuple([info for pool in usable for info in pool.devices])
            pool_at = tuple([pool for pool in usable for _ in pool.devices])
        return cls(pools=pools, devices=devices, pool_at=pool_at, invalid_pool_seen=any(p.invalid for p in pools))


def uses_compatibility_groups(s: devices.ResourceSlice) -> bool:
    """Whether some device of the slice names compatibility groups for a counter set (1.37)."""
    return any(c.compatibility_groups for d in s.spec.devices for c in d.consumes_counters)


def _ignores_groups(features: Features) -> bool:
    # 1.37 without DRADeviceCompatibilityGroups cannot check co-allocation against the groups,
    # so it ignores slices that use them: their pool looks incomplete. 1.36 has no such field.
    return features.at_least_1_37 and not features.compatibility_groups


_BY_VIEW_MIN = 1024  # SliceIndex._views holds at least this many views


class SliceIndex:
    """All ResourceSlices of a cluster, grouped by pool, with per-node pool lists cached."""

    def __init__(self, slices: Sequence[devices.ResourceSlice]) -> None:
        self.slices = tuple(slices)
        self._by_pool: dict[PoolID, list[devices.ResourceSlice]] = defaultdict(list)
        # Slices pinned to one node by name are only ever relevant to that node; indexing
        # them keeps gathering for one node proportional to what the node can see.
        # The lists keep input order, which upstream's "is the pool complete" check depends on
        # (_gather). A counter slice with a nodeName is read for every node (among the
        # unpinned ones) or only for its node (among that node's slices): see
        # Features.counter_slices_everywhere.
        self._by_node: dict[str, list[devices.ResourceSlice]] = defaultdict(list)
        self._unpinned: list[devices.ResourceSlice] = []
        self._by_node_1_37: dict[str, list[devices.ResourceSlice]] = defaultdict(list)
        self._unpinned_1_37: list[devices.ResourceSlice] = []
        self._position: dict[int, int] = {}  # id(slice) -> input position
        for position, s in enumerate(self.slices):
            self._position[id(s)] = position
            self._by_pool[PoolID(s.spec.driver, s.spec.pool.name)].append(s)
            if s.spec.node_name and not s.spec.shared_counters:
                self._by_node[s.spec.node_name].append(s)
            else:
                self._unpinned.append(s)
            if s.spec.node_name:
                self._by_node_1_37[s.spec.node_name].append(s)
            else:
                self._unpinned_1_37.append(s)
        self._device_infos: dict[int, tuple[DeviceInfo, ...]] = {}
        self._groups_used: dict[int, bool] = {}  # id(slice) -> uses_compatibility_groups
        self._scope_cache: dict[tuple[str, tuple[tuple[str, str], ...], Features], NodeScope] = {}
        # id(view) -> its scope under `_views_features`, for the views in `_views_held` (`scope_for`).
        self._views: dict[int, NodeScope] = {}
        self._views_held: list[NodeView] = []
        self._views_features: Features | None = None
        # Many nodes see the same pool the same way (e.g. counter-set slices, network pools).
        self._pool_cache: dict[tuple[PoolID, tuple[int, ...], bool, Features], Pool] = {}
        # What other modules derive from these slices alone (allocation.equivalence), kept as long as they are.
        self.memo: dict[Hashable, Any] = {}

    def device_infos(self, slice_: devices.ResourceSlice) -> tuple[DeviceInfo, ...]:
        key = id(slice_)
        infos = self._device_infos.get(key)
        if infos is None:
            infos = tuple(DeviceInfo(slice_, d) for d in slice_.spec.devices)
            self._device_infos[key] = infos
        return infos

    def _uses_groups(self, s: devices.ResourceSlice) -> bool:
        """`uses_compatibility_groups`, once per slice (the index holds its slices: ids stay theirs)."""
        found = self._groups_used.get(id(s))
        if found is None:
            found = self._groups_used[id(s)] = uses_compatibility_groups(s)
        return found

    def pinned_to(self, node_name: str) -> Sequence[devices.ResourceSlice]:
        """The slices that name this node (spec.nodeName), in input order."""
        return self._by_node_1_37.get(node_name, ())

    def pool_ids(self) -> tuple[PoolID, ...]:
        return tuple(self._by_pool)

    def pools_for(self, node: NodeView, features: Features) -> tuple[Pool, ...]:
        """The pools usable from `node`, in search order (see search.py)."""
        return self.scope_for(node, features).pools

    def scope_for(self, node: NodeView, features: Features) -> NodeScope:
        # The same view object asks again and again (placement tries claim after claim on its nodes):
        # answered by identity, without sorting its labels into the key (a NodeView is immutable).
        if features is self._views_features:
            known = self._views.get(id(node))
            if known is not None:
                return known
        key = (node.name, tuple(sorted(node.labels.items())), features)
        cached = self._scope_cache.get(key)
        if cached is None:
            cached = NodeScope.of(self._gather(node, features))
            self._scope_cache[key] = cached
        if features is not self._views_features or len(self._views) >= max(_BY_VIEW_MIN, 2 * len(self._scope_cache)):
            # Other features start over; so do views made per decision (bounded by about the nodes'
            # number). The map is replaced before the views it names are let go.
            self._views = {}
            self._views_held = []
            self._views_features = features
        self._views_held.append(node)  # held: its id stays its own while it is a key
        self._views[id(node)] = cached
        return cached

    def _relevant(self, s: devices.ResourceSlice, node: NodeView, features: Features) -> bool:
        spec = s.spec
        if _ignores_groups(features) and self._uses_groups(s):
            return False
        if spec.shared_counters:
            if not features.partitionable_devices:
                return False
            if features.counter_slices_everywhere:
                # Counter sets belong to the whole pool, whatever node fields the slice has.
                return True
            # 1.37 reads a counter slice only where it selects the node; a pool that needs it
            # elsewhere looks incomplete from the node and is then completed from every
            # slice of the pool (_gather).
        try:
            if spec.per_device_node_selection:
                if not features.partitionable_devices:
                    return False
                return any(
                    nodeaffinity.node_matches(
                        node_name=node.name, labels=node.labels, target_node_name=d.node_name,
                        all_nodes=d.all_nodes, selector=d.node_selector,
                    )
                    for d in spec.devices
                )
            if spec.node_name or spec.all_nodes or spec.node_selector is not None:
                return nodeaffinity.node_matches(
                    node_name=node.name, labels=node.labels, target_node_name=spec.node_name,
                    all_nodes=spec.all_nodes, selector=spec.node_selector,
                )
        except ValueError as exc:
            raise errors.InvalidSliceError(f"ResourceSlice {s.metadata.name}: spec.nodeSelector: {exc}") from exc
        # No known node-selection field: a future mode this allocator does not understand.
        return False

    def _gather(self, node: NodeView, features: Features) -> tuple[Pool, ...]:
        relevant: dict[PoolID, list[devices.ResourceSlice]] = defaultdict(list)
        if features.counter_slices_everywhere:
            visible = (*self._by_node.get(node.name, ()), *self._unpinned)
        else:
            visible = (*self._by_node_1_37.get(node.name, ()), *self._unpinned_1_37)
        for s in visible:
            if self._relevant(s, node, features):
                relevant[PoolID(s.spec.driver, s.spec.pool.name)].append(s)
        pools: list[Pool] = []
        for pool_id, candidates in relevant.items():
            if len(candidates) == 1:  # the common case, without the sorting
                newest = kept = candidates
                generation = candidates[0].spec.pool.generation
                expected = candidates[0].spec.pool.resource_slice_count
            else:
                generation = max(s.spec.pool.generation for s in candidates)
                newest = [s for s in candidates if s.spec.pool.generation == generation]
                # Upstream takes the slice count of the first slice it met, not of the first by
                # name: its incubating variant meets the node's own slices first (each group in
                # input order), its stable variant every slice in input order.
                first = newest[0] if features.beyond_stable_channel else min(newest,
                                                                            key=lambda s: self._position[id(s)])
                expected = first.spec.pool.resource_slice_count
                kept = sorted(newest, key=lambda s: s.metadata.name)
            everywhere = self._by_pool[pool_id]
            if _ignores_groups(features):
                # Consistent with _relevant: an ignored slice does not count towards completeness.
                everywhere = [s for s in everywhere if not self._uses_groups(s)]
            current = [s for s in everywhere if s.spec.pool.generation == generation]
            incomplete = False
            if len(kept) != expected:
                # Not complete from this node's view alone: judge by the whole cluster's slices.
                if max(s.spec.pool.generation for s in everywhere) > generation:
                    continue  # being replaced: the old generation is ignored entirely
                incomplete = len(current) != expected
            # 1.37 takes the counter sets from every slice of the pool when the node's own view
            # of it is short (a counter slice that does not select the node); 1.36 read every
            # counter slice anyway.
            counter_slices = current if len(kept) != expected and not features.counter_slices_everywhere else kept
            # Devices elsewhere in the pool are read (to validate their counter consumption and count
            # what allocated ones use) only when the node's own view was short, as upstream does.
            pool_devices = kept if len(kept) == expected else current
            pool_key = (pool_id, (id(kept[0]),) if len(kept) == 1 else tuple(id(s) for s in kept), incomplete, features)
            pool = self._pool_cache.get(pool_key)
            if pool is None:
                pool = self._make_pool(pool_id, kept, pool_devices, incomplete, features, counter_slices)
                self._pool_cache[pool_key] = pool
            pools.append(pool)
        if len(pools) > 1:
            pools.sort(key=lambda p: (p.has_binding_conditions, p.id.driver, p.id.pool))
        return tuple(pools)

    def _make_pool(
        self,
        pool_id: PoolID,
        kept: list[devices.ResourceSlice],
        current: list[devices.ResourceSlice],
        incomplete: bool,
        features: Features,
        counter_slices: list[devices.ResourceSlice],
    ) -> Pool:
        infos = self.device_infos(kept[0]) if len(kept) == 1 else tuple(
            info for s in kept for info in self.device_infos(s))
        counter_sets: dict[str, dict[str, int]] = {}
        reason: str | None = None
        seen: set[str] = set()
        for info in infos:
            if info.id.device in seen and reason is None:
                reason = f"duplicate device name {info.id.device}"
            seen.add(info.id.device)
        consumers: tuple[DeviceInfo, ...] = ()
        if features.partitionable_devices:
            for s in counter_slices:
                for counter_set in s.spec.shared_counters:
                    if counter_set.name in counter_sets and reason is None:
                        reason = f"duplicate counter set name {counter_set.name}"
                    counter_sets[counter_set.name] = {n: c.value.nanos for n, c in counter_set.counters.items()}
            consumers = tuple(info for s in current for info in self.device_infos(s) if info.consumes)
            for info in consumers:
                for set_name, counters in info.consumes:
                    if set_name not in counter_sets:
                        reason = reason or f"device {info.id.device} consumes counters of unknown counter set {set_name}"
                        continue
                    for counter_name, _ in counters:
                        if counter_name not in counter_sets[set_name]:
                            reason = reason or (
                                f"device {info.id.device} consumes unknown counter {counter_name} "
                                f"of counter set {set_name}"
                            )
        return Pool(
            id=pool_id,
            slices=tuple(kept),
            devices=infos,
            incomplete=incomplete,
            invalid_reason=None if incomplete else reason,
            has_binding_conditions=any(info.binding_conditions for info in infos),
            counter_sets=counter_sets,
            counter_consumers=consumers,
        )
