"""The ResourceSlice rules beyond decoding: pool, node selection, devices and counters.

Upstream validates the decoded Go value, so what is missing is its zero value: a slice
without a pool has the pool name "" (required) and a resourceSliceCount of 0 (not
greater than zero). Limits are the 1.37 constants: 128 devices per slice (64 when any
device has taints or consumes counters), 32 attributes and capacities together per
device, strings and versions of 64 bytes, 8 counter sets of 32 counters, 2 counter
consumptions and 16 taints per device.
"""

from __future__ import annotations

import re
from typing import Any

from dralloc.sandbox import drafields, errors, names, quantities

Obj = dict[str, Any]
Causes = list[tuple[str, str]]

MAX_DEVICES = 128
MAX_DEVICES_WITH_TAINTS_OR_COUNTERS = 64
MAX_ATTRIBUTES_AND_CAPACITIES = 32
MAX_COUNTER_SETS = 8
MAX_COUNTERS = 32
MAX_COUNTER_CONSUMPTIONS = 2
MAX_STRING_ATTRIBUTE = 64
MAX_POOL_NAME = 253
MAX_COMPATIBILITY_GROUPS = 2
MAX_VALID_VALUES = 10
SKIP_NODE_OPERATIONS = ("*", "NodePrepareResources", "NodeUnprepareResources")
NODE_ALLOCATABLE_FEATURE = "DRANodeAllocatableResources"  # what a Node declares to take such devices

_SEMVER_138 = re.compile(r"^(0|[1-9]\d{0,17})\.(0|[1-9]\d{0,17})\.(0|[1-9]\d{0,17})"
                         r"(-(0|[1-9]\d{0,17}|\d*[a-zA-Z-][0-9a-zA-Z-]*)(\.(0|[1-9]\d{0,17}|\d*[a-zA-Z-][0-9a-zA-Z-]*))*)?"
                         r"(\+[0-9a-zA-Z-]+(\.[0-9a-zA-Z-]+)*)?$")  # 1.38: numbers of at most 18 digits
_SEMVER = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$")
_ATTRIBUTE_KINDS = ("int", "bool", "string", "version", "ints", "bools", "strings", "versions")
_ATTRIBUTE_LIST = ", ".join(f"`{k}`" for k in _ATTRIBUTE_KINDS)
_NODE_SELECTION = ("nodeName", "nodeSelector", "allNodes", "perDeviceNodeSelection")
_NODE_SELECTION_LIST = ", ".join(f"`{f}`" for f in _NODE_SELECTION)


def _pool(pool: Obj, causes: Causes) -> None:
    name = pool.get("name", "")
    if not name:
        causes.append(("spec.pool.name", "Required value"))
    else:
        if len(name) > MAX_POOL_NAME:
            causes.append(("spec.pool.name", f"Too long: may not be more than {MAX_POOL_NAME} bytes"))
        for segment in name.split("/"):
            drafields.invalid("spec.pool.name", segment, names.dns1123_subdomain(segment), causes)
    if pool.get("generation", 0) < 0:
        causes.append(("spec.pool.generation", f"Invalid value: {pool['generation']}: must be greater than or equal "
                                               "to zero"))
    if pool.get("resourceSliceCount", 0) <= 0:
        causes.append(("spec.pool.resourceSliceCount", f"Invalid value: {pool.get('resourceSliceCount', 0)}: must be "
                                                       "greater than zero"))


