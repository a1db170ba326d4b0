"""The health loop: DeviceHealthPolicies turn health signals into DeviceTaintRules.

Runs on the active replica only, started by the control-loop daemon. Each pass (on
any claim, pod, slice, policy or rule change, and when a persistence or recovery
window ends), for every DeviceHealthPolicy:

1. `health.signals_for` reads the signals from the view (pods' reports, which
   count only for devices allocated to the reporting pod's own claims, are read
   once per pass by `health.pod_reports`); a report that does not count is counted
   in `dralloc_health_reports_ignored_total{reason}` and logged, once per report
   (a warning for the first of each pod or claim, debug for the next);
2. `health.step` advances each device's state (damping, injected clock);
3. the policy's DeviceTaintRules are made to match the tainted devices: one rule
   per device, named `<policy>.<pool>.<device>` (made a valid name, with a hash
   suffix when it had to be changed), labelled `dralloc.io/health-policy: <policy>`
   and owned by the policy (deleting the policy garbage-collects its rules);
   rules no longer wanted are deleted with a uid precondition;
4. Events on the policy for each taint and untaint, and its status: the devices
   not healthy now, the last transitions, a `Ready` condition.

The eviction loop then treats these rules like any other (NoExecute evicts).
States live in memory: after a restart (or a failover), the devices that have one
of the policy's rules start as unhealthy and must be healthy for the recovery
window again before it is removed; a signal still being held restarts its
persistence window.

A loop of the top layers: calls the runtime, `clock`, `failures` and `looping`; the pure
steps are `dralloc.lifecycle.health`'s.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import hashlib
import logging
import re
from collections.abc import Iterable
from typing import Any

from dralloc import metrics
from dralloc.allocation.pools import DeviceID, SliceIndex
from dralloc.handlers import clock, failures, looping
from dralloc.handlers.runtime import Runtime
from dralloc.kube import errors as kube_errors
from dralloc.kube import resources, writing
from dralloc.lifecycle import health
from dralloc.model import taints
from dralloc.model.claims import ResourceClaim

logger = logging.getLogger(__name__)

POLICY_LABEL = "dralloc.io/health-policy"
DEVICE_ANNOTATION = "dralloc.io/device"
CONTROLLER = "dralloc.io/device-health"
MAX_TRANSITIONS = 20  # kept in the policy's status
IDLE_WAIT = 30.0
BATCH_DELAY = 0.02  # seconds
_INVALID = re.compile(r"[^a-z0-9.-]+")


def rule_name(policy: str, device: DeviceID) -> str:
    """`<policy>.<pool>.<device>`, lower-cased DNS subdomain; a hash suffix when that changed anything."""
    wanted = f"{policy}.{device.pool}.{device.device}"
    name = _INVALID.sub("-", wanted.lower()).strip("-.")
    name = re.sub(r"\.\.+", ".", name)
    if name != wanted or len(name) > 253:
        digest = hashlib.sha256(f"{policy}/{device.driver}/{device.pool}/{device.device}".encode()).hexdigest()[:8]
        name = f"{name[:240].rstrip('-.')}-{digest}"
    return name


@dataclasses.dataclass
class PolicyMemory:
    uid: str
    states: dict[DeviceID, health.DeviceHealth] = dataclasses.field(default_factory=dict)
    transitions: list[dict[str, Any]] = dataclasses.field(default_factory=list)


def _owned_rules(rt: Runtime, policy: str) -> dict[DeviceID, taints.DeviceTaintRule]:
    found: dict[DeviceID, taints.DeviceTaintRule] = {}
    for rule in rt.cluster.taint_rules.all():
        selector = rule.spec.device_selector
        if rule.metadata.labels.get(POLICY_LABEL) != policy or selector is None:
            continue
        if selector.driver and selector.pool and selector.device:
            found[DeviceID(selector.driver, selector.pool, selector.device)] = rule
    return found


_EXPLAINED = {
    health.UNKNOWN_CLAIM: "the pod has no claim of that name",
    health.CLAIM_NOT_FOUND: "the pod's claim is not there (not created or recorded yet)",
    health.CLAIM_NOT_RESERVED: "the claim is not allocated and reserved for the pod",
    health.DEVICE_NOT_ALLOCATED: "the device is not allocated to that claim",
    health.BAD_RESOURCE_ID: "the resourceID is not driver/pool/device",
}


@dataclasses.dataclass
class IgnoredReports:
    """Health reports that do not count: each one counted in the metric and logged once (per reporting object)."""

    seen: dict[str, set[tuple[str, str, str]]] = dataclasses.field(default_factory=dict)  # uid -> reports

    def note(self, reports: Iterable[health.Report]) -> None:
        for report in reports:
            key = (report.what, str(report.device) if report.device else "", report.ignored)
            known = self.seen.setdefault(report.uid or report.source, set())
            if key in known:
                continue
            first = not known
            known.add(key)
            metrics.observe_health_report_ignored(report.ignored)
            logger.log(logging.WARNING if first else logging.DEBUG,
                       "%s: health report for device %s ignored (%s): %s", report.source,
                       report.device or "(none)", _EXPLAINED.get(report.ignored, report.ignored), report.what)

    def keep(self, live: set[str]) -> None:
        """Forget the objects that are gone."""
        for uid in set(self.seen) - live:
            del self.seen[uid]


async def run_pass(rt: Runtime, memory: dict[str, PolicyMemory], ignored: IgnoredReports | None = None) -> float:
    """One pass over every policy; seconds until a window ends."""
    if rt.taint_rule_resource is None:
        return IDLE_WAIT  # no DeviceTaintRules in this cluster: nothing to act with
    if not len(rt.cluster.health_policies) and not memory:
        return IDLE_WAIT  # no policy: nothing to watch (and no O(pods) work on every event)
    now = clock.now()
    waits = [IDLE_WAIT]
    live = set()
    index = rt.views.slice_index()
    ignored = ignored if ignored is not None else IgnoredReports()
    claims = list(rt.cluster.claims.all())
    policies = list(rt.cluster.health_policies.all())
    pods = [entry.raw for entry in rt.cluster.pods.entries.values()]
    # Read once for every policy, and only when one asks for them (O(pods)).
    reports = health.pod_reports(pods, claims) if any(p.signals.pod_resource_health for p in policies) else []
    for policy in policies:
        live.add(policy.metadata.name)
        try:
            next_at = await _policy_pass(rt, policy, memory, ignored, now=now, index=index, claims=claims,
                                         reports=reports)
        except Exception as exc:  # one policy (or a bug it meets) must not stop the others
            logger.exception("DeviceHealthPolicy %s: pass failed; retrying", policy.metadata.name)
            metrics.observe_object_error("health")
            await _report_failure(rt, policy, exc)
            waits.append(5.0)
            continue
        if next_at is not None:
            waits.append((next_at - clock.now()).total_seconds())
    for gone in set(memory) - live:
        del memory[gone]
    if ignored.seen:
        ignored.keep({str((p.get("metadata") or {}).get("uid") or "") for p in pods}
                     | {c.metadata.uid or "" for c in claims})
    await _delete_orphans(rt, live)
    return max(0.01, min(waits))


async def _policy_pass(rt: Runtime, policy: health.DeviceHealthPolicy, memory: dict[str, PolicyMemory],
                       ignored: IgnoredReports, *, now: dt.datetime, index: SliceIndex, claims: list[ResourceClaim],
                       reports: list[health.Report]) -> dt.datetime | None:
    """One policy's step; when its windows next end (None: no window open)."""
    name, uid = policy.metadata.name, policy.metadata.uid or ""
    mine = memory.get(name)
    owned = _owned_rules(rt, name)
    if mine is None or mine.uid != uid:
        # New to this process: rules it already has mean "unhealthy", counted from now.
        mine = memory[name] = PolicyMemory(uid, {d: health.DeviceHealth(health.UNHEALTHY, now, "before restart")
                                                 for d in owned})
    observed = health.signals_for(policy, claims=claims, reports=reports, index=index)
    signals, problem = observed.signals, observed.problem
    ignored.note(observed.ignored)
    spec = policy.spec or health.DeviceHealthPolicySpec()
    result = health.step(mine.states, signals, now=now,
                         unhealthy_after=dt.timedelta(seconds=max(0, spec.unhealthy_after_seconds)),
                         healthy_after=dt.timedelta(seconds=max(0, spec.healthy_after_seconds)))
    mine.states = dict(result.states)
    for t in result.transitions:
        metrics.observe_health_transition(t.after)
        mine.transitions.append({"driver": t.device.driver, "pool": t.device.pool, "device": t.device.device,
                                 "from": t.before, "to": t.after, "time": clock.stamp(t.at), "reason": t.reason})
    del mine.transitions[:-MAX_TRANSITIONS]
    await _sync_rules(rt, policy, owned, result.tainted, mine)
    await _write_status(rt, policy, mine, problem)
    return result.next_at


