"""Kubernetes' list library (`k8s.io/apiserver/pkg/cel/library/lists.go`) and DRA's `includes`.

Members on lists: `isSorted()`, `sum()`, `min()`, `max()`, `indexOf(x)`,
`lastIndexOf(x)`. Element comparisons use the operators module, so a list
mixing ints and doubles orders numerically, like cel-go. `min`/`max` of an
empty list are errors; `sum` of an empty list is 0.

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

from dralloc.cel import operators


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


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "isSorted": isSorted,
    "sum": sum,
    "min": min,
    "max": max,
}
