"""Build the AllocationResult the API stores, from the search's picks.

- `devices.results`: one entry per pick, in pick order, with `adminAccess`
  only when true, the request's tolerations, binding conditions (when that
  feature is on), and `shareID` + `consumedCapacity` for shared devices.
- `devices.config`: class configs first (each class once, in request order,
  later requests of the same class appended to its `requests`), then claim
  configs in claim order; a claim config naming requests is copied once per
  request it names (1.36, SPEC.md surprise 4) or once (1.37); in 1.37 an entry
  that covers every request of the claim has no `requests` ("empty means all").
- `nodeSelector`: a device bound to one node pins the node by name; otherwise
  the one-term selectors of the devices are merged; none when available everywhere.
"""

from __future__ import annotations

import functools
from typing import Any

from dralloc.allocation import errors
from dralloc.allocation.features import Features
from dralloc.allocation.pools import NodeView
from dralloc.allocation.requests import ClaimPlan
from dralloc.allocation.search import Pick, ShareIdFactory
from dralloc.model import claims, nodes

# Results are built directly, as pydantic's `model_construct` builds a model (no validation: every value
# comes from validated objects and is of its field's final type), for the common entry and for the
# allocation around it: a placement loop builds one per claim, and validating them again was most
# of `build`. Every field is set, in declaration order, with the defaults validation gives, and the
# fields set are what validation would record: one set object per shape, shared (pydantic copies
# it before changing it, `model_copy`), which spares the garbage collector a set per result.
# `_DIRECT` is False, and results are validated, if these models ever differ from what this expects.
_new = object.__new__
_set = object.__setattr__
_SET_DEVICE = {"request", "driver", "pool", "device"}
_SET_BINDING = {*_SET_DEVICE, "binding_conditions", "binding_failure_conditions"}
_SET_DEVICES = {"results", "config"}
_SET_ALLOCATION = {"devices", "node_selector"}


def _direct(model: type[Any], order: tuple[str, ...], defaults: dict[str, Any]) -> bool:
    """Whether `model` has these fields in this order, the others required, these defaults, extra
    fields allowed and nothing run after validation (what the direct builders below assume)."""
    fields = model.model_fields
    return (tuple(fields) == order and model.model_config.get("extra") == "allow"
            and model.__pydantic_post_init__ is None and not model.__private_attributes__
            and all(fields[name].is_required() == (name not in defaults) for name in order)
            and all(fields[name].get_default(call_default_factory=True) == value for name, value in defaults.items()))


_DIRECT = (
    _direct(claims.DeviceRequestAllocationResult,
            ("request", "driver", "pool", "device", "admin_access", "tolerations", "binding_conditions",
             "binding_failure_conditions", "share_id", "consumed_capacity", "skip_node_operations"),
            {"admin_access": None, "tolerations": (), "binding_conditions": (), "binding_failure_conditions": (),
             "share_id": None, "consumed_capacity": {}, "skip_node_operations": ()})
    and _direct(claims.DeviceAllocationResult, ("results", "config"), {"results": (), "config": ()})
    and _direct(claims.AllocationResult, ("devices", "node_selector", "allocation_timestamp"),
                {"devices": claims.DeviceAllocationResult(), "node_selector": None, "allocation_timestamp": None})
)


def _device_result(request: str, driver: str, pool: str, device: str, binding: tuple[str, ...] | None,
                   binding_failure: tuple[str, ...]) -> claims.DeviceRequestAllocationResult:
    """DeviceRequestAllocationResult(request=..., driver=..., pool=..., device=...), with the binding
    conditions set when `binding` is not None."""
    if not _DIRECT:
        if binding is None:
            return claims.DeviceRequestAllocationResult(request=request, driver=driver, pool=pool, device=device)
        return claims.DeviceRequestAllocationResult(request=request, driver=driver, pool=pool, device=device,
                                                    binding_conditions=binding,
                                                    binding_failure_conditions=binding_failure)
    built = _new(claims.DeviceRequestAllocationResult)
    _set(built, "__dict__", {
        "request": request, "driver": driver, "pool": pool, "device": device, "admin_access": None,
        "tolerations": (), "binding_conditions": () if binding is None else binding,
        "binding_failure_conditions": () if binding is None else binding_failure, "share_id": None,
        "consumed_capacity": {}, "skip_node_operations": ()})
    _set(built, "__pydantic_fields_set__", _SET_DEVICE if binding is None else _SET_BINDING)
    _set(built, "__pydantic_extra__", {})
    _set(built, "__pydantic_private__", None)
    return built


