"""Kubernetes' string extensions (cel-go `ext.Strings`) and regex library.

Indices count Unicode code points, as cel-go does (Python strings already do).
Out-of-range indices are errors, not clamps. `find`/`findAll` are
`k8s.io/apiserver/pkg/cel/library/regex.go`; `matches` is CEL's own (celpy's,
RE2 via google-re2). Regexes use RE2 syntax here as upstream does; an invalid
pattern is a runtime error (upstream reports constant patterns at compile time).

`format` and `strings.quote` are strings version 1 (upstream's base environment uses
version 2: `reverse` is version 3, so not declared). `format` is cel-go's v1 formatter
with its quirks, each checked against upstream: `%f`/`%e` go through an en_US number
printer (`1,234.50`; `%e` as 1.234500 times 10⁰³; `%.3e` sets a width, not a precision), doubles
inside a formatted list print as `%.6f`, a lone double with `%s` prints as Go's `%g`
shortest form. Timestamps and durations are not formatted (a runtime error here).
"""

from __future__ import annotations

import decimal
import functools
import math
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
@operators.names_overload("charAt")
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
@operators.names_overload("lowerAscii")
def lowerAscii(text: Any) -> _S:
    return _S("".join(c.lower() if c.isascii() else c for c in _str(text, "lowerAscii")))


@operators.propagates_errors
@operators.names_overload("upperAscii")
def upperAscii(text: Any) -> _S:
    return _S("".join(c.upper() if c.isascii() else c for c in _str(text, "upperAscii")))


@operators.propagates_errors
@operators.names_overload("replace")
def replace(text: Any, old: Any, new: Any, limit: Any = None) -> _S:
    s, o, n = _str(text, "replace"), _str(old, "replace"), _str(new, "replace")
    count = -1 if limit is None else _int(limit, "replace")
    return _S(s.replace(o, n, count if count >= 0 else -1))


@operators.propagates_errors
@operators.names_overload("split")
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
@operators.names_overload("substring")
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
@operators.names_overload("trim")
def trim(text: Any) -> _S:
    return _S(_str(text, "trim").strip())


@operators.propagates_errors
@operators.names_overload("join")
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
    try:
        return compiled_regex(_str(pattern, function))
    except ValueError as exc:
        if function == "matches":
            raise
        raise ValueError(f"Illegal regex: {exc}") from None  # the Kubernetes regex library's wording


@functools.lru_cache(maxsize=256)
def compiled_regex(pattern: str) -> Any:
    """The RE2 program for a pattern; ValueError "error parsing regexp: ..." as Go words it."""
    try:
        return re2.compile(pattern, _OPTIONS)
    except re2.error as exc:
        reason = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise ValueError(f"error parsing regexp: {_go_regexp_reason(reason)}") from None


# RE2's wording of a bad pattern -> Go regexp/syntax's (cel-go compiles patterns with Go's regexp).
_GO_REGEXP_CODES = {
    "missing )": "missing closing )", "missing ]": "missing closing ]", "unexpected )": "unexpected )",
    "invalid escape sequence": "invalid escape sequence",
    "no argument for repetition operator": "missing argument to repetition operator",
    "bad repetition operator": "invalid nested repetition operator",
    "invalid character class range": "invalid character class range",
    "invalid character class": "invalid character class", "bad repetition count": "invalid repeat count",
    "invalid named capture group": "invalid named capture", "invalid UTF-8": "invalid UTF-8",
}


def _go_regexp_reason(reason: str) -> str:
    if reason == "trailing \\":
        return "trailing backslash at end of expression: ``"
    code, sep, fragment = reason.partition(": ")
    if sep and code in _GO_REGEXP_CODES:
        return f"{_GO_REGEXP_CODES[code]}: `{fragment}`"
    return reason


@operators.propagates_errors
def matches(text: Any, pattern: Any) -> celtypes.BoolType:
    """CEL's `matches` (RE2, unanchored), replacing celpy's to keep errors quiet and typed."""
    if not isinstance(text, str) or not isinstance(pattern, str):
        raise TypeError("no such overload")  # cel-go's standard string functions name nothing
    return operators.cel_bool(_regex(pattern, "matches").search(_str(text, "matches")) is not None)


@operators.propagates_errors
@operators.names_overload("find")
def find(text: Any, pattern: Any) -> _S:
    if not isinstance(text, str):
        raise TypeError("no such overload")  # the regex library's wording for a receiver of another type
    match = _regex(pattern, "find").search(_str(text, "find"))
    return _S(match.group(0) if match else "")


@operators.propagates_errors
@operators.names_overload("findAll")
def findAll(text: Any, pattern: Any, limit: Any = None) -> celtypes.ListType:
    if not isinstance(text, str):
        raise TypeError("no such overload")  # the regex library's wording for a receiver of another type
    s = _str(text, "findAll")
    n = -1 if limit is None else _int(limit, "findAll")
    if n == 0:
        return celtypes.ListType([])
    found = [_S(m.group(0)) for m in _regex(pattern, "findAll").finditer(s)]
    return celtypes.ListType(found if n < 0 else found[:n])




