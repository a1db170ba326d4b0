"""The eviction loop: carry out `lifecycle.eviction` plans for NoExecute device taints.

Runs on the active replica only, started by the control-loop daemon next to the
scheduling and lifecycle loops. Each pass (on any pod, claim, slice or rule change,
and when the next scheduled eviction or rate-limit slot is due):

1. effective taints per device from the view (slice taints + DeviceTaintRules);
   a taint without `timeAdded` counts from when this process first saw it;
2. `eviction.decide` -> due / later / cancelled; `eviction.limit` -> allowed now;
3. each allowed pod: `DisruptionTarget=True` (reason `DeviceTaintEvictionByDralloc`)
   in its status, then DELETE with its uid as precondition (as upstream: a taint
   eviction does not go through PodDisruptionBudgets), then a Warning Event
   `DeviceTaintEviction` naming the device and the taint; in dry-run mode only the
   Event (`DeviceTaintEvictionDryRun`, once per pod);
4. a pod whose scheduled eviction is no longer needed gets a Normal Event
   `DeviceTaintEvictionCancelled`;
5. every DeviceTaintRule's status gets the `EvictionInProgress` condition (written
   only when it changed), and the gauges are set.

Evicted-pod counts per rule are this process's memory: after a restart they count
again from zero (the pending count is always recomputed from the cluster).

A loop of the top layers: calls the runtime, `clock` and `looping`; the pure decisions are
`dralloc.lifecycle.eviction`'s.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import datetime as dt
import logging
from collections.abc import Awaitable, Iterable
from typing import Any

from dralloc import metrics
from dralloc.allocation.taintrules import SOURCE_RULE, SOURCE_SLICE
from dralloc.handlers import clock, looping
from dralloc.handlers.runtime import Runtime
from dralloc.kube import errors as kube_errors
from dralloc.kube import resources, writing
from dralloc.kube.resources import Resource
from dralloc.lifecycle import eviction
from dralloc.model.pods import Pod
from dralloc.model.taints import DeviceTaintRule

logger = logging.getLogger(__name__)

CONDITION_REASON = "DeviceTaintEvictionByDralloc"
CONTROLLER = "dralloc.io/device-taint-eviction"
HEALTH_POLICY_LABEL = "dralloc.io/health-policy"  # rules created by a DeviceHealthPolicy (source "policy")
IDLE_WAIT = 30.0
BATCH_DELAY = 0.02  # seconds


@dataclasses.dataclass
class Memory:
    first_seen: dict[eviction.TaintKey, dt.datetime] = dataclasses.field(default_factory=dict)
    pending: set[eviction.PodRef] = dataclasses.field(default_factory=set)
    recent: collections.deque[dt.datetime] = dataclasses.field(default_factory=collections.deque)
    evicted_by_rule: collections.Counter[str] = dataclasses.field(default_factory=collections.Counter)
    dry_run_reported: set[eviction.PodRef] = dataclasses.field(default_factory=set)
    written_conditions: dict[str, dict[str, str]] = dataclasses.field(default_factory=dict)  # rule uid -> cond
    evicted: set[eviction.PodRef] = dataclasses.field(default_factory=set)  # deleted, watch may lag behind
    group_recent: dict[str, collections.deque[dt.datetime]] = dataclasses.field(default_factory=dict)  # by policy


async def run_pass(rt: Runtime, memory: Memory) -> float:
    """One pass; seconds until the next pass is needed without any change."""
    if not rt.coexistence.does("taint-eviction"):
        # kube-controller-manager's device-taint-eviction controller evicts and writes the rules'
        # EvictionInProgress condition; forget our schedule, so that taking over starts afresh.
        if memory.pending or memory.first_seen:
            memory.pending.clear()
            memory.first_seen.clear()
            metrics.set_pending_evictions(0)
        return IDLE_WAIT
    now = clock.now()
    effective = rt.views.effective_taints()
    if not effective and not memory.pending and not memory.first_seen:
        # No device is tainted: nothing to evict, and no reason to look at every pod on every event.
        return IDLE_WAIT
    seen = {eviction.taint_key(device, e) for device, found in effective.items() for e in found}
    memory.first_seen = {k: memory.first_seen.get(k, now) for k in seen}
    # A pod we deleted may still look alive until its watch event arrives: never evict it twice.
    memory.evicted = {p for p in memory.evicted if p.uid in rt.cluster.pod_keys}

    def decide_for(pods: Iterable[Pod]) -> eviction.Decision:
        return eviction.decide(pods, rt.cluster.claims.get, effective, now=now,
                               first_seen=memory.first_seen, previous=memory.pending, deleted=memory.evicted)

    def decide() -> eviction.Decision:
        pods = [p for p in rt.cluster.pods.all() if rt.watches_namespace(p.metadata.namespace)]
        try:
            return decide_for(pods)
        except Exception:
            # One pod (or its claims) breaks the decision: find it, leave it out, decide for the rest.
            usable = []
            for pod in pods:
                try:
                    decide_for([pod])
                except Exception:
                    logger.exception("pod=%s/%s: cannot decide on its eviction; leaving it out",
                                     pod.metadata.namespace, pod.metadata.name)
                    metrics.observe_object_error("eviction")
                    continue
                usable.append(pod)
            return decide_for(usable)

    decision = decide()
    limits = rt.eviction_limits
    while memory.recent and now - memory.recent[0] >= eviction.WINDOW:
        memory.recent.popleft()
    group_of, groups = _policy_groups(rt, memory, now)
    limited = eviction.limit(decision, limits, now=now, recent=list(memory.recent), groups=groups, group_of=group_of)
    for pod in decision.cancelled:
        await _guarded(pod, _cancelled(rt, pod))
    memory.pending = {e.pod for e in (*decision.due, *decision.later)}
    for planned in limited.allowed:
        if limits.dry_run:
            if planned.pod not in memory.dry_run_reported:
                memory.dry_run_reported.add(planned.pod)
                for rule in planned.rules:
                    memory.evicted_by_rule[rule] += 1
                metrics.observe_eviction_outcome("dry-run")
                await _guarded(planned.pod, _event(rt, planned, "DeviceTaintEvictionDryRun",
                                                   f"Would evict (dry run): {planned.describe()}"))
            continue
        if await _guarded(planned.pod, _evict(rt, planned)):
            memory.evicted.add(planned.pod)
            memory.recent.append(clock.now())
            group = group_of.get(planned.taint.rule) if planned.taint.source == SOURCE_RULE else None
            if group is not None:
                memory.group_recent.setdefault(group, collections.deque()).append(clock.now())
            memory.pending.discard(planned.pod)
            for rule in planned.rules:
                memory.evicted_by_rule[rule] += 1
    memory.dry_run_reported &= memory.pending
    if limited.allowed and not limits.dry_run:
        decision = decide()  # the status counts the pods just deleted as evicted, not pending
    await _rule_statuses(rt, memory, decision, dry_run=limits.dry_run)
    _gauges(rt, effective, decision, limited)
    waits = [IDLE_WAIT]
    if decision.next_at is not None:
        waits.append((decision.next_at - clock.now()).total_seconds())
    if limited.retry_at is not None:
        waits.append((limited.retry_at - clock.now()).total_seconds())
    if limited.held and limited.retry_at is None:
        waits.append(1.0)  # held by the per-class limit: pods being deleted report back through watches
    return max(0.01, min(waits))


async def _guarded(pod: eviction.PodRef, action: Awaitable[bool | None]) -> bool:
    """Run one pod's action; whatever it raises is logged and counted, and the pass goes on."""
    try:
        return bool(await action)
    except Exception:
        logger.exception("pod=%s/%s: eviction step failed; retrying on the next pass", pod.namespace, pod.name)
        metrics.observe_object_error("eviction")
        return False


