"""The function table of the DRA CEL environment, and the names the checker allows.

celpy calls a method `x.f(y)` as the function `f(x, y)`, with one function per
name, so names shared by several receiver types (`compareTo` on quantities and
semvers, `indexOf` on strings and lists) dispatch on the receiver here.

`GLOBAL_FUNCTIONS` and `MEMBER_FUNCTIONS` list what may be called as `f(...)`
and as `x.f(...)`; anything else is a compile error, as it is upstream.
Transpiled code names each function by `module.qualname`, so every entry must
be a module-level function of an importable module.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from celpy import celtypes
from celpy.evaluation import base_functions

from dralloc.cel import (
    library_format,
    library_lists,
    library_net,
    library_optional,
    library_quantity,
    library_semver,
    library_sets,
    library_strings,
    library_urls,
    operators,
)
from dralloc.cel.library_semver import Semver
from dralloc.model.quantities import Quantity


@operators.propagates_errors
def compareTo(receiver: Any, other: Any) -> Any:
    if isinstance(receiver, Quantity):
        return library_quantity.compare_to(receiver, other)
    if isinstance(receiver, Semver):
        return library_semver.compare_to(receiver, other)
    raise operators.no_such_overload("compareTo", receiver, other)


@operators.propagates_errors
def isGreaterThan(receiver: Any, other: Any) -> Any:
    if isinstance(receiver, Quantity):
        return library_quantity.is_greater_than(receiver, other)
    if isinstance(receiver, Semver):
        return library_semver.is_greater_than(receiver, other)
    raise operators.no_such_overload("isGreaterThan", receiver, other)


@operators.propagates_errors
def isLessThan(receiver: Any, other: Any) -> Any:
    if isinstance(receiver, Quantity):
        return library_quantity.is_less_than(receiver, other)
    if isinstance(receiver, Semver):
        return library_semver.is_less_than(receiver, other)
    raise operators.no_such_overload("isLessThan", receiver, other)


@operators.propagates_errors
def indexOf(receiver: Any, *args: Any) -> Any:
    if isinstance(receiver, str):
        return _string_index("indexOf", library_strings.index_of, receiver, *args)
    return library_lists.index_of(receiver, *args)


@operators.propagates_errors
def lastIndexOf(receiver: Any, *args: Any) -> Any:
    if isinstance(receiver, str):
        return _string_index("lastIndexOf", library_strings.last_index_of, receiver, *args)
    return library_lists.last_index_of(receiver, *args)


def _string_index(name: str, function: Callable[..., Any], receiver: str, *args: Any) -> Any:
    try:
        return function(receiver, *args)
    except TypeError as exc:
        if not str(exc).startswith("no such overload:"):
            raise
        raise operators.no_such_overload(name, receiver, *args) from None


def _strings(receiver: Any, argument: Any) -> tuple[str, str]:
    if not isinstance(receiver, str) or not isinstance(argument, str):
        raise TypeError("no such overload")  # cel-go's standard string functions name nothing
    return str(receiver), str(argument)


@operators.propagates_errors
def startsWith(receiver: Any, prefix: Any) -> celtypes.BoolType:
    text, part = _strings(receiver, prefix)
    return operators.cel_bool(text.startswith(part))


@operators.propagates_errors
def endsWith(receiver: Any, suffix: Any) -> celtypes.BoolType:
    text, part = _strings(receiver, suffix)
    return operators.cel_bool(text.endswith(part))


@operators.propagates_errors
def contains(receiver: Any, part: Any) -> celtypes.BoolType:
    text, sub = _strings(receiver, part)
    return operators.cel_bool(sub in text)


@operators.propagates_errors
def size(value: Any) -> celtypes.IntType:
    if isinstance(value, str | bytes | list) or isinstance(value, Mapping):
        return operators.cel_int(len(value))
    raise TypeError("no such overload: size")  # cel-go's wording, without the argument types


def _time_part(name: str, receiver: Any, *args: Any) -> Any:
    """A timestamp or duration getter; other receivers and a time zone that is not a string fail
    as cel-go words it (celpy would raise AttributeError)."""
    timestamp = isinstance(receiver, celtypes.TimestampType)
    if not (timestamp or isinstance(receiver, celtypes.DurationType)) \
            or (args and not (timestamp and all(isinstance(a, str) for a in args))):
        raise operators.no_such_overload(name, receiver, *args)
    return base_functions[name](receiver, *args)


@operators.propagates_errors
def getDate(receiver: Any, *args: Any) -> Any:
    return _time_part("getDate", receiver, *args)


@operators.propagates_errors
def getDayOfMonth(receiver: Any, *args: Any) -> Any:
    return _time_part("getDayOfMonth", receiver, *args)


@operators.propagates_errors
def getDayOfWeek(receiver: Any, *args: Any) -> Any:
    return _time_part("getDayOfWeek", receiver, *args)


@operators.propagates_errors
def getDayOfYear(receiver: Any, *args: Any) -> Any:
    return _time_part("getDayOfYear", receiver, *args)


@operators.propagates_errors
def getFullYear(receiver: Any, *args: Any) -> Any:
    return _time_part("getFullYear", receiver, *args)


@operators.propagates_errors
def getMonth(receiver: Any, *args: Any) -> Any:
    return _time_part("getMonth", receiver, *args)


@operators.propagates_errors
def getHours(receiver: Any, *args: Any) -> Any:
    return _time_part("getHours", receiver, *args)


@operators.propagates_errors
def getMilliseconds(receiver: Any, *args: Any) -> Any:
    return _time_part("getMilliseconds", receiver, *args)


@operators.propagates_errors
def getMinutes(receiver: Any, *args: Any) -> Any:
    return _time_part("getMinutes", receiver, *args)


@operators.propagates_errors
def getSeconds(receiver: Any, *args: Any) -> Any:
    return _time_part("getSeconds", receiver, *args)


@operators.propagates_errors
def includes(receiver: Any, item: Any) -> Any:
    """DRA's `includes`: membership on a list, equality on a single value."""
    return library_lists.includes(receiver, item)