# --- format and strings.quote (cel-go ext/formatting.go, strings.go at version 2) ----------------

_QUOTE_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r",
                  "\t": "\\t", "\v": "\\v", "\\": "\\\\", '"': '\\"'}


@operators.propagates_errors
@operators.names_overload("strings.quote")
def strings_quote(text: Any) -> _S:
    return _S('"' + "".join(_QUOTE_ESCAPES.get(c, c) for c in _str(text, "strings.quote")) + '"')


def _go_quote(text: str) -> str:
    """Go's strconv.Quote (fmt's %q), which cel-go uses for strings inside lists and maps."""
    out = []
    for char in text:
        if char in _QUOTE_ESCAPES:
            out.append(_QUOTE_ESCAPES[char])
        elif char.isprintable():
            out.append(char)
        elif ord(char) < 0x80:
            out.append(f"\\x{ord(char):02x}")
        elif ord(char) < 0x10000:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(f"\\U{ord(char):08x}")
    return '"' + "".join(out) + '"'


def _go_shortest(value: float) -> str:
    """Go's strconv.FormatFloat(v, 'g', -1, 64): shortest digits, exponent when exp < -4 or >= 6."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    sign = "-" if math.copysign(1, value) < 0 else ""
    if value == 0:
        return sign + "0"
    # repr gives the shortest digits that round-trip, as Go's shortest formatting does.
    _, digit_tuple, exponent = decimal.Decimal(repr(abs(value))).normalize().as_tuple()
    digits = "".join(map(str, digit_tuple))
    point = len(digits) + int(exponent)  # digits before the decimal point
    exp = point - 1
    if exp < -4 or exp >= 6:
        tail = digits[1:]
        return f"{sign}{digits[0]}{'.' + tail if tail else ''}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return f"{sign}{digits}{'0' * (point - len(digits))}"
    return f"{sign}{digits[:point]}.{digits[point:]}"


_SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")


def _grouped(text: str) -> str:
    """en_US digit grouping of a %f result, as golang.org/x/text/message prints it."""
    sign = "-" if text.startswith("-") else ""
    whole, dot, fraction = text.lstrip("-").partition(".")
    groups: list[str] = []
    while len(whole) > 3:
        groups.insert(0, whole[-3:])
        whole = whole[:-3]
    return sign + ",".join([whole, *groups]) + dot + fraction


def _localized_special(value: float) -> str | None:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "∞" if value > 0 else "-∞"
    return None


def _format_error(message: str) -> ValueError:
    return ValueError(f"error during formatting: {message}")


def _cel_type_name(value: Any) -> str:
    if isinstance(value, celtypes.TypeType):
        return "type"
    if isinstance(value, celtypes.DurationType):
        return "google.protobuf.Duration"
    if isinstance(value, celtypes.TimestampType):
        return "google.protobuf.Timestamp"
    return operators.type_name(value)


def _is(value: Any, *kinds: type) -> bool:
    return isinstance(value, kinds) and not (isinstance(value, celtypes.BoolType) and celtypes.BoolType not in kinds)


def _plain_string(value: Any) -> str:
    """cel-go's FormatString: the `%s` of one value outside a list."""
    if isinstance(value, list):
        return "[" + ", ".join(_in_aggregate(v) for v in value) + "]"
    if isinstance(value, celtypes.MapType):
        return _format_map(value)
    if isinstance(value, celtypes.BoolType):
        return "true" if value else "false"
    if isinstance(value, celtypes.DoubleType):
        return _go_shortest(float(value))
    if isinstance(value, celtypes.IntType | celtypes.UintType):
        return str(int(value))
    if isinstance(value, type | celtypes.TypeType):  # celpy's type() gives the class itself
        return _type_text(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, bytes):
        return bytes(value).decode("utf-8", errors="replace")
    if value is None:
        return "null"
    raise _format_error("string clause can only be used on strings, bools, bytes, ints, doubles, maps, "
                        f"lists, types, durations, and timestamps, was given {_cel_type_name(value)}")


def _type_text(value: Any) -> str:
    names: dict[Any, str] = {celtypes.IntType: "int", celtypes.UintType: "uint", celtypes.DoubleType: "double",
             celtypes.BoolType: "bool", celtypes.StringType: "string", celtypes.BytesType: "bytes",
             celtypes.ListType: "list", celtypes.MapType: "map", type(None): "null_type"}
    return names.get(value, getattr(value, "__name__", str(value)))


def _in_aggregate(value: Any) -> str:
    """One element of a formatted list or map: clauseForType, then quoteForCEL."""
    if isinstance(value, celtypes.DoubleType):
        number = float(value)
        if math.isnan(number) or math.isinf(number):
            return f'"{_go_shortest(number)}"'
        return f"{number:.6f}"
    if isinstance(value, str):
        return _go_quote(str(value))
    if isinstance(value, bytes):
        return "b" + _go_quote(bytes(value).decode("utf-8", errors="replace"))
    if isinstance(value, celtypes.IntType | celtypes.UintType) and not isinstance(value, celtypes.BoolType):
        return str(int(value))
    if isinstance(value, type | celtypes.TypeType):
        return _type_text(value)
    if value is None or isinstance(value, celtypes.BoolType | list | celtypes.MapType):
        return _plain_string(value)
    raise ValueError(f"no formatting function for {_cel_type_name(value)}")


