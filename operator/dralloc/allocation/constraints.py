"""Claim constraints (matchAttribute, distinctAttribute) as add/remove pairs.

The search calls `add` when it is about to take a device and `remove` when it
backtracks; removes come in exactly the reverse order of successful adds, so
each constraint keeps a stack and rollback leaves no trace.

Attribute values are compared as sets of typed elements: a scalar is a set of
one, a list attribute (DRAListTypeAttributes) is the set of its elements, and
`int 1` never equals `string "1"`. Versions compare as exact strings (semver
2.0.0 values are minimal, so string equality is semantic equality).

- matchAttribute: the running intersection of all covered devices' values must
  stay non-empty (for scalars: all equal).
- distinctAttribute: every covered device's values must be disjoint from all
  others'. Upstream only compares a request's device with the most recent one of
  that request; dralloc enforces the API's stated meaning (SPEC.md, surprises).
  Upstream 1.37 does the same.

A request's derived attributes (DRADerivedAttributes) take the place of the published
attribute of the same name for the devices taken for that request: computed by CEL when a
constraint covering the request first looks at the device (`selectors.derived_attribute`).

A value that cannot be compared (an attribute without a value; a list with
DRAListTypeAttributes off) equals nothing: see `Constraint._elements`.

Kubernetes 1.38 (`strict`): such a value (also an empty list, or a version that does not
parse as semver) is an error that stops the allocation, `device D: unsupported attribute
value for A` (`UnsupportedValue`, turned into the error by the search, which knows the claim);
versions compare by semver equality, which ignores build metadata (`1.0.0+a` == `1.0.0+b`),
as scalars and as list elements.
"""

from __future__ import annotations

import abc
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from dralloc.allocation import selectors
from dralloc.allocation.pools import DeviceInfo
from dralloc.cel.versions import Semver

Element = tuple[str, object]

_SCALAR_KINDS = ("int", "bool", "string", "version")
_LIST_KINDS = {"ints": "int", "bools": "bool", "strings": "string", "versions": "version"}


class UnsupportedValue(Exception):
    """An attribute without a value of a type this allocator understands."""


def _version_element(raw: object) -> str:
    """1.38: a version as semver equality sees it (no build metadata); UnsupportedValue when it
    does not parse (upstream's slice conversion then keeps no value)."""
    try:
        version = Semver.parse(str(raw))
    except (ValueError, TypeError):
        raise UnsupportedValue() from None
    return str(Semver(version.major, version.minor, version.patch, version.prerelease))


def elements(info: DeviceInfo, attribute: str, *, list_types: bool,
             derived: Mapping[str, str] | None = None, strict: bool = False) -> frozenset[Element] | None:
    """The typed elements of the attribute, None when the device lacks it.

    `derived`: the request's derived attributes (name -> CEL expression); one of them with
    this name is computed for the device instead of reading what the driver published.
    `strict` (1.38): versions without build metadata; an empty list or a version that does
    not parse is an UnsupportedValue.
    """
    expression = derived.get(attribute) if derived else None
    found: tuple[str, Any] | None
    if expression is not None:
        found = selectors.derived_attribute(info, attribute, expression, lazy=strict)
    else:
        value = info.attributes.get(attribute)
        if value is None:
            return None
        found = value.kind_and_value()
    if found is None:
        raise UnsupportedValue(attribute)
    kind, raw = found
    if strict:
        if kind == "version":
            raw = _version_element(raw)
        elif kind in _LIST_KINDS:
            if not raw:
                raise UnsupportedValue(attribute)
            if kind == "versions":
                raw = tuple(_version_element(item) for item in raw)
    if kind in _SCALAR_KINDS:
        return frozenset({(kind, raw)})
    if list_types and kind in _LIST_KINDS:
        return frozenset((_LIST_KINDS[kind], item) for item in raw)
    raise UnsupportedValue(attribute)