@operators.propagates_errors
def string(value: Any) -> Any:
    """CEL's `string()` conversion, which the IP and CIDR libraries extend to their types."""
    if isinstance(value, library_net.IP | library_net.CIDR):
        return celtypes.StringType(str(value))
    if isinstance(value, Quantity | Semver | library_urls.URL | library_format.NamedFormat
                  | library_optional.Optional | list | dict | type(None) | type | celtypes.TypeType):
        # cel-go has no string() of these (a dyn value reaches here): celpy would print them.
        raise operators.no_such_overload("string", value)
    return base_functions["string"](value)


# strconv.ParseBool's spellings, which cel-go's string-to-bool conversion accepts.
_BOOL_SPELLINGS = {"1": True, "t": True, "T": True, "TRUE": True, "true": True, "True": True,
                   "0": False, "f": False, "F": False, "FALSE": False, "false": False, "False": False}


@operators.propagates_errors
def bool_(value: Any) -> Any:
    """CEL's `bool()`: a bool, or a string as Go's strconv.ParseBool reads it (celpy's reads
    only "true"/"false" and words its failure as Python's int() does)."""
    if isinstance(value, celtypes.BoolType):
        return value
    if isinstance(value, str):
        parsed = _BOOL_SPELLINGS.get(str(value))
        if parsed is None:
            raise ValueError("type conversion error from 'string' to 'bool'")
        return operators.cel_bool(parsed)
    raise operators.no_such_overload("bool", value)


@operators.propagates_errors
def duration(value: Any) -> Any:
    """CEL's `duration()`; Go's ParseDuration also takes a bare "0", which celpy's does not."""
    if isinstance(value, str) and str(value) in ("0", "+0", "-0"):
        return celtypes.DurationType(0)
    return base_functions["duration"](value)


# CEL's type values: what `type(x)` returns and what the names `int`, `string`, ... denote.
TYPE_VALUES: dict[str, Any] = {
    "bool": celtypes.BoolType, "int": celtypes.IntType, "uint": celtypes.UintType,
    "double": celtypes.DoubleType, "string": celtypes.StringType, "bytes": celtypes.BytesType,
    "list": celtypes.ListType, "map": celtypes.MapType, "null_type": type(None), "type": celtypes.TypeType,
}
_TYPE_CLASSES = tuple(TYPE_VALUES.values())


