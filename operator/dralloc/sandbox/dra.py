"""The resource.k8s.io/v1 rules beyond decoding: the limits and cross-field rules of
upstream validation that users (and allocators) actually trip over, worded as
kube-apiserver 1.37 words them.

Upstream validates the decoded Go value, so a missing field is its zero value here
too: a request without a name has the name "" (not a valid DNS label), a pool without
a resourceSliceCount has 0 (not greater than zero). Limits are the 1.37 constants
(also stated in the API's field descriptions): 32 requests, selectors, constraints and
configs per claim, 8 subrequests, 10 Ki per CEL expression, 32 allocation results,
256 reservedFor entries; device tolerations have no limit. ResourceSlices are
`slices.py`'s, the field rules kinds share `drafields.py`'s. CEL selectors must
compile: celpy parses them and `celchecking.py` type-checks what cel-go would refuse
(undeclared names, unknown functions and fields, operands no overload takes, a result
that is not a bool), reported with cel-go's `compilation failed: ERROR: <input>:L:C: ...`
detail (`celerrors.py`). A claim's spec and a template's spec are immutable; a claim's
status.allocation may be set once and only cleared afterwards, and reservedFor needs an
allocation.
"""

from __future__ import annotations

from typing import Any

from dralloc.sandbox import celerrors, drafields, errors, names, quantities, slices

Obj = dict[str, Any]
Causes = list[tuple[str, str]]

MAX_REQUESTS = 32
MAX_SUBREQUESTS = 8
MAX_SELECTORS = 32
MAX_CONSTRAINTS = 32
MAX_CONFIGS = 32
MAX_CEL_LENGTH = 10 * 1024
MAX_RESULTS = 32
MAX_CAPACITY_REQUESTS = 32  # 1.38: a request's capacity.requests (and a result's consumedCapacity)
MAX_RESERVED_FOR = 256
MAX_DERIVED_ATTRIBUTES = 32

_REQUEST_REF = "must be the name of a request in the claim or the name of a request and a subrequest separated by '/'"
# Go's field order of the structs upstream prints whole as a duplicate value.
_GO_ORDER = {
    "request": ("name", "exactly", "firstAvailable"),
    "exactly": ("deviceClassName", "selectors", "allocationMode", "count", "adminAccess", "tolerations", "capacity"),
    "subrequest": ("name", "deviceClassName", "selectors", "allocationMode", "count", "tolerations", "capacity"),
    "toleration": ("key", "operator", "value", "effect", "tolerationSeconds"),
}


def _ordered(value: Obj, order: str) -> Obj:
    keys = _GO_ORDER[order]
    out = {k: value[k] for k in keys if k in value}
    out.update((k, v) for k, v in value.items() if k not in out)
    if "tolerations" in out and isinstance(out["tolerations"], list):
        out["tolerations"] = [_ordered(t, "toleration") if isinstance(t, dict) else t for t in out["tolerations"]]
    if order == "request" and isinstance(out.get("exactly"), dict):
        out["exactly"] = _ordered(out["exactly"], "exactly")
    if order == "request" and isinstance(out.get("firstAvailable"), list):
        out["firstAvailable"] = [_ordered(s, "subrequest") if isinstance(s, dict) else s for s in out["firstAvailable"]]
    return out


def _selectors(selectors: Any, path: str, causes: Causes) -> None:
    drafields.too_many(selectors, MAX_SELECTORS, path, causes)
    for i, sel in enumerate(selectors or []):
        cel = sel.get("cel")
        if cel is None:
            causes.append((f"{path}[{i}].cel", "Required value"))
            continue
        expr = cel.get("expression", "")
        where = f"{path}[{i}].cel.expression"
        if len(expr) > MAX_CEL_LENGTH:
            causes.append((where, f"Too long: may not be more than {MAX_CEL_LENGTH} bytes"))
        elif (err := celerrors.compile_error(expr)) is not None:
            causes.append((where, f"Invalid value: {errors.go_value(expr)}: {err}"))


