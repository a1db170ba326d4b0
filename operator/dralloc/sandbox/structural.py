"""Structural validation of an object against the real OpenAPI definitions, fast.

The generic `jsonschema` validator costs several milliseconds per ResourceClaim (it
re-resolves every `$ref` and builds a validator per level), which alone would cap the
sandbox below the write rate the operator needs. The definitions only use a handful of
keywords (`type`, `enum`, `properties`, `required`, `additionalProperties`, `items`,
`oneOf`, `$ref`, and `x-kubernetes-list-type: map` keys), so this walker checks exactly
those, resolving references through a plain dict lookup. Findings are (field path,
message) pairs in the API server's style: `spec.devices.requests[0].exactly.count`.
"""

from __future__ import annotations

import re
from typing import Any

from dralloc.sandbox import schemas

Causes = list[tuple[str, str]]
_PY_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,), "array": (list,), "string": (str,), "integer": (int,),
    "number": (int, float), "boolean": (bool,),
}


def _types(schema: schemas.Schema) -> list[str]:
    kind = schema.get("type")
    if kind is None:
        return []
    return [t for t in (kind if isinstance(kind, list) else [kind]) if t != "null"]


def _type_ok(value: Any, types: list[str]) -> bool:
    for t in types:
        expected = _PY_TYPES.get(t)
        if expected is None:
            return True
        if isinstance(value, bool) and t != "boolean":
            continue
        if isinstance(value, expected):
            return True
    return False


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
# What apimachinery's ParseQuantity accepts: a sign, digits with an optional fraction, and one
# suffix (binary, decimal SI, or a decimal exponent). Anything else does not even decode.
QUANTITY_ERROR = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
_QUANTITY = re.compile(r"^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]*)(?:[eE][+-]?[0-9]+|Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?$")


def check(value: Any, schema: schemas.Schema | None, path: str, causes: Causes, *, strict: bool,
          defs: dict[str, schemas.Schema], required: bool = True) -> None:
    while schema is not None and "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        if name == QUANTITY and isinstance(value, str) and (not _QUANTITY.match(value) or value in ("", ".")):
            causes.append((path, QUANTITY_ERROR))
            return
        schema = defs.get(name)
    if schema is None or value is None:
        return
    if "oneOf" in schema:
        if not any(_type_ok(value, _types(option)) for option in schema["oneOf"]):
            kinds = sorted({t for option in schema["oneOf"] for t in _types(option)})
            causes.append((path, f"Invalid value: {value!r}: must be one of the types {', '.join(kinds)}"))
        return
    types = _types(schema)
    if types and not _type_ok(value, types):
        causes.append((path, f"Invalid value: {value!r}: must be of type {types[0]}"))
        return
    if "enum" in schema and value not in schema["enum"]:
        allowed = ", ".join(f'"{v}"' for v in schema["enum"] if v is not None)
        causes.append((path, f"Unsupported value: {value!r}: supported values: {allowed}"))
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        for key in (schema.get("required") or ()) if required else ():
            if key not in value:
                causes.append((_join(path, key), "Required value"))
        extra = schema.get("additionalProperties")
        for key, item in value.items():
            if key in props:
                check(item, props[key], _join(path, key), causes, strict=strict, defs=defs, required=required)
            elif isinstance(extra, dict):
                check(item, extra, f"{path}[{key}]", causes, strict=strict, defs=defs, required=required)
            elif strict and (extra is False or props) and key not in ("apiVersion", "kind"):
                causes.append((_join(path, key), f'Invalid value: unknown field "{_join(path, key)}"'))
    elif isinstance(value, list):
        item_schema = schema.get("items")
        keys = schema.get("x-kubernetes-list-map-keys") if schema.get("x-kubernetes-list-type") == "map" else None
        seen: set[tuple[Any, ...]] = set()
        for i, item in enumerate(value):
            if item is None and isinstance(item_schema, dict):
                # Go decodes it to an empty item, which then fails that item's own validation;
                # never an item to skip (the rules after the schema expect the right shapes).
                causes.append((f"{path}[{i}]", "Invalid value: null: must not be null"))
                continue
            if isinstance(item_schema, dict):
                check(item, item_schema, f"{path}[{i}]", causes, strict=strict, defs=defs, required=required)
            if keys and isinstance(item, dict):
                ident = tuple(str(item.get(k)) for k in keys)
                if ident in seen:
                    causes.append((f"{path}[{i}]", f"Duplicate value: {dict(zip(keys, ident, strict=True))}"))
                seen.add(ident)


def validate(obj: dict[str, Any], *, strict: bool = False, old: dict[str, Any] | None = None,
             required: bool = True) -> Causes:
    """Causes for `obj` against the definition of its apiVersion and kind (none if unknown).

    `required=False` skips required-field checks: for the older core types the schema's
    `required` only mirrors JSON tags without omitempty, not what the server validates.

    With `old` (an update), top-level fields equal to the old ones were checked when they
    were written and are skipped: a status write does not pay for its spec again.
    """
    defs = schemas.definitions(strict)
    name = schemas.definition_name(obj.get("apiVersion", ""), obj.get("kind", ""))
    if name is None:
        return []
    causes: Causes = []
    if old is not None:
        props = defs[name].get("properties") or {}
        for key, value in obj.items():
            if key in props and old.get(key) != value:
                check(value, props[key], key, causes, strict=strict, defs=defs, required=required)
    else:
        check(obj, defs[name], "", causes, strict=strict, defs=defs, required=required)
    return [(p, m) for p, m in causes if not p.startswith("metadata.") or p in ("metadata.name",)]
