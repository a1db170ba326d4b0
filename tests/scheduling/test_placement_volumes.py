"""The Placer applies kube-scheduler's volume filters: where a pod's volumes let it go, and what binds them.

A bound volume's node affinity decides the node; a claim that does not exist keeps the pod off
every node with kube-scheduler's reason; for WaitForFirstConsumer claims dralloc picks a node
where they can bind, the next pod of the pass cannot take the same volume, and the placement
carries the plan (PVs to bind, claims to provision) for the writer: dralloc's own in scheduler
mode, kube-scheduler's in gate mode.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tests.scheduling.objects import node_
from tests.scheduling.test_volumes import affinity, claim, pod, storage_class, storage_of, uses, volume

from dralloc.allocation.features import Features
from dralloc.allocation.snapshots import Snapshot
from dralloc.model import pods
from dralloc.scheduling import placement

FEATURES = Features.from_gates({})
HOSTNAME = "kubernetes.io/hostname"


def _placer(objects: Sequence[Any]) -> placement.Placer:
    nodes = [node_(n, labels={HOSTNAME: n}) for n in ("n1", "n2")]
    snapshot = Snapshot.build(device_classes=[], resource_slices=[], features=FEATURES)
    return placement.Placer(node_list=nodes, snapshot=snapshot, features=FEATURES, storage=storage_of(objects))


def _place(placer: placement.Placer, p: pods.Pod) -> placement.Placement | placement.NoPlacement:
    item = placement.Item(name=p.metadata.name, pod=p)
    decision = placer.place(item)
    if isinstance(decision, placement.Placement):
        placer.commit(item, decision)
    return decision


def test_a_bound_volumes_node_affinity_decides_the_node() -> None:
    objects = [claim("data", volume="pv1"), volume("pv1", phase="Bound", claim_ref=("default", "data"),
                                                    node_affinity=affinity({HOSTNAME: ["n2"]}))]
    decision = _place(_placer(objects), pod("db", uses("data")))
    assert isinstance(decision, placement.Placement) and decision.node == "n2"


def test_a_claim_that_does_not_exist_keeps_the_pod_off_every_node() -> None:
    decision = _place(_placer([]), pod("db", uses("missing")))
    assert isinstance(decision, placement.NoPlacement)
    assert decision.reasons == (('persistentvolumeclaim "missing" not found', ("n1", "n2")),)


def test_a_node_a_waiting_volume_can_bind_to_is_picked_and_the_next_pod_cannot_take_it() -> None:
    objects = [storage_class(provisioner="kubernetes.io/no-provisioner"), claim("a"), claim("b"),
               volume("pv-n2", node_affinity=affinity({HOSTNAME: ["n2"]}))]
    placer = _placer(objects)
    first = _place(placer, pod("first", uses("a")))
    assert isinstance(first, placement.Placement) and first.node == "n2"
    second = _place(placer, pod("second", uses("b")))
    assert isinstance(second, placement.NoPlacement)
    assert {reason for reason, _ in second.reasons} == {"node(s) didn't find available persistent volumes to bind"}


def test_a_placement_carries_what_its_waiting_volumes_need_of_the_writer() -> None:
    """The plan: a pre-provisioned volume to bind to a claim, a claim to provision on the node."""
    objects = [storage_class(provisioner="kubernetes.io/no-provisioner"), claim("data"), claim("scratch", cls="dynamic"),
               storage_class("dynamic"), volume("pv-n2", node_affinity=affinity({HOSTNAME: ["n2"]}))]
    decision = _place(_placer(objects), pod("db", uses("data"), uses("scratch")))
    assert isinstance(decision, placement.Placement) and decision.node == "n2"
    assert decision.volumes is not None
    assert decision.volumes.static == ((("default", "data"), "pv-n2"),)
    assert decision.volumes.provision == (("default", "scratch"),)


def test_a_pod_without_waiting_volumes_has_no_plan() -> None:
    objects = [claim("data", volume="pv1"), volume("pv1", phase="Bound", claim_ref=("default", "data"))]
    decision = _place(_placer(objects), pod("db", uses("data")))
    assert isinstance(decision, placement.Placement) and decision.volumes is None
