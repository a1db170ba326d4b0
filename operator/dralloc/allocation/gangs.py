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
- *Members apart*: what relates members on different nodes (required pod affinity and
  anti-affinity over a zone, topology spread between members) is asked of `members_allow`
  with the members placed so far, before a member is tried on a node, as kube-scheduler
  placing them one after another would count the earlier ones.
- *Node resources*: members sharing a node must also fit what the node holds besides devices
  (its cpu, memory, pods), together: `node_holds` says so for a group of members, checked
  before the allocator call that would put one more member there, so a gang is never placed
  onto a node that cannot run all the members given to it.
- *Symmetry*: members with the same shape (the same claims, up to names) are
  interchangeable, so the k-th of them never goes to a node before the (k-1)-th's: the
  search does not revisit the same placement in another member order (unless `members_allow`
  relates them: then the order matters).
- *Failures remembered*: that a shape does not fit on a node, given the shapes already
  placed on that node, holds whatever the other nodes hold, as long as the members' devices
  come from that node's own slices; such failures are not tried again.
- *Bounds*: a domain is ruled out at once when it has fewer free devices than the gang takes,
  when some member fits on no node of it even alone, or when its nodes together hold fewer
  members of one shape than the gang has (each node it fits on alone counts one; only when
  they are too few is each tried with 2, 3, ... of them). A member is not tried on a node
  with fewer free devices than it and the members already there take.
