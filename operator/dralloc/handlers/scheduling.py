"""The scheduling loop: place the pods dralloc owns, then write the decision.

A pod is ours when it has `spec.schedulerName: <ours>` and no node yet
(scheduler mode), or carries our scheduling gate (gate mode). Each pass takes
the pods that are ready (their claims exist; not in backoff; not known to be
unschedulable since the last relevant cluster change), and for each one:

1. decide, without any `await`: build the claims' item, ask the `Placer`, and on
   success record every allocation in the ledger and in the placer, so the next
   pod of this pass cannot get the same devices;
2. commit, in order, each write with a resourceVersion precondition: each
   claim's `status.allocation` + `reservedFor` (one status write per claim),
   then bind (scheduler mode) or pin the node and remove our gate (gate mode).

A failed write releases the pod's ledger entries and backs the pod off
exponentially. A crash between writes needs no journal: on the next pass the
pod's claims are already allocated and reserved for it, the placer then
restricts it to their node, and the pass finishes the binding; if that node no
longer fits, the reservations are rolled back and the pod is placed afresh.
A pod that fits nowhere gets `PodScheduled=False` with the reasons and an
`AllocationFailed` Event (once per distinct message) and is retried only after
something relevant changed.

Errors stay with the pod that met them. An input error (a class that does not
exist, CEL that fails, a claim that cannot be read, anything the allocator
raises) or a bug of ours met while deciding for one pod gives that pod
`PodScheduled=False` with reason `SchedulerError` and an `AllocationError`
Warning Event, counts as `result="error"`, and backs the pod off; a relevant
change (the class created, the claim or a slice replaced) retries it at once.
The other pods of the pass are decided as if it were not there.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import functools
import logging
import time
from typing import Any

from dralloc import metrics
from dralloc.allocation import errors as allocation_errors
from dralloc.allocation import interruption
from dralloc.handlers import clock, committing, completing, deciding, failures, ganging
from dralloc.handlers.runtime import Runtime
from dralloc.kube import errors as kube_errors
from dralloc.kube import resources, writing
from dralloc.lifecycle import extended
from dralloc.model import claims as model_claims
from dralloc.model import pods
from dralloc.scheduling import placement, queueing

logger = logging.getLogger(__name__)

Raw = dict[str, Any]
COMMIT_CONCURRENCY = 32  # pods whose writes are in flight at once
MAX_RESERVATIONS = 256  # ResourceClaimReservedForMaxSize: status.reservedFor holds at most this many


def owned(pod: pods.Pod, *, scheduler_name: str, gate: str) -> bool:
    if pod.finished() or pod.metadata.deletion_timestamp:
        return False
    gates = [g.name for g in pod.spec.scheduling_gates]
    if gate in gates:
        return True
    return pod.spec.scheduler_name == scheduler_name and not pod.spec.node_name and not gates


class Waiting(str):
    """A pod's reason to wait that is an object not there yet (a template, a claim): it waits for its
    claim (`waiting-for-claim` in the queue gauge), it is not unschedulable."""

    __slots__ = ()


def _claim_names(rt: Runtime, pod: pods.Pod) -> list[tuple[str, bool]] | str | None:
    """The claim of every pod.spec.resourceClaims entry (and of its DRA extended resources), each with
    whether the pod names it directly; None while one is still to be created and recorded by the
    lifecycle; a message when it never will be (its template does not exist)."""
    recorded = {s.name: s.resource_claim_name for s in pod.status.resource_claim_statuses}
    namespace = pod.metadata.namespace or "default"
    names: list[tuple[str, bool]] = []
    for entry in pod.spec.resource_claims:
        if entry.resource_claim_name:
            names.append((entry.resource_claim_name, True))
        elif entry.resource_claim_template_name:
            name = recorded.get(entry.name)
            if not name:
                template = entry.resource_claim_template_name
                if rt.cluster.templates.get(namespace, template) is None:
                    problem = rt.cluster.templates.problems.get((namespace, template))
                    if problem is not None:
                        raise PodInputError(f"pod entry {entry.name}: ResourceClaimTemplate {namespace}/{template} "
                                            f"cannot be used: {problem}")
                    return Waiting(f"pod entry {entry.name}: ResourceClaimTemplate {namespace}/{template} not found")
                return _awaiting_controller_manager(rt, pod, entry.name, template)
            names.append((name, False))
    if extended.dra_resources(pod, list(rt.cluster.classes.all())):
        name = extended.recorded_claim_name(pod)
        if not name:
            return None
        names.append((name, False))
    return names


# How long a pod waits, unreported, for kube-controller-manager to create a claim from a template.
CLAIM_CREATION_PATIENCE = 10.0


def _awaiting_controller_manager(rt: Runtime, pod: pods.Pod, entry: str, template: str) -> str | None:
    """None while the claim of a template entry may still come; a message once kube-controller-manager,
    which creates it (--claim-lifecycle), has not done so for CLAIM_CREATION_PATIENCE seconds."""
    if rt.coexistence.does("claim-lifecycle"):
        return None  # our own lifecycle creates it, on its next pass
    memory = rt.memory(pod.metadata.uid or "")
    now = time.monotonic()
    if memory.claims_awaited_since is None:
        memory.claims_awaited_since = now
    if now - memory.claims_awaited_since < CLAIM_CREATION_PATIENCE:
        return None
    return Waiting(f"pod entry {entry}: waiting for kube-controller-manager to create its ResourceClaim from "
            f"ResourceClaimTemplate {pod.metadata.namespace or 'default'}/{template} (its resourceclaim-controller "
            "does that while its leader Lease is held; if that controller is off, run dralloc with "
            "--claim-lifecycle=dralloc)")


class PassResult:
    def __init__(self) -> None:
        self.placed = 0
        self.unschedulable = 0
        self.waiting = 0
        self.errors = 0


class PodInputError(Exception):
    """One of the pod's own objects cannot be used as it is (the message names it and why)."""


