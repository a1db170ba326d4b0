"""Device health: signals -> per-device state with damping -> which devices a policy taints.

A `DeviceHealthPolicy` (dralloc.io/v1alpha1, cluster-scoped) names the signals
that mark a device unhealthy and the taint to put on it:

- `signals.claimConditions`: an entry of a ResourceClaim's `status.devices[]`
  whose `conditions` contain one with this type and status (e.g. Ready=False)
  marks that device;
- `signals.podResourceHealth: true`: a pod's
  `status.containerStatuses[].allocatedResourcesStatus[].resources[]` entry with
  `health: Unhealthy` marks the device of its `resourceID` (driver/pool/device);
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


def claim_signals(policy: DeviceHealthPolicy, claims: Iterable[model_claims.ResourceClaim]) -> dict[DeviceID, str]:
    matches = policy.signals.claim_conditions
    found: dict[DeviceID, str] = {}
    if not matches:
        return found
    for claim in claims:
        for entry in claim.status.devices:
            device = DeviceID(entry.driver, entry.pool, entry.device)
            if not policy.covers(device):
                continue
            for condition in entry.conditions:
                for match in matches:
                    if condition.get("type") == match.type and condition.get("status") == match.status:
                        found.setdefault(device, f"ResourceClaim {claim.metadata.namespace}/{claim.metadata.name}: "
                                                 f"condition {match.type}={match.status}")
    return found


def pod_signals(policy: DeviceHealthPolicy, pods: Iterable[Mapping[str, Any]]) -> dict[DeviceID, str]:
    """Raw pods: `allocatedResourcesStatus` is read straight from the API JSON."""
    found: dict[DeviceID, str] = {}
    if not policy.signals.pod_resource_health:
        return found
    for pod in pods:
        status = pod.get("status") or {}
        if status.get("phase") in ("Succeeded", "Failed"):
            continue
        meta = pod.get("metadata") or {}
        for container in [*(status.get("containerStatuses") or []), *(status.get("initContainerStatuses") or [])]:
            for allocated in container.get("allocatedResourcesStatus") or []:
                if not str(allocated.get("name") or "").startswith("claim:"):
                    continue
                for resource in allocated.get("resources") or []:
                    device = parse_resource_id(str(resource.get("resourceID") or ""))
                    if device is None or resource.get("health") != "Unhealthy" or not policy.covers(device):
                        continue
                    found.setdefault(device, f"Pod {meta.get('namespace')}/{meta.get('name')}: "
                                             f"{allocated.get('name')} health Unhealthy")
    return found


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


def signals_for(
    policy: DeviceHealthPolicy,
    *,
    claims: Iterable[model_claims.ResourceClaim],
    pods: Iterable[Mapping[str, Any]],
    index: SliceIndex,
) -> tuple[dict[DeviceID, str], str | None]:
    """Every device the policy's signals mark unhealthy now (device -> first reason); a CEL problem."""
    found, problem = selector_signals(policy, index)
    for more in (claim_signals(policy, claims), pod_signals(policy, pods)):
        for device, reason in more.items():
            found.setdefault(device, reason)
    return found, problem