def validate(obj: Obj, old: Obj | None = None) -> Causes:
    """Causes for one decoded ResourceSlice (empty when it is fine).

    Upstream's hand-written rules come first, then those its declarative validation adds
    (the 1.37 fields' formats, sizes, enums and uniqueness): `declared` collects those."""
    spec = obj.get("spec") or {}
    old_devices = {d.get("name"): d for d in ((old or {}).get("spec") or {}).get("devices") or []}
    causes: Causes = []
    declared: Causes = []
    drafields.driver_name(spec.get("driver", ""), "spec.driver", causes)
    _pool(spec.get("pool") or {}, causes)
    selected = [f for f in _NODE_SELECTION if spec.get(f)]
    if not selected:
        causes.append(("spec", f"Required value: exactly one of {_NODE_SELECTION_LIST} is required"))
    elif len(selected) > 1:
        shown = "{" + ", ".join(f"`{f}`" for f in selected) + "}"
        causes.append(("spec", f'Invalid value: "{shown}": exactly one of {_NODE_SELECTION_LIST} is required, but '
                               "multiple fields are set"))
    if spec.get("nodeName"):
        drafields.invalid("spec.nodeName", spec["nodeName"], names.dns1123_subdomain(spec["nodeName"]), causes)
    devices = spec.get("devices") or []
    counters = spec.get("sharedCounters") or []
    if devices and counters:
        causes.append(("spec", 'Invalid value: "": only one of `sharedCounters` or `devices` is allowed'))
    heavy = any(d.get("taints") or d.get("consumesCounters") for d in devices)
    drafields.too_many(devices, MAX_DEVICES_WITH_TAINTS_OR_COUNTERS if heavy else MAX_DEVICES, "spec.devices", causes)
    drafields.too_many(counters, MAX_COUNTER_SETS, "spec.sharedCounters", causes)
    for i, cs in enumerate(counters):
        where = f"spec.sharedCounters[{i}]"
        if not cs.get("name"):
            causes.append((f"{where}.name", "Required value"))
        else:
            drafields.invalid(f"{where}.name", cs["name"], names.dns1123_label(cs["name"]), causes)
        if not cs.get("counters"):
            causes.append((f"{where}.counters", "Required value"))
        drafields.too_many(cs.get("counters"), MAX_COUNTERS, f"{where}.counters", causes)
    seen: set[str] = set()
    old_spec = (old or {}).get("spec") or {}
    unchanged = old is not None and devices == (old_spec.get("devices") or []) and \
        spec.get("perDeviceNodeSelection") == old_spec.get("perDeviceNodeSelection")
    for i, dev in enumerate([] if unchanged and drafields.since_138() else devices):  # 1.38 ratchets the list
        _device(dev, f"spec.devices[{i}]", seen, causes, declared, old_devices.get(dev.get("name")))
    if "partitionTypeAttribute" in spec:
        _partition_type(spec, causes, declared)
    skip_node_operations(spec.get("skipNodeOperations"), "spec.skipNodeOperations", causes, declared)
    return causes + declared


def skip_node_operations(operations: Any, path: str, causes: Causes, declared: Causes) -> None:
    """A set of "*", "NodePrepareResources", "NodeUnprepareResources"; preparing is only
    skipped together with unpreparing (or "*"). Slices and allocation results alike."""
    operations = operations or []
    if "NodePrepareResources" in operations and not {"NodeUnprepareResources", "*"} & set(operations):
        causes.append((path, f"Invalid value: {errors.go_json(operations)}: NodePrepareResources cannot be skipped "
                             "unless NodeUnprepareResources is also skipped"))
    _unique(operations, path, declared)
    supported = ", ".join(f'"{v}"' for v in SKIP_NODE_OPERATIONS)
    for i, operation in enumerate(operations):
        if operation not in SKIP_NODE_OPERATIONS:
            declared.append((f"{path}[{i}]", f"Unsupported value: {errors.go_value(operation)}: supported values: "
                                             f"{supported}"))


def _unique(items: list[Any], path: str, declared: Causes) -> None:
    for i, item in enumerate(items):
        if item in items[:i]:
            declared.append((f"{path}[{i}]", f"Duplicate value: {errors.go_value(item)}"))