async def _report_failure(rt: Runtime, policy: health.DeviceHealthPolicy, exc: BaseException) -> None:
    """Ready=False (reason Error) on the policy; best effort, never raises."""
    message = failures.internal_error(exc)
    current = dict(policy.status or {})
    old: dict[str, Any] = next((c for c in current.get("conditions") or [] if c.get("type") == "Ready"), {})
    if old.get("reason") == "Error" and old.get("message") == message[:1024]:
        return
    ready = {"type": "Ready", "status": "False", "reason": "Error", "message": message[:1024],
             "observedGeneration": policy.metadata.generation or 0, "lastTransitionTime": clock.stamp(clock.now())}
    try:
        stored = await writing.merge_patch(rt.require_session(), resources.DEVICE_HEALTH_POLICIES, policy.metadata.name,
                                           {"status": {"conditions": [ready]}}, subresource="status")
        rt.cluster.apply("DeviceHealthPolicy", "MODIFIED", stored)
        await _event(rt, policy, "HealthPolicyError", "Warning", message)
    except kube_errors.KubeError as failure:
        logger.warning("DeviceHealthPolicy %s: cannot report the failure: %s", policy.metadata.name, failure)


def _rule_body(policy: health.DeviceHealthPolicy, device: DeviceID) -> dict[str, Any]:
    taint = policy.taint
    body_taint: dict[str, Any] = {"key": taint.key, "effect": taint.effect}
    if taint.value:
        body_taint["value"] = taint.value
    return {
        "metadata": {
            "name": rule_name(policy.metadata.name, device),
            "labels": {POLICY_LABEL: policy.metadata.name},
            "annotations": {DEVICE_ANNOTATION: f"{device.driver}/{device.pool}/{device.device}"},
            "ownerReferences": [{"apiVersion": "dralloc.io/v1alpha1", "kind": "DeviceHealthPolicy",
                                 "name": policy.metadata.name, "uid": policy.metadata.uid or "",
                                 "controller": True, "blockOwnerDeletion": False}],
        },
        "spec": {"deviceSelector": {"driver": device.driver, "pool": device.pool, "device": device.device},
                 "taint": body_taint},
    }


