"""Partitionable devices: shared counters of a pool, checked, consumed and given back.

A pool's counter sets (from its `sharedCounters` slices) are used up by every
device of the pool that is already allocated (exclusively or shared, wherever
its slice is published) and by the devices picked earlier in this call. A device
fits when, after adding its consumption, no counter of the pool is over.

Unlike upstream, every reservation is undone when the device is rejected later
or the search backtracks, and counters are keyed by (driver, pool), never by
pool name alone (SPEC.md, surprises 6 and 10).
"""

from __future__ import annotations

from collections import defaultdict

from dralloc.allocation.pools import DeviceID, DeviceInfo, Pool, PoolID
from dralloc.allocation.snapshots import AllocatedState

CounterKey = tuple[str, str]  # (counter set, counter)

# DRADeviceCompatibilityGroups: what the devices drawing on one counter set have in common so
# far. None: no device yet; EMPTY: devices without groups (only such devices may join them);
# otherwise the groups every one of them declares.
Groups = frozenset[str] | None
EMPTY: frozenset[str] = frozenset({""})  # never a group name (names are DNS labels)


def _admits(current: Groups, groups: frozenset[str]) -> bool:
    if current is None:
        return True
    if not groups:
        return current is EMPTY
    return current is not EMPTY and bool(current & groups)


def _joined(current: Groups, groups: frozenset[str]) -> frozenset[str]:
    if current is None:
        return groups or EMPTY
    if current is EMPTY or not groups:
        return current
    return current & groups


class CounterLedger:
    """Counter availability for one allocation call."""

    def __init__(self, allocated: AllocatedState, *, compatibility_groups: bool = False) -> None:
        self._allocated = allocated
        self._available: dict[PoolID, dict[CounterKey, int]] = {}
        self._used: dict[PoolID, defaultdict[CounterKey, int]] = {}
        # Shared devices charge counters once, for their first share (existing or in this call).
        self._share_picks: defaultdict[DeviceID, int] = defaultdict(int)
        # DRADeviceCompatibilityGroups: per pool and counter set, the groups of the devices that
        # draw on it (allocated ones first); and per charged pick, what to restore on release.
        self._check_groups = compatibility_groups
        self._groups: dict[PoolID, dict[str, Groups]] = {}
        self._groups_undo: defaultdict[tuple[PoolID, DeviceID], list[list[tuple[str, Groups]]]] = defaultdict(list)

    def _pool_groups(self, pool: Pool) -> dict[str, Groups]:
        groups = self._groups.get(pool.id)
        if groups is None:
            groups = {}
            allocated = self._allocated
            for info in pool.counter_consumers:
                if info.id in allocated.exclusive or info.id in allocated.shared:
                    for set_name, names in info.groups:
                        groups[set_name] = _joined(groups.get(set_name), names)
            self._groups[pool.id] = groups
        return groups

    def _join_groups(self, pool: Pool, info: DeviceInfo) -> bool:
        """Join the device to its counter sets' groups if they admit it; on False nothing changed."""
        groups = self._pool_groups(pool)
        undo: list[tuple[str, Groups]] = []
        for set_name, names in info.groups:
            # A device consuming one set twice is checked against its own first entry, as upstream.
            current = groups.get(set_name)
            if not _admits(current, names):
                for name, previous in reversed(undo):
                    groups[name] = previous
                return False
            undo.append((set_name, current))
            groups[set_name] = _joined(current, names)
        self._groups_undo[(pool.id, info.id)].append(undo)
        return True

    def _leave_groups(self, pool: Pool, info: DeviceInfo) -> None:
        groups = self._groups[pool.id]
        for set_name, previous in reversed(self._groups_undo[(pool.id, info.id)].pop()):
            groups[set_name] = previous

    def _pool_available(self, pool: Pool) -> dict[CounterKey, int]:
        available = self._available.get(pool.id)
        if available is None:
            available = {
                (set_name, name): value
                for set_name, counters in pool.counter_sets.items()
                for name, value in counters.items()
            }
            allocated = self._allocated
            for info in pool.counter_consumers:
                if info.id in allocated.exclusive or info.id in allocated.shared:
                    for set_name, counters in info.consumes:
                        for name, value in counters:
                            key = (set_name, name)
                            if key in available:
                                available[key] -= value
            self._available[pool.id] = available
            self._used[pool.id] = defaultdict(int)
        return available

    def _charges(self, info: DeviceInfo, shared: bool) -> bool:
        if not shared:
            return True
        return info.id not in self._allocated.shared and self._share_picks[info.id] == 0

    def try_consume(self, pool: Pool, info: DeviceInfo, *, shared: bool) -> bool:
        """Reserve the device's counters if they fit; on False nothing was reserved."""
        available = self._pool_available(pool)
        charge = self._charges(info, shared)
        if charge:
            # Groups first, as upstream checks them before counters (both only when charging).
            if self._check_groups and not self._join_groups(pool, info):
                return False
            used = self._used[pool.id]
            fits = all((set_name, name) in available and used[(set_name, name)] + value <= available[(set_name, name)]
                       for set_name, counters in info.consumes for name, value in counters)
            # A counter already over (negative) blocks the whole pool, as upstream checks every counter.
            if not fits or any(v < 0 for v in available.values()):
                if self._check_groups:
                    self._leave_groups(pool, info)
                return False
            for set_name, counters in info.consumes:
                for name, value in counters:
                    used[(set_name, name)] += value
        if shared:
            self._share_picks[info.id] += 1
        return True

    def release(self, pool: Pool, info: DeviceInfo, *, shared: bool) -> None:
        if shared:
            self._share_picks[info.id] -= 1
        if self._charges(info, shared):
            used = self._used[pool.id]
            for set_name, counters in info.consumes:
                for name, value in counters:
                    used[(set_name, name)] -= value
            if self._check_groups:
                self._leave_groups(pool, info)


class RelaxedLedger(CounterLedger):
    """A ledger where some counter sets never run out; for explanations only, never for allocating.

    `relaxed` holds (pool, counter set) pairs; None relaxes every set. An explanation re-runs
    the search with it to learn whether (and which) counters are what rules out every combination.
    """

    UNLIMITED = 1 << 256  # nano-units: far beyond any sum of int64 quantities

    def __init__(self, allocated: AllocatedState, relaxed: frozenset[tuple[PoolID, str]] | None, *,
                 compatibility_groups: bool = False) -> None:
        super().__init__(allocated, compatibility_groups=compatibility_groups)
        self._relaxed = relaxed

    def _pool_available(self, pool: Pool) -> dict[CounterKey, int]:
        known = pool.id in self._available
        available = super()._pool_available(pool)
        if not known:
            for key in available:
                if self._relaxed is None or (pool.id, key[0]) in self._relaxed:
                    available[key] = self.UNLIMITED
        return available