def _partition_type(spec: Obj, causes: Causes, declared: Causes) -> None:
    """The attribute naming each partitionable device's type: a fully qualified name, only in
    a slice whose devices consume counters, carried (as a string) by each device that does.
    Upstream does not compare the counters that devices of one type consume."""
    name = spec.get("partitionTypeAttribute", "")
    devices = spec.get("devices") or []
    if not any(d.get("consumesCounters") for d in devices):
        causes.append(("spec.partitionTypeAttribute", f"Invalid value: {errors.go_value(name)}: may only be set on "
                                                      "a slice which declares devices that consume counters"))
        return
    format_errors: Causes = []
    drafields.fully_qualified_name(name, "spec.partitionTypeAttribute", format_errors)
    declared.extend(format_errors)
    if format_errors:
        return  # no device can carry a malformed name
    bare = name.removeprefix(f"{spec.get('driver', '')}/")
    for i, dev in enumerate(devices):
        if not dev.get("consumesCounters"):
            continue
        attributes = dev.get("attributes") or {}
        where = f"spec.devices[{i}].attributes[{name}]"
        attribute = attributes.get(name, attributes.get(bare) if bare != name else None)
        if attribute is None:
            causes.append((where, "Required value: device consumes counters and `partitionTypeAttribute` names this "
                                  "attribute, so it must be set"))
        elif "string" not in attribute:
            causes.append((where, f"Invalid value: {_attribute_struct(attribute)}: must be a string value because "
                                  "`partitionTypeAttribute` names this attribute"))


def _attribute_struct(attribute: Obj) -> str:
    """A DeviceAttribute as upstream prints it: its internal Go struct, fields without JSON tags."""
    fields = {"IntValue": "int", "BoolValue": "bool", "StringValue": "string", "VersionValue": "version",
              "IntValues": "ints", "BoolValues": "bools", "StringValues": "strings", "VersionValues": "versions"}
    return errors.go_json({go: attribute.get(key) for go, key in fields.items()})


def _device(dev: Obj, where: str, seen: set[str], causes: Causes, declared: Causes, old: Obj | None) -> None:
    name = dev.get("name", "")
    drafields.invalid(f"{where}.name", name, names.dns1123_label(name), causes)
    if name in seen:
        causes.append((where, f"Duplicate value: {errors.go_value(name)}"))
    seen.add(name)
    attrs, caps = dev.get("attributes") or {}, dev.get("capacity") or {}
    if len(attrs) + len(caps) > MAX_ATTRIBUTES_AND_CAPACITIES:
        causes.append((where, f"Invalid value: {len(attrs) + len(caps)}: the total number of attributes and "
                              f"capacities must not exceed {MAX_ATTRIBUTES_AND_CAPACITIES}"))
    for key, value in attrs.items():
        drafields.qualified_name(key, f"{where}.attributes", causes)
        _attribute(value, f"{where}.attributes[{key}]", causes, declared)
    for key in caps:
        drafields.qualified_name(key, f"{where}.capacity", causes)
    if old is None or old.get("capacity") != dev.get("capacity"):  # only new or changed capacity is checked
        for key, capacity in caps.items():
            _request_policy(capacity, dev.get("allowMultipleAllocations") is True, f"{where}.capacity[{key}]",
                            causes)
    drafields.taints(dev.get("taints"), f"{where}.taints", causes)
    consumptions = dev.get("consumesCounters") or []
    drafields.too_many(consumptions, MAX_COUNTER_CONSUMPTIONS, f"{where}.consumesCounters", causes)
    for j, consumption in enumerate(consumptions):
        for field in ("counterSet", "counters"):
            if not consumption.get(field):
                causes.append((f"{where}.consumesCounters[{j}].{field}", "Required value"))
        _compatibility_groups(consumption.get("compatibilityGroups") or [],
                              f"{where}.consumesCounters[{j}].compatibilityGroups", declared)
    node_allocatable(dev.get("nodeAllocatableResources") or {}, caps, f"{where}.nodeAllocatableResources", causes)
    terms = (dev.get("nodeSelector") or {}).get("nodeSelectorTerms")
    if drafields.since_138() and dev.get("nodeSelector") is not None and terms and len(terms) != 1:
        # 1.38: one term per device, as spec.nodeSelector (upstream prints its internal Go value as JSON).
        causes.append((f"{where}.nodeSelector.nodeSelectorTerms",
                       f"Invalid value: {errors.go_json(_go_terms(terms))}: must have exactly one node selector term"))


