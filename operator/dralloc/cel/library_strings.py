"""Kubernetes' string extensions (cel-go `ext.Strings`) and regex library.

Indices count Unicode code points, as cel-go does (Python strings already do).
Out-of-range indices are errors, not clamps. `find`/`findAll` are
`k8s.io/apiserver/pkg/cel/library/regex.go`; `matches` is CEL's own (celpy's,
RE2 via google-re2). Regexes use RE2 syntax here as upstream does; an invalid
pattern is a runtime error (upstream reports constant patterns at compile time).

Not provided: `format`, `strings.quote` and `reverse` (see the package report).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import re2  # type: ignore[import-untyped]  # google-re2, celpy's regex engine
from celpy import celtypes

from dralloc.cel import operators

_S = celtypes.StringType


def _int(value: Any, function: str) -> int:
    if not isinstance(value, celtypes.IntType) or isinstance(value, celtypes.BoolType):
        raise TypeError(f"no such overload: string.{function}({operators.type_name(value)})")
    return int(value)


def _str(value: Any, function: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"no such overload: {function}({operators.type_name(value)})")
    return str(value)


@operators.propagates_errors
def charAt(text: Any, position: Any) -> _S:
    s, i = _str(text, "charAt"), _int(position, "charAt")
    if i < 0 or i > len(s):
        raise IndexError(f"index out of range: {i}")
    return _S(s[i:i + 1])


def index_of(text: str, sub: Any, offset: Any = None) -> celtypes.IntType:
    needle = _str(sub, "indexOf")
    start = 0 if offset is None else _int(offset, "indexOf")
    if start < 0 or start > len(text):
        raise IndexError(f"index out of range: {start}")
    return celtypes.IntType(text.find(needle, start))


def last_index_of(text: str, sub: Any, offset: Any = None) -> celtypes.IntType:
    needle = _str(sub, "lastIndexOf")
    end = len(text) if offset is None else _int(offset, "lastIndexOf")
    if end < 0 or end > len(text):
        raise IndexError(f"index out of range: {end}")
    # The match may start at `end` at the latest.
    return celtypes.IntType(text.rfind(needle, 0, end + len(needle)))


@operators.propagates_errors
def lowerAscii(text: Any) -> _S:
    return _S("".join(c.lower() if c.isascii() else c for c in _str(text, "lowerAscii")))


@operators.propagates_errors
def upperAscii(text: Any) -> _S:
    return _S("".join(c.upper() if c.isascii() else c for c in _str(text, "upperAscii")))


@operators.propagates_errors
def replace(text: Any, old: Any, new: Any, limit: Any = None) -> _S:
    s, o, n = _str(text, "replace"), _str(old, "replace"), _str(new, "replace")
    count = -1 if limit is None else _int(limit, "replace")
    return _S(s.replace(o, n, count if count >= 0 else -1))


@operators.propagates_errors
def split(text: Any, separator: Any, limit: Any = None) -> celtypes.ListType:
    s, sep = _str(text, "split"), _str(separator, "split")
    n = -1 if limit is None else _int(limit, "split")
    if n == 0:
        return celtypes.ListType([])
    if sep == "":
        # Go's strings.SplitN with an empty separator splits into code points.
        parts = list(s) if n < 0 or n >= len(s) else [*list(s[:n - 1]), s[n - 1:]]
    else:
        parts = s.split(sep) if n < 0 else s.split(sep, n - 1)
    return celtypes.ListType([_S(p) for p in parts])


@operators.propagates_errors
def substring(text: Any, start: Any, end: Any = None) -> _S:
    s = _str(text, "substring")
    i = _int(start, "substring")
    j = len(s) if end is None else _int(end, "substring")
    if i < 0 or i > len(s):
        raise IndexError(f"index out of range: {i}")
    if j < 0 or j > len(s):
        raise IndexError(f"index out of range: {j}")
    if i > j:
        raise IndexError(f"invalid substring range. start: {i}, end: {j}")
    return _S(s[i:j])


@operators.propagates_errors
def trim(text: Any) -> _S:
    return _S(_str(text, "trim").strip())


@operators.propagates_errors
def join(items: Any, separator: Any = None) -> _S:
    if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
        raise TypeError(f"no such overload: {operators.type_name(items)}.join()")
    sep = "" if separator is None else _str(separator, "join")
    return _S(sep.join(items))


def _re2_options() -> Any:
    options = re2.Options()
    # RE2 otherwise writes every bad pattern to stderr; we report it as a CEL error.
    options.log_errors = False
    return options


_OPTIONS = _re2_options()


def _regex(pattern: Any, function: str) -> Any:
    return _compiled(_str(pattern, function))


@functools.lru_cache(maxsize=256)
def _compiled(pattern: str) -> Any:
    try:
        return re2.compile(pattern, _OPTIONS)
    except re2.error as exc:
        reason = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise ValueError(f"error parsing regexp: {reason}") from None


@operators.propagates_errors
def matches(text: Any, pattern: Any) -> celtypes.BoolType:
    """CEL's `matches` (RE2, unanchored), replacing celpy's to keep errors quiet and typed."""
    return operators.cel_bool(_regex(pattern, "matches").search(_str(text, "matches")) is not None)


@operators.propagates_errors
def find(text: Any, pattern: Any) -> _S:
    match = _regex(pattern, "find").search(_str(text, "find"))
    return _S(match.group(0) if match else "")


@operators.propagates_errors
def findAll(text: Any, pattern: Any, limit: Any = None) -> celtypes.ListType:
    s = _str(text, "findAll")
    n = -1 if limit is None else _int(limit, "findAll")
    if n == 0:
        return celtypes.ListType([])
    found = [_S(m.group(0)) for m in _regex(pattern, "findAll").finditer(s)]
    return celtypes.ListType(found if n < 0 else found[:n])


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "charAt": charAt,
    "lowerAscii": lowerAscii,
    "upperAscii": upperAscii,
    "replace": replace,
    "split": split,
    "substring": substring,
    "trim": trim,
    "join": join,
    "find": find,
    "matches": matches,
    "findAll": findAll,
}
