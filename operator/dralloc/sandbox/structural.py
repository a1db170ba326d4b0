"""Decoding and structural validation of a built-in object against the real OpenAPI definitions, fast.

kube-apiserver first decodes the JSON body into its Go type, then validates the Go
value. The two fail differently, and clients see the difference:

- decoding (`decode`): a value of the wrong JSON type (`count: "two"`, `requests: {}`,
  an int past int64), a quantity that does not parse, and with `fieldValidation=Strict`
  unknown fields, are a 400 BadRequest whose message names the Go struct and field:
  `json: cannot unmarshal string into Go struct field ExactDeviceRequest.spec.devices.
  requests.exactly.count of type int64`. Go keeps the first type error and reads on
  (a bad quantity stops it at once). What decodes is what Go keeps: unknown fields
  and null fields are dropped, null list items become empty items, which validation
  then judges; quantities are kept as the server writes them (`0.5` as `500m`,
  `quantities.py`).
- validation: what is left for the schema to say about the decoded value, as 422
  causes, found on the same walk: enums and unique list-map keys (not required
  fields: upstream checks the decoded zero values, not JSON presence; see `dra.py`).

The generic `jsonschema` validator costs several milliseconds per ResourceClaim (it
re-resolves every `$ref` and builds a validator per level), which alone would cap the
sandbox below the write rate the operator needs. The definitions only use a handful of
keywords (`type`, `format`, `enum`, `properties`, `additionalProperties`, `items`,
`oneOf`, `$ref`, and `x-kubernetes-list-type: map` keys), so one walker handles exactly
those, resolving references through a plain dict lookup.
"""

from __future__ import annotations

import re
from typing import Any

from dralloc.sandbox import errors, quantities, schemas

Causes = list[tuple[str, str]]
_PY_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,), "array": (list,), "string": (str,), "integer": (int,),
    "number": (int, float), "boolean": (bool,),
}
_INT_RANGES = {"int32": 2**31, "int64": 2**63, "": 2**63}
# Fields whose Go type is a named type the OpenAPI definitions do not name: (struct, field) -> type.
_GO_TYPES = {
    ("ExactDeviceRequest", "allocationMode"): "v1.DeviceAllocationMode",
    ("DeviceSubRequest", "allocationMode"): "v1.DeviceAllocationMode",
    ("DeviceConstraint", "matchAttribute"): "v1.FullyQualifiedName",
    ("DeviceConstraint", "distinctAttribute"): "v1.FullyQualifiedName",
    ("DeviceToleration", "operator"): "v1.DeviceTolerationOperator",
    ("DeviceToleration", "effect"): "v1.DeviceTaintEffect",
    ("DeviceTaint", "effect"): "v1.DeviceTaintEffect",
    ("Device", "attributes"): "map[v1.QualifiedName]v1.DeviceAttribute",
    ("Device", "capacity"): "map[v1.QualifiedName]v1.DeviceCapacity",
    ("PodDisruptionBudgetSpec", "unhealthyPodEvictionPolicy"): "v1.UnhealthyPodEvictionPolicyType",
}


# By identity: the definitions are loaded once and kept, and only they are non-empty schemas here.
_TYPE_CACHE: dict[int, list[str]] = {}


def _types(schema: schemas.Schema) -> list[str]:
    if not schema:
        return []
    found = _TYPE_CACHE.get(id(schema))
    if found is None:
        kind = schema.get("type")
        found = [] if kind is None else [t for t in (kind if isinstance(kind, list) else [kind]) if t != "null"]
        _TYPE_CACHE[id(schema)] = found
    return found


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
RAW_EXTENSION = "io.k8s.apimachinery.pkg.runtime.RawExtension"  # any JSON at all; its validation judges it
# A string, or else what Go's int32 takes (IntOrString.UnmarshalJSON): errors name int32.
INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
# What apimachinery's ParseQuantity accepts: a sign, digits with an optional fraction, and one
# suffix (binary, decimal SI, or a decimal exponent). Anything else does not even decode.
QUANTITY_ERROR = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
_QUANTITY = re.compile(r"^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]*)(?:[eE][+-]?[0-9]+|Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?$")


class DecodeError(Exception):
    """The body does not decode into the Go type; the text follows `cannot be handled as a Kind: `."""


