"""Gathering slices into the pools a node can allocate from (allocation.pools.SliceIndex)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from tests.builders import SliceBuilder, device, node, node_selector, slice_

from dralloc.allocation import errors
from dralloc.allocation.features import Features
from dralloc.allocation.pools import Pool, PoolID, SliceIndex

DRIVER = "gpu.example.com"


def gather(*slices: SliceBuilder, on: str = "node-1", labels: dict[str, str] | None = None,
           features: Features | None = None) -> tuple[Pool, ...]:
    return SliceIndex([s.build() for s in slices]).pools_for(node(on, labels), features or Features())


def names(pool: Pool) -> list[str]:
    return [info.id.device for info in pool.devices]


def only(pools: Sequence[Pool]) -> Pool:
    assert len(pools) == 1
    return pools[0]


class TestRelevance:
    def test_slice_of_another_node_is_left_out(self) -> None:
        """A slice with another node's nodeName contributes no pool."""
        assert gather(slice_("s1", node="node-2", devices=[device("d0")])) == ()

    def test_all_nodes_slice_counts_everywhere(self) -> None:
        """An allNodes slice is usable from any node."""
        assert names(only(gather(slice_("s1", all_nodes=True, devices=[device("d0")]), on="node-9"))) == ["d0"]

    def test_node_selector_slice_follows_labels(self) -> None:
        """A nodeSelector slice counts only for nodes its selector selects."""
        s = slice_("s1", nodes=node_selector(("zone", "In", ["a"])), devices=[device("d0")])
        assert (len(gather(s, labels={"zone": "a"})), len(gather(s, labels={"zone": "b"}))) == (1, 0)

    def test_slice_without_node_fields_is_skipped(self) -> None:
        """A slice with no node-selection field (an unknown future mode) is silently skipped."""
        assert gather(slice_("s1", node=None, devices=[device("d0")])) == ()

    def test_per_device_slice_counts_if_any_device_is_usable(self) -> None:
        """A perDeviceNodeSelection slice counts when one of its devices is usable from the node."""
        s = slice_("s1", per_device=True, devices=[device("d0").on_node("node-2"), device("d1").on_node("node-1")])
        assert names(only(gather(s))) == ["d0", "d1"]

    def test_per_device_slice_without_usable_device_is_skipped(self) -> None:
        """A perDeviceNodeSelection slice whose devices all belong to other nodes contributes nothing."""
        s = slice_("s1", per_device=True, devices=[device("d0").on_node("node-2")])
        assert gather(s) == ()

    def test_per_device_slice_skipped_with_partitionable_gate_off(self) -> None:
        """perDeviceNodeSelection needs DRAPartitionableDevices."""
        s = slice_("s1", per_device=True, devices=[device("d0").on_all_nodes()])
        assert gather(s, features=Features(partitionable_devices=False)) == ()

    def test_counter_slice_counts_for_every_node_in_1_36(self) -> None:
        """1.36: a slice with sharedCounters belongs to its pool whatever its node fields say."""
        pool = only(gather(slice_("s1", node="node-2", counters={"mem": {"memory": "8Gi"}}), on="node-1",
                           features=Features(release="1.36")))
        assert {name: set(counters) for name, counters in pool.counter_sets.items()} == {"mem": {"memory"}}

    def test_counter_slice_for_another_node_is_not_gathered_in_1_37(self) -> None:
        """1.37: a counter slice that does not select the node brings no pool of its own to it."""
        assert gather(slice_("s1", node="node-2", counters={"mem": {"memory": "8Gi"}}), on="node-1",
                      features=Features(release="1.37")) == ()

    def test_counter_sets_come_from_the_whole_pool_in_1_37(self) -> None:
        """1.37: when the node sees only the devices of a pool, its counter sets come from every slice."""
        pool = only(gather(
            slice_("counters", node="node-2", slice_count=2, counters={"mem": {"memory": "8Gi"}}),
            slice_("devices", node="node-1", slice_count=2, devices=[device("d0")]),
            on="node-1", features=Features(release="1.37")))
        assert (names(pool), pool.incomplete, set(pool.counter_sets)) == (["d0"], False, {"mem"})

    def test_counter_slice_skipped_with_partitionable_gate_off(self) -> None:
        """Without DRAPartitionableDevices a sharedCounters slice is not gathered."""
        assert gather(slice_("s1", counters={"mem": {"memory": "8Gi"}}),
                      features=Features(partitionable_devices=False)) == ()


class TestGenerations:
    def test_older_generation_is_dropped(self) -> None:
        """Within a pool only slices of the highest generation are kept."""
        pool = only(gather(slice_("old", generation=1, devices=[device("stale")]),
                           slice_("new", generation=2, devices=[device("fresh")])))
        assert (names(pool), pool.incomplete) == (["fresh"], False)

    def test_newer_generation_elsewhere_makes_pool_obsolete(self) -> None:
        """If another node already publishes a newer generation, this node's old slices are ignored entirely."""
        pools = gather(slice_("mine", generation=1, slice_count=2, devices=[device("d0")]),
                       slice_("theirs", node="node-2", generation=2, slice_count=2, devices=[device("d1")]))
        assert pools == ()


