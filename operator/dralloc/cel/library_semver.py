"""The Kubernetes `semver` CEL library over the value type of version attributes (`versions`).

Upstream parses with blang/semver v4 (`semver.Parse`): strictly
MAJOR.MINOR.PATCH, no leading "v", no leading zeros in numeric parts, optional
`-prerelease` and `+build`. Version attributes of a device and `semver(str)` both
use that parser, so one `Semver.parse` serves both. `semver(str, true)` first
normalizes like upstream's `normalizeAndParse` (strip one "v", strip leading
zeros, pad a missing minor/patch).

Ordering follows semver.org precedence as blang implements it: build metadata
never matters, a release sorts after its prereleases, numeric prerelease parts
sort before alphanumeric ones. Equality (CEL `==`) is "compares equal", so
`1.0.0+a == 1.0.0+b`, as upstream's `Semver.Equal` does.

Functions raise plain `ValueError`/`TypeError`: celpy's transpiled code turns
exactly those classes into CEL error values (which `||`/`&&` may absorb).
"""

from __future__ import annotations

import functools
from typing import Any

from celpy import celtypes

from dralloc.cel import operators
from dralloc.cel.versions import Semver as Semver  # re-exported: the library's value type


def _text(value: Any, function: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"no such overload: {function}({type(value).__name__})")
    return value


def _flag(value: Any, function: str) -> bool:
    if not isinstance(value, celtypes.BoolType):
        raise TypeError(f"no such overload: {function}(string, {type(value).__name__})")
    return bool(value)


@operators.propagates_errors
def semver(text: Any, normalize: Any = None) -> Semver:
    """`semver(<string>)` and `semver(<string>, <bool normalize>)`."""
    value = _text(text, "semver")
    return _parse(str(value), normalize is not None and _flag(normalize, "semver"))


# Selectors repeat the same literals for every device; Semver is immutable.
@functools.lru_cache(maxsize=1024)
def _parse(text: str, normalize: bool) -> Semver:
    try:
        return Semver.parse_normalized(text) if normalize else Semver.parse(text)
    except ValueError as exc:
        raise ValueError(str(exc)) from None  # blang/semver's message, as upstream returns it


@operators.propagates_errors
def isSemver(text: Any, normalize: Any = None) -> celtypes.BoolType:
    value = _text(text, "isSemver")
    try:
        if normalize is not None and _flag(normalize, "isSemver"):
            Semver.parse_normalized(value)
        else:
            Semver.parse(value)
    except ValueError:
        return celtypes.BoolType(False)
    return celtypes.BoolType(True)


def _receiver(value: Any, method: str) -> Semver:
    if not isinstance(value, Semver):
        raise operators.no_such_overload(method, value)
    return value


def compare_to(receiver: Semver, other: Any) -> celtypes.IntType:
    return operators.cel_int(receiver.compare(_receiver(other, "compareTo")))


def is_less_than(receiver: Semver, other: Any) -> celtypes.BoolType:
    return operators.cel_bool(receiver.compare(_receiver(other, "isLessThan")) < 0)


def is_greater_than(receiver: Semver, other: Any) -> celtypes.BoolType:
    return operators.cel_bool(receiver.compare(_receiver(other, "isGreaterThan")) > 0)


def _as_cel_int(number: int) -> celtypes.IntType:
    # Go's types.Int(uint64) wraps; CEL ints are int64.
    if number >= 2**63:
        number -= 2**64
    return celtypes.IntType(number)


@operators.propagates_errors
def major(value: Any) -> celtypes.IntType:
    return _as_cel_int(_receiver(value, "major").major)


@operators.propagates_errors
def minor(value: Any) -> celtypes.IntType:
    return _as_cel_int(_receiver(value, "minor").minor)


@operators.propagates_errors
def patch(value: Any) -> celtypes.IntType:
    return _as_cel_int(_receiver(value, "patch").patch)