def _item_for(rt: Runtime, pod: pods.Pod) -> placement.Item | str | None:
    """The placement item for a pod; a string when it cannot be placed as is; None when not ready.

    Raises `PodInputError` when a claim of the pod exists but cannot be read.
    """
    names = _claim_names(rt, pod)
    if names is None or isinstance(names, str):
        return names
    namespace = pod.metadata.namespace or "default"
    to_allocate: list[model_claims.ResourceClaim] = []
    allocated: list[model_claims.ResourceClaim] = []
    for name, direct in names:
        claim = rt.cluster.claims.get(namespace, name)
        if claim is None:
            problem = rt.cluster.claims.problems.get((namespace, name))
            if problem is not None:
                raise PodInputError(f"ResourceClaim {namespace}/{name} cannot be used: {problem}")
            if direct:  # as kube-scheduler: the pod waits for it, and says so
                return Waiting(f"waiting for ResourceClaim {namespace}/{name} to be created")
            return None  # created by the lifecycle, not seen yet
        if claim.metadata.deletion_timestamp:
            return f"ResourceClaim {namespace}/{name} is being deleted"
        if (claim.metadata.uid or "") in rt.ledger:
            return None  # our write for it is not observed yet
        if claim.status.allocation is None:
            to_allocate.append(claim)
        else:
            reserved = claim.status.reserved_for
            if len(reserved) >= MAX_RESERVATIONS and not any(r.uid == pod.metadata.uid for r in reserved):
                return (f"ResourceClaim {namespace}/{name} is in use: reserved for the maximum of "
                        f"{MAX_RESERVATIONS} consumers")
            allocated.append(claim)
    return placement.Item(name=f"{namespace}/{pod.metadata.name}", claims=tuple(to_allocate), pod=pod,
                          allocated=tuple(allocated))


def ready_pods(rt: Runtime, now: float) -> list[pods.Pod]:
    """The pods to try now, in the queue's fair order (round-robin across namespaces, then priority,
    then age). Every pending pod we own joins the queue; pods that left it (placed, deleted, no longer
    ours) are forgotten, with what the scheduler remembered about them."""
    settings = rt.settings.scheduling
    owned_now: dict[str, pods.Pod] = {}
    for key in list(rt.cluster.unplaced_pods):
        pod = rt.cluster.pods.get(*key)
        if pod is None:
            continue
        if not rt.watches_namespace(pod.metadata.namespace):
            continue
        if not owned(pod, scheduler_name=settings.scheduler_name, gate=settings.gate):
            continue
        uid = pod.metadata.uid or ""
        memory = rt.pods.get(uid)
        if memory is not None and memory.bound_to is not None and not pod.spec.node_name:
            continue  # bound by us; the watch has not shown it yet
        owned_now[uid] = pod
        rt.queue.add(uid, key, priority=pod.spec.priority or 0, created=pod.metadata.creation_timestamp or "")
    rt.queue.keep_only(owned_now)
    forget_gone(rt)
    rt.queue.flush(now)
    return [owned_now[entry.uid] for entry in rt.queue.order(rt.queue.ready(now))]


