"""Gangs: place a group of pods all or nothing, searching across members (issue 14).

kube-scheduler places the members of a PodGroup one after another, each on the best node
for it alone, with no way back (kubernetes/kubernetes#138765): the first member can take
the devices a later one needed, and a gang that fits is reported as not fitting. This
module decides the whole gang against one snapshot instead:

- *Domains*: with a topology key (a node label), every member must land on nodes that share
  one value of it; domains are tried with the fewest free devices first (BinPack: the
  tightest domain that fits, so larger free domains stay whole for the next gang), then by
  name. Without a key the whole cluster is one domain.
- *Joint search*: depth first over members; a member goes to a node together with the
  members already there, all their claims allocated in one `allocation.allocate` call (so
  device choices on a node are searched jointly), against the snapshot holding the other
  nodes' members. When a member fits nowhere, the search goes back and moves an earlier
  member. Nodes are tried with the fewest free devices first, then by name.
- *Node resources*: members sharing a node must also fit what the node holds besides devices
  (its cpu, memory, pods), together: `node_holds` says so for a group of members, checked
  before the allocator call that would put one more member there, so a gang is never placed
  onto a node that cannot run all the members given to it.
- *Symmetry*: members with the same shape (the same claims, up to names) are
  interchangeable, so the k-th of them never goes to a node before the (k-1)-th's: the
  search does not revisit the same placement in another member order.
- *Failures remembered*: that a shape does not fit on a node, given the shapes already
  placed on that node, holds whatever the other nodes hold, as long as the members' devices
  come from that node's own slices; such failures are not tried again.
- *Bounds*: a domain is ruled out at once when it has fewer free devices than the gang takes,
  when some member fits on no node of it even alone, or when its nodes together hold fewer
  members of one shape than the gang has (each node tried with 1, 2, ... of them).
- *Cheap first*: every domain is tried member by member first (kube-scheduler's way, no going
  back), then with the joint search, so a domain where the gang cannot fit does not use up the
  budget before one where it fits at once.
- A step budget (allocator calls) bounds the search; running out is its own outcome.

Pure and deterministic: no I/O, no clock; the same input gives the same placement.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable, Sequence

from dralloc import allocation
from dralloc.allocation import errors, outcomes, requests
from dralloc.allocation.features import Features
from dralloc.allocation.pools import NodeView
from dralloc.allocation.snapshots import Snapshot
from dralloc.model import claims as model_claims

DEFAULT_GANG_BUDGET = 5_000  # allocator calls per gang decision
NodeAllows = Callable[[int, NodeView], bool]  # (member index, node): may the member run there at all
# (member indices, node): do these members fit the node's own resources (cpu, memory, pods) together.
# The caller's node fit, as node_allows is for one member; it must depend only on the members' shapes
# and the node, so alike members stay interchangeable.
NodeHolds = Callable[[Sequence[int], NodeView], bool]


@dataclasses.dataclass(frozen=True)
class Member:
    """One pod of the gang: the claims it needs on its node (allocated together)."""

    name: str
    claims: tuple[model_claims.ResourceClaim, ...]
    shape: Hashable  # equal shapes: interchangeable members (same claims up to names)


@dataclasses.dataclass(frozen=True)
class Assignment:
    member: str
    node: str
    results: tuple[model_claims.AllocationResult, ...]


@dataclasses.dataclass(frozen=True)
class GangPlaced:
    assignments: tuple[Assignment, ...]  # in member order
    domain: str | None  # the topology value all members share (None: no topology key)
    steps: int  # allocator calls


@dataclasses.dataclass(frozen=True)
class DomainAttempt:
    """How far the search got in one domain: for explanations."""

    domain: str | None
    placed: int  # the most members placed together
    blocked: str | None  # the member that then fit nowhere (None: ruled out before searching)
    reason: str


@dataclasses.dataclass(frozen=True)
class GangUnfit:
    attempts: tuple[DomainAttempt, ...]  # closest first
    steps: int

    def message(self, members: int) -> str:
        if not self.attempts:
            return f"gang of {members}: no domain to place it in"
        best = self.attempts[0]
        where = f" in domain {best.domain}" if best.domain is not None else ""
        return f"gang of {members} does not fit{where}: {best.reason}"


@dataclasses.dataclass(frozen=True)
class GangBudgetExhausted:
    steps: int


GangOutcome = GangPlaced | GangUnfit | GangBudgetExhausted


class _OutOfSteps(Exception):
    pass


def domains_of(nodes: Sequence[NodeView], topology_key: str | None) -> dict[str | None, list[NodeView]]:
    """Nodes grouped by their value of the topology label; nodes without it are in no domain."""
    if topology_key is None:
        return {None: list(nodes)}
    found: dict[str | None, list[NodeView]] = {}
    for node in nodes:
        value = node.labels.get(topology_key)
        if value is not None:
            found.setdefault(value, []).append(node)
    return found


def usage(snapshot: Snapshot, node: NodeView, features: Features) -> tuple[int, int]:
    """(devices in use, devices) among those the node can use: how much is free, for BinPack."""
    allocated = snapshot.allocated
    order = snapshot.slices.scope_for(node, features).order
    used = sum(1 for _, info in order if info.id in allocated.exclusive or info.id in allocated.shared)
    return used, len(order)


def place_gang(
    snapshot: Snapshot,
    members: Sequence[Member],
    nodes: Sequence[NodeView],
    *,
    features: Features,
    topology_key: str | None = None,
    budget: int = DEFAULT_GANG_BUDGET,
    node_allows: NodeAllows | None = None,
    node_holds: NodeHolds | None = None,
    greedy: bool = False,
    allocate_budget: int | None = allocation.DEFAULT_BUDGET,
) -> GangOutcome:
    """Place every member or none. `greedy` is kube-scheduler's member-by-member way (no going
    back), for comparison: it may miss gangs that fit."""
    search = _Search(snapshot, list(members), features=features, budget=budget, node_allows=node_allows,
                     node_holds=node_holds, allocate_budget=allocate_budget)
    groups = domains_of(nodes, topology_key)

    free_devices: dict[str, int] = {}

    def free(node: NodeView) -> int:
        known = free_devices.get(node.name)
        if known is None:
            used, total = usage(snapshot, node, features)
            known = free_devices[node.name] = total - used
        return known

    # A bad claim (a DeviceClass that does not exist, CEL that does not compile, limits exceeded) is an
    # input error whatever the capacity, as the allocator checks claims before it searches: checked for
    # every member first, so that neither the counting bound below nor a member that fits nowhere
    # (which ends the search before later members are tried) passes it off as a gang that does not fit.
    for member in {m.shape: m for m in members}.values():  # one shape: the same claims up to names
        requests.plan_claims(list(member.claims), device_classes=snapshot.classes, features=features,
                             all_devices=lambda plan: [])
    demand = _demand(members, snapshot, features)
    candidates: list[tuple[str | None, list[NodeView]]] = []
    attempts: list[DomainAttempt] = []
    for domain, domain_nodes in sorted(groups.items(), key=lambda g: (sum(map(free, g[1])), g[0] or "")):
        supply = sum(map(free, domain_nodes))
        if demand is not None and demand > supply:
            # The counting bound: exclusive devices the gang needs, against the domain's free ones.
            attempts.append(DomainAttempt(domain, 0, None, f"the gang needs {demand} devices, {supply} are free"))
            continue
        candidates.append((domain, sorted(domain_nodes, key=lambda n: (free(n), n.name))))
    try:
        # First the cheap way in every domain (what kube-scheduler would find), then the joint
        # search: a domain where the gang does not fit cannot use up the budget before another
        # domain where it fits at once has been tried.
        for thorough in ((False,) if greedy else (False, True)):
            for domain, ordered in candidates:
                placed = search.run(ordered, greedy=not thorough)
                if placed is not None:
                    return GangPlaced(tuple(placed), domain, search.steps)
                if thorough or greedy:
                    attempts.append(dataclasses.replace(search.attempt, domain=domain))
    except _OutOfSteps:
        return GangBudgetExhausted(search.steps)
    attempts.sort(key=lambda a: (-a.placed, a.domain or ""))
    return GangUnfit(tuple(attempts), search.steps)


def _demand(members: Sequence[Member], snapshot: Snapshot, features: Features) -> int | None:
    """How many devices the gang takes for itself, when that is certain (None: it is not).

    Only ExactCount requests without admin access count (a firstAvailable request by its
    smallest alternative); `All` requests, admin access and devices that allow several
    allocations make the number uncertain, and the bound is then not used.
    """
    if features.consumable_capacity and any(
            info.allow_multiple for s in snapshot.slices.slices for info in snapshot.slices.device_infos(s)):
        return None
    total = 0
    for member in members:
        for claim in member.claims:
            for request in claim.spec.devices.requests:
                options = [request.exactly] if request.exactly is not None else list(request.first_available)
                counts = []
                for option in options:
                    if option is None or (option.allocation_mode or "ExactCount") != "ExactCount" \
                            or getattr(option, "admin_access", None):
                        return None
                    counts.append(1 if option.count is None else option.count)
                total += min(counts) if counts else 0
    return total


class _Search:
    def __init__(self, snapshot: Snapshot, members: list[Member], *, features: Features, budget: int,
                 node_allows: NodeAllows | None, node_holds: NodeHolds | None, allocate_budget: int | None) -> None:
        self.base = snapshot
        self.members = members
        self.features = features
        self.budget = budget
        self.node_allows = node_allows
        self.node_holds = node_holds
        self.allocate_budget = allocate_budget
        self.steps = 0
        self.attempt = DomainAttempt(None, 0, None, "")
        self._alone: dict[tuple[str, ...], list[list[int]] | DomainAttempt] = {}

    def _allocate(self, snapshot: Snapshot, member: Member, node: NodeView) -> outcomes.Outcome | None:
        if self.steps >= self.budget:
            raise _OutOfSteps
        self.steps += 1
        try:
            return allocation.allocate(snapshot, member.claims, node, features=self.features,
                                       budget=self.allocate_budget, explain=False)
        except errors.InvalidPoolOnNodeError:
            return None  # upstream's ErrFailedAllocationOnNode: not this node

    def _holds(self, indices: Sequence[int], node: NodeView) -> bool:
        """The members fit the node's cpu/memory/pods together (one member alone: node_allows said so)."""
        return len(indices) < 2 or self.node_holds is None or self.node_holds(indices, node)

    def _fits_alone(self, nodes: list[NodeView]) -> list[list[int]] | DomainAttempt:
        """Per member, the nodes it fits on alone; or why the domain is ruled out (the bound: a
        member that fits on no node even alone)."""
        key = tuple(n.name for n in nodes)
        known = self._alone.get(key)
        if known is not None:
            return known
        alone: list[list[int]] = []
        by_shape: dict[Hashable, list[int]] = {}  # members of one shape fit alone on the same nodes
        found: list[list[int]] | DomainAttempt = alone
        for index, member in enumerate(self.members):
            if member.shape not in by_shape:
                by_shape[member.shape] = [j for j, node in enumerate(nodes)
                                          if isinstance(self._allocate(self.base, member, node), outcomes.Allocated)]
            fits = [j for j in by_shape[member.shape]
                    if self.node_allows is None or self.node_allows(index, nodes[j])]
            if not fits:
                found = DomainAttempt(None, 0, None, f"member {member.name} fits on no node of it, even alone")
                break
            alone.append(fits)
        if found is alone:
            found = self._shape_capacity(nodes, alone) or alone
        self._alone[key] = found
        return found

    def _shape_capacity(self, nodes: list[NodeView], alone: list[list[int]]) -> DomainAttempt | None:
        """The bound for alike members: how many of one shape fit together on each node (tried with
        1, 2, ... of them, up to as many as the gang has); when the domain's total falls short, the
        gang cannot fit, whatever the other shapes do. A node whose pools are not all its own (it
        sees devices other nodes share) counts as holding them all: the bound stays sound."""
        groups: dict[Hashable, list[int]] = {}
        for index, member in enumerate(self.members):
            groups.setdefault(member.shape, []).append(index)
        for indices in groups.values():
            wanted = len(indices)
            if wanted < 2:
                continue
            allowed = sorted(set().union(*(set(alone[i]) for i in indices)))
            total = 0
            for j in allowed:
                node = nodes[j]
                if not all(all(s.spec.node_name == node.name for s in pool.slices)
                           for pool in self.base.slices.pools_for(node, self.features)):
                    total = wanted
                    break
                held = 1  # fits alone (it is in `alone`)
                while held < wanted - total and self._holds(indices[:held + 1], node) and isinstance(
                        self._allocate(self.base, Member(
                        "", tuple(c for i in indices[:held + 1] for c in self.members[i].claims), None), node),
                        outcomes.Allocated):
                    held += 1
                total += held
                if total >= wanted:
                    break
            if total < wanted:
                first = self.members[indices[0]].name
                return DomainAttempt(None, 0, first, f"at most {total} of the {wanted} members like {first} "
                                                     "fit in it, even without the others")
        return None

    def run(self, nodes: list[NodeView], *, greedy: bool) -> list[Assignment] | None:
        """The gang in this domain: kube-scheduler's way (`greedy`: each member's first choice
        stands) or the joint search."""
        members = self.members
        alone_or_why = self._fits_alone(nodes)
        if isinstance(alone_or_why, DomainAttempt):
            self.attempt = alone_or_why
            return None
        alone = alone_or_why
        # The members on one node are allocated together, in one call with all their claims: the
        # single-node allocator then searches their device choices jointly (a member's first-fit
        # devices never block a later member on the same node when another choice would do).
        on_node: list[list[int]] = [[] for _ in nodes]  # member indices, in placement order
        results: list[tuple[model_claims.AllocationResult, ...]] = [() for _ in nodes]
        # Only a node whose pools are all its own (every slice names it) sees nothing of what
        # other nodes hold: there a failure depends only on the shapes placed on that node.
        own = [all(all(s.spec.node_name == node.name for s in pool.slices)
                   for pool in self.base.slices.pools_for(node, self.features)) for node in nodes]
        known_failures: set[tuple[int, tuple[str, ...]]] = set()
        deepest: list[int] = [0]

        def try_on(index: int, j: int) -> tuple[model_claims.AllocationResult, ...] | None:
            group = [*on_node[j], index]
            # Before any allocator call: the node's own resources do not depend on devices.
            if not self._holds(group, nodes[j]):
                return None
            if greedy:
                # kube-scheduler's way: earlier members' devices stay as they were chosen.
                fixed = self.base.with_allocations((r for node_results in results for r in node_results),
                                                   self.features)
                outcome = self._allocate(fixed, members[index], nodes[j])
                return (*results[j], *outcome.results) if isinstance(outcome, outcomes.Allocated) else None
            key = (j, tuple(sorted(repr(members[i].shape) for i in group)))
            if own[j] and key in known_failures:
                return None
            # A node whose pools are all its own sees nothing of the other nodes' members.
            snapshot = self.base if own[j] else self.base.with_allocations(
                (r for k, node_results in enumerate(results) if k != j for r in node_results), self.features)
            claims = tuple(c for i in group for c in members[i].claims)
            outcome = self._allocate(snapshot, Member("", claims, None), nodes[j])
            if isinstance(outcome, outcomes.Allocated):
                return outcome.results
            if own[j] and isinstance(outcome, outcomes.Unsatisfiable):
                known_failures.add(key)
            return None

        def place(index: int, start: int) -> bool:
            if index == len(members):
                return True
            member = members[index]
            first = start if index > 0 and members[index - 1].shape == member.shape else 0
            for j in alone[index]:
                if j < first:
                    continue
                found = try_on(index, j)
                if found is None:
                    continue
                before = results[j]
                on_node[j].append(index)
                results[j] = found
                deepest[0] = max(deepest[0], index + 1)
                if place(index + 1, j):
                    return True
                on_node[j].pop()
                results[j] = before
                if greedy:
                    return False  # kube-scheduler's way: the first choice stands
            return False

        if place(0, 0):
            assignments: list[Assignment] = []
            for j, group in enumerate(on_node):
                offset = 0
                for i in group:
                    count = len(members[i].claims)
                    assignments.append(Assignment(members[i].name, nodes[j].name, results[j][offset:offset + count]))
                    offset += count
            order = {m.name: k for k, m in enumerate(members)}
            return sorted(assignments, key=lambda a: order[a.member])
        most = deepest[0]
        blocked = members[most].name if most < len(members) else None
        self.attempt = DomainAttempt(None, most, blocked,
                                     f"at most {most} of {len(members)} members fit together; "
                                     f"then member {blocked} fits on no node left")
        return None
