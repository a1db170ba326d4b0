"""Fluent builders for DRA objects in tests: short, readable inputs for the allocator and the operator.

Every builder is immutable (each call returns a new builder, so one builder can seed many
cases) and produces both forms of its object:

- `.raw()`: API JSON (camelCase), e.g. for seeding an API server or a vector file;
- `.build()`: the frozen model object, parsed from that same JSON through
  `dralloc.model.conversion`, so the two forms never disagree.

    device("gpu-0").attr("model", "a100").capacity("memory", "40Gi").taint("broken")
    slice_("s1", pool="pool-1", node="node-1", devices=[device("gpu-0"), device("gpu-1")])
    class_("gpu", selector='device.driver == "gpu.example.com"')
    claim("c0").request("r0", "gpu", count=2).constraint_match("gpu.example.com/numa")

`snapshot(...)` and `node(...)` turn builders into the allocator's inputs.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Self

from dralloc.allocation.features import Features
from dralloc.allocation.pools import DeviceID, NodeView
from dralloc.allocation.snapshots import Snapshot
from dralloc.model import claims, classes, conversion, devices, taints

DRIVER = "gpu.example.com"
POOL = "pool-1"
NODE = "node-1"
NAMESPACE = "default"
API_VERSION = "resource.k8s.io/v1"


def _attribute(value: Any) -> dict[str, Any]:
    if value == {}:
        return {}  # no value: what kube-apiserver keeps of a list written with its gate off
    if isinstance(value, bool):
        return {"bool": value}
    if isinstance(value, int):
        return {"int": value}
    if isinstance(value, str):
        return {"string": value}
    if isinstance(value, (list, tuple)):
        items = list(value)
        if all(isinstance(v, bool) for v in items):
            return {"bools": items}
        if all(isinstance(v, int) for v in items):
            return {"ints": items}
        if all(isinstance(v, str) for v in items):
            return {"strings": items}
    raise TypeError(f"cannot tell the attribute type of {value!r}; use .version() for versions")


def _quantities(values: Mapping[str, Any]) -> dict[str, dict[str, str]]:
    return {name: {"value": str(value)} for name, value in values.items()}


def _raw(item: Any) -> Any:
    """Builders and models to raw JSON; dicts pass through (copied)."""
    if isinstance(item, _Builder):
        return item.raw()
    if hasattr(item, "model_dump"):
        return conversion.to_raw(item)
    return copy.deepcopy(item)


class _Builder:
    _kind: str = ""

    def __init__(self, raw: dict[str, Any]) -> None:
        self._data = raw

    def _with(self, change: Any) -> Self:
        clone = copy.copy(self)
        clone._data = copy.deepcopy(self._data)
        change(clone._data)
        return clone

    def raw(self) -> dict[str, Any]:
        return copy.deepcopy(self._data)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._data!r})"


# ---- devices and slices -----------------------------------------------------------------


def node_selector(*expressions: tuple[str, str, Sequence[str]],
                  fields: Iterable[tuple[str, str, Sequence[str]]] = ()) -> dict[str, Any]:
    """A one-term NodeSelector: `node_selector(("zone", "In", ["a"]), fields=[("metadata.name", "In", ["n1"])])`."""
    term: dict[str, Any] = {}
    if expressions:
        term["matchExpressions"] = [{"key": k, "operator": op, "values": list(v)} for k, op, v in expressions]
    fields = list(fields)
    if fields:
        term["matchFields"] = [{"key": k, "operator": op, "values": list(v)} for k, op, v in fields]
    return {"nodeSelectorTerms": [term]}


class DeviceBuilder(_Builder):
    """One device of a ResourceSlice."""

    def attr(self, name: str, value: Any) -> Self:
        """An int, bool or string attribute (lists give ints/bools/strings)."""
        return self._with(lambda d: d.setdefault("attributes", {}).__setitem__(name, _attribute(value)))

    def version(self, name: str, value: str) -> Self:
        return self._with(lambda d: d.setdefault("attributes", {}).__setitem__(name, {"version": value}))

    def capacity(self, name: str, value: Any, *, default: Any = None, valid_values: Sequence[Any] = (),
                 min: Any = None, max: Any = None, step: Any = None) -> Self:
        """A capacity, optionally with a requestPolicy (default, validValues or validRange)."""
        entry: dict[str, Any] = {"value": str(value)}
        policy: dict[str, Any] = {}
        if default is not None:
            policy["default"] = str(default)
        if valid_values:
            policy["validValues"] = [str(v) for v in valid_values]
        valid_range = {k: str(v) for k, v in (("min", min), ("max", max), ("step", step)) if v is not None}
        if valid_range:
            policy["validRange"] = valid_range
        if policy:
            entry["requestPolicy"] = policy
        return self._with(lambda d: d.setdefault("capacity", {}).__setitem__(name, entry))

    def taint(self, key: str, value: str | None = None, effect: str = "NoSchedule") -> Self:
        entry = {"key": key, "effect": effect} | ({"value": value} if value is not None else {})
        return self._with(lambda d: d.setdefault("taints", []).append(entry))

    def consumes(self, counter_set: str, counters: Mapping[str, Any]) -> Self:
        """Consume `counters` (name -> quantity) of the pool's counter set `counter_set`."""
        entry = {"counterSet": counter_set, "counters": _quantities(counters)}
        return self._with(lambda d: d.setdefault("consumesCounters", []).append(entry))

    def shared(self, allow: bool = True) -> Self:
        """allowMultipleAllocations."""
        return self._with(lambda d: d.__setitem__("allowMultipleAllocations", allow))

    def on_node(self, name: str) -> Self:
        """Per-device node selection: this device is usable from `name` only."""
        return self._with(lambda d: d.__setitem__("nodeName", name))

    def on_all_nodes(self) -> Self:
        return self._with(lambda d: d.__setitem__("allNodes", True))

    def on_nodes(self, selector: Mapping[str, Any]) -> Self:
        return self._with(lambda d: d.__setitem__("nodeSelector", dict(selector)))

    def binding(self, conditions: Sequence[str] = (), failure: Sequence[str] = (), *,
                binds_to_node: bool = False) -> Self:
        def change(d: dict[str, Any]) -> None:
            if conditions:
                d["bindingConditions"] = list(conditions)
            if failure:
                d["bindingFailureConditions"] = list(failure)
            if binds_to_node:
                d["bindsToNode"] = True
        return self._with(change)

    def build(self) -> devices.Device:
        return devices.Device.model_validate(self._data)