def _allocation(results: tuple[claims.DeviceRequestAllocationResult, ...],
                config: tuple[claims.DeviceAllocationConfiguration, ...],
                selector: nodes.NodeSelector | None) -> claims.AllocationResult:
    """AllocationResult(devices=DeviceAllocationResult(results=..., config=...), node_selector=...)."""
    if not _DIRECT:
        return claims.AllocationResult(devices=claims.DeviceAllocationResult(results=results, config=config),
                                       node_selector=selector)
    devices = _new(claims.DeviceAllocationResult)
    _set(devices, "__dict__", {"results": results, "config": config})
    _set(devices, "__pydantic_fields_set__", _SET_DEVICES)
    _set(devices, "__pydantic_extra__", {})
    _set(devices, "__pydantic_private__", None)
    built = _new(claims.AllocationResult)
    _set(built, "__dict__", {"devices": devices, "node_selector": selector, "allocation_timestamp": None})
    _set(built, "__pydantic_fields_set__", _SET_ALLOCATION)
    _set(built, "__pydantic_extra__", {})
    _set(built, "__pydantic_private__", None)
    return built


def _result_entry(
    pick: Pick, features: Features, share_id: ShareIdFactory, claim_index: int
) -> claims.DeviceRequestAllocationResult:
    info, request = pick.info, pick.request
    device_id = info.id
    if not (request.admin_access or request.tolerations or pick.shared or info.slice.spec.skip_node_operations):
        # The common case, the same fields set as below.
        if features.binding_conditions:
            return _device_result(request.name, device_id.driver, device_id.pool, device_id.device,
                                  info.binding_conditions, info.binding_failure_conditions)
        return _device_result(request.name, device_id.driver, device_id.pool, device_id.device, None, ())
    fields: dict[str, object] = {
        "request": request.name,
        "driver": device_id.driver,
        "pool": device_id.pool,
        "device": device_id.device,
    }
    if request.admin_access:
        fields["admin_access"] = True
    if request.tolerations:
        fields["tolerations"] = request.tolerations
    if features.binding_conditions:
        fields["binding_conditions"] = info.binding_conditions
        fields["binding_failure_conditions"] = info.binding_failure_conditions
    if pick.shared:
        fields["share_id"] = share_id(claim_index, request.name, device_id, pick.share_index)
        fields["consumed_capacity"] = dict(pick.amounts or {})
    if info.slice.spec.skip_node_operations and features.at_least_1_37 and features.code == "experimental":
        fields["skip_node_operations"] = info.slice.spec.skip_node_operations
    return claims.DeviceRequestAllocationResult(**fields)


