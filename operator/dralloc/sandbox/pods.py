"""Pod rules that belong to the API server's pod registry, shared by the REST layer and the
simulated node agents: binding, graceful deletion, and the label keys a new pod's
inter-pod terms take from its labels.

Binding (`pods/binding`) sets spec.nodeName and a True PodScheduled condition, once:
a pod already bound, still gated or being deleted is refused with 409, as upstream.
Grace periods only exist where a kubelet will finish the deletion, i.e. with
`--simulate-pods` for a pod running on a node; `gracePeriodSeconds: 0` forces.

On create, a pod with scheduling gates gets `PodScheduled=False`, reason `SchedulingGated`,
message "Scheduling is blocked due to non-empty scheduling gates" (unless it brings a
PodScheduled condition of its own), as the pod strategy's PrepareForCreate writes it; gates
may then only be removed (admission.py), and the condition stays until a scheduler writes
another.

On create, as the pod strategy's PrepareForCreate does in 1.37 (MatchLabelKeysInPodAffinity
GA, MatchLabelKeysInPodTopologySpreadSelectorMerge beta, both on): the `matchLabelKeys` of
each podAffinity/podAntiAffinity term (required and preferred) and of each topology spread
constraint become `key In (the pod's value)` requirements of the term's labelSelector, and
its `mismatchLabelKeys` `key NotIn (value)`, for the keys the pod has a label for; a term
without a labelSelector is left alone. Validation then refuses keys that are not label keys,
keys without a labelSelector, a matchLabelKeys key the selector already had, and a key in
both lists (`label_keys_causes`, upstream's ValidateMatchLabelKeysAndMismatchLabelKeys).
"""

from __future__ import annotations

from typing import Any

from dralloc.sandbox import errors, names
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


def mark_gated(pod: Obj) -> None:
    """A new pod with scheduling gates: PodScheduled=False, reason SchedulingGated (upstream's
    applySchedulingGatedCondition), unless it has a PodScheduled condition already."""
    if not (pod.get("spec") or {}).get("schedulingGates"):
        return
    if any(isinstance(c, dict) and c.get("type") == "PodScheduled"
           for c in (pod.get("status") or {}).get("conditions") or []):
        return
    set_condition(pod, "PodScheduled", "False", "SchedulingGated",
                  "Scheduling is blocked due to non-empty scheduling gates")


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


_AFFINITIES = ("podAffinity", "podAntiAffinity")
_REQUIRED, _PREFERRED = "requiredDuringSchedulingIgnoredDuringExecution", "preferredDuringSchedulingIgnoredDuringExecution"


def _terms(spec: Obj) -> list[tuple[str, Obj]]:
    """(field path, term) of every term label keys apply to, in validation order."""
    found: list[tuple[str, Obj]] = []
    affinity = spec.get("affinity") or {}
    for kind in _AFFINITIES:
        terms = affinity.get(kind) or {}
        for i, term in enumerate(terms.get(_REQUIRED) or []):
            found.append((f"spec.affinity.{kind}.{_REQUIRED}[{i}]", term))
        for i, weighted in enumerate(terms.get(_PREFERRED) or []):
            found.append((f"spec.affinity.{kind}.{_PREFERRED}[{i}].podAffinityTerm",
                          weighted.get("podAffinityTerm") or {}))
    for i, constraint in enumerate(spec.get("topologySpreadConstraints") or []):
        found.append((f"spec.topologySpreadConstraints[{i}]", constraint))
    return found


def merge_label_keys(pod: Obj) -> None:
    """A new pod's matchLabelKeys / mismatchLabelKeys merged into its terms' labelSelectors."""
    labels = (pod.get("metadata") or {}).get("labels") or {}
    for _, term in _terms(pod.get("spec") or {}):
        selector = term.get("labelSelector")
        if selector is None:
            continue  # a nil selector matches nothing: upstream leaves it nil
        added = [{"key": key, "operator": operator, "values": [labels[key]]}
                 for field, operator in (("matchLabelKeys", "In"), ("mismatchLabelKeys", "NotIn"))
                 for key in term.get(field) or [] if key in labels]
        if added:
            selector["matchExpressions"] = [*(selector.get("matchExpressions") or []), *added]


def _label_keys(path: str, keys: list[str], selector: Obj | None) -> list[tuple[str, str]]:
    if not keys:
        return []
    if selector is None:
        return [(path, "Forbidden: must not be specified when labelSelector is not set")]
    return [(f"{path}[{i}]", f"Invalid value: {errors.go_value(key)}: {detail}")
            for i, key in enumerate(keys) for detail in names.qualified_name(key)]


def label_keys_causes(pod: Obj) -> list[tuple[str, str]]:
    """ValidateMatchLabelKeysAndMismatchLabelKeys on each term of a new pod, after the merge."""
    causes: list[tuple[str, str]] = []
    for path, term in _terms(pod.get("spec") or {}):
        match, mismatch = term.get("matchLabelKeys") or [], term.get("mismatchLabelKeys") or []
        selector = term.get("labelSelector")
        causes += _label_keys(f"{path}.matchLabelKeys", match, selector)
        causes += _label_keys(f"{path}.mismatchLabelKeys", mismatch, selector)
        if selector is not None:
            index = {key: i for i, key in enumerate(match)}
            keys = set(selector.get("matchLabels") or {})
            for expression in selector.get("matchExpressions") or []:
                key = expression.get("key", "")
                if key in index and key in keys:  # sic: upstream indexes the term's path
                    causes.append((f"{path}[{index[key]}]", f"Invalid value: {errors.go_value(key)}: exists in both "
                                                            "matchLabelKeys and labelSelector"))
                keys.add(key)
        for i, key in enumerate(match):
            if key in mismatch:
                causes.append((f"{path}.matchLabelKeys[{i}]", f"Invalid value: {errors.go_value(key)}: exists in both "
                                                              "matchLabelKeys and mismatchLabelKeys"))
    return causes
