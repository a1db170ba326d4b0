"""Nodes the allocator cannot tell apart share its answers (allocation.equivalence, issue 31).

A claim proven not to fit one node is known not to fit its copies, and the reason found on one
is the reason on the others: the search runs once per kind of node, not once per node. The
signature must hold everything the answer depends on: every placement and every explanation is
the same as with no node compared at all.
"""

from __future__ import annotations

import dataclasses
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.builders import DRIVER, claim, class_, device, result, slice_, snapshot
from tests.scheduling import workloads
from tests.scheduling.objects import node_

from dralloc.allocation import equivalence, interruption
from dralloc.allocation.features import Features
from dralloc.allocation.pools import NodeView
from dralloc.scheduling import placement

GPU = class_("gpu", f'device.driver == "{DRIVER}"')


def _node_slice(name: str, models: list[str], *, per_device: bool = False) -> Any:
    devices = [device(f"gpu-{i}").attr("model", m) for i, m in enumerate(models)]
    if per_device:
        devices = [d.on_node(name) for d in devices]
        return slice_(f"{name}-gpus", pool=name, node=None, per_device=True, devices=devices)
    return slice_(f"{name}-gpus", pool=name, node=name, devices=devices)


def _signatures(slices: list[Any], allocated: tuple[Any, ...] = (), names: tuple[str, ...] = ("a", "b")) -> list[Any]:
    snap = snapshot(classes=[GPU], slices=slices, allocated=list(allocated))
    return [equivalence.signature(snap, NodeView(n, {"kubernetes.io/hostname": n}), Features()) for n in names]


def test_copies_with_other_names_are_equivalent() -> None:
    a, b = _signatures([_node_slice("a", ["x", "y"]), _node_slice("b", ["x", "y"])])
    assert a is not None and a == b


def test_a_device_in_use_sets_a_node_apart() -> None:
    held = claim("held").request("r", "gpu").allocated(result("r", "gpu-0", pool="a"))
    a, b = _signatures([_node_slice("a", ["x", "y"]), _node_slice("b", ["x", "y"])], (held,))
    assert a != b


def test_other_attributes_set_a_node_apart() -> None:
    a, b = _signatures([_node_slice("a", ["x", "y"]), _node_slice("b", ["x", "x"])])
    assert a != b


def test_a_device_that_names_its_node_is_not_compared() -> None:
    a, b = _signatures([_node_slice("a", ["x"], per_device=True), _node_slice("b", ["x"], per_device=True)])
    assert a is None and b is None


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), st.sampled_from(["first-fit", "binpack"]), st.sampled_from([None, "plain"]), st.booleans(),
       st.sampled_from([1, placement.LONG_WALK]))
def test_sharing_answers_between_equivalent_nodes_changes_no_placement_and_no_explanation(
        data: st.DataObject, policy: str, shares: str | None, network_pool: bool, long_walk: int) -> None:
    """With nodes compared from the first failure on (long_walk 1) or only after long walks, as without."""
    s = workloads.scenario(workloads.Drawn(data.draw), max_nodes=6, max_steps=12, shares=shares,
                           network_pool=network_pool)
    with mock.patch.object(placement, "LONG_WALK", long_walk):
        shared = workloads.run_placer(s, policy, explained=True)[0]
    with mock.patch.object(equivalence, "signature", return_value=None):
        alone = workloads.run_placer(s, policy, explained=True)[0]
    assert shared == alone


def test_a_claim_that_fits_no_copy_is_searched_only_until_the_walk_is_long() -> None:
    """Forty copies of an eight-GPU node, a claim for nine: the allocator runs on the first LONG_WALK nodes,
    then the nodes are compared and the other copies are known not to fit; the reason names all forty."""
    slices = [_node_slice(f"n{i:02d}", ["x"] * 8) for i in range(40)]
    placer = placement.Placer(node_list=[node_(f"n{i:02d}") for i in range(40)],
                              snapshot=snapshot(classes=[GPU], slices=slices), features=Features())
    item = placement.Item("big", claims=(claim("big").request("r", "gpu", count=9).build(),))
    decision = placer.place(item)
    assert isinstance(decision, placement.NoPlacement)
    assert placer.allocator_calls == placement.LONG_WALK
    assert decision.message().startswith("40 nodes (n00, n01, n02, ...): claim default/big, request r: 8 of 8")


def test_fitting_pods_never_compare_the_nodes() -> None:
    """Filling copies one by one, each walk proves at most one node unfit: the nodes are never compared."""
    slices = [_node_slice(f"n{i:02d}", ["x"]) for i in range(6)]
    snap = snapshot(classes=[GPU], slices=slices)
    placer = placement.Placer(node_list=[node_(f"n{i:02d}") for i in range(6)], snapshot=snap, features=Features())
    for i in range(6):
        item = placement.Item(f"c{i}", claims=(claim(f"c{i}").request("r", "gpu").build(),))
        decision = placer.place(item)
        assert isinstance(decision, placement.Placement)
        placer.commit(item, decision)
    assert equivalence.with_copies(snap, placer.views, Features(), build=False) is None


def test_the_next_placer_over_the_same_slices_knows_which_copies_do_not_fit() -> None:
    """The operator makes a Placer per pass: what signatures proved holds for any cluster state, so the
    next pass's Placer decides the same hopeless pod without calling the allocator, and explains it from
    the reasons found before; other DeviceClass objects start afresh."""
    slices = [_node_slice(f"n{i:02d}", ["x"] * 8) for i in range(40)]
    snap = snapshot(classes=[GPU], slices=slices)
    table = placement.NodeTable.of([node_(f"n{i:02d}") for i in range(40)])  # shared across passes, as Views does
    item = placement.Item("big", claims=(claim("big").request("r", "gpu", count=9).build(),))
    first = placement.Placer(node_list=table, snapshot=snap, features=Features())
    message = first.place(item).message()  # type: ignore[union-attr]
    second = placement.Placer(node_list=table, snapshot=snap, features=Features())
    decision = second.place(item)
    assert isinstance(decision, placement.NoPlacement)
    assert second.allocator_calls == 0
    assert decision.message() == message
    reclassed = dataclasses.replace(snap, classes={"gpu": GPU.build()})  # the same slices, a new DeviceClass
    third = placement.Placer(node_list=table, snapshot=reclassed, features=Features())
    third.place(item)
    assert third.allocator_calls > 0


def test_comparing_the_nodes_stops_with_the_decision_and_resumes_later() -> None:
    """The first comparison reads every node's pools: a decision out of CPU budget stops it (a tenant's pod may
    be what asked), nothing half-done is kept as the answer, and the next comparison completes it."""
    slices = [_node_slice(f"n{i:02d}", ["x"]) for i in range(4)]
    snap = snapshot(classes=[GPU], slices=slices)
    table = placement.NodeTable.of([node_(f"n{i:02d}") for i in range(4)])
    with interruption.interrupt_when(lambda: True), pytest.raises(interruption.Interrupted):
        equivalence.with_copies(snap, table.views, Features())
    assert equivalence.with_copies(snap, table.views, Features(), build=False) is None
    assert equivalence.with_copies(snap, table.views, Features()) == [True] * 4
