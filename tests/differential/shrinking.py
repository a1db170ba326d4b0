"""Greedy shrinking: make a differing case as small as it can get while it still differs the same way.

`shrink(case, still)` tries one-step simplifications ("edits") in a fixed order: half of
the slices, half of every slice's devices, then drop a claim, an allocated claim, a slice
(also with its pool's resourceSliceCount one lower), a device, a request, a constraint,
a config entry, a request name in a constraint or config, a subrequest, a class, an
allocation result, a feature gate, a request's selectors, tolerations, capacity or
adminAccess, a device's attributes, capacity, taints, counters and other fields, a
counter set; set a count to 1. Each accepted edit (`still(candidate)` holds) becomes the
case and the pass goes on; passes repeat until one accepts nothing or `max_checks`
candidates were tried.

An edit is a function that changes a fresh copy of the case in place, so a pass only
copies the case for the candidates it actually tries.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

Case = dict[str, Any]
Edit = Callable[[Case], None]


def _copy(case: Case) -> Case:
    copied: Case = json.loads(json.dumps(case))
    return copied


def _objects(case: Case, kind: str) -> list[Any]:
    items: list[Any] = case["objects"].setdefault(kind, [])
    return items


def _pool_key(s: dict[str, Any]) -> tuple[str, str, int]:
    return (s["spec"]["driver"], s["spec"]["pool"]["name"], s["spec"]["pool"].get("generation", 0))


def _bodies(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [request["exactly"]] if request.get("exactly") else list(request.get("firstAvailable") or [])


def _drop_slice(i: int, *, recount: bool) -> Edit:
    def edit(c: Case) -> None:
        slices = _objects(c, "resourceSlices")
        gone = slices.pop(i)
        if recount:  # the pool has one slice fewer: say so, or it becomes incomplete
            for s in slices:
                if _pool_key(s) == _pool_key(gone):
                    s["spec"]["pool"]["resourceSliceCount"] = max(1, s["spec"]["pool"]["resourceSliceCount"] - 1)
    return edit


def _halve_slices(keep: int) -> Edit:
    def edit(c: Case) -> None:
        slices = _objects(c, "resourceSlices")
        half = len(slices) // 2
        c["objects"]["resourceSlices"] = slices[:half] if keep == 0 else slices[half:]
    return edit


def _halve_devices(keep: int) -> Edit:
    def edit(c: Case) -> None:
        for s in _objects(c, "resourceSlices"):
            devices = s["spec"].get("devices")
            if devices and len(devices) > 1:
                half = len(devices) // 2
                s["spec"]["devices"] = devices[:half] if keep == 0 else devices[half:]
    return edit


def _pop(path: Callable[[Case], Any], key: Any, *, drop_empty: tuple[Callable[[Case], Any], str] | None = None) -> Edit:
    """Remove `key` (index or field) from the container `path` finds; optionally drop it when empty."""
    def edit(c: Case) -> None:
        container = path(c)
        container.pop(key)
        if drop_empty is not None and not container:
            parent, field = drop_empty
            parent(c).pop(field, None)
    return edit


def _set(path: Callable[[Case], Any], **values: Any) -> Edit:
    def edit(c: Case) -> None:
        path(c).update(values)
    return edit


def edits(case: Case) -> Iterator[Edit]:
    slices = _objects(case, "resourceSlices")
    if len(slices) > 2:
        yield _halve_slices(0)
        yield _halve_slices(1)
    if sum(len(s["spec"].get("devices") or []) for s in slices) > 3:
        yield _halve_devices(0)
        yield _halve_devices(1)
    claims = _objects(case, "claims")
    for i in range(len(claims)):
        if len(claims) > 1:
            yield _pop(lambda c: _objects(c, "claims"), i)
    for i in range(len(_objects(case, "allocatedClaims"))):
        yield _pop(lambda c: _objects(c, "allocatedClaims"), i)
    for i in range(len(slices)):
        yield _drop_slice(i, recount=False)
        yield _drop_slice(i, recount=True)
    for i, s in enumerate(slices):
        for j in range(len(s["spec"].get("devices") or [])):
            yield _pop(lambda c, i=i: c["objects"]["resourceSlices"][i]["spec"]["devices"], j)
    for i, claim in enumerate(claims):
        def devices_of(c: Case, i: int = i) -> dict[str, Any]:
            found: dict[str, Any] = c["objects"]["claims"][i]["spec"]["devices"]
            return found
        spec = claim["spec"]["devices"]
        if len(spec["requests"]) > 1:
            for j in range(len(spec["requests"])):
                yield _pop(lambda c, f=devices_of: f(c)["requests"], j)
        for key in ("constraints", "config"):
            for j in range(len(spec.get(key) or [])):
                yield _pop(lambda c, f=devices_of, key=key: f(c)[key], j, drop_empty=(devices_of, key))
            for j, entry in enumerate(spec.get(key) or []):
                for k in range(len(entry.get("requests") or [])):
                    yield _pop(lambda c, f=devices_of, key=key, j=j: f(c)[key][j]["requests"], k,
                               drop_empty=(lambda c, f=devices_of, key=key, j=j: f(c)[key][j], "requests"))
        for j, request in enumerate(spec["requests"]):
            subs = request.get("firstAvailable") or []
            if len(subs) > 1:
                for k in range(len(subs)):
                    yield _pop(lambda c, f=devices_of, j=j: f(c)["requests"][j]["firstAvailable"], k)
    for i in range(len(_objects(case, "deviceClasses"))):
        yield _pop(lambda c: _objects(c, "deviceClasses"), i)
    for i, claim in enumerate(_objects(case, "allocatedClaims")):
        results = claim["status"]["allocation"]["devices"]["results"]
        if len(results) > 1:
            for j in range(len(results)):
                yield _pop(lambda c, i=i: c["objects"]["allocatedClaims"][i]["status"]["allocation"]["devices"]
                           ["results"], j)
    for i in range(len(case.get("features") or [])):
        yield _pop(lambda c: c["features"], i)
    yield from _request_edits(case)
    yield from _device_edits(case)


def _request_edits(case: Case) -> Iterator[Edit]:
    for i, claim in enumerate(_objects(case, "claims")):
        for j, request in enumerate(claim["spec"]["devices"]["requests"]):
            for k, body in enumerate(_bodies(request)):
                def body_of(c: Case, i: int = i, j: int = j, k: int = k) -> dict[str, Any]:
                    return _bodies(c["objects"]["claims"][i]["spec"]["devices"]["requests"][j])[k]
                for field in ("selectors", "tolerations", "capacity", "adminAccess"):
                    if field in body:
                        yield _pop(body_of, field)
                if body.get("allocationMode") == "All" or (body.get("count") or 1) > 1:
                    yield _set(body_of, allocationMode="ExactCount", count=1)


def _device_edits(case: Case) -> Iterator[Edit]:
    for i, s in enumerate(_objects(case, "resourceSlices")):
        def spec_of(c: Case, i: int = i) -> dict[str, Any]:
            found: dict[str, Any] = c["objects"]["resourceSlices"][i]["spec"]
            return found
        for j, device in enumerate(s["spec"].get("devices") or []):
            def device_of(c: Case, f: Callable[[Case], dict[str, Any]] = spec_of, j: int = j) -> dict[str, Any]:
                found: dict[str, Any] = f(c)["devices"][j]
                return found
            for field in ("attributes", "capacity"):
                for name in device.get(field) or {}:
                    yield _pop(lambda c, f=device_of, field=field: f(c)[field], name, drop_empty=(device_of, field))
            for field in ("taints", "consumesCounters", "bindingConditions", "bindingFailureConditions",
                          "bindsToNode", "allowMultipleAllocations"):
                if field in device:
                    yield _pop(device_of, field)
        for k in range(len(s["spec"].get("sharedCounters") or [])):
            yield _pop(lambda c, f=spec_of: f(c)["sharedCounters"], k, drop_empty=(spec_of, "sharedCounters"))


def candidates(case: Case) -> Iterator[Case]:
    """Every one-step simplification of the case (copies; for inspection and tests)."""
    for edit in edits(case):
        new = _copy(case)
        edit(new)
        yield new


def shrink(case: Case, still: Callable[[Case], bool], *, max_checks: int = 600) -> tuple[Case, int]:
    """The smallest case found that `still` accepts, and how many candidates were checked."""
    checks = 0
    while checks < max_checks:
        progress = False
        pending = list(edits(case))
        position = 0
        current = json.dumps(case, sort_keys=True)
        while position < len(pending) and checks < max_checks:
            candidate = _copy(case)
            pending[position](candidate)
            if json.dumps(candidate, sort_keys=True) == current:  # the edit changed nothing here
                position += 1
                continue
            checks += 1
            if still(candidate):
                current = json.dumps(candidate, sort_keys=True)
                case, progress = candidate, True
                pending = list(edits(case))  # go on at the same position of the new case's edits
            else:
                position += 1
        if not progress:
            break
    return case, checks