def _short(definition: str) -> str:
    return definition.rsplit(".", 1)[-1]


def _go_type(schema: schemas.Schema | None, defs: dict[str, schemas.Schema]) -> str:
    """The Go type a property decodes into, as Go's json errors print it (`[]v1.DeviceRequest`)."""
    if schema is None:
        return "interface {}"
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        parts = name.split(".")
        return f"{parts[-2]}.{parts[-1]}" if len(parts) > 1 else name
    types = _types(schema)
    kind = types[0] if types else ""
    if kind == "array":
        items = schema.get("items")
        return "[]" + _go_type(items if isinstance(items, dict) else None, defs)
    if kind == "object":
        extra = schema.get("additionalProperties")
        return "map[string]" + _go_type(extra if isinstance(extra, dict) else None, defs)
    if kind == "integer":
        return str(schema.get("format") or "int")
    return {"string": "string", "boolean": "bool", "number": "float64"}.get(kind, "interface {}")


def _json_kind(value: Any, types: list[str]) -> str:
    """Go's description of the JSON value in an UnmarshalTypeError (numbers an int cannot hold show)."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return f"number {value!r}" if types[:1] == ["integer"] else "number"
    if isinstance(value, dict):
        return "object"
    return "array" if isinstance(value, list) else "string"


class _Decoder:
    def __init__(self, defs: dict[str, schemas.Schema], strict: bool, group: str) -> None:
        self.defs = defs
        self.strict = strict
        self.group = group
        self.type_error: str | None = None
        self.unknown: list[str] = []
        self.causes: Causes = []  # what validation will say about the decoded value (enums, list-map keys)

    def mismatch(self, value: Any, prop: schemas.Schema, types: list[str], where: tuple[str, str],
                 go_type: str | None) -> None:
        if self.type_error is None:  # Go reports the first one and reads on
            struct, field = where
            self.type_error = (f"json: cannot unmarshal {_json_kind(value, types)} into Go struct field "
                               f"{struct}.{field} of type {go_type or _go_type(prop, self.defs)}")

    def value(self, value: Any, prop: schemas.Schema, path: str, where: tuple[str, str],
              go_type: str | None = None) -> Any:
        """`value` decoded as Go would: nulls normalized, type errors noted, bad quantities raised.

        `path` is the field path with list indexes (for unknown fields), `where` the Go struct
        holding the field and the field's path without indexes (for type errors)."""
        schema: schemas.Schema | None = prop
        while schema is not None and "$ref" in schema:
            name = schema["$ref"].rsplit("/", 1)[-1]
            if name == QUANTITY:
                if isinstance(value, bool) or not isinstance(value, str | int | float) or (
                        isinstance(value, str) and (not _QUANTITY.match(value) or value in ("", "."))):
                    raise DecodeError(QUANTITY_ERROR)  # Quantity's own decoder fails: decoding stops
                return quantities.canonical_text(value)  # stored (and returned) as the server writes it
            if name == RAW_EXTENSION:
                return value
            if name == INT_OR_STRING:
                if not isinstance(value, str) and (isinstance(value, bool) or not isinstance(value, int)
                                                   or not -(2**31) <= value < 2**31):
                    self.mismatch(value, {}, ["integer"], where, "int32")
                return value
            schema = self.defs.get(name)
            if schema is not None and "properties" in schema and isinstance(value, dict):
                return self.struct(value, schema, _short(name), path, where[1])
        if schema is None:
            return value
        if "oneOf" in schema:
            if not any(_type_ok(value, _types(option)) for option in schema["oneOf"]):
                self.mismatch(value, prop, [], where, go_type)
            return value
        types = _types(schema)
        if types and not _type_ok(value, types):
            self.mismatch(value, prop, types, where, go_type)
            return value
        if types[:1] == ["integer"]:
            bound = _INT_RANGES.get(schema.get("format", ""), 2**63)
            if not -bound <= value < bound:
                self.mismatch(value, prop, types, where, go_type)
            return value
        if "enum" in schema and value not in schema["enum"] and not path.startswith("metadata."):
            allowed = ", ".join(f'"{v}"' for v in schema["enum"] if v is not None)
            self.causes.append((path, f"Unsupported value: {errors.go_value(value)}: supported values: {allowed}"))
        if isinstance(value, dict):
            if "properties" in schema:
                return self.struct(value, schema, where[0], path, where[1])
            extra = schema.get("additionalProperties")
            if isinstance(extra, dict):
                return {k: self.value(v, extra, f"{path}[{k}]", where) for k, v in value.items() if v is not None}
        elif isinstance(value, list):
            items = schema.get("items")
            if isinstance(items, dict):
                decoded = [self.item(v, items, f"{path}[{i}]", where) for i, v in enumerate(value)]
                if schema.get("x-kubernetes-list-type") == "map" and not path.startswith("metadata."):
                    self.unique(decoded, schema.get("x-kubernetes-list-map-keys") or [], path)
                return decoded
        return value

    def unique(self, items: list[Any], keys: list[str], path: str) -> None:
        seen: set[tuple[str, ...]] = set()
        for i, item in enumerate(items):
            if not isinstance(item, dict):
                continue
            ident = tuple(str(item.get(k)) for k in keys)
            if ident in seen:
                # resource.k8s.io's declarative validation names the whole item; the older
                # hand-written checks (a pod's containers) the key field and its value.
                if self.group == "resource.k8s.io" or len(keys) != 1:
                    self.causes.append((f"{path}[{i}]", f"Duplicate value: {errors.go_json(item)}"))
                else:
                    self.causes.append((f"{path}[{i}].{keys[0]}", f"Duplicate value: {errors.go_value(item.get(keys[0]))}"))
            seen.add(ident)

    def item(self, value: Any, schema: schemas.Schema, path: str, where: tuple[str, str]) -> Any:
        if value is None:  # Go decodes a null item to the element's zero value
            resolved = schemas.resolve(schema) or {}
            kinds = _types(resolved) or (["object"] if "properties" in resolved else [])
            return {"object": {}, "string": "", "integer": 0, "number": 0, "boolean": False}.get(
                kinds[0] if kinds else "", None)
        return self.value(value, schema, path, where)

    def struct(self, value: dict[str, Any], schema: schemas.Schema, struct: str, path: str,
               field_path: str) -> dict[str, Any]:
        props = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        out: dict[str, Any] = {}
        for key, item in value.items():
            if item is None:
                continue  # null leaves a Go field at its zero value: nothing is stored
            if key in props:
                out[key] = self.value(item, props[key], _join(path, key), (struct, _join(field_path, key)),
                                      _GO_TYPES.get((struct, key)))
            elif isinstance(extra, dict):
                out[key] = self.value(item, extra, f"{path}[{key}]", (struct, field_path))
            elif self.strict and key not in ("apiVersion", "kind"):
                self.unknown.append(_join(path, key))
            # else: Go has no field for it, and the decoded object does not keep it
        return out


