"""Kubernetes' list library (`k8s.io/apiserver/pkg/cel/library/lists.go`) and DRA's `includes`.

Members on lists: `isSorted()`, `sum()`, `min()`, `max()`, `indexOf(x)`,
`lastIndexOf(x)`. Element comparisons use the operators module, so a list
mixing ints and doubles orders numerically, like cel-go. `min`/`max` of an
empty list are errors; `sum` of an empty list is 0.

cel-go's lists extension at version 3 (`ext.Lists(ext.ListsVersion(3))`, in upstream's base
environment since 1.34): `slice`, `flatten`, `sort`, `sortBy` (a macro, in `macros`),
`lists.range`, `reverse`, `distinct`. `sort`/`sortBy` order with CEL's `<` and need keys of
one comparable type, as cel-go does; Go's sort is not stable, so `sortBy` with equal keys
on lists longer than 12 elements may order the tied elements differently here (Python's
sort is stable; Go's insertion sort below 13 elements is too).

`includes` is DRA's (1.36, `dra_includes_dyn_dyn`): membership for a list
receiver, equality for any other receiver. Upstream compiles it whatever the
`DRAListTypeAttributes` gate says, and so do we.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable
from typing import Any

from celpy import celtypes

from dralloc.cel import cost, operators


def _list(value: Any, method: str) -> list[Any]:
    if not isinstance(value, list):
        raise TypeError(f"no such overload: {operators.type_name(value)}.{method}()")
    return value


def _cmp(a: Any, b: Any) -> int:
    if operators.less(a, b):
        return -1
    return 1 if operators.less(b, a) else 0


@operators.propagates_errors
def isSorted(items: Any) -> celtypes.BoolType:
    values = _list(items, "isSorted")
    return celtypes.BoolType(all(not operators.less(b, a) for a, b in itertools.pairwise(values)))


@operators.propagates_errors
def sum(items: Any) -> Any:
    values = _list(items, "sum")
    total: Any = celtypes.IntType(0)
    for index, value in enumerate(values):
        total = value if index == 0 else total + value
    return total


@operators.propagates_errors
def min(items: Any) -> Any:
    values = _list(items, "min")
    if not values:
        raise ValueError("min called on empty list")
    return functools.reduce(lambda a, b: b if _cmp(b, a) < 0 else a, values)


@operators.propagates_errors
def max(items: Any) -> Any:
    values = _list(items, "max")
    if not values:
        raise ValueError("max called on empty list")
    return functools.reduce(lambda a, b: b if _cmp(b, a) > 0 else a, values)


def index_of(items: Any, item: Any) -> celtypes.IntType:
    for position, value in enumerate(_list(items, "indexOf")):
        if operators.equals_true(value, item):
            return celtypes.IntType(position)
    return celtypes.IntType(-1)


def last_index_of(items: Any, item: Any) -> celtypes.IntType:
    values = _list(items, "lastIndexOf")
    for position in range(len(values) - 1, -1, -1):
        if operators.equals_true(values[position], item):
            return celtypes.IntType(position)
    return celtypes.IntType(-1)


def includes(receiver: Any, item: Any) -> celtypes.BoolType:
    if isinstance(receiver, list):
        return celtypes.BoolType(any(operators.equals_true(value, item) for value in receiver))
    return celtypes.BoolType(operators.equals_true(receiver, item))


def _int_argument(value: Any) -> int:
    if not isinstance(value, celtypes.IntType) or isinstance(value, celtypes.BoolType):
        raise TypeError("no such overload")
    return int(value)


@operators.propagates_errors
def slice(items: Any, start: Any, end: Any) -> celtypes.ListType:
    values, first, last = _list(items, "slice"), _int_argument(start), _int_argument(end)
    if first < 0 or last < 0:
        raise ValueError(f"cannot slice({first}, {last}), negative indexes not supported")
    if first > last:
        raise ValueError(f"cannot slice({first}, {last}), start index must be less than or equal to end index")
    if len(values) < last:
        raise ValueError(f"cannot slice({first}, {last}), list is length {len(values)}")
    return celtypes.ListType(values[first:last])


def _flatten(values: list[Any], depth: int) -> list[Any]:
    flat: list[Any] = []
    for value in values:
        if isinstance(value, list) and depth > 0:
            flat.extend(_flatten(value, depth - 1))
        else:
            flat.append(value)
    return flat


@operators.propagates_errors
def flatten(items: Any, depth: Any = None) -> celtypes.ListType:
    levels = 1 if depth is None else _int_argument(depth)
    if levels < 0:
        raise ValueError("level must be non-negative")
    return celtypes.ListType(_flatten(_list(items, "flatten"), levels))


# The element types cel-go's sort accepts (its comparableTypes).
_SORTABLE = (celtypes.IntType, celtypes.UintType, celtypes.DoubleType, celtypes.StringType,
             celtypes.BytesType, celtypes.DurationType, celtypes.TimestampType)


def sort_by_keys(items: Any, keys: Any) -> celtypes.ListType:
    """cel-go's @sortByAssociatedKeys: the items in the order of their keys."""
    values, order = _list(items, "sort"), _list(keys, "sort")
    if len(values) != len(order):
        raise ValueError("@sortByAssociatedKeys() expected a list of the same size as the associated keys "
                         f"list, but got {len(values)} and {len(order)} elements respectively")
    if not values:
        return celtypes.ListType(values)
    first = order[0]
    if not isinstance(first, _SORTABLE):
        raise ValueError("list elements must be comparable")
    if any(type(key) is not type(first) for key in order):
        raise ValueError("list elements must have the same type")
    def by_key(i: int, j: int) -> int:
        return _cmp(order[i], order[j])

    positions = sorted(range(len(values)), key=functools.cmp_to_key(by_key))
    return celtypes.ListType([values[i] for i in positions])


@operators.propagates_errors
def sort(items: Any) -> celtypes.ListType:
    return sort_by_keys(items, items)


@operators.propagates_errors
def reverse(items: Any) -> celtypes.ListType:
    return celtypes.ListType(list(reversed(_list(items, "reverse"))))


@operators.propagates_errors
def distinct(items: Any) -> celtypes.ListType:
    unique: list[Any] = []
    for value in _list(items, "distinct"):
        if not any(operators.equals_true(value, seen) for seen in unique):
            unique.append(value)
    return celtypes.ListType(unique)


@operators.propagates_errors
def lists_range(count: Any) -> celtypes.ListType:
    n = _int_argument(count)
    if n < 0:
        raise ValueError(f"lists.range: size must be non-negative, got {n}")
    if n > cost.LIMIT:  # cel-go's default maxRangeSize
        raise ValueError(f"lists.range: size {n} exceeds maximum allowed ({cost.LIMIT})")
    cost.charge(n)
    return celtypes.ListType([operators.cel_int(i) for i in range(n)])


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "slice": slice,
    "flatten": flatten,
    "sort": sort,
    "reverse": reverse,
    "distinct": distinct,
    "lists.range": lists_range,
    "isSorted": isSorted,
    "sum": sum,
    "min": min,
    "max": max,
}