def _configs(plan: ClaimPlan, selected: dict[int, int], features: Features) -> list[claims.DeviceAllocationConfiguration]:
    if not plan.claim.spec.devices.config:
        for request_index, alternatives in enumerate(plan.requests):
            chosen = alternatives[selected.get(request_index, 0)] if len(alternatives) > 1 else alternatives[0]
            if chosen.device_class.spec.config:
                break
        else:
            return []  # neither the classes nor the claim configure anything
    configs: list[claims.DeviceAllocationConfiguration] = []
    class_ranges: dict[str, tuple[int, int]] = {}
    class_requests: list[list[str]] = []
    for request_index, alternatives in enumerate(plan.requests):
        chosen = alternatives[selected.get(request_index, 0)]
        device_class = chosen.device_class
        name = device_class.metadata.name
        if name in class_ranges:
            start, end = class_ranges[name]
            for i in range(start, end):
                class_requests[i].append(chosen.name)
            continue
        start = len(configs)
        for class_config in device_class.spec.config:
            configs.append(claims.DeviceAllocationConfiguration(source="FromClass", opaque=class_config.opaque))
            class_requests.append([chosen.name])
        class_ranges[name] = (start, len(configs))
    configs = [c.model_copy(update={"requests": tuple(class_requests[i])}) for i, c in enumerate(configs)]
    spec_requests = plan.claim.spec.devices.requests
    for config in plan.claim.spec.devices.config:
        entry = claims.DeviceAllocationConfiguration(source="FromClaim", requests=config.requests, opaque=config.opaque)
        if not config.requests:
            configs.append(entry)
            continue
        for request_index, request in enumerate(spec_requests):
            if request.name in config.requests:
                configs.append(entry)
                if features.at_least_1_37:
                    break
                continue
            if request.first_available:
                sub = request.first_available[selected.get(request_index, 0)]
                if f"{request.name}/{sub.name}" in config.requests:
                    configs.append(entry)
                    if features.at_least_1_37:
                        break
    if features.at_least_1_37:
        # 1.37: an entry that covers every request of the claim gets no list ("empty means all").
        covered = [{request.name} | ({f"{request.name}/{request.first_available[selected.get(i, 0)].name}"}
                                     if request.first_available else set())
                   for i, request in enumerate(spec_requests)]
        configs = [c.model_copy(update={"requests": ()})
                   if c.requests and all(names & set(c.requests) for names in covered) else c
                   for c in configs]
    return configs


def _add_unique(into: list[nodes.NodeSelectorRequirement], more: tuple[nodes.NodeSelectorRequirement, ...]) -> None:
    for requirement in more:
        if not any(
            r.key == requirement.key and r.operator == requirement.operator
            and set(r.values) == set(requirement.values)
            for r in into
        ):
            into.append(requirement)


@functools.lru_cache(maxsize=1 << 15)
def _pinned(node_name: str) -> nodes.NodeSelector:
    """The selector of an allocation bound to one node; immutable, so one instance per node."""
    return nodes.NodeSelector(node_selector_terms=(nodes.NodeSelectorTerm(match_fields=(
        nodes.NodeSelectorRequirement(key="metadata.name", operator="In", values=(node_name,)),
    )),))


def node_selector(picks: list[Pick], node: NodeView, features: Features) -> nodes.NodeSelector | None:
    fields: list[nodes.NodeSelectorRequirement] = []
    expressions: list[nodes.NodeSelectorRequirement] = []
    for pick in picks:
        info = pick.info
        node_name, selector = info.node_fields()
        if node_name or (info.binds_to_node and features.binding_conditions):
            return _pinned(node.name)
        if selector is None or not selector.node_selector_terms:
            continue
        if len(selector.node_selector_terms) > 1:
            raise errors.InvalidSliceError(
                f"ResourceSlice {info.slice.metadata.name}: unsupported nodeSelector with "
                f"{len(selector.node_selector_terms)} terms"
            )
        term = selector.node_selector_terms[0]
        _add_unique(fields, term.match_fields)
        _add_unique(expressions, term.match_expressions)
    if not fields and not expressions:
        return None
    return nodes.NodeSelector(node_selector_terms=(
        nodes.NodeSelectorTerm(match_expressions=tuple(expressions), match_fields=tuple(fields)),
    ))


def build(
    plans: list[ClaimPlan],
    picks: list[list[Pick]],
    selected: dict[tuple[int, int], int],
    *,
    node: NodeView,
    features: Features,
    share_id: ShareIdFactory,
) -> tuple[claims.AllocationResult, ...]:
    out: list[claims.AllocationResult] = []
    for claim_index, plan in enumerate(plans):
        chosen = {ri: si for (ci, ri), si in selected.items() if ci == claim_index} if selected else {}
        mine = picks[claim_index]
        configs = _configs(plan, chosen, features)
        out.append(_allocation(tuple([_result_entry(p, features, share_id, claim_index) for p in mine]),
                               tuple(configs) if configs else (), node_selector(mine, node, features)))
    return tuple(out)
