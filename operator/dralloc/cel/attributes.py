"""Device attribute values in their plain form, and whether they convert, without the CEL engine.

An attribute (API JSON such as `{"int": 1}` or `{"versions": [...]}`) becomes a plain
Python value (`int`/`bool`/`str`, a `Semver`, tuples of those), or fails to convert with
the reason upstream's `getAttributeValue` gives. `devices` builds the CEL `device` from
these values. This module imports no celpy, so the allocator can check that a device
converts (which even `device.driver == "..."` requires, as upstream converts the whole
device first) without loading the CEL engine: only compiling a selector does.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from dralloc.cel.versions import Semver

INT64_MIN = -(2**63)  # CEL's int range; an attribute outside it does not convert
INT64_MAX = 2**63 - 1


def split_qualified_name(name: str, default_domain: str) -> tuple[str, str]:
    """`gpu.example.com/numa` -> ("gpu.example.com", "numa"); `numa` -> (driver, "numa")."""
    domain, sep, ident = name.partition("/")
    if not sep:
        return default_domain, name
    return domain, ident


def _scalar(kind: str, raw: Any) -> Any:
    """The plain value of one scalar attribute; ValueError names what is wrong with it."""
    if kind == "string":
        if not isinstance(raw, str):
            raise ValueError(f"string value must be a string, got {raw!r}")
        return str(raw)
    if kind == "int":
        if isinstance(raw, bool) or not isinstance(raw, int):
            raise ValueError(f"int value must be an integer, got {raw!r}")
        if not INT64_MIN <= raw <= INT64_MAX:
            raise ValueError("overflow")  # celtypes.IntType's wording, which the conversion used to give
        return int(raw)
    if kind == "bool":
        if not isinstance(raw, bool):
            raise ValueError(f"bool value must be a boolean, got {raw!r}")
        return bool(raw)
    if isinstance(raw, str):
        return _version(raw)
    return _parse_version(raw)


@functools.lru_cache(maxsize=4096)
def _version(raw: str) -> Semver:
    # Semver values are immutable and drivers publish few distinct versions: parse each once.
    return _parse_version(raw)


def _parse_version(raw: Any) -> Semver:
    try:
        return Semver.parse(raw)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"parse semantic version: {exc}") from None


_SCALAR_KINDS = ("int", "bool", "string", "version")
_LIST_KINDS = {"ints": "int", "bools": "bool", "strings": "string", "versions": "version"}


def plain_attribute_value(raw: Mapping[str, Any], *, list_values: bool = True) -> Any:
    """The plain value of one attribute in API JSON form, e.g. {"int": 1} or {"strings": [...]}.

    Lists become tuples: the value is shared by every selector evaluated on the device.
    `list_values=False` is upstream 1.36 with DRAListTypeAttributes off: a list value does
    not convert ("unsupported attribute value"); 1.37 converts lists whatever the gate.
    """
    for kind, scalar_kind in _LIST_KINDS.items():
        values = raw.get(kind)
        if values is not None:
            if not list_values:
                raise ValueError("unsupported attribute value")
            return tuple([_scalar(scalar_kind, v) for v in values])
    for kind in _SCALAR_KINDS:
        value = raw.get(kind)
        if value is not None:
            return _scalar(kind, value)
    raise ValueError("unsupported attribute value")


def check_attribute_value(kind: str | None, value: Any, *, list_values: bool = True) -> None:
    """Raise ValueError exactly when `plain_attribute_value({kind: value}, list_values=...)` would.

    `kind` None means no value. Builds nothing: for callers that only need to know whether
    a device converts at all.
    """
    if kind is None:
        raise ValueError("unsupported attribute value")
    scalar_kind = _LIST_KINDS.get(kind)
    if scalar_kind is None:
        _scalar(kind, value)
        return
    if not list_values:
        raise ValueError("unsupported attribute value")
    for item in value:
        _scalar(scalar_kind, item)
