"""DeviceTaintRules applied to devices: the effective taints the allocator sees.

A device's effective taints are those in its ResourceSlice plus the taint of
every DeviceTaintRule whose selector matches it. Upstream, kube-scheduler merges
them before calling the allocator; here the snapshot carries them
(`Snapshot.extra_taints`).

A rule's `deviceSelector` names a driver, pool and/or device (every served
version has these); Kubernetes 1.33/1.34's v1alpha3 also had `deviceClassName`
(the device must match that DeviceClass's selectors) and CEL `selectors` (all
must be true), which later versions dropped: they are honoured when present. An
empty or missing selector matches every device. A CEL selector that fails
(compile or runtime error) or a class that does not exist makes the rule match
nothing: a broken rule must not take a fleet out of service.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping

from dralloc.allocation import errors, selectors
from dralloc.allocation.pools import DeviceID, DeviceInfo, SliceIndex
from dralloc.model import classes, taints

SOURCE_SLICE = "slice"
SOURCE_RULE = "rule"


@dataclasses.dataclass(frozen=True)
class EffectiveTaint:
    """One taint in effect on a device, and where it comes from."""

    taint: taints.DeviceTaint
    source: str  # SOURCE_SLICE | SOURCE_RULE
    rule: str = ""  # the DeviceTaintRule's name when source is SOURCE_RULE
    rule_uid: str = ""


def rule_matches(
    rule: taints.DeviceTaintRule,
    info: DeviceInfo,
    device_classes: Mapping[str, classes.DeviceClass] | None = None,
) -> bool:
    selector = rule.spec.device_selector
    if selector is None:
        return True
    if (
        (selector.driver and selector.driver != info.id.driver)
        or (selector.pool and selector.pool != info.id.pool)
        or (selector.device and selector.device != info.id.device)
    ):
        return False
    owner = f"DeviceTaintRule {rule.metadata.name}"
    try:
        if selector.device_class_name:
            device_class = (device_classes or {}).get(selector.device_class_name)
            if device_class is None:
                return False
            selectors.check_present(device_class.spec.selectors, f"class {device_class.metadata.name}")
            if not selectors.all_match(info, device_class.spec.selectors,
                                       owner=f"class {device_class.metadata.name}"):
                return False
        if selector.selectors:
            selectors.check_present(selector.selectors, owner)
            if not selectors.all_match(info, selector.selectors, owner=owner):
                return False
    except errors.AllocationInputError:
        return False
    return True


def rule_taints(
    rules: Iterable[taints.DeviceTaintRule],
    index: SliceIndex,
    device_classes: Mapping[str, classes.DeviceClass] | None = None,
) -> dict[DeviceID, tuple[taints.DeviceTaint, ...]]:
    """Per device, the taints of the rules that select it (rules in the given order)."""
    return {device: tuple(e.taint for e in found)
            for device, found in _rule_effects(list(rules), index, device_classes).items()}


def effective_taints(
    rules: Iterable[taints.DeviceTaintRule],
    index: SliceIndex,
    device_classes: Mapping[str, classes.DeviceClass] | None = None,
) -> dict[DeviceID, tuple[EffectiveTaint, ...]]:
    """Per tainted device: its slice taints, then the taints of the rules that select it."""
    found: dict[DeviceID, list[EffectiveTaint]] = {}
    for s in index.slices:
        for info in index.device_infos(s):
            if info.taints:
                found.setdefault(info.id, []).extend(EffectiveTaint(t, SOURCE_SLICE) for t in info.taints)
    for device, effects in _rule_effects(list(rules), index, device_classes).items():
        found.setdefault(device, []).extend(effects)
    return {k: tuple(v) for k, v in found.items()}


def _rule_effects(
    rules: list[taints.DeviceTaintRule],
    index: SliceIndex,
    device_classes: Mapping[str, classes.DeviceClass] | None,
) -> dict[DeviceID, list[EffectiveTaint]]:
    found: dict[DeviceID, list[EffectiveTaint]] = {}
    if not rules:
        return found
    for s in index.slices:
        for info in index.device_infos(s):
            for rule in rules:
                if rule_matches(rule, info, device_classes):
                    found.setdefault(info.id, []).append(EffectiveTaint(
                        rule.spec.taint, SOURCE_RULE, rule.metadata.name, rule.metadata.uid or ""))
    return found