def device(name: str) -> DeviceBuilder:
    return DeviceBuilder({"name": name})


class SliceBuilder(_Builder):
    """A ResourceSlice."""

    def device(self, *more: DeviceBuilder | Mapping[str, Any]) -> Self:
        return self._with(lambda d: d["spec"].setdefault("devices", []).extend(_raw(m) for m in more))

    def counter_set(self, name: str, counters: Mapping[str, Any]) -> Self:
        entry = {"name": name, "counters": _quantities(counters)}
        return self._with(lambda d: d["spec"].setdefault("sharedCounters", []).append(entry))

    def build(self) -> devices.ResourceSlice:
        parsed: devices.ResourceSlice = conversion.parse_as(devices.ResourceSlice, self._data)
        return parsed


def slice_(
    name: str,
    *,
    driver: str = DRIVER,
    pool: str = POOL,
    node: str | None = NODE,
    all_nodes: bool = False,
    nodes: Mapping[str, Any] | None = None,
    per_device: bool = False,
    generation: int = 1,
    slice_count: int = 1,
    devices: Sequence[DeviceBuilder | Mapping[str, Any]] = (),
    counters: Mapping[str, Mapping[str, Any]] | None = None,
) -> SliceBuilder:
    """A slice of `pool`; node selection by `node` (default), `all_nodes`, `nodes` (a NodeSelector) or `per_device`.

    Setting any of `all_nodes`, `nodes`, `per_device` drops the default `node`.
    """
    spec: dict[str, Any] = {
        "driver": driver,
        "pool": {"name": pool, "generation": generation, "resourceSliceCount": slice_count},
    }
    if per_device:
        spec["perDeviceNodeSelection"] = True
    elif all_nodes:
        spec["allNodes"] = True
    elif nodes is not None:
        spec["nodeSelector"] = dict(nodes)
    elif node is not None:
        spec["nodeName"] = node
    if devices:
        spec["devices"] = [_raw(d) for d in devices]
    if counters:
        spec["sharedCounters"] = [{"name": n, "counters": _quantities(c)} for n, c in counters.items()]
    return SliceBuilder({"apiVersion": API_VERSION, "kind": "ResourceSlice", "metadata": {"name": name}, "spec": spec})


