"""The scheduling loop: place the pods dralloc owns, then write the decision.

A pod is ours when it has `spec.schedulerName: <ours>` and no node yet (scheduler mode),
or carries our scheduling gate (gate mode): `items.owned`. Every pending pod of ours is in
the runtime's queue (active, backoff, unschedulable, as kube-scheduler's). A pass takes the
ready ones in the queue's fair order (round-robin across namespaces, then priority, then
age) for at most PASS_SLICE seconds. Those that scheduling gates not ours still hold back
(Kueue's `kueue.x-k8s.io/admission`, any admission controller's: `items.held_by`) are
only told so (`PodScheduled=False`, reason `SchedulingGated`) and parked until a gate is
removed, as kube-scheduler does not queue a gated pod: nothing is allocated for a workload
its quota system has not admitted (a gang with such a member waits whole,
handlers/ganging.py). For each of the others:

1. prepare, on the loop: the pod's item from the view (`items.item_for`): the claims to
   allocate, or why it waits;
2. decide, in the decider's worker thread under a CPU budget (handlers/deciding.py):
   single pods in batches of up to BATCH, each recorded in the pass's placer as soon as
   it is decided, so the next pod of the pass cannot get the same devices; a gang whole
   at its first ready member (handlers/ganging.py), or its recorded binds completed
   (handlers/completing.py);
3. reserve the decision in the ledger, and commit (handlers/committing.py), concurrently
   across pods: each claim's finalizer, `status.allocation` + `reservedFor`, then bind
   (scheduler mode) or pin the node and remove our gate (gate mode).

A failed write releases the pod's ledger entries and backs the pod off exponentially. A
crash between writes needs no journal: on the next pass the pod's claims are already
allocated and reserved for it, the placer then restricts it to their node, and the pass
finishes the binding; if that node no longer fits, the reservations are given back and the
pod is placed afresh. A pod that fits nowhere gets `PodScheduled=False` with the reasons and
an `AllocationFailed` Event (once per distinct message; handlers/reporting.py) and is parked
until a change that may make it fit.

Errors stay with the pod that met them. An input error (a class that does not exist, CEL
that fails, a claim that cannot be read, anything the allocator raises) or a bug of ours met
while deciding for one pod gives that pod `PodScheduled=False` with reason `SchedulerError`
and an `AllocationError` Warning Event, counts as `result="error"`, and backs the pod off; a
relevant change (the class created, the claim or a slice replaced) retries it at once. A
decision that uses up its CPU budget is told so (`DecisionTooCostly`). The other pods of
the pass are decided as if it were not there.

The top of the decision layers: calls `items`, `committing`, `reporting`, `intents`, the two
gang passes (`ganging`, `completing`) and the `deciding` worker; `operating` starts the loop.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import functools
import itertools
import logging
import time
from typing import Any

from dralloc import metrics
from dralloc.allocation import interruption
from dralloc.handlers import (
    batches,
    committing,
    completing,
    deciding,
    ganging,
    intents,
    items,
    moving,
    preempting,
    reclaiming,
    reporting,
)
from dralloc.handlers.runtime import Runtime
from dralloc.model import pods
from dralloc.scheduling import batching, consolidating, placement, preemption

logger = logging.getLogger(__name__)

Raw = dict[str, Any]
COMMIT_CONCURRENCY = 32  # pods whose writes are in flight at once



class PassResult:
    def __init__(self) -> None:
        self.placed = 0
        self.unschedulable = 0
        self.waiting = 0
        self.errors = 0



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
        if not items.owned(pod, scheduler_name=settings.scheduler_name, gate=settings.gate):
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
    # Priority preemption: None when not looked for; else the victims found (`no_room`: none helps).
    preempt: preemption.NodeVictims | None = None
    no_room: bool = False
    # Consolidation (handlers/moving.py): the room moving movable pods would make (None: none, or not looked for).
    move: consolidating.Room | None = None


def _place(placer: placement.Placer, item: placement.Item, preempt: preempting.Inputs | None = None,
           move: moving.Inputs | None = None) -> _Decided | _NotPlaced:
    """Where the item goes (run by the decider's worker thread: reads only the placer and the item).
    Its explanation, when it fits nowhere, is worked out with what is left of the decision's budget;
    when that is not enough, the pod is told it fits nowhere without the reasons per node. With
    `preempt` (the pod may preempt), the victims that would make room for it are looked for too; with
    `move` (pods may be moved for it), when no victims would, the movable pods whose moving would."""
    decision = placer.place(item, explain=False)
    if isinstance(decision, placement.Placement):
        return _Decided(item, decision)
    result = "budget-exhausted" if decision.budget_exhausted else "unschedulable"
    try:
        explained = placer.explanation(item, budget_exhausted=decision.budget_exhausted)
    except interruption.Interrupted:
        return _NotPlaced("no node fits its claims and constraints (working out the reason on every node would "
                          "take longer than the decision's CPU budget)", result, item)
    message = explained.message()
    no_room = False
    if preempt is not None:
        try:
            chosen = preemption.find(placer, item, preempt.held_by, preempt.budgets, preempt.groups)
        except interruption.Interrupted:
            return _NotPlaced(f"{message}; preemption: looking for pods to remove took longer than the decision's "
                              "CPU budget", result, item)
        if chosen is not None:
            return _NotPlaced(message, result, item, preempt=chosen)
        message = f"{message}; preemption: removing lower-priority pods would not make room on any node"
        no_room = True
    if move is not None:
        try:
            room = moving.plan(placer, item, move)
        except interruption.Interrupted:
            return _NotPlaced(f"{message}; consolidation: looking for movable pods to move took longer than the "
                              "decision's CPU budget", result, item, no_room=no_room)
        if room is not None:
            return _NotPlaced(message, result, item, no_room=no_room, move=room)
    return _NotPlaced(message, result, item, no_room=no_room)


def _record_in_placer(placer: placement.Placer, step: _Decided | _NotPlaced | batches.Chosen) -> None:
    """A decision joins the placer's view (in the decider's thread, outside the budget): the next
    decision of the pass cannot get the same devices."""
    if isinstance(step, _Decided):
        placer.commit(step.item, step.decision)
    elif isinstance(step, batches.Chosen):
        batches.record(placer, step)


async def _expect_queue(rt: Runtime, placer: placement.Placer, queue: list[pods.Pod]) -> dict[tuple[object, ...], int]:
    """The fragmentation-aware policy weighs choices by the shapes of the pods waiting (worked out in the
    decider's thread: a tenant's thousand distinct shapes must not hold the loop). How many pods of the
    queue have each shape, when batches are decided (`scheduling.batching.shape_counts`: rarer first)."""
    if placer.model is None:
        return {}
    shapes: list[placement.Item] = []
    for pod in queue:
        try:
            item = items.item_for(rt, pod)
        except Exception:  # the pod's own decision reports its error; here it only does not count
            continue
        if isinstance(item, placement.Item):
            shapes.append(item)
    answer = await rt.decider.run(functools.partial(_expect, placer, shapes, rt.batch_orders > 1))
    if isinstance(answer, deciding.TooCostly):
        logger.warning("the queue's %d request shapes took more than the decision budget to weigh; the "
                       "fragmentation-aware policy learns them from arrivals instead", len(shapes))
        return {}
    return answer.value


def _expect(placer: placement.Placer, shapes: list[placement.Item], count: bool) -> dict[tuple[object, ...], int]:
    placer.expect(shapes)
    return batching.shape_counts(placer, shapes) if count else {}


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
    await reclaiming.give_back_refused(rt)
    now = time.monotonic()
    pods_now = ready_pods(rt, now)
    await reporting.report_unreadable(rt)
    pods_now = await _hold_gated(rt, pods_now, result)
    if not pods_now:
        return result
    placer = rt.placer()
    counts = await _expect_queue(rt, placer, pods_now)
    ends = time.monotonic() + PASS_SLICE
    # Decisions are made one after another; the writes of decided pods run concurrently (each
    # pod's own writes stay in order), as kube-scheduler binds asynchronously.
    commits: set[asyncio.Task[int]] = set()
    limit = asyncio.Semaphore(COMMIT_CONCURRENCY)

    async def commit(pod: pods.Pod, item: placement.Item, decision: placement.Placement) -> int:
        async with limit:
            try:
                return int(await committing.commit(rt, pod, item, decision, items.wants(rt, pod, item)))
            except committing.Rejected as exc:  # invalid or forbidden: say so on the pod
                await reporting.record_error(rt, pod, exc)
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
    alone: set[str] = set()  # pods (uids) a batch could not place, or could not decide: one by one now
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
            intent = intents.intent_of(rt, gang)
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
        may_preempt = [preempting.eligible(rt, placer, pod) for pod, _ in ready]
        shared = preempting.inputs(rt) if any(may_preempt) else None
        may_move = [moving.enabled(rt, placer) and not preempting.waiting_for_room(rt, placer, pod)
                    for pod, _ in ready]
        movable = moving.inputs(rt) if any(may_move) else None
        # Batches of single pods (AllocationPolicy spec.batchOrders, handlers/batches.py): decided as one.
        units = batches.plan(ready, rt.batch_orders if placer.model is not None else 1, alone)
        calls: list[functools.partial[Any]] = []
        budgets: list[float] = []
        for unit in units:
            if isinstance(unit, batches.Batch):
                calls.append(functools.partial(batches.decide, placer, [ready[i][1] for i in unit.positions],
                                               counts, rt.batch_orders))
                budgets.append(rt.decider.cpu_budget * len(unit.positions))
            else:
                calls.append(functools.partial(_place, placer, ready[unit][1], shared if may_preempt[unit] else None,
                                               movable if may_move[unit] else None))
                budgets.append(rt.decider.cpu_budget)
        unit_answers = await rt.decider.run_each(calls, functools.partial(_record_in_placer, placer), budgets=budgets)
        answers, again, batch_failed = _per_pod(units, unit_answers, ready, alone)
        queue.extendleft(ready[i][0] for i in reversed(again))  # next in line
        # A fresh placer (from the view and the ledger) replaces the pass's when one may be wrong or out of
        # date: a decision failed (it may have stopped half-way through recording), a node is nominated
        # (preemption, moves: it is held from now on), a reservation failed. Only once every decision of
        # the run is reserved: the run's later pods were decided on the old placer, and a placer made
        # before their reservations would not know their devices are taken.
        renew = batch_failed
        for position, (pod, item) in enumerate(ready):
            if position not in answers:
                continue
            answer = answers[position]
            step = await _outcome(rt, pod, item, answer, result)
            renew = renew or isinstance(answer, deciding.Failed)
            if step is None:
                continue
            if isinstance(step, _NotPlaced):
                if step.preempt is not None or step.no_room:
                    step = await _preempt(rt, pod, step)
                    renew = True
                if step.move is not None:
                    step = await _move(rt, pod, step)
                    renew = True
                await _not_placed(rt, pod, step, result)
                continue
            try:
                committing.reserve(rt, pod, step.item, step.decision)  # the placer has it (the decider recorded it)
            except Exception as exc:
                result.errors += 1
                committing.release_unsent(rt, step.item)
                await reporting.record_error(rt, pod, exc)
                renew = True
                continue
            commits.add(asyncio.create_task(commit(pod, step.item, step.decision)))
        if renew:
            placer = _renewed(rt, placer)
        if len(commits) >= COMMIT_CONCURRENCY * 4:
            done, commits = await asyncio.wait(commits, return_when=asyncio.FIRST_COMPLETED)
            result.placed += sum(1 for task in done if task.result())
    if commits:
        done, _ = await asyncio.wait(commits)
        result.placed += sum(task.result() for task in done)
    return result


def _renewed(rt: Runtime, old: placement.Placer) -> placement.Placer:
    """A fresh placer for the rest of the pass (the view and the ledger as they are now), expecting what
    the pass's first placer was told to expect (`Placer.expect_as`)."""
    fresh = rt.placer()
    fresh.expect_as(old)
    return fresh


