"""Device health: signals -> per-device state with damping -> which devices a policy taints.

A `DeviceHealthPolicy` (dralloc.io/v1alpha1, cluster-scoped) names the signals
that mark a device unhealthy and the taint to put on it:

- `signals.claimConditions`: an entry of a ResourceClaim's `status.devices[]`
  whose `conditions` contain one with this type and status (e.g. Ready=False)
  marks that device, if it is one the claim is allocated;
- `signals.podResourceHealth: true`: a pod's
  `status.containerStatuses[].allocatedResourcesStatus[].resources[]` entry with
  `health: Unhealthy` marks the device of its `resourceID` (driver/pool/device),
  only if that device is allocated to the pod's own claim the entry names
  (`claim:<entry>[/<request>]`), reserved for the pod: a pod writes its own status,
  so its word counts for its own devices only (`pod_reports`);
- `signals.deviceSelectors`: CEL over the published device (as in a
  DeviceClass); a device for which all are true is unhealthy.

Every device starts healthy. The state machine, per policy and device:

    healthy --signal--> suspect --signal held unhealthyAfterSeconds--> unhealthy (tainted)
    suspect --no signal--> healthy
    unhealthy --no signal--> recovering (still tainted)
    recovering --signal--> unhealthy
    recovering --no signal for healthyAfterSeconds--> healthy (taint removed)

With a window of 0 the intermediate state is skipped. Pure: `now` is an
argument, and the caller keeps the states between passes.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Iterable, Mapping
from typing import Any

from dralloc.allocation import errors, selectors
from dralloc.allocation.pools import DeviceID, SliceIndex
from dralloc.model import claims as model_claims
from dralloc.model import classes
from dralloc.model.base import ApiModel, Object

HEALTHY, SUSPECT, UNHEALTHY, RECOVERING = "healthy", "suspect", "unhealthy", "recovering"
TAINTED_STATES = frozenset({UNHEALTHY, RECOVERING})


class ConditionMatch(ApiModel):
    type: str
    status: str = "False"


class Signals(ApiModel):
    claim_conditions: tuple[ConditionMatch, ...] = ()
    pod_resource_health: bool = False
    device_selectors: tuple[classes.DeviceSelector, ...] = ()


class PolicySelector(ApiModel):
    driver: str | None = None
    pool: str | None = None


class PolicyTaint(ApiModel):
    key: str = "dralloc.io/unhealthy"
    value: str | None = None
    effect: str = "NoExecute"


class PolicyEviction(ApiModel):
    """Limits on the evictions this policy's taints cause, on top of the operator's own."""

    max_per_minute: int = 0  # 0: only the operator's limit
    max_percent_per_device_class: int = 100


class DeviceHealthPolicySpec(ApiModel):
    selector: PolicySelector | None = None
    eviction: PolicyEviction | None = None
    signals: Signals | None = None
    taint: PolicyTaint | None = None
    unhealthy_after_seconds: int = 0
    healthy_after_seconds: int = 0


class DeviceHealthPolicy(Object):
    spec: DeviceHealthPolicySpec | None = None
    status: dict[str, Any] | None = None

    @property
    def signals(self) -> Signals:
        return (self.spec.signals if self.spec else None) or Signals()

    @property
    def taint(self) -> PolicyTaint:
        return (self.spec.taint if self.spec else None) or PolicyTaint()

    def covers(self, device: DeviceID) -> bool:
        selector = self.spec.selector if self.spec else None
        if selector is None:
            return True
        return not ((selector.driver and selector.driver != device.driver)
                    or (selector.pool and selector.pool != device.pool))


@dataclasses.dataclass(frozen=True)
class DeviceHealth:
    state: str
    since: dt.datetime  # when this state was entered
    reason: str = ""  # the signal that made it (or keeps it) unhealthy


@dataclasses.dataclass(frozen=True)
class Transition:
    device: DeviceID
    before: str
    after: str
    at: dt.datetime
    reason: str


@dataclasses.dataclass(frozen=True)
class Step:
    states: Mapping[DeviceID, DeviceHealth]  # healthy devices are left out
    transitions: tuple[Transition, ...]
    next_at: dt.datetime | None  # when a window ends without any signal changing

    @property
    def tainted(self) -> frozenset[DeviceID]:
        return frozenset(d for d, h in self.states.items() if h.state in TAINTED_STATES)


def step(
    current: Mapping[DeviceID, DeviceHealth],
    signals: Mapping[DeviceID, str],
    *,
    now: dt.datetime,
    unhealthy_after: dt.timedelta,
    healthy_after: dt.timedelta,
) -> Step:
    """Advance every device's state given the signals seen now (device -> reason)."""
    states: dict[DeviceID, DeviceHealth] = {}
    transitions: list[Transition] = []
    deadlines: list[dt.datetime] = []

    def move(device: DeviceID, before: str, after: str, reason: str) -> DeviceHealth:
        transitions.append(Transition(device, before, after, now, reason))
        return DeviceHealth(after, now, reason)

    for device in sorted({*current, *signals}):
        health = current.get(device) or DeviceHealth(HEALTHY, now)
        reason = signals.get(device)
        state = health.state
        if reason is not None:
            if state == HEALTHY:
                health = move(device, HEALTHY, SUSPECT, reason)
                state = SUSPECT
            if state == SUSPECT and now - health.since >= unhealthy_after:
                health = move(device, SUSPECT, UNHEALTHY, reason)
            elif state == RECOVERING:
                health = move(device, RECOVERING, UNHEALTHY, reason)
            elif state == UNHEALTHY and health.reason != reason:
                health = dataclasses.replace(health, reason=reason)
        else:
            if state == SUSPECT:
                health = move(device, SUSPECT, HEALTHY, "signal gone")
            elif state == UNHEALTHY:
                health = move(device, UNHEALTHY, RECOVERING, "signal gone")
                state = RECOVERING
            if health.state == RECOVERING and now - health.since >= healthy_after:
                health = move(device, RECOVERING, HEALTHY, f"healthy for {healthy_after.total_seconds():g}s")
        if health.state == SUSPECT:
            deadlines.append(health.since + unhealthy_after)
        elif health.state == RECOVERING:
            deadlines.append(health.since + healthy_after)
        if health.state != HEALTHY:
            states[device] = health
    return Step(states, tuple(transitions), min(deadlines) if deadlines else None)


