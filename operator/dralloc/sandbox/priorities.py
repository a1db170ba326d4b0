"""scheduling.k8s.io/v1 PriorityClasses and the Priority admission plugin, as kube-apiserver 1.37.2 does them.

PriorityClasses (pkg/apis/scheduling/validation, the v1 defaults, the registry): `value`
defaults to 0 and `preemptionPolicy` to PreemptLowerPriority; a user class's value is at
most 1000000000 (`value: Forbidden: maximum allowed value of a user defined priority is
1000000000`); names starting with `system-` are reserved for the two system classes
(exactly their value, not globalDefault); `preemptionPolicy` is PreemptLowerPriority or
Never. After creation `value` (`Forbidden: may not be changed in an update.`) and
`preemptionPolicy` (`field is immutable`) are fixed, and nothing else is re-checked, as
upstream's update validation does. The two system classes exist from the start and
cannot be deleted (403).

The Priority admission plugin: a second class with `globalDefault: true` is refused (403
`PriorityClass X is already marked as default. Only one default can exist`), after
validation. A new Pod gets `priority` (and `preemptionPolicy`) from its
`priorityClassName`, or from the global default class (whose name it then carries), or 0
and PreemptLowerPriority without one; an unknown class is a 403 `no PriorityClass with
name X was found`, and a `priority` or `preemptionPolicy` given that differs from the
computed one a 403 too. A Pod update keeps both when it leaves them out. New PodGroups
(scheduling.k8s.io/v1beta1, `workloads.py`) get `priority` and `priorityClassName` the
same way (PodGroupPreemptionPolicy is off: no preemption policy).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dralloc.sandbox import errors

Obj = dict[str, Any]
Causes = list[tuple[str, str]]
Lookup = Callable[[str], list[Obj]]  # storage key -> the stored objects

GROUP = "scheduling.k8s.io"
STORAGE = f"{GROUP}/priorityclasses"
HIGHEST_USER_PRIORITY = 1_000_000_000
SYSTEM_PREFIX = "system-"
PREEMPTION_POLICIES = ("PreemptLowerPriority", "Never")
DEFAULT_POLICY = "PreemptLowerPriority"
SYSTEM_CLASSES = {  # name -> (value, description), in upstream's order
    "system-node-critical": (2_000_001_000, "Used for system critical pods that must not be moved from their "
                                            "current node."),
    "system-cluster-critical": (2_000_000_000, "Used for system critical pods that must run in the cluster, but can "
                                               "be moved to another node if necessary."),
}
SYSTEM_PRIORITIES = {name: value for name, (value, _) in SYSTEM_CLASSES.items()}


def system_objects() -> list[Obj]:
    """The system PriorityClasses kube-apiserver creates at start."""
    return [{"apiVersion": f"{GROUP}/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value,
             "description": description, "preemptionPolicy": DEFAULT_POLICY}
            for name, (value, description) in SYSTEM_CLASSES.items()]


def forbidden(plural: str, group: str, name: str, why: str) -> errors.ApiError:
    """An admission plugin's refusal: 403 `plural.group "name" is forbidden: why`."""
    qualified = f"{plural}.{group}" if group else plural
    return errors.ApiError(403, f'{qualified} "{name}" is forbidden: {why}',
                           details={"name": name, "group": group, "kind": plural})


def default(obj: Obj) -> None:
    obj.setdefault("value", 0)  # no omitempty on its JSON tag
    obj.setdefault("preemptionPolicy", DEFAULT_POLICY)


def validate(obj: Obj, old: Obj | None, release: str = "1.37") -> Causes:
    """ValidatePriorityClass on create, ValidatePriorityClassUpdate on update (1.38 words a changed
    `value` as any immutable field)."""
    causes: Causes = []
    value = obj.get("value", 0)
    policy = obj.get("preemptionPolicy")
    if old is not None:
        if value != old.get("value", 0):
            causes.append(("value", "Forbidden: may not be changed in an update." if release in ("1.36", "1.37")
                           else f"Invalid value: {errors.go_value(value)}: field is immutable"))
        if policy != old.get("preemptionPolicy"):
            causes.append(("preemptionPolicy", f"Invalid value: {errors.go_value(policy)}: field is immutable"))
        return causes
    name = (obj.get("metadata") or {}).get("name", "")
    if name.startswith(SYSTEM_PREFIX):
        if name not in SYSTEM_PRIORITIES:
            why = f"{name} is not a known system priority class"
        elif value != SYSTEM_PRIORITIES[name]:
            why = f"value of {name} PriorityClass must be {SYSTEM_PRIORITIES[name]}"
        elif obj.get("globalDefault"):
            why = f"globalDefault of {name} PriorityClass must be false"
        else:
            why = ""
        if why:
            causes.append(("metadata.name", f"Forbidden: priority class names with '{SYSTEM_PREFIX}' prefix are "
                                            f"reserved for system use only. error: {why}"))
    elif value > HIGHEST_USER_PRIORITY:
        causes.append(("value", f"Forbidden: maximum allowed value of a user defined priority is "
                                f"{HIGHEST_USER_PRIORITY}"))
    if policy == "":
        causes.append(("preemptionPolicy", "Required value"))
    elif policy is not None and policy not in PREEMPTION_POLICIES:
        causes.append(("preemptionPolicy", f"Unsupported value: {errors.go_value(policy)}: supported values: "
                                           + ", ".join(errors.go_quote(p) for p in PREEMPTION_POLICIES)))
    return causes


