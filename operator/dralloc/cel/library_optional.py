"""cel-go's optional types (`cel.OptionalTypes()`, latest version), which upstream enables.

`Optional` is CEL's `optional_type(T)`: `optional.of(x)`, `optional.none()`,
`optional.ofNonZeroValue(x)`, `.hasValue()`, `.value()`, `.orValue(d)`, `.or(o)`,
`optional.unwrap(list)` / `list.unwrapOpt()`, `list.first()` / `list.last()`; the syntax
`x.?f`, `x[?k]`, `[?o, ...]` and `{?k: o}` (`grammar`, transpiled by `macros`). Selecting
a field of, or indexing, an optional gives an optional (cel-go's optional chaining):
`device.attributes["d"].?a.b` is none when `a` is absent.

`or` and `orValue` evaluate their argument only when the receiver has no value (cel-go's
decorator), which `macros` arranges; the functions here see evaluated arguments.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from celpy import celtypes
from celpy.evaluation import CELEvalError

from dralloc.cel import operators


class Optional:
    """An optional value; immutable. `NONE` is the one empty optional."""

    __slots__ = ("_value",)
    _EMPTY = object()
    _value: Any

    def __init__(self, value: Any = _EMPTY) -> None:
        object.__setattr__(self, "_value", value)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("Optional is immutable")

    @property
    def has_value(self) -> bool:
        return self._value is not Optional._EMPTY

    @property
    def value(self) -> Any:
        return self._value

    def __eq__(self, other: object) -> bool:
        # cel-go: two optionals are equal when both are empty or both hold equal values.
        if not isinstance(other, Optional):
            return NotImplemented
        if not self.has_value or not other.has_value:
            return self.has_value == other.has_value
        return operators.cel_equal(self._value, other._value)

    def __hash__(self) -> int:
        return 0

    def __repr__(self) -> str:
        return f"optional.of({self._value!r})" if self.has_value else "optional.none()"

    def get(self, field: Any) -> Optional | CELEvalError:
        """`opt.f` in transpiled code (celpy reads fields with `.get`): optional chaining."""
        return select(self, field)

    def index_of(self, key: Any) -> Optional | CELEvalError:
        """`opt[key]` (operators.index): optional chaining."""
        return index(self, key)


NONE = Optional()


def _fail(function: str, value: Any) -> TypeError:
    return operators.no_such_overload(function, value)


def select(target: Any, field: Any) -> Optional | CELEvalError:
    """`target.?field`: the field's value if present, else none (none stays none)."""
    if isinstance(target, Optional):
        if not target.has_value:
            return NONE
        target = target.value
    if isinstance(target, Mapping):
        # Domain maps answer every domain (as an empty map), as upstream's mapper does.
        try:
            found = target[field]
        except KeyError:
            return NONE
        return _present(found)
    raise TypeError(f"no such overload: {operators.type_name(target)}.?{field}")


def _present(found: Any) -> Optional | CELEvalError:
    # An attribute 1.38 could not convert is an error value: reading it optionally fails too,
    # as upstream's map reports the error rather than an absent key (`devices.invalid_attribute`).
    return found if type(found) is CELEvalError else Optional(found)


def index(target: Any, key: Any) -> Optional | CELEvalError:
    """`target[?key]`: a map's value or a list's element if there, else none."""
    if isinstance(target, Optional):
        if not target.has_value:
            return NONE
        target = target.value
    if isinstance(target, list):
        if isinstance(key, celtypes.BoolType) or not isinstance(key, int | float):
            raise TypeError(f"no such overload: list[?{operators.type_name(key)}]")
        position = int(key)
        if float(key) != position or not 0 <= position < len(target):
            return NONE
        return Optional(target[position])
    if isinstance(target, Mapping):
        try:
            found = operators.index(target, key)
        except KeyError:
            return NONE
        return _present(found)
    raise TypeError(f"no such overload: {operators.type_name(target)}[?{operators.type_name(key)}]")


@operators.propagates_errors
def optional_of(value: Any) -> Optional:
    return Optional(value)


@operators.propagates_errors
def optional_of_non_zero_value(value: Any) -> Optional:
    # cel-go's Zeroer values: null, false, 0, 0u, 0.0, "", b"", [], {} (and zero durations/timestamps).
    zero = value is None or (isinstance(value, celtypes.BoolType | int | float | str | bytes | list | Mapping)
                             and not value)
    return NONE if zero else Optional(value)


def optional_none() -> Optional:
    return NONE


def _optional(value: Any, function: str) -> Optional:
    if not isinstance(value, Optional):
        raise _fail(function, value)
    return value


@operators.propagates_errors
def hasValue(value: Any) -> celtypes.BoolType:
    return operators.cel_bool(_optional(value, "hasValue").has_value)


@operators.propagates_errors
def value(value: Any) -> Any:
    opt = _optional(value, "value")
    if not opt.has_value:
        raise ValueError("optional.none() dereference")
    return opt.value


@operators.propagates_errors
def or_value(receiver: Any, default: Any) -> Any:
    if not isinstance(receiver, Optional):
        raise TypeError("no such overload")  # cel-go's or/orValue decorator words it so
    opt = receiver
    return opt.value if opt.has_value else default


@operators.propagates_errors
def or_optional(receiver: Any, other: Any) -> Any:
    if not isinstance(receiver, Optional) or not isinstance(other, Optional):
        raise TypeError("no such overload")  # cel-go's or/orValue decorator words it so
    return receiver if receiver.has_value else other


def _unwrap(items: Any, function: str) -> celtypes.ListType:
    if not isinstance(items, list) or not all(isinstance(i, Optional) for i in items):
        raise operators.no_such_overload(function, items)
    return celtypes.ListType([i.value for i in items if i.has_value])


@operators.propagates_errors
def optional_unwrap(items: Any) -> celtypes.ListType:
    return _unwrap(items, "optional.unwrap")


@operators.propagates_errors
def unwrapOpt(items: Any) -> celtypes.ListType:
    return _unwrap(items, "unwrapOpt")


@operators.propagates_errors
def first(items: Any) -> Optional:
    if not isinstance(items, list):
        raise _fail("first", items)
    return Optional(items[0]) if items else NONE


@operators.propagates_errors
def last(items: Any) -> Optional:
    if not isinstance(items, list):
        raise _fail("last", items)
    return Optional(items[-1]) if items else NONE


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "optional.of": optional_of,
    "optional.ofNonZeroValue": optional_of_non_zero_value,
    "optional.none": optional_none,
    "optional.unwrap": optional_unwrap,
    "hasValue": hasValue,
    "value": value,
    "orValue": or_value,
    "or": or_optional,
    "unwrapOpt": unwrapOpt,
    "first": first,
    "last": last,
}
GLOBALS = frozenset({"optional.of", "optional.ofNonZeroValue", "optional.none", "optional.unwrap"})