def decode(obj: dict[str, Any], *, strict: bool = False,
           old: dict[str, Any] | None = None) -> tuple[dict[str, Any], Causes]:
    """`obj` as kube-apiserver decodes it, with what the schema says against the decoded value
    (enums, unique list-map keys: 422 causes), or `DecodeError` with Go's message (see the module doc).

    With `old` (an update), top-level fields equal to the old ones were decoded and checked
    when they were written, and are skipped: a status write does not pay for its spec again."""
    defs = schemas.definitions(strict)
    name = schemas.definition_name(obj.get("apiVersion", ""), obj.get("kind", ""))
    if name is None:
        return obj, []
    decoder = _Decoder(defs, strict, str(obj.get("apiVersion", "")).rpartition("/")[0])
    struct = _short(name)
    props = defs[name].get("properties") or {}
    out: dict[str, Any] = {}
    for key, value in obj.items():
        if value is None and key != "metadata":
            continue
        if key not in props:
            if strict:
                decoder.unknown.append(key)
        elif old is None or old.get(key) != value:
            out[key] = decoder.value(value, props[key], key, (struct, key), _GO_TYPES.get((struct, key)))
        else:
            out[key] = value
    if decoder.type_error is not None:
        raise DecodeError(decoder.type_error)
    if decoder.unknown:
        raise DecodeError("strict decoding error: " + ", ".join(f'unknown field "{p}"' for p in decoder.unknown))
    return out, decoder.causes
