"""Consolidation as the operator uses it (`scheduling.consolidating`): which bound pods may be moved
(`placed_pod`), and `plan_room`, which finds the moves and leaves the placer as it was, also when the
decision's budget interrupts it at any point.

The placer is trace-shaped (tests/scheduling/test_fragmentation_policy.py's builders): node-a has 2
GPUs, node-b 1; a filler takes node-b's GPU, the movable pod node-a's first, then the filler leaves.
A two-GPU pod fits nowhere; moving the movable pod to node-b makes room on node-a.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from tests.allocation.test_interruption import Counting
from tests.scheduling.test_fragmentation_policy import item, node, placer, task

from dralloc.allocation import interruption
from dralloc.model import claims, conversion, pods
from dralloc.scheduling import batching, consolidating, placement


def _cluster() -> tuple[placement.Placer, consolidating.Placed]:
    p = placer([node("node-a", gpus=2), node("node-b", gpus=1)], "fragmentation-aware")
    filler, mover = item(task("filler", 1)), item(task("mover", 1))
    assert mover.pod is not None
    marked = mover.pod.metadata.model_copy(update={"annotations": {consolidating.MOVABLE_ANNOTATION: "true"}})
    mover = dataclasses.replace(mover, pod=mover.pod.model_copy(update={"metadata": marked}))
    p.expect([filler, mover, item(task("big", 2))])
    placed = {}
    for it in (filler, mover):
        decision = p.place(it)
        assert isinstance(decision, placement.Placement)
        p.commit(it, decision)
        placed[it.name] = decision
    assert (placed["filler"].node, placed["mover"].node) == ("node-b", "node-a")
    p.release("node-b", placed["filler"].results, batching.as_bound(filler.pod, placed["filler"]))
    return p, consolidating.Placed(mover, placed["mover"])


def _consolidator(p: placement.Placer, entry: consolidating.Placed) -> consolidating.Consolidator:
    c = consolidating.Consolidator(p, 1, lambda it, where: batching.as_bound(it.pod, where), lambda e, where: None)
    c.placed(entry)
    return c


def _state(p: placement.Placer) -> tuple[object, ...]:
    """What the placer decides next: the two-GPU pod, and a one-GPU probe."""
    big = p.place(item(task("big", 2)), explain=False)
    probe = p.place(item(task("probe", 1)), explain=False)
    assert isinstance(probe, placement.Placement)
    return (isinstance(big, placement.Placement), probe.node,
            [r.device for a in probe.results for r in a.devices.results])


def test_plan_room_finds_the_move_and_undoes_it() -> None:
    p, mover = _cluster()
    before = _state(p)
    room = _consolidator(p, mover).plan_room(item(task("big", 2)))
    assert room is not None and room.placed.node == "node-a"
    assert [(entry.item.name, where.node) for entry, where in room.moves] == [("mover", "node-b")]
    assert _state(p) == before and before[0] is False


def test_make_room_keeps_the_moves() -> None:
    p, mover = _cluster()
    made = _consolidator(p, mover).make_room(item(task("big", 2)))
    assert made is not None and made.node == "node-a"
    assert mover.placement is not None and mover.placement.node == "node-b"


def test_an_interrupted_search_leaves_the_placer_as_it_was() -> None:
    """Stopped at each of its checkpoints in turn: the placer is as it was every time."""
    p, mover = _cluster()
    before = _state(p)
    stopped = 0
    for n in range(1, 10_000):
        check = Counting(n)
        try:
            with interruption.interrupt_when(check):
                room = _consolidator(p, mover).plan_room(item(task("big", 2)))
        except interruption.Interrupted:
            stopped += 1
            assert _state(p) == before, f"interrupted at checkpoint {n}"
            continue
        assert room is not None
        break
    assert stopped >= 2 and _state(p) == before


# ---- which bound pods may be moved ---------------------------------------------------------------

OWNER = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "rs-uid", "controller": True}]


def _pod(**changes: Any) -> pods.Pod:
    raw: dict[str, Any] = {
        "metadata": {"name": "m", "namespace": "ns", "uid": "m-uid", "annotations": {"dralloc.io/movable": "true"},
                     "ownerReferences": OWNER},
        "spec": {"nodeName": "node-a", "containers": [{"name": "c", "image": "i"}],
                 "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]},
        "status": {}}
    for path, value in changes.items():
        section, _, key = path.partition("__")
        if value is None:
            raw[section].pop(key, None)
        else:
            raw[section][key] = value
    return conversion.parse_as(pods.Pod, raw)


def _claim(reserved: tuple[str, ...] = ("m-uid",), allocated: bool = True) -> claims.ResourceClaim:
    status: dict[str, Any] = {"reservedFor": [{"resource": "pods", "name": "m", "uid": u} for u in reserved]}
    if allocated:
        status["allocation"] = {"devices": {"results": [
            {"request": "gpu", "driver": "gpu.example.com", "pool": "node-a", "device": "gpu-0"}]}}
    return conversion.parse_as(claims.ResourceClaim, {
        "metadata": {"name": "m-gpu", "namespace": "ns"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}},
        "status": status})


@pytest.mark.parametrize(("pod", "claims_", "movable"), [
    (_pod(), [_claim()], True),
    (_pod(metadata__annotations=None), [_claim()], False),  # not marked movable
    (_pod(metadata__annotations={"dralloc.io/movable": "false"}), [_claim()], False),
    (_pod(metadata__ownerReferences=None), [_claim()], False),  # a bare pod would be lost
    (_pod(metadata__ownerReferences=[{**OWNER[0], "controller": False}]), [_claim()], False),
    (_pod(spec__nodeName=None), [_claim()], False),  # not placed
    (_pod(metadata__deletionTimestamp="2026-12-04T00:00:00Z"), [_claim()], False),  # already going
    (_pod(spec__schedulingGroup={"podGroupName": "g"}), [_claim()], False),  # a gang member
    (_pod(spec__volumes=[{"name": "d", "persistentVolumeClaim": {"claimName": "d"}}]), [_claim()], False),
    (_pod(spec__resourceClaims=[{"name": "gpu", "resourceClaimName": "shared"}]), [_claim()], False),
    (_pod(), [_claim(reserved=("m-uid", "other"))], False),  # shared with another pod
    (_pod(), [_claim(allocated=False)], False),
    (_pod(), [], False),  # its claim not in the view
    (_pod(status__extendedResourceClaimStatus={"resourceClaimName": "m-extended-resources-x"}), [_claim()],
     False),  # DRA extended resources: their claim is made for the node chosen
])
def test_placed_pod(pod: pods.Pod, claims_: list[claims.ResourceClaim], movable: bool) -> None:
    entry = consolidating.placed_pod(pod, claims_)
    assert (entry is not None) is movable
    if entry is not None:
        assert entry.placement is not None and entry.placement.node == "node-a"
        assert entry.item.pod is not None and entry.item.pod.spec.node_name is None  # re-created: no node
        assert entry.item.claims[0].status.allocation is None  # asked for again
        assert entry.item.name == "ns/m"
