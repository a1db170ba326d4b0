"""What a pod (and a gang's PodGroup) is told when it is not placed: its PodScheduled condition and
a Warning Event, written only when the message changes; and what its queue entry and memory
record about how the attempt ended.

- `record_unschedulable`: it fits nowhere, waits for an object, or its decision was too
  costly; the pod is parked until a change it `wants` (handlers/items.py), after its backoff.
- `record_gated`: scheduling gates not ours (Kueue's, say) hold it back: `SchedulingGated`,
  as kube-apiserver says it of a gated pod, naming those gates; no Event, no attempt counted.
- `record_error`: an input error (named object and field) or a bug of ours met while deciding
  for it: `SchedulerError`, backed off.
- `report_unreadable`: pods of ours that do not even parse.
- `group_event`: an Event on a gang's PodGroup.

A replica that takes over reads what the pod's condition says already (`said`) and does not
repeat it. Failures to write are logged, never raised: the decision pass goes on.

Imports the runtime, `items` and `committing` (whose `Rejected` a user reads as it is); the
decision passes (scheduling, ganging) call it.
"""

from __future__ import annotations

import logging
import time

from dralloc import metrics
from dralloc.allocation import errors as allocation_errors
from dralloc.handlers import clock, committing, deciding, failures, intents, items
from dralloc.handlers.runtime import Runtime
from dralloc.kube import errors as kube_errors
from dralloc.kube import resources, writing
from dralloc.model import pods
from dralloc.scheduling import placement, queueing

logger = logging.getLogger(__name__)

def error_message(exc: BaseException) -> str:
    """What a user reads for an error: input errors as they are (they name the object and field)."""
    if isinstance(exc, (allocation_errors.AllocationInputError, items.PodInputError, committing.Rejected)):
        return allocation_errors.for_users(exc)
    return failures.internal_error(exc)



def too_costly_message(item: placement.Item, answer: deciding.TooCostly) -> str:
    """What a pod whose decision used up its CPU budget is told: which claims, which budget."""
    claims_ = ", ".join(claim.ref() for claim in item.claims) or "none to allocate"
    return (f"deciding where this pod fits took more than the scheduler's CPU budget of {answer.budget:g} s per "
            f"decision (claims {claims_}); it is retried after a backoff when the cluster changes. Fewer "
            "requests, fewer firstAvailable alternatives or a narrower selector make the search cheaper")



async def report_unreadable(rt: Runtime) -> None:
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
        await report(rt, *key, reason="SchedulerError", event_reason="AllocationError", message=text)


async def record_error(rt: Runtime, pod: pods.Pod, exc: BaseException) -> None:
    """Deciding for this pod failed: say so on the pod (when the message changed), back it off, never raise."""
    metrics.observe_object_error("scheduling")
    uid = pod.metadata.uid or ""
    memory = rt.memory(uid)
    delay = rt.queue.back_off(uid, time.monotonic()) if uid in rt.queue else 0.0
    memory.failure = "error"
    text = error_message(exc)
    if text in (memory.last_message, said(rt, pod, "SchedulerError")):
        memory.last_message = text
        logger.debug("pod=%s/%s: still failing: %s", pod.metadata.namespace, pod.metadata.name, text)
        return
    memory.last_message = text
    if isinstance(exc, (allocation_errors.AllocationInputError, items.PodInputError, committing.Rejected)):
        logger.warning("pod=%s/%s: cannot be scheduled: %s (retrying in %.1fs)",
                       pod.metadata.namespace, pod.metadata.name, text, delay)
    else:
        logger.error("pod=%s/%s: deciding its placement failed; retrying in %.1fs", pod.metadata.namespace,
                     pod.metadata.name, delay, exc_info=exc)
    await report(rt, pod.metadata.namespace or "", pod.metadata.name, reason="SchedulerError",
                  event_reason="AllocationError", message=text)


def said(rt: Runtime, pod: pods.Pod, reason: str) -> str | None:
    """What the pod's PodScheduled condition says now with this reason (None: nothing): a replica that
    just took over, or restarted, does not repeat what the last one wrote."""
    raw = rt.cluster.pods.raw(pod.metadata.namespace or "", pod.metadata.name) or {}
    for condition in (raw.get("status") or {}).get("conditions") or []:
        if isinstance(condition, dict) and condition.get("type") == "PodScheduled":
            if condition.get("status") == "False" and condition.get("reason") == reason:
                return str(condition.get("message") or "")
    return None


