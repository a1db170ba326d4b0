"""Claims checked and prepared for the search: one plan per request or subrequest.

This is where invalid input is caught, before any device is tried, in
upstream's order (claim by claim; per claim its requests, then the result
limit, then its constraints): subrequests with DRAPrioritizedList off, admin
access or capacity requests with their gate off, selectors without CEL,
missing or unknown classes, unknown allocation modes, more than 32 results,
unknown constraint types. "All" requests learn their device set here, which
needs the node's pools: incomplete or invalid pools are errors for them.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Callable, Mapping

from dralloc.allocation import constraints as constraints_
from dralloc.allocation import errors, selectors
from dralloc.allocation.features import Features
from dralloc.allocation.pools import DeviceInfo, Pool
from dralloc.model import claims, classes, taints
from dralloc.model.quantities import Quantity

RESULTS_MAX = 32


@dataclasses.dataclass
class RequestPlan:
    """A request without subrequests, or one subrequest of a firstAvailable request."""

    claim_ref: str
    index: int
    base_name: str
    sub_name: str | None
    device_class: classes.DeviceClass
    selectors: tuple[classes.DeviceSelector, ...]
    all_mode: bool
    count: int
    admin_access: bool
    tolerations: tuple[taints.DeviceToleration, ...]
    capacity: Mapping[str, Quantity] | None
    # DRADerivedAttributes: attribute name -> CEL expression, read by claim constraints.
    derived: Mapping[str, str] = dataclasses.field(default_factory=dict)
    all_devices: list[tuple[Pool, DeviceInfo]] = dataclasses.field(default_factory=list)
    # position in the node's candidate order -> passes selectors etc. (filled lazily by the search)
    selectable: dict[int, bool] = dataclasses.field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.base_name if self.sub_name is None else f"{self.base_name}/{self.sub_name}"


@dataclasses.dataclass
class ClaimPlan:
    claim: claims.ResourceClaim
    ref: str
    # One list per request: a single plan, or one plan per subrequest in priority order.
    requests: list[list[RequestPlan]]
    constraints: list[constraints_.Constraint]


def _plan_one(
    *,
    claim: claims.ResourceClaim,
    ref: str,
    index: int,
    base_name: str,
    sub: claims.DeviceSubRequest | None,
    exact: claims.ExactDeviceRequest | None,
    device_classes: Mapping[str, classes.DeviceClass],
    features: Features,
) -> RequestPlan:
    source: claims.DeviceSubRequest | claims.ExactDeviceRequest
    if sub is not None:
        source, label, display = sub, f"subrequest {sub.name}", f"{base_name}/{sub.name}"
        admin = None
    else:
        assert exact is not None
        source, label, display = exact, f"request {base_name}", base_name
        admin = exact.admin_access
    owner = f"claim {ref}, request {display}"
    derived: dict[str, str] = {}
    if source.derived_attributes and features.at_least_1_37:
        # 1.37 refuses rather than ignores them (a scheduler behind its API server's gates).
        if not features.derived_attributes:
            raise errors.FeatureDisabledError(
                f"claim {ref}, request {sub.name if sub is not None else base_name}: "
                f"cannot handle request with derived attributes, the feature is disabled")
        # Compiled and computed only when a constraint looks at a device (as upstream: an
        # expression that does not compile fails the claim only if some device reaches it).
        for attribute in source.derived_attributes:
            derived[str(attribute.get("name", ""))] = str(attribute.get("expression", ""))
    selectors.check_present(source.selectors, owner)
    if admin is not None and not features.admin_access:
        raise errors.FeatureDisabledError(f"{owner}: admin access is requested, but the feature is disabled")
    capacity_requests = source.capacity.requests if source.capacity is not None else None
    if capacity_requests and not features.consumable_capacity:
        if not features.beyond_stable_channel:
            # Upstream's stable variant has no notion of capacity requests: it reads the
            # request as if the field were absent (kube-apiserver drops it on write while
            # the gate is off, so only objects stored before that carry it).
            capacity_requests = None
        else:
            raise errors.FeatureDisabledError(
                f"claim {ref}, {label}: has capacity requests, but the DRAConsumableCapacity feature is disabled"
            )
    if not source.device_class_name:
        raise errors.UnsupportedFieldError(f"{owner}: missing device class name (unsupported request type?)")
    device_class = device_classes.get(source.device_class_name)
    if device_class is None:
        close = difflib.get_close_matches(source.device_class_name, sorted(device_classes), n=1)
        raise errors.UnknownClassError(
            f"{owner}: could not retrieve device class {source.device_class_name}: "
            f"deviceclass.resource.k8s.io \"{source.device_class_name}\" not found",
            hint=f" (did you mean {close[0]!r}?)" if close else "",
        )
    mode = source.allocation_mode or claims.ALLOCATION_MODE_EXACT_COUNT
    if mode == claims.ALLOCATION_MODE_EXACT_COUNT:
        count = 1 if source.count is None else source.count
        if count > 2**63 - 1:
            raise errors.LimitExceededError(f"{owner}: exact count {count} is too large")
    elif mode == claims.ALLOCATION_MODE_ALL:
        count = 0
    else:
        raise errors.UnsupportedFieldError(f"{owner}: unsupported count mode {mode}")
    return RequestPlan(
        claim_ref=ref,
        index=index,
        base_name=base_name,
        sub_name=sub.name if sub is not None else None,
        device_class=device_class,
        selectors=tuple(source.selectors),
        all_mode=mode == claims.ALLOCATION_MODE_ALL,
        count=count,
        admin_access=bool(admin),
        tolerations=tuple(source.tolerations),
        capacity=capacity_requests,
        derived=derived,
    )


AllDevices = Callable[[RequestPlan], list[tuple[Pool, DeviceInfo]]]

def plan_claims(
    claim_list: list[claims.ResourceClaim],
    *,
    device_classes: Mapping[str, classes.DeviceClass],
    features: Features,
    all_devices: AllDevices,
) -> list[ClaimPlan]:
    """Validate the claims and build their plans. `all_devices(plan)` computes an All request's set."""
    plans: list[ClaimPlan] = []
    for claim in claim_list:
        ref = claim.ref()
        requests: list[list[RequestPlan]] = []
        minimum = 0
        for index, request in enumerate(claim.spec.devices.requests):
            if request.first_available:
                if not features.prioritized_list:
                    raise errors.FeatureDisabledError(
                        f"claim {ref}, request {request.name}: has subrequests, "
                        f"but the DRAPrioritizedList feature is disabled"
                    )
                alternatives = []
                for sub in request.first_available:
                    plan = _plan_one(claim=claim, ref=ref, index=index, base_name=request.name, sub=sub,
                                     exact=None, device_classes=device_classes, features=features)
                    if plan.all_mode:
                        plan.all_devices = all_devices(plan)
                        plan.count = len(plan.all_devices)
                    alternatives.append(plan)
                minimum += min(p.count for p in alternatives)
                requests.append(alternatives)
            else:
                if request.exactly is None:  # neither exactly nor firstAvailable: a request type we do not know
                    raise errors.UnsupportedFieldError(
                        f"claim {ref}, request {request.name}: missing device class name (unsupported request type?)")
                plan = _plan_one(claim=claim, ref=ref, index=index, base_name=request.name, sub=None,
                                 exact=request.exactly, device_classes=device_classes, features=features)
                if plan.all_mode:
                    plan.all_devices = all_devices(plan)
                    plan.count = len(plan.all_devices)
                minimum += plan.count
                requests.append([plan])
        if minimum > RESULTS_MAX:
            raise errors.LimitExceededError(
                f"claim {ref}: number of requested devices {minimum} exceeds the claim limit of {RESULTS_MAX}"
            )
        plans.append(ClaimPlan(claim, ref, requests, _constraints(claim, ref, features)))
    return plans


def _constraints(claim: claims.ResourceClaim, ref: str, features: Features) -> list[constraints_.Constraint]:
    result: list[constraints_.Constraint] = []
    for index, constraint in enumerate(claim.spec.devices.constraints):
        owner = f"claim {ref}, constraint #{index}"
        if constraint.match_attribute:
            result.append(constraints_.MatchAttribute(
                constraint.requests, constraint.match_attribute,
                list_types=features.list_type_attributes, owner=owner, strict=features.release == "1.38"))
        elif constraint.distinct_attribute and (features.consumable_capacity or features.beyond_stable_channel):
            result.append(constraints_.DistinctAttribute(
                constraint.requests, constraint.distinct_attribute,
                list_types=features.list_type_attributes, owner=owner, strict=features.release == "1.38"))
        else:
            raise errors.UnsupportedFieldError(f"{owner}: empty constraint (unsupported constraint type?)")
    return result