# Why a health report does not count (dralloc_health_reports_ignored_total{reason}):
UNKNOWN_CLAIM = "unknown-claim"  # the pod has no claim entry (nor extended-resource claim) of that name
CLAIM_NOT_FOUND = "claim-not-found"  # the entry's claim is not created or not recorded yet, or not in the pod's namespace
CLAIM_NOT_RESERVED = "claim-not-reserved"  # the claim is not allocated, or not reserved for the reporting pod
DEVICE_NOT_ALLOCATED = "device-not-allocated"  # the device is not in the claim's allocation (for that request)
BAD_RESOURCE_ID = "bad-resource-id"  # the resourceID is not driver/pool/device
IGNORED_REASONS = (UNKNOWN_CLAIM, CLAIM_NOT_FOUND, CLAIM_NOT_RESERVED, DEVICE_NOT_ALLOCATED, BAD_RESOURCE_ID)


@dataclasses.dataclass(frozen=True)
class Report:
    """One report that a device is unhealthy: a pod's allocatedResourcesStatus entry, or a claim's device condition.

    A report counts only for a device allocated to the reporter's claim: any pod may
    write its own status, so a pod's report must not mark another tenant's device.
    """

    device: DeviceID | None  # None: the resourceID names no device
    source: str  # "Pod ns/name" or "ResourceClaim ns/name"
    uid: str  # the reporting object's uid
    what: str  # e.g. "claim:gpus health Unhealthy", "condition Ready=False"
    ignored: str = ""  # why it does not count (one of IGNORED_REASONS); "" when it does

    @property
    def reason(self) -> str:
        return f"{self.source}: {self.what}"


def _allocated(claim: model_claims.ResourceClaim, request: str = "") -> frozenset[DeviceID]:
    """The devices of the claim's allocation (of one request, "req" or its subrequests "req/sub", when given)."""
    allocation = claim.status.allocation
    if allocation is None:
        return frozenset()
    return frozenset(DeviceID(r.driver, r.pool, r.device) for r in allocation.devices.results
                     if not request or r.request == request or r.request.startswith(request + "/"))