async def _sync_rules(rt: Runtime, policy: health.DeviceHealthPolicy, owned: dict[DeviceID, taints.DeviceTaintRule],
                      tainted: frozenset[DeviceID], mine: PolicyMemory) -> None:
    resource = rt.taint_rule_resource
    assert resource is not None
    session = rt.require_session()
    for device in sorted(tainted - set(owned)):
        body = _rule_body(policy, device)
        try:
            stored = await writing.create_object(session, resource, body)
        except kube_errors.ConflictError:
            continue  # exists already (AlreadyExists): the watch will show it
        except kube_errors.KubeError as exc:
            logger.warning("DeviceHealthPolicy %s: cannot create DeviceTaintRule for %s: %s",
                           policy.metadata.name, device, exc)
            continue
        rt.cluster.apply("DeviceTaintRule", "ADDED", stored)
        logger.info("DeviceTaintRule %s: created for device %s (DeviceHealthPolicy %s)", stored["metadata"]["name"],
                    device, policy.metadata.name)
        rt.eviction_wakeup.set()
        rt.scheduling_wakeup.set()
        reason = mine.states[device].reason if device in mine.states else ""
        await _event(rt, policy, "DeviceTainted", "Warning",
                     f"Device {device} is unhealthy ({reason}): DeviceTaintRule {stored['metadata']['name']} "
                     f"taints it {policy.taint.key}:{policy.taint.effect}")
    for device, rule in sorted(owned.items()):
        if device in tainted:
            wanted = _rule_body(policy, device)["spec"]["taint"]
            have = rule.spec.taint
            if (have.key, have.value or None, have.effect) != (wanted["key"], wanted.get("value"), wanted["effect"]):
                try:  # the policy's taint changed: follow it
                    stored = await writing.merge_patch(session, resource, rule.metadata.name,
                                                       {"spec": {"taint": {**wanted, "value": wanted.get("value")}}})
                    rt.cluster.apply("DeviceTaintRule", "MODIFIED", stored)
                except kube_errors.KubeError as exc:
                    logger.warning("DeviceTaintRule %s: cannot update its taint: %s", rule.metadata.name, exc)
            continue
        if await _delete_rule(rt, rule):
            await _event(rt, policy, "DeviceUntainted", "Normal",
                         f"Device {device} is healthy again: DeviceTaintRule {rule.metadata.name} removed")