@operators.propagates_errors
def type_of(value: Any) -> Any:
    """`type(x)`: celpy's, with our map classes (FastMap, DomainMap) reported as map."""
    if isinstance(value, type):  # a type value itself (celpy represents them by the class)
        return celtypes.TypeType
    for kind in type(value).__mro__:
        if kind in _TYPE_CLASSES:
            return kind
    return type(value)


# Names of celpy's base functions that selectors may call as `f(...)`.
_BASE_GLOBALS = frozenset({
    "size", "int", "uint", "double", "string", "bool", "bytes", "duration", "timestamp",
    "type", "matches",
})
_BASE_MEMBERS = frozenset({
    "size", "contains", "startsWith", "endsWith", "matches",
    "getDate", "getDayOfMonth", "getDayOfWeek", "getDayOfYear", "getFullYear", "getMonth",
    "getHours", "getMilliseconds", "getMinutes", "getSeconds",
})

_OWN: dict[str, Callable[..., Any]] = {
    # CEL operators with cel-go's semantics (see operators).
    "_==_": operators.equal,
    "_!=_": operators.not_equal,
    "_<_": operators.less,
    "_<=_": operators.less_equal,
    "_>_": operators.greater,
    "_>=_": operators.greater_equal,
    "_in_": operators.contained_in,
    "!_": operators.logical_not,
    "-_": operators.negate,
    "_+_": operators.add,
    "_-_": operators.subtract,
    "_*_": operators.multiply,
    "_/_": operators.divide,
    "_%_": operators.modulo,
    "_[_]": operators.index,
    # Kubernetes quantity library.
    "quantity": library_quantity.quantity,
    "isQuantity": library_quantity.isQuantity,
    "sign": library_quantity.sign,
    "isInteger": library_quantity.isInteger,
    "asInteger": library_quantity.asInteger,
    "asApproximateFloat": library_quantity.asApproximateFloat,
    "add": library_quantity.add,
    "sub": library_quantity.sub,
    # Kubernetes semver library.
    "semver": library_semver.semver,
    "isSemver": library_semver.isSemver,
    "major": library_semver.major,
    "minor": library_semver.minor,
    "patch": library_semver.patch,
    # Shared member names.
    "compareTo": compareTo,
    "isGreaterThan": isGreaterThan,
    "isLessThan": isLessThan,
    "indexOf": indexOf,
    "lastIndexOf": lastIndexOf,
    "includes": includes,
    **library_strings.FUNCTIONS,
    **library_lists.FUNCTIONS,
    **library_net.FUNCTIONS,
    **library_sets.FUNCTIONS,
    **library_optional.FUNCTIONS,
    **library_urls.FUNCTIONS,
    **library_format.FUNCTIONS,
    "string": string,
    "bool": bool_,
    "startsWith": startsWith, "endsWith": endsWith, "contains": contains, "size": size,
    "getDate": getDate, "getDayOfMonth": getDayOfMonth, "getDayOfWeek": getDayOfWeek, "getDayOfYear": getDayOfYear,
    "getFullYear": getFullYear, "getMonth": getMonth, "getHours": getHours, "getMilliseconds": getMilliseconds,
    "getMinutes": getMinutes, "getSeconds": getSeconds,
    "type": type_of,
    "duration": duration,
}

FUNCTIONS: dict[str, Callable[..., Any]] = {**base_functions, **_OWN}

# Namespaced functions (`sets.contains(...)`), called as `ns.f(...)`; the parser sees a
# method `f` on the identifier `ns`, so the transpiler and the checker look these up first.
QUALIFIED_FUNCTIONS = frozenset(name for name in _OWN if "." in name)
NAMESPACES = frozenset(name.split(".")[0] for name in QUALIFIED_FUNCTIONS)

# `sign` is a global function upstream (`sign(q)`; its overload is not a member one), unlike
# the other quantity functions.
GLOBAL_FUNCTIONS = (_BASE_GLOBALS | {"quantity", "isQuantity", "semver", "isSemver", "sign"}
                    | library_net.GLOBALS | library_optional.GLOBALS | library_urls.GLOBALS
                    | library_format.GLOBALS) - QUALIFIED_FUNCTIONS
MEMBER_FUNCTIONS = _BASE_MEMBERS | {"ip"} | (frozenset(_OWN) - GLOBAL_FUNCTIONS - QUALIFIED_FUNCTIONS - {
    name for name in _OWN if name.startswith("_")
} - {"string"})