class TestCompleteness:
    def test_missing_slice_makes_pool_incomplete(self) -> None:
        """A pool with fewer slices than resourceSliceCount is incomplete."""
        assert only(gather(slice_("s1", slice_count=2, devices=[device("d0")]))).incomplete is True

    def test_multi_node_pool_complete_by_cluster_wide_count(self) -> None:
        """A pool spread over nodes is complete when all its slices exist somewhere; only this node's devices are used."""
        pool = only(gather(slice_("s1", slice_count=2, devices=[device("d0")]),
                           slice_("s2", node="node-2", slice_count=2, devices=[device("d1")])))
        assert (pool.incomplete, names(pool)) == (False, ["d0"])

    def test_slices_sorted_by_name_within_pool(self) -> None:
        """Devices come slice by slice in slice-name order, each slice in its own device order."""
        pool = only(gather(slice_("s-b", slice_count=2, devices=[device("b1"), device("b0")]),
                           slice_("s-a", slice_count=2, devices=[device("a1"), device("a0")])))
        assert names(pool) == ["a1", "a0", "b1", "b0"]


class TestValidity:
    def test_duplicate_device_names_make_pool_invalid(self) -> None:
        """A device name that repeats across the pool's slices makes the pool invalid."""
        pool = only(gather(slice_("s1", slice_count=2, devices=[device("d0")]),
                           slice_("s2", slice_count=2, devices=[device("d0")])))
        assert pool.invalid_reason == "duplicate device name d0"

    def test_duplicate_counter_set_names_make_pool_invalid(self) -> None:
        """A counter-set name defined twice in a pool makes it invalid."""
        pool = only(gather(slice_("s1", slice_count=2, counters={"mem": {"memory": "1Gi"}}),
                           slice_("s2", slice_count=2, counters={"mem": {"memory": "1Gi"}})))
        assert pool.invalid_reason == "duplicate counter set name mem"

    def test_unknown_counter_set_makes_pool_invalid(self) -> None:
        """A device consuming from a counter set the pool does not define makes the pool invalid."""
        pool = only(gather(slice_("s1", devices=[device("d0").consumes("nope", {"memory": "1Gi"})])))
        assert pool.invalid_reason is not None
        assert "unknown counter set nope" in pool.invalid_reason

    def test_unknown_counter_makes_pool_invalid(self) -> None:
        """A device consuming a counter its counter set does not define makes the pool invalid."""
        pool = only(gather(slice_("c", slice_count=2, counters={"mem": {"memory": "1Gi"}}),
                           slice_("d", slice_count=2, devices=[device("d0").consumes("mem", {"cores": "1"})])))
        assert pool.invalid_reason is not None
        assert "unknown counter cores" in pool.invalid_reason

    def test_counter_references_of_other_nodes_checked_too(self) -> None:
        """A bad counter reference on another node's slice of the pool invalidates the pool here as well."""
        pool = only(gather(slice_("c", slice_count=3, counters={"mem": {"memory": "1Gi"}}),
                           slice_("mine", slice_count=3, devices=[device("d0").consumes("mem", {"memory": "1Gi"})]),
                           slice_("theirs", node="node-2", slice_count=3,
                                  devices=[device("d1").consumes("nope", {"memory": "1Gi"})])))
        assert pool.invalid is True

    def test_incomplete_pool_is_not_also_invalid(self) -> None:
        """Validity is judged only for complete pools."""
        pool = only(gather(slice_("s1", slice_count=3, devices=[device("d0")]),
                           slice_("s2", slice_count=3, devices=[device("d0")])))
        assert (pool.incomplete, pool.invalid) == (True, False)


class TestOrder:
    def test_pools_sorted_by_driver_then_name(self) -> None:
        """Pools come sorted by (driver, pool name), whatever the slice order."""
        pools = gather(slice_("1", driver="b.example.com", pool="p1", devices=[device("x")]),
                       slice_("2", driver="a.example.com", pool="p2", devices=[device("x")]),
                       slice_("3", driver="a.example.com", pool="p1", devices=[device("x")]))
        assert [p.id for p in pools] == [PoolID("a.example.com", "p1"), PoolID("a.example.com", "p2"),
                                         PoolID("b.example.com", "p1")]

    def test_binding_condition_pools_sorted_last(self) -> None:
        """Pools holding a device with bindingConditions come after every pool without."""
        pools = gather(slice_("1", pool="a", devices=[device("x").binding(["ready"])]),
                       slice_("2", pool="z", devices=[device("y")]))
        assert [p.id.pool for p in pools] == ["z", "a"]

    def test_pools_cached_per_node_and_features(self) -> None:
        """Asking twice for the same node and features returns the same gathered pools."""
        index = SliceIndex([slice_("s1", devices=[device("d0")]).build()])
        assert index.pools_for(node(), Features()) is index.pools_for(node(), Features())


def test_malformed_node_selector_is_an_input_error() -> None:
    """A slice whose nodeSelector cannot be evaluated raises InvalidSliceError naming the slice and field."""
    with pytest.raises(errors.InvalidSliceError, match=r"ResourceSlice s1: spec.nodeSelector"):
        gather(slice_("s1", nodes=node_selector(("zone", "Bogus", ["a"])), devices=[device("d0")]))