def _go_terms(terms: list[Any]) -> list[Obj]:
    """Internal core NodeSelectorTerms marshalled as JSON: Go field names, absent lists null."""
    def requirements(items: Any) -> Any:
        return [{"Key": r.get("key", ""), "Operator": r.get("operator", ""), "Values": r.get("values")}
                for r in items] if items else None
    return [{"MatchExpressions": requirements(t.get("matchExpressions")),
             "MatchFields": requirements(t.get("matchFields"))} for t in terms]


def _compatibility_groups(groups: list[Any], path: str, declared: Causes) -> None:
    """At most 2 (and then nothing else is said), unique, each a DNS label."""
    if len(groups) > MAX_COMPATIBILITY_GROUPS:
        declared.append((path, f"Too many: {len(groups)}: must have at most {MAX_COMPATIBILITY_GROUPS} items"))
        return
    _unique(groups, path, declared)
    for i, group in enumerate(groups):
        details = [d.replace("characters", "bytes") if d.startswith("must be no more") else d
                   for d in names.dns1123_label(group)]
        drafields.invalid(f"{path}[{i}]", group, details, declared)


def node_allocatable(resources: Obj, capacities: Obj, path: str, causes: Causes) -> None:
    """What allocating the device costs the node: cpu, memory or hugepages-*, each with a
    mapping (exactly one of capacityKey + capacityMultiplier or deviceMultiplier, positive)
    and/or an overhead (perPod, perContainer, not negative)."""
    for name, resource in resources.items():
        where = f"{path}[{name}]"
        if name not in ("cpu", "memory") and not name.startswith("hugepages-"):
            causes.append((where, f"Invalid value: {errors.go_value(name)}: must be a node allocatable resource name"))
        mapping, overhead = resource.get("mapping"), resource.get("overhead")
        if mapping is None and overhead is None:
            causes.append((where, "Required value: at least one of mapping or overhead must be set"))
        if mapping is not None:
            _mapping(mapping, capacities, f"{where}.mapping", causes)
        if overhead is not None:
            _overhead(overhead, f"{where}.overhead", causes)


def _mapping(mapping: Obj, capacities: Obj, path: str, causes: Causes) -> None:
    key, multiplier, per_device = (mapping.get(f) for f in ("capacityKey", "capacityMultiplier", "deviceMultiplier"))
    new = drafields.since_138()  # 1.38: the key's format first; the dependentRequired pair declarative (beta)
    if key is not None:
        key_errors: Causes = []
        if new and key != "":
            drafields.qualified_name(key, f"{path}.capacityKey", key_errors)
        if key == "":
            causes.append((f"{path}.capacityKey", 'Invalid value: "": capacityKey must not be an empty string'))
        elif key_errors:
            causes.extend(key_errors)
        elif key not in capacities:
            causes.append((f"{path}.capacityKey", f"Not found: {errors.go_value(key)}"))
        if multiplier is None:
            if not new:
                causes.append((f"{path}.capacityMultiplier", "Required value: capacityMultiplier is required when "
                                                             "capacityKey is set"))
        else:
            _positive(multiplier, f"{path}.capacityMultiplier", causes)
    if per_device is not None:
        _positive(per_device, f"{path}.deviceMultiplier", causes)
    if multiplier is not None and key is None and not new:
        causes.append((f"{path}.capacityKey", "Required value: capacityKey is required when capacityMultiplier is set"))
    if new and key is not None and multiplier is None:
        causes.append((f"{path}.capacityMultiplier", "Required value: must be set when capacityKey is set"))
    members = [f for f in ("capacityKey", "deviceMultiplier") if mapping.get(f) is not None]
    if len(members) != 1:  # a union, declaratively: reported after the rules above
        shown = '""' if not members else '"{' + ", ".join(members) + '}"'
        exactly = "exactly " if members else ""
        causes.append((path, f"Invalid value: {shown}: must specify {exactly}one of: `capacityKey`, `deviceMultiplier`"))
    if new and multiplier is not None and key is None:
        causes.append((f"{path}.capacityKey", "Required value: must be set when capacityMultiplier is set"))