def forget_gone(rt: Runtime) -> None:
    """What is remembered about pods and PodGroups that left the cluster goes with them."""
    for uid in [uid for uid in rt.pods if uid not in rt.cluster.pod_keys]:
        del rt.pods[uid]
    for key in [key for key in rt.gang_messages if key not in rt.cluster.pod_groups.entries]:
        del rt.gang_messages[key]


def wants(rt: Runtime, pod: pods.Pod, item: placement.Item | None = None, gang: tuple[str, str] | None = None,
          ) -> queueing.Wants:
    """What may make the pod fit besides a change that frees something for everyone (queueing hints):
    its own object, its claims and their classes, its templates, its PodGroup."""
    namespace = pod.metadata.namespace or ""
    recorded = {s.name: s.resource_claim_name for s in pod.status.resource_claim_statuses}
    claim_keys: set[tuple[str, str]] = set()
    template_keys: set[tuple[str, str]] = set()
    for entry in pod.spec.resource_claims:
        name = entry.resource_claim_name or recorded.get(entry.name)
        if name:
            claim_keys.add((namespace, name))
        if entry.resource_claim_template_name:
            template_keys.add((namespace, entry.resource_claim_template_name))
    classes: set[str] = set()
    claims_ = item.claims + item.allocated if item is not None else tuple(
        c for c in (rt.cluster.claims.get(*k) for k in claim_keys) if c is not None)
    for claim in claims_:
        claim_keys.add((claim.metadata.namespace or "", claim.metadata.name))
        for request in claim.spec.devices.requests:
            if request.exactly is not None and request.exactly.device_class_name:
                classes.add(request.exactly.device_class_name)
            classes.update(sub.device_class_name for sub in request.first_available if sub.device_class_name)
    return queueing.Wants(pod=(namespace, pod.metadata.name), claims=frozenset(claim_keys),
                          classes=frozenset(classes), templates=frozenset(template_keys), pod_group=gang)


@dataclasses.dataclass(frozen=True)
class _Decided:
    item: placement.Item
    decision: placement.Placement


@dataclasses.dataclass(frozen=True)
class _NotPlaced:
    message: str
    result: str  # the allocation-attempts label: unschedulable, budget-exhausted
    item: placement.Item | None = None  # set when reservations of an earlier attempt may need rolling back
    nodes: bool = True  # a reason per group of nodes (else one about the pod's own objects)


def _place(placer: placement.Placer, item: placement.Item) -> _Decided | _NotPlaced:
    """Where the item goes (run by the decider's worker thread: reads only the placer and the item).
    Its explanation, when it fits nowhere, is worked out with what is left of the decision's budget;
    when that is not enough, the pod is told it fits nowhere without the reasons per node."""
    decision = placer.place(item, explain=False)
    if isinstance(decision, placement.Placement):
        return _Decided(item, decision)
    result = "budget-exhausted" if decision.budget_exhausted else "unschedulable"
    try:
        explained = placer.explanation(item, budget_exhausted=decision.budget_exhausted)
    except interruption.Interrupted:
        return _NotPlaced("no node fits its claims and constraints (working out the reason on every node would "
                          "take longer than the decision's CPU budget)", result, item)
    return _NotPlaced(explained.message(), result, item)


def error_message(exc: BaseException) -> str:
    """What a user reads for an error: input errors as they are (they name the object and field)."""
    if isinstance(exc, (allocation_errors.AllocationInputError, PodInputError, committing.Rejected)):
        return str(exc)
    return failures.internal_error(exc)


def _record_in_placer(placer: placement.Placer, step: _Decided | _NotPlaced) -> None:
    """A decision joins the placer's view (in the decider's thread, outside the budget): the next
    decision of the pass cannot get the same devices."""
    if isinstance(step, _Decided):
        placer.commit(step.item, step.decision)


