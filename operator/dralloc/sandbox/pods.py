"""Pod rules that belong to the API server's pod registry, shared by the REST layer and the
simulated node agents: binding and graceful deletion.

Binding (`pods/binding`) sets spec.nodeName and a True PodScheduled condition, once:
a pod already bound, still gated or being deleted is refused with 409, as upstream.
Grace periods only exist where a kubelet will finish the deletion, i.e. with
`--simulate-pods` for a pod running on a node; `gracePeriodSeconds: 0` forces.
"""

from __future__ import annotations

from typing import Any

from dralloc.sandbox import errors
from dralloc.sandbox import store as store_

Obj = dict[str, Any]


def set_condition(pod: Obj, kind: str, status: str, reason: str = "", message: str = "") -> None:
    conditions = [c for c in (pod.setdefault("status", {}).get("conditions") or []) if c.get("type") != kind]
    condition: Obj = {"type": kind, "status": status, "lastProbeTime": None, "lastTransitionTime": store_.now()}
    if reason:
        condition["reason"] = reason
    if message:
        condition["message"] = message
    pod["status"]["conditions"] = [*conditions, condition]


def bind(pod: Obj, node: str, uid: str | None = None) -> None:
    """Assign `pod` (a private copy) to `node`, or raise the Conflict the API server would."""
    name = pod["metadata"]["name"]
    if pod["metadata"].get("deletionTimestamp"):
        raise errors.conflict("pods", name, why="pod is being deleted, cannot be assigned to a host")
    spec = pod.setdefault("spec", {})
    if spec.get("nodeName"):
        raise errors.conflict("pods", name, why=f'pod {name} is already assigned to node "{spec["nodeName"]}"')
    if spec.get("schedulingGates"):
        raise errors.conflict("pods", name, why=f"pod {name} has non-empty .spec.schedulingGates")
    if uid and uid != pod["metadata"]["uid"]:
        raise errors.conflict("pods", name, why="the UID in the binding does not match the pod")
    spec["nodeName"] = node
    set_condition(pod, "PodScheduled", "True")


def grace_period(obj: Obj, options: Obj) -> int:
    """Seconds a deleted pod gets: only pods running on a node have a kubelet to stop them."""
    if obj.get("kind") != "Pod":
        return 0
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    if not spec.get("nodeName") or status.get("phase") in ("Succeeded", "Failed"):
        return 0
    grace = options.get("gracePeriodSeconds")
    return int(spec.get("terminationGracePeriodSeconds", 30) if grace is None else grace)