# ---- classes --------------------------------------------------------------------------------


class ClassBuilder(_Builder):
    """A DeviceClass."""

    def selector(self, expression: str) -> Self:
        return self._with(lambda d: d["spec"].setdefault("selectors", []).append({"cel": {"expression": expression}}))

    def config(self, driver: str, parameters: Any) -> Self:
        entry = {"opaque": {"driver": driver, "parameters": parameters}}
        return self._with(lambda d: d["spec"].setdefault("config", []).append(entry))

    def build(self) -> classes.DeviceClass:
        parsed: classes.DeviceClass = conversion.parse_as(classes.DeviceClass, self._data)
        return parsed


def class_(name: str, selector: str | None = None, *, selectors: Sequence[str] = ()) -> ClassBuilder:
    """A DeviceClass with optional CEL selectors (all must hold)."""
    built = ClassBuilder({"apiVersion": API_VERSION, "kind": "DeviceClass", "metadata": {"name": name}, "spec": {}})
    for expression in ([selector] if selector else []) + list(selectors):
        built = built.selector(expression)
    return built


# ---- claims ---------------------------------------------------------------------------------


def toleration(key: str | None = None, *, operator: str | None = None, value: str | None = None,
               effect: str | None = None, seconds: int | None = None) -> dict[str, Any]:
    """A DeviceToleration as API JSON (unset fields omitted)."""
    fields = {"key": key, "operator": operator, "value": value, "effect": effect, "tolerationSeconds": seconds}
    return {k: v for k, v in fields.items() if v is not None}


def _request_body(
    class_name: str, count: int | None, all_: bool, selectors: Sequence[str], tolerations: Sequence[Mapping[str, Any]],
    capacity: Mapping[str, Any] | None,
) -> dict[str, Any]:
    body: dict[str, Any] = {"deviceClassName": class_name}
    if all_:
        body["allocationMode"] = "All"
    elif count is not None:
        body["allocationMode"] = "ExactCount"
        body["count"] = count
    if selectors:
        body["selectors"] = [{"cel": {"expression": e}} for e in selectors]
    if tolerations:
        body["tolerations"] = [dict(t) for t in tolerations]
    if capacity:
        body["capacity"] = {"requests": {k: str(v) for k, v in capacity.items()}}
    return body


