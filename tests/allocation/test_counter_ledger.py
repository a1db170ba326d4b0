"""Shared counters of partitionable devices (allocation.counters.CounterLedger)."""

from __future__ import annotations

from tests.builders import DRIVER, DeviceBuilder, SliceBuilder, device, node, slice_

from dralloc.allocation.counters import CounterLedger
from dralloc.allocation.features import Features
from dralloc.allocation.pools import DeviceID, DeviceInfo, Pool, SliceIndex
from dralloc.allocation.snapshots import AllocatedState


def pool_of(*devices: DeviceBuilder, memory: str = "8Gi", driver: str = DRIVER) -> Pool:
    slices: list[SliceBuilder] = [
        slice_("counters", driver=driver, slice_count=2, counters={"mem": {"memory": memory}}),
        slice_("devices", driver=driver, slice_count=2, devices=list(devices)),
    ]
    (pool,) = SliceIndex([s.build() for s in slices]).pools_for(node(), Features())
    return pool


def part(name: str, memory: str) -> DeviceBuilder:
    return device(name).consumes("mem", {"memory": memory})


def dev(pool: Pool, name: str) -> DeviceInfo:
    (found,) = [info for info in pool.devices if info.id.device == name]
    return found


def held(*names: str, shared: bool = False) -> AllocatedState:
    ids = frozenset(DeviceID(DRIVER, "pool-1", n) for n in names)
    return AllocatedState(shared=ids) if shared else AllocatedState(exclusive=ids)


def test_device_fits_within_the_counters() -> None:
    """A device whose consumption fits the pool's counters is reserved."""
    pool = pool_of(part("a", "4Gi"))
    assert CounterLedger(AllocatedState()).try_consume(pool, dev(pool, "a"), shared=False) is True


def test_reservations_add_up() -> None:
    """Two reservations together may not exceed the counter."""
    pool = pool_of(part("a", "6Gi"), part("b", "4Gi"))
    ledger = CounterLedger(AllocatedState())
    ledger.try_consume(pool, dev(pool, "a"), shared=False)
    assert ledger.try_consume(pool, dev(pool, "b"), shared=False) is False


def test_release_gives_the_counters_back() -> None:
    """After release, the released amount is available again."""
    pool = pool_of(part("a", "6Gi"), part("b", "4Gi"))
    ledger = CounterLedger(AllocatedState())
    ledger.try_consume(pool, dev(pool, "a"), shared=False)
    ledger.release(pool, dev(pool, "a"), shared=False)
    assert ledger.try_consume(pool, dev(pool, "b"), shared=False) is True


def test_failed_reservation_reserves_nothing() -> None:
    """A device that does not fit leaves the counters as they were."""
    pool = pool_of(part("big", "9Gi"), part("all", "8Gi"))
    ledger = CounterLedger(AllocatedState())
    ledger.try_consume(pool, dev(pool, "big"), shared=False)
    assert ledger.try_consume(pool, dev(pool, "all"), shared=False) is True


def test_allocated_devices_use_up_counters() -> None:
    """Devices already allocated (exclusively) consume the pool's counters."""
    pool = pool_of(part("a", "6Gi"), part("b", "4Gi"))
    assert CounterLedger(held("a")).try_consume(pool, dev(pool, "b"), shared=False) is False


def test_shared_allocations_use_up_counters() -> None:
    """Devices with existing shares consume the pool's counters too."""
    pool = pool_of(part("a", "6Gi"), part("b", "4Gi"))
    assert CounterLedger(held("a", shared=True)).try_consume(pool, dev(pool, "b"), shared=False) is False


def test_overdrawn_counter_blocks_the_whole_pool() -> None:
    """When existing allocations already overdraw a counter, no device of the pool fits, even one consuming nothing of it."""
    pool = pool_of(part("a", "6Gi"), part("b", "6Gi"), device("c").consumes("mem", {"memory": "0"}))
    assert CounterLedger(held("a", "b")).try_consume(pool, dev(pool, "c"), shared=False) is False


def test_shared_device_charges_only_its_first_share() -> None:
    """A shared device's counters are charged once, however many shares it gets in the call."""
    pool = pool_of(part("s", "6Gi").shared(), part("b", "2Gi"))
    ledger = CounterLedger(AllocatedState())
    ledger.try_consume(pool, dev(pool, "s"), shared=True)
    ledger.try_consume(pool, dev(pool, "s"), shared=True)
    assert ledger.try_consume(pool, dev(pool, "b"), shared=False) is True


def test_releasing_a_later_share_keeps_the_charge() -> None:
    """Giving back the second share keeps the counters of the first one reserved."""
    pool = pool_of(part("s", "6Gi").shared(), part("b", "4Gi"))
    ledger = CounterLedger(AllocatedState())
    ledger.try_consume(pool, dev(pool, "s"), shared=True)
    ledger.try_consume(pool, dev(pool, "s"), shared=True)
    ledger.release(pool, dev(pool, "s"), shared=True)
    assert ledger.try_consume(pool, dev(pool, "b"), shared=False) is False


def test_releasing_every_share_frees_the_counters() -> None:
    """After all shares of the call are given back, the counters are free again."""
    pool = pool_of(part("s", "6Gi").shared(), part("b", "4Gi"))
    ledger = CounterLedger(AllocatedState())
    ledger.try_consume(pool, dev(pool, "s"), shared=True)
    ledger.try_consume(pool, dev(pool, "s"), shared=True)
    ledger.release(pool, dev(pool, "s"), shared=True)
    ledger.release(pool, dev(pool, "s"), shared=True)
    assert ledger.try_consume(pool, dev(pool, "b"), shared=False) is True


def test_device_already_shared_is_not_charged_again() -> None:
    """A device that already has shares paid its counters; a new share charges nothing more."""
    pool = pool_of(part("s", "6Gi").shared(), part("b", "2Gi"))
    ledger = CounterLedger(held("s", shared=True))
    ledger.try_consume(pool, dev(pool, "s"), shared=True)
    assert ledger.try_consume(pool, dev(pool, "b"), shared=False) is True


def test_pools_of_two_drivers_with_one_name_do_not_share_counters() -> None:
    """Counters are keyed by (driver, pool), never by pool name alone (an upstream bug)."""
    one = pool_of(part("a", "8Gi"), driver="one.example.com")
    two = pool_of(part("a", "8Gi"), driver="two.example.com")
    ledger = CounterLedger(AllocatedState())
    ledger.try_consume(one, dev(one, "a"), shared=False)
    assert ledger.try_consume(two, dev(two, "a"), shared=False) is True
