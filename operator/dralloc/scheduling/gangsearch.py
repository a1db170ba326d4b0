"""A gang's decision against a Placer, pure: what `handlers/ganging.py` decides in the decider's thread,
and `dralloc simulate` (`offline/ganging.py`) decides for the gangs of a workload.

`search` places the pending members of a PodGroup all or none with `allocation.gangs.place_gang`,
`node_allows` being the Placer's node fit for each member (selectors, affinity, taints, resources,
shared claims' node selectors, the gang's domain when members are placed already) and `node_holds`
the same resource fit for the members the search puts on one node together (their cpu, memory and
pods summed over what the node runs already, no two members repelling each other there). A
PodGroup claim's devices must then be usable from every member's node.

The words members are told while a gang waits or does not fit are here too, so that the operator
and simulate say the same: `waiting_for_group`, `waiting_for_members`, `shared_unallocated`,
`priorities_differ`, and the `GangUnfit` message `search` returns.

No I/O, no clock, no kopf.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from dralloc.allocation import gangs, nodeaffinity
from dralloc.allocation.pools import NodeView
from dralloc.model import claims as model_claims
from dralloc.model import pods
from dralloc.model import scheduling as model_scheduling
from dralloc.scheduling import nodefit, nodeports, placement, podaffinity, preemption

Raw = dict[str, Any]
Key = tuple[str, str]  # the PodGroup: (namespace, name)


def _ref(pod: pods.Pod) -> str:
    return f"{pod.metadata.namespace or 'default'}/{pod.metadata.name}"


@dataclasses.dataclass(frozen=True)
class Member:
    pod: pods.Pod
    item: placement.Item
    placement: placement.Placement


@dataclasses.dataclass(frozen=True)
class Decided:
    key: Key
    members: tuple[Member, ...]
    steps: int
    domain: str | None
    group_ref: Raw | None = None  # the PodGroup's reservedFor entry
    group_claims: frozenset[str] = frozenset()  # uids of the PodGroup's claims: reserved for the group


@dataclasses.dataclass(frozen=True)
class NotPlaced:
    key: Key
    who: tuple[pods.Pod, ...]  # the pending members
    message: str
    result: str  # a metrics.GANG_RESULTS label
    steps: int | None = None
    # Reservations of an earlier, unfinished attempt (claim, consumer uid): given back when nothing is bound.
    held: tuple[tuple[model_claims.ResourceClaim, str], ...] = ()
    any_placed: bool = False



@dataclasses.dataclass(frozen=True)
class Prepared:
    """What the gang's search needs, read from the view on the loop: the search itself (`search`) then
    reads only this and the placer, so it can run in the decider's worker thread."""

    key: Key
    ref: str
    pending: tuple[pods.Pod, ...]
    items: tuple[placement.Item, ...]
    group_claims: frozenset[str]
    topology: str | None
    domain: str | None
    held: tuple[tuple[model_claims.ResourceClaim, str], ...]
    any_placed: bool
    group_ref: Raw
    gang_budget: int = gangs.DEFAULT_GANG_BUDGET  # allocator calls for the search (--gang-budget)


def waiting_for_group(ref: str) -> str:
    """Why a gang whose PodGroup does not exist (yet) waits; `dralloc simulate` says the same."""
    return f"waiting for PodGroup {ref} to be created"


def waiting_for_members(ref: str, present: int, min_count: int) -> str:
    """Why a gang with fewer than minCount members waits; `dralloc simulate` says the same."""
    return f"PodGroup {ref}: waiting for the gang: {present} of its {min_count} pods (minCount) exist"


def shared_unallocated(ref: str, pending: Sequence[pods.Pod], member_items: Sequence[placement.Item]) -> str | None:
    """A claim, not allocated yet, that two members list (not as the PodGroup's own claim): why the gang is
    not placed; None when there is none."""
    first_user: dict[str, str] = {}
    for pod, item in zip(pending, member_items, strict=True):
        for claim in item.claims:
            other = first_user.setdefault(claim.metadata.uid or claim.ref(), _ref(pod))
            if other != _ref(pod):
                return (f"PodGroup {ref}: ResourceClaim {claim.ref()} is used by members {other} and {_ref(pod)} and "
                        "is not allocated yet: dralloc does not allocate a claim shared within a gang (nor PodGroup "
                        "claims) yet")
    return None


def priorities_differ(group: model_scheduling.PodGroup, members: Sequence[pods.Pod]) -> str | None:
    """kube-scheduler's validatePodGroup (1.37): every member has the PodGroup's priority (spec.priority, 0
    unset: both come from priorityClassName at admission), and one preemption policy, the PodGroup's when
    it sets one (PodGroupPreemptionPolicy). Why not, in its words; None when they agree."""
    wanted = group.spec.priority or 0
    policy = group.spec.preemption_policy
    for pod in members:
        mine = pod.spec.priority or 0
        if mine != wanted:
            return (f"all pods in a single pod group should have the same priority as the pod group's priority, "
                    f"got {mine} (pod {_ref(pod)}, spec.priority) and {wanted} (spec.priority of the PodGroup)")
        own = pod.spec.preemption_policy or preemption.PREEMPT_LOWER
        if policy is None:
            policy = own
        elif own != policy:
            return (f"all pods in a single pod group should have the same preemption policy, got {own} "
                    f"(pod {_ref(pod)}, spec.preemptionPolicy) and {policy}")
    return None



