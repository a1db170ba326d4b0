"""policy/v1 PodDisruptionBudgets (namespaced, short name `pdb`, with `/status`), as kube-apiserver 1.37.2 serves them.

Each rule was recorded from the real 1.37.2 server (tests/sandbox/test_disruption_budgets.py,
tests/handlers/test_admission.py) and follows upstream's pkg/apis/policy/validation
(ValidatePodDisruptionBudget, ValidatePodDisruptionBudgetSpec,
ValidatePodDisruptionBudgetStatusUpdate) and pkg/registry/policy/poddisruptionbudget (the
strategies). The status the disruption controller writes is `disruption.py`'s; what the eviction
subresource does with a budget is `evictions.py`'s.

Defaults: none (policy/v1 registers no defaulting; `unhealthyPodEvictionPolicy` stays unset, which
the eviction reads as IfHealthyBudget). A create clears the status to Go's zero value, which is
written back as `{disruptionsAllowed: 0, currentHealthy: 0, desiredHealthy: 0, expectedPods: 0}`
(those four have no omitempty), sets generation 1; a spec write keeps the status and bumps the
generation when the spec changed (compared as Go's semantic equality: an empty selector part is
none); `/status` keeps the spec. `spec` is always written (`{}` when empty), its fields in the Go
struct's order (`minAvailable`, `selector`, `maxUnavailable`, `unhealthyPodEvictionPolicy`), the
selector's empty parts dropped. As upstream's dropDisabledFields does, the v1beta1 marker
expression (`pdb.kubernetes.io/deprecated-v1beta1-empty-selector-match`) is stripped from a new or
changed selector unless it is the whole selector (match-none).

Refusals (422, upstream's paths, texts and order): both `minAvailable` and `maxUnavailable`
(`spec: Invalid value: {"MinAvailable":1,"Selector":...,"MaxUnavailable":"50%",
"UnhealthyPodEvictionPolicy":null}: minAvailable and maxUnavailable cannot be both set`, the
internal Go struct as the bad value); each of them a non-negative integer or a percentage
(`[0-9]+%`, so `5.5%` and `""` are refused) not over 100%; the selector a valid label selector
(metav1 ValidateLabelSelector: no `Gt`/`Lt`); `unhealthyPodEvictionPolicy` IfHealthyBudget or
AlwaysAllow (NotSupported, also for ""). The spec stays mutable after creation and is checked
again as on create (selector values are not re-checked when the old selector already failed
them, as the strategy allows; no API write makes such an old object). The name is only checked as
a path segment (`a/b`, `a%b`, `.`, `..`; `Bad_Name` and 300 characters pass), and only once the
spec passed, as the generic metadata check comes after the strategy's. `/status`: metav1
condition rules (a repeated type is a Duplicate at `status.conditions[i]`) and the four counts
not negative. A wrong JSON type is a 400 at decoding: an int-or-string decodes as Go's int32
(`json: cannot unmarshal number 1.5 into Go struct field PodDisruptionBudgetSpec.spec.
minAvailable of type int32`, structural.py).

`kubectl get pdb`: NAME, MIN AVAILABLE, MAX UNAVAILABLE (`N/A` when unset), ALLOWED DISRUPTIONS,
AGE (tables.py).

Not reproduced, as for every kind the sandbox serves: the refusal of a PUT without
`metadata.resourceVersion` (the strategy allows no unconditional update; the sandbox applies it)
and managedFields.
"""

from __future__ import annotations

import math
import re
from typing import Any

from dralloc.sandbox import errors, names, storagecapacities, volumes
from dralloc.sandbox import store as store_

Obj = dict[str, Any]
Causes = list[tuple[str, str]]

GROUP = "policy"
STORAGE = f"{GROUP}/poddisruptionbudgets"
V1BETA1_LABEL = "pdb.kubernetes.io/deprecated-v1beta1-empty-selector-match"
POLICIES = ("AlwaysAllow", "IfHealthyBudget")  # as upstream's sorted set lists them
ALWAYS_ALLOW = "AlwaysAllow"
CONDITION = "DisruptionAllowed"
SUFFICIENT, INSUFFICIENT, SYNC_FAILED = "SufficientPods", "InsufficientPods", "SyncFailed"
COUNTS = ("disruptionsAllowed", "currentHealthy", "desiredHealthy", "expectedPods")  # no omitempty
_SPEC_FIELDS = ("minAvailable", "selector", "maxUnavailable", "unhealthyPodEvictionPolicy")
_STATUS_FIELDS = ("observedGeneration", "disruptedPods", *COUNTS, "conditions")
_PERCENT = re.compile(r"[0-9]+%")
PERCENT_DETAIL = names.regex_detail("a valid percent string must be a numeric string followed by an ending '%'",
                                    "[0-9]+%", "1%", "93%")
