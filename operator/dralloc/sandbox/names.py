"""Name and key syntax, worded as apimachinery's `validation` package words it.

Every check returns the list of details upstream would attach to one field (empty when
the value is fine); callers turn each detail into a cause, usually
`Invalid value: "<value>": <detail>`, so a value that breaks two rules (too long and
badly formed) gets two causes, as kube-apiserver reports them. The texts, including
the examples and the regular expression they quote, are kube-apiserver 1.37's.
"""

from __future__ import annotations

import re

DNS1123_LABEL_MAX = 63
DNS1123_SUBDOMAIN_MAX = 253
QUALIFIED_NAME_MAX = 63
LABEL_VALUE_MAX = 63

_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN_FMT = _LABEL_FMT + r"(\." + _LABEL_FMT + ")*"
_QUALIFIED_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_VALUE_FMT = f"({_QUALIFIED_FMT})?"
_C_IDENTIFIER_FMT = "[A-Za-z_][A-Za-z0-9_]*"

_LABEL = re.compile(f"^{_LABEL_FMT}$")
_SUBDOMAIN = re.compile(f"^{_SUBDOMAIN_FMT}$")
_SUBDOMAIN_ANY_CASE = re.compile(f"^{_SUBDOMAIN_FMT}$", re.IGNORECASE)
_QUALIFIED = re.compile(f"^{_QUALIFIED_FMT}$")
_LABEL_VALUE = re.compile(f"^{_LABEL_VALUE_FMT}$")
_C_IDENTIFIER = re.compile(f"^{_C_IDENTIFIER_FMT}$")


def _examples(*examples: str) -> str:
    return ",  or ".join(f"'{e}'" for e in examples)


def regex_detail(message: str, fmt: str, *examples: str) -> str:
    return f"{message} (e.g. {_examples(*examples)}, regex used for validation is '{fmt}')"


DNS1123_LABEL = regex_detail("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
                             "and must start and end with an alphanumeric character", _LABEL_FMT, "my-name", "123-abc")
DNS1123_SUBDOMAIN = regex_detail("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
                                 "'-' or '.', and must start and end with an alphanumeric character", _SUBDOMAIN_FMT,
                                 "example.com")
RFC1123_SUBDOMAIN_ANY_CASE = regex_detail("an RFC 1123 subdomain must consist of alphanumeric characters, '-' or '.', "
                                          "and must start and end with an alphanumeric character", _SUBDOMAIN_FMT,
                                          "Example.com")
QUALIFIED_NAME_PART = regex_detail("name part must consist of alphanumeric characters, '-', '_' or '.', and must start "
                                   "and end with an alphanumeric character", _QUALIFIED_FMT, "MyName", "my.name",
                                   "123-abc")
# 1.37's apimachinery words a key with more than one '/' as a label key (content.IsLabelKey).
QUALIFIED_NAME = regex_detail("a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must "
                              "start and end with an alphanumeric character", _QUALIFIED_FMT, "MyName", "my.name",
                              "123-abc") + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
LABEL_VALUE = regex_detail("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
                           "'.', and must start and end with an alphanumeric character", _LABEL_VALUE_FMT, "MyValue",
                           "my_value", "12345")
C_IDENTIFIER = regex_detail("a valid C identifier must start with alphabetic character or '_', followed by a string "
                            "of alphanumeric characters or '_'", _C_IDENTIFIER_FMT, "my_name", "MY_NAME", "MyName")


def max_length(limit: int) -> str:
    return f"must be no more than {limit} characters"


def dns1123_label(value: str) -> list[str]:
    found = [max_length(DNS1123_LABEL_MAX)] if len(value) > DNS1123_LABEL_MAX else []
    return found + ([] if _LABEL.match(value) else [DNS1123_LABEL])


def dns1123_subdomain(value: str) -> list[str]:
    found = [max_length(DNS1123_SUBDOMAIN_MAX)] if len(value) > DNS1123_SUBDOMAIN_MAX else []
    return found + ([] if _SUBDOMAIN.match(value) else [DNS1123_SUBDOMAIN])


def rfc1123_subdomain_any_case(value: str) -> list[str]:
    found = [max_length(DNS1123_SUBDOMAIN_MAX)] if len(value) > DNS1123_SUBDOMAIN_MAX else []
    return found + ([] if _SUBDOMAIN_ANY_CASE.match(value) else [RFC1123_SUBDOMAIN_ANY_CASE])


def qualified_name(value: str) -> list[str]:
    """Label keys, taint and toleration keys: `[prefix/]name`."""
    parts = value.split("/")
    if len(parts) > 2:
        return [QUALIFIED_NAME]
    name = parts[-1]
    found = []
    if len(parts) == 2:
        if not parts[0]:
            found.append("prefix part must be non-empty")
        else:
            found += ["prefix part " + detail for detail in dns1123_subdomain(parts[0])]
    if not name:
        found.append("name part must be non-empty")
    elif len(name) > QUALIFIED_NAME_MAX:
        found.append(f"name part must be no more than {QUALIFIED_NAME_MAX} bytes")
    if not _QUALIFIED.match(name):
        found.append(QUALIFIED_NAME_PART)
    return found


def label_value(value: str) -> list[str]:
    found = [f"must be no more than {LABEL_VALUE_MAX} bytes"] if len(value) > LABEL_VALUE_MAX else []
    return found + ([] if _LABEL_VALUE.match(value) else [LABEL_VALUE])


def c_identifier(value: str) -> list[str]:
    return [] if _C_IDENTIFIER.match(value) else [C_IDENTIFIER]


def path_segment(value: str) -> list[str]:
    """What names of kinds without a stricter rule (core Events) must avoid: they end up in a URL path."""
    if value in (".", ".."):
        return [f"may not be '{value}'"]
    return [f"may not contain '{bad}'" for bad in ("/", "%") if bad in value]


def namespace_name(value: str) -> list[str]:
    """A DNS label; a dotted name that would be a fine subdomain is told just that dots are out."""
    found = [max_length(DNS1123_LABEL_MAX)] if len(value) > DNS1123_LABEL_MAX else []
    if _LABEL.match(value):
        return found
    return found + (["must not contain dots"] if _SUBDOMAIN.match(value) else [DNS1123_LABEL])
