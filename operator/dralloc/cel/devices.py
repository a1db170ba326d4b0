"""The CEL variable `device`, built once per device and reused by every selector.

Upstream (`cel/compile.go`, `DeviceMatches`) files every attribute and capacity
under a domain: a name with a `domain/` prefix under that domain, a bare name
under the driver's name. `device.attributes` and `device.capacity` are maps
domain -> (map id -> value) whose lookup of an unknown *domain* yields an empty
map rather than an error, while a missing *id* inside a domain map is the usual
"no such key" error. `"d" in device.attributes` still reports only the domains
that exist.

Attribute values become CEL values: int, bool, string, version (a `Semver`),
and the list forms (`ints`, `bools`, `strings`, `versions`) become CEL lists.
A version that does not parse, or an attribute with no value, makes *every*
selector fail on this device, as upstream's `getAttributeValue` error does; the
problem is recorded here and raised when a selector is evaluated.

Upstream converts the device on every evaluation; we convert once and keep the
result in the frozen `DeviceEnv`, together with the root variable scope.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from celpy import celtypes

from dralloc.cel import scopes
from dralloc.cel.library_semver import Semver
from dralloc.model.quantities import Quantity

_EMPTY_DOMAIN = celtypes.MapType()
# celpy's MapType.get raises on a missing key; the plain dict lookup is what we need.
_dict_get: Any = dict.get



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


def split_qualified_name(name: str, default_domain: str) -> tuple[str, str]:
    """`gpu.example.com/numa` -> ("gpu.example.com", "numa"); `numa` -> (driver, "numa")."""
    domain, sep, ident = name.partition("/")
    if not sep:
        return default_domain, name
    return domain, ident


def _scalar(kind: str, raw: Any) -> Any:
    if kind == "int":
        if isinstance(raw, bool) or not isinstance(raw, int):
            raise ValueError(f"int value must be an integer, got {raw!r}")
        return celtypes.IntType(raw)
    if kind == "bool":
        if not isinstance(raw, bool):
            raise ValueError(f"bool value must be a boolean, got {raw!r}")
        return celtypes.BoolType(raw)
    if kind == "string":
        if not isinstance(raw, str):
            raise ValueError(f"string value must be a string, got {raw!r}")
        return celtypes.StringType(raw)
    try:
        return Semver.parse(raw)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"parse semantic version: {exc}") from None


_SCALAR_KINDS = ("int", "bool", "string", "version")
_LIST_KINDS = {"ints": "int", "bools": "bool", "strings": "string", "versions": "version"}


def attribute_value(raw: Mapping[str, Any]) -> Any:
    """The CEL value of one attribute in API JSON form, e.g. {"int": 1} or {"strings": [...]}."""
    for kind, scalar_kind in _LIST_KINDS.items():
        values = raw.get(kind)
        if values is not None:
            return celtypes.ListType([_scalar(scalar_kind, v) for v in values])
    for kind in _SCALAR_KINDS:
        value = raw.get(kind)
        if value is not None:
            return _scalar(kind, value)
    raise ValueError("unsupported attribute value")


@dataclass(frozen=True, eq=False)
class DeviceEnv:
    """The value of `device` for one device; compare by identity, build with `device_env`."""

    driver: str
    allow_multiple_allocations: bool
    # Set when the device's own data is unusable; every evaluation then fails with it.
    error: str | None = None
    scope: scopes.Scope = field(default=scopes.Scope({}), repr=False)


def device_env(*, driver: str,
               attributes: Mapping[str, Mapping[str, Any]],
               capacity: Mapping[str, Quantity],
               allow_multiple_allocations: bool) -> DeviceEnv:
    """Convert a device's attributes and capacity into the CEL `device` value."""
    error: str | None = None
    attribute_domains: dict[str, FastMap] = {}
    # Sorted so that, with several bad attributes, the reported one is stable.
    for name in sorted(attributes):
        domain, ident = split_qualified_name(name, driver)
        try:
            value = attribute_value(attributes[name])
        except ValueError as exc:
            if error is None:
                error = f"attribute {name}: {exc}"
            continue
        attribute_domains.setdefault(domain, FastMap())[celtypes.StringType(ident)] = value
    capacity_domains: dict[str, FastMap] = {}
    for name, amount in capacity.items():
        domain, ident = split_qualified_name(name, driver)
        quantity = amount if isinstance(amount, Quantity) else Quantity.parse(amount)
        domain_map: dict[Any, Any] = capacity_domains.setdefault(domain, FastMap())
        domain_map[celtypes.StringType(ident)] = quantity
    device = FastMap({
        celtypes.StringType("driver"): celtypes.StringType(driver),
        celtypes.StringType("allowMultipleAllocations"): celtypes.BoolType(allow_multiple_allocations),
        celtypes.StringType("attributes"): DomainMap(
            {celtypes.StringType(d): m for d, m in attribute_domains.items()}),
        celtypes.StringType("capacity"): DomainMap(
            {celtypes.StringType(d): m for d, m in capacity_domains.items()}),
    })
    return DeviceEnv(
        driver=driver,
        allow_multiple_allocations=allow_multiple_allocations,
        error=error,
        scope=scopes.Scope({"device": device}),
    )
