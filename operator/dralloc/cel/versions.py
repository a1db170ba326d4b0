"""Semantic versions as upstream parses them (blang/semver v4), without the CEL engine.

The value type behind version attributes and the Kubernetes `semver` CEL library
(`library_semver`, which re-exports `Semver`). It is apart from the library so that
checking whether a device's attributes convert (`attributes`) needs no celpy: a
`dralloc allocate` whose selectors are all `device.driver == "..."` never loads it.

Upstream parses with `semver.Parse`: strictly MAJOR.MINOR.PATCH, no leading "v", no
leading zeros in numeric parts, optional `-prerelease` and `+build`. `parse_normalized`
first normalizes like upstream's `normalizeAndParse` (strip one "v", strip leading zeros,
pad a missing minor/patch). Ordering follows semver.org precedence as blang implements it;
equality is "compares equal" (`1.0.0+a == 1.0.0+b`), as upstream's `Semver.Equal` does.
"""

from __future__ import annotations

import json
import re
from typing import Any

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
        # blang splits at the first two dots before it looks for "-" and "+": only the third
        # part holds a prerelease and build ("1.2-a.3" has a bad minor number, not a prerelease).
        parts = text.split(".", 2)
        if len(parts) != 3:
            raise ValueError("No Major.Minor.Patch elements found")
        major = _parse_number(parts[0], "major")
        minor = _parse_number(parts[1], "minor")
        core, plus, build_text = parts[2].partition("+")
        patch_text, dash, pre_text = core.partition("-")
        patch = _parse_number(patch_text, "patch")
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
        if plus:
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
