"""NoExecute device taints: which pods must go, when, and how many may go now.

What kube-controller-manager's device-taint-eviction controller decides, as data:

- A pod is considered when it is bound to a node, not finished and not being
  deleted, and one of its ResourceClaims is allocated and reserved for it.
- For every device allocated to such a claim and every NoExecute taint in effect
  on it (slice taints and DeviceTaintRule taints), the tolerations that count are
  those recorded in the claim's allocation result for that device (the
  allocator copied them from the request). No matching toleration: the pod is due
  at the moment the taint was added (so: at once). Matching tolerations that all
  tolerate forever (no `tolerationSeconds`): the taint is ignored. Otherwise the
  smallest `tolerationSeconds` (negative counts as 0) starts at the taint's time.
  The pod's eviction time is the earliest over all its devices and taints.
- Removing the taint (or adding a toleration-carrying allocation) before then
  removes the pod from the plan; the caller cancels what it had scheduled.

`limit()` then applies the safety limits: at most `per_minute` evictions in any
60 s window, and never more than `max_percent` of the pods using one DeviceClass
being evicted at once (pods already being deleted count), with at least one at a
time so that eviction always progresses.

Pure: time comes in as `now`; when a taint has no `timeAdded` the caller passes
the time it first saw it.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import NamedTuple

from dralloc.allocation import taints as taint_rules
from dralloc.allocation.pools import DeviceID
from dralloc.allocation.taintrules import SOURCE_RULE, EffectiveTaint
from dralloc.model import claims as model_claims
from dralloc.model import pods as model_pods
from dralloc.model import taints

WINDOW = dt.timedelta(seconds=60)
NO_EXECUTE = "NoExecute"


@dataclasses.dataclass(frozen=True)
class Limits:
    per_minute: int = 60  # evictions in any 60 s window; 0: no limit
    max_percent: int = 50  # of the pods using one DeviceClass, evicted at once (at least 1); 100: no limit
    dry_run: bool = False  # report (Events, rule status, metrics) but never delete

    @classmethod
    def from_environment(cls, env: Mapping[str, str]) -> Limits:
        """DRALLOC_EVICTION_PER_MINUTE, DRALLOC_EVICTION_MAX_PERCENT, DRALLOC_EVICTION_DRY_RUN=true."""
        defaults = cls()
        return cls(
            per_minute=max(0, int(env.get("DRALLOC_EVICTION_PER_MINUTE", defaults.per_minute))),
            max_percent=min(100, max(0, int(env.get("DRALLOC_EVICTION_MAX_PERCENT", defaults.max_percent)))),
            dry_run=env.get("DRALLOC_EVICTION_DRY_RUN", "").lower() in ("1", "true", "yes"),
        )


class PodRef(NamedTuple):
    namespace: str
    name: str
    uid: str


class TaintKey(NamedTuple):
    """A taint in effect on one device, identified across passes."""

    device: DeviceID
    source: str
    rule: str
    key: str
    value: str
    effect: str


def taint_key(device: DeviceID, effective: EffectiveTaint) -> TaintKey:
    t = effective.taint
    return TaintKey(device, effective.source, effective.rule, t.key, t.value or "", t.effect)


@dataclasses.dataclass(frozen=True)
class Eviction:
    pod: PodRef
    at: dt.datetime  # when it is due
    tainted_at: dt.datetime  # when the causing taint appeared (for the latency metric)
    device: DeviceID
    taint: EffectiveTaint
    device_classes: tuple[str, ...]  # of all the pod's allocated devices (the max-percent limit)
    rules: tuple[str, ...]  # every rule whose NoExecute taint will evict this pod

    def describe(self) -> str:
        t = self.taint.taint
        where = f"DeviceTaintRule {self.taint.rule}" if self.taint.source == SOURCE_RULE else "its ResourceSlice"
        return (f"device {self.device.driver}/{self.device.pool}/{self.device.device} has taint "
                f"{t.key}{'=' + t.value if t.value else ''}:{t.effect} (from {where})")


@dataclasses.dataclass(frozen=True)
class Decision:
    due: tuple[Eviction, ...]  # at <= now, earliest first
    later: tuple[Eviction, ...]  # at > now, earliest first
    cancelled: tuple[PodRef, ...]  # were pending before, no longer need to go
    pending_by_rule: Mapping[str, int]  # rule name -> pods still to be evicted because of it
    would_evict_by_rule: Mapping[str, int]  # effect None rules: pods that NoExecute would evict
    class_pods: Mapping[str, int]  # DeviceClass -> pods using it (not being deleted)
    class_deleting: Mapping[str, int]  # DeviceClass -> pods using it that are being deleted

    @property
    def next_at(self) -> dt.datetime | None:
        return self.later[0].at if self.later else None


def parse_time(value: str | None) -> dt.datetime | None:
    if not value:
        return None
    try:
        parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)


def claim_names(pod: model_pods.Pod) -> list[str]:
    recorded = {s.name: s.resource_claim_name for s in pod.status.resource_claim_statuses}
    names = []
    for entry in pod.spec.resource_claims:
        name = entry.resource_claim_name or recorded.get(entry.name)
        if name:
            names.append(name)
    return names


def request_class(claim: model_claims.ResourceClaim, request: str) -> str:
    """The DeviceClass of an allocation result's request ("req" or "req/subrequest")."""
    main, _, sub = request.partition("/")
    for req in claim.spec.devices.requests:
        if req.name != main:
            continue
        if req.exactly is not None and not sub:
            return req.exactly.device_class_name
        for alternative in req.first_available:
            if alternative.name == sub:
                return alternative.device_class_name
    return ""


