"""Device taints and tolerations: does a toleration match, does a taint block allocation."""

from __future__ import annotations

from collections.abc import Iterable

from dralloc.model import taints

# Only these effects keep a device from being allocated. None and unknown effects never
# block: a new effect must not strand existing claims.
BLOCKING_EFFECTS = frozenset({"NoSchedule", "NoExecute"})


def toleration_matches(
    *, key: str | None, operator: str | None, value: str | None, effect: str | None,
    taint_key: str, taint_value: str | None, taint_effect: str,
) -> bool:
    """The toleration rule Kubernetes uses for node taints and device taints alike."""
    if effect and effect != taint_effect:
        return False
    if key and key != taint_key:
        return False
    operator = operator or "Equal"
    if operator == "Exists":
        return True
    if operator == "Equal":
        return (value or "") == (taint_value or "")
    return False


def tolerates(toleration: taints.DeviceToleration, taint: taints.DeviceTaint) -> bool:
    """Whether one toleration matches one device taint (upstream resourceclaim.ToleratesTaint)."""
    return toleration_matches(
        key=toleration.key, operator=toleration.operator, value=toleration.value, effect=toleration.effect,
        taint_key=taint.key, taint_value=taint.value, taint_effect=taint.effect,
    )


def blocking_taint(
    device_taints: Iterable[taints.DeviceTaint], tolerations: Iterable[taints.DeviceToleration]
) -> taints.DeviceTaint | None:
    """The first taint that blocks allocation despite the tolerations, or None."""
    tolerations = tuple(tolerations)
    for taint in device_taints:
        if taint.effect in BLOCKING_EFFECTS and not any(tolerates(t, taint) for t in tolerations):
            return taint
    return None