Answer = deciding.Decided[Any] | deciding.TooCostly | deciding.Failed


def _per_pod(units: list[batches.Unit], unit_answers: list[Answer], ready: list[tuple[pods.Pod, placement.Item]],
             alone: set[str]) -> tuple[dict[int, Answer], list[int], bool]:
    """The decider's answers for a run's units, per pod (its position in the run): a batch's placed pods get
    their placement (each its share of the batch's CPU); the pods to decide next, in the run's order (not
    reached, or left out by a batch, or in a batch that could not be decided: those last two alone, added
    to `alone`); and whether a batch failed (the placer may be half-way through recording it)."""
    answers: dict[int, Answer] = {}
    again: list[int] = []
    batch_failed = False
    for unit, unit_answer in itertools.zip_longest(units, unit_answers):
        if not isinstance(unit, batches.Batch):
            if unit_answer is None:
                again.append(unit)
            else:
                answers[unit] = unit_answer
            continue
        if isinstance(unit_answer, deciding.Decided):
            chosen: batches.Chosen = unit_answer.value
            metrics.observe_batch(chosen.outcome())
            share = unit_answer.cpu_seconds / len(unit.positions)
            placed = dict(chosen.placements())
            for k, i in enumerate(unit.positions):
                if k in placed:
                    answers[i] = deciding.Decided(_Decided(ready[i][1], placed[k]), share)
                else:
                    again.append(i)
                    alone.add(ready[i][0].metadata.uid or "")
            continue
        if isinstance(unit_answer, deciding.TooCostly) and unit_answer.stopping:
            continue
        again.extend(unit.positions)
        if unit_answer is None:
            continue  # not reached: next in line, as a batch again
        metrics.observe_batch("error" if isinstance(unit_answer, deciding.Failed) else "too-costly")
        if isinstance(unit_answer, deciding.Failed):
            logger.error("a batch of %d pods could not be decided (%s); deciding them one by one",
                         len(unit.positions), unit_answer.error)
            batch_failed = True  # a fresh placer, as after any failed decision
        alone.update(ready[i][0].metadata.uid or "" for i in unit.positions)
    return answers, sorted(again), batch_failed


