"""DeviceTaintRules applied to devices: the effective taints the allocator sees.

A device's effective taints are those in its ResourceSlice plus the taint of
every DeviceTaintRule whose selector matches it. Upstream, kube-scheduler merges
them before calling the allocator; here the snapshot carries them
(`Snapshot.extra_taints`). A rule's selector names a driver, pool and/or device;
an empty selector matches every device.
"""

from __future__ import annotations

from collections.abc import Iterable

from dralloc.allocation.pools import DeviceID, DeviceInfo, SliceIndex
from dralloc.model import taints


def rule_matches(rule: taints.DeviceTaintRule, info: DeviceInfo) -> bool:
    selector = rule.spec.device_selector
    if selector is None:
        return True
    return not (
        (selector.driver and selector.driver != info.id.driver)
        or (selector.pool and selector.pool != info.id.pool)
        or (selector.device and selector.device != info.id.device)
    )


def rule_taints(
    rules: Iterable[taints.DeviceTaintRule], index: SliceIndex
) -> dict[DeviceID, tuple[taints.DeviceTaint, ...]]:
    """Per device, the taints of the rules that select it (rules in the given order)."""
    rules = list(rules)
    if not rules:
        return {}
    found: dict[DeviceID, list[taints.DeviceTaint]] = {}
    for s in index.slices:
        for info in index.device_infos(s):
            for rule in rules:
                if rule_matches(rule, info):
                    found.setdefault(info.id, []).append(rule.spec.taint)
    return {k: tuple(v) for k, v in found.items()}