def _policy_groups(rt: Runtime, memory: Memory, now: dt.datetime
                   ) -> tuple[dict[str, str], dict[str, eviction.Group]]:
    """DeviceHealthPolicies with `spec.eviction` limits: rule name -> policy, and each policy's limits."""
    groups: dict[str, eviction.Group] = {}
    for policy in rt.cluster.health_policies.all():
        extra = policy.spec.eviction if policy.spec else None
        if extra is None:
            continue
        recent = memory.group_recent.setdefault(policy.metadata.name, collections.deque())
        while recent and now - recent[0] >= eviction.WINDOW:
            recent.popleft()
        groups[policy.metadata.name] = eviction.Group(
            eviction.Limits(per_minute=max(0, extra.max_per_minute),
                            max_percent=min(100, max(0, extra.max_percent_per_device_class))), tuple(recent))
    memory.group_recent = {k: v for k, v in memory.group_recent.items() if k in groups}
    group_of = {r.metadata.name: r.metadata.labels[HEALTH_POLICY_LABEL] for r in rt.cluster.taint_rules.all()
                if r.metadata.labels.get(HEALTH_POLICY_LABEL) in groups}
    return group_of, groups


async def _evict(rt: Runtime, planned: eviction.Eviction) -> bool:
    session = rt.require_session()
    pod = planned.pod
    message = f"Evicting: {planned.describe()}, not tolerated"
    condition = {"type": "DisruptionTarget", "status": "True", "reason": CONDITION_REASON, "message": message,
                 "lastTransitionTime": clock.stamp()}
    raw = rt.cluster.pods.raw(pod.namespace, pod.name) or {}
    conditions = [c for c in (raw.get("status") or {}).get("conditions") or [] if c.get("type") != "DisruptionTarget"]
    try:
        await writing.merge_patch(session, resources.PODS, pod.name, {"status": {"conditions": [*conditions, condition]}},
                                  pod.namespace, subresource="status")
        await writing.delete_object(session, resources.PODS, pod.name, pod.namespace, uid=pod.uid)
    except (kube_errors.NotFoundError, kube_errors.ConflictError):
        return False  # gone already, or a namesake: nothing to evict
    except kube_errors.KubeError as exc:
        metrics.observe_eviction_outcome("failed")
        logger.warning("pod=%s/%s: eviction failed: %s", pod.namespace, pod.name, exc)
        return False
    metrics.observe_eviction()
    metrics.observe_eviction_outcome("deleted")
    metrics.observe_eviction_latency((clock.now() - planned.tainted_at).total_seconds())
    logger.info("pod=%s/%s: evicted: %s", pod.namespace, pod.name, planned.describe())
    try:
        await _event(rt, planned, "DeviceTaintEviction", f"Evicted: {planned.describe()}", raw=raw, type_="Warning")
    except kube_errors.KubeError as exc:  # the pod is deleted: only the Event is lost
        logger.warning("pod=%s/%s: cannot post the eviction Event: %s", pod.namespace, pod.name, exc)
    return True


