"""Device taints and tolerations: does a toleration match, does a taint block allocation."""

from __future__ import annotations

from collections.abc import Iterable

from dralloc.model import taints

# Only these effects keep a device from being allocated. None and unknown effects never
# block: a new effect must not strand existing claims.
BLOCKING_EFFECTS = frozenset({"NoSchedule", "NoExecute"})


def tolerates(toleration: taints.DeviceToleration, taint: taints.DeviceTaint) -> bool:
    """Whether one toleration matches one taint (upstream resourceclaim.ToleratesTaint)."""
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    operator = toleration.operator or "Equal"
    if operator == "Exists":
        return True
    if operator == "Equal":
        return (toleration.value or "") == (taint.value or "")
    return False


def blocking_taint(
    device_taints: Iterable[taints.DeviceTaint], tolerations: Iterable[taints.DeviceToleration]
) -> taints.DeviceTaint | None:
    """The first taint that blocks allocation despite the tolerations, or None."""
    tolerations = tuple(tolerations)
    for taint in device_taints:
        if taint.effect in BLOCKING_EFFECTS and not any(tolerates(t, taint) for t in tolerations):
            return taint
    return None