- *Calls saved*: where a shape fits alone is found node by node as the search or a bound asks;
  the devices that check found serve any member of the shape placed first on an empty node
  (the allocator's results name no claim, unless they carry share IDs); each node's free
  devices are counted once per snapshot (`Snapshot.memo`).
- *Cheap first*: every domain is tried member by member first (kube-scheduler's way, no going
  back), then with the joint search, so a domain where the gang cannot fit does not use up the
  budget before one where it fits at once.
- A step budget (allocator calls) bounds the search; running out is its own outcome.

Pure and deterministic: no I/O, no clock; the same input gives the same placement.
"""

from __future__ import annotations

import dataclasses
import functools
import typing
from collections.abc import Callable, Hashable, Iterator, Sequence

from dralloc import allocation
from dralloc.allocation import errors, interruption, outcomes, requests
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
# (member index, node, the members placed so far with their nodes): may the member go to that node given
# where the others went (what relates pods on different nodes: pod (anti-)affinity over a zone, topology
# spread). Like NodeHolds, it must treat members of one shape alike.
MembersAllow = Callable[[int, NodeView, Sequence[tuple[int, NodeView]]], bool]


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
    # The reason without what depends on other claims' use of devices (how many are free), for a
    # tenant's pods: "" when `reason` has no such count.
    private_reason: str = ""


@dataclasses.dataclass(frozen=True)
class GangUnfit:
    attempts: tuple[DomainAttempt, ...]  # closest first
    steps: int

    def message(self, members: int, *, usage: bool = True) -> str:
        """`usage=False`: without counts of devices others use (what a tenant's pods are told)."""
        if not self.attempts:
            return f"gang of {members}: no domain to place it in"
        best = self.attempts[0]
        where = f" in domain {best.domain}" if best.domain is not None else ""
        reason = best.reason if usage or not best.private_reason else best.private_reason
        return f"gang of {members} does not fit{where}: {reason}"


@dataclasses.dataclass(frozen=True)
class GangBudgetExhausted:
    steps: int


GangOutcome = GangPlaced | GangUnfit | GangBudgetExhausted


class _OutOfSteps(Exception):
    pass


def domains_of(nodes: Sequence[NodeView], topology_key: str | None, *,
               empty_is_domain: bool = True) -> dict[str | None, list[NodeView]]:
    """Nodes grouped by their value of the topology label; nodes without it are in no domain.
    `empty_is_domain=False` (kube-scheduler 1.38's TopologyPlacement): nor are nodes whose value
    is empty, "a node labeling mistake"; 1.37 grouped them in the domain "" like any other."""
    if topology_key is None:
        return {None: list(nodes)}
    found: dict[str | None, list[NodeView]] = {}
    for node in nodes:
        value = node.labels.get(topology_key)
        if value is not None and (value or empty_is_domain):
            found.setdefault(value, []).append(node)
    return found


def usage(snapshot: Snapshot, node: NodeView, features: Features) -> tuple[int, int]:
    """(devices in use, devices) among those the node can use: how much is free, for BinPack."""
    allocated = snapshot.allocated
    ids = [info.id for info in snapshot.slices.scope_for(node, features).devices]
    used = allocated.exclusive.count(ids)
    if allocated.shared:
        used += sum(1 for d in ids if d in allocated.shared and d not in allocated.exclusive)
    return used, len(ids)


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
    members_allow: MembersAllow | None = None,
    greedy: bool = False,
    allocate_budget: int | None = allocation.DEFAULT_BUDGET,
) -> GangOutcome:
    """Place every member or none. `greedy` is kube-scheduler's member-by-member way (no going
    back), for comparison: it may miss gangs that fit."""
    search = _Search(snapshot, list(members), features=features, budget=budget, node_allows=node_allows,
                     node_holds=node_holds, members_allow=members_allow, allocate_budget=allocate_budget)
    free_of: dict[str, int] = {}
    search.free_of = free_of
    groups = domains_of(nodes, topology_key, empty_is_domain=features.release != "1.38")

    # Free devices per node: the same for every gang decided against this snapshot (kept in its memo),
    # looked up once per node and decision.
    known_free = typing.cast(dict[tuple[str, tuple[tuple[str, str], ...]], int],
                             snapshot.memo.setdefault(("gangs.free", features), {}))
    for node in nodes:
        # Labels in their own order: equal labels in another order only miss the memo, never mislead it.
        key = (node.name, tuple(node.labels.items()))
        known = known_free.get(key)
        if known is None:
            used, total = usage(snapshot, node, features)
            known = known_free[key] = total - used
        free_of[node.name] = known

    def free(node: NodeView) -> int:
        return free_of[node.name]

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
    supplies = {domain: sum(map(free, domain_nodes)) for domain, domain_nodes in groups.items()}
    for domain, domain_nodes in sorted(groups.items(), key=lambda g: (supplies[g[0]], g[0] or "")):
        supply = supplies[domain]
        if demand is not None and demand > supply:
            # The counting bound: exclusive devices the gang needs, against the domain's free ones.
            attempts.append(DomainAttempt(domain, 0, None, f"the gang needs {demand} devices, {supply} are free",
                                          f"the gang needs {demand} devices, more than are free"))
            continue
        candidates.append((domain, domain_nodes))
    ordered: dict[str | None, list[NodeView]] = {}  # a domain's nodes sorted when it is first tried
    try:
        # First the cheap way in every domain (what kube-scheduler would find), then the joint
        # search: a domain where the gang does not fit cannot use up the budget before another
        # domain where it fits at once has been tried.
        for thorough in ((False,) if greedy else (False, True)):
            for domain, domain_nodes in candidates:
                if domain not in ordered:
                    ordered[domain] = sorted(domain_nodes, key=lambda n: (free(n), n.name))
                placed = search.run(ordered[domain], greedy=not thorough)
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
    if features.consumable_capacity:
        # Whether some device allows several allocations: once per snapshot, not per decision.
        multiple = snapshot.memo.get("gangs.allow-multiple")
        if multiple is None:
            multiple = snapshot.memo["gangs.allow-multiple"] = any(
                info.allow_multiple for s in snapshot.slices.slices for info in snapshot.slices.device_infos(s))
        if multiple:
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
                 node_allows: NodeAllows | None, node_holds: NodeHolds | None, allocate_budget: int | None,
                 members_allow: MembersAllow | None = None) -> None:
        self.base = snapshot
        self.members = members
        self.features = features
        self.budget = budget
        self.node_allows = node_allows
        self.node_holds = node_holds
        self.members_allow = members_allow
        self.allocate_budget = allocate_budget
        self.free_of: dict[str, int] = {}  # free devices per node name (place_gang fills it)
        self._shape_demand: dict[Hashable, int | None] = {}
        self.steps = 0
        self.attempt = DomainAttempt(None, 0, None, "")
        self._alone: dict[tuple[str, ...], list[_Allowed] | DomainAttempt] = {}
        self._owns: dict[str, bool] = {}
        # (shape, node): the devices a member of that shape gets alone on the node, against the base.
        self._alone_results: dict[tuple[Hashable, str], tuple[model_claims.AllocationResult, ...]] = {}

    def _allocate(self, snapshot: Snapshot, member: Member, node: NodeView) -> outcomes.Outcome | None:
        if self.steps >= self.budget:
            raise _OutOfSteps
        self.steps += 1
        interruption.checkpoint()
        try:
            return allocation.allocate(snapshot, member.claims, node, features=self.features,
                                       budget=self.allocate_budget, explain=False)
        except errors.InvalidPoolOnNodeError:
            return None  # upstream's ErrFailedAllocationOnNode: not this node

    def _alone_on(self, member: Member, node: NodeView) -> tuple[model_claims.AllocationResult, ...] | None:
        """The member's devices alone on the node against the base, known from its shape's check alone.

        Members of one shape have the same claims up to names, and the allocator's results name no
        claim except in share IDs (devices allowing several allocations): results without any are
        the same for every member of the shape, so the first member on an empty node costs no call.
        """
        known = self._alone_results.get((member.shape, node.name))
        if known is None or any(r.share_id for result in known for r in result.devices.results):
            return None
        return known

    def _own(self, node: NodeView) -> bool:
        """Every pool the node sees is its own (each slice names it): nothing other nodes hold touches it."""
        known = self._owns.get(node.name)
        if known is None:
            known = self._owns[node.name] = all(all(s.spec.node_name == node.name for s in pool.slices)
                                                for pool in self.base.slices.pools_for(node, self.features))
        return known

    def _room(self, indices: Sequence[int], node: NodeView) -> bool:
        return self._room_for([self.members[i] for i in indices], node)

    def _room_for(self, members: Sequence[Member], node: NodeView) -> bool:
        """The node's free devices could take these members' devices (the counting bound, per node): when
        every member's device count is certain and they need more than the node has free, no allocator
        call could place them there. Members placed on other nodes only take more of what it sees."""
        needed = 0
        for member in members:
            shape = member.shape
            if shape not in self._shape_demand:
                self._shape_demand[shape] = _demand([member], self.base, self.features)
            demand = self._shape_demand[shape]
            if demand is None:
                return True
            needed += demand
        free = self.free_of.get(node.name)
        return free is None or needed <= free

    def _holds(self, indices: Sequence[int], node: NodeView) -> bool:
        """The members fit the node's cpu/memory/pods together (one member alone: node_allows said so)."""
        return len(indices) < 2 or self.node_holds is None or self.node_holds(indices, node)

    def _fits_alone(self, nodes: list[NodeView]) -> list[_Allowed] | DomainAttempt:
        """Per member, the nodes it fits on alone (found as they are asked for); or why the domain is
        ruled out (the bound: a member that fits on no node even alone)."""
        key = tuple(n.name for n in nodes)
        known = self._alone.get(key)
        if known is not None:
            return known
        alone: list[_Allowed] = []
        by_shape: dict[Hashable, _Fits] = {}  # members of one shape fit alone on the same nodes
        found: list[_Allowed] | DomainAttempt = alone
        for index, member in enumerate(self.members):
            if member.shape not in by_shape:
                by_shape[member.shape] = _Fits(len(nodes), functools.partial(self._fits, member, nodes))
            allows = None if self.node_allows is None else functools.partial(self.node_allows, index)
            fits = _Allowed(by_shape[member.shape], nodes, allows)
            if fits.first() is None:
                found = DomainAttempt(None, 0, None, f"member {member.name} fits on no node of it, even alone")
                break
            alone.append(fits)
        if found is alone:
            found = self._shape_capacity(nodes, alone) or alone
        self._alone[key] = found
        return found

    def _fits(self, member: Member, nodes: list[NodeView], j: int) -> bool:
        """The member fits on node j alone (its devices then known for its whole shape: `_alone_on`)."""
        node = nodes[j]
        if not self._room_for([member], node):
            return False
        outcome = self._allocate(self.base, member, node)
        if not isinstance(outcome, outcomes.Allocated):
            return False
        self._alone_results[(member.shape, node.name)] = outcome.results
        return True

    def _shape_capacity(self, nodes: list[NodeView], alone: list[_Allowed]) -> DomainAttempt | None:
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
            # Each node some member of the shape fits on alone holds one (that is what `alone` says,
            # without a call), so the nodes are found only until there are as many as the gang has
            # members of the shape; only when all of them are fewer are nodes asked, one after
            # another, whether they hold more, until the total reaches the count (or every node is at
            # its limit).
            allowed: list[int] = []
            for j in alone[indices[0]].fits:
                if any(alone[i].allows(j) for i in indices):
                    allowed.append(j)
                    if len(allowed) >= wanted:
                        break
            if len(allowed) >= wanted or not all(self._own(nodes[j]) for j in allowed):
                continue
            total = len(allowed)
            for j in allowed:
                if total >= wanted:
                    break
                node, held = nodes[j], 1
                while total < wanted and self._room(indices[:held + 1], node) and self._holds(
                        indices[:held + 1], node) and isinstance(
                        self._allocate(self.base, Member(
                        "", tuple(c for i in indices[:held + 1] for c in self.members[i].claims), None), node),
                        outcomes.Allocated):
                    held += 1
                    total += 1
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
        own = [self._own(node) for node in nodes]
        known_failures: set[tuple[int, tuple[str, ...]]] = set()
        deepest: list[int] = [0]
        placed: list[tuple[int, NodeView]] = []  # (member, node) so far, in placement order
        members_allow = self.members_allow

        def try_on(index: int, j: int) -> tuple[model_claims.AllocationResult, ...] | None:
            group = [*on_node[j], index]
            # Before any allocator call: the node's free devices and own resources, whatever the devices.
            if not self._room(group, nodes[j]) or not self._holds(group, nodes[j]):
                return None
            if own[j] and not on_node[j]:
                # Alone on a node that sees nothing of the others: the check alone answered it.
                known = self._alone_on(members[index], nodes[j])
                if known is not None:
                    return known
            if greedy:
                # kube-scheduler's way: earlier members' devices stay as they were chosen. A node whose
                # pools are all its own sees only the members already on it.
                chosen = results[j] if own[j] else (r for node_results in results for r in node_results)
                fixed = self.base.with_allocations(chosen, self.features)
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
            # Alike members are interchangeable: only one order of them is tried. Not when members_allow
            # relates them: which one comes first then decides what the next may do (a spread counts the
            # earlier ones), and a placement may be reachable in one order only.
            alike = members_allow is None and index > 0 and members[index - 1].shape == member.shape
            first = start if alike else 0
            for j in alone[index]:
                if j < first:
                    continue
                if members_allow is not None and placed and not members_allow(index, nodes[j], placed):
                    continue
                found = try_on(index, j)
                if found is None:
                    continue
                before = results[j]
                on_node[j].append(index)
                results[j] = found
                placed.append((index, nodes[j]))
                deepest[0] = max(deepest[0], index + 1)
                if place(index + 1, j):
                    return True
                placed.pop()
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


