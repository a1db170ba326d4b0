"""The Kubernetes `quantity` CEL library over `dralloc.model.quantities.Quantity`.

Device capacities reach CEL as `Quantity` objects themselves (exact fractions),
so `device.capacity["d"].memory.compareTo(quantity("40Gi"))` never goes through
a float. The functions mirror `k8s.io/apiserver/pkg/cel/library/quantity.go`:
`quantity`, `isQuantity`, and the members `sign`, `isInteger`, `asInteger`,
`asApproximateFloat`, `add`, `sub`, `compareTo`, `isGreaterThan`, `isLessThan`.

Upstream's `isInteger`/`asInteger` rely on `Quantity.AsInt64`, which fails for
fractions *and* for integers outside int64; both are mirrored. Methods shared
with semver (`compareTo`, `isLessThan`, `isGreaterThan`) are dispatched in
`functions`; here they take a Quantity receiver.
"""

from __future__ import annotations

import functools
from typing import Any

from celpy import celtypes

from dralloc.cel import operators
from dralloc.model.quantities import Quantity, QuantityError

_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1


# Selectors repeat the same literals (`quantity("40Gi")`) for every device; Quantity
# is immutable, so parsed values can be shared.
@functools.lru_cache(maxsize=1024)
def _parse(text: str) -> Quantity:
    try:
        return Quantity.parse(text)
    except QuantityError as exc:
        # celpy only turns these exact classes into CEL errors. resource.ParseQuantity's
        # format error does not repeat the text; ours does (for the API's messages).
        message = str(exc)
        if message.startswith(_FORMAT_WRONG):
            message = _FORMAT_WRONG
        raise ValueError(message) from None


_FORMAT_WRONG = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"


@operators.propagates_errors
def quantity(text: Any) -> Quantity:
    """`quantity(<string>)`."""
    if not isinstance(text, str):
        raise TypeError(f"no such overload: quantity({operators.type_name(text)})")
    return _parse(str(text))


@operators.propagates_errors
def isQuantity(text: Any) -> celtypes.BoolType:
    if not isinstance(text, str):
        raise TypeError(f"no such overload: isQuantity({operators.type_name(text)})")
    try:
        Quantity.parse(str(text))
    except QuantityError:
        return celtypes.BoolType(False)
    return celtypes.BoolType(True)


def _receiver(value: Any, method: str) -> Quantity:
    if not isinstance(value, Quantity):
        raise operators.no_such_overload(method, value)
    return value


def _operand(value: Any, method: str) -> Quantity:
    if isinstance(value, Quantity):
        return value
    if isinstance(value, celtypes.IntType) and not isinstance(value, celtypes.BoolType):
        return Quantity(int(value))
    raise TypeError(f"no such overload: kubernetes.Quantity.{method}({operators.type_name(value)})")


def _fits_int64(value: Quantity) -> bool:
    return value.is_integer() and _INT64_MIN <= value.value <= _INT64_MAX


@operators.propagates_errors
def sign(value: Any) -> celtypes.IntType:
    return celtypes.IntType(_receiver(value, "sign").sign())


@operators.propagates_errors
def isInteger(value: Any) -> celtypes.BoolType:
    return celtypes.BoolType(_fits_int64(_receiver(value, "isInteger")))


@operators.propagates_errors
def asInteger(value: Any) -> celtypes.IntType:
    q = _receiver(value, "asInteger")
    if not _fits_int64(q):
        raise ValueError("cannot convert value to integer")  # upstream names no value
    return celtypes.IntType(int(q.value))


@operators.propagates_errors
def asApproximateFloat(value: Any) -> celtypes.DoubleType:
    return celtypes.DoubleType(_receiver(value, "asApproximateFloat").as_approximate_float())


@operators.propagates_errors
def add(value: Any, other: Any) -> Quantity:
    return _receiver(value, "add") + _operand(other, "add")


@operators.propagates_errors
def sub(value: Any, other: Any) -> Quantity:
    return _receiver(value, "sub") - _operand(other, "sub")


def compare_to(receiver: Quantity, other: Any) -> celtypes.IntType:
    if not isinstance(other, Quantity):
        raise operators.no_such_overload("compareTo", receiver, other)
    return operators.cel_int(receiver.compare(other))


def is_greater_than(receiver: Quantity, other: Any) -> celtypes.BoolType:
    if not isinstance(other, Quantity):
        raise operators.no_such_overload("isGreaterThan", receiver, other)
    return operators.cel_bool(receiver.compare(other) > 0)


def is_less_than(receiver: Quantity, other: Any) -> celtypes.BoolType:
    if not isinstance(other, Quantity):
        raise operators.no_such_overload("isLessThan", receiver, other)
    return operators.cel_bool(receiver.compare(other) < 0)
