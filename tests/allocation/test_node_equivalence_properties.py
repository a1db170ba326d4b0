"""Equal signatures mean equal answers (allocation.equivalence, issue 31).

The placer skips a node whose signature is known not to fit and reuses the reason found on a
copy; that is only right if the allocator's answer on a node depends on nothing the signature
leaves out. Here a random cluster (taints, shares, incomplete pools, all-nodes pools, devices in
use, admin access, firstAvailable, constraints) gets a twin of node-1: every pool node-1 has to
itself copied under other names for node-3, with the same devices in use. Whenever the two
signatures are equal, `allocate` must answer the same on both nodes: the same outcome, the same
devices (up to the pools' names) and the same reasons.
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import event, given, settings
from tests.builders import ClaimBuilder, SliceBuilder, built, snapshot
from tests.strategies import Cluster, clusters

from dralloc import allocation
from dralloc.allocation import equivalence, errors, outcomes
from dralloc.allocation.pools import NodeView

TWIN = NodeView("node-3", {"zone": "z1"})
SUFFIX = "-twin"


def _own_pools(cluster: Cluster) -> set[str]:
    """Pools whose every slice is pinned to node-1."""
    where: dict[str, set[str | None]] = {}
    for s in cluster.slices:
        spec = s.raw()["spec"]
        where.setdefault(spec["pool"]["name"], set()).add(spec.get("nodeName"))
    return {pool for pool, nodes in where.items() if nodes == {"node-1"}}


def _twinned(cluster: Cluster) -> tuple[list[SliceBuilder], list[ClaimBuilder]]:
    own = _own_pools(cluster)
    slices = list(cluster.slices)
    for s in cluster.slices:
        raw = s.raw()
        if raw["spec"]["pool"]["name"] in own:
            twin = copy.copy(s)
            raw["metadata"]["name"] += SUFFIX
            raw["spec"]["pool"]["name"] += SUFFIX
            raw["spec"]["nodeName"] = TWIN.name
            twin._data = raw
            slices.append(twin)
    allocated = list(cluster.allocated)
    for holder in cluster.allocated:
        raw = holder.raw()
        results = (raw.get("status") or {}).get("allocation", {}).get("devices", {}).get("results", [])
        twins = [dict(r, pool=r["pool"] + SUFFIX) for r in results if r["pool"] in own]
        if twins:
            twin = copy.copy(holder)
            raw["metadata"]["name"] += SUFFIX
            raw["metadata"]["uid"] = str(raw["metadata"].get("uid") or "holder") + SUFFIX
            raw["status"]["allocation"]["devices"]["results"] = twins
            twin._data = raw
            allocated.append(twin)
    return slices, allocated


def _answer(snap: Any, cluster: Cluster, node: NodeView) -> tuple[str, Any]:
    try:
        outcome = allocation.allocate(snap, [built(c) for c in cluster.claims], node, features=cluster.features)
    except errors.AllocationInputError as exc:
        return type(exc).__name__, str(exc).replace(TWIN.name, "node-1").replace(SUFFIX, "")
    if isinstance(outcome, outcomes.Allocated):
        return "allocated", [[(r.request, r.driver, r.pool.removesuffix(SUFFIX), r.device, r.admin_access)
                              for r in a.devices.results] for a in outcome.results]
    if isinstance(outcome, outcomes.Unsatisfiable):
        return "unsatisfiable", outcome.message().replace(SUFFIX, "")
    return type(outcome).__name__, None


@settings(max_examples=300, deadline=None)
@given(clusters(max_claims=3))
def test_equal_signatures_get_equal_answers(cluster: Cluster) -> None:
    slices, allocated = _twinned(cluster)
    snap = snapshot(classes=cluster.classes, slices=slices, allocated=allocated, features=cluster.features)
    node = cluster.node
    mine = equivalence.signature(snap, node, cluster.features)
    twin = equivalence.signature(snap, TWIN, cluster.features)
    event("equal signatures" if mine is not None and mine == twin else "different or none")
    if mine is None or mine != twin:
        return
    assert _answer(snap, cluster, node) == _answer(snap, cluster, TWIN)


def test_the_twin_of_a_node_has_its_signature() -> None:
    """The construction above does make copies (else the property would test nothing)."""
    from tests.builders import class_, device, slice_

    cluster = Cluster(classes=(class_("any", None),), slices=(slice_("s", pool="p", devices=[device("d0")]),),
                      allocated=(), claims=())
    slices, allocated = _twinned(cluster)
    snap = snapshot(classes=cluster.classes, slices=slices, allocated=allocated)
    mine = equivalence.signature(snap, cluster.node, cluster.features)
    assert mine is not None and mine == equivalence.signature(snap, TWIN, cluster.features)