async def _make_room_for_gang(rt: Runtime, placer: placement.Placer, key: ganging.Key, prepared: ganging.Prepared,
                              step: ganging.NotPlaced) -> tuple[ganging.NotPlaced, placement.Placer]:
    """A gang that does not fit preempts as one when it may (`_preempt_for_gang`); when it may not
    (preemption off, or its policy is Never) the nodes it would take once lower-priority pods there
    finish are reserved for it (`_reserve_for_gang`), so that such pods do not keep taking what it waits
    for. The step to report and the placer to go on with."""
    group = rt.cluster.pod_groups.get(*key)
    never = (group is not None and group.spec.preemption_policy == preemption.PREEMPT_NEVER) or not all(
        preemption.may_preempt(pod) for pod in prepared.pending)
    enabled = rt.settings.scheduling.preemption and rt.preemption
    # Upstream's podGroupPreemptor: the PodGroup's priority, 0 when it has none (admission sets it from
    # its priorityClassName; the members' own must equal it, `ganging.prepare` checks).
    gang_priority = ((group.spec.priority or 0) if group is not None
                     else min(preemption.priority(p) for p in prepared.pending))
    if enabled and not never:
        if not all(preempting.eligible(rt, placer, pod) for pod in prepared.pending):
            return step, placer  # its victims are still terminating: it waits for them
        return await _preempt_for_gang(rt, placer, prepared, step, gang_priority)
    why = "its preemptionPolicy is Never" if enabled else "preemption is off"
    return await _reserve_for_gang(rt, placer, prepared, step, gang_priority, why)