async def _expect_queue(rt: Runtime, placer: placement.Placer, queue: list[pods.Pod]) -> None:
    """The fragmentation-aware policy weighs choices by the shapes of the pods waiting (worked out in the
    decider's thread: a tenant's thousand distinct shapes must not hold the loop)."""
    if placer.model is None:
        return
    items = []
    for pod in queue:
        try:
            item = _item_for(rt, pod)
        except Exception:  # the pod's own decision reports its error; here it only does not count
            continue
        if isinstance(item, placement.Item):
            items.append(item)
    answer = await rt.decider.run(functools.partial(placer.expect, items))
    if isinstance(answer, deciding.TooCostly):
        logger.warning("the queue's %d request shapes took more than the decision budget to weigh; the "
                       "fragmentation-aware policy learns them from arrivals instead", len(items))


# A pass decides for at most this long (wall seconds) before it ends and the next one takes the queue
# afresh: pods that arrived meanwhile, of every namespace, are then served in the fair order.
PASS_SLICE = 0.5
# Single pods decided in one trip to the decider's thread (it returns earlier after 50 ms of CPU).
BATCH = 32


async def run_pass(rt: Runtime) -> PassResult:
    """One pass over the ready pods, in the queue's fair order, for at most PASS_SLICE seconds.

    Each decision runs in the decider's worker thread under its CPU budget (the loop stays free);
    recording it (placer, ledger) and writing it happen on the loop. Whatever goes wrong while
    deciding for one pod (an input error, a bug of ours, a decision too costly) is reported on that
    pod, which backs off; the pass goes on with the others.
    """
    result = PassResult()
    if len(rt.ledger):
        await committing.resolve_unknown(rt)
    now = time.monotonic()
    pods_now = ready_pods(rt, now)
    await _report_unreadable(rt)
    if not pods_now:
        return result
    placer = rt.views.placer(rt.policy)
    await _expect_queue(rt, placer, pods_now)
    ends = time.monotonic() + PASS_SLICE
    # Decisions are made one after another; the writes of decided pods run concurrently (each
    # pod's own writes stay in order), as kube-scheduler binds asynchronously.
    commits: set[asyncio.Task[int]] = set()
    limit = asyncio.Semaphore(COMMIT_CONCURRENCY)

    async def commit(pod: pods.Pod, item: placement.Item, decision: placement.Placement) -> int:
        async with limit:
            try:
                return int(await committing.commit(rt, pod, item, decision))
            except committing.Rejected as exc:  # invalid or forbidden: say so on the pod
                await _record_error(rt, pod, exc)
                return 0
            except Exception as exc:  # a bug of ours in one pod's commit must not end the pass
                logger.exception("pod=%s/%s: committing the placement failed", pod.metadata.namespace,
                                 pod.metadata.name)
                metrics.observe_object_error("scheduling")
                committing.backoff(rt, pod, "claim-status", exc)
                return 0

    async def commit_gang(decided: ganging.Decided) -> int:
        try:
            async with limit:
                return await ganging.commit(rt, decided)
        except Exception as exc:  # a bug of ours in one gang's commit must not end the pass
            logger.exception("gang %s/%s: committing the placement failed", *decided.key)
            metrics.observe_object_error("scheduling")
            for member in decided.members:
                committing.release_unsent(rt, member.item)
                committing.backoff(rt, member.pod, "claim-status", exc)
            return 0
        finally:
            rt.gangs_committing.discard(decided.key)

    async def complete_gang(key: ganging.Key, checked: completing.Checked) -> int:
        try:
            async with limit:
                return await completing.complete(rt, key, checked)
        except Exception:  # a bug of ours in one gang's completion must not end the pass
            logger.exception("gang %s/%s: completing the recorded binds failed", *key)
            metrics.observe_object_error("scheduling")
            return 0
        finally:
            rt.gangs_committing.discard(key)

    # Gangs (PodGroups with the gang policy): decided whole at their first ready member.
    gang_members = ganging.index_members(rt) if any(ganging.gang_of(rt, p) for p in pods_now) else {}
    gangs_seen: set[ganging.Key] = set()

    queue = collections.deque(pods_now)
    while queue:
        if time.monotonic() > ends:
            rt.scheduling_wakeup.set()  # the rest stay ready: the next pass orders them with newcomers
            break
        fresh = _current(rt, queue.popleft())
        if fresh is None:
            continue
        gang = ganging.gang_of(rt, fresh) if gang_members else None
        if gang is not None:
            if gang in gangs_seen or gang in rt.gangs_committing:
                continue  # decided already in this pass, or its writes are still in flight
            gangs_seen.add(gang)
            intent = completing.intent_of(rt, gang)
            if intent is not None:  # binds recorded, not all done (a crash, an unknown outcome): finish them
                rt.gangs_committing.add(gang)
                commits.add(asyncio.create_task(complete_gang(gang, completing.check(rt, placer, gang, intent))))
                continue
            members = gang_members.get(gang) or ganging.Members(pending=[fresh])
            decided, placer = await _gang(rt, placer, gang, members, result)
            if decided is not None:
                rt.gangs_committing.add(gang)
                commits.add(asyncio.create_task(commit_gang(decided)))
            continue
        # A run of single pods (up to BATCH) is decided in one trip to the decider's thread.
        run = [fresh]
        while queue and len(run) < BATCH:
            following = _current(rt, queue[0])
            if following is not None and gang_members and ganging.gang_of(rt, following) is not None:
                break
            queue.popleft()
            if following is not None:
                run.append(following)
        ready: list[tuple[pods.Pod, placement.Item]] = []
        for pod in run:
            prepared = await _prepare(rt, pod, result)
            if isinstance(prepared, placement.Item):
                ready.append((pod, prepared))
            elif prepared is not None:
                await _not_placed(rt, pod, prepared, result)
        if not ready:
            continue
        answers = await rt.decider.run_each([functools.partial(_place, placer, item) for _, item in ready],
                                            functools.partial(_record_in_placer, placer))
        queue.extendleft(pod for pod, _ in reversed(ready[len(answers):]))  # not reached: next in line
        for (pod, item), answer in zip(ready, answers, strict=False):
            step = await _outcome(rt, pod, item, answer, result)
            if isinstance(answer, deciding.Failed):
                placer = rt.views.placer(rt.policy)  # an error may have left the placer half-way through a commit
            if step is None:
                continue
            if isinstance(step, _NotPlaced):
                await _not_placed(rt, pod, step, result)
                continue
            try:
                # The placer has it already (the decider recorded it); if the ledger fails half-way, a
                # fresh placer (from the cluster view and the ledger) replaces it.
                committing.reserve(rt, pod, step.item, step.decision)
            except Exception as exc:
                result.errors += 1
                committing.release_unsent(rt, step.item)
                await _record_error(rt, pod, exc)
                placer = rt.views.placer(rt.policy)
                continue
            commits.add(asyncio.create_task(commit(pod, step.item, step.decision)))
        if len(commits) >= COMMIT_CONCURRENCY * 4:
            done, commits = await asyncio.wait(commits, return_when=asyncio.FIRST_COMPLETED)
            result.placed += sum(1 for task in done if task.result())
    if commits:
        done, _ = await asyncio.wait(commits)
        result.placed += sum(task.result() for task in done)
    return result