class Constraint(abc.ABC):
    """Common request scoping: which requests (or `req/sub`) a constraint covers."""

    def __init__(self, requests: Iterable[str], attribute: str, *, list_types: bool, owner: str,
                 strict: bool = False) -> None:
        self.requests = frozenset(requests)
        self.attribute = attribute
        self.list_types = list_types
        self.owner = owner
        self.strict = strict  # Kubernetes 1.38: an uncomparable value raises UnsupportedValue

    def covers(self, request: str, subrequest: str | None) -> bool:
        if not self.requests:
            return True
        if request in self.requests:
            return True
        return subrequest is not None and f"{request}/{subrequest}" in self.requests

    def _elements(self, info: DeviceInfo, derived: Mapping[str, str] | None, *,
                  first: bool) -> frozenset[Element] | None:
        """The device's elements; None when it lacks the attribute or its value cannot satisfy
        the constraint.

        A value the allocator cannot compare (no value, or a list with DRAListTypeAttributes
        off) never equals another, as upstream's type switch falls through: with the gate off
        it still lets such a device be the first one (upstream records the first device before
        comparing), with an element of its own that nothing else shares; with the gate on
        (sets of elements) a device without a value never satisfies the constraint.
        With `strict` (1.38) UnsupportedValue is raised instead, for the caller to stop on.
        """
        try:
            return elements(info, self.attribute, list_types=self.list_types, derived=derived, strict=self.strict)
        except UnsupportedValue:
            if self.strict:
                raise
            if first and not self.list_types:
                return frozenset({("unsupported", info.id)})
            return None

    def may_fail_on(self, info: DeviceInfo) -> bool:
        """Whether looking at the device's published value could stop the allocation (1.38)."""
        if not self.strict:
            return False
        try:
            elements(info, self.attribute, list_types=self.list_types, strict=True)
        except UnsupportedValue:
            return True
        return False

    @abc.abstractmethod
    def add(self, info: DeviceInfo, derived: Mapping[str, str] | None = None) -> bool:
        """Take the device into account; False (and nothing recorded) when it breaks the constraint.

        `derived`: the derived attributes of the request the device is taken for.
        Raises InvalidDerivedAttributeError when one of them cannot be computed for the device,
        and (1.38, `strict`) UnsupportedValue when its value cannot be compared.
        """

    @abc.abstractmethod
    def remove(self) -> None:
        """Undo the most recent successful add."""

    @abc.abstractmethod
    def reset(self) -> None:
        """Forget every device (a search was abandoned midway, without its removes)."""


class MatchAttribute(Constraint):
    def __init__(self, requests: Iterable[str], attribute: str, *, list_types: bool, owner: str,
                 strict: bool = False) -> None:
        super().__init__(requests, attribute, list_types=list_types, owner=owner, strict=strict)
        self._stack: list[frozenset[Element]] = []

    def add(self, info: DeviceInfo, derived: Mapping[str, str] | None = None) -> bool:
        values = self._elements(info, derived, first=not self._stack)
        if values is None:
            return False
        if self._stack:
            values = self._stack[-1] & values
            if not values:
                return False
        self._stack.append(values)
        return True

    def remove(self) -> None:
        self._stack.pop()

    def reset(self) -> None:
        self._stack.clear()

    @property
    def current(self) -> frozenset[Element] | None:
        """The values every covered device picked so far shares, None before the first."""
        return self._stack[-1] if self._stack else None


class DistinctAttribute(Constraint):
    def __init__(self, requests: Iterable[str], attribute: str, *, list_types: bool, owner: str,
                 strict: bool = False) -> None:
        super().__init__(requests, attribute, list_types=list_types, owner=owner, strict=strict)
        self._taken: Counter[Element] = Counter()
        self._stack: list[frozenset[Element]] = []

    def add(self, info: DeviceInfo, derived: Mapping[str, str] | None = None) -> bool:
        values = self._elements(info, derived, first=not self._stack)
        if values is None:
            return False
        if any(self._taken[v] for v in values):
            return False
        self._taken.update(values)
        self._stack.append(values)
        return True

    def remove(self) -> None:
        self._taken.subtract(self._stack.pop())

    def reset(self) -> None:
        self._taken.clear()
        self._stack.clear()