async def _preempt_for_gang(rt: Runtime, placer: placement.Placer, prepared: ganging.Prepared, step: ganging.NotPlaced,
                            gang_priority: int) -> tuple[ganging.NotPlaced, placement.Placer]:
    """A gang that does not fit may preempt as one (handlers/preempting.py): victims chosen for the whole
    gang's placement (scheduling/preemption.find_for_gang), its members nominated to their nodes, the
    victims removed. The step to report, its message saying what was done, and the placer to go on with."""
    shared = preempting.inputs(rt)
    answer = await rt.decider.run(functools.partial(ganging.preempt_search, placer, prepared, shared.held_by,
                                                    shared.budgets, gang_priority, shared.groups))
    if isinstance(answer, deciding.TooCostly):
        return dataclasses.replace(step, message=f"{step.message}; preemption: looking for pods to remove took "
                                                 "longer than the decision's CPU budget"), placer
    if isinstance(answer, deciding.Failed):
        raise answer.error
    if answer.value is None:
        metrics.observe_preemption("no-candidate", 0)
        return dataclasses.replace(step, message=f"{step.message}; preemption: removing lower-priority pods would "
                                                 "not make room for the gang"), placer
    chosen, plan = answer.value
    if not chosen.pods:
        rt.scheduling_wakeup.set()
        return step, placer
    nominations = [(member.pod, member.placement.node) for member in plan.members]
    if await preempting.carry_out_gang(rt, nominations, chosen):
        nodes = ", ".join(sorted({node for _, node in nominations}))
        message = f"{step.message}; {preempting.summary(chosen, nodes)}"
    else:
        message = f"{step.message}; preemption for the gang failed (a write was refused); retried after the backoff"
    return dataclasses.replace(step, message=message), _renewed(rt, placer)