def subrequest(name: str, class_name: str, count: int | None = None, *, all: bool = False,
               selectors: Sequence[str] = (), tolerations: Sequence[Mapping[str, Any]] = (),
               capacity: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """One entry of a firstAvailable list."""
    return {"name": name, **_request_body(class_name, count, all, selectors, tolerations, capacity)}


def result(request: str, device: str, *, driver: str = DRIVER, pool: str = POOL, admin: bool = False,
           share_id: str | None = None, consumed: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A DeviceRequestAllocationResult (for claims that are already allocated)."""
    entry: dict[str, Any] = {"request": request, "driver": driver, "pool": pool, "device": device}
    if admin:
        entry["adminAccess"] = True
    if share_id:
        entry["shareID"] = share_id
    if consumed:
        entry["consumedCapacity"] = {k: str(v) for k, v in consumed.items()}
    return entry


class ClaimBuilder(_Builder):
    """A ResourceClaim."""

    def _devices(self, d: dict[str, Any]) -> dict[str, Any]:
        devices_: dict[str, Any] = d["spec"].setdefault("devices", {})
        return devices_

    def request(self, name: str, class_name: str, count: int | None = None, *, all: bool = False,
                selectors: Sequence[str] = (), admin: bool | None = None,
                tolerations: Sequence[Mapping[str, Any]] = (), capacity: Mapping[str, Any] | None = None) -> Self:
        """An `exactly` request: ExactCount `count` (omitted: the API default 1), or `all=True`."""
        body = _request_body(class_name, count, all, selectors, tolerations, capacity)
        if admin is not None:
            body["adminAccess"] = admin
        entry = {"name": name, "exactly": body}
        return self._with(lambda d: self._devices(d).setdefault("requests", []).append(entry))

    def first_available(self, name: str, *subrequests: Mapping[str, Any]) -> Self:
        entry = {"name": name, "firstAvailable": [dict(s) for s in subrequests]}
        return self._with(lambda d: self._devices(d).setdefault("requests", []).append(entry))

    def constraint_match(self, attribute: str, *requests: str) -> Self:
        entry: dict[str, Any] = {"matchAttribute": attribute} | ({"requests": list(requests)} if requests else {})
        return self._with(lambda d: self._devices(d).setdefault("constraints", []).append(entry))

    def constraint_distinct(self, attribute: str, *requests: str) -> Self:
        entry: dict[str, Any] = {"distinctAttribute": attribute} | ({"requests": list(requests)} if requests else {})
        return self._with(lambda d: self._devices(d).setdefault("constraints", []).append(entry))

    def config(self, driver: str, parameters: Any, *requests: str) -> Self:
        entry: dict[str, Any] = {"opaque": {"driver": driver, "parameters": parameters}}
        if requests:
            entry["requests"] = list(requests)
        return self._with(lambda d: self._devices(d).setdefault("config", []).append(entry))

    def allocated(self, *results: Mapping[str, Any]) -> Self:
        """Give the claim a status.allocation with these results (see `result`)."""
        entries = [dict(r) for r in results]
        return self._with(lambda d: d.setdefault("status", {}).__setitem__(
            "allocation", {"devices": {"results": entries}}))

    def build(self) -> claims.ResourceClaim:
        parsed: claims.ResourceClaim = conversion.parse_as(claims.ResourceClaim, self._data)
        return parsed


def claim(name: str, namespace: str = NAMESPACE, *, uid: str | None = None) -> ClaimBuilder:
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if uid is not None:
        metadata["uid"] = uid
    return ClaimBuilder({"apiVersion": API_VERSION, "kind": "ResourceClaim", "metadata": metadata, "spec": {}})


# ---- allocator inputs -------------------------------------------------------------------------


def built(item: Any) -> Any:
    """The model object of a builder; model objects pass through."""
    return item.build() if isinstance(item, _Builder) else item


def node(name: str = NODE, labels: Mapping[str, str] | None = None) -> NodeView:
    return NodeView(name, dict(labels or {}))


def taint(key: str, value: str | None = None, effect: str = "NoSchedule") -> taints.DeviceTaint:
    """A DeviceTaint model (e.g. for Snapshot.extra_taints)."""
    return taints.DeviceTaint(key=key, value=value, effect=effect)


def snapshot(
    *,
    classes: Sequence[ClassBuilder | classes.DeviceClass] = (),
    slices: Sequence[SliceBuilder | devices.ResourceSlice] = (),
    allocated: Sequence[ClaimBuilder | claims.ResourceClaim] = (),
    features: Features | None = None,
    extra_taints: Mapping[DeviceID, Sequence[taints.DeviceTaint]] | None = None,
) -> Snapshot:
    """The allocator's Snapshot from builders (or model objects)."""
    snap = Snapshot.build(
        device_classes=[built(c) for c in classes],
        resource_slices=[built(s) for s in slices],
        allocated_claims=[built(c) for c in allocated],
        features=features or Features(),
    )
    if extra_taints:
        snap = dataclasses.replace(snap, extra_taints={k: tuple(v) for k, v in extra_taints.items()})
    return snap


def device_id(device: str, *, driver: str = DRIVER, pool: str = POOL) -> DeviceID:
    return DeviceID(driver, pool, device)