def _current(rt: Runtime, pod: pods.Pod) -> pods.Pod | None:
    """The pod as the view has it now; None when it is gone (or replaced by another of its name)."""
    fresh = rt.cluster.pods.get(pod.metadata.namespace or "", pod.metadata.name)
    return fresh if fresh is not None and fresh.metadata.uid == pod.metadata.uid else None


async def _not_placed(rt: Runtime, pod: pods.Pod, step: _NotPlaced, result: PassResult) -> None:
    """Report a pod that does not fit (giving back what an earlier attempt holds first); never raises."""
    try:
        if step.item is not None and await _roll_back_partial(rt, pod, step.item):
            return  # reservations of an earlier attempt released; retried on the next pass
        await _record_unschedulable(rt, pod, step.message, nodes=step.nodes, wants=wants(rt, pod, step.item),
                                    failure=step.result)
    except Exception as exc:
        logger.exception("pod=%s/%s: reporting that it does not fit failed", pod.metadata.namespace,
                         pod.metadata.name)
        metrics.observe_object_error("scheduling")
        committing.backoff(rt, pod, "pod-status", exc)
    result.unschedulable += 1


async def _prepare(rt: Runtime, pod: pods.Pod, result: PassResult) -> placement.Item | _NotPlaced | None:
    """The pod's item from the view (on the loop); a _NotPlaced when it cannot be placed as it is; None
    when there is nothing to decide for it in this pass (not ready, waiting, or its error reported)."""
    try:
        item = _item_for(rt, pod)
    except Exception as exc:
        metrics.observe_allocation("error", 0.0)
        result.errors += 1
        await _record_error(rt, pod, exc)
        return None
    if item is None:
        result.waiting += 1
        return None
    if isinstance(item, Waiting):
        result.waiting += 1
        await _record_unschedulable(rt, pod, item, nodes=False, wants=wants(rt, pod), failure="waiting")
        return None
    if isinstance(item, str):
        metrics.observe_allocation("unschedulable", 0.0)
        return _NotPlaced(item, "unschedulable", nodes=False)
    return item


