"""What the API server does with a custom resource's `openAPIV3Schema` on every write.

Upstream, in this order: unknown fields are pruned (unless the schema says
`x-kubernetes-preserve-unknown-fields: true` there), `default`s are filled in, and
the result is validated. Our own CRDs (AllocationPolicy, DeviceHealthPolicy) rely on
all three, so the sandbox does them too. Validation covers the structural keywords:
type (with `nullable` and `x-kubernetes-int-or-string`), enum, required, properties,
additionalProperties, items, min/max, minLength/maxLength, minItems/maxItems,
pattern and `x-kubernetes-list-type: set|map` uniqueness. Not checked: `format`,
`oneOf`/`anyOf`/`not` and the CEL rules of `x-kubernetes-validations` (documented).
"""

from __future__ import annotations

import copy
import re
from typing import Any

Obj = dict[str, Any]
Causes = list[tuple[str, str]]
_TYPES: dict[str, tuple[type, ...]] = {"object": (dict,), "array": (list,), "string": (str,),
                                       "integer": (int,), "number": (int, float), "boolean": (bool,)}
_ROOT_KEEP = ("apiVersion", "kind", "metadata")


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def prune_and_default(value: Any, schema: Obj) -> Any:
    """A copy of `value` without the fields `schema` does not know, with its defaults."""
    if isinstance(value, dict) and (schema.get("type") == "object" or "properties" in schema):
        props = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        keep_all = schema.get("x-kubernetes-preserve-unknown-fields") is True
        out = {}
        for key, item in value.items():
            if key in props:
                out[key] = prune_and_default(item, props[key])
            elif isinstance(extra, dict):
                out[key] = prune_and_default(item, extra)
            elif keep_all or extra is True or schema.get("x-kubernetes-embedded-resource"):
                out[key] = item
        for key, sub in props.items():
            if key not in out and "default" in sub:
                out[key] = prune_and_default(copy.deepcopy(sub["default"]), sub)
        return out
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [prune_and_default(item, schema["items"]) for item in value]
    return value


def _type_ok(value: Any, schema: Obj) -> bool:
    kind = schema.get("type")
    if kind is None or (value is None and schema.get("nullable")):
        return True
    if schema.get("x-kubernetes-int-or-string"):
        return isinstance(value, (int, str)) and not isinstance(value, bool)
    expected = _TYPES.get(kind)
    if expected is None:
        return True
    if isinstance(value, bool) and kind != "boolean":
        return False
    return isinstance(value, expected)


def validate(value: Any, schema: Obj, path: str, causes: Causes) -> None:
    if not _type_ok(value, schema):
        causes.append((path, f'Invalid value: "{type(value).__name__}": {path or "body"} in body must be of '
                              f'type {schema.get("type")}: "{type(value).__name__}"'))
        return
    if value is None:
        return
    if "enum" in schema and value not in schema["enum"]:
        allowed = ", ".join(f'"{v}"' for v in schema["enum"])
        causes.append((path, f"Unsupported value: {value!r}: supported values: {allowed}"))
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            causes.append((path, f"Invalid value: {value}: should be greater than or equal to {schema['minimum']}"))
        if "maximum" in schema and value > schema["maximum"]:
            causes.append((path, f"Invalid value: {value}: should be less than or equal to {schema['maximum']}"))
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            causes.append((path, f"Invalid value: {value!r}: should be at least {schema['minLength']} chars long"))
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            causes.append((path, f"Too long: may not be more than {schema['maxLength']} bytes"))
        if "pattern" in schema and not re.search(schema["pattern"], value):
            causes.append((path, f"Invalid value: {value!r}: should match '{schema['pattern']}'"))
    if isinstance(value, dict):
        for key in schema.get("required") or ():
            if key not in value:
                causes.append((_join(path, key), "Required value"))
        props = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        for key, item in value.items():
            if key in props:
                validate(item, props[key], _join(path, key), causes)
            elif isinstance(extra, dict):
                validate(item, extra, _join(path, key), causes)
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            causes.append((path, f"Invalid value: should have at least {schema['minItems']} items"))
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            causes.append((path, f"Too many: {len(value)}: must have at most {schema['maxItems']} items"))
        items = schema.get("items")
        for i, item in enumerate(value):
            if isinstance(items, dict):
                validate(item, items, f"{path}[{i}]", causes)
        _unique(value, schema, path, causes)


def _unique(value: list[Any], schema: Obj, path: str, causes: Causes) -> None:
    kind = schema.get("x-kubernetes-list-type")
    keys = schema.get("x-kubernetes-list-map-keys") or []
    seen: list[Any] = []
    for i, item in enumerate(value):
        ident = tuple((item or {}).get(k) for k in keys) if kind == "map" and isinstance(item, dict) else item
        if kind in ("set", "map") and ident in seen:
            causes.append((f"{path}[{i}]", f"Duplicate value: {ident!r}"))
        seen.append(ident)


def admit(obj: Obj, schema: Obj) -> tuple[Obj, Causes]:
    """The object as the server stores it (pruned, defaulted) and what is wrong with it."""
    body = {k: v for k, v in obj.items() if k not in _ROOT_KEEP}
    shaped = prune_and_default(body, {**schema, "type": "object"})
    result = {**{k: obj[k] for k in _ROOT_KEEP if k in obj}, **shaped}
    causes: Causes = []
    validate(shaped, {**schema, "required": [r for r in schema.get("required") or () if r not in _ROOT_KEEP]},
             "", causes)
    return result, causes
