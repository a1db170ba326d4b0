"""Gangs: the pods of a PodGroup placed all or nothing (issue 14).

A pod joins a gang through `spec.schedulingGroup.podGroupName`, naming a PodGroup (served by
the cluster, `handlers/watching.py`) whose scheduling policy is `gang`. Which pods are
dralloc's is decided as for single pods (schedulerName or the gate); pods without a
schedulingGroup, PodGroups with the `basic` policy and clusters that serve no PodGroups
take the single-pod path, unchanged.

One pass of the scheduling loop meets a gang at its first ready member (queue order:
priority, then age) and decides it whole, without an await:

1. *Members*: every pod of the group that is dralloc's and not placed yet, each with the
   claims it needs allocated (as for a single pod; a member still waiting for a claim makes
   the gang wait). Members already placed count toward `minCount`; with a topology key, the
   new members must join their domain.
2. *Wait* until at least `minCount` members exist (placed or pending); members beyond
   minCount that exist are placed too. Then wait while a pending member is held back by
   a scheduling gate not ours (Kueue's, say: `items.held_by`): as in kube-scheduler 1.37,
   where such a member counts as existing (the PodGroup's state holds every unscheduled
   pod) but gates the gang's whole queue entry ("if any pod is gated, the whole entity is
   gated"), so no member is placed until its gates are gone. The held member itself is
   told `SchedulingGated` (handlers/reporting.py), the others why the gang waits.
3. *Decide* with `allocation.gangs.place_gang` against the pass's snapshot (ledger
   included), `node_allows` being the Placer's node fit for each member (selectors,
   affinity, taints, resources, shared claims' node selectors) and `node_holds` the same
   resource fit for the members the search puts on one node together (their cpu, memory
   and pods summed over what the node runs already), so the search moves a member on
   rather than filling a node past its resources.
4. *Reserve* every member's allocations in the placer and the ledger at once.

The writes then follow (`commit`), in an order that never leaves a member bound while
another one cannot be:

- every claim of every member: finalizer, then `allocation` + `reservedFor` (and the
  member added to shared claims' `reservedFor`);
- only when all of them are written: every member is bound (or ungated) at once.

A write refused for certain rolls back what this gang wrote (each claim deallocated, or
the member's reservation removed from a shared one), releases the ledger, and backs the
whole gang off. A write whose outcome stays unknown is never taken as failed: nothing is
rolled back, the devices stay reserved until a read or the watch says what happened, and
the gang backs off. The next pass then completes or rolls back the gang from what the
claims show (below).

Restart safety, up to the binds, needs no journal: the claims themselves are the record. A
claim allocated and reserved for a member that is not bound pins that member to the claim's
node (its allocation's node selector, as for a single pod), so the next decision (after a
crash, a restart, or an unknown outcome) either fits the gang around what is written — then
the rest is written and every member is bound: completed — or does not fit, and then, as
long as no member is bound yet, every such reservation is given back: rolled back.
The binds themselves cannot be undone, so before the first one the decision is recorded on
the PodGroup (its status condition `dralloc.io/GangBinds`, handlers/intents.py); a pass that
finds it completes the recorded binds instead of deciding the gang again, and gives back
what cannot be completed any more (handlers/completing.py).

A gang that does not fit: each member's `PodScheduled=False` (reason `Unschedulable`)
carries `GangUnfit.message`, and a Warning Event `GangUnfit` on the PodGroup says the same
(once per distinct message), as does the PodGroup's condition `PodGroupInitiallyScheduled`
(`PodGroupScheduled` on 1.36's v1alpha2) as kube-scheduler writes it: False with reason
`Unschedulable` (or `SchedulerError`), then True with reason `Scheduled` once the gang is
placed, never back to False. An error met while deciding for one member (a claim that
cannot be read, a class that does not exist, CEL that fails) is reported on that member
(`SchedulerError`) and on the others as the reason the gang waits; nothing else of the
pass is affected.

PodGroup claims (DRAWorkloadResourceClaims): a claim in the PodGroup's `spec.resourceClaims`
(by `resourceClaimName`, or generated from `resourceClaimTemplateName` by the claim lifecycle,
ours or kube-controller-manager's, and named in the PodGroup's status and in each member's),
listed by members under the same entry, is allocated once, with the
first member that lists it, and reserved for the PodGroup (`reservedFor: {apiGroup:
scheduling.k8s.io, resource: podgroups, name, uid}`), not for pods. Its devices must be
usable from every member's node: after the search, the allocation's node selector is checked
against each member's node, and a gang that fails the check is reported unfit. Network-attached
devices (allNodes, node selectors spanning the members' nodes) suit any placement; node-local
ones only a gang the search happens to put where they are (the search itself does not steer
members to them). An allocated PodGroup claim holds every member to the nodes it can be used
from (the Placer's node fit).

Not supported yet: a claim that several members list without the PodGroup listing it, not
allocated yet; such a gang is reported unschedulable with that reason.

A decision pass: calls `items` (each member's claims), `committing` (the writes and their
settlement), `intents` (the binds' record) and `reporting` (what members and the PodGroup
are told); handlers/scheduling.py calls it at a gang's first ready member. The search itself, and
the words members are told while the gang waits or does not fit, are `scheduling/gangsearch.py`
(pure), which `dralloc simulate` decides its gangs with too (`offline/ganging.py`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Callable, Sequence

from dralloc import metrics
from dralloc.handlers import committing, intents, items, reporting
from dralloc.handlers.runtime import Runtime
from dralloc.kube import errors as kube_errors
from dralloc.lifecycle import templates
from dralloc.model import claims as model_claims
from dralloc.model import nodes, pods
from dralloc.scheduling import placement, preemption, queueing
from dralloc.scheduling.gangsearch import Decided as Decided
from dralloc.scheduling.gangsearch import Key as Key
from dralloc.scheduling.gangsearch import Member as Member
from dralloc.scheduling.gangsearch import NotPlaced as NotPlaced
from dralloc.scheduling.gangsearch import Prepared as Prepared
from dralloc.scheduling.gangsearch import Raw as Raw
from dralloc.scheduling.gangsearch import priorities_differ as priorities_differ
from dralloc.scheduling.gangsearch import search as search
from dralloc.scheduling.gangsearch import shared_unallocated as shared_unallocated
from dralloc.scheduling.gangsearch import too_costly as too_costly
from dralloc.scheduling.gangsearch import waiting_for_group as waiting_for_group
from dralloc.scheduling.gangsearch import waiting_for_members as waiting_for_members

logger = logging.getLogger(__name__)

HOSTNAME = "kubernetes.io/hostname"


def group_name(pod: pods.Pod) -> str | None:
    group = pod.spec.scheduling_group
    return group.pod_group_name if group is not None and group.pod_group_name else None


def gang_of(rt: Runtime, pod: pods.Pod) -> Key | None:
    """The PodGroup whose gang the pod is placed with; None: the single-pod path."""
    name = group_name(pod)
    if name is None or rt.pod_group_resource is None:
        return None
    key = (pod.metadata.namespace or "", name)
    group = rt.cluster.pod_groups.get(*key)
    if group is not None and group.spec.scheduling_policy.gang is None:
        return None  # basic scheduling: one by one
    return key


@dataclasses.dataclass
class Members:
    pending: list[pods.Pod] = dataclasses.field(default_factory=list)  # dralloc's, not placed yet, queue order
    placed: list[tuple[pods.Pod, str]] = dataclasses.field(default_factory=list)  # with their node


def index_members(rt: Runtime) -> dict[Key, Members]:
    """Every PodGroup's pods, from one scan of the view (raw: only members are parsed)."""
    settings = rt.settings.scheduling
    found: dict[Key, Members] = {}
    for key in list(rt.cluster.pods.entries):
        raw = rt.cluster.pods.raw(*key) or {}
        spec = raw.get("spec") or {}
        name = (spec.get("schedulingGroup") or {}).get("podGroupName")
        if not name:
            continue
        pod = rt.cluster.pods.get(*key)
        if pod is None or pod.finished() or pod.metadata.deletion_timestamp:
            continue
        members = found.setdefault((key[0], name), Members())
        memory = rt.pods.get(pod.metadata.uid or "")
        bound_to = memory.bound_to if memory is not None else None
        if items.owned(pod, scheduler_name=settings.scheduler_name, gate=settings.gate) and bound_to is None:
            members.pending.append(pod)
            continue
        node = pod.spec.node_name or bound_to
        if node is None and not pod.spec.scheduling_gates:
            node = _pinned_node(rt, pod.spec.node_selector.get(HOSTNAME))
        if node is not None:
            members.placed.append((pod, node))
    for members in found.values():
        members.pending.sort(key=lambda p: (-(p.spec.priority or 0), p.metadata.creation_timestamp or "",
                                            p.metadata.name))
    return found


