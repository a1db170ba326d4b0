"""The CEL variable `device`, built once per device and reused by every selector.

Upstream (`cel/compile.go`, `DeviceMatches`) files every attribute and capacity
under a domain: a name with a `domain/` prefix under that domain, a bare name
under the driver's name. `device.attributes` and `device.capacity` are maps
domain -> (map id -> value) whose lookup of an unknown *domain* yields an empty
map rather than an error, while a missing *id* inside a domain map is the usual
"no such key" error. `"d" in device.attributes` still reports only the domains
that exist.

Attribute values are int, bool, string, version (a `Semver`), and the list
forms (`ints`, `bools`, `strings`, `versions`). A version that does not parse,
or an attribute with no value (at 1.38 also an empty list), makes *every* selector fail on this device up to
Kubernetes 1.37, as upstream's `getAttributeValue` error does; the problem is
recorded here (`DeviceEnv.error`) and raised when a selector is evaluated.
1.38 reads attributes lazily (`lazy`; upstream's `nameToAttributes.Find`): such an
attribute is in its domain map as an error value, so only an expression that
reads it fails ("attribute v: value is invalid or its type is not supported by
this version"; `has()` on it too), `"v" in m` is false, and iteration and size()
still count it. Those devices are evaluated by the celpy program, never the fast
path (`DeviceEnv.invalid`), which reads only valid values.

A device publishing both `name` and `<driver>/name` gets the qualified value, as
1.38's conversion keeps it (up to 1.37 upstream kept whichever its map iteration
reached last; dralloc's constraints always read the qualified one).

Two representations, because the allocator builds one `DeviceEnv` per device
and usually evaluates a single selector on it:

- the *plain* form, built eagerly and cheaply: domain -> id -> value dicts of
  Python `int`/`bool`/`str`, `Semver`, `Quantity` and tuples of those. The
  compiled fast path (`fastpath`) reads only this.
- the *celpy* form (`DeviceEnv.scope`), the variable scope that celpy's
  transpiled code reads, with celtypes values in `FastMap`/`DomainMap`s.
  Building it dominated the cost of a device, so it is derived from the plain
  form only when a program actually needs the celpy engine (`to_cel` is the one
  conversion, shared with the fast path so both see identical values).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from celpy import celtypes
from celpy.evaluation import CELEvalError

from dralloc.cel import scopes

# Re-exported: the plain conversion lives apart from the CEL engine (attributes).
from dralloc.cel.attributes import check_attribute_value as check_attribute_value
from dralloc.cel.attributes import plain_attribute_value as plain_attribute_value
from dralloc.cel.attributes import split_qualified_name as split_qualified_name
from dralloc.model.quantities import Quantity

_EMPTY_DOMAIN = celtypes.MapType()
# celpy's MapType.get raises on a missing key; the plain dict lookup is what we need.
_dict_get: Any = dict.get

_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1


class FastMap(celtypes.MapType):
    """A string-keyed CEL map built by us, read without celpy's per-lookup checks."""

    def get(self, key: Any, default: Any = None) -> Any:
        # Transpiled `m.field` reads through get(); absent keys are CEL errors.
        try:
            return dict.__getitem__(self, key)
        except KeyError:
            raise KeyError(key) from None
        except TypeError:
            raise TypeError(f"no such overload: map[{type(key).__name__}]") from None


class DomainMap(celtypes.MapType):
    """Domain -> id map whose unknown domains read as an empty map."""

    def __getitem__(self, key: Any) -> Any:
        if not isinstance(key, str):
            raise TypeError(f"no such overload: map(string, map)[{type(key).__name__}]")
        return _dict_get(self, key, _EMPTY_DOMAIN)

    def get(self, key: Any, default: Any = None) -> Any:
        # Transpiled `device.attributes.foo` reads through get().
        return self[key]


def invalid_attribute(ident: str) -> CELEvalError:
    """The value 1.38 gives an attribute it could not convert: an error for whoever reads it."""
    return CELEvalError(f"attribute {ident}: value is invalid or its type is not supported by this version")


def is_invalid(value: Any) -> bool:
    """Whether a map value is such an error (`has()` and `in` treat it apart)."""
    return type(value) is CELEvalError


class DomainValues(FastMap):
    """One domain's id -> value map (`device.attributes[d]`, `device.capacity[d]`).

    A type of its own only so that 1.38's refusal to turn it into a selector's result can be
    worded ("not implemented": upstream's map proxies have no native form)."""


def attribute_value(raw: Mapping[str, Any]) -> Any:
    """The CEL (celtypes) value of one attribute in API JSON form."""
    return to_cel(plain_attribute_value(raw))


def _cel_int(value: int) -> celtypes.IntType:
    # Plain ints are range-checked where they enter; skip celpy's per-call checks.
    return int.__new__(celtypes.IntType, value)


_TRUE = celtypes.BoolType(True)
_FALSE = celtypes.BoolType(False)