def _positive(text: str, path: str, causes: Causes) -> None:
    quantity = quantities.parse(text)
    if quantity is not None and quantity.value <= 0:
        causes.append((path, f'Invalid value: "{quantity}": must be positive'))


def _overhead(overhead: Obj, path: str, causes: Causes) -> None:
    if overhead.get("perPod") is None and overhead.get("perContainer") is None:
        causes.append((path, 'Invalid value: "": at least one of perPod or perContainer must be set'))
        return
    for field in ("perPod", "perContainer"):
        quantity = quantities.parse(overhead.get(field, "0"))
        if quantity is not None and quantity.value < 0:
            causes.append((f"{path}.{field}", f'Invalid value: "{quantity}": must be non-negative'))


def _request_policy(capacity: Obj, multiple: bool, path: str, causes: Causes) -> None:
    """A consumable capacity's requestPolicy (devices with allowMultipleAllocations only):
    validValues (sorted, at most 10, within the capacity, holding the default) or a
    validRange (min, optional max and step, the default on a step from min). With
    DRAFractionalCapacityRange (on in 1.37 with our gates) a range or default with a
    fraction is checked in milli-units: each value must have at most 3 decimal places."""
    policy = capacity.get("requestPolicy")
    if policy is None:
        return
    where = f"{path}.requestPolicy"
    if not multiple:
        causes.append((where, "Forbidden: allowMultipleAllocations must be true"))
        return
    maximum = quantities.parse(capacity.get("value", "0"))
    values, valid_range = policy.get("validValues") or [], policy.get("validRange")
    if values and valid_range is not None:
        causes.append((where, 'Forbidden: exactly one policy can be specified, cannot specify "validValues" and '
                              '"validRange" at the same time'))
        return
    if (not values and valid_range is None) or maximum is None:
        return
    default = quantities.parse(policy["default"]) if policy.get("default") is not None else None
    if default is None:
        kind = "validValues" if values else "validRange"
        causes.append((f"{where}.default", f"Required value: required when {kind} is defined"))
    elif values:
        _valid_values([quantities.parse(v) for v in values], default, maximum, f"{where}.validValues", causes)
    else:
        _valid_range(valid_range, default, maximum, f"{where}.validRange", causes)


def _valid_values(values: list[quantities.Quantity | None], default: quantities.Quantity,
                  maximum: quantities.Quantity, path: str, causes: Causes) -> None:
    options = [v for v in values if v is not None]
    for i in range(len(options) - 1):
        if options[i].value > options[i + 1].value:
            causes.append((f"{path}[{i + 1}]", f'Invalid value: "{options[i + 1]}": values must be sorted in '
                                               "ascending order"))
    if len(options) > MAX_VALID_VALUES:
        causes.append((path, f"Too many: {len(options)}: must have at most {MAX_VALID_VALUES} items"))
    else:
        for i, option in enumerate(options):
            if option.value > maximum.value:
                causes.append((f"{path}[{i}]", f'Invalid value: "{option}": option is larger than capacity value: '
                                               f"{maximum}"))
    if len(options) > MAX_VALID_VALUES or all(option.value != default.value for option in options):
        causes.append((path, f'Invalid value: "{default}": default value is not valid according to the requestPolicy'))


