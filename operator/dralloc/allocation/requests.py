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
    # The name the request gave its class by (what `device_class` was looked up with).
    class_name: str = ""
    # Derived once per plan (`__post_init__`), read per device by the search.
    name: str = dataclasses.field(init=False, repr=False, compare=False)
    # Who a selector error names (`selectors.evaluate`): errors name the claim and request that met
    # the class, then the class (upstream says only "class X: selector #i"; a user with many claims
    # needs to know which one).
    class_owner: str = dataclasses.field(init=False, repr=False, compare=False)
    request_owner: str = dataclasses.field(init=False, repr=False, compare=False)
    # The selectors' CEL expressions; None for a class with a selector without one (the search's
    # check says so when it meets a device, `selectors.all_match`).
    class_expressions: tuple[str, ...] | None = dataclasses.field(init=False, repr=False, compare=False)
    request_expressions: tuple[str, ...] | None = dataclasses.field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.name = self.base_name if self.sub_name is None else f"{self.base_name}/{self.sub_name}"
        self.class_owner = f"claim {self.claim_ref}, request {self.name}: class {self.device_class.metadata.name}"
        self.request_owner = f"claim {self.claim_ref}, request {self.name}"
        self.class_expressions = selectors.expressions(self.device_class.spec.selectors)
        self.request_expressions = selectors.expressions(self.selectors)

    def fresh(self) -> RequestPlan:
        """A copy with nothing memoized by a search (`selectable`) and no `All` devices yet."""
        plan = RequestPlan.__new__(RequestPlan)
        plan.__dict__.update(self.__dict__)
        plan.selectable = {}
        plan.all_devices = []
        return plan


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
        class_name=source.device_class_name,
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
    global _LAST
    last = _LAST
    if last is not None and _fits(last, claim_list, device_classes, features):
        return [ClaimPlan(old.claim, old.ref, [[plan.fresh() for plan in alternatives] for alternatives in old.requests],
                          _constraints(old.claim, old.ref, features))
                for old in last[2]]
    plans: list[ClaimPlan] = []
    has_all = False
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
                        has_all = True
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
                    has_all = True
                    plan.all_devices = all_devices(plan)
                    plan.count = len(plan.all_devices)
                minimum += plan.count
                requests.append([plan])
        if minimum > RESULTS_MAX:
            raise errors.LimitExceededError(
                f"claim {ref}: number of requested devices {minimum} exceeds the claim limit of {RESULTS_MAX}"
            )
        plans.append(ClaimPlan(claim, ref, requests, _constraints(claim, ref, features)))
    if not has_all:
        # What the next call with these claims plans the same way (`_fits`); not with an `All`
        # request, whose devices depend on the node.
        _LAST = (tuple(claim_list), features, tuple(plans))
    return plans


# The claims planned last, the features, and their plans as `plan_claims` made them without error:
# the next call with the same claim objects (placement tries an item's claims on node after node)
# copies them (`RequestPlan.fresh`, which leaves out what a search memoized). They stay right while
# the features are equal and the device classes they name are the same objects (a plan depends on
# nothing else but its claim, which is immutable; constraints are built again each time, as they
# keep a search's state). Only the last call's claims are kept: plans held longer would outlive
# the young generations of the garbage collector.
_LAST: tuple[tuple[claims.ResourceClaim, ...], Features, tuple[ClaimPlan, ...]] | None = None


def _fits(last: tuple[tuple[claims.ResourceClaim, ...], Features, tuple[ClaimPlan, ...]],
          claim_list: list[claims.ResourceClaim], device_classes: Mapping[str, classes.DeviceClass],
          features: Features) -> bool:
    claimed, planned_with, plans = last
    if len(claimed) != len(claim_list):
        return False
    for mine, theirs in zip(claimed, claim_list, strict=True):
        if mine is not theirs:
            return False
    if planned_with is not features and planned_with != features:
        return False
    for claim_plan in plans:
        for alternatives in claim_plan.requests:
            for plan in alternatives:
                if device_classes.get(plan.class_name) is not plan.device_class:
                    return False
    return True


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