def to_cel(value: Any) -> Any:
    """The celtypes value for a plain one; anything without a plain form passes through.

    Plain: exact `str`, `int` (int64), `bool`, `float` and tuples of plain values.
    Everything else (Quantity, Semver, celpy values and error values) is the same
    object in both worlds.
    """
    kind = type(value)
    if kind is str:
        return celtypes.StringType(value)
    if kind is bool:
        return _TRUE if value else _FALSE
    if kind is int:
        return _cel_int(value)
    if kind is float:
        return celtypes.DoubleType(value)
    if kind is tuple:
        return celtypes.ListType([to_cel(v) for v in value])
    return value


def from_cel(value: Any) -> Any:
    """The plain value for a celtypes one; the inverse of `to_cel`."""
    kind = type(value)
    if kind is celtypes.BoolType:
        return bool(value)
    if kind is celtypes.IntType:
        return int(value)
    if kind is celtypes.StringType:
        return str(value)
    if kind is celtypes.DoubleType:
        return float(value)
    if kind is celtypes.ListType:
        return tuple([from_cel(v) for v in value])
    return value


@dataclass(frozen=True, slots=True, eq=False)
class DeviceEnv:
    """The value of `device` for one device; immutable, compare by identity, build with `device_env`.

    `attributes` and `capacity` are the plain domain -> id -> value maps; they are
    shared by every evaluation on this device and must not be modified.
    """

    driver: str
    allow_multiple_allocations: bool
    # Set when the device's own data is unusable; every evaluation then fails with it.
    error: str | None = None
    # Some attribute is an error value read lazily (1.38): evaluate with the celpy program.
    invalid: bool = False
    # Seen as Kubernetes 1.38 sees a device (`device_env`'s `lazy`).
    lazy: bool = False
    attributes: Mapping[str, Mapping[str, Any]] = field(default_factory=dict, repr=False)
    capacity: Mapping[str, Mapping[str, Quantity]] = field(default_factory=dict, repr=False)
    _scope: scopes.Scope | None = field(default=None, init=False, repr=False)

    @property
    def scope(self) -> scopes.Scope:
        """The celpy variable scope `{"device": ...}`, built on first use.

        Two threads may both build it; the results are equal and either may be kept.
        """
        scope = self._scope
        if scope is None:
            scope = scopes.Scope({"device": self._cel_device()}, _type_names())
            object.__setattr__(self, "_scope", scope)
        return scope

    def _cel_device(self) -> FastMap:
        return FastMap({
            celtypes.StringType("driver"): celtypes.StringType(self.driver),
            celtypes.StringType("allowMultipleAllocations"): celtypes.BoolType(self.allow_multiple_allocations),
            celtypes.StringType("attributes"): _cel_domains(self.attributes),
            celtypes.StringType("capacity"): _cel_domains(self.capacity),
        })


@functools.cache
def _type_names() -> scopes.Scope:
    # The names `int`, `string`, ... as values (`type(x) == int`); below `device`, so that a
    # macro or cel.bind variable of that name shadows them, as in cel-go.
    from dralloc.cel import functions

    return scopes.Scope(functions.TYPE_VALUES)


def _cel_domains(domains: Mapping[str, Mapping[str, Any]]) -> DomainMap:
    return DomainMap({
        celtypes.StringType(domain): DomainValues({celtypes.StringType(i): to_cel(v) for i, v in ids.items()})
        for domain, ids in domains.items()
    })


def device_env(*, driver: str,
               attributes: Mapping[str, Mapping[str, Any]],
               capacity: Mapping[str, Quantity],
               allow_multiple_allocations: bool,
               list_values: bool = True,
               lazy: bool = False) -> DeviceEnv:
    """Convert a device's attributes and capacity into the value of `device` (`list_values`:
    see `plain_attribute_value`; `lazy`: 1.38's attribute errors, module docstring)."""
    driver = str(driver)
    error: str | None = None
    invalid = False
    attribute_domains: dict[str, dict[str, Any]] = {}
    # Sorted so that, with several bad attributes, the reported one is stable.
    for name in sorted(attributes):
        domain, ident = split_qualified_name(name, driver)
        shadowed = "/" not in name and f"{driver}/{name}" in attributes  # the qualified name wins
        try:
            value = plain_attribute_value(attributes[name], list_values=list_values)
            if lazy and value == ():
                # 1.38's conversion keeps no value for an empty list (attrValue: len > 0).
                raise ValueError("unsupported attribute value")
        except ValueError as exc:
            if lazy:
                if shadowed:
                    continue
                value = invalid_attribute(ident)
                invalid = True
            else:
                if error is None:
                    error = f"attribute {name}: {exc}"
                continue
        if shadowed:
            continue
        ids = attribute_domains.get(domain)
        if ids is None:
            ids = attribute_domains[domain] = {}
        ids[ident] = value
    capacity_domains: dict[str, dict[str, Quantity]] = {}
    for name, amount in capacity.items():
        domain, ident = split_qualified_name(name, driver)
        quantity = amount if isinstance(amount, Quantity) else Quantity.parse(amount)
        amounts = capacity_domains.get(domain)
        if amounts is None:
            amounts = capacity_domains[domain] = {}
        amounts[ident] = quantity
    return DeviceEnv(
        driver=driver,
        allow_multiple_allocations=bool(allow_multiple_allocations),
        error=error,
        invalid=invalid,
        lazy=lazy,
        attributes=attribute_domains,
        capacity=capacity_domains,
    )