def claim_reports(policy: DeviceHealthPolicy, claims: Iterable[model_claims.ResourceClaim]) -> list[Report]:
    """Device conditions matching the policy's claimConditions; those of devices outside the claim's allocation are ignored.

    `status.devices` is written by the driver (status subresource), so the claim itself is
    trusted; kube-apiserver refuses entries for devices the claim was not allocated, and this
    checks it again (for a share, the shareID too).
    """
    matches = policy.signals.claim_conditions
    found: list[Report] = []
    if not matches:
        return found
    for claim in claims:
        results = claim.status.allocation.devices.results if claim.status.allocation else ()
        for entry in claim.status.devices:
            device = DeviceID(entry.driver, entry.pool, entry.device)
            match = next((m for m in matches for c in entry.conditions
                          if c.get("type") == m.type and c.get("status") == m.status), None)
            if match is None:
                continue
            allocated = any(DeviceID(r.driver, r.pool, r.device) == device
                            and (entry.share_id is None or r.share_id == entry.share_id) for r in results)
            found.append(Report(device, f"ResourceClaim {claim.metadata.namespace}/{claim.metadata.name}",
                                claim.metadata.uid or "", f"condition {match.type}={match.status}",
                                "" if allocated else DEVICE_NOT_ALLOCATED))
    return found


ClaimsByName = Mapping[tuple[str, str], model_claims.ResourceClaim]


def _own_claim(pod: Mapping[str, Any], entry: str, claims: ClaimsByName) -> tuple[model_claims.ResourceClaim | None, str]:
    """The claim a pod's `claim:<entry>` names, if it is the pod's own, allocated and reserved for it; else why not."""
    spec, status, meta = pod.get("spec") or {}, pod.get("status") or {}, pod.get("metadata") or {}
    name: str | None = None
    pod_claim = next((c for c in spec.get("resourceClaims") or [] if c.get("name") == entry), None)
    if pod_claim is not None:
        name = pod_claim.get("resourceClaimName")
        if not name and pod_claim.get("resourceClaimTemplateName"):
            name = next((s.get("resourceClaimName") for s in status.get("resourceClaimStatuses") or []
                         if s.get("name") == entry), None)
        if not name:
            return None, CLAIM_NOT_FOUND
    elif entry and (status.get("extendedResourceClaimStatus") or {}).get("resourceClaimName") == entry:
        name = entry  # the pod's claim for extended resources is named as such
    else:
        return None, UNKNOWN_CLAIM
    claim = claims.get((str(meta.get("namespace") or ""), str(name)))
    if claim is None:
        return None, CLAIM_NOT_FOUND
    uid = meta.get("uid")
    reserved = any(r.resource == "pods" and not r.api_group and r.uid == uid for r in claim.status.reserved_for)
    if claim.status.allocation is None or not uid or not reserved:
        return None, CLAIM_NOT_RESERVED
    return claim, ""


def pod_reports(pods: Iterable[Mapping[str, Any]], claims: Iterable[model_claims.ResourceClaim]) -> list[Report]:
    """Every `health: Unhealthy` resource of a `claim:` entry in the raw pods' allocatedResourcesStatus.

    It counts only when `claim:<entry>[/<request>]` names one of the pod's own claims
    (`spec.resourceClaims`, resolved through `status.resourceClaimStatuses` for a
    template, or its extended-resource claim) in its namespace, allocated and reserved
    for the pod (its uid), and the resourceID (driver/pool/device) is one of that
    claim's allocated devices (of that request, when the entry names one).
    """
    by_name: dict[tuple[str, str], model_claims.ResourceClaim] = {
        (c.metadata.namespace or "", c.metadata.name): c for c in claims}
    found: list[Report] = []
    for pod in pods:
        status = pod.get("status") or {}
        if status.get("phase") in ("Succeeded", "Failed"):
            continue
        meta = pod.get("metadata") or {}
        source, uid = f"Pod {meta.get('namespace')}/{meta.get('name')}", str(meta.get("uid") or "")
        for container in [*(status.get("containerStatuses") or []), *(status.get("initContainerStatuses") or [])]:
            for allocated in container.get("allocatedResourcesStatus") or []:
                name = str(allocated.get("name") or "")
                unhealthy = [r for r in allocated.get("resources") or [] if r.get("health") == "Unhealthy"]
                if not name.startswith("claim:") or not unhealthy:
                    continue
                entry, _, request = name[len("claim:"):].partition("/")
                claim, why = _own_claim(pod, entry, by_name)
                devices = _allocated(claim, request) if claim is not None else frozenset()
                for resource in unhealthy:
                    device = parse_resource_id(str(resource.get("resourceID") or ""))
                    ignored = (BAD_RESOURCE_ID if device is None else why
                               or ("" if device in devices else DEVICE_NOT_ALLOCATED))
                    found.append(Report(device, source, uid, f"{name} health Unhealthy", ignored))
    return found