async def _event(rt: Runtime, planned: eviction.Eviction, reason: str, message: str, *,
                 raw: dict[str, Any] | None = None, type_: str = "Normal") -> None:
    pod = planned.pod
    regarding = raw or rt.cluster.pods.raw(pod.namespace, pod.name) or {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": pod.name, "namespace": pod.namespace, "uid": pod.uid}}
    await writing.post_event(rt.require_session(), regarding=regarding, reason=reason, type_=type_,
                             action="DeviceTaintEviction", message=message, reporting_controller=CONTROLLER)


async def _cancelled(rt: Runtime, pod: eviction.PodRef) -> None:
    raw = rt.cluster.pods.raw(pod.namespace, pod.name)
    if raw is None or (raw.get("metadata") or {}).get("uid") != pod.uid:
        return  # the pod is gone: nothing was cancelled
    logger.info("pod=%s/%s: device taint eviction cancelled", pod.namespace, pod.name)
    await writing.post_event(rt.require_session(), regarding=raw, reason="DeviceTaintEvictionCancelled",
                             action="DeviceTaintEviction", reporting_controller=CONTROLLER,
                             message="The NoExecute device taint is gone or tolerated: eviction cancelled")


async def _rule_statuses(rt: Runtime, memory: Memory, decision: eviction.Decision, *, dry_run: bool) -> None:
    resource = rt.taint_rule_resource
    if resource is None:
        return
    live: set[str] = set()
    for rule in list(rt.cluster.taint_rules.all()):
        live.add(rule.metadata.uid or "")
        try:
            await _rule_status(rt, memory, decision, rule, resource, dry_run=dry_run)
        except Exception:  # one rule's status must not stop the others'
            logger.exception("DeviceTaintRule %s: cannot compute its status", rule.metadata.name)
            metrics.observe_object_error("eviction")
    memory.written_conditions = {k: v for k, v in memory.written_conditions.items() if k in live}


async def _rule_status(rt: Runtime, memory: Memory, decision: eviction.Decision, rule: DeviceTaintRule,
                       resource: Resource, *, dry_run: bool) -> None:
    uid = rule.metadata.uid or ""
    wanted = eviction.rule_condition(rule, decision, evicted=memory.evicted_by_rule.get(rule.metadata.name, 0),
                                     dry_run=dry_run)
    wanted["observedGeneration"] = rule.metadata.generation or 0  # type: ignore[assignment]
    current = _condition(rule.status, "EvictionInProgress")
    if current is not None and all(current.get(k) == v for k, v in wanted.items()):
        memory.written_conditions[uid] = wanted
        return
    if memory.written_conditions.get(uid) == wanted:
        return  # written; the watch has not shown it yet
    changed = current is None or current.get("status") != wanted["status"]
    transition = (current or {}).get("lastTransitionTime") if not changed else None
    condition = {**wanted, "lastTransitionTime": transition or clock.stamp()}
    others = [c for c in rule.status.get("conditions") or [] if isinstance(c, dict)  # type: ignore[attr-defined]
              and c.get("type") != "EvictionInProgress"]
    try:
        await writing.merge_patch(rt.require_session(), resource, rule.metadata.name,
                                  {"status": {"conditions": [*others, condition]}}, subresource="status")
        memory.written_conditions[uid] = wanted
    except kube_errors.KubeError as exc:
        logger.warning("DeviceTaintRule %s: cannot write status: %s", rule.metadata.name, exc)


def _condition(status: dict[str, object], kind: str) -> dict[str, Any] | None:
    for c in status.get("conditions") or []:  # type: ignore[attr-defined]
        if isinstance(c, dict) and c.get("type") == kind:
            return c
    return None


def _gauges(rt: Runtime, effective: dict[Any, Any], decision: eviction.Decision, limited: eviction.Limited) -> None:
    policy_rules = {r.metadata.name for r in rt.cluster.taint_rules.all() if HEALTH_POLICY_LABEL in r.metadata.labels}
    tainted: dict[tuple[str, str], set[Any]] = {}
    for device, found in effective.items():
        for e in found:
            source = SOURCE_SLICE if e.source == SOURCE_SLICE else ("policy" if e.rule in policy_rules else SOURCE_RULE)
            tainted.setdefault((e.taint.effect, source), set()).add(device)
    metrics.set_devices_tainted({k: len(v) for k, v in tainted.items()})
    metrics.set_pending_evictions(len(decision.due) + len(decision.later))


async def eviction_loop(rt: Runtime, stopped: asyncio.Event) -> None:
    """Run passes whenever something changed, or when a scheduled eviction is due."""
    memory = Memory()
    await looping.pass_loop("eviction", lambda: run_pass(rt, memory), rt.eviction_wakeup, stopped,
                            batch_delay=BATCH_DELAY)