async def _outcome(rt: Runtime, pod: pods.Pod, item: placement.Item,
                   answer: deciding.Decided[_Decided | _NotPlaced] | deciding.TooCostly | deciding.Failed,
                   result: PassResult) -> _Decided | _NotPlaced | None:
    """What the decider answered for one pod, counted; a too-costly or failed decision reported here
    (None then, as when the operator is stopping)."""
    if isinstance(answer, deciding.Failed):
        metrics.observe_allocation("error", 0.0)
        result.errors += 1
        await _record_error(rt, pod, answer.error)
        return None
    if isinstance(answer, deciding.TooCostly):
        if answer.stopping:
            return None
        metrics.observe_allocation("too-costly", answer.cpu_seconds)
        result.unschedulable += 1
        await _record_unschedulable(rt, pod, too_costly_message(item, answer), nodes=False,
                                    wants=wants(rt, pod, item), failure="too-costly")
        return None
    step = answer.value
    if isinstance(step, _Decided):
        metrics.observe_allocation("allocated", answer.cpu_seconds, step.decision.steps)
    else:
        metrics.observe_allocation(step.result, answer.cpu_seconds)
    return step


def too_costly_message(item: placement.Item, answer: deciding.TooCostly) -> str:
    """What a pod whose decision used up its CPU budget is told: which claims, which budget."""
    claims_ = ", ".join(claim.ref() for claim in item.claims) or "none to allocate"
    return (f"deciding where this pod fits took more than the scheduler's CPU budget of {answer.budget:g} s per "
            f"decision (claims {claims_}); it is retried after a backoff when the cluster changes. Fewer "
            "requests, fewer firstAvailable alternatives or a narrower selector make the search cheaper")


async def _gang(rt: Runtime, placer: placement.Placer, key: ganging.Key, members: ganging.Members,
                result: PassResult) -> tuple[ganging.Decided | None, placement.Placer]:
    """Decide one gang (its search in the decider's thread) and reserve its devices; report it when it is
    not placed. The decision to commit (None: nothing to write), and the placer to go on with."""
    started = time.perf_counter()
    gang_wants = {pod.metadata.uid or "": wants(rt, pod, gang=key) for pod in members.pending}
    try:
        prepared = ganging.prepare(rt, placer, key, members)
        if isinstance(prepared, ganging.Prepared):
            answer = await rt.decider.run(functools.partial(ganging.search, placer, prepared))
            if isinstance(answer, deciding.TooCostly):
                if answer.stopping:
                    return None, placer
                step: ganging.Decided | ganging.NotPlaced | None = ganging.too_costly(prepared, answer.budget)
            else:
                step = answer.value
        else:
            step = prepared
        if isinstance(step, ganging.Decided):
            ganging.reserve(rt, placer, step)
    except ganging.MemberError as exc:
        metrics.observe_gang("error", time.perf_counter() - started)
        result.errors += 1
        await ganging.report_error(rt, key, members.pending, exc, gang_wants)
        return None, rt.views.placer(rt.policy)
    except Exception as exc:  # a bug of ours: every member says so, the pass goes on
        metrics.observe_gang("error", time.perf_counter() - started)
        result.errors += 1
        for pod in members.pending:
            await _record_error(rt, pod, exc)
        return None, rt.views.placer(rt.policy)
    elapsed = time.perf_counter() - started
    if step is None:
        result.waiting += len(members.pending)
        return None, placer
    if isinstance(step, ganging.Decided):
        metrics.observe_gang("placed", elapsed, step.steps)
        return step, placer
    try:
        if await ganging.give_back(rt, step):
            return None, placer  # reservations of an earlier attempt released; retried on the next pass
        metrics.observe_gang(step.result, elapsed, step.steps)
        await ganging.report(rt, step, gang_wants)
    except Exception as exc:
        logger.exception("gang %s/%s: reporting that it is not placed failed", *key)
        metrics.observe_object_error("scheduling")
        for pod in members.pending:
            committing.backoff(rt, pod, "pod-status", exc)
    if step.result == "waiting":
        result.waiting += len(step.who)
    else:
        result.unschedulable += len(step.who)
    return None, placer


