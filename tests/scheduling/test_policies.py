"""Placer policies: first-fit (node name), binpack (most-used node first), spread (least used first).

Use is the fraction of a node's devices in use; ties break by node name. Every node in these
clusters has the same number of devices unless a test says otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from tests.builders import claim, class_, device, result, slice_, snapshot
from tests.scheduling.objects import node_, placed_nodes, pod_

from dralloc.allocation.features import Features
from dralloc.scheduling import placement

FEATURES = Features()


def cluster(used: dict[str, int], *, per_node: int = 4, labels: dict[str, dict[str, str]] | None = None,
            policy: str = "first-fit", sizes: dict[str, int] | None = None) -> placement.Placer:
    """Nodes named by `used`, each with a node-local pool of `per_node` GPUs, `used[name]` of them in use."""
    slices, allocated = [], []
    for name, count in used.items():
        size = (sizes or {}).get(name, per_node)
        slices.append(slice_(name, pool=name, node=name, devices=[device(f"gpu-{i}") for i in range(size)]))
        if count:
            allocated.append(claim(f"old-{name}").request("r", "gpu", count=count).allocated(
                *[result("r", f"gpu-{i}", pool=name) for i in range(count)]))
    snap = snapshot(classes=[class_("gpu")], slices=slices, allocated=allocated)
    node_list = [node_(name, labels=(labels or {}).get(name, {})) for name in reversed(list(used))]
    return placement.Placer(node_list=node_list, snapshot=snap, features=FEATURES, policy=policy)


def one_gpu(name: str, count: int = 1) -> placement.Item:
    return placement.Item(name, claims=(claim(name).request("r", "gpu", count=count).build(),))


def fill(placer: placement.Placer, names: Sequence[str], count: int = 1) -> list[str | None]:
    return placed_nodes(placer, [one_gpu(name, count) for name in names])


class TestChoice:
    def test_first_fit_takes_first_node_by_name(self) -> None:
        """first-fit ignores use: the first node by name where the claim fits."""
        placed = cluster({"a": 1, "b": 2, "c": 0}).place(one_gpu("x"))
        assert isinstance(placed, placement.Placement) and placed.node == "a"

    def test_binpack_prefers_most_used_node(self) -> None:
        """binpack takes the node with the largest share of devices in use."""
        placed = cluster({"a": 1, "b": 2, "c": 0}, policy="binpack").place(one_gpu("x"))
        assert isinstance(placed, placement.Placement) and placed.node == "b"

    def test_spread_prefers_least_used_node(self) -> None:
        """spread takes the node with the smallest share of devices in use."""
        placed = cluster({"a": 1, "b": 2, "c": 0}, policy="spread").place(one_gpu("x"))
        assert isinstance(placed, placement.Placement) and placed.node == "c"

    def test_binpack_tie_breaks_by_name(self) -> None:
        """Two equally used nodes: binpack takes the first by name."""
        placed = cluster({"c": 2, "b": 2, "a": 1}, policy="binpack").place(one_gpu("x"))
        assert isinstance(placed, placement.Placement) and placed.node == "b"

    def test_spread_tie_breaks_by_name(self) -> None:
        """Two equally idle nodes: spread takes the first by name."""
        placed = cluster({"c": 0, "b": 0, "a": 1}, policy="spread").place(one_gpu("x"))
        assert isinstance(placed, placement.Placement) and placed.node == "b"

    def test_binpack_skips_most_used_node_without_room(self) -> None:
        """The most used node is full: binpack takes the next most used node."""
        placed = cluster({"a": 1, "b": 4, "c": 2}, policy="binpack").place(one_gpu("x", count=2))
        assert isinstance(placed, placement.Placement) and placed.node == "c"

    def test_binpack_skips_most_used_node_failing_node_fit(self) -> None:
        """A pod whose nodeSelector excludes the most used node goes to the next most used one."""
        placer = cluster({"a": 0, "b": 3, "c": 1}, policy="binpack", labels={"a": {"z": "1"}, "c": {"z": "1"}})
        item = placement.Item("p", claims=(claim("x").request("r", "gpu").build(),),
                              pod=pod_("p", node_selector={"z": "1"}))
        placed = placer.place(item)
        assert isinstance(placed, placement.Placement) and placed.node == "c"

    def test_binpack_orders_by_use_before_placing(self) -> None:
        """binpack compares use before the item is placed: 5 of 10 in use beats 0 of 2, though b would end fuller."""
        placed = cluster({"a": 5, "b": 0}, policy="binpack", sizes={"a": 10, "b": 2}).place(one_gpu("x", count=2))
        assert isinstance(placed, placement.Placement) and placed.node == "a"


class TestEvolution:
    def test_binpack_fills_one_node_before_the_next(self) -> None:
        """Commits raise a node's use: binpack keeps filling it until it is full."""
        assert fill(cluster({"a": 0, "b": 0, "c": 0}, per_node=2, policy="binpack"), "wxyz") == ["a", "a", "b", "b"]

    def test_spread_rotates_over_nodes(self) -> None:
        """Commits raise a node's use: spread moves on to the least used node each time."""
        assert fill(cluster({"a": 0, "b": 0, "c": 0}, per_node=2, policy="spread"), "wxyz") == ["a", "b", "c", "a"]

    def test_release_lowers_use_for_spread(self) -> None:
        """After a release, spread sees the freed node as the least used."""
        placer = cluster({"a": 1, "b": 1, "c": 2}, policy="spread")
        item = one_gpu("x")
        first = placer.place(item)
        assert isinstance(first, placement.Placement) and first.node == "a"
        placer.commit(item, first)
        placer.release(first.node, first.results, None)
        placer.release("c", [claim("old-c").request("r", "gpu", count=2).allocated(
            result("r", "gpu-0", pool="c"), result("r", "gpu-1", pool="c")).build().status.allocation], None)
        placed = placer.place(one_gpu("y"))
        assert isinstance(placed, placement.Placement) and placed.node == "c"

    def test_full_cluster_places_nothing_under_any_policy(self) -> None:
        """When every device is taken, binpack and spread give NoPlacement too."""
        for policy in ("binpack", "spread"):
            decision = cluster({"a": 2, "b": 2}, per_node=2, policy=policy).place(one_gpu("x"))
            assert isinstance(decision, placement.NoPlacement), policy


class TestPolicyNames:
    def test_unknown_policy_raises_value_error(self) -> None:
        """An unknown policy is refused when the Placer is made, naming it and the known ones."""
        with pytest.raises(ValueError, match=r"unknown policy 'best-fit'.*first-fit, binpack, spread"):
            cluster({"a": 0}, policy="best-fit")

    def test_known_policies(self) -> None:
        """The Placer knows exactly first-fit, binpack, spread and fragmentation-aware."""
        assert placement.POLICIES == ("first-fit", "binpack", "spread", "fragmentation-aware")
