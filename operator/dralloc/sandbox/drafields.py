"""Field rules that several resource.k8s.io kinds share, worded as kube-apiserver 1.37 words them.

Each helper appends (field path, message) causes: names of drivers (a DNS subdomain of
at most 63 bytes), of attributes and capacities (a C identifier of at most 32 bytes,
optionally behind a driver-like domain and '/'), and device taints (a qualified key, a
label value, one of three effects), used by slices, taint rules and claims alike.
"""

from __future__ import annotations

import contextvars
from typing import Any

from dralloc.sandbox import errors, names

Obj = dict[str, Any]
Causes = list[tuple[str, str]]

MAX_TAINTS = 16
MAX_DRIVER_NAME = 63
MAX_ID_LENGTH = 32
TAINT_EFFECTS = ("NoExecute", "NoSchedule", "None")

# The release whose rules apply (`dra.validate` sets it for one object): 1.38 changed a few.
RELEASE: contextvars.ContextVar[str] = contextvars.ContextVar("release", default="1.37")


def since_138() -> bool:
    return RELEASE.get() not in ("1.36", "1.37")


def invalid(path: str, value: Any, details: list[str], causes: Causes) -> None:
    causes.extend((path, f"Invalid value: {errors.go_value(value)}: {detail}") for detail in details)


def too_many(items: Any, limit: int, path: str, causes: Causes) -> None:
    if isinstance(items, list | dict) and len(items) > limit:
        causes.append((path, f"Too many: {len(items)}: must have at most {limit} items"))


def _without_length(details: list[str]) -> list[str]:
    # Driver names report their length as "Too long" in bytes, not as a name's "no more than".
    return [d for d in details if not d.startswith("must be no more")]


def driver_name(value: str, path: str, causes: Causes) -> None:
    if not value:
        causes.append((path, "Required value"))
        return
    if len(value) > MAX_DRIVER_NAME:
        causes.append((path, f"Too long: may not be more than {MAX_DRIVER_NAME} bytes"))
    invalid(path, value, _without_length(names.dns1123_subdomain(value)), causes)


def opaque_driver(value: str, path: str, causes: Causes) -> None:
    """The driver of opaque configs and allocation results: an RFC 1123 subdomain in any case."""
    if not value:
        causes.append((path, "Required value"))
        return
    if len(value) > MAX_DRIVER_NAME:
        causes.append((path, f"Too long: may not be more than {MAX_DRIVER_NAME} bytes"))
    invalid(path, value, _without_length(names.rfc1123_subdomain_any_case(value)), causes)


def identifier(value: str, path: str, causes: Causes) -> None:
    if len(value) > MAX_ID_LENGTH:
        causes.append((path, f"Too long: may not be more than {MAX_ID_LENGTH} bytes"))
    invalid(path, value, names.c_identifier(value), causes)


def qualified_name(key: str, path: str, causes: Causes) -> None:
    """An attribute or capacity name: a C identifier, optionally behind a driver-like domain and '/'
    (1.38 rejects more than one '/' outright)."""
    if since_138() and key.count("/") > 1:
        causes.append((path, f"Invalid value: {errors.go_value(key)}: must not contain more than one slash"))
        return
    domain, slash, ident = key.rpartition("/")
    if slash:
        if len(domain) > MAX_DRIVER_NAME:
            causes.append((path, f"Too long: may not be more than {MAX_DRIVER_NAME} bytes"))
        invalid(path, domain, _without_length(names.dns1123_subdomain(domain)), causes)
    identifier(ident, path, causes)


def fully_qualified_name(value: str, path: str, causes: Causes) -> None:
    """A constraint's attribute, a derived attribute, a partition type: `domain/identifier`, the domain required."""
    domain, slash, ident = value.rpartition("/")
    identifier(ident, path, causes)
    if not slash:
        causes.append((path, f"Invalid value: {errors.go_value(value)}: a fully qualified name must be a domain and a "
                             "name separated by a slash"))
    else:
        invalid(path, domain, ["prefix: " + d for d in names.dns1123_subdomain(domain)], causes)


def taint_key(key: str, path: str, causes: Causes) -> None:
    invalid(path, key, names.qualified_name(key), causes)


def taints(items: Any, path: str, causes: Causes) -> None:
    too_many(items, MAX_TAINTS, path, causes)
    for i, item in enumerate(items or []):
        taint(item, f"{path}[{i}]", causes)


def taint(taint: Obj, path: str, causes: Causes) -> None:
    taint_key(taint.get("key", ""), f"{path}.key", causes)
    if taint.get("value"):
        invalid(f"{path}.value", taint["value"], names.label_value(taint["value"]), causes)
    effect = taint.get("effect", "")
    if not effect:
        causes.append((f"{path}.effect", "Required value"))
    elif effect not in TAINT_EFFECTS:
        causes.append((f"{path}.effect", f"Unsupported value: {errors.go_value(effect)}: supported values: "
                                         + ", ".join(f'"{e}"' for e in TAINT_EFFECTS)))
