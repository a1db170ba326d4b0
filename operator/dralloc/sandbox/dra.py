"""The resource.k8s.io/v1 rules beyond the schema: the limits and cross-field rules of
upstream validation that users (and allocators) actually trip over.

Limits are the 1.37 constants (also stated in the API's field descriptions): 32
requests, selectors, constraints and configs per claim, 8 subrequests, 16
tolerations, 10 Ki per CEL expression, 128 devices per slice (64 with taints or
counter consumption), 32 attributes+capacities per device, 8 counter sets of 32
counters, 2 counter consumptions per device, 16 taints, 32 allocation results,
256 reservedFor entries. CEL selectors must parse (celpy's parser: no type check,
which upstream additionally does); a selector that does not is reported with cel-go's
`compilation failed: ERROR: <input>:L:C: ...` detail (`celerrors.py`). A claim's spec and a template's spec are immutable;
a claim's status.allocation may be set once and only cleared afterwards, and
reservedFor needs an allocation.
"""

from __future__ import annotations

import re
from typing import Any

from dralloc.sandbox import celerrors, errors

Obj = dict[str, Any]
Causes = list[tuple[str, str]]

MAX_REQUESTS = 32
MAX_SUBREQUESTS = 8
MAX_SELECTORS = 32
MAX_CONSTRAINTS = 32
MAX_CONFIGS = 32
MAX_TOLERATIONS = 16
MAX_CEL_LENGTH = 10 * 1024
MAX_DEVICES = 128
MAX_DEVICES_WITH_TAINTS_OR_COUNTERS = 64
MAX_ATTRIBUTES_AND_CAPACITIES = 32
MAX_COUNTER_SETS = 8
MAX_COUNTERS = 32
MAX_COUNTER_CONSUMPTIONS = 2
MAX_TAINTS = 16
MAX_RESULTS = 32
MAX_RESERVED_FOR = 256
MAX_STRING_ATTRIBUTE = 64

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_C_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SEMVER = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$")


def _dns_label(value: Any, path: str, causes: Causes) -> None:
    if not isinstance(value, str) or not _DNS_LABEL.match(value) or len(value) > 63:
        causes.append((path, f"Invalid value: {errors.go_value(value)}: a lowercase RFC 1123 label must consist of lower case "
                             "alphanumeric characters or '-', and must start and end with an alphanumeric"))


def _dns_subdomain(value: Any, path: str, causes: Causes, max_len: int = 253) -> None:
    if not isinstance(value, str) or not _DNS_SUBDOMAIN.match(value) or len(value) > max_len:
        causes.append((path, f"Invalid value: {errors.go_value(value)}: must be a lowercase RFC 1123 subdomain of at most "
                             f"{max_len} characters"))


def _too_many(items: Any, limit: int, path: str, causes: Causes) -> None:
    if isinstance(items, list) and len(items) > limit:
        causes.append((path, f"Too many: {len(items)}: must have at most {limit} items"))


def _selectors(selectors: Any, path: str, causes: Causes) -> None:
    _too_many(selectors, MAX_SELECTORS, path, causes)
    for i, sel in enumerate(selectors or []):
        expr = ((sel or {}).get("cel") or {}).get("expression")
        where = f"{path}[{i}].cel.expression"
        if not isinstance(expr, str) or not expr.strip():
            causes.append((where, "Required value"))
        elif len(expr) > MAX_CEL_LENGTH:
            causes.append((where, f"Too long: may not be more than {MAX_CEL_LENGTH} bytes"))
        elif (err := celerrors.compile_error(expr)) is not None:
            causes.append((where, f"Invalid value: {errors.go_value(expr)}: {err}"))


def _tolerations(tolerations: Any, path: str, causes: Causes) -> None:
    _too_many(tolerations, MAX_TOLERATIONS, path, causes)
    for i, tol in enumerate(tolerations or []):
        if tol.get("operator") == "Exists" and tol.get("value"):
            causes.append((f"{path}[{i}].value", "Invalid value: must be empty when `operator` is 'Exists'"))
        if not tol.get("key") and tol.get("operator", "Equal") != "Exists":
            causes.append((f"{path}[{i}].operator", "Invalid value: must be 'Exists' when `key` is empty"))