def _tolerations(tolerations: Any, path: str, causes: Causes) -> None:
    for i, tol in enumerate(tolerations or []):
        where = f"{path}[{i}]"
        if tol.get("key"):
            drafields.taint_key(tol["key"], f"{where}.key", causes)
        operator = tol.get("operator", "Equal")
        if operator not in ("Equal", "Exists"):
            causes.append((f"{where}.operator", f"Unsupported value: {errors.go_value(operator)}: supported values: "
                                                '"Equal", "Exists"'))
        value = tol.get("value", "")
        if operator == "Exists" and value:
            causes.append((f"{where}.value", f"Invalid value: {errors.go_value(value)}: must be empty for operator "
                                             "`Exists`"))
        elif value:
            drafields.invalid(f"{where}.value", value, names.label_value(value), causes)
        effect = tol.get("effect", "")
        if effect and effect not in drafields.TAINT_EFFECTS:
            causes.append((f"{where}.effect", f"Unsupported value: {errors.go_value(effect)}: supported values: "
                                              + ", ".join(f'"{e}"' for e in drafields.TAINT_EFFECTS)))


def _constraint_attributes(constraints: list[Obj]) -> dict[str, set[str]]:
    """Request (or "request/subrequest"; "" for all) -> the attributes constraints on it name."""
    used: dict[str, set[str]] = {}
    for con in constraints:
        name = con.get("matchAttribute") if con.get("matchAttribute") is not None else con.get("distinctAttribute")
        if name is not None:
            for target in con.get("requests") or [""]:
                used.setdefault(target, set()).add(name)
    return used


def _derived_attributes(attributes: Any, path: str, request: str, used: dict[str, set[str]], causes: Causes,
                        declared: Causes) -> None:
    """DRADerivedAttributes: at most 32, unique names, each a fully qualified name that a
    matchAttribute or distinctAttribute constraint on this request (its parent request,
    or every request) names, and a CEL expression yielding a string, int, bool, semver
    or a list of them. The size, required fields and name format are declarative."""
    attributes = attributes or []
    parent = request.split("/")[0]
    targets = {"", request, parent}
    too_many = len(attributes) > MAX_DERIVED_ATTRIBUTES
    seen: set[str] = set()
    for i, attribute in enumerate(attributes):
        where = f"{path}[{i}]"
        name, expression = attribute.get("name", ""), attribute.get("expression", "")
        if name and not any(name in used.get(t, ()) for t in targets):
            causes.append((f"{where}.name", f"Invalid value: {errors.go_value(name)}: must be referenced by at least one "
                                            "matchAttribute or distinctAttribute constraint targeting this request"))
        if expression:
            if len(expression) > MAX_CEL_LENGTH:
                causes.append((f"{where}.expression", f"Too long: may not be more than {MAX_CEL_LENGTH} bytes"))
            elif (err := celerrors.compile_error(expression, derived=True)) is not None:
                causes.append((f"{where}.expression", f"Invalid value: {errors.go_value(expression)}: {err}"))
        if name in seen:
            causes.append((where, f"Duplicate value: {errors.go_value(name)}"))
        seen.add(name)
        if too_many:
            continue
        if not name:
            declared.append((f"{where}.name", "Required value"))
        else:
            drafields.fully_qualified_name(name, f"{where}.name", declared)
        if not expression:
            declared.append((f"{where}.expression", "Required value"))
    if too_many:
        declared.append((path, f"Too many: {len(attributes)}: must have at most {MAX_DERIVED_ATTRIBUTES} items"))


def _request_body(req: Obj, path: str, causes: Causes) -> None:
    if not req.get("deviceClassName"):
        causes.append((f"{path}.deviceClassName", "Required value"))
    else:
        name = req["deviceClassName"]
        drafields.invalid(f"{path}.deviceClassName", name, names.dns1123_subdomain(name), causes)
    _selectors(req.get("selectors"), f"{path}.selectors", causes)
    mode = req.get("allocationMode") or "ExactCount"
    count = req.get("count", 0)
    if mode not in ("ExactCount", "All"):
        causes.append((f"{path}.allocationMode", f"Unsupported value: {errors.go_value(mode)}: supported values: "
                                                 '"All", "ExactCount"'))
    elif mode == "ExactCount" and count <= 0:
        causes.append((f"{path}.count", f"Invalid value: {count}: must be greater than zero"))
    elif mode == "All" and count:
        causes.append((f"{path}.count", f"Invalid value: {count}: must not be specified when allocationMode is 'All'"))
    _tolerations(req.get("tolerations"), f"{path}.tolerations", causes)