NEGATIVE = "must be greater than or equal to 0"
_REASON = re.compile(r"[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?")
REASON_DETAIL = names.regex_detail(
    "a condition reason must start with alphabetic character, optionally followed by a string of alphanumeric "
    "characters or '_,:', and must end with an alphanumeric character or '_'",
    "[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?", "my_name", "MY_NAME", "MyName", "ReasonA,ReasonB", "ReasonA:ReasonB")
_CONDITION_STATUSES = ("False", "True", "Unknown")


# ---- Go's shape ---------------------------------------------------------------------------------


def empty_status() -> Obj:
    """PodDisruptionBudgetStatus{} as Go writes it."""
    return dict.fromkeys(COUNTS, 0)


def go_condition(condition: Any) -> Any:
    """A metav1.Condition as Go writes it: type, status, observedGeneration (omitempty),
    lastTransitionTime, reason, message."""
    if not isinstance(condition, dict):
        return condition
    out: Obj = {"type": condition.get("type", ""), "status": condition.get("status", "")}
    if condition.get("observedGeneration"):
        out["observedGeneration"] = condition["observedGeneration"]
    out["lastTransitionTime"] = condition.get("lastTransitionTime")
    out["reason"] = condition.get("reason", "")
    out["message"] = condition.get("message", "")
    return out


def go_status(status: Obj) -> Obj:
    """The status's fields in the Go struct's order, the omitempty ones dropped when empty."""
    out: Obj = {}
    for field in _STATUS_FIELDS:
        value = status.get(field)
        if field in COUNTS:
            out[field] = 0 if value is None else value
        elif field == "disruptedPods" and isinstance(value, dict):
            if value:
                out[field] = dict(sorted(value.items()))
        elif field == "conditions" and isinstance(value, list):
            if value:
                out[field] = [go_condition(c) for c in value]
        elif value:
            out[field] = value
    return out


def _match_none(selector: Any) -> bool:
    """NonV1beta1MatchNoneSelector: only the marker expression, Exists."""
    return isinstance(selector, dict) and not selector.get("matchLabels") and volumes.semantic(
        selector.get("matchExpressions")) == [{"key": V1BETA1_LABEL, "operator": "Exists"}]


def _strip_marker(spec: Obj, old: Obj | None) -> None:
    """dropDisabledFields: the v1beta1 marker expression never joins a user's own selector."""
    selector = spec.get("selector")
    if old is not None and volumes.semantic(selector) == volumes.semantic((old.get("spec") or {}).get("selector")):
        return
    if not isinstance(selector, dict) or _match_none(selector):
        return
    expressions = selector.get("matchExpressions")
    if isinstance(expressions, list):
        selector["matchExpressions"] = [e for e in expressions
                                        if not (isinstance(e, dict) and e.get("key") == V1BETA1_LABEL)]


def default(pdb: Obj, old: Obj | None) -> None:
    """PrepareForCreate / PrepareForUpdate, and the object as Go writes it back."""
    if old is None:
        pdb["status"] = empty_status()
    spec = pdb.get("spec")
    if spec is None:
        spec = pdb["spec"] = {}
    if isinstance(spec, dict):
        _strip_marker(spec, old)
        if isinstance(spec.get("selector"), dict):
            spec["selector"] = storagecapacities.go_selector(spec["selector"])
        pdb["spec"] = {**{f: spec[f] for f in _SPEC_FIELDS if f in spec},
                       **{k: v for k, v in spec.items() if k not in _SPEC_FIELDS}}
    status = pdb.get("status")
    if isinstance(status, dict):
        pdb["status"] = go_status(status)
    moved: Obj = {field: pdb.pop(field) for field in ("spec", "status") if field in pdb}
    pdb.update(moved)


# ---- validation ---------------------------------------------------------------------------------


def _int_or_percent(value: Any, path: str) -> Causes:
    """ValidatePositiveIntOrPercent, then IsNotMoreThan100Percent (the bad value is the
    IntOrString: JSON-quoted when a string)."""
    shown = errors.go_json(value)
    if isinstance(value, str):
        if not _PERCENT.fullmatch(value):
            return [(path, f"Invalid value: {shown}: {PERCENT_DETAIL}")]
        if int(value[:-1]) > 100:
            return [(path, f"Invalid value: {shown}: must not be greater than 100%")]
        return []
    if isinstance(value, int) and not isinstance(value, bool):
        return [(path, f"Invalid value: {shown}: {NEGATIVE}")] if value < 0 else []
    return [(path, f"Invalid value: {shown}: must be an integer or percentage (e.g '5%%')")]


