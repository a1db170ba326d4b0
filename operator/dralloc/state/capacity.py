"""The capacity gauges: what DRA devices the cluster has, what is taken, what is free.

kube-state-metrics has no ResourceSlice or ResourceClaim families yet, so dralloc exports
the capacity view from its own state, with closed label sets whose size does not grow with
the number of nodes (pools are one per node: they are counted, never named):

- devices per driver and DeviceClass by state (total, allocated, free, tainted) and by taint
  effect: free means not allocated, without a NoSchedule or NoExecute taint, and with what it
  consumes of shared counters still left in its pool (a whole GPU is not free once one of its
  partitions is allocated);
- pools per driver and DeviceClass by how many free devices of the class they have, in
  buckets (FREE_BUCKETS): the spread a pod asking for N devices meets;
- shared counters per driver, counter set and counter (total and used, summed over pools);
- consumable capacity per driver, DeviceClass and capacity name (total and used) of the
  devices that allow multiple allocations;
- claims by state (CLAIM_STATES).

A device's classes (a CEL evaluation per device and class), its taint effects, the pools
and their counter sets change only with ResourceSlices, DeviceClasses and DeviceTaintRules:
`Inventory.build` counts them once per such change (the classes of unchanged slices' devices
are reused unless a DeviceClass changed), and a scrape only visits the allocated devices.

Plain Python, no I/O: the handlers call it on the event loop.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Generator, Iterable
from fractions import Fraction

from dralloc.allocation import selectors
from dralloc.allocation.pools import DeviceID, DeviceInfo, PoolID
from dralloc.allocation.snapshots import AllocatedState, Snapshot
from dralloc.model import claims as model_claims
from dralloc.model import pods as model_pods

Labels = tuple[str, ...]
Series = list[tuple[Labels, float]]

DEVICE_STATES = ("total", "allocated", "free", "tainted")
TAINT_EFFECTS = ("NoSchedule", "NoExecute", "None")
BLOCKING = frozenset({"NoSchedule", "NoExecute"})  # effects that keep new claims off a device
# Upper bounds (inclusive) of the free-device buckets of dralloc_pools; the last is open.
FREE_BUCKETS = (("0", 0), ("1", 1), ("2-3", 3), ("4-7", 7), ("8-15", 15), ("16+", None))
CLAIM_STATES = ("pending", "allocated", "reserved", "deallocating")
NO_CLASS = "none"  # devices no DeviceClass selects
NANO = 10**9
CEL_STEP = 2000  # devices classified between two pauses of Inventory.build_steps


@dataclasses.dataclass(frozen=True)
class Device:
    id: DeviceID
    pool: PoolID
    classes: tuple[str, ...]
    effects: frozenset[str]  # of every taint in effect: its slice's and the DeviceTaintRules'
    own_effects: frozenset[str]  # of its slice's taints
    consumes: tuple[tuple[str, tuple[tuple[str, int], ...]], ...]  # (counter set, ((counter, nanos), ...))
    capacity: tuple[tuple[str, Fraction], ...]  # consumable capacity (allowMultipleAllocations devices only)


SliceKey = tuple[str, str, int]  # (name, resourceVersion, generation): a new one for every change


@dataclasses.dataclass
class Inventory:
    """What does not depend on claims, counted once: a scrape then only visits the allocated devices."""

    by_slice: dict[SliceKey, tuple[Device, ...]]
    index: dict[DeviceID, Device]
    devices: dict[Labels, float]  # (driver, class, state) for total and tainted; "free" before allocations
    effects: dict[Labels, float]  # (driver, class, effect)
    free_in_pool: dict[tuple[str, str, PoolID], int]  # free before allocations, per (driver, class, pool)
    capacity: dict[Labels, float]  # (driver, class, capacity) -> total
    # (driver, counter set) -> counter -> total nano-units, summed over the pools that define the set.
    counters: dict[tuple[str, str], dict[str, int]]
    # Per pool and counter set: its counters' nano-units, and the devices that consume from it.
    pool_counters: dict[tuple[PoolID, str], dict[str, int]] = dataclasses.field(default_factory=dict)
    consumers: dict[tuple[PoolID, str], list[Device]] = dataclasses.field(default_factory=dict)

    @classmethod
    def build(cls, snapshot: Snapshot, previous: Inventory | None = None) -> Inventory:
        """The devices of each pool's newest generation, with their classes and taint effects.

        `previous` (built with the same DeviceClasses) lends the devices of every slice it saw
        unchanged, their taint effects looked up again: one slice's update, or a DeviceTaintRule's,
        costs no CEL but that slice's.
        """
        steps = cls.build_steps(snapshot, previous)
        while True:
            try:
                next(steps)
            except StopIteration as done:
                inventory: Inventory = done.value
                return inventory

    @classmethod
    def build_steps(cls, snapshot: Snapshot, previous: Inventory | None = None
                    ) -> Generator[None, None, Inventory]:
        """`build`, pausing (a bare yield) after every CEL_STEP devices classified: the caller on an
        event loop lets other work run in between (a DeviceClass change at 5,000 nodes is seconds of CEL)."""
        classified = 0
        newest: dict[PoolID, int] = {}
        for s in snapshot.slices.slices:
            pool = PoolID(s.spec.driver, s.spec.pool.name)
            newest[pool] = max(newest.get(pool, s.spec.pool.generation), s.spec.pool.generation)
        known = previous.by_slice if previous is not None else {}
        inventory = cls({}, {}, {}, {}, {}, {}, {})
        for s in snapshot.slices.slices:
            pool = PoolID(s.spec.driver, s.spec.pool.name)
            if s.spec.pool.generation != newest[pool]:
                continue  # being replaced: the allocator ignores it too
            for counter_set in s.spec.shared_counters:
                totals = inventory.counters.setdefault((s.spec.driver, counter_set.name), {})
                in_pool = inventory.pool_counters.setdefault((pool, counter_set.name), {})
                for name, counter in counter_set.counters.items():
                    totals[name] = totals.get(name, 0) + counter.value.nanos
                    in_pool[name] = in_pool.get(name, 0) + counter.value.nanos
            key = (s.metadata.name, s.metadata.resource_version or "", s.spec.pool.generation)
            found = known.get(key)
            if found is None:
                found = tuple(_device(snapshot, info, pool) for info in snapshot.slices.device_infos(s))
                classified += len(found)
                if classified >= CEL_STEP:
                    classified = 0
                    yield
            elif snapshot.extra_taints or any(d.effects != d.own_effects for d in found):
                # The DeviceTaintRules may have changed since: their effects are looked up again.
                found = tuple(dataclasses.replace(d, effects=d.own_effects | {
                    t.effect for t in snapshot.extra_taints.get(d.id, ())}) for d in found)
            inventory.by_slice[key] = found
            for device in found:
                inventory._count(device)
        return inventory

    def _count(self, device: Device) -> None:
        self.index[device.id] = device
        driver, unblocked = device.id.driver, not device.effects & BLOCKING
        for name in device.classes:
            _add(self.devices, (driver, name, "total"))
            _add(self.devices, (driver, name, "allocated"), 0.0)
            _add(self.devices, (driver, name, "free"), 1.0 if unblocked else 0.0)
            _add(self.devices, (driver, name, "tainted"), 1.0 if device.effects else 0.0)
            for effect in TAINT_EFFECTS:  # every effect's series exists, 0 or not (closed label set)
                _add(self.effects, (driver, name, effect), 1.0 if effect in device.effects else 0.0)
            key = (driver, name, device.pool)
            self.free_in_pool[key] = self.free_in_pool.get(key, 0) + unblocked
            for cap, total in device.capacity:
                _add(self.capacity, (driver, name, cap), float(total))
        for set_name, _amounts in device.consumes:
            self.consumers.setdefault((device.pool, set_name), []).append(device)


def _device(snapshot: Snapshot, info: DeviceInfo, pool: PoolID) -> Device:
    classes = tuple(name for name, c in snapshot.classes.items() if selectors.in_class(info, c))
    own = frozenset(t.effect for t in info.taints)
    effects = own | {t.effect for t in snapshot.extra_taints.get(info.id, ())}
    capacity = tuple((name, c.value.value) for name, c in info.capacity.items()) if info.allow_multiple else ()
    return Device(info.id, pool, classes or (NO_CLASS,), effects, own, info.consumes, capacity)


def _bucket(free: int) -> str:
    for name, bound in FREE_BUCKETS:
        if bound is None or free <= bound:
            return name
    raise AssertionError("unreachable: the last bucket is open")


def _add(out: dict[Labels, float], key: Labels, value: float = 1.0) -> None:
    out[key] = out.get(key, 0.0) + value


def device_gauges(inventory: Inventory, allocated: AllocatedState) -> dict[str, Series]:
    """The device, pool, counter and capacity gauges for the allocated state now: the inventory's
    counts, less what the allocated devices take (a visit per allocated device, none per free one)."""
    devices = dict(inventory.devices)
    free_in_pool = dict(inventory.free_in_pool)
    used: dict[tuple[str, str, str], float] = {}
    used_in_pool: dict[tuple[PoolID, str], dict[str, int]] = {}
    capacity_used = dict.fromkeys(inventory.capacity, 0.0)
    for device_id in set(allocated.exclusive) | allocated.shared:
        device = inventory.index.get(device_id)
        if device is None:
            continue  # allocated on a slice that is gone or replaced
        driver, unblocked = device_id.driver, not device.effects & BLOCKING
        consumed = allocated.consumed_capacity.get(device_id, {})
        whole = device_id in allocated.exclusive
        for name in device.classes:
            devices[(driver, name, "allocated")] += 1
            if unblocked:
                devices[(driver, name, "free")] -= 1
                free_in_pool[(driver, name, device.pool)] -= 1
            for cap, total in device.capacity:
                capacity_used[(driver, name, cap)] += float(total if whole else min(consumed.get(cap, Fraction(0)), total))
        for set_name, amounts in device.consumes:
            in_pool = used_in_pool.setdefault((device.pool, set_name), {})
            for counter, nanos in amounts:
                key = (driver, set_name, counter)
                used[key] = used.get(key, 0.0) + nanos
                in_pool[counter] = in_pool.get(counter, 0) + nanos
    for device in _counters_short(inventory, allocated, used_in_pool):
        for name in device.classes:
            devices[(device.id.driver, name, "free")] -= 1
            free_in_pool[(device.id.driver, name, device.pool)] -= 1
    pools: dict[Labels, float] = {}
    for (driver, name, _), free in free_in_pool.items():
        for bucket, _bound in FREE_BUCKETS:  # every bucket's series exists, 0 or not
            _add(pools, (driver, name, bucket), 0.0)
        _add(pools, (driver, name, _bucket(free)))
    counters: Series = []
    for (driver, set_name), totals in sorted(inventory.counters.items()):
        for counter, nanos_total in sorted(totals.items()):
            counters.append(((driver, set_name, counter, "total"), nanos_total / NANO))
            counters.append(((driver, set_name, counter, "used"), used.get((driver, set_name, counter), 0.0) / NANO))
    capacity: Series = []
    for (driver, name, cap), amount in sorted(inventory.capacity.items()):
        capacity.append(((driver, name, cap, "total"), amount))
        capacity.append(((driver, name, cap, "used"), capacity_used[(driver, name, cap)]))
    return {"devices": list(devices.items()), "device_taints": list(inventory.effects.items()),
            "pools": list(pools.items()), "counters": counters, "capacity": capacity}


def _counters_short(inventory: Inventory, allocated: AllocatedState,
                    used_in_pool: dict[tuple[PoolID, str], dict[str, int]]) -> set[Device]:
    """The unallocated, unblocked devices that cannot be allocated now because what they consume of a shared
    counter set is no longer left (a whole GPU whose partitions are partly allocated): not free, as the
    allocator sees them. Only the counter sets something allocated consumes from are visited."""
    short: set[Device] = set()
    for key in used_in_pool:
        for device in inventory.consumers.get(key, ()):
            if (device in short or device.effects & BLOCKING or device.id in allocated.exclusive
                    or device.id in allocated.shared):
                continue
            for set_name, amounts in device.consumes:
                totals = inventory.pool_counters.get((device.pool, set_name), {})
                taken = used_in_pool.get((device.pool, set_name), {})
                if any(taken.get(counter, 0) + nanos > totals.get(counter, 0) for counter, nanos in amounts):
                    short.add(device)
                    break
    return short


def claim_state(claim: model_claims.ResourceClaim) -> str:
    """pending: no allocation; reserved: allocated and in use by someone (reservedFor); allocated:
    allocated and in use by nobody (deallocated next, or its consumer is still to be recorded);
    deallocating: deleted while allocated (the delete-protection finalizer holds it until then)."""
    allocation = claim.status.allocation
    if allocation is None:
        return "pending"
    if claim.metadata.deletion_timestamp:
        return "deallocating"
    return "reserved" if claim.status.reserved_for else "allocated"


def claim_gauges(claims: Iterable[model_claims.ResourceClaim]) -> Series:
    counts = dict.fromkeys(CLAIM_STATES, 0.0)
    for claim in claims:
        counts[claim_state(claim)] += 1
    return [((state,), value) for state, value in counts.items()]


def claims_missing(pod: model_pods.Pod, claim_keys: Collection[tuple[str, str]]) -> bool:
    """Whether a claim the pod needs is not in the view: its template's claim not created (or not recorded in
    pod.status.resourceClaimStatuses) yet, or a claim it names absent. `claim_keys`: (namespace, name)."""
    namespace = pod.metadata.namespace or "default"
    recorded = {s.name: s.resource_claim_name for s in pod.status.resource_claim_statuses}
    for entry in pod.spec.resource_claims:
        name = entry.resource_claim_name or recorded.get(entry.name)
        if not name or (namespace, name) not in claim_keys:
            return True
    return False