async def _report_unreadable(rt: Runtime) -> None:
    """Pods of ours that do not parse: they cannot be placed; say why on each, once."""
    problems = rt.cluster.pods.problems
    if not problems:
        return
    settings = rt.settings.scheduling
    for key in [k for k in rt.cluster.unplaced_pods if k in problems]:
        raw = rt.cluster.pods.raw(*key)
        if raw is None or not rt.watches_namespace(key[0]):
            continue
        spec = raw.get("spec")
        spec = spec if isinstance(spec, dict) else {}
        gates = [g.get("name") for g in spec.get("schedulingGates") or [] if isinstance(g, dict)]
        if settings.gate not in gates and spec.get("schedulerName") != settings.scheduler_name:
            continue
        memory = rt.memory(str((raw.get("metadata") or {}).get("uid") or ""))
        text = f"dralloc cannot read this pod: {problems[key]}"
        if memory.last_message == text:
            continue
        memory.last_message = text
        metrics.observe_object_error("scheduling")
        logger.warning("pod=%s/%s: %s", key[0], key[1], text)
        await _report(rt, *key, reason="SchedulerError", event_reason="AllocationError", message=text)


async def _record_error(rt: Runtime, pod: pods.Pod, exc: BaseException) -> None:
    """Deciding for this pod failed: say so on the pod (when the message changed), back it off, never raise."""
    metrics.observe_object_error("scheduling")
    uid = pod.metadata.uid or ""
    memory = rt.memory(uid)
    delay = rt.queue.back_off(uid, time.monotonic()) if uid in rt.queue else 0.0
    memory.failure = "error"
    text = error_message(exc)
    if text in (memory.last_message, _said(rt, pod, "SchedulerError")):
        memory.last_message = text
        logger.debug("pod=%s/%s: still failing: %s", pod.metadata.namespace, pod.metadata.name, text)
        return
    memory.last_message = text
    if isinstance(exc, (allocation_errors.AllocationInputError, PodInputError, committing.Rejected)):
        logger.warning("pod=%s/%s: cannot be scheduled: %s (retrying in %.1fs)",
                       pod.metadata.namespace, pod.metadata.name, text, delay)
    else:
        logger.error("pod=%s/%s: deciding its placement failed; retrying in %.1fs", pod.metadata.namespace,
                     pod.metadata.name, delay, exc_info=exc)
    await _report(rt, pod.metadata.namespace or "", pod.metadata.name, reason="SchedulerError",
                  event_reason="AllocationError", message=text)


def _said(rt: Runtime, pod: pods.Pod, reason: str) -> str | None:
    """What the pod's PodScheduled condition says now with this reason (None: nothing): a replica that
    just took over, or restarted, does not repeat what the last one wrote."""
    raw = rt.cluster.pods.raw(pod.metadata.namespace or "", pod.metadata.name) or {}
    for condition in (raw.get("status") or {}).get("conditions") or []:
        if isinstance(condition, dict) and condition.get("type") == "PodScheduled":
            if condition.get("status") == "False" and condition.get("reason") == reason:
                return str(condition.get("message") or "")
    return None