def _capacity_requests(requests: Any, old: Any, path: str, causes: Causes, declared: Causes) -> None:
    """1.38: capacity request names are qualified names (unless unchanged from the old template's:
    ratcheting), at most 32 of them, each at least zero (the last two declarative)."""
    if not drafields.since_138() or not isinstance(requests, dict):
        return
    if old is None or requests != old:
        for key in requests:
            drafields.qualified_name(key, path, causes)
    _capacity_values(requests, path, declared)


def _capacity_values(requests: Obj, path: str, declared: Causes) -> None:
    if len(requests) > MAX_CAPACITY_REQUESTS:  # short-circuits the values' check
        declared.append((path, f"Too many: {len(requests)}: must have at most {MAX_CAPACITY_REQUESTS} items"))
        return
    for key, value in requests.items():
        quantity = quantities.parse(value)
        if quantity is not None and quantity.value < 0:
            declared.append((f"{path}[{key}]", f"Invalid value: {errors.go_value(str(quantity))}: "
                                               "must be greater than or equal to 0"))


def _old_request(old_spec: Obj | None, name: str) -> Obj | None:
    for req in ((old_spec or {}).get("devices") or {}).get("requests") or []:
        if isinstance(req, dict) and req.get("name") == name:
            return dict(req)
    return None


def _old_capacity(old_req: Obj | None, subrequest: str | None = None) -> Any:
    if old_req is None:
        return None
    if subrequest is None:
        return ((old_req.get("exactly") or {}).get("capacity") or {}).get("requests")
    for sub in old_req.get("firstAvailable") or []:
        if sub.get("name") == subrequest:
            return (sub.get("capacity") or {}).get("requests")
    return None


def _configs(configs: Any, path: str, refs: set[str] | None, causes: Causes) -> None:
    drafields.too_many(configs, MAX_CONFIGS, path, causes)
    for i, config in enumerate(configs or []):
        where = f"{path}[{i}]"
        if refs is not None:
            _request_refs(config.get("requests"), refs, f"{where}.requests", causes)
        opaque = config.get("opaque")
        if opaque is None:
            causes.append((f"{where}.opaque", "Required value"))
            continue
        drafields.opaque_driver(opaque.get("driver", ""), f"{where}.opaque.driver", causes)
        parameters = opaque.get("parameters")
        if parameters is None:
            causes.append((f"{where}.opaque.parameters", "Required value"))
        elif not isinstance(parameters, dict):
            causes.append((f"{where}.opaque.parameters", 'Invalid value: "<value omitted>": must be a valid JSON object'))


def _request_refs(refs: Any, known: set[str], path: str, causes: Causes) -> None:
    for j, ref in enumerate(refs or []):
        if ref not in known:
            causes.append((f"{path}[{j}]", f"Invalid value: {errors.go_value(ref)}: {_REQUEST_REF}"))


