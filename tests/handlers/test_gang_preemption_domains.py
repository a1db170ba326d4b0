"""A gang with a topology key preempts within one domain (handlers/ganging.preempt_search), decided against
the operator's core alone: the victims all come from the domain the whole gang then lands in."""

from __future__ import annotations

from tests.builders import claim, class_, device, result, slice_, snapshot
from tests.scheduling.objects import node_, pod_

from dralloc.allocation.features import Features
from dralloc.handlers import ganging
from dralloc.model import pods
from dralloc.scheduling import placement, preemption

RACK = "example.com/rack"


def _pod(name: str, priority: int, node: str | None) -> pods.Pod:
    return pod_(name, cpu="1", node_name=node, spec_extra={"priority": priority})


def test_a_topology_gang_takes_its_victims_from_the_one_domain_it_lands_in() -> None:
    """Two racks of two nodes, 2 GPUs each, all held by priority-10 pods; a priority-1000 gang of 2 members
    x 2 GPUs on one rack: it removes the pods of one rack only (the first by name), and lands there."""
    racks = {"n1": "r1", "n2": "r1", "n3": "r2", "n4": "r2"}
    slices, claims, bound, held = [], [], [], []
    for node in racks:
        slices.append(slice_(node, pool=node, node=node, devices=[device(f"gpu-{i}") for i in range(2)]))
        resident = _pod(f"low-{node}", 10, node)
        bound.append(resident)
        built = claim(f"c-{node}").request("r", "gpu", count=2).allocated(
            *[result("r", f"gpu-{i}", pool=node) for i in range(2)]).build()
        claims.append(built)
        assert built.status is not None and built.status.allocation is not None
        held.append(preemption.HeldClaim(built.status.allocation, frozenset({resident.metadata.uid or ""})))
    placer = placement.Placer(node_list=[node_(n, cpu="8", labels={RACK: r}) for n, r in racks.items()],
                              snapshot=snapshot(classes=[class_("gpu")], slices=slices, allocated=claims),
                              features=Features(), bound_pods=bound)
    members = tuple(_pod(f"gang-{i}", 1000, None) for i in range(2))
    items = tuple(placement.Item(m.metadata.name, claims=(claim(f"w-{i}").request("r", "gpu", count=2).build(),),
                                 pod=m) for i, m in enumerate(members))
    prepared = ganging.Prepared(("default", "gang"), "default/gang", members, items, frozenset(), RACK, None, (),
                                False, {})
    assert not isinstance(ganging.search(placer, prepared), ganging.Decided)
    by_uid = {uid: [h] for h in held for uid in h.holders}
    found = ganging.preempt_search(placer, prepared, lambda uid: by_uid.get(uid, ()), (), 1000)
    assert found is not None
    chosen, plan = found
    assert sorted(p.metadata.name for p in chosen.pods) == ["low-n1", "low-n2"]
    assert sorted(m.placement.node for m in plan.members) == ["n1", "n2"]
