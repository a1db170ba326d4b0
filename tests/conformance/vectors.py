"""Load the conformance vectors and compare an outcome with a vector's expectation.

The vectors (tests/conformance/vectors, copied from the shared conformance set)
were verified against upstream's allocator. Comparison follows their README:
results as multisets, `<generated>` share IDs, quantities by value, config in
order, node selectors ignoring order. `exact: false` vectors are checked for
validity instead of identity.
"""

from __future__ import annotations

import collections
import pathlib
from typing import Any

import yaml

from dralloc.allocation.features import DEFAULT_RELEASE, RELEASES
from dralloc.model.quantities import Quantity

VECTORS = pathlib.Path(__file__).parent / "vectors"


def load_all() -> list[dict[str, Any]]:
    return [yaml.safe_load(p.read_text()) for p in sorted(VECTORS.glob("*.yaml"))]


def releases(case: dict[str, Any]) -> list[str]:
    """The releases dralloc reproduces (Features.release) that the vector's `versions` lists.

    A vector that lists none of them (the `beyond-*` ones: dralloc's own behaviour) runs at
    dralloc's default release.
    """
    listed = {str(v) for v in case.get("versions") or []}
    return [r for r in RELEASES if r in listed] or [DEFAULT_RELEASE]


def _norm_result(entry: dict[str, Any]) -> tuple[Any, ...]:
    entry = dict(entry)
    share = entry.pop("shareID", None)
    consumed = entry.pop("consumedCapacity", None) or {}
    consumed_key = tuple(sorted((k, Quantity.parse(v).value) for k, v in consumed.items()))
    share_key = "<generated>" if share is not None else None
    rest = {k: v for k, v in entry.items() if v not in (None, [], {}, False)}
    return (yaml.safe_dump(rest, sort_keys=True), share_key, consumed_key)


def _norm_selector(selector: dict[str, Any] | None) -> Any:
    if not selector:
        return None
    terms = []
    for term in selector.get("nodeSelectorTerms") or []:
        parts = []
        for kind in ("matchExpressions", "matchFields"):
            for req in term.get(kind) or []:
                parts.append((kind, req["key"], req["operator"], tuple(sorted(req.get("values") or []))))
        terms.append(tuple(sorted(parts)))
    return tuple(sorted(terms))


def _norm_config(config: list[dict[str, Any]] | None) -> list[Any]:
    return [
        (c.get("source"), tuple(c.get("requests") or ()), yaml.safe_dump(c.get("opaque"), sort_keys=True))
        for c in config or []
    ]


def same_allocation(actual: dict[str, Any], expected: dict[str, Any]) -> str | None:
    """None when equal under the vector rules, else a description of the first difference."""
    if "allocationTimestamp" in actual:
        return "allocationTimestamp must not be set by the allocator"
    a_devices, e_devices = actual.get("devices") or {}, expected.get("devices") or {}
    a_results = collections.Counter(_norm_result(r) for r in a_devices.get("results") or [])
    e_results = collections.Counter(_norm_result(r) for r in e_devices.get("results") or [])
    if a_results != e_results:
        return f"results differ:\n actual={a_devices.get('results')}\n expected={e_devices.get('results')}"
    for r in a_devices.get("results") or []:
        if "shareID" in r and not r["shareID"]:
            return "empty shareID"
    if _norm_config(a_devices.get("config")) != _norm_config(e_devices.get("config")):
        return f"config differs:\n actual={a_devices.get('config')}\n expected={e_devices.get('config')}"
    if _norm_selector(actual.get("nodeSelector")) != _norm_selector(expected.get("nodeSelector")):
        return f"nodeSelector differs:\n actual={actual.get('nodeSelector')}\n expected={expected.get('nodeSelector')}"
    return None


def same_shape(actual: dict[str, Any], expected: dict[str, Any]) -> str | None:
    """For exact: false vectors: same request names (multiset) and same config."""
    a = collections.Counter(r["request"] for r in (actual.get("devices") or {}).get("results") or [])
    e = collections.Counter(r["request"] for r in (expected.get("devices") or {}).get("results") or [])
    if a != e:
        return f"request names differ: {a} vs {e}"
    if _norm_config((actual.get("devices") or {}).get("config")) != _norm_config(
        (expected.get("devices") or {}).get("config")
    ):
        return "config differs"
    return None
