"""Raw API JSON <-> model objects: the one place that maps `kind` to a type.

`parse` turns a decoded JSON/YAML object into its model and reports malformed
input as `ObjectError`, naming the object and the field path the way the API
server names them (`spec.devices[0].capacity.memory.value`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import pydantic

from dralloc.model import claims, classes, devices, nodes, pods, taints
from dralloc.model.base import ApiModel, Object, raw_of

KINDS: dict[str, type[Object]] = {
    "DeviceClass": classes.DeviceClass,
    "ResourceClaim": claims.ResourceClaim,
    "ResourceClaimTemplate": claims.ResourceClaimTemplate,
    "ResourceSlice": devices.ResourceSlice,
    "DeviceTaintRule": taints.DeviceTaintRule,
    "Node": nodes.Node,
    "Namespace": nodes.Namespace,
    "Pod": pods.Pod,
}


class ObjectError(ValueError):
    """An object that does not have the shape its kind requires."""

    def __init__(self, ref: str, field: str, message: str) -> None:
        super().__init__(f"{ref}: {field}: {message}" if field else f"{ref}: {message}")
        self.ref = ref
        self.field = field
        self.detail = message


def _field_path(loc: tuple[int | str, ...]) -> str:
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else str(part)
    return path


def _describe(raw: Mapping[str, Any]) -> str:
    kind = raw.get("kind") or "object"
    meta = raw.get("metadata") if isinstance(raw.get("metadata"), Mapping) else {}
    assert isinstance(meta, Mapping)
    name = meta.get("name") or meta.get("generateName") or "<unnamed>"
    ns = meta.get("namespace")
    return f"{kind} {ns}/{name}" if ns else f"{kind} {name}"


def parse_as(model: type[Object], raw: Mapping[str, Any]) -> Any:
    """Validate `raw` as `model`; malformed input raises ObjectError naming object and field.

    A JSON `null` field is an absent one, as Go decodes it (`requests: null` is no requests).
    """
    try:
        return model.model_validate(raw)
    except pydantic.ValidationError as exc:
        error = exc
    stripped = _without_nulls(raw)
    if stripped != raw:
        try:
            return model.model_validate(stripped)
        except pydantic.ValidationError as exc:
            error = exc
    first = error.errors()[0]
    loc = tuple(p for p in first["loc"] if p not in ("function-plain",))
    raise ObjectError(_describe(raw), _field_path(loc), first["msg"]) from error


def _without_nulls(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def parse(raw: Mapping[str, Any]) -> Object | None:
    """The model for a raw object of a kind we know; None for other kinds."""
    if not isinstance(raw, Mapping):
        raise ObjectError("object", "", f"expected a mapping, got {type(raw).__name__}")
    model = KINDS.get(str(raw.get("kind", "")))
    if model is None:
        return None
    parsed: Object = parse_as(model, raw)
    return parsed


def flatten(documents: Iterable[Any]) -> Iterator[Mapping[str, Any]]:
    """Objects from decoded documents, unpacking `kind: List` (as `kubectl get -o yaml` writes)."""
    for doc in documents:
        if doc is None:
            continue
        if isinstance(doc, Mapping) and str(doc.get("kind", "")).endswith("List") and "items" in doc:
            yield from flatten(doc.get("items") or [])
        elif isinstance(doc, Mapping):
            yield doc
        else:
            raise ObjectError("document", "", f"expected a Kubernetes object, got {type(doc).__name__}")


def to_raw(model: ApiModel) -> dict[str, Any]:
    """API JSON for a model, including fields we read but do not model."""
    return raw_of(model)