def _request_body(req: Obj, path: str, causes: Causes) -> None:
    if not req.get("deviceClassName"):
        causes.append((f"{path}.deviceClassName", "Required value"))
    else:
        _dns_subdomain(req["deviceClassName"], f"{path}.deviceClassName", causes)
    _selectors(req.get("selectors"), f"{path}.selectors", causes)
    _tolerations(req.get("tolerations"), f"{path}.tolerations", causes)
    mode = req.get("allocationMode", "ExactCount")
    if mode not in ("ExactCount", "All"):
        causes.append((f"{path}.allocationMode", f"Unsupported value: {errors.go_value(mode)}: supported values: "
                                                 '"All", "ExactCount"'))
    elif mode == "ExactCount" and not (isinstance(req.get("count"), int) and req["count"] > 0):
        causes.append((f"{path}.count", f"Invalid value: {req.get('count')}: must be greater than zero"))
    elif mode == "All" and req.get("count") not in (None, 0):
        causes.append((f"{path}.count", "Invalid value: must not be set when allocationMode is All"))


def claim_spec(spec: Obj, path: str) -> Causes:
    causes: Causes = []
    devices = spec.get("devices") or {}
    requests = devices.get("requests") or []
    _too_many(requests, MAX_REQUESTS, f"{path}.devices.requests", causes)
    names: set[str] = set()
    for i, req in enumerate(requests):
        where = f"{path}.devices.requests[{i}]"
        _dns_label(req.get("name"), f"{where}.name", causes)
        if req.get("name") in names:
            causes.append((f"{where}.name", f"Duplicate value: {errors.go_value(req.get('name'))}"))
        names.add(req.get("name", ""))
        exactly, first = req.get("exactly"), req.get("firstAvailable")
        if (exactly is None) == (first is None):
            causes.append((where, "Invalid value: exactly one of `exactly` or `firstAvailable` is required"))
        if exactly is not None:
            _request_body(exactly, f"{where}.exactly", causes)
        if first is not None:
            if not first or len(first) > MAX_SUBREQUESTS:
                causes.append((f"{where}.firstAvailable", f"Invalid value: must have 1 to {MAX_SUBREQUESTS} "
                                                          "subrequests"))
            subnames: set[str] = set()
            for j, sub in enumerate(first):
                _dns_label(sub.get("name"), f"{where}.firstAvailable[{j}].name", causes)
                if sub.get("name") in subnames:
                    causes.append((f"{where}.firstAvailable[{j}].name", "Duplicate value"))
                subnames.add(sub.get("name", ""))
                names.add(f"{req.get('name')}/{sub.get('name')}")
                _request_body(sub, f"{where}.firstAvailable[{j}]", causes)
    for field, limit in (("constraints", MAX_CONSTRAINTS), ("config", MAX_CONFIGS)):
        items = devices.get(field) or []
        _too_many(items, limit, f"{path}.devices.{field}", causes)
        for i, item in enumerate(items):
            for j, ref in enumerate(item.get("requests") or []):
                if ref not in names and ref.split("/")[0] not in names:
                    causes.append((f"{path}.devices.{field}[{i}].requests[{j}]",
                                   f"Invalid value: {errors.go_value(ref)}: must be the name of a request in the claim"))
    for i, con in enumerate(devices.get("constraints") or []):
        if con.get("matchAttribute") is None and con.get("distinctAttribute") is None:
            causes.append((f"{path}.devices.constraints[{i}]", "Required value: exactly one of matchAttribute "
                                                               "or distinctAttribute is required"))
    return causes


