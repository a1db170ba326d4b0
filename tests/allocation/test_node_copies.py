"""Which nodes `equivalence.with_copies` compares (issue 31): a node whose own slices are like no other's has
no copy, and its pools are not read for the comparison; copies are still found as copies."""

from __future__ import annotations

from typing import Any
from unittest import mock

from tests.builders import DRIVER, class_, device, slice_, snapshot

from dralloc.allocation import equivalence
from dralloc.allocation.features import Features
from dralloc.allocation.pools import NodeView

GPU = class_("gpu", f'device.driver == "{DRIVER}"')


def _node_slice(name: str, models: list[str], uuid: str | None = None) -> Any:
    devices = [device(f"gpu-{i}").attr("model", m) for i, m in enumerate(models)]
    if uuid is not None:
        devices = [d.attr("uuid", f"{uuid}-{i}") for i, d in enumerate(devices)]
    return slice_(f"{name}-gpus", pool=name, node=name, devices=devices)


def _compared(slices: list[Any], names: list[str]) -> tuple[list[bool] | None, list[str]]:
    snap = snapshot(classes=[GPU], slices=slices)
    views = [NodeView(n, {"kubernetes.io/hostname": n}) for n in names]
    read: list[str] = []
    original = equivalence.content_key

    def spy(snapshot_: Any, node: NodeView, features: Features) -> Any:
        read.append(node.name)
        return original(snapshot_, node, features)

    with mock.patch.object(equivalence, "content_key", spy):
        found = equivalence.with_copies(snap, views, Features())
    return found, read


def test_copies_are_found_and_a_node_like_no_other_is_not_read() -> None:
    slices = [_node_slice("a", ["x", "y"]), _node_slice("b", ["x", "y"]), _node_slice("c", ["y", "x"]),
              _node_slice("d", ["x", "y"])]
    found, read = _compared(slices, ["a", "b", "c", "d"])
    assert found == [True, True, False, True]
    assert read == ["a", "b", "d"]


def test_devices_with_their_own_uuids_make_every_node_unique_without_reading_any() -> None:
    slices = [_node_slice(n, ["x", "y"], uuid=f"GPU-{n}") for n in "abc"]
    found, read = _compared(slices, ["a", "b", "c"])
    assert found == [False, False, False]
    assert read == []


def test_nodes_without_slices_of_their_own_are_compared_by_their_pools() -> None:
    """Slices for all nodes: every node sees the same pool, so all are copies."""
    shared = slice_("everywhere", pool="net", node=None, all_nodes=True, devices=[device("nic-0").attr("model", "x")])
    found, read = _compared([shared], ["a", "b"])
    assert found == [True, True]
    assert read == ["a", "b"]
