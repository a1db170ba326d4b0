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
import dataclasses
import logging
import time
from typing import Any

from dralloc import metrics
from dralloc.allocation import errors as allocation_errors
from dralloc.handlers import clock, committing, completing, failures, ganging
from dralloc.handlers.runtime import Runtime
from dralloc.kube import errors as kube_errors
from dralloc.kube import resources, writing
from dralloc.lifecycle import extended
from dralloc.model import claims as model_claims
from dralloc.model import pods
from dralloc.scheduling import placement

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
                    return f"pod entry {entry.name}: ResourceClaimTemplate {namespace}/{template} not found"
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
    return (f"pod entry {entry}: waiting for kube-controller-manager to create its ResourceClaim from "
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
                return f"waiting for ResourceClaim {namespace}/{name} to be created"
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
    settings = rt.settings.scheduling
    found = []
    for key in list(rt.cluster.unplaced_pods):
        pod = rt.cluster.pods.get(*key)
        if pod is None:
            continue
        if not rt.watches_namespace(pod.metadata.namespace):
            continue
        if not owned(pod, scheduler_name=settings.scheduler_name, gate=settings.gate):
            continue
        memory = rt.memory(pod.metadata.uid or "")
        if memory.bound_to is not None and not pod.spec.node_name:
            continue  # bound by us; the watch has not shown it yet
        # A pod that failed with an error waits out its backoff, unless something it may
        # depend on changed since (a class created or fixed, a claim or slice replaced).
        if memory.retry_at > now and (memory.error_at is None or memory.error_at == rt.cluster.relevant_changes):
            continue
        if memory.unschedulable_at is not None and memory.unschedulable_at == rt.cluster.relevant_changes:
            continue
        found.append(pod)
    # Higher priority first, then oldest first: the order kube-scheduler's queue uses.
    found.sort(key=lambda p: (-(p.spec.priority or 0), p.metadata.creation_timestamp or "", p.metadata.name))
    return found


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


def _decide(rt: Runtime, placer: placement.Placer, pod: pods.Pod) -> _Decided | _NotPlaced | None:
    """Where the pod goes, without any await; None while it is not ready. May raise anything."""
    item = _item_for(rt, pod)
    if item is None:
        return None
    if isinstance(item, str):
        return _NotPlaced(item, "unschedulable", nodes=False)
    decision = placer.place(item)
    if isinstance(decision, placement.NoPlacement):
        return _NotPlaced(decision.message(), "budget-exhausted" if decision.budget_exhausted else "unschedulable",
                          item)
    return _Decided(item, decision)


def error_message(exc: BaseException) -> str:
    """What a user reads for an error: input errors as they are (they name the object and field)."""
    if isinstance(exc, (allocation_errors.AllocationInputError, PodInputError, committing.Rejected)):
        return str(exc)
    return failures.internal_error(exc)


def _expect_queue(rt: Runtime, placer: placement.Placer, queue: list[pods.Pod]) -> None:
    """The fragmentation-aware policy weighs choices by the shapes of the pods waiting."""
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
    placer.expect(items)


async def run_pass(rt: Runtime) -> PassResult:
    """One pass over the ready pods. Decisions are synchronous; writes follow each decision.

    Whatever goes wrong while deciding for one pod (an input error, a bug of ours) is
    reported on that pod and retried with backoff; the pass goes on with the others.
    """
    result = PassResult()
    if len(rt.ledger):
        await committing.resolve_unknown(rt)
    now = time.monotonic()
    pods_now = ready_pods(rt, now)
    if not pods_now:
        await _report_unreadable(rt)
        return result
    await _report_unreadable(rt)
    placer = rt.views.placer(rt.policy)
    _expect_queue(rt, placer, pods_now)
    # The changes the placer's view includes. The pass awaits between pods (status writes, Events),
    # and changes arriving meanwhile are not in the view: a pod found not to fit is retried on any
    # change after this count, not after the count when its result is recorded.
    seen = rt.cluster.relevant_changes
    # Decisions are made one after another without awaits; the writes of decided pods run
    # concurrently (each pod's own writes stay in order), as kube-scheduler binds asynchronously.
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

    async def complete_gang(key: ganging.Key, intent: completing.Intent) -> int:
        try:
            async with limit:
                return await completing.complete(rt, key, intent)
        except Exception:  # a bug of ours in one gang's completion must not end the pass
            logger.exception("gang %s/%s: completing the recorded binds failed", *key)
            metrics.observe_object_error("scheduling")
            return 0
        finally:
            rt.gangs_committing.discard(key)

    # Gangs (PodGroups with the gang policy): decided whole at their first ready member.
    gang_members = ganging.index_members(rt) if any(ganging.gang_of(rt, p) for p in pods_now) else {}
    gangs_seen: set[ganging.Key] = set()

    for pod in pods_now:
        fresh = rt.cluster.pods.get(pod.metadata.namespace or "", pod.metadata.name)
        if fresh is None or fresh.metadata.uid != pod.metadata.uid:
            continue
        gang = ganging.gang_of(rt, fresh) if gang_members else None
        if gang is not None:
            if gang in gangs_seen or gang in rt.gangs_committing:
                continue  # decided already in this pass, or its writes are still in flight
            gangs_seen.add(gang)
            intent = completing.intent_of(rt, gang)
            if intent is not None:  # binds recorded, not all done (a crash, an unknown outcome): finish them
                rt.gangs_committing.add(gang)
                commits.add(asyncio.create_task(complete_gang(gang, intent)))
                continue
            members = gang_members.get(gang) or ganging.Members(pending=[fresh])
            decided, placer, seen = await _gang(rt, placer, gang, members, seen, result)
            if decided is not None:
                rt.gangs_committing.add(gang)
                commits.add(asyncio.create_task(commit_gang(decided)))
            continue
        started = time.perf_counter()
        try:
            step = _decide(rt, placer, fresh)
            if isinstance(step, _Decided):
                # The placer first: if it fails half-way, nothing is reserved and a fresh
                # placer (from the cluster view and the ledger) replaces it below.
                placer.commit(step.item, step.decision)
                committing.reserve(rt, fresh, step.item, step.decision)
        except Exception as exc:
            metrics.observe_allocation("error", time.perf_counter() - started)
            result.errors += 1
            await _record_error(rt, fresh, exc, seen=seen)
            placer, seen = rt.views.placer(rt.policy), rt.cluster.relevant_changes
            continue
        elapsed = time.perf_counter() - started
        if step is None:
            result.waiting += 1
            continue
        if isinstance(step, _NotPlaced):
            try:
                if step.item is not None and await _roll_back_partial(rt, fresh, step.item):
                    continue  # reservations of an earlier attempt released; retried on the next pass
                metrics.observe_allocation(step.result, elapsed)
                await _record_unschedulable(rt, fresh, step.message, nodes=step.nodes, seen=seen)
            except Exception as exc:
                logger.exception("pod=%s/%s: reporting that it does not fit failed", fresh.metadata.namespace,
                                 fresh.metadata.name)
                metrics.observe_object_error("scheduling")
                committing.backoff(rt, fresh, "pod-status", exc)
            result.unschedulable += 1
            continue
        metrics.observe_allocation("allocated", elapsed, step.decision.steps)
        commits.add(asyncio.create_task(commit(fresh, step.item, step.decision)))
        if len(commits) >= COMMIT_CONCURRENCY * 4:
            done, commits = await asyncio.wait(commits, return_when=asyncio.FIRST_COMPLETED)
            result.placed += sum(1 for task in done if task.result())
    if commits:
        done, _ = await asyncio.wait(commits)
        result.placed += sum(task.result() for task in done)
    return result


async def _gang(rt: Runtime, placer: placement.Placer, key: ganging.Key, members: ganging.Members, seen: int,
                result: PassResult) -> tuple[ganging.Decided | None, placement.Placer, int]:
    """Decide one gang and reserve its devices (no await until then); report it when it is not placed.
    The decision to commit (None: nothing to write), and the placer and `seen` to go on with."""
    started = time.perf_counter()
    try:
        step = ganging.decide(rt, placer, key, members)
        if isinstance(step, ganging.Decided):
            ganging.reserve(rt, placer, step)
    except ganging.MemberError as exc:
        metrics.observe_gang("error", time.perf_counter() - started)
        result.errors += 1
        await ganging.report_error(rt, key, members.pending, exc, seen)
        return None, rt.views.placer(rt.policy), rt.cluster.relevant_changes
    except Exception as exc:  # a bug of ours: every member says so, the pass goes on
        metrics.observe_gang("error", time.perf_counter() - started)
        result.errors += 1
        for pod in members.pending:
            await _record_error(rt, pod, exc, seen=seen)
        return None, rt.views.placer(rt.policy), rt.cluster.relevant_changes
    elapsed = time.perf_counter() - started
    if step is None:
        result.waiting += len(members.pending)
        return None, placer, seen
    if isinstance(step, ganging.Decided):
        metrics.observe_gang("placed", elapsed, step.steps)
        return step, placer, seen
    try:
        if await ganging.give_back(rt, step):
            return None, placer, seen  # reservations of an earlier attempt released; retried on the next pass
        metrics.observe_gang(step.result, elapsed, step.steps)
        await ganging.report(rt, step, seen)
    except Exception as exc:
        logger.exception("gang %s/%s: reporting that it is not placed failed", *key)
        metrics.observe_object_error("scheduling")
        for pod in members.pending:
            committing.backoff(rt, pod, "pod-status", exc)
    if step.result == "waiting":
        result.waiting += len(step.who)
    else:
        result.unschedulable += len(step.who)
    return None, placer, seen


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
        memory.last_message, memory.error_at = text, rt.cluster.relevant_changes
        metrics.observe_object_error("scheduling")
        logger.warning("pod=%s/%s: %s", key[0], key[1], text)
        await _report(rt, *key, reason="SchedulerError", event_reason="AllocationError", message=text)


async def _record_error(rt: Runtime, pod: pods.Pod, exc: BaseException, *, seen: int | None = None) -> None:
    """Deciding for this pod failed: say so on the pod, back it off, never raise. `seen`: the changes
    the decision's view included (default: all so far)."""
    metrics.observe_object_error("scheduling")
    memory = rt.memory(pod.metadata.uid or "")
    settings = rt.settings.scheduling
    delay = memory.back_off(settings.backoff_initial, settings.backoff_max)
    memory.error_at = rt.cluster.relevant_changes if seen is None else seen
    memory.unschedulable_at = None
    text = error_message(exc)
    if memory.last_message == text:
        logger.debug("pod=%s/%s: still failing: %s", pod.metadata.namespace, pod.metadata.name, text)
        return
    memory.last_message = text
    if isinstance(exc, (allocation_errors.AllocationInputError, PodInputError, committing.Rejected)):
        logger.warning("pod=%s/%s: cannot be scheduled: %s (retrying in %.1fs or when an object changes)",
                       pod.metadata.namespace, pod.metadata.name, text, delay)
    else:
        logger.error("pod=%s/%s: deciding its placement failed; retrying in %.1fs", pod.metadata.namespace,
                     pod.metadata.name, delay, exc_info=exc)
    await _report(rt, pod.metadata.namespace or "", pod.metadata.name, reason="SchedulerError",
                  event_reason="AllocationError", message=text)


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
        await writing.post_event(session, regarding=raw, reason=event_reason, type_="Warning",
                                 action="Scheduling", message=message)
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


async def _record_unschedulable(rt: Runtime, pod: pods.Pod, message: str, *, nodes: bool = True,
                                seen: int, event: bool = True) -> None:
    memory = rt.memory(pod.metadata.uid or "")
    memory.unschedulable_at = seen
    memory.error_at = None
    text = f"0/{len(rt.cluster.nodes)} nodes are available: {message}" if nodes else message
    if memory.last_message == text:
        return
    memory.last_message = text
    await _report(rt, pod.metadata.namespace or "", pod.metadata.name, reason="Unschedulable",
                  event_reason="AllocationFailed", message=text, event=event)


async def scheduling_loop(rt: Runtime, stopped: asyncio.Event) -> None:
    """Run passes whenever something changed, or when a backoff expires."""
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


def _next_retry(rt: Runtime) -> float:
    now = time.monotonic()
    waits = [m.retry_at - now for m in rt.pods.values() if m.retry_at > now]
    if rt.ledger.unknown():
        waits.append(committing.RESOLVE_EVERY)
    return max(0.05, min(waits)) if waits else 5.0
