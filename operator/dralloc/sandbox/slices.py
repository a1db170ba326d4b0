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

from dralloc.sandbox import drafields, errors, names

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


def validate(obj: Obj) -> Causes:
    """Causes for one decoded ResourceSlice (empty when it is fine)."""
    spec = obj.get("spec") or {}
    causes: Causes = []
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
    for i, dev in enumerate(devices):
        _device(dev, f"spec.devices[{i}]", seen, causes)
    return causes


def _device(dev: Obj, where: str, seen: set[str], causes: Causes) -> None:
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
        _attribute(value, f"{where}.attributes[{key}]", causes)
    for key in caps:
        drafields.qualified_name(key, f"{where}.capacity", causes)
    drafields.taints(dev.get("taints"), f"{where}.taints", causes)
    consumptions = dev.get("consumesCounters") or []
    drafields.too_many(consumptions, MAX_COUNTER_CONSUMPTIONS, f"{where}.consumesCounters", causes)
    for j, consumption in enumerate(consumptions):
        for field in ("counterSet", "counters"):
            if not consumption.get(field):
                causes.append((f"{where}.consumesCounters[{j}].{field}", "Required value"))


def _attribute(value: Obj, path: str, causes: Causes) -> None:
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
            causes.append((where, f"Too long: may not be more than {MAX_STRING_ATTRIBUTE} bytes"))
        elif kind in ("version", "versions") and not _SEMVER.match(text):
            causes.append((where, f"Invalid value: {errors.go_value(text)}: must be a string compatible with "
                                  "semver.org spec 2.0.0"))