def claim_spec(spec: Obj, path: str, old_spec: Obj | None = None) -> Causes:
    """`old_spec`: the old template's, on its update (1.38 validates it again, ratcheting new checks)."""
    causes: Causes = []
    devices = spec.get("devices") or {}
    requests = devices.get("requests") or []
    drafields.too_many(requests, MAX_REQUESTS, f"{path}.devices.requests", causes)
    names_seen: set[str] = set()
    known: set[str] = set()
    declared: Causes = []  # upstream's declarative rules of these fields report after the hand-written ones
    constraints = devices.get("constraints") or []
    used = _constraint_attributes(constraints)
    for i, req in enumerate(requests):
        where = f"{path}.devices.requests[{i}]"
        name = req.get("name", "")
        drafields.invalid(f"{where}.name", name, names.dns1123_label(name), causes)
        if name in names_seen:
            causes.append((where, f"Duplicate value: {errors.go_json(_ordered(req, 'request'))}"))
        names_seen.add(name)
        known.add(name)
        exactly, first = req.get("exactly"), req.get("firstAvailable") or []
        if exactly is None and not first:
            causes.append((where, "Required value: exactly one of `exactly` or `firstAvailable` is required"))
        elif exactly is not None and first:
            causes.append((where, "Invalid value: null: exactly one of `exactly` or `firstAvailable` is required, "
                                  "but multiple fields are set"))
        old_req = _old_request(old_spec, name) if old_spec is not None else None
        if exactly is not None:
            _request_body(exactly, f"{where}.exactly", causes)
            _capacity_requests((exactly.get("capacity") or {}).get("requests"), _old_capacity(old_req),
                               f"{where}.exactly.capacity.requests", causes, declared)
            _derived_attributes(exactly.get("derivedAttributes"), f"{where}.exactly.derivedAttributes", name, used,
                                causes, declared)
        drafields.too_many(first, MAX_SUBREQUESTS, f"{where}.firstAvailable", causes)
        subnames: set[str] = set()
        for j, sub in enumerate(first):
            subname = sub.get("name", "")
            drafields.invalid(f"{where}.firstAvailable[{j}].name", subname, names.dns1123_label(subname), causes)
            if subname in subnames:
                causes.append((f"{where}.firstAvailable[{j}]",
                               f"Duplicate value: {errors.go_json(_ordered(sub, 'subrequest'))}"))
            subnames.add(subname)
            known.add(f"{name}/{subname}")
            _request_body(sub, f"{where}.firstAvailable[{j}]", causes)
            _capacity_requests((sub.get("capacity") or {}).get("requests"), _old_capacity(old_req, subname),
                               f"{where}.firstAvailable[{j}].capacity.requests", causes, declared)
            _derived_attributes(sub.get("derivedAttributes"), f"{where}.firstAvailable[{j}].derivedAttributes",
                                f"{name}/{subname}", used, causes, declared)
    drafields.too_many(constraints, MAX_CONSTRAINTS, f"{path}.devices.constraints", causes)
    for i, con in enumerate(constraints):
        where = f"{path}.devices.constraints[{i}]"
        _request_refs(con.get("requests"), known, f"{where}.requests", causes)
        attributes = [f for f in ("matchAttribute", "distinctAttribute") if con.get(f) is not None]
        if not attributes:
            causes.append((where, 'Required value: exactly one of "matchAttribute" or "distinctAttribute" is '
                                  "required, but multiple fields are set"))
        for field in attributes:
            drafields.fully_qualified_name(con[field], f"{where}.{field}", declared)
    _configs(devices.get("config"), f"{path}.devices.config", known, causes)
    return causes + declared


def _allocated_key(dev: Obj) -> str:
    """An allocated device's identity as upstream prints it: the internal Go struct, no JSON tags."""
    return errors.go_json({"Driver": dev.get("driver", ""), "Pool": dev.get("pool", ""),
                           "Device": dev.get("device", ""), "ShareID": dev.get("shareID", "")})


