"""cel-go's sets extension (`ext.Sets`): `sets.contains`, `sets.equivalent`, `sets.intersects`.

Lists as sets: membership is CEL's heterogeneous equality (`sets.contains([1], [1.0])`
is true), duplicates and order do not matter. As in cel-go, `contains(a, b)` checks
b's elements in order and `equivalent` is contains both ways.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from celpy import celtypes

from dralloc.cel import operators


def _lists(function: str, first: Any, second: Any) -> tuple[list[Any], list[Any]]:
    if not isinstance(first, list) or not isinstance(second, list):
        raise operators.no_such_overload(function, first, second)
    return first, second


def _has(items: list[Any], item: Any) -> bool:
    return any(operators.equals_true(value, item) for value in items)


@operators.propagates_errors
def sets_contains(container: Any, sublist: Any) -> celtypes.BoolType:
    items, sub = _lists("sets.contains", container, sublist)
    return operators.cel_bool(all(_has(items, value) for value in sub))


@operators.propagates_errors
def sets_equivalent(first: Any, second: Any) -> celtypes.BoolType:
    a, b = _lists("sets.equivalent", first, second)
    return operators.cel_bool(all(_has(a, v) for v in b) and all(_has(b, v) for v in a))


@operators.propagates_errors
def sets_intersects(first: Any, second: Any) -> celtypes.BoolType:
    a, b = _lists("sets.intersects", first, second)
    return operators.cel_bool(any(_has(b, v) for v in a))


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "sets.contains": sets_contains,
    "sets.equivalent": sets_equivalent,
    "sets.intersects": sets_intersects,
}