def _sort(policy: DeviceHealthPolicy, reports: Iterable[Report]) -> tuple[dict[DeviceID, str], list[Report]]:
    """The devices the policy's reports mark (device -> first reason), and its reports that do not count."""
    found: dict[DeviceID, str] = {}
    ignored: list[Report] = []
    for report in reports:
        if report.device is not None and not policy.covers(report.device):
            continue
        if report.ignored or report.device is None:
            ignored.append(report)
        else:
            found.setdefault(report.device, report.reason)
    return found, ignored


def claim_signals(policy: DeviceHealthPolicy, claims: Iterable[model_claims.ResourceClaim]) -> dict[DeviceID, str]:
    return _sort(policy, claim_reports(policy, claims))[0]


def pod_signals(policy: DeviceHealthPolicy, reports: Iterable[Report]) -> dict[DeviceID, str]:
    """The devices pod reports (`pod_reports`) mark, when the policy watches them."""
    return _sort(policy, reports)[0] if policy.signals.pod_resource_health else {}


def parse_resource_id(resource_id: str) -> DeviceID | None:
    """`driver/pool/device` (a pool name may itself contain slashes)."""
    driver, _, rest = resource_id.partition("/")
    pool, _, device = rest.rpartition("/")
    return DeviceID(driver, pool, device) if driver and pool and device else None


def selector_signals(policy: DeviceHealthPolicy, index: SliceIndex) -> tuple[dict[DeviceID, str], str | None]:
    """Devices for which every CEL selector is true; and the first CEL error, if any."""
    found: dict[DeviceID, str] = {}
    chosen = policy.signals.device_selectors
    if not chosen:
        return found, None
    owner = f"DeviceHealthPolicy {policy.metadata.name}"
    try:
        selectors.check_present(chosen, owner)
    except errors.AllocationInputError as exc:
        return found, str(exc)
    problem = None
    for s in index.slices:
        for info in index.device_infos(s):
            if not policy.covers(info.id):
                continue
            try:
                if selectors.all_match(info, chosen, owner=owner):
                    found[info.id] = "device selector"
            except errors.AllocationInputError as exc:
                problem = problem or str(exc)
    return found, problem


@dataclasses.dataclass(frozen=True)
class Observed:
    signals: dict[DeviceID, str]  # every device the policy's signals mark unhealthy now -> first reason
    problem: str | None  # the first CEL problem, if any
    ignored: tuple[Report, ...]  # the reports the policy would act on that do not count


def signals_for(
    policy: DeviceHealthPolicy,
    *,
    claims: Iterable[model_claims.ResourceClaim],
    reports: Iterable[Report],
    index: SliceIndex,
) -> Observed:
    """What the policy's signals say now; `reports` are the pods' (`pod_reports`, computed once for all policies)."""
    found, problem = selector_signals(policy, index)
    ignored: list[Report] = []
    sources = [claim_reports(policy, claims)]
    if policy.signals.pod_resource_health:
        sources.append(list(reports))
    for source in sources:
        counted, dropped = _sort(policy, source)
        ignored += dropped
        for device, reason in counted.items():
            found.setdefault(device, reason)
    return Observed(found, problem, tuple(ignored))
