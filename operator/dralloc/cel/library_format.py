"""Kubernetes' Format CEL library (`k8s.io/apiserver/pkg/cel/library/format.go`).

`format.named(name)` (an optional `kubernetes.NamedFormat`), `format.dns1123Label()` and
the other constant formats, and `<format>.validate(s)`: none when `s` is valid, otherwise
an optional list of the reasons, worded as upstream's validators word them (they reach
the user through `.value()`): the name formats of apimachinery (`util/validation` and
`api/validate/content`, which count lengths in "characters" and "bytes" respectively),
the CRD formats of kube-openapi's strfmt (`uuid`, `byte`, `date`, `datetime`) and
`net/url.ParseRequestURI` for `uri` (library_urls).

Go measures lengths in bytes and its regular expressions anchor `$` at the very end, so
the checks here use UTF-8 lengths and full matches.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from celpy import celtypes

from dralloc.cel import cost, library_optional, library_urls, operators

_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN = _LABEL + "(\\." + _LABEL + ")*"
_DNS1035 = "[a-z]([-a-z0-9]*[a-z0-9])?"
_LABEL_KEY = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_VALUE = "(" + _LABEL_KEY + ")?"
_LABEL_MESSAGE = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
                  "start and end with an alphanumeric character")
_SUBDOMAIN_MESSAGE = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
                      "and must start and end with an alphanumeric character")
_DNS1035_MESSAGE = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
                    "alphabetic character, and end with an alphanumeric character")
_LABEL_KEY_MESSAGE = ("must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
                      "alphanumeric character")
_LABEL_VALUE_MESSAGE = ("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
                        "and must start and end with an alphanumeric character")
_UUID = "(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$"  # strfmt.UUIDPattern
_BASE64 = "(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})"
_DATE_TIME = "^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$"  # strfmt.DateTimePattern
_DATE = re.compile("([0-9]{4})-([0-9]{2})-([0-9]{2})")
_TIME = re.compile(_DATE_TIME[1:-1])

_compiled: dict[str, re.Pattern[str]] = {}


def _matches(pattern: str, text: str) -> bool:
    regex = _compiled.get(pattern)
    if regex is None:
        regex = _compiled[pattern] = re.compile(pattern)
    return regex.fullmatch(text) is not None


def _size(text: str) -> int:
    return len(text.encode("utf-8", errors="surrogateescape"))


def _regex_error(message: str, pattern: str, *examples: str) -> str:
    if not examples:
        return f"{message} (regex used for validation is '{pattern}')"
    shown = " or ".join(f"'{example}', " for example in examples)
    return f"{message} (e.g. {shown}regex used for validation is '{pattern}')"


def _too_long(limit: int, unit: str) -> str:
    return f"must be no more than {limit} {unit}"


def dns1123_label(text: str, unit: str = "characters") -> list[str]:
    errors = []
    if _size(text) > 63:
        errors.append(_too_long(63, unit))
    if not _matches(_LABEL, text):
        if _matches(_SUBDOMAIN, text):
            errors.append("must not contain dots")  # a subdomain already within the length: dots
        else:
            errors.append(_regex_error(_LABEL_MESSAGE, _LABEL, "my-name", "123-abc"))
    return errors


def dns1123_subdomain(text: str, unit: str = "characters") -> list[str]:
    errors = []
    if _size(text) > 253:
        errors.append(_too_long(253, unit))
    if not _matches(_SUBDOMAIN, text):
        errors.append(_regex_error(_SUBDOMAIN_MESSAGE, _SUBDOMAIN, "example.com"))
    return errors


def dns1035_label(text: str) -> list[str]:
    errors = []
    if _size(text) > 63:
        errors.append(_too_long(63, "characters"))
    if not _matches(_DNS1035, text):
        errors.append(_regex_error(_DNS1035_MESSAGE, _DNS1035, "my-name", "abc-123"))
    return errors


def _mask_trailing_dash(text: str) -> str:
    """apimachinery's maskTrailingDash, bytes and all: a generated name's prefix may end in '-'.
    Upstream drops the last *two* bytes before appending 'a'; so does this."""
    raw = text.encode("utf-8", errors="surrogateescape")
    if len(raw) > 1 and raw.endswith(b"-"):
        raw = raw[:-2] + b"a"
    return raw.decode("utf-8", errors="surrogateescape")


def qualified_name(text: str) -> list[str]:
    """content.IsLabelKey: an optional DNS subdomain prefix and '/', then a name."""
    errors: list[str] = []
    parts = text.split("/")
    if len(parts) > 2:
        return ["a valid label key " + _regex_error(_LABEL_KEY_MESSAGE, _LABEL_KEY, "MyName", "my.name", "123-abc")
                + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if prefix == "":
            errors.append("prefix part must be non-empty")
        else:
            errors.extend("prefix part " + e for e in dns1123_subdomain(prefix, unit="bytes"))
    if name == "":
        errors.append("name part must be non-empty")
    elif _size(name) > 63:
        errors.append("name part " + _too_long(63, "bytes"))
    if not _matches(_LABEL_KEY, name):
        errors.append("name part " + _regex_error(_LABEL_KEY_MESSAGE, _LABEL_KEY, "MyName", "my.name", "123-abc"))
    return errors


def label_value(text: str) -> list[str]:
    errors = []
    if _size(text) > 63:
        errors.append(_too_long(63, "bytes"))
    if not _matches(_LABEL_VALUE, text):
        errors.append(_regex_error(_LABEL_VALUE_MESSAGE, _LABEL_VALUE, "MyValue", "my_value", "12345"))
    return errors


def uri(text: str) -> list[str]:
    try:
        library_urls.parse_request_uri(text)
    except ValueError as exc:
        return [str(exc)]
    return []


def _days_in(month: int, year: int) -> int:
    if month == 2:
        return 29 if year % 4 == 0 and (year % 100 != 0 or year % 400 == 0) else 28
    return 30 if month in (4, 6, 9, 11) else 31


def is_date(text: str) -> bool:
    """Go's time.Parse("2006-01-02", text) succeeds: digits exactly, a real day of the month."""
    match = _DATE.fullmatch(text)
    if match is None:
        return False
    year, month, day = (int(group) for group in match.groups())
    return 1 <= month <= 12 and 1 <= day <= _days_in(month, year)