async def report(rt: Runtime, namespace: str, name: str, *, reason: str, event_reason: str, message: str,
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



async def record_unschedulable(rt: Runtime, pod: pods.Pod, message: str, *, wants: queueing.Wants,
                                nodes: bool = True, event: bool = True, failure: str = "unschedulable") -> None:
    """The pod does not fit (or was too costly to decide): parked until a change it wants, after its
    backoff; its condition and Event are written only when the reason changed."""
    uid = pod.metadata.uid or ""
    memory = rt.memory(uid)
    if uid in rt.queue:
        rt.queue.unschedulable(uid, time.monotonic(), wants)
    memory.failure = failure
    text = f"0/{len(rt.cluster.nodes)} nodes are available: {message}" if nodes else message
    if text in (memory.last_message, said(rt, pod, "Unschedulable")):
        memory.last_message = text
        return
    memory.last_message = text
    await report(rt, pod.metadata.namespace or "", pod.metadata.name, reason="Unschedulable",
                  event_reason="DecisionTooCostly" if failure == "too-costly" else "AllocationFailed",
                  message=text, event=event)


# kube-scheduler's PodGroup condition: `PodGroupInitiallyScheduled` in scheduling.k8s.io/v1beta1 (1.37),
# `PodGroupScheduled` in v1alpha2 (1.36); its reasons.
GROUP_SCHEDULED = {"v1beta1": "PodGroupInitiallyScheduled", "v1alpha2": "PodGroupScheduled"}
GROUP_SCHEDULED_REASONS = ("Scheduled", "Unschedulable", "SchedulerError")


async def group_scheduled(rt: Runtime, key: tuple[str, str], status: bool, reason: str, message: str) -> None:
    """The PodGroup's scheduled condition, as kube-scheduler writes it (schedule_one_podgroup.go,
    updatePodGroupCondition): True with reason Scheduled once the gang is placed, else False with reason
    Unschedulable or SchedulerError and why; with observedGeneration; never back to False once True
    (it records the first success: members may go later). Written only when it changes. Failures are
    logged, never raised: the members' own conditions say the same."""
    resource = rt.pod_group_resource
    raw = rt.cluster.pod_groups.raw(*key)
    if resource is None or raw is None:
        return
    kind = GROUP_SCHEDULED.get(resource.version)
    if kind is None:
        return
    found = next((c for c in ((raw.get("status") or {}).get("conditions") or []) if c.get("type") == kind), None)
    wanted = {"status": "True" if status else "False", "reason": reason, "message": message}
    if found is not None and ((found.get("status") == "True" and not status)
                              or all(found.get(k) == v for k, v in wanted.items())):
        return
    try:
        await intents.patch_group_condition(rt, key, kind, wanted)
    except (kube_errors.KubeError, committing.Refused, committing.Unknown) as exc:
        logger.warning("podgroup=%s/%s: cannot write its %s condition: %s", key[0], key[1], kind, exc)


async def record_gated(rt: Runtime, pod: pods.Pod, gates: tuple[str, ...]) -> None:
    """Scheduling gates not ours hold the pod back (`items.held_by`): parked without an attempt until its
    own object changes (a gate removed); `PodScheduled=False`, reason `SchedulingGated` (kube-apiserver's
    reason and words for a gated pod) naming the gates dralloc waits for, written when that changed. No
    Event: a pod held by its quota system is not failing."""
    uid = pod.metadata.uid or ""
    memory = rt.memory(uid)
    if uid in rt.queue:
        rt.queue.gated(uid, time.monotonic())
    settings = rt.settings.scheduling
    gate_mode = settings.gate in [g.name for g in pod.spec.scheduling_gates]
    text = items.gated_message(gates, gate_mode=gate_mode, gate=settings.gate)
    if text in (memory.last_message, said(rt, pod, "SchedulingGated")):
        memory.last_message = text
        return
    memory.last_message = text
    logger.info("pod=%s/%s: waits for scheduling gate(s) %s to be removed", pod.metadata.namespace,
                pod.metadata.name, ", ".join(gates))
    await report(rt, pod.metadata.namespace or "", pod.metadata.name, reason="SchedulingGated",
                 event_reason="", message=text, event=False)


async def group_event(rt: Runtime, key: tuple[str, str], reason: str, type_: str, message: str) -> None:
    """An Event on the gang's PodGroup (namespace, name); failures to write are logged, never raised."""
    raw = rt.cluster.pod_groups.raw(*key)
    if raw is None:
        return
    try:
        await rt.events.post(rt.require_session(), regarding=raw, reason=reason, type_=type_,
                             action="Scheduling", message=message)
    except kube_errors.KubeError as exc:
        logger.warning("podgroup=%s/%s: cannot post the %s Event: %s", key[0], key[1], reason, exc)