def _slice(obj: Obj) -> Causes:
    spec = obj.get("spec") or {}
    causes: Causes = []
    _dns_subdomain(spec.get("driver"), "spec.driver", causes, 63)
    pool = spec.get("pool") or {}
    name = pool.get("name")
    if not isinstance(name, str) or not name or len(name) > 253 or not all(
            _DNS_SUBDOMAIN.match(p) for p in name.split("/")):
        causes.append(("spec.pool.name", f"Invalid value: {errors.go_value(name)}: must be DNS subdomains separated by '/'"))
    if not isinstance(pool.get("resourceSliceCount"), int) or pool["resourceSliceCount"] < 1:
        causes.append(("spec.pool.resourceSliceCount", "Invalid value: must be greater than zero"))
    selected = [f for f in ("nodeName", "nodeSelector", "allNodes", "perDeviceNodeSelection") if spec.get(f)]
    if len(selected) != 1:
        causes.append(("spec", "Invalid value: exactly one of `nodeName`, `nodeSelector`, `allNodes`, "
                               "`perDeviceNodeSelection` is required"))
    devices = spec.get("devices") or []
    counters = spec.get("sharedCounters") or []
    if devices and counters:
        causes.append(("spec", "Invalid value: `devices` and `sharedCounters` are mutually exclusive"))
    heavy = any(d.get("taints") or d.get("consumesCounters") for d in devices)
    _too_many(devices, MAX_DEVICES_WITH_TAINTS_OR_COUNTERS if heavy else MAX_DEVICES, "spec.devices", causes)
    _too_many(counters, MAX_COUNTER_SETS, "spec.sharedCounters", causes)
    for i, cs in enumerate(counters):
        _dns_label(cs.get("name"), f"spec.sharedCounters[{i}].name", causes)
        if len(cs.get("counters") or {}) > MAX_COUNTERS:
            causes.append((f"spec.sharedCounters[{i}].counters", f"Too many: must have at most {MAX_COUNTERS}"))
    seen: set[str] = set()
    for i, dev in enumerate(devices):
        where = f"spec.devices[{i}]"
        _dns_label(dev.get("name"), f"{where}.name", causes)
        if dev.get("name") in seen:
            causes.append((f"{where}.name", f"Duplicate value: {errors.go_value(dev.get('name'))}"))
        seen.add(dev.get("name", ""))
        attrs, caps = dev.get("attributes") or {}, dev.get("capacity") or {}
        if len(attrs) + len(caps) > MAX_ATTRIBUTES_AND_CAPACITIES:
            causes.append((f"{where}.attributes", f"Too many: {len(attrs) + len(caps)}: attributes and capacities "
                                                  f"must have at most {MAX_ATTRIBUTES_AND_CAPACITIES} entries"))
        for key, value in attrs.items():
            _attribute(key, value, f"{where}.attributes[{key}]", causes)
        _too_many(dev.get("taints"), MAX_TAINTS, f"{where}.taints", causes)
        _too_many(dev.get("consumesCounters"), MAX_COUNTER_CONSUMPTIONS, f"{where}.consumesCounters", causes)
    return causes


def _attribute(key: str, value: Any, path: str, causes: Causes) -> None:
    domain, _, name = key.rpartition("/")
    if not _C_IDENTIFIER.match(name) or len(name) > 64 or (domain and not _DNS_SUBDOMAIN.match(domain)):
        causes.append((path, f"Invalid value: {errors.go_value(key)}: must be a C identifier, optionally prefixed with a "
                             "DNS subdomain and '/'"))
    kinds = [k for k in ("int", "bool", "string", "version", "ints", "bools", "strings", "versions")
             if k in (value or {})]
    if len(kinds) != 1:
        causes.append((path, "Invalid value: exactly one value must be specified"))
        return
    val = value[kinds[0]]
    vals = val if isinstance(val, list) else [val]
    if kinds[0] in ("string", "strings") and any(isinstance(v, str) and len(v) > MAX_STRING_ATTRIBUTE
                                                 for v in vals):
        causes.append((f"{path}.{kinds[0]}", f"Too long: may not be more than {MAX_STRING_ATTRIBUTE} bytes"))
    if kinds[0] in ("version", "versions") and not all(isinstance(v, str) and _SEMVER.match(v) for v in vals):
        causes.append((f"{path}.{kinds[0]}", "Invalid value: must be a string compatible with semver.org "
                                             "spec 2.0.0"))


def _claim_status(obj: Obj, old: Obj | None) -> Causes:
    status = obj.get("status") or {}
    old_status = (old or {}).get("status") or {}
    causes: Causes = []
    # As Go decodes it: `allocation: {}` (a claim with no requests) is allocated; only absent or null is not.
    allocation, reserved = status.get("allocation"), status.get("reservedFor") or []
    old_allocation = old_status.get("allocation")
    if old_allocation is not None and allocation is not None and allocation != old_allocation:
        causes.append(("status.allocation", "Invalid value: field is immutable"))
    if reserved and allocation is None:
        causes.append(("status.reservedFor", "Forbidden: may not be specified when `allocated` is not set"))
    if len(reserved) > MAX_RESERVED_FOR:
        causes.append(("status.reservedFor", f"Too many: {len(reserved)}: must have at most "
                                             f"{MAX_RESERVED_FOR} items"))
    uids: set[str] = set()
    for i, ref in enumerate(reserved):
        for field in ("resource", "name", "uid"):
            if not ref.get(field):
                causes.append((f"status.reservedFor[{i}].{field}", "Required value"))
        if ref.get("uid") in uids:
            causes.append((f"status.reservedFor[{i}].uid", f"Duplicate value: {errors.go_value(ref.get('uid'))}"))
        uids.add(ref.get("uid", ""))
    results = ((allocation or {}).get("devices") or {}).get("results") or []
    _too_many(results, MAX_RESULTS, "status.allocation.devices.results", causes)
    requests = {r.get("name") for r in ((obj.get("spec") or {}).get("devices") or {}).get("requests") or []}
    allocated = set()
    for i, res in enumerate(results):
        where = f"status.allocation.devices.results[{i}]"
        if str(res.get("request", "")).split("/")[0] not in requests:
            causes.append((f"{where}.request", f"Invalid value: {errors.go_value(res.get('request'))}: must be the name of a "
                                               "request in the claim spec"))
        _dns_subdomain(res.get("driver"), f"{where}.driver", causes, 63)
        _dns_label(res.get("device"), f"{where}.device", causes)
        if not res.get("pool"):
            causes.append((f"{where}.pool", "Required value"))
        allocated.add((res.get("driver"), res.get("pool"), res.get("device")))
    for i, dev in enumerate(status.get("devices") or []):
        if (dev.get("driver"), dev.get("pool"), dev.get("device")) not in allocated:
            causes.append((f"status.devices[{i}]", "Invalid value: must match a device in "
                                                   "status.allocation.devices.results"))
    return causes