async def _delete_rule(rt: Runtime, rule: taints.DeviceTaintRule) -> bool:
    resource = rt.taint_rule_resource
    assert resource is not None
    try:
        await writing.delete_object(rt.require_session(), resource, rule.metadata.name, uid=rule.metadata.uid)
    except kube_errors.NotFoundError:
        pass
    except kube_errors.KubeError as exc:
        logger.warning("DeviceTaintRule %s: cannot delete: %s", rule.metadata.name, exc)
        return False
    logger.info("DeviceTaintRule %s: deleted", rule.metadata.name)
    raw = rt.cluster.taint_rules.raw("", rule.metadata.name)
    if raw is not None:
        rt.cluster.apply("DeviceTaintRule", "DELETED", raw)
    rt.wake()
    rt.eviction_wakeup.set()
    return True


async def _delete_orphans(rt: Runtime, live: set[str]) -> None:
    """Rules of policies that are gone (garbage collection does this too, where it runs)."""
    for rule in list(rt.cluster.taint_rules.all()):
        policy = rule.metadata.labels.get(POLICY_LABEL)
        if policy is not None and policy not in live:
            await _delete_rule(rt, rule)


async def _event(rt: Runtime, policy: health.DeviceHealthPolicy, reason: str, type_: str, message: str) -> None:
    raw = rt.cluster.health_policies.raw("", policy.metadata.name) or {}
    await writing.post_event(rt.require_session(), regarding=raw, reason=reason, type_=type_, action="DeviceHealth",
                             message=message, reporting_controller=CONTROLLER)


async def _write_status(rt: Runtime, policy: health.DeviceHealthPolicy, mine: PolicyMemory,
                        problem: str | None) -> None:
    devices = [{"driver": d.driver, "pool": d.pool, "device": d.device, "state": h.state,
                "since": clock.stamp(h.since), "reason": h.reason[:256],
                **({"rule": rule_name(policy.metadata.name, d)} if h.state in health.TAINTED_STATES else {})}
               for d, h in sorted(mine.states.items())]
    tainted = sum(1 for h in mine.states.values() if h.state in health.TAINTED_STATES)
    current = dict(policy.status or {})
    old_ready: dict[str, Any] = next((c for c in current.get("conditions") or [] if c.get("type") == "Ready"), {})
    ready = {"type": "Ready", "status": "False" if problem else "True",
             "reason": "InvalidSelector" if problem else "Watching",
             "message": problem or f"{tainted} device(s) tainted",
             "observedGeneration": policy.metadata.generation or 0}
    keep = old_ready.get("status") == ready["status"] and old_ready.get("lastTransitionTime")
    ready["lastTransitionTime"] = keep or clock.stamp(clock.now())
    status = {"devices": devices, "taintedDevices": tainted, "lastTransitions": list(mine.transitions),
              "conditions": [ready], "observedGeneration": policy.metadata.generation or 0}
    if all(current.get(k) == v for k, v in status.items()):
        return
    try:
        stored = await writing.merge_patch(rt.require_session(), resources.DEVICE_HEALTH_POLICIES, policy.metadata.name,
                                           {"status": status}, subresource="status")
        rt.cluster.apply("DeviceHealthPolicy", "MODIFIED", stored)
    except kube_errors.KubeError as exc:
        logger.warning("DeviceHealthPolicy %s: cannot write status: %s", policy.metadata.name, exc)


async def health_loop(rt: Runtime, stopped: asyncio.Event) -> None:
    """Run passes whenever something changed, or when a damping window ends."""
    memory: dict[str, PolicyMemory] = {}
    ignored = IgnoredReports()
    await looping.pass_loop("health", lambda: run_pass(rt, memory, ignored), rt.health_wakeup, stopped,
                            batch_delay=BATCH_DELAY)