def too_costly(prepared: Prepared, budget: float) -> NotPlaced:
    """The gang's search used up the decision's CPU budget."""
    return NotPlaced(prepared.key, prepared.pending, (
        f"PodGroup {prepared.ref}: gang of {len(prepared.pending)}: deciding where it fits took more than the "
        f"scheduler's CPU budget of {budget:g} s per decision; it is retried after a backoff when the cluster "
        "changes"), "too-costly", None, prepared.held, prepared.any_placed)


def search(placer: placement.Placer, prepared: Prepared) -> Decided | NotPlaced:
    """The gang's search against the placer alone (no view, no await): runs in the decider's thread."""
    key, ref, pending, member_items = prepared.key, prepared.ref, prepared.pending, prepared.items
    held, any_placed, group_claims = prepared.held, prepared.any_placed, set(prepared.group_claims)
    topology, domain = prepared.topology, prepared.domain

    def allows(index: int, view: NodeView) -> bool:
        j = placer.index.get(view.name)
        if j is None or (domain is not None and view.labels.get(topology or "") != domain):
            return False
        return placer.misfit(member_items[index], j) is None

    requests = [nodefit.pod_requests(pod) for pod in pending]

    def holds(indices: Sequence[int], view: NodeView) -> bool:
        # Each member alone fits (allows); together they add up on the node's cpu/memory/pods, and
        # must not repel each other there (anti-affinity between members, one host port twice).
        j = placer.index[view.name]
        shared = placer.usage[j]
        usage = nodefit.NodeUsage(dict(shared.requests), shared.pods)
        for i in indices:
            if nodefit.misfit(pending[i], placer.nodes[j], usage, requests[i], dra_backed=placer.dra_backed):
                return False
            usage.add(requests[i])
        together = [pending[i] for i in indices]
        namespaces = placer.placed.namespace_labels
        for position, one in enumerate(together):
            for other in together[position + 1:]:
                if podaffinity.repel(one, other, view.labels, namespaces) or nodeports.share_a_port(one, other):
                    return False
        return True

    apart = placer.members_apart(member_items)
    members_allow = None
    if apart is not None:
        def members_allow(index: int, view: NodeView, before: Sequence[tuple[int, NodeView]]) -> bool:
            return apart(index, view.name, [(i, v.name) for i, v in before])

    gang = [gangs.Member(_ref(pod), item.claims, placer.shape(item)) for pod, item in zip(pending, member_items, strict=True)]
    outcome = gangs.place_gang(placer.snapshot, gang, placer.views, features=placer.features, topology_key=topology,
                               node_allows=allows, node_holds=holds, members_allow=members_allow,
                               allocate_budget=placer.budget, budget=prepared.gang_budget)
    if isinstance(outcome, gangs.GangBudgetExhausted):
        return NotPlaced(key, pending, f"PodGroup {ref}: gang of {len(gang)}: the search gave up after "
                                       f"{outcome.steps} allocator calls", "budget-exhausted", outcome.steps,
                         held, any_placed)
    if isinstance(outcome, gangs.GangUnfit):
        return NotPlaced(key, pending, f"PodGroup {ref}: {outcome.message(len(gang), usage=placer.usage_in_reasons)}", "unfit", outcome.steps,
                         held, any_placed)
    decided = [Member(pod, item, placement.Placement(assignment.node, assignment.results))
               for pod, item, assignment in zip(pending, member_items, outcome.assignments, strict=True)]
    unusable = _group_claims_unusable(placer, decided, group_claims)
    if unusable is not None:
        return NotPlaced(key, pending, f"PodGroup {ref}: gang of {len(gang)}: {unusable}", "unfit", outcome.steps,
                         held, any_placed)
    return Decided(key, tuple(decided), outcome.steps, outcome.domain, prepared.group_ref, frozenset(group_claims))



def _group_claims_unusable(placer: placement.Placer, decided: Sequence[Member], group_claims: set[str]) -> str | None:
    """A PodGroup claim is allocated with the first member that lists it; every member must be on a node
    its devices are usable from (the allocation's node selector: network-attached devices suit all)."""
    for member in decided:
        for claim, result in zip(member.item.claims, member.placement.results, strict=True):
            if (claim.metadata.uid or "") not in group_claims or result.node_selector is None:
                continue
            for other in decided:
                view = placer.views[placer.index[other.placement.node]]
                try:
                    usable = nodeaffinity.selector_matches(result.node_selector, view.name, view.labels)
                except ValueError:
                    usable = False
                if not usable:
                    return (f"PodGroup claim {claim.ref()} would get devices usable only from node(s) of "
                            f"{member.placement.node}'s selector, and member {_ref(other.pod)} would run on "
                            f"{other.placement.node} (a PodGroup claim of node-local devices needs every member "
                            "on a node that can use them)")
    return None