def default_class(classes: list[Obj]) -> Obj | None:
    """The global default: of the classes marked globalDefault, the one with the lowest value."""
    marked = [c for c in classes if c.get("globalDefault")]
    return min(marked, key=lambda c: c.get("value", 0)) if marked else None


def global_default_refusal(obj: Obj, old: Obj | None, lookup: Lookup | None) -> str:
    """The plugin's check of a PriorityClass write: '' when it may be written."""
    if not obj.get("globalDefault") or lookup is None:
        return ""
    found = default_class(lookup(STORAGE))
    if found is not None and (old is None or found["metadata"]["name"] != obj["metadata"]["name"]):
        return f"PriorityClass {found['metadata']['name']} is already marked as default. Only one default can exist"
    return ""


def _classes(lookup: Lookup | None) -> list[Obj]:
    if lookup is not None:
        return lookup(STORAGE)
    return system_objects()  # no store to ask: what every cluster has


def establish(class_name: str, lookup: Lookup | None) -> tuple[str, int, str | None, str]:
    """(class name, priority, preemption policy, refusal) for an object naming `class_name` ('' for none)."""
    classes = _classes(lookup)
    if not class_name:
        found = default_class(classes)
        if found is None:
            return "", 0, DEFAULT_POLICY, ""
        return found["metadata"]["name"], found.get("value", 0), found.get("preemptionPolicy"), ""
    found = next((c for c in classes if c["metadata"]["name"] == class_name), None)
    if found is None:
        return class_name, 0, None, f"no PriorityClass with name {class_name} was found"
    return class_name, found.get("value", 0), found.get("preemptionPolicy"), ""


def admit_pod(pod: Obj, old: Obj | None, lookup: Lookup | None) -> str:
    """The plugin on a Pod write (spec changed in place); '' when admitted, else the 403's reason."""
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return ""
    if old is not None:
        before = old.get("spec") or {}
        for field in ("priority", "preemptionPolicy"):
            if spec.get(field) is None and before.get(field) is not None:
                spec[field] = before[field]
        return ""
    name, priority, policy, refusal = establish(spec.get("priorityClassName") or "", lookup)
    if refusal:
        return refusal
    if name:
        spec["priorityClassName"] = name
    if spec.get("priority") is not None and spec["priority"] != priority:
        return (f"the integer value of priority ({spec['priority']}) must not be provided in pod spec; priority "
                f"admission controller computed {priority} from the given PriorityClass name")
    spec["priority"] = priority
    if policy is not None:
        if spec.get("preemptionPolicy") is not None and spec["preemptionPolicy"] != policy:
            return (f"the string value of PreemptionPolicy ({spec['preemptionPolicy']}) must not be provided in pod "
                    f"spec; priority admission controller computed {policy} from the given PriorityClass name")
        spec["preemptionPolicy"] = policy
    return ""


def admit_pod_group(group: Obj, lookup: Lookup | None, *, preemption: bool = False) -> str:
    """The plugin on a new PodGroup (GenericWorkload on); `preemption`: PodGroupPreemptionPolicy on
    (1.38, where the gate is gone): the class's preemptionPolicy is set, or must match the group's."""
    spec = group.get("spec") or {}
    name, priority, policy, refusal = establish(spec.get("priorityClassName") or "", lookup)
    if refusal:
        return refusal
    if spec.get("priority") is not None and spec["priority"] != priority:
        return (f"priority set in the pod group ({spec['priority']}) must match the priority computed ({priority}) "
                "based on the priority class set in the spec")
    spec["priority"] = priority
    if name:
        spec["priorityClassName"] = name
    if preemption and policy is not None:
        if policy not in ("PreemptLowerPriority", "Never"):
            return (f"preemptionPolicy set in the PriorityClass object ({policy}) must match one of the allowed "
                    "values of PreemptionPolicy type in pod group")
        if spec.get("preemptionPolicy") is not None and spec["preemptionPolicy"] != policy:
            return (f"the string value of PreemptionPolicy ({spec['preemptionPolicy']}) must not be provided in pod "
                    f"group spec; priority admission controller computed {policy} from the given PriorityClass name")
        spec["preemptionPolicy"] = policy
    return ""