def validate(obj: Obj, old: Obj | None, subresource: str) -> Causes:
    """Causes for one resource.k8s.io object (empty when it is fine)."""
    kind = obj.get("kind")
    spec = obj.get("spec") or {}
    if kind == "DeviceClass":
        causes: Causes = []
        _selectors(spec.get("selectors"), "spec.selectors", causes)
        _too_many(spec.get("config"), MAX_CONFIGS, "spec.config", causes)
        return causes
    if kind == "ResourceClaim":
        if old is not None and spec != (old.get("spec") or {}):
            return [("spec", "Invalid value: field is immutable")]
        checked = claim_spec(spec, "spec") if old is None else []  # an unchanged spec was checked before
        return checked + _claim_status(obj, old)
    if kind == "ResourceClaimTemplate":
        if old is not None and spec != (old.get("spec") or {}):
            return [("spec", "Invalid value: field is immutable")]
        return claim_spec(spec.get("spec") or {}, "spec.spec")
    if kind == "ResourceSlice":
        return _slice(obj)
    if kind == "DeviceTaintRule":
        effect = (spec.get("taint") or {}).get("effect")
        if effect not in ("NoSchedule", "NoExecute", "None"):
            return [("spec.taint.effect", f"Unsupported value: {errors.go_value(effect)}: supported values: \"NoExecute\", "
                                          "\"NoSchedule\", \"None\"")]
    return []


ADMIN_ACCESS_LABEL = "resource.kubernetes.io/admin-access"


def admin_access_causes(obj: Obj, namespace_labels: dict[str, str]) -> Causes:
    """Requests with `adminAccess: true` need the admin-access label on their namespace."""
    kind = obj.get("kind")
    if kind not in ("ResourceClaim", "ResourceClaimTemplate"):
        return []
    spec, base = (obj.get("spec") or {}, "spec")
    if kind == "ResourceClaimTemplate":
        spec, base = (spec.get("spec") or {}), "spec.spec"
    if namespace_labels.get(ADMIN_ACCESS_LABEL) == "true":
        return []
    causes: Causes = []
    for i, req in enumerate((spec.get("devices") or {}).get("requests") or []):
        bodies = [(f"{base}.devices.requests[{i}].exactly", req.get("exactly"))]
        bodies += [(f"{base}.devices.requests[{i}].firstAvailable[{j}]", sub)
                   for j, sub in enumerate(req.get("firstAvailable") or [])]
        for path, body in bodies:
            if isinstance(body, dict) and body.get("adminAccess") is True:
                causes.append((f"{path}.adminAccess", f'Forbidden: admin access to devices requires the '
                                                      f'`{ADMIN_ACCESS_LABEL}: "true"` label on the containing '
                                                      "namespace"))
    return causes


def default(obj: Obj) -> None:
    """The defaults upstream applies to device requests and tolerations."""
    kind = obj.get("kind")
    spec = obj.get("spec") or {}
    if kind == "ResourceClaimTemplate":
        spec = spec.get("spec") if isinstance(spec, dict) else None
    elif kind != "ResourceClaim":
        return
    # Defaulting runs before validation: shapes may be anything here (validation says what is wrong).
    devices = spec.get("devices") if isinstance(spec, dict) else None
    requests = devices.get("requests") if isinstance(devices, dict) else None
    for req in requests if isinstance(requests, list) else []:
        if not isinstance(req, dict):
            continue
        first = req.get("firstAvailable")
        for body in [req.get("exactly"), *(first if isinstance(first, list) else [])]:
            if not isinstance(body, dict):
                continue
            body.setdefault("allocationMode", "ExactCount")
            if body["allocationMode"] == "ExactCount":
                body.setdefault("count", 1)
            tolerations = body.get("tolerations")
            for tol in tolerations if isinstance(tolerations, list) else []:
                if isinstance(tol, dict):
                    tol.setdefault("operator", "Equal")