async def _reserve_for_gang(rt: Runtime, placer: placement.Placer, prepared: ganging.Prepared,
                            step: ganging.NotPlaced, gang_priority: int, why: str,
                            ) -> tuple[ganging.NotPlaced, placement.Placer]:
    """No starvation for a gang that may not preempt: lower-priority pods that keep taking devices as they
    free up would otherwise overtake it for good (a gang needs many at once, each of them needs one). The
    nodes the gang would take if the lower-priority pods there were gone, chosen as preemption chooses
    them (fewest and least important such pods), are reserved: its members are nominated there, and no
    pod of lower priority is placed there from then on (`Placer.hold`). Nobody is removed: the gang fits
    once those pods finish. A reservation stays while its nodes still admit the members. kube-scheduler
    has no such reservation: a non-preempting gang there waits until room appears by chance."""
    kept = preempting.reservation_of(placer, prepared.pending)
    if kept is not None:
        return dataclasses.replace(step, message=f"{step.message}; {preempting.reserved_summary(kept, why)}"), placer
    shared = preempting.inputs(rt)
    # No budgets: nobody is evicted, so a PodDisruptionBudget has nothing to say about the choice.
    answer = await rt.decider.run(functools.partial(ganging.preempt_search, placer, prepared, shared.held_by, (),
                                                    gang_priority, shared.groups))
    if isinstance(answer, deciding.Failed):
        raise answer.error
    if isinstance(answer, deciding.TooCostly) or answer.value is None:
        return step, placer  # nothing of lower priority stands in its way (or finding it is too costly)
    chosen, plan = answer.value
    if not chosen.pods:
        rt.scheduling_wakeup.set()  # room without anyone going: the cluster changed, try again
        return step, placer
    nominations = [(member.pod, member.placement.node) for member in plan.members]
    nodes = sorted({node for _, node in nominations})
    if await preempting.reserve_for_gang(rt, nominations, chosen.pods, why):
        return dataclasses.replace(step, message=f"{step.message}; {preempting.reserved_summary(nodes, why)}"), \
            _renewed(rt, placer)
    return dataclasses.replace(step, message=f"{step.message}; reserving nodes for the gang failed (a write was "
                                             "refused); retried after the backoff"), _renewed(rt, placer)


async def _move(rt: Runtime, pod: pods.Pod, step: _NotPlaced) -> _NotPlaced:
    """Carry out the moves the decision found (handlers/moving.py); the step to report, its message saying
    what was done."""
    assert step.move is not None
    if await moving.carry_out(rt, pod, step.move):
        return dataclasses.replace(step, message=f"{step.message}; {moving.summary(step.move)}")
    return dataclasses.replace(step, message=f"{step.message}; moving pods off node {step.move.placed.node} "
                                             "failed (a write was refused, or a pod to move left); retried after "
                                             "the backoff")


async def _preempt(rt: Runtime, pod: pods.Pod, step: _NotPlaced) -> _NotPlaced:
    """Carry out the preemption the decision found (handlers/preempting.py); the step to report, its
    message saying what was done."""
    if step.preempt is None:
        metrics.observe_preemption("no-candidate", 0)
        return step
    if not step.preempt.pods:
        rt.scheduling_wakeup.set()  # room without removing anyone: the cluster changed, try again
        return step
    if await preempting.carry_out(rt, pod, step.preempt):
        return dataclasses.replace(step, message=f"{step.message}; {preempting.summary(step.preempt)}")
    return dataclasses.replace(step, message=f"{step.message}; preemption on node {step.preempt.node} failed "
                                             "(a write was refused); retried after the backoff")


async def _hold_gated(rt: Runtime, pods_: list[pods.Pod], result: PassResult) -> list[pods.Pod]:
    """The pods to decide for in this pass. Those held back by scheduling gates not ours (`items.held_by`)
    are parked until a gate is removed and told which gates they wait for (`reporting.record_gated`); a
    gate can only be removed, so a pod free of them at the start of the pass stays so."""
    gate = rt.settings.scheduling.gate
    free: list[pods.Pod] = []
    for pod in pods_:
        fresh = _current(rt, pod)
        gates = items.held_by(fresh, gate=gate) if fresh is not None else ()
        if fresh is None or not gates:
            free.append(pod)
            continue
        result.waiting += 1
        await reporting.record_gated(rt, fresh, gates)
    return free


def _current(rt: Runtime, pod: pods.Pod) -> pods.Pod | None:
    """The pod as the view has it now; None when it is gone (or replaced by another of its name)."""
    fresh = rt.cluster.pods.get(pod.metadata.namespace or "", pod.metadata.name)
    return fresh if fresh is not None and fresh.metadata.uid == pod.metadata.uid else None