class _Fits:
    """The nodes (indices, in domain order) a shape fits on alone, each checked when first asked for:
    a bound or a search that needs only the first few does not pay for the rest."""

    def __init__(self, count: int, check: Callable[[int], bool]) -> None:
        self._count, self._check, self._next = count, check, 0
        self._found: list[int] = []

    def __iter__(self) -> Iterator[int]:
        k = 0
        while True:
            while k >= len(self._found):
                if self._next >= self._count:
                    return
                j, self._next = self._next, self._next + 1
                if self._check(j):
                    self._found.append(j)
            yield self._found[k]
            k += 1


class _Allowed:
    """One member's nodes: its shape's, those the caller allows it (each asked once)."""

    def __init__(self, fits: _Fits, nodes: list[NodeView], allows: Callable[[NodeView], bool] | None) -> None:
        self.fits, self._nodes, self._allows = fits, nodes, allows
        self._known: dict[int, bool] = {}

    def allows(self, j: int) -> bool:
        if self._allows is None:
            return True
        known = self._known.get(j)
        if known is None:
            known = self._known[j] = self._allows(self._nodes[j])
        return known

    def __iter__(self) -> Iterator[int]:
        return (j for j in self.fits if self.allows(j))

    def first(self) -> int | None:
        return next(iter(self), None)
