"""Validity of an allocation on its own terms (for `exact: false` vectors and properties)."""

from __future__ import annotations

from typing import Any

from dralloc.allocation import outcomes


def problems(case: dict[str, Any], outcome: outcomes.Allocated) -> list[str]:
    found: list[str] = []
    devices = {
        (s["spec"]["driver"], s["spec"]["pool"]["name"], d["name"])
        for s in case["objects"].get("resourceSlices") or []
        for d in s["spec"].get("devices") or []
    }
    seen: set[tuple[str, str, str]] = set()
    for allocation in outcome.results:
        for r in allocation.devices.results:
            key = (r.driver, r.pool, r.device)
            if key not in devices:
                found.append(f"unknown device {key}")
            if key in seen and not r.admin_access and not r.share_id:
                found.append(f"device {key} allocated twice")
            seen.add(key)
    return found
