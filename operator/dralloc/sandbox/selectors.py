"""Label and field selectors, parsed once per request and matched against raw objects.

Label selectors follow the apimachinery grammar: `k=v`, `k==v`, `k!=v`, `k in (a,b)`,
`k notin (a,b)`, `k` and `!k`, comma-separated (a comma inside parentheses belongs to
the set). Field selectors only know `=`, `==` and `!=`, and only the fields a resource
declares (an unknown field is a 400, as the real server answers). Values of fields are
compared as the API server's field sets render them: booleans as `true`/`false`,
missing fields as the empty string.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from typing import Any

from dralloc.sandbox import errors

Obj = dict[str, Any]
Matcher = Callable[[Obj], bool]

_TERM = re.compile(r"^\s*(!?)\s*([A-Za-z0-9._/-]+)\s*(?:(==|=|!=|\s+in\s+|\s+notin\s+)\s*(.*?))?\s*$")


@dataclasses.dataclass(frozen=True)
class Requirement:
    key: str
    op: str  # "=", "!=", "in", "notin", "exists", "!exists"
    values: frozenset[str] = frozenset()

    def matches(self, labels: dict[str, str]) -> bool:
        present = self.key in labels
        value = labels.get(self.key)
        if self.op == "exists":
            return present
        if self.op == "!exists":
            return not present
        if self.op in ("=", "in"):
            return present and value in self.values
        return not present or value not in self.values  # "!=" and "notin"


def _split_terms(text: str) -> list[str]:
    terms, depth, current = [], 0, ""
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            terms.append(current)
            current = ""
        else:
            current += ch
    if current.strip():
        terms.append(current)
    return terms


def parse_labels(text: str | None) -> list[Requirement]:
    if not text or not text.strip():
        return []
    reqs = []
    for term in _split_terms(text):
        m = _TERM.match(term)
        if not m:
            raise errors.ApiError(400, f"unable to parse requirement: {term!r}")
        bang, key, op, rest = m.groups()
        if op is None:
            reqs.append(Requirement(key, "!exists" if bang else "exists"))
            continue
        if bang:
            raise errors.ApiError(400, f"unable to parse requirement: {term!r}")
        op = op.strip()
        if op in ("in", "notin"):
            if not (rest.startswith("(") and rest.endswith(")")):
                raise errors.ApiError(400, f"unable to parse requirement: {term!r}: expected a set")
            values = frozenset(v.strip() for v in rest[1:-1].split(",") if v.strip())
            reqs.append(Requirement(key, op, values))
        else:
            reqs.append(Requirement(key, "!=" if op == "!=" else "=", frozenset({rest})))
    return reqs


def label_matcher(text: str | None) -> Matcher | None:
    reqs = parse_labels(text)
    if not reqs:
        return None

    def match(obj: Obj) -> bool:
        labels = (obj.get("metadata") or {}).get("labels") or {}
        return all(r.matches(labels) for r in reqs)

    return match


def field_value(obj: Obj, path: str) -> str:
    cur: Any = obj
    for part in path.split("."):
        if not isinstance(cur, dict):
            return ""
        cur = cur.get(part)
    if cur is None:
        return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    return str(cur)


def field_matcher(text: str | None, fields: dict[str, str]) -> Matcher | None:
    """`fields` maps the selector labels this resource supports to dotted paths."""
    if not text or not text.strip():
        return None
    checks: list[tuple[str, bool, str]] = []
    for term in text.split(","):
        m = re.match(r"^\s*([A-Za-z0-9._/-]+)\s*(==|=|!=)\s*(.*?)\s*$", term)
        if not m:
            raise errors.ApiError(400, f"invalid field selector: {term!r}")
        label, op, value = m.groups()
        if label not in fields:
            raise errors.ApiError(400, f'field label not supported: {label}')
        checks.append((fields[label], op != "!=", value))

    def match(obj: Obj) -> bool:
        return all((field_value(obj, path) == value) is equal for path, equal, value in checks)

    return match


def combine(*matchers: Matcher | None) -> Matcher | None:
    active = [m for m in matchers if m is not None]
    if not active:
        return None
    if len(active) == 1:
        return active[0]
    return lambda obj: all(m(obj) for m in active)