async def _report(rt: Runtime, namespace: str, name: str, *, reason: str, event_reason: str, message: str,
                  event: bool = True) -> None:
    """PodScheduled=False with `reason`, and a Warning Event (unless not `event`); failures to write are
    logged, never raised."""
    session = rt.require_session()
    raw = rt.cluster.pods.raw(namespace, name) or {}
    conditions = [c for c in (raw.get("status") or {}).get("conditions") or [] if c.get("type") != "PodScheduled"]
    conditions.append({"type": "PodScheduled", "status": "False", "reason": reason,
                       "message": message[:32768], "lastTransitionTime": clock.stamp()})
    try:
        stored = await writing.merge_patch(session, resources.PODS, name, {"status": {"conditions": conditions}},
                                           namespace or "default", subresource="status")
        rt.cluster.apply("Pod", "MODIFIED", stored)
    except kube_errors.KubeError as exc:
        logger.warning("pod=%s/%s: cannot record PodScheduled=False: %s", namespace, name, exc)
    if not event:
        return
    try:
        await rt.events.post(session, regarding=raw, reason=event_reason, type_="Warning", action="Scheduling",
                             message=message)
    except kube_errors.KubeError as exc:
        logger.warning("pod=%s/%s: cannot post the %s Event: %s", namespace, name, event_reason, exc)


async def _roll_back_partial(rt: Runtime, pod: pods.Pod, item: placement.Item) -> bool:
    """An unbound pod holding reservations that no longer fit anywhere: give them back."""
    mine = [c for c in item.allocated if any(r.uid == pod.metadata.uid for r in c.status.reserved_for)]
    if not mine:
        return False
    for claim in mine:
        raw = rt.cluster.claims.raw(claim.metadata.namespace or "", claim.metadata.name) or {}
        status = dict(raw.get("status") or {})
        keep = [r for r in status.get("reservedFor") or [] if r.get("uid") != pod.metadata.uid]
        status["reservedFor"] = keep
        if not keep:
            status.pop("reservedFor")
            status.pop("allocation", None)
            status.pop("devices", None)
        try:
            await committing.write_claim_status(rt, claim, status)
        except kube_errors.KubeError as exc:
            committing.backoff(rt, pod, "claim-status", exc)
            return True
    logger.info("pod=%s/%s: released %d earlier reservation(s) that no longer fit", pod.metadata.namespace,
                pod.metadata.name, len(mine))
    return True


async def _record_unschedulable(rt: Runtime, pod: pods.Pod, message: str, *, wants: queueing.Wants,
                                nodes: bool = True, event: bool = True, failure: str = "unschedulable") -> None:
    """The pod does not fit (or was too costly to decide): parked until a change it wants, after its
    backoff; its condition and Event are written only when the reason changed."""
    uid = pod.metadata.uid or ""
    memory = rt.memory(uid)
    if uid in rt.queue:
        rt.queue.unschedulable(uid, time.monotonic(), wants)
    memory.failure = failure
    text = f"0/{len(rt.cluster.nodes)} nodes are available: {message}" if nodes else message
    if text in (memory.last_message, _said(rt, pod, "Unschedulable")):
        memory.last_message = text
        return
    memory.last_message = text
    await _report(rt, pod.metadata.namespace or "", pod.metadata.name, reason="Unschedulable",
                  event_reason="DecisionTooCostly" if failure == "too-costly" else "AllocationFailed",
                  message=text, event=event)


async def scheduling_loop(rt: Runtime, stopped: asyncio.Event) -> None:
    """Run passes whenever something changed, or when a pod's backoff ends."""
    try:
        while not stopped.is_set():
            rt.scheduling_wakeup.clear()
            try:
                await run_pass(rt)
            except Exception:  # per-pod errors never get here; this is a bug of ours, or the API is gone
                logger.exception("scheduling pass failed; retrying")
                metrics.observe_pass_failure("scheduling")
                await asyncio.sleep(1.0)
            timeout = _next_retry(rt)
            try:
                await asyncio.wait_for(rt.scheduling_wakeup.wait(), timeout=timeout)
            except TimeoutError:
                pass
    finally:
        rt.decider.close()


def _next_retry(rt: Runtime) -> float:
    waits = [5.0]
    due = rt.queue.next_due(time.monotonic())
    if due is not None:
        waits.append(due)
    if rt.ledger.unknown():
        waits.append(committing.RESOLVE_EVERY)
    return max(0.05, min(waits))