def _valid_range(bounds: Obj, default: quantities.Quantity, maximum: quantities.Quantity, path: str,
                 causes: Causes) -> None:
    low, high, step = (quantities.parse(bounds[f]) if bounds.get(f) is not None else None
                       for f in ("min", "max", "step"))
    if low is None:
        causes.append((f"{path}.min", "Required value: required when validRange is defined"))
        return
    if low.value > maximum.value:
        causes.append((f"{path}.min", f'Invalid value: "{low}": min is larger than capacity value: {maximum}'))
    if default.value < low.value:
        causes.append((f"{path}.default", f'Invalid value: "{default}": default is less than min: {low}'))
    if high is not None:
        if low.value > high.value:
            causes.append((f"{path}.max", f'Invalid value: "{low}": min is larger than max: {high}'))
        if high.value > maximum.value:
            causes.append((f"{path}.max", f'Invalid value: "{high}": max is larger than capacity value: {maximum}'))
        if default.value > high.value:
            causes.append((f"{path}.default", f'Invalid value: "{default}": default is more than max: {high}'))
    named = [("default", default), ("min", low), ("max", high), ("step", step)]
    milli = any(q is not None and q.fractional() for q in (low, high, step, default))
    if milli:
        inexact = [(name, q) for name, q in named if q is not None and not q.milli_exact()]
        for name, q in inexact:
            causes.append((f"{path}.{name}", f'Invalid value: "{q}": value cannot be represented as a milli value'))
        if inexact:
            return
    if step is None:
        return
    if step.value <= 0:
        causes.append((f"{path}.step", f'Invalid value: "{step}": must be greater than zero'))
        return
    one_step = quantities.Quantity(low.value + step.value, low.format)
    if one_step.value > maximum.value:
        causes.append((f"{path}.step", f'Invalid value: "{step}": one step {one_step} is larger than capacity '
                                       f"value: {maximum}"))
    if not milli:
        unsafe = False
        for name, bound in named:
            if bound is None:
                continue
            if bound.value < 0:
                causes.append((f"{path}.{name}", f'Invalid value: "{bound}": must be greater than or equal to 0'))
                unsafe = True
            elif bound.value > 2**63 - 1:
                causes.append((f"{path}.{name}", f'Invalid value: "{bound}": must not be larger than '
                                                 "9223372036854775807"))
                unsafe = True
        if unsafe:
            return
    for value in (default, high):
        if value is not None and _steps(value, low, step, milli) % _steps(step, None, step, milli) != 0:
            causes.append((f"{path}.step", f'Invalid value: "{value}": value is not a multiple of a given step '
                                           f"({step}) from ({low})"))


def _steps(value: quantities.Quantity, low: quantities.Quantity | None, step: quantities.Quantity,
           milli: bool) -> int:
    """value - low in the unit upstream computes in: milli-units, or whole units rounded up (Value())."""
    def unit(q: quantities.Quantity) -> int:
        scaled = q.value * 1000 if milli else q.value
        return -((-scaled.numerator) // scaled.denominator)  # ceil, as Quantity.Value()/MilliValue() round up
    return unit(value) - (unit(low) if low is not None else 0)


def _attribute(value: Obj, path: str, causes: Causes, declared: Causes | None = None) -> None:
    """`declared`: where 1.38 reports a too long `strings` item (its declarative maxBytes, beta there)."""
    kinds = [k for k in _ATTRIBUTE_KINDS if k in value]
    if not kinds:
        causes.append((path, f'Invalid value: "": must specify one of: {_ATTRIBUTE_LIST}'))
        return
    if len(kinds) > 1:
        causes.append((path, f'Invalid value: "{{{", ".join(kinds)}}}": must specify exactly one of: {_ATTRIBUTE_LIST}'))
        return
    kind = kinds[0]
    single = kind in ("string", "version")
    values = [value[kind]] if single else (value[kind] if kind in ("strings", "versions") else [])
    for j, text in enumerate(values):
        where = f"{path}.{kind}" if single else f"{path}.{kind}[{j}]"
        if len(text) > MAX_STRING_ATTRIBUTE:
            late = kind == "strings" and declared is not None and drafields.since_138()
            (declared if late and declared is not None else causes).append(
                (where, f"Too long: may not be more than {MAX_STRING_ATTRIBUTE} bytes"))
        elif kind in ("version", "versions") and drafields.since_138():
            if not _SEMVER_138.match(text):
                causes.append((where, f"Invalid value: {errors.go_value(text)}: must be a string compatible with "
                                      "semver.org spec 2.0.0, with at most 18 digits in numbers"))
        elif kind in ("version", "versions") and not _SEMVER.match(text):
            causes.append((where, f"Invalid value: {errors.go_value(text)}: must be a string compatible with "
                                  "semver.org spec 2.0.0"))