def _pinned_node(rt: Runtime, hostname: str | None) -> str | None:
    """The node a gate-mode pod was pinned to (nodeSelector hostname), before kube-scheduler binds it."""
    if hostname is None:
        return None
    if rt.cluster.nodes.get("", hostname) is not None:
        return hostname
    for node in rt.cluster.nodes.all():
        if node.metadata.labels.get(HOSTNAME) == hostname:
            return node.metadata.name
    return None


class MemberError(Exception):
    """Deciding for one member failed (its objects, or a bug): reported on it, the gang waits."""

    def __init__(self, pod: pods.Pod, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.pod = pod
        self.cause = cause


def _ref(pod: pods.Pod) -> str:
    return f"{pod.metadata.namespace or 'default'}/{pod.metadata.name}"


def _held(rt: Runtime, pending: Sequence[pods.Pod], group_uid: str | None = None
          ) -> tuple[tuple[model_claims.ResourceClaim, str], ...]:
    """Claims allocated and reserved for a pending member (or for the PodGroup) by an unfinished earlier
    attempt, each with the consumer uid to give back."""
    held = []
    namespace = pending[0].metadata.namespace or "" if pending else ""
    for uid in [*(pod.metadata.uid or "" for pod in pending), *([group_uid] if group_uid else [])]:
        for claim_key in rt.cluster.claims_naming(namespace, uid):
            claim = rt.cluster.claims.get(*claim_key)
            if claim is not None and claim.status.allocation is not None and any(
                    r.uid == uid for r in claim.status.reserved_for):
                held.append((claim, uid))
    return tuple(held)


def prepare(rt: Runtime, placer: placement.Placer, key: Key, members: Members) -> Prepared | NotPlaced | None:
    """The gang's inputs from the view, without any await; a NotPlaced when it cannot be decided now; None
    while a member is not ready (its claims are being created, or an earlier write of ours is not observed
    yet). Raises MemberError for one member's error."""
    namespace, name = key
    ref = f"{namespace or 'default'}/{name}"
    pending = tuple(members.pending)
    gate = rt.settings.scheduling.gate
    gated = [(pod, gates) for pod in pending if (gates := items.held_by(pod, gate=gate))]
    # Who is told why the gang waits: a member held back by other scheduling gates is told those instead.
    told = tuple(pod for pod in pending if not items.held_by(pod, gate=gate))
    group = rt.cluster.pod_groups.get(*key)
    held = _held(rt, pending, group.metadata.uid if group is not None else None)
    any_placed = bool(members.placed)
    if group is None:
        problem = rt.cluster.pod_groups.problems.get(key)
        if problem is not None:
            return NotPlaced(key, told, f"PodGroup {ref} cannot be used: {problem}", "error", None, held,
                             any_placed)
        return NotPlaced(key, told, waiting_for_group(ref), "waiting", None, held, any_placed)
    mismatch = priorities_differ(group, [*pending, *(pod for pod, _ in members.placed)])
    if mismatch is not None:
        return NotPlaced(key, told, f"PodGroup {ref} cannot be scheduled: {mismatch}", "error", None, held,
                         any_placed)
    min_count = group.spec.min_count()
    present = len(pending) + len(members.placed)
    if present < min_count:
        return NotPlaced(key, told, waiting_for_members(ref, present, min_count), "waiting", None, held, any_placed)
    if gated:
        pod, gates = gated[0]
        more = f" (and {len(gated) - 1} more member(s))" if len(gated) > 1 else ""
        return NotPlaced(key, told, f"PodGroup {ref}: waiting for the gang: member {_ref(pod)}{more} is held back "
                                    f"by scheduling gate(s) {', '.join(gates)} (no member is placed while one of "
                                    f"them has a scheduling gate other than {gate})", "waiting", None, held,
                         any_placed)
    member_items: list[placement.Item] = []
    for pod in pending:
        try:
            item = items.item_for(rt, pod)
        except Exception as exc:
            raise MemberError(pod, exc) from exc
        if item is None:
            return None
        if isinstance(item, str):
            return NotPlaced(key, pending, f"PodGroup {ref}: member {_ref(pod)} cannot be placed: {item}", "unfit")
        member_items.append(item)
    # The PodGroup's own claims (spec.resourceClaims, listed by the members under the same entry: by
    # resourceClaimName, or generated from its template and named in the PodGroup's status): allocated
    # once, with the first member that lists it, and reserved for the PodGroup.
    generated = {s.name: s.resource_claim_name for s in group.status.resource_claim_statuses}
    group_claims: set[str] = set()
    for index, (pod, item) in enumerate(zip(pending, member_items, strict=True)):
        mine = set()
        for entry in pod.spec.resource_claims:
            shared = templates.group_entry_for(entry, group)
            if shared is not None:
                mine.add(shared.resource_claim_name or generated.get(shared.name) or "")
        if not mine:
            continue
        keep = []
        for claim in item.claims:
            uid = claim.metadata.uid or ""
            if claim.metadata.name not in mine:
                keep.append(claim)
            elif uid not in group_claims:
                group_claims.add(uid)
                keep.append(claim)  # the first member listing it allocates it
        group_claims.update(c.metadata.uid or "" for c in item.allocated if c.metadata.name in mine)
        member_items[index] = dataclasses.replace(item, claims=tuple(keep))
    within = shared_unallocated(ref, pending, member_items)
    if within is not None:
        return NotPlaced(key, pending, within, "unfit", held=held, any_placed=any_placed)
    topology = group.spec.topology_key()
    domain: str | None = None
    if topology is not None:
        for _, node_name in members.placed:
            node = rt.cluster.nodes.get("", node_name)
            if node is not None and node.metadata.labels.get(topology) is not None:
                domain = node.metadata.labels[topology]
                break
    return Prepared(key, ref, pending, tuple(member_items), frozenset(group_claims), topology, domain, held, any_placed,
                    group.consumer_reference(), rt.settings.scheduling.gang_budget)


def preempt_search(placer: placement.Placer, prepared: Prepared, held_by: preemption.HeldBy,
                   budgets: Sequence[preemption.DisruptionBudget], gang_priority: int,
                   groups: preemption.Groups = preemption.NO_GROUPS) -> tuple[preemption.NodeVictims, Decided] | None:
    """The victims that would let the whole gang fit, and the gang's placement once they are gone (runs in
    the decider's thread, as `search`); None when removing lower-priority pods does not make room.

    A gang with a topology key goes to one domain: the domains are tried one by one, by name (the domain
    its placed members already hold, when there is one), each with only its own nodes' pods as victims,
    and the first where removing them makes room is taken (domains are not compared: each trial is a gang
    search, and a search over every domain's victims at once would not end within a decision's budget)."""
    if prepared.topology is None:
        return _preempt_in(placer, prepared, held_by, budgets, gang_priority, groups, None)
    key = prepared.topology
    domains = ([prepared.domain] if prepared.domain is not None
               else sorted({v.labels[key] for v in placer.views if key in v.labels}))
    for domain in domains:
        def in_domain(node: nodes.Node, domain: str = domain) -> bool:
            return node.metadata.labels.get(key) == domain

        found = _preempt_in(placer, dataclasses.replace(prepared, domain=domain), held_by, budgets, gang_priority,
                            groups, in_domain)
        if found is not None:
            return found
    return None


def _preempt_in(placer: placement.Placer, prepared: Prepared, held_by: preemption.HeldBy,
                budgets: Sequence[preemption.DisruptionBudget], gang_priority: int, groups: preemption.Groups,
                within: Callable[[nodes.Node], bool] | None) -> tuple[preemption.NodeVictims, Decided] | None:
    def fits(fork: placement.Placer) -> Decided | None:
        found = search(fork, prepared)
        return found if isinstance(found, Decided) else None

    answer = preemption.find_for_gang(placer, prepared.pending, gang_priority, fits, held_by, budgets, groups,
                                      within=within)
    if answer is None:
        return None
    chosen, plan = answer
    assert isinstance(plan, Decided)
    return chosen, plan


def consumer_of(decided: Decided, member: Member, claim: model_claims.ResourceClaim) -> Raw:
    """Whom the claim is reserved for: the PodGroup for its own claims, else the member."""
    if decided.group_ref is not None and (claim.metadata.uid or "") in decided.group_claims:
        return decided.group_ref
    return committing.pod_ref(member.pod)


def reserve(rt: Runtime, placer: placement.Placer, decided: Decided) -> None:
    """Every member's devices in the placer and the ledger, before any write. On an error nothing stays
    in the ledger (the caller replaces the placer)."""
    try:
        for member in decided.members:
            placer.commit(member.item, member.placement)
            committing.reserve(rt, member.pod, member.item, member.placement)
    except Exception:
        for member in decided.members:
            committing.release_unsent(rt, member.item)
        raise


# ---- writing --------------------------------------------------------------------------------

async def commit(rt: Runtime, decided: Decided) -> int:
    """Write the gang: every claim first, then every bind. The number of members placed."""
    ref = f"{decided.key[0] or 'default'}/{decided.key[1]}"
    written: list[tuple[model_claims.ResourceClaim, str]] = []  # claims changed (and for whom), in order
    operation = "claim-status"
    try:
        for member in decided.members:
            for claim, allocation in zip(member.item.claims, member.placement.results, strict=True):
                consumer = consumer_of(decided, member, claim)
                await committing.protect(rt, claim)
                written.append((claim, consumer["uid"]))  # from here on it may be written: rolled back if needed
                await committing.allocate(rt, claim, allocation, consumer)
            for claim in member.item.allocated:
                consumer = consumer_of(decided, member, claim)
                if not any(r.uid == consumer["uid"] for r in claim.status.reserved_for):
                    written.append((claim, consumer["uid"]))
                await committing.reserve_shared(rt, claim, consumer)
        # The binds cannot be undone: record them before the first, so that a crash among them is
        # completed from the record (handlers/intents.py, completing.py), not decided again.
        operation = "podgroup-intent"
        await intents.record(rt, decided.key, intents.Intent.of(
            [(m.pod, m.placement.node) for m in decided.members]))
    except committing.Refused as exc:
        _release(rt, decided)
        undone = await committing.give_back(rt, written)
        logger.warning("gang %s: a claim write was refused (%s); rolled back %d claim(s) written for it%s", ref,
                       exc, undone, "" if undone == len(written) else " (the rest is left to the next pass)")
        metrics.observe_gang_commit("rolled-back")
        await _after_failure(rt, decided, operation, exc)
        return 0
    except (committing.Unknown, kube_errors.KubeError) as exc:
        # Not known to have failed: nothing is undone, the devices stay reserved until a read says what
        # happened; the next pass completes the gang around what was written, or rolls it back.
        _release(rt, decided)
        logger.warning("gang %s: a claim write's outcome is unknown (%s); the next pass completes or rolls back "
                       "the gang from what the claims show", ref, exc)
        metrics.observe_gang_commit("unknown")
        await _after_failure(rt, decided, operation, exc)
        return 0
    results = await asyncio.gather(*(_place(rt, decided, member) for member in decided.members),
                                   return_exceptions=True)
    placed = 0
    for member, result in zip(decided.members, results, strict=True):
        if result is True:
            placed += 1
        elif isinstance(result, BaseException):
            logger.error("gang %s: pod %s: binding failed (its claims stay allocated for it; retried)", ref,
                         _ref(member.pod), exc_info=result)
            committing.backoff(rt, member.pod, "bind", result)
    metrics.observe_gang_commit("committed" if placed == len(decided.members) else "incomplete", placed)
    if placed == len(decided.members):
        await intents.clear(rt, decided.key)
        rt.gang_messages.pop(decided.key, None)
        where = f" in domain {decided.domain}" if decided.domain is not None else ""
        await reporting.group_scheduled(rt, decided.key, True, "Scheduled", f"gang of {placed} placed{where}")
        await reporting.group_event(rt, decided.key, "GangPlaced", "Normal",
                           f"gang of {placed} placed{where}: " + ", ".join(
                               f"{m.pod.metadata.name}={m.placement.node}" for m in decided.members))
    return placed


def _release(rt: Runtime, decided: Decided) -> None:
    for member in decided.members:
        committing.release_unsent(rt, member.item)


async def _place(rt: Runtime, decided: Decided, member: Member) -> bool:
    pod = member.pod
    try:
        await committing.bind_or_ungate(rt, pod, member.placement.node)
    except (committing.Refused, committing.Unknown) as exc:
        committing.backoff(rt, pod, "bind", exc)
        logger.warning("pod=%s: gang member not bound: %s (its claims stay allocated for it)", _ref(pod), exc)
        return False
    await committing.placed(rt, pod, member.placement,
                            f" (gang of {len(decided.members)}, PodGroup {decided.key[1]})")
    return True


async def _after_failure(rt: Runtime, decided: Decided, operation: str, exc: BaseException) -> None:
    """Back every member off; a write refused as invalid or forbidden is said on every member."""
    cause = exc.__cause__
    for member in decided.members:
        if isinstance(cause, (kube_errors.InvalidError, kube_errors.ForbiddenError)):
            await reporting.record_error(rt, member.pod, committing.Rejected(
                f"gang of PodGroup {decided.key[1]}: the API server refused the {operation} write: {cause}"))
        else:
            committing.backoff(rt, member.pod, operation,
                               cause if isinstance(cause, kube_errors.KubeError) else exc)


# ---- reporting ------------------------------------------------------------------------------

async def report(rt: Runtime, step: NotPlaced, wants: dict[str, queueing.Wants]) -> None:
    """Every member's PodScheduled says why the gang waits; one Event on the PodGroup per distinct message.
    A PodGroup that cannot be used (`error`) is an object error: SchedulerError on every member, backed off.
    `wants`: per member uid, the changes that may make it fit (queueing hints)."""
    for pod in step.who:
        if step.result == "error":
            await reporting.record_error(rt, pod, items.PodInputError(step.message))
        else:
            await reporting.record_unschedulable(rt, pod, step.message, nodes=False, event=False,
                                                   wants=wants[pod.metadata.uid or ""],
                                                   failure="too-costly" if step.result == "too-costly"
                                                   else "unschedulable")
    if step.result != "waiting":  # kube-scheduler does not try a gang before minCount pods exist
        await reporting.group_scheduled(rt, step.key, False, "SchedulerError" if step.result == "error"
                                        else "Unschedulable", step.message)
    if rt.gang_messages.get(step.key) != step.message:
        rt.gang_messages[step.key] = step.message
        reason = {"waiting": "GangWaiting", "error": "GangError", "too-costly": "DecisionTooCostly"}.get(
            step.result, "GangUnfit")
        # A gang waiting for its members to exist is a normal moment (kube-scheduler's own waiting is no
        # Warning either); the others say something the user must change or know.
        await reporting.group_event(rt, step.key, reason, "Normal" if step.result == "waiting" else "Warning",
                                    step.message)


async def report_error(rt: Runtime, key: Key, pods_: Sequence[pods.Pod], error: MemberError,
                       wants: dict[str, queueing.Wants]) -> None:
    """One member's error: on it as SchedulerError, on the others as the reason the gang waits."""
    await reporting.record_error(rt, error.pod, error.cause)
    text = (f"PodGroup {key[1]}: member {_ref(error.pod)} cannot be placed: "
            f"{reporting.error_message(error.cause)}")
    for pod in pods_:
        if pod.metadata.uid != error.pod.metadata.uid:
            await reporting.record_unschedulable(rt, pod, text, nodes=False, event=False,
                                                   wants=wants[pod.metadata.uid or ""])
    await reporting.group_scheduled(rt, key, False, "SchedulerError", text)
    if rt.gang_messages.get(key) != text:
        rt.gang_messages[key] = text
        await reporting.group_event(rt, key, "GangUnfit", "Warning", text)


async def give_back(rt: Runtime, step: NotPlaced) -> bool:
    """A gang that no longer fits while members hold reservations of an unfinished attempt (a crash, a
    write of unknown outcome): with no member placed, every such reservation is given back (rolled
    back). True when something was given back (the gang is retried on the next pass)."""
    if not step.held or step.any_placed:
        return False
    undone = await committing.give_back(rt, step.held)
    logger.info("gang %s/%s: gave back %d of %d reservation(s) of an unfinished attempt (%s)", *step.key, undone,
                len(step.held), step.message)
    if undone < len(step.held):
        for pod in step.who:
            committing.backoff(rt, pod, "claim-status", RuntimeError("giving back reservations failed"))
    return True