def _internal_spec(spec: Obj) -> str:
    """The internal PodDisruptionBudgetSpec (no JSON tags) as a field error prints it."""
    selector = spec.get("selector")
    return errors.go_json({
        "MinAvailable": spec.get("minAvailable"),
        "Selector": storagecapacities.go_selector(selector) if isinstance(selector, dict) else selector,
        "MaxUnavailable": spec.get("maxUnavailable"),
        "UnhealthyPodEvictionPolicy": spec.get("unhealthyPodEvictionPolicy")})


def selector_causes(selector: Any, path: str, *, allow_invalid_values: bool = False) -> Causes:
    """metav1 ValidateLabelSelector; AllowInvalidLabelValueInSelector skips the expressions' values."""
    if not isinstance(selector, dict):
        return []
    causes = volumes.label_selector_causes(selector, path)
    if allow_invalid_values:
        causes = [(where, message) for where, message in causes if ".values[" not in where]
    return causes


def spec_causes(spec: Obj, old_spec: Obj | None = None) -> Causes:
    """ValidatePodDisruptionBudgetSpec at `spec`."""
    causes: Causes = []
    if spec.get("minAvailable") is not None and spec.get("maxUnavailable") is not None:
        causes.append(("spec", f"Invalid value: {_internal_spec(spec)}: minAvailable and maxUnavailable cannot be "
                               "both set"))
    for field in ("minAvailable", "maxUnavailable"):
        if spec.get(field) is not None:
            causes += _int_or_percent(spec[field], f"spec.{field}")
    allow = old_spec is not None and bool(selector_causes(old_spec.get("selector"), "spec.selector"))
    causes += selector_causes(spec.get("selector"), "spec.selector", allow_invalid_values=allow)
    policy = spec.get("unhealthyPodEvictionPolicy")
    if policy is not None and policy not in POLICIES:
        causes.append(("spec.unhealthyPodEvictionPolicy", f"Unsupported value: {errors.go_value(policy)}: supported "
                                                          "values: " + ", ".join(f'"{p}"' for p in POLICIES)))
    return causes


def condition_causes(conditions: list[Any], path: str, *, whole_duplicates: bool = False) -> Causes:
    """metav1 ValidateConditions: a repeated type first (at the item), then each condition's fields.
    `whole_duplicates` (kube-apiserver 1.38 on a PDB's status): the repeated condition is printed
    whole, as Go's JSON of metav1.Condition, not by its type."""
    causes: Causes = []
    seen: set[str] = set()
    for i, condition in enumerate(conditions):
        where = f"{path}[{i}]"
        condition = condition if isinstance(condition, dict) else {}
        kind = str(condition.get("type") or "")
        if kind in seen:
            shown = errors.go_json(_as_condition(condition)) if whole_duplicates else errors.go_value(kind)
            causes.append((where, f"Duplicate value: {shown}"))
        seen.add(kind)
        if not kind:
            causes.append((f"{where}.type", "Required value: is required"))
        else:
            causes += [(f"{where}.type", f"Invalid value: {errors.go_value(kind)}: {detail}")
                       for detail in names.qualified_name(kind)]
        status = condition.get("status") or ""
        if not status:
            causes.append((f"{where}.status", "Required value"))
        elif status not in _CONDITION_STATUSES:
            causes.append((f"{where}.status", f"Unsupported value: {errors.go_value(status)}: supported values: "
                                              + ", ".join(f'"{s}"' for s in _CONDITION_STATUSES)))
        generation = condition.get("observedGeneration") or 0
        if isinstance(generation, int) and generation < 0:
            causes.append((f"{where}.observedGeneration", f"Invalid value: {generation}: must be greater than or "
                                                          "equal to zero"))
        if not condition.get("lastTransitionTime"):
            causes.append((f"{where}.lastTransitionTime", "Required value"))
        reason = str(condition.get("reason") or "")
        if not reason:
            causes.append((f"{where}.reason", "Required value"))
        else:
            if not _REASON.fullmatch(reason):
                causes.append((f"{where}.reason", f"Invalid value: {errors.go_value(reason)}: {REASON_DETAIL}"))
            if len(reason.encode()) > 1024:
                causes.append((f"{where}.reason", "Too long: may not be more than 1024 bytes"))
        if len(str(condition.get("message") or "").encode()) > 32 * 1024:
            causes.append((f"{where}.message", "Too long: may not be more than 32768 bytes"))
    return causes