def _claim_status(obj: Obj, old: Obj | None) -> Causes:
    status = obj.get("status") or {}
    old_status = (old or {}).get("status") or {}
    causes: Causes = []
    # As Go decodes it: `allocation: {}` (a claim with no requests) is allocated; only absent is not.
    allocation, reserved = status.get("allocation"), status.get("reservedFor") or []
    old_allocation = old_status.get("allocation")
    if old_allocation is not None and allocation is not None and allocation != old_allocation:
        causes.append(("status.allocation", "Invalid value: null: field cannot be modified once set"))
    if reserved and allocation is None:
        causes.append(("status.reservedFor", "Forbidden: may not be specified when `allocated` is not set"))
    drafields.too_many(reserved, MAX_RESERVED_FOR, "status.reservedFor", causes)
    for i, ref in enumerate(reserved):
        for field in ("resource", "name", "uid"):
            if not ref.get(field):
                causes.append((f"status.reservedFor[{i}].{field}", "Required value"))
    results = ((allocation or {}).get("devices") or {}).get("results") or []
    drafields.too_many(results, MAX_RESULTS, "status.allocation.devices.results", causes)
    known: set[str] = set()
    for req in ((obj.get("spec") or {}).get("devices") or {}).get("requests") or []:
        known.add(req.get("name", ""))
        known.update(f"{req.get('name', '')}/{sub.get('name', '')}" for sub in req.get("firstAvailable") or [])
    allocated = set()
    for i, res in enumerate(results):
        where = f"status.allocation.devices.results[{i}]"
        request = res.get("request", "")
        drafields.invalid(f"{where}.request", request, names.dns1123_label(request.split("/")[0]), causes)
        if request not in known:
            causes.append((f"{where}.request", f"Invalid value: {errors.go_value(request)}: {_REQUEST_REF}"))
        drafields.invalid(f"{where}.device", res.get("device", ""), names.dns1123_label(res.get("device", "")), causes)
        drafields.opaque_driver(res.get("driver", ""), f"{where}.driver", causes)
        pool = res.get("pool", "")
        if not pool:
            causes.append((f"{where}.pool", "Required value"))
        for n, segment in enumerate(pool.split("/") if pool else []):
            details = [f"segment {n}: {d}" for d in names.dns1123_subdomain(segment)]
            drafields.invalid(f"{where}.pool", pool, details, causes)
        declared: Causes = []
        slices.skip_node_operations(res.get("skipNodeOperations"), f"{where}.skipNodeOperations", causes, declared)
        consumed = res.get("consumedCapacity")
        if drafields.since_138() and isinstance(consumed, dict):  # 1.38: names checked, <= 32, none negative
            for key in consumed:
                drafields.qualified_name(key, f"{where}.consumedCapacity", causes)
            _capacity_values(consumed, f"{where}.consumedCapacity", declared)
        causes += declared
        allocated.add((res.get("driver"), res.get("pool"), res.get("device")))
    for i, dev in enumerate(status.get("devices") or []):
        if (dev.get("driver"), dev.get("pool"), dev.get("device")) not in allocated:
            causes.append((f"status.devices[{i}]", f"Invalid value: {_allocated_key(dev)}: must be an allocated "
                                                   "device in the claim"))
    return causes


def _device_class(spec: Obj) -> Causes:
    causes: Causes = []
    _selectors(spec.get("selectors"), "spec.selectors", causes)
    _configs(spec.get("config"), "spec.config", None, causes)
    name = spec.get("extendedResourceName")
    if name:
        details = [] if "/" in name else ["a name must be a domain-prefixed path, such as 'example.com/my-prop'"]
        if "kubernetes.io/" in name:
            details.append('must not have "kubernetes.io/" domain')
        if name.startswith("requests."):
            details.append('must not have "requests." prefix')
        drafields.invalid("spec.extendedResourceName", name, details + names.qualified_name(name), causes)
    return causes


def validate(obj: Obj, old: Obj | None, subresource: str, release: str = "1.37") -> Causes:
    """Causes for one decoded resource.k8s.io object (empty when it is fine), by `release`'s rules."""
    token = drafields.RELEASE.set(release)
    try:
        return _validate(obj, old, subresource)
    finally:
        drafields.RELEASE.reset(token)


def _validate(obj: Obj, old: Obj | None, subresource: str) -> Causes:
    kind = obj.get("kind")
    spec = obj.get("spec") or {}
    if kind == "DeviceClass":
        return _device_class(spec)
    if kind == "ResourceClaim":
        if old is not None and spec != (old.get("spec") or {}):
            return [("spec", "Invalid value: null: field is immutable")]
        checked = claim_spec(spec, "spec") if old is None else []  # an unchanged spec was checked before
        return checked + _claim_status(obj, old)
    if kind == "ResourceClaimTemplate":
        if old is not None and drafields.since_138():
            # 1.38 validates the spec again (new checks accept unchanged old values), then immutability.
            old_spec = old.get("spec") or {}
            again = claim_spec(spec.get("spec") or {}, "spec.spec", old_spec.get("spec") or {})
            if spec != old_spec:
                again.append(("spec", f"Invalid value: {errors.go_json(spec)}: field is immutable"))
            return again
        if old is not None and spec != (old.get("spec") or {}):
            # Upstream prints the new spec as its internal Go struct; this is its JSON.
            return [("spec", f"Invalid value: {errors.go_json(spec)}: field is immutable")]
        return claim_spec(spec.get("spec") or {}, "spec.spec")
    if kind == "ResourceSlice":
        return slices.validate(obj, old)
    if kind == "DeviceTaintRule":
        causes: Causes = []
        driver = (spec.get("deviceSelector") or {}).get("driver")
        if driver:
            drafields.invalid("spec.deviceSelector.driver", driver, names.dns1123_subdomain(driver), causes)
        drafields.taint(spec.get("taint") or {}, "spec.taint", causes)
        return causes
    return []


