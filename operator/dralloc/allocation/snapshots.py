"""The allocator's view of the cluster: classes, slices, and what is already in use.

`AllocatedState` is built from claims that have `status.allocation`, with the
rule kube-scheduler uses: admin-access results never make a device busy; with
consumable capacity, a result with a `shareID` is a share (its
`consumedCapacity` adds up per device) and leaves the device usable by other
shares; every other result makes the device exclusively in use.

A `Snapshot` is immutable. `with_allocations` derives the snapshot after some
claims got allocated, reusing the expensive slice index, which is how
placement loops (scheduler, simulator, benchmarks) stay cheap.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from fractions import Fraction
from typing import Any, TypeVar

from dralloc.allocation.features import Features
from dralloc.allocation.pools import DeviceID, SliceIndex
from dralloc.model import claims, devices, taints
from dralloc.model import classes as model_classes

V = TypeVar("V")


class DeviceSet(AbstractSet[DeviceID]):
    """An immutable set of devices that grows in O(added), not O(size).

    Placement loops add a claim's devices to the in-use state thousands of times; copying
    a frozenset each time would make a fill-up quadratic. Versions of one set share an
    append-only table (device -> the version that added it): a version sees the devices
    added at or before it. Only the newest version extends the table in place. Any other
    version that grows (a search that goes back and tries again from an earlier state, as
    gangs do) keeps its additions in a small overlay of its own, copied only once that
    overlay grows past OVERLAY_MAX; every removal copies.
    """

    __slots__ = ("_added", "_extra", "_size", "_table", "_version")
    OVERLAY_MAX = 4096

    def __init__(self, devices: Iterable[DeviceID] = ()) -> None:
        self._table: dict[DeviceID, int] = {d: 0 for d in devices}
        self._version = 0
        self._added = [0]  # the table's newest version, shared by every version of this set
        self._size = len(self._table)
        self._extra: frozenset[DeviceID] = frozenset()  # this version's own additions (see above)

    @classmethod
    def _view(cls, table: dict[DeviceID, int], version: int, added: list[int], size: int,
              extra: frozenset[DeviceID] = frozenset()) -> DeviceSet:
        view = cls.__new__(cls)
        view._table, view._version, view._added, view._size, view._extra = table, version, added, size, extra
        return view

    def __contains__(self, device: object) -> bool:
        version = self._table.get(device)  # type: ignore[call-overload]
        return (version is not None and version <= self._version) or device in self._extra

    def __iter__(self) -> Iterator[DeviceID]:
        yield from (d for d, v in self._table.items() if v <= self._version)
        yield from self._extra

    def membership(self) -> tuple[Callable[[DeviceID], int | None], int, frozenset[DeviceID]]:
        """What `__contains__` reads, for a hot loop that tests it inline: `device in self` is
        `(version := get(device)) is not None and version <= newest or device in extra`."""
        return self._table.get, self._version, self._extra

    def __len__(self) -> int:
        return self._size

    def count(self, devices: Iterable[DeviceID]) -> int:
        """How many of `devices` this version holds (the gang search counts every node's free devices)."""
        table = self._table
        if self._added[0] == self._version and not self._extra:
            # The newest version holds every entry of the table: membership alone, without a call each.
            return sum(map(table.__contains__, devices))
        return sum(1 for device in devices if device in self)

    def __hash__(self) -> int:
        return self._hash()

    def with_devices(self, devices: Iterable[DeviceID]) -> DeviceSet:
        held, newest, extra = self._table.get, self._version, self._extra
        new: set[DeviceID] = set()
        for device in devices:
            version = held(device)  # `device in self`, inlined
            if not ((version is not None and version <= newest) or device in extra):
                new.add(device)
        if not new:
            return self
        if self._added[0] == self._version and not self._extra:
            version = self._version + 1
            for device in new:
                self._table[device] = version
            self._added[0] = version
            return DeviceSet._view(self._table, version, self._added, self._size + len(new))
        if len(self._extra) + len(new) <= self.OVERLAY_MAX:
            return DeviceSet._view(self._table, self._version, self._added, self._size + len(new),
                                   self._extra | new)
        return DeviceSet([*self, *new])

    def without(self, devices: Iterable[DeviceID]) -> DeviceSet:
        gone = set(devices)
        if not gone:
            return self  # nothing to take out: no copy
        return DeviceSet(d for d in self if d not in gone)


_ABSENT = object()


class DeviceMap(Mapping[DeviceID, V]):
    """An immutable mapping whose changed versions cost O(changes + size / COMPACT), not O(size).

    A fill-up of shares commits thousands of times, each changing a few devices' consumed
    capacity: copying every device's entry per commit was a tenth of a 1,213-node trace run.
    Versions share a base dict that is never changed; each holds its own overlay of the
    entries changed since (copied per version, so it stays small: past COMPACT entries a
    version folds it into a new base).
    """

    __slots__ = ("_base", "_overlay")
    COMPACT = 256

    def __init__(self, items: Mapping[DeviceID, V] | Iterable[tuple[DeviceID, V]] = ()) -> None:
        self._base: dict[DeviceID, V] = dict(items)
        self._overlay: dict[DeviceID, V] = {}

    def __getitem__(self, key: DeviceID) -> V:
        value = self._overlay.get(key, _ABSENT)
        return self._base[key] if value is _ABSENT else value  # type: ignore[return-value]

    def get(self, key: DeviceID, default: Any = None) -> Any:
        value = self._overlay.get(key, _ABSENT)
        return self._base.get(key, default) if value is _ABSENT else value

    def __contains__(self, key: object) -> bool:
        return key in self._overlay or key in self._base

    def __iter__(self) -> Iterator[DeviceID]:
        overlay = self._overlay
        yield from (key for key in self._base if key not in overlay)
        yield from overlay

    def __len__(self) -> int:
        return len(self._base) + sum(1 for key in self._overlay if key not in self._base)

    def changed(self, updates: Mapping[DeviceID, V]) -> DeviceMap[V]:
        """This map with `updates` set (added or replaced)."""
        if not updates:
            return self
        new: DeviceMap[V] = DeviceMap.__new__(DeviceMap)
        overlay = {**self._overlay, **updates}
        if len(overlay) > self.COMPACT:
            new._base, new._overlay = {**self._base, **overlay}, {}
        else:
            new._base, new._overlay = self._base, overlay
        return new


def _changed(mapping: Mapping[DeviceID, V], updates: Mapping[DeviceID, V]) -> DeviceMap[V]:
    if isinstance(mapping, DeviceMap):
        return mapping.changed(updates)
    return DeviceMap({**mapping, **updates})


def _device_set(devices: AbstractSet[DeviceID]) -> DeviceSet:
    return devices if isinstance(devices, DeviceSet) else DeviceSet(devices)


@dataclasses.dataclass(frozen=True)
class AllocatedState:
    """Devices held by allocations that already exist."""

    exclusive: DeviceSet = dataclasses.field(default_factory=DeviceSet)
    # Devices with at least one share (consumable capacity), and the capacity those shares consume.
    shared: AbstractSet[DeviceID] = dataclasses.field(default_factory=DeviceSet)
    consumed_capacity: Mapping[DeviceID, Mapping[str, Fraction]] = dataclasses.field(default_factory=DeviceMap)
    share_counts: Mapping[DeviceID, int] = dataclasses.field(default_factory=DeviceMap)

    @classmethod
    def from_claims(cls, allocated: Iterable[claims.ResourceClaim], features: Features) -> AllocatedState:
        return cls.from_results(
            (r for c in allocated if c.status.allocation is not None for r in c.status.allocation.devices.results),
            features,
        )

    @classmethod
    def from_results(
        cls, results: Iterable[claims.DeviceRequestAllocationResult], features: Features
    ) -> AllocatedState:
        exclusive: set[DeviceID] = set()
        counts: dict[DeviceID, int] = {}
        consumed: dict[DeviceID, dict[str, Fraction]] = {}
        for result in results:
            if result.admin_access:
                continue
            device_id = DeviceID(result.driver, result.pool, result.device)
            if features.consumable_capacity and result.share_id:
                counts[device_id] = counts.get(device_id, 0) + 1
                totals = consumed.setdefault(device_id, {})
                for name, quantity in result.consumed_capacity.items():
                    totals[name] = totals.get(name, Fraction(0)) + quantity.value
            else:
                exclusive.add(device_id)
        return cls(DeviceSet(exclusive), DeviceSet(counts), DeviceMap(consumed), DeviceMap(counts))

    def plus(self, results: Iterable[claims.DeviceRequestAllocationResult], features: Features) -> AllocatedState:
        """This state with more allocation results added."""
        results = tuple(results)
        consumable = features.consumable_capacity
        if not any(consumable and result.share_id for result in results):
            # The common case, without the shares' bookkeeping: only exclusive devices (what
            # `from_results` would find, in the same order).
            exclusive = {DeviceID(result.driver, result.pool, result.device) for result in results
                         if not result.admin_access}
            return AllocatedState(self.exclusive.with_devices(exclusive), self.shared, self.consumed_capacity,
                                  self.share_counts)
        extra = AllocatedState.from_results(results, features)
        if not extra.shared:
            return AllocatedState(self.exclusive.with_devices(extra.exclusive), self.shared,
                                  self.consumed_capacity, self.share_counts)
        # New entries only for the devices these results touch (DeviceMap, DeviceSet): a fill-up
        # of shares commits thousands of times, and copying every device's totals each time
        # made it quadratic (half of a 1,213-node trace run once).
        consumed: dict[DeviceID, dict[str, Fraction]] = {}
        for device_id, totals in extra.consumed_capacity.items():
            mine = consumed[device_id] = dict(self.consumed_capacity.get(device_id, {}))
            for name, value in totals.items():
                mine[name] = mine.get(name, Fraction(0)) + value
        counts = {device_id: self.share_counts.get(device_id, 0) + count
                  for device_id, count in extra.share_counts.items()}
        return AllocatedState(self.exclusive.with_devices(extra.exclusive),
                              _device_set(self.shared).with_devices(extra.shared),
                              _changed(self.consumed_capacity, consumed), _changed(self.share_counts, counts))

    def minus(self, results: Iterable[claims.DeviceRequestAllocationResult], features: Features) -> AllocatedState:
        """This state after these allocation results were released (deallocation)."""
        gone = AllocatedState.from_results(results, features)
        consumed = dict(self.consumed_capacity)  # shallow, as in `plus`
        for device_id, totals in gone.consumed_capacity.items():
            mine = consumed[device_id] = dict(consumed.get(device_id, {}))
            for name, value in totals.items():
                mine[name] = mine.get(name, Fraction(0)) - value
        counts = dict(self.share_counts)
        for device_id, count in gone.share_counts.items():
            counts[device_id] = counts.get(device_id, 0) - count
            if counts[device_id] <= 0:
                del counts[device_id]
                consumed.pop(device_id, None)
        return AllocatedState(self.exclusive.without(gone.exclusive), DeviceSet(counts), DeviceMap(consumed),
                              DeviceMap(counts))


@dataclasses.dataclass(frozen=True)
class Snapshot:
    """Everything one allocation call reads, frozen."""

    classes: Mapping[str, model_classes.DeviceClass]
    slices: SliceIndex
    allocated: AllocatedState = dataclasses.field(default_factory=AllocatedState)
    # Taints from DeviceTaintRules, merged into the devices they select (the scheduler's job upstream).
    extra_taints: Mapping[DeviceID, tuple[taints.DeviceTaint, ...]] = dataclasses.field(default_factory=dict)
    # What callers derive from this very snapshot and ask again (allocation/gangs.py: each node's free
    # devices, once per snapshot rather than once per gang decision). Not part of its value; a snapshot
    # made from it (other allocations) starts with an empty one.
    memo: dict[object, object] = dataclasses.field(default_factory=dict, init=False, repr=False, compare=False)

    @classmethod
    def build(
        cls,
        *,
        device_classes: Sequence[model_classes.DeviceClass],
        resource_slices: Sequence[devices.ResourceSlice],
        allocated_claims: Iterable[claims.ResourceClaim] = (),
        features: Features,
    ) -> Snapshot:
        return cls(
            classes={c.metadata.name: c for c in device_classes},
            slices=SliceIndex(resource_slices),
            allocated=AllocatedState.from_claims(allocated_claims, features),
        )

    def with_allocations(self, results: Iterable[claims.AllocationResult], features: Features) -> Snapshot:
        """The snapshot after these allocations were written (same classes and slices)."""
        state = self.allocated.plus([r for a in results for r in a.devices.results], features)
        return type(self)(self.classes, self.slices, state, self.extra_taints)  # dataclasses.replace, faster

    def without_allocations(self, results: Iterable[claims.AllocationResult], features: Features) -> Snapshot:
        """The snapshot after these allocations were released (itself when there are none: no copy)."""
        released = [r for a in results for r in a.devices.results]
        if not released:
            return self
        state = self.allocated.minus(released, features)
        return dataclasses.replace(self, allocated=state)