def _format_map(value: Any) -> str:
    pairs = []
    for key, item in value.items():
        if isinstance(key, str):
            key_text = _go_quote(str(key))
        elif isinstance(key, celtypes.BoolType | celtypes.IntType | celtypes.UintType):
            key_text = _plain_string(key)
        else:
            raise ValueError(f"no formatting function for map key of type {_cel_type_name(key)}")
        pairs.append((key_text, _in_aggregate(item)))
    pairs.sort(key=lambda pair: pair[0])
    return "{" + ", ".join(f"{k}:{v}" for k, v in pairs) + "}"


def _as_double(value: Any, clause: str) -> float:
    if isinstance(value, str) and str(value) in ("NaN", "Infinity", "-Infinity"):
        return float(str(value).replace("Infinity", "inf"))
    if not isinstance(value, celtypes.DoubleType):
        raise _format_error(f"{clause} clause can only be used on doubles, was given {_cel_type_name(value)}")
    return float(value)


def _integer(value: Any) -> int | None:
    if isinstance(value, celtypes.IntType | celtypes.UintType) and not isinstance(value, celtypes.BoolType):
        return int(value)
    return None


def _go_int(number: int, base: str) -> str:
    return ("-" if number < 0 else "") + format(abs(number), base)


def _clause(verb: str, precision: int | None, value: Any) -> str:
    if verb == "s":
        return _plain_string(value)
    if verb == "d":
        number = _integer(value)
        if number is None:
            raise _format_error(f"decimal clause can only be used on integers, was given {_cel_type_name(value)}")
        return str(number)
    if verb == "f":
        double = _as_double(value, "fixed-point")
        special = _localized_special(double)
        return special if special is not None else _grouped(f"{double:.{6 if precision is None else precision}f}")
    if verb == "e":
        double = _as_double(value, "scientific")
        special = _localized_special(double)
        if special is not None:
            return special
        # cel-go builds "%<p>e": the precision becomes a width, so six digits are always shown.
        mantissa, _, exponent = f"{double:.6e}".partition("e")
        exponent_text = f"{int(exponent):03d}" if int(exponent) < 0 else f"{int(exponent):02d}"
        return f"{mantissa}\u00d710{exponent_text.translate(_SUPERSCRIPT)}"
    if verb == "b":
        if isinstance(value, celtypes.BoolType):
            return "1" if value else "0"
        number = _integer(value)
        if number is None:
            raise _format_error(f"only integers and bools can be formatted as binary, was given {_cel_type_name(value)}")
        return _go_int(number, "b")
    if verb in ("x", "X"):
        number = _integer(value)
        if number is not None:
            text = _go_int(number, "x")
        elif isinstance(value, str):
            text = str(value).encode().hex()
        elif isinstance(value, bytes):
            text = bytes(value).hex()
        else:
            raise _format_error("only integers, byte buffers, and strings can be formatted as hex, "
                                f"was given {_cel_type_name(value)}")
        return text.upper() if verb == "X" else text
    number = _integer(value)  # "o"
    if number is None:
        raise _format_error(f"octal clause can only be used on integers, was given {_cel_type_name(value)}")
    return _go_int(number, "o")


def parse_clause(text: str, start: int) -> tuple[int, str, int | None]:
    """The clause after the '%' at `start`: (end, verb, precision); ValueError as cel-go words it."""
    i = start + 1
    precision: int | None = None
    if text[i] == ".":
        i += 1
        digits_start = i
        while True:
            if i >= len(text):
                raise ValueError("could not parse formatting clause: error while parsing precision: "
                                 "could not find end of precision specifier")
            if not ("0" <= text[i] <= "9"):
                break
            i += 1
        if i == digits_start:
            raise ValueError("could not parse formatting clause: error while parsing precision: error while "
                             'converting precision to integer: strconv.Atoi: parsing "": invalid syntax')
        precision = int(text[digits_start:i])
    verb = text[i]
    if verb not in "sdfebxXo":
        raise ValueError(f'could not parse formatting clause: unrecognized formatting clause "{verb}"')
    return i + 1, verb, precision


@operators.propagates_errors
@operators.names_overload("format")
def string_format(text: Any, arguments: Any) -> _S:
    template = _str(text, "format")
    if not isinstance(arguments, list):
        raise TypeError(f"no such overload: string.format({operators.type_name(arguments)})")
    out: list[str] = []
    i = index = 0
    while i < len(template):
        char = template[i]
        if char != "%":
            out.append(char)
            i += 1
            continue
        if template[i + 1:i + 2] == "%":
            out.append("%")
            i += 2
            continue
        if index >= len(arguments):
            raise ValueError(f"index {index} out of range")
        if i + 1 >= len(template):
            raise ValueError("unexpected end of string")
        i, verb, precision = parse_clause(template, i)
        out.append(_clause(verb, precision, arguments[index]))
        index += 1
    return _S("".join(out))


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
    "format": string_format,
    "strings.quote": strings_quote,
}