async def _not_placed(rt: Runtime, pod: pods.Pod, step: _NotPlaced, result: PassResult) -> None:
    """Report a pod that does not fit (giving back what an earlier attempt holds first); never raises."""
    try:
        if step.item is not None and await _give_back_earlier(rt, pod, step.item):
            return  # reservations of an earlier attempt released; retried on the next pass
        await reporting.record_unschedulable(rt, pod, step.message, nodes=step.nodes, wants=items.wants(rt, pod, step.item),
                                    failure=step.result)
    except Exception as exc:
        logger.exception("pod=%s/%s: reporting that it does not fit failed", pod.metadata.namespace,
                         pod.metadata.name)
        metrics.observe_object_error("scheduling")
        committing.backoff(rt, pod, "pod-status", exc)
    result.unschedulable += 1


async def _give_back_earlier(rt: Runtime, pod: pods.Pod, item: placement.Item) -> bool:
    """An unbound pod holding reservations (of an earlier attempt: a crash, an unknown outcome) that no
    longer fit anywhere gives them back; True when it held any (it is retried on the next pass)."""
    mine = [(c, pod.metadata.uid or "") for c in item.allocated
            if any(r.uid == pod.metadata.uid for r in c.status.reserved_for)]
    if not mine:
        return False
    undone = await committing.give_back(rt, mine)
    logger.info("pod=%s/%s: released %d of %d earlier reservation(s) that no longer fit", pod.metadata.namespace,
                pod.metadata.name, undone, len(mine))
    if undone < len(mine):
        committing.backoff(rt, pod, "claim-status", RuntimeError("giving back reservations failed"))
    return True


async def _prepare(rt: Runtime, pod: pods.Pod, result: PassResult) -> placement.Item | _NotPlaced | None:
    """The pod's item from the view (on the loop); a _NotPlaced when it cannot be placed as it is; None
    when there is nothing to decide for it in this pass (not ready, waiting, or its error reported)."""
    try:
        item = items.item_for(rt, pod)
    except Exception as exc:
        metrics.observe_allocation("error", 0.0)
        result.errors += 1
        await reporting.record_error(rt, pod, exc)
        return None
    if item is None:
        result.waiting += 1
        return None
    if isinstance(item, items.Waiting):
        result.waiting += 1
        await reporting.record_unschedulable(rt, pod, item, nodes=False, wants=items.wants(rt, pod), failure="waiting")
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
        await reporting.record_error(rt, pod, answer.error)
        return None
    if isinstance(answer, deciding.TooCostly):
        if answer.stopping:
            return None
        metrics.observe_allocation("too-costly", answer.cpu_seconds)
        result.unschedulable += 1
        await reporting.record_unschedulable(rt, pod, reporting.too_costly_message(item, answer), nodes=False,
                                    wants=items.wants(rt, pod, item), failure="too-costly")
        return None
    step = answer.value
    if isinstance(step, _Decided):
        metrics.observe_allocation("allocated", answer.cpu_seconds, step.decision.steps)
    else:
        metrics.observe_allocation(step.result, answer.cpu_seconds)
    return step


async def _gang(rt: Runtime, placer: placement.Placer, key: ganging.Key, members: ganging.Members,
                result: PassResult) -> tuple[ganging.Decided | None, placement.Placer]:
    """Decide one gang (its search in the decider's thread) and reserve its devices; report it when it is
    not placed. The decision to commit (None: nothing to write), and the placer to go on with."""
    started = time.perf_counter()
    gang_wants = {pod.metadata.uid or "": items.wants(rt, pod, gang=key) for pod in members.pending}
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
            if isinstance(step, ganging.NotPlaced) and step.result == "unfit":
                step, placer = await _make_room_for_gang(rt, placer, key, prepared, step)
        else:
            step = prepared
        if isinstance(step, ganging.Decided):
            ganging.reserve(rt, placer, step)
    except ganging.MemberError as exc:
        metrics.observe_gang("error", time.perf_counter() - started)
        result.errors += 1
        await ganging.report_error(rt, key, members.pending, exc, gang_wants)
        return None, _renewed(rt, placer)
    except Exception as exc:  # a bug of ours: every member says so, the pass goes on
        metrics.observe_gang("error", time.perf_counter() - started)
        result.errors += 1
        for pod in members.pending:
            await reporting.record_error(rt, pod, exc)
        return None, _renewed(rt, placer)
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