def is_date_time(text: str) -> bool:
    """strfmt.IsDateTime: a date, 't' or 'T', a time; only what follows the first 't' up to a
    second one is looked at (upstream splits at every 't' and reads the first two parts)."""
    if _size(text) < 4:
        return False
    parts = text.lower().split("t")
    if len(parts) < 2 or not is_date(parts[0]):
        return False
    match = _TIME.fullmatch(parts[1])
    if match is None:
        return False
    hours, minutes, seconds = match.group(1), match.group(2), match.group(3)
    return hours <= "23" and minutes <= "59" and seconds <= "59"


def _check(valid: Callable[[str], bool], message: str) -> Callable[[str], list[str]]:
    return lambda text: [] if valid(text) else [message]


@dataclass(frozen=True)
class NamedFormat:
    """A format value (CEL type `kubernetes.NamedFormat`); two are equal when their names are."""

    name: str
    check: Callable[[str], list[str]] = field(compare=False)
    max_regex_size: int = field(compare=False)  # what upstream's cost estimator charges a match as


_FORMATS: dict[str, NamedFormat] = {
    key: NamedFormat(name, check, size) for key, name, check, size in (
        ("dns1123Label", "DNS1123Label", dns1123_label, 30),
        ("dns1123Subdomain", "DNS1123Subdomain", dns1123_subdomain, 60),
        ("dns1035Label", "DNS1035Label", dns1035_label, 30),
        ("qualifiedName", "QualifiedName", qualified_name, 60),
        ("dns1123LabelPrefix", "DNS1123LabelPrefix", lambda s: dns1123_label(_mask_trailing_dash(s)), 30),
        ("dns1123SubdomainPrefix", "DNS1123SubdomainPrefix",
         lambda s: dns1123_subdomain(_mask_trailing_dash(s)), 60),
        ("dns1035LabelPrefix", "DNS1035LabelPrefix", lambda s: dns1035_label(_mask_trailing_dash(s)), 30),
        ("labelValue", "LabelValue", label_value, 40),
        ("uri", "URI", uri, 1103),
        ("uuid", "uuid", _check(lambda s: _matches(_UUID, s), "does not match the UUID format"), len(_UUID)),
        ("byte", "byte", _check(lambda s: _matches(_BASE64, s), "invalid base64"), 84),
        ("date", "date", _check(is_date, "invalid date"), len(_DATE_TIME)),
        ("datetime", "datetime", _check(is_date_time, "invalid datetime"), len(_DATE_TIME)),
    )
}


@operators.propagates_errors
def named(name: Any) -> library_optional.Optional:
    if not isinstance(name, str):
        raise operators.no_such_overload("format.named", name)
    found = _FORMATS.get(str(name))
    return library_optional.NONE if found is None else library_optional.Optional(found)


@operators.propagates_errors
def validate(receiver: Any, text: Any) -> library_optional.Optional:
    if not isinstance(receiver, NamedFormat) or not isinstance(text, str):
        raise operators.no_such_overload("validate", receiver, text)
    cost.charge(cost.regex_match(len(text), receiver.max_regex_size))
    errors = receiver.check(str(text))
    if not errors:
        return library_optional.NONE
    return library_optional.Optional(celtypes.ListType([celtypes.StringType(e) for e in errors]))


def _constant(key: str) -> Callable[[], NamedFormat]:
    value = _FORMATS[key]

    def constant() -> NamedFormat:
        return value

    # Transpiled code names functions by module.qualname (functions.py), so each gets its own.
    constant.__name__ = constant.__qualname__ = f"format_{key}"
    globals()[constant.__name__] = constant
    return constant


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "format.named": named,
    "validate": validate,
    **{f"format.{key}": _constant(key) for key in _FORMATS},
}
GLOBALS = frozenset(name for name in FUNCTIONS if name.startswith("format."))