def eviction_time(
    result: model_claims.DeviceRequestAllocationResult, taint: taints.DeviceTaint, tainted_at: dt.datetime,
) -> dt.datetime | None:
    """When a NoExecute taint evicts the user of this allocated device; None: tolerated forever."""
    matching = [t for t in result.tolerations if taint_rules.tolerates(t, taint)]
    if not matching:
        return tainted_at
    seconds = [max(0, t.toleration_seconds) for t in matching if t.toleration_seconds is not None]
    if not seconds:
        return None
    return tainted_at + dt.timedelta(seconds=min(seconds))


def decide(
    pods: Iterable[model_pods.Pod],
    claim_of: Callable[[str, str], model_claims.ResourceClaim | None],
    effective: Mapping[DeviceID, Sequence[EffectiveTaint]],
    *,
    now: dt.datetime,
    first_seen: Mapping[TaintKey, dt.datetime],
    previous: Iterable[PodRef] = (),
    deleted: Collection[PodRef] = (),  # deleted by us, not yet seen gone: counted as being deleted
) -> Decision:
    """Which pods are due for eviction now, which later, and which are no longer affected."""
    due: list[Eviction] = []
    later: list[Eviction] = []
    pending_by_rule: dict[str, int] = {}
    would_evict: dict[str, int] = {}
    class_pods: dict[str, int] = {}
    class_deleting: dict[str, int] = {}
    for pod in pods:
        if not pod.spec.node_name or pod.finished() or not pod.spec.resource_claims:
            continue
        namespace = pod.metadata.namespace or ""
        uid = pod.metadata.uid or ""
        deleting = bool(pod.metadata.deletion_timestamp) or PodRef(namespace, pod.metadata.name, uid) in deleted
        best: Eviction | None = None
        classes: set[str] = set()
        rules: set[str] = set()
        would: set[str] = set()
        candidates: list[tuple[dt.datetime, dt.datetime, DeviceID, EffectiveTaint]] = []
        for name in claim_names(pod):
            claim = claim_of(namespace, name)
            if claim is None or claim.status.allocation is None:
                continue
            if not any(r.uid == uid for r in claim.status.reserved_for):
                continue
            for result in claim.status.allocation.devices.results:
                device = DeviceID(result.driver, result.pool, result.device)
                device_class = request_class(claim, result.request)
                if device_class:
                    classes.add(device_class)
                for effect in effective.get(device, ()):
                    taint = effect.taint
                    if taint.effect == "None" and effect.source == SOURCE_RULE:
                        as_no_execute = taint.model_copy(update={"effect": NO_EXECUTE})
                        if eviction_time(result, as_no_execute, now) is not None:
                            would.add(effect.rule)
                    if taint.effect != NO_EXECUTE:
                        continue
                    tainted_at = (parse_time(taint.time_added) or first_seen.get(taint_key(device, effect))
                                  or now)
                    at = eviction_time(result, taint, tainted_at)
                    if at is None:
                        continue
                    if effect.source == SOURCE_RULE:
                        rules.add(effect.rule)
                    candidates.append((at, tainted_at, device, effect))
        for device_class in classes:
            counts = class_deleting if deleting else class_pods
            counts[device_class] = counts.get(device_class, 0) + 1
        if deleting:
            continue  # already going: neither pending nor to be evicted again
        for rule in would:
            would_evict[rule] = would_evict.get(rule, 0) + 1
        if not candidates:
            continue
        at, tainted_at, device, effect = min(candidates, key=lambda c: (c[0], str(c[2])))
        best = Eviction(PodRef(namespace, pod.metadata.name, uid), at, tainted_at, device, effect,
                        tuple(sorted(classes)), tuple(sorted(rules)))
        (due if at <= now else later).append(best)
        for rule in rules:
            pending_by_rule[rule] = pending_by_rule.get(rule, 0) + 1
    order = lambda e: (e.at, e.pod.namespace, e.pod.name)  # noqa: E731
    due.sort(key=order)
    later.sort(key=order)
    still = {e.pod for e in (*due, *later)}
    cancelled = tuple(sorted(p for p in set(previous) if p not in still))
    return Decision(tuple(due), tuple(later), cancelled, pending_by_rule, would_evict, class_pods, class_deleting)