def _as_condition(condition: Obj) -> dict[str, Any]:
    """metav1.Condition's fields in Go's order (observedGeneration omitted when 0)."""
    shown: dict[str, Any] = {"type": condition.get("type") or "", "status": condition.get("status") or ""}
    if condition.get("observedGeneration"):
        shown["observedGeneration"] = condition["observedGeneration"]
    shown |= {"lastTransitionTime": condition.get("lastTransitionTime") or None,
              "reason": condition.get("reason") or "", "message": condition.get("message") or ""}
    return shown


def status_causes(status: Obj, release: str = "1.37") -> Causes:
    """ValidatePodDisruptionBudgetStatusUpdate for policy/v1. 1.38 checks the counts before the
    conditions and prints a repeated condition whole (checked against v1.38.0-beta.0)."""
    conditions = status.get("conditions")
    since_138 = release not in ("1.36", "1.37")
    causes = (condition_causes(conditions, "status.conditions", whole_duplicates=since_138)
              if isinstance(conditions, list) else [])
    counts: Causes = []
    for field in COUNTS:
        value = status.get(field) or 0
        if isinstance(value, int) and value < 0:
            counts.append((f"status.{field}", f"Invalid value: {value}: {NEGATIVE}"))
    return counts + causes if since_138 else causes + counts


def validate(pdb: Obj, old: Obj | None, subresource: str, release: str = "1.37") -> Causes:
    """The strategy's Validate / ValidateUpdate, or the status strategy's on `/status`."""
    if subresource == "status":
        status = pdb.get("status")
        return status_causes(status, release) if isinstance(status, dict) else []
    spec = pdb.get("spec")
    if not isinstance(spec, dict):
        return []
    old_spec = (old.get("spec") or {}) if old is not None else None
    return spec_causes(spec, old_spec if isinstance(old_spec, dict) else None)


# ---- what the controller and the eviction share --------------------------------------------------


def selects(selector: Any, labels: dict[str, str]) -> bool:
    """metav1.LabelSelectorAsSelector(selector).Matches(labels): no selector matches no pod, an empty
    one every pod; a selector that does not convert (validation keeps those out) matches none."""
    if not isinstance(selector, dict) or selector_causes(selector, ""):
        return False
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for req in selector.get("matchExpressions") or []:
        key, values = req.get("key", ""), req.get("values") or []
        found = {"In": key in labels and labels[key] in values, "NotIn": key not in labels or labels[key] not in values,
                 "Exists": key in labels, "DoesNotExist": key not in labels}.get(req.get("operator", ""), False)
        if not found:
            return False
    return True


def scaled(value: Any, total: int) -> int:
    """intstr.GetScaledValueFromIntOrPercent, rounding up (validated values only: an int or `N%`)."""
    if isinstance(value, str):
        return math.ceil(float(int(value[:-1])) * float(total) / 100)
    return int(value)


def pod_ready(pod: Obj) -> bool:
    """IsPodReady: the Ready condition is True (whatever the phase)."""
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or [] if isinstance(c, dict))


def set_condition(status: Obj, reason: str, message: str = "") -> None:
    """apimeta.SetStatusCondition of DisruptionAllowed (True only for SufficientPods); the transition
    time moves when the status changes, the observed generation is the status's."""
    wanted = "True" if reason == SUFFICIENT else "False"
    conditions = status.setdefault("conditions", [])
    found = next((c for c in conditions if c.get("type") == CONDITION), None)
    if found is None:
        found = {"type": CONDITION, "status": wanted, "lastTransitionTime": store_.now()}
        conditions.append(found)
    elif found.get("status") != wanted:
        found["status"], found["lastTransitionTime"] = wanted, store_.now()
    found["reason"], found["message"] = reason, message
    found["observedGeneration"] = status.get("observedGeneration", 0)
    conditions[conditions.index(found)] = go_condition(found)


def update_allowed_condition(status: Obj) -> None:
    """pdbhelper.UpdateDisruptionAllowedCondition."""
    set_condition(status, SUFFICIENT if status.get("disruptionsAllowed", 0) > 0 else INSUFFICIENT)


def conditions_up_to_date(pdb: Obj) -> bool:
    """pdbhelper.ConditionsAreUpToDate."""
    status = pdb.get("status") or {}
    found = next((c for c in status.get("conditions") or [] if c.get("type") == CONDITION), None)
    if found is None or status.get("observedGeneration", 0) != pdb["metadata"].get("generation", 0):
        return False
    wanted = ("True", SUFFICIENT) if status.get("disruptionsAllowed", 0) > 0 else ("False", INSUFFICIENT)
    return (found.get("status"), found.get("reason")) == wanted