ADMIN_ACCESS_LABEL = "resource.kubernetes.io/admin-access"


def admin_access_causes(obj: Obj, namespace_labels: dict[str, str]) -> Causes:
    """Requests with `adminAccess: true` need the admin-access label on their namespace.

    Only `exactly` has the field (subrequests do not); upstream names the request's path."""
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
        if (req.get("exactly") or {}).get("adminAccess") is True:
            causes.append((f"{base}.devices.requests[{i}].adminAccess",
                           f"Forbidden: admin access to devices requires the `{ADMIN_ACCESS_LABEL}: true` label on "
                           "the containing namespace"))
    return causes


def default(obj: Obj) -> None:
    """The defaults upstream applies to device requests and tolerations.

    Go cannot tell a zero value from an absent one: `count: 0` is defaulted like no count.
    Objects are decoded by now, unless the server skips the schemas: shapes are checked."""
    kind = obj.get("kind")
    spec = obj.get("spec")
    _omit_empty(obj)
    if kind == "ResourceClaimTemplate":
        spec = spec.get("spec") if isinstance(spec, dict) else None
    elif kind != "ResourceClaim":
        return
    devices = spec.get("devices") if isinstance(spec, dict) else None
    requests = devices.get("requests") if isinstance(devices, dict) else None
    for req in requests if isinstance(requests, list) else []:
        first = req.get("firstAvailable") if isinstance(req, dict) else None
        for body in [req.get("exactly") if isinstance(req, dict) else None, *(first if isinstance(first, list) else [])]:
            if not isinstance(body, dict):
                continue
            if not body.get("allocationMode"):
                body["allocationMode"] = "ExactCount"
            if body["allocationMode"] == "ExactCount" and not body.get("count"):
                body["count"] = 1
            tolerations = body.get("tolerations")
            for tol in tolerations if isinstance(tolerations, list) else []:
                if isinstance(tol, dict) and not tol.get("operator"):
                    tol["operator"] = "Equal"


def _dicts(value: Any) -> list[Obj]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _drop(obj: Any, *fields: str) -> None:
    """Go's omitempty: an empty list or map is not written back (nor stored)."""
    if isinstance(obj, dict):
        for field in fields:
            if obj.get(field) in ([], {}):
                del obj[field]


def _omit_empty(obj: Obj) -> None:
    """The 1.37 fields as upstream writes them back: empty lists and maps are left out."""
    spec: Obj = obj["spec"] if isinstance(obj.get("spec"), dict) else {}
    kind = obj.get("kind")
    if kind == "ResourceSlice":
        _drop(spec, "skipNodeOperations")
        for dev in _dicts(spec.get("devices")):
            _drop(dev, "nodeAllocatableResources")
            for consumption in _dicts(dev.get("consumesCounters")):
                _drop(consumption, "compatibilityGroups")
    elif kind in ("ResourceClaim", "ResourceClaimTemplate"):
        claim = spec.get("spec") if kind == "ResourceClaimTemplate" else spec
        devices = claim.get("devices") if isinstance(claim, dict) else None
        for req in _dicts((devices or {}).get("requests") if isinstance(devices, dict) else None):
            for body in [req.get("exactly"), *_dicts(req.get("firstAvailable"))]:
                _drop(body, "derivedAttributes")
        status = obj.get("status")
        allocation = status.get("allocation") if isinstance(status, dict) else None
        results = ((allocation or {}).get("devices") or {}).get("results") if isinstance(allocation, dict) else None
        for result in _dicts(results):
            _drop(result, "skipNodeOperations")