@dataclasses.dataclass(frozen=True)
class Limited:
    allowed: tuple[Eviction, ...]
    held: tuple[Eviction, ...]
    retry_at: dt.datetime | None  # when the rate limit lets the next one through (None: on a pod change)


@dataclasses.dataclass(frozen=True)
class Group:
    """Extra limits on the evictions some rules cause (a DeviceHealthPolicy's `spec.eviction`)."""

    limits: Limits
    recent: Sequence[dt.datetime] = ()  # this group's evictions so far


class _Bucket:
    def __init__(self, limits: Limits, recent: Sequence[dt.datetime], now: dt.datetime) -> None:
        self.limits = limits
        self.window = sorted(t for t in recent if now - t < WINDOW)
        self.used = 0
        self.now = now

    def has_slot(self) -> bool:
        return self.limits.per_minute <= 0 or len(self.window) + self.used < self.limits.per_minute

    def next_slot(self) -> dt.datetime:
        # The oldest eviction in the window leaves it first and frees one slot.
        used = [*self.window, *([self.now] * self.used)]
        return used[0] + WINDOW if used else self.now

    def within_class_limits(self, eviction: Eviction, decision: Decision, deleting: Mapping[str, int]) -> bool:
        if self.limits.max_percent >= 100:
            return True
        for device_class in eviction.device_classes:
            total = decision.class_pods.get(device_class, 0) + decision.class_deleting.get(device_class, 0)
            cap = max(1, total * self.limits.max_percent // 100)
            if deleting.get(device_class, 0) + 1 > cap:
                return False
        return True


def limit(
    decision: Decision,
    limits: Limits,
    *,
    now: dt.datetime,
    recent: Sequence[dt.datetime],
    groups: Mapping[str, Group] | None = None,
    group_of: Mapping[str, str] | None = None,  # rule name -> group name
) -> Limited:
    """The due evictions that may happen now (rate and per-DeviceClass limits); the rest wait.

    An eviction caused by a rule of a group must also fit that group's limits.
    """
    overall = _Bucket(limits, recent, now)
    buckets = {name: _Bucket(g.limits, g.recent, now) for name, g in (groups or {}).items()}
    deleting = dict(decision.class_deleting)
    allowed: list[Eviction] = []
    held: list[Eviction] = []
    for eviction in decision.due:
        group = (group_of or {}).get(eviction.taint.rule) if eviction.taint.source == SOURCE_RULE else None
        checks = [overall, *([buckets[group]] if group in buckets else [])]
        if not all(b.has_slot() and b.within_class_limits(eviction, decision, deleting) for b in checks):
            held.append(eviction)
            continue
        allowed.append(eviction)
        for bucket in checks:
            bucket.used += 1
        for device_class in eviction.device_classes:
            deleting[device_class] = deleting.get(device_class, 0) + 1
    exhausted = [b.next_slot() for b in (overall, *buckets.values()) if not b.has_slot()]
    retry_at = min(exhausted) if held and exhausted else None
    return Limited(tuple(allowed), tuple(held), retry_at)


def rule_condition(
    rule: taints.DeviceTaintRule, decision: Decision, *, evicted: int, dry_run: bool,
) -> dict[str, str]:
    """The `EvictionInProgress` condition (type, status, reason, message) for one rule, without times."""
    name = rule.metadata.name
    effect = rule.spec.taint.effect
    if effect == NO_EXECUTE:
        pending = decision.pending_by_rule.get(name, 0)
        verb = "would have been evicted (dry run)" if dry_run else "evicted"
        message = f"{pending} pod(s) pending eviction, {evicted} {verb}"
        if pending:
            return {"type": "EvictionInProgress", "status": "True", "reason": "PodsPendingEviction",
                    "message": message}
        return {"type": "EvictionInProgress", "status": "False",
                "reason": "Completed" if evicted else "NoPodsAffected", "message": message}
    if effect == "None":
        would = decision.would_evict_by_rule.get(name, 0)
        return {"type": "EvictionInProgress", "status": "False", "reason": "NoEffect",
                "message": f"effect None evicts nothing; with NoExecute {would} pod(s) would be evicted"}
    return {"type": "EvictionInProgress", "status": "False", "reason": "NotNoExecute",
            "message": f"effect {effect} evicts no pods"}
