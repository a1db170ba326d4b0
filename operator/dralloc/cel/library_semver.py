"""The Kubernetes `semver` CEL library and the value type behind version attributes.

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
import json
import re
from typing import Any

from celpy import celtypes

from dralloc.cel import operators

_NUMERIC = re.compile(r"^(0|[1-9][0-9]*)$")
_IDENTIFIER = re.compile(r"^[0-9A-Za-z-]+$")
_UINT64_MAX = 2**64 - 1


def _go_quote(text: str) -> str:
    """Go's %q, which blang/semver's messages use for the offending part."""
    return json.dumps(text, ensure_ascii=False)


def _parse_number(part: str, what: str) -> int:
    if part == "":
        # blang finds no bad character in "", then strconv.ParseUint refuses it.
        raise ValueError('strconv.ParseUint: parsing "": invalid syntax')
    if not part.isascii() or not part.isdigit():
        raise ValueError(f"Invalid character(s) found in {what} number {_go_quote(part)}")
    if len(part) > 1 and part[0] == "0":
        raise ValueError(f"{what.capitalize()} number must not contain leading zeroes {_go_quote(part)}")
    number = int(part)
    if number > _UINT64_MAX:
        raise ValueError(f"strconv.ParseUint: parsing {_go_quote(part)}: value out of range")
    return number


class Semver:
    """An immutable semantic version (the CEL type `kubernetes.Semver`)."""

    __slots__ = ("_key", "build", "major", "minor", "patch", "prerelease")

    major: int
    minor: int
    patch: int
    prerelease: tuple[str, ...]
    build: tuple[str, ...]
    _key: tuple[Any, ...]

    def __init__(self, major: int, minor: int, patch: int,
                 prerelease: tuple[str, ...] = (), build: tuple[str, ...] = ()) -> None:
        object.__setattr__(self, "major", major)
        object.__setattr__(self, "minor", minor)
        object.__setattr__(self, "patch", patch)
        object.__setattr__(self, "prerelease", prerelease)
        object.__setattr__(self, "build", build)
        # Release (no prerelease) sorts after any prerelease of the same version;
        # numeric identifiers sort before alphanumeric ones.
        pre_key: tuple[Any, ...] = tuple(
            (0, int(p), "") if _NUMERIC.match(p) else (1, 0, p) for p in prerelease
        )
        key = (major, minor, patch, 1 if not prerelease else 0, pre_key)
        object.__setattr__(self, "_key", key)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("Semver is immutable")

    @classmethod
    def parse(cls, text: str) -> Semver:
        """Strict semver 2.0 parsing, as blang/semver `Parse`."""
        if not isinstance(text, str):
            raise TypeError(f"no such overload: semver({type(text).__name__})")
        if text == "":
            raise ValueError("Version string empty")
        core, _, build_text = text.partition("+")
        core, dash, pre_text = core.partition("-")
        parts = core.split(".")
        if len(parts) != 3:
            raise ValueError("No Major.Minor.Patch elements found")
        major = _parse_number(parts[0], "major")
        minor = _parse_number(parts[1], "minor")
        patch = _parse_number(parts[2], "patch")
        prerelease: tuple[str, ...] = ()
        if dash:
            prerelease = tuple(pre_text.split("."))
            for ident in prerelease:
                if ident == "":
                    raise ValueError("Prerelease is empty")
                if not _IDENTIFIER.match(ident):
                    raise ValueError(f"Invalid character(s) found in prerelease {_go_quote(ident)}")
                if ident.isdigit() and len(ident) > 1 and ident[0] == "0":
                    raise ValueError(f"Numeric PreRelease version must not contain leading zeroes {_go_quote(ident)}")
        build: tuple[str, ...] = ()
        if "+" in text:
            build = tuple(build_text.split("."))
            for ident in build:
                if ident == "":
                    raise ValueError("Build meta data is empty")
                if not _IDENTIFIER.match(ident):
                    raise ValueError(f"Invalid character(s) found in build meta data {_go_quote(ident)}")
        return cls(major, minor, patch, prerelease, build)

    @classmethod
    def parse_normalized(cls, text: str) -> Semver:
        """Upstream's `normalizeAndParse`: drop a "v", leading zeros, pad to three parts."""
        if text.startswith("v"):
            text = text[1:]
        parts = text.split(".", 2)
        for index, part in enumerate(parts):
            if len(part) > 1:
                stripped = part.lstrip("0")
                if stripped == "" or not stripped[0].isdigit():
                    stripped = "0" + stripped
                parts[index] = stripped
        if len(parts) < 3:
            if any(c in parts[-1] for c in "+-"):
                raise ValueError("short version cannot contain PreRelease/Build meta data")
            parts.extend(["0"] * (3 - len(parts)))
        return cls.parse(".".join(parts))

    def compare(self, other: Semver) -> int:
        return int(self._key > other._key) - int(self._key < other._key)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Semver):
            return NotImplemented
        return bool(self._key == other._key)

    def __hash__(self) -> int:
        return hash(self._key)

    def __str__(self) -> str:
        text = f"{self.major}.{self.minor}.{self.patch}"
        if self.prerelease:
            text += "-" + ".".join(self.prerelease)
        if self.build:
            text += "+" + ".".join(self.build)
        return text

    def __repr__(self) -> str:
        return f"Semver({str(self)!r})"


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
