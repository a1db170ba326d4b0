"""scheduling.k8s.io/v1beta1 Workload and PodGroup (gang scheduling), admitted as kube-apiserver 1.37.2 does.

The sandbox serves what `make e2e`'s control plane serves (e2e/controlplane.py): the
GenericWorkload, DRAWorkloadResourceClaims and TopologyAwareWorkloadScheduling gates on,
CompositePodGroup and PodGroupPreemptionPolicy off. So, as upstream's strategies do:

- fields of disabled gates are dropped on create (`compositePodGroupTemplates`,
  `parentCompositePodGroupName`, `preemptionPolicy`), unless the old object had them;
- a PodGroup's status is cleared on create and kept on spec updates; `/status` keeps the spec;
- PodGroup defaults: `disruptionMode: {single: {}}`, and the Priority admission plugin's
  `priority` from the PriorityClasses the sandbox serves (`priorities.py`: the named class,
  else the global default, else 0; an unknown class is a 403 `no PriorityClass with name X
  was found`);
- a PodGroupTemplate without `schedulingConstraints` shows it as `null` (its JSON tag has
  no omitempty).

Running as 1.36 (`ApiServer(kubernetes_version="1.36")`) the sandbox serves `v1alpha2` instead,
1.36's shape (k8s.io/api v0.36 scheduling/v1alpha2): `spec.podGroupTemplateRef.workload`
(`workloadName`, `podGroupTemplateName`) instead of `workloadRef`, `disruptionMode` a string
(`Pod` / `PodGroup`), no composite templates and no preemptionPolicy (unknown fields there).
WorkloadAwarePreemption, which gates `disruptionMode`, `priorityClassName` and `priority` in
1.36, is taken as off (alpha): those fields are dropped on create like any disabled gate's,
so no Priority admission and no default. The rules shared with v1beta1 below apply to both;
the 1.36 shape has not been checked against a real 1.36 server (e2e builds 1.37 only).

Validation is upstream's declarative validation (pkg/apis/scheduling/v1beta1
zz_generated.validations.go) after the hand-written rules (pkg/apis/scheduling/validation),
with its messages: unions (`must specify one of: `basic`, `gang``), `minCount` required and
≥ 1, at most 1 topology constraint with a label-key `key`, at most 4 resource claims (a DNS
label name, exactly one of resourceClaimName / resourceClaimTemplateName), at most 8
templates, all templates of a Workload on one priority, immutable fields (`field is
immutable`, gang `field cannot be set once created` / `cleared once set`, templates `item
may not be added` / `removed`), and on `/status` the conditions (metav1 rules) and
`resourceClaimStatuses` naming `spec.resourceClaims` entries. As upstream's ratcheting, an
update re-checks only what changed. Pods' `spec.schedulingGroup.podGroupName` is checked by
`pod_causes`.
"""

from __future__ import annotations

import re
from typing import Any

from dralloc.sandbox import errors, names, priorities

Obj = dict[str, Any]
Causes = list[tuple[str, str]]

GROUP = "scheduling.k8s.io"
MAX_TEMPLATES = 8
MAX_CLAIMS = 4
MAX_TOPOLOGY = 1
HIGHEST_USER_PRIORITY = priorities.HIGHEST_USER_PRIORITY
_IMMUTABLE = "Invalid value: null: field is immutable"


def _invalid(path: str, value: Any, details: list[str], causes: Causes) -> None:
    causes.extend((path, f"Invalid value: {errors.go_value(value)}: {d}") for d in details)


def _union(path: str, obj: Obj, members: tuple[str, ...], causes: Causes, is_set: Any = None) -> None:
    present = [m for m in members if (is_set or (lambda v: v is not None))(obj.get(m))]
    listed = ", ".join(f"`{m}`" for m in members)
    if not present:
        causes.append((path, f'Invalid value: "": must specify one of: {listed}'))
    elif len(present) > 1:
        causes.append((path, f'Invalid value: "{{{", ".join(present)}}}": must specify exactly one of: {listed}'))


def _too_many(path: str, items: list[Any], limit: int, causes: Causes) -> bool:
    if len(items) <= limit:
        return False
    causes.append((path, f"Too many: {len(items)}: must have at most {limit} item{'s' if limit != 1 else ''}"))
    return True


def _changed(new: Any, old: Any, creating: bool) -> bool:
    return creating or new != old


# ---- the Go JSON of list items (Duplicate values print the whole item) ----------------------

def _go_claim(claim: Obj) -> Obj:
    return {"name": claim.get("name", ""), **{k: claim[k] for k in ("resourceClaimName", "resourceClaimTemplateName")
                                              if k in claim}}


def _go_template(template: Obj) -> Obj:
    """A PodGroupTemplate as Go marshals it: fields in struct order, schedulingConstraints always."""
    out: Obj = {"name": template.get("name", ""), "schedulingPolicy": template.get("schedulingPolicy") or {},
                "schedulingConstraints": template.get("schedulingConstraints")}
    for key in ("resourceClaims", "disruptionMode", "priorityClassName", "priority", "preemptionPolicy"):
        if template.get(key) not in (None, "", []):
            out[key] = [_go_claim(c) for c in template[key]] if key == "resourceClaims" else template[key]
    return out


def _unique(path: str, items: list[Obj], key: str, render: Any, causes: Causes) -> None:
    seen: set[Any] = set()
    for i, item in enumerate(items):
        if item.get(key, "") in seen:
            causes.append((f"{path}[{i}]", f"Duplicate value: {errors.go_json(render(item))}"))
        seen.add(item.get(key, ""))


# ---- shared pieces of PodGroup and PodGroupTemplate -----------------------------------------

def _scheduling_policy(path: str, new: Obj, old: Obj | None, causes: Causes) -> None:
    creating = old is None
    old = old or {}
    if not _changed(new, old, creating):
        return
    _union(path, new, ("basic", "gang"), causes)
    if not creating and new.get("basic") != old.get("basic"):
        causes.append((f"{path}.basic", _IMMUTABLE))
    gang, old_gang = new.get("gang"), old.get("gang")
    if not creating and old_gang is None and gang is not None:
        causes.append((f"{path}.gang", "Invalid value: null: field cannot be set once created"))
        return
    if not creating and old_gang is not None and gang is None:
        causes.append((f"{path}.gang", "Invalid value: null: field cannot be cleared once set"))
        return
    if gang is not None and _changed(gang, old_gang, creating):
        count = gang.get("minCount", 0)
        if count == 0:
            causes.append((f"{path}.gang.minCount", "Required value"))
        elif count < 1:
            causes.append((f"{path}.gang.minCount", f"Invalid value: {count}: must be greater than or equal to 1"))


def _constraints(path: str, new: Obj | None, old: Obj | None, creating: bool, causes: Causes) -> None:
    if not _changed(new, old, creating):
        return
    if not creating:
        causes.append((path, _IMMUTABLE))
        return
    if new is None:
        return
    topology = new.get("topology") or []
    if _too_many(f"{path}.topology", topology, MAX_TOPOLOGY, causes):
        return
    for i, constraint in enumerate(topology):
        key = constraint.get("key", "")
        if not key:
            causes.append((f"{path}.topology[{i}].key", "Required value"))
        else:
            _invalid(f"{path}.topology[{i}].key", key, names.qualified_name(key), causes)


def _claims(path: str, new: list[Obj], old: list[Obj] | None, creating: bool, causes: Causes) -> None:
    if not _changed(new, old or [], creating):
        return
    if not creating:
        causes.append((path, _IMMUTABLE))
        return
    if _too_many(path, new, MAX_CLAIMS, causes):
        return
    _unique(path, new, "name", _go_claim, causes)
    for i, claim in enumerate(new):
        where = f"{path}[{i}]"
        _union(where, claim, ("resourceClaimName", "resourceClaimTemplateName"), causes)
        name = claim.get("name", "")
        if not name:
            causes.append((f"{where}.name", "Required value"))
        else:
            _invalid(f"{where}.name", name, names.namespace_name(name), causes)
        for field in ("resourceClaimName", "resourceClaimTemplateName"):
            if field in claim:
                _invalid(f"{where}.{field}", claim[field], names.dns1123_subdomain(claim[field]), causes)


ALPHA = "v1alpha2"  # 1.36's version of the API (its disruptionMode is dropped on create: see above)


def _disruption(path: str, new: Obj | None, old: Obj | None, creating: bool, causes: Causes) -> None:
    if not _changed(new, old, creating):
        return
    if not creating:
        causes.append((path, _IMMUTABLE))
    elif new is not None:
        _union(path, new, ("single", "all"), causes)


def _priority_fields(path: str, new: Obj, old: Obj | None, causes: Causes, *, maximum: bool = True) -> None:
    """`maximum`: 1.37's declarative cap of `priority` (1.38 dropped it)."""
    for field in ("priorityClassName", "priority"):
        value = new.get(field)
        if old is not None:
            if value != old.get(field):
                causes.append((f"{path}.{field}", _IMMUTABLE))
        elif field == "priorityClassName" and value:
            _invalid(f"{path}.{field}", value, names.dns1123_subdomain(value), causes)
        elif field == "priority" and maximum and value is not None and value > HIGHEST_USER_PRIORITY:
            causes.append((f"{path}.{field}", f"Invalid value: {value}: must be less than or equal to "
                                              f"{HIGHEST_USER_PRIORITY}"))


def _workload_ref(path: str, new: Obj | None, old: Obj | None, creating: bool, causes: Causes, *,
                  template_field: str = "templateName") -> None:
    if not _changed(new, old, creating):
        return
    if not creating:
        causes.append((path, _IMMUTABLE))
        return
    if new is None:
        return
    for field, rule in (("workloadName", names.dns1123_subdomain), (template_field, names.namespace_name)):
        value = new.get(field, "")
        if not value:
            causes.append((f"{path}.{field}", "Required value"))
        else:
            _invalid(f"{path}.{field}", value, rule(value), causes)


def _template_ref(path: str, new: Obj | None, old: Obj | None, creating: bool, causes: Causes) -> None:
    """v1alpha2 spec.podGroupTemplateRef: a union of one member, `workload`."""
    if not _changed(new, old, creating):
        return
    if not creating:
        causes.append((path, _IMMUTABLE))
        return
    if new is None:
        return
    _union(path, new, ("workload",), causes)
    _workload_ref(f"{path}.workload", new.get("workload"), None, True, causes, template_field="podGroupTemplateName")


# ---- PodGroup ---------------------------------------------------------------------------------

_NON_GANG_ALL = 'Invalid value: cannot have "all" disruption mode when scheduling policy is other than "gang"'


def _non_gang_all(path: str, spec: Obj) -> Causes:
    """1.38: `disruptionMode: {all: {}}` only with a gang scheduling policy (hand-written, on create)."""
    gang = (spec.get("schedulingPolicy") or {}).get("gang")
    all_ = isinstance(spec.get("disruptionMode"), dict) and spec["disruptionMode"].get("all") is not None
    return [(f"{path}.disruptionMode", _NON_GANG_ALL)] if gang is None and all_ else []


def _pod_group_spec(spec: Obj, old: Obj | None, *, alpha: bool = False, release: str = "1.37") -> Causes:
    new = release not in ("1.36", "1.37")
    creating = old is None
    causes: Causes = _non_gang_all("spec", spec) if new and creating else []
    before = old or {}
    if alpha:
        _template_ref("spec.podGroupTemplateRef", spec.get("podGroupTemplateRef"), before.get("podGroupTemplateRef"),
                      creating, causes)
    else:
        _workload_ref("spec.workloadRef", spec.get("workloadRef"), before.get("workloadRef"), creating, causes)
    _scheduling_policy("spec.schedulingPolicy", spec.get("schedulingPolicy") or {},
                       None if creating else before.get("schedulingPolicy") or {}, causes)
    _constraints("spec.schedulingConstraints", spec.get("schedulingConstraints"),
                 before.get("schedulingConstraints"), creating, causes)
    _claims("spec.resourceClaims", spec.get("resourceClaims") or [], before.get("resourceClaims"), creating, causes)
    _disruption("spec.disruptionMode", spec.get("disruptionMode"), before.get("disruptionMode"), creating, causes)
    _priority_fields("spec", spec, old, causes, maximum=not new)
    return causes


_CONDITION_TYPE_MAX = 316
_REASON = re.compile(r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$")
_REASON_FMT = "[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?"
_MESSAGE_MAX = 32 * 1024
_STATUSES = ("True", "False", "Unknown")


def condition_causes(conditions: list[Obj], path: str, *, declared_unique: bool = False) -> Causes:
    """metav1 ValidateConditions: qualified-name types, unique; status; reason; lastTransitionTime.
    `declared_unique` (1.38: the list-map rule is declarative, beta): a repeated type is reported
    last, on the item, printing it whole."""
    causes: Causes = []
    repeated: Causes = []
    seen: set[str] = set()
    for i, condition in enumerate(conditions):
        where = f"{path}[{i}]"
        kind = condition.get("type", "")
        if not kind:
            causes.append((f"{where}.type", "Required value: is required"))
        else:
            _invalid(f"{where}.type", kind, names.qualified_name(kind), causes)
            if kind in seen and declared_unique:
                repeated.append((where, f"Duplicate value: {errors.go_json(go_condition(condition))}"))
            elif kind in seen:
                causes.append((f"{where}.type", f"Duplicate value: {errors.go_value(kind)}"))
            seen.add(kind)
        status = condition.get("status", "")
        if not status:
            causes.append((f"{where}.status", "Required value"))
        elif status not in _STATUSES:
            causes.append((f"{where}.status", f"Unsupported value: {errors.go_value(status)}: supported values: "
                                              + ", ".join(f'"{s}"' for s in sorted(_STATUSES))))
        if condition.get("observedGeneration", 0) < 0:
            causes.append((f"{where}.observedGeneration", f"Invalid value: {condition['observedGeneration']}: "
                                                          "must be greater than or equal to zero"))
        if not condition.get("lastTransitionTime"):
            causes.append((f"{where}.lastTransitionTime", "Required value"))
        reason = condition.get("reason", "")
        if not reason:
            causes.append((f"{where}.reason", "Required value"))
        else:
            if not _REASON.match(reason):
                causes.append((f"{where}.reason", f"Invalid value: {errors.go_value(reason)}: "
                                                  + names.regex_detail("a condition reason must start with alphabetic "
                                                                       "character, optionally followed by a string of "
                                                                       "alphanumeric characters or '_,:', and must end "
                                                                       "with an alphanumeric character or '_'",
                                                                       _REASON_FMT, "my_name", "MY_NAME", "MyName",
                                                                       "ReasonA,ReasonB", "ReasonA:ReasonB")))
            if len(reason) > 1024:
                causes.append((f"{where}.reason", "Too long: may not be more than 1024 bytes"))
        if len(condition.get("message", "")) > _MESSAGE_MAX:
            causes.append((f"{where}.message", f"Too long: may not be more than {_MESSAGE_MAX} bytes"))
    return causes + repeated


def go_condition(condition: Obj) -> Obj:
    """A metav1.Condition as Go marshals it (struct order; observedGeneration omitted when 0)."""
    out: Obj = {"type": condition.get("type", ""), "status": condition.get("status", "")}
    if condition.get("observedGeneration"):
        out["observedGeneration"] = condition["observedGeneration"]
    out.update({"lastTransitionTime": condition.get("lastTransitionTime"), "reason": condition.get("reason", ""),
                "message": condition.get("message", "")})
    return out


def _pod_group_status(group: Obj, release: str = "1.37") -> Causes:
    status = group.get("status") or {}
    causes = condition_causes(status.get("conditions") or [], "status.conditions",
                              declared_unique=release not in ("1.36", "1.37"))
    claims = {c.get("name") for c in (group.get("spec") or {}).get("resourceClaims") or []}
    statuses = status.get("resourceClaimStatuses") or []
    for i, entry in enumerate(statuses):
        if entry.get("name", "") not in claims:
            causes.append((f"status.resourceClaimStatuses[{i}].name",
                           f"Invalid value: {errors.go_value(entry.get('name', ''))}: must match the name of an entry "
                           "in `spec.resourceClaims`"))
    if not _too_many("status.resourceClaimStatuses", statuses, MAX_CLAIMS, causes):
        _unique("status.resourceClaimStatuses", statuses, "name", lambda s: s, causes)
        for i, entry in enumerate(statuses):
            if "resourceClaimName" in entry:
                _invalid(f"status.resourceClaimStatuses[{i}].resourceClaimName", entry["resourceClaimName"],
                         names.dns1123_subdomain(entry["resourceClaimName"]), causes)
    return causes


# ---- Workload ---------------------------------------------------------------------------------

def _same_priority(templates: list[Obj], preemption: bool = False) -> bool:
    return len({(t.get("priorityClassName", ""), t.get("priority"), t.get("preemptionPolicy") if preemption else None)
                for t in templates}) <= 1


def _workload_spec(spec: Obj, old: Obj | None, release: str = "1.37") -> Causes:
    causes: Causes = []
    creating = old is None
    before = old or {}
    templates: list[Obj] = spec.get("podGroupTemplates") or []
    new = release not in ("1.36", "1.37")
    if not new and not _same_priority(templates):  # hand-written, before the declarative rules
        causes.append(("spec", "Invalid value: null: detected multiple priority configurations"))
    if new and not _same_priority(templates, preemption=creating):  # 1.38: preemptionPolicy too (not on update)
        causes.append(("spec", "Invalid value: null: all priority, priorityClassName, and preemptionPolicy values "
                               "must be identical, detected multiple values"))
    if new and creating:  # 1.38, hand-written: tolerated on update (both fields are immutable)
        for i, template in enumerate(templates):
            causes += _non_gang_all(f"spec.podGroupTemplates[{i}]", template)
    if _changed(spec, before, creating):
        _union("spec", spec, ("podGroupTemplates", "compositePodGroupTemplates"), causes, is_set=bool)
    ref, old_ref = spec.get("controllerRef"), before.get("controllerRef")
    if _changed(ref, old_ref, creating):
        if not creating:
            causes.append(("spec.controllerRef", _IMMUTABLE))
        elif ref is not None:
            group = ref.get("apiGroup", "")
            if group:
                _invalid("spec.controllerRef.apiGroup", group, names.dns1123_subdomain(group), causes)
            for field in ("kind", "name"):
                value = ref.get(field, "")
                if not value:
                    causes.append((f"spec.controllerRef.{field}", "Required value"))
                else:
                    _invalid(f"spec.controllerRef.{field}", value, names.path_segment(value), causes)
    old_templates: list[Obj] = before.get("podGroupTemplates") or []
    if _changed(templates, old_templates, creating):
        _templates(templates, old_templates, creating, causes, maximum=not new)
    return causes


def _templates(templates: list[Obj], old_templates: list[Obj], creating: bool, causes: Causes, *,
               maximum: bool = True) -> None:
    path = "spec.podGroupTemplates"
    if _too_many(path, templates, MAX_TEMPLATES, causes):
        return
    if not creating:
        new_names = [t.get("name", "") for t in templates]
        old_names = {t.get("name", "") for t in old_templates}
        added = [i for i, name in enumerate(new_names) if name not in old_names]
        causes.extend((f"{path}[{i}]", "Forbidden: item may not be added") for i in added)
        if any(name not in new_names for name in old_names):
            causes.append((path, "Forbidden: item may not be removed"))
        if added or any(name not in new_names for name in old_names):
            return
    _unique(path, templates, "name", _go_template, causes)
    old_by_name = {t.get("name", ""): t for t in old_templates}
    for i, template in enumerate(templates):
        old = None if creating else old_by_name.get(template.get("name", ""))
        if old is not None and old == template:
            continue
        where = f"{path}[{i}]"
        first = old is None
        name = template.get("name", "")
        if not name:
            causes.append((f"{where}.name", "Required value"))
        elif first:
            _invalid(f"{where}.name", name, names.namespace_name(name), causes)
        before = old or {}
        _scheduling_policy(f"{where}.schedulingPolicy", template.get("schedulingPolicy") or {},
                           None if first else before.get("schedulingPolicy") or {}, causes)
        _constraints(f"{where}.schedulingConstraints", template.get("schedulingConstraints"),
                     before.get("schedulingConstraints"), first, causes)
        _claims(f"{where}.resourceClaims", template.get("resourceClaims") or [], before.get("resourceClaims"),
                first, causes)
        _disruption(f"{where}.disruptionMode", template.get("disruptionMode"), before.get("disruptionMode"), first,
                    causes)
        _priority_fields(where, template, old, causes, maximum=maximum)


# ---- entry points (admission.py) --------------------------------------------------------------

def default(obj: Obj, old: Obj | None, lookup: priorities.Lookup | None = None, *, release: str = "1.37") -> None:
    """What upstream's strategies, defaulting and Priority admission do before validation
    (`lookup` finds the PriorityClasses; None: only the system ones)."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        spec = obj["spec"] = {}
    old_spec = (old or {}).get("spec") or {}
    gated = release in ("1.36", "1.37")  # 1.38 removed the PodGroupPreemptionPolicy gate: the field stays
    if obj.get("kind") == "Workload":
        if not old_spec.get("compositePodGroupTemplates"):
            spec.pop("compositePodGroupTemplates", None)  # CompositePodGroup is off
        old_templates = {t.get("name"): t for t in old_spec.get("podGroupTemplates") or []}
        alpha = str(obj.get("apiVersion", "")).endswith(f"/{ALPHA}")
        for template in spec.get("podGroupTemplates") or []:
            before = old_templates.get(template.get("name")) or {}
            if gated and not before.get("preemptionPolicy"):
                template.pop("preemptionPolicy", None)  # PodGroupPreemptionPolicy is off
            for field in ("disruptionMode", "priorityClassName", "priority") if alpha else ():
                if field not in before:
                    template.pop(field, None)  # 1.36: WorkloadAwarePreemption is off
            template.setdefault("schedulingConstraints", None)
        return
    if obj.get("kind") != "PodGroup":
        return
    if str(obj.get("apiVersion", "")).endswith(f"/{ALPHA}"):
        if old is None:
            obj["status"] = {}
        for field in ("disruptionMode", "priorityClassName", "priority"):  # WorkloadAwarePreemption is off
            if field not in old_spec:
                spec.pop(field, None)
        spec.setdefault("podGroupTemplateRef", None)  # no omitempty on its JSON tag
        _in_struct_order(spec, _ALPHA_POD_GROUP_SPEC_ORDER)
        return
    if old is None:
        obj["status"] = {}
        refusal = priorities.admit_pod_group(obj, lookup, preemption=not gated)
        if refusal:
            raise priorities.forbidden("podgroups", GROUP, (obj.get("metadata") or {}).get("name", ""), refusal)
    for field in ("parentCompositePodGroupName", "preemptionPolicy"):  # CompositePodGroup, PodGroupPreemptionPolicy
        if field not in old_spec and (gated or field != "preemptionPolicy"):
            spec.pop(field, None)
    spec.setdefault("disruptionMode", {"single": {}})
    _in_struct_order(spec, _POD_GROUP_SPEC_ORDER)


_ALPHA_POD_GROUP_SPEC_ORDER = ("podGroupTemplateRef", "schedulingPolicy", "schedulingConstraints", "resourceClaims",
                               "disruptionMode", "priorityClassName", "priority")
_POD_GROUP_SPEC_ORDER = ("parentCompositePodGroupName", "workloadRef", "schedulingPolicy", "schedulingConstraints",
                         "resourceClaims", "disruptionMode", "priorityClassName", "priority", "preemptionPolicy")


def _in_struct_order(spec: Obj, order: tuple[str, ...]) -> None:
    """Fields in Go's struct order, as the real server writes them back (defaults land in place)."""
    ordered = {k: spec[k] for k in order if k in spec}
    ordered.update({k: v for k, v in spec.items() if k not in ordered})
    spec.clear()
    spec.update(ordered)


def schema_causes(causes: Causes) -> Causes:
    """The schema walk's causes without its list-map duplicates: declarative validation reports those
    itself, naming the whole item (`validate` does)."""
    return [(path, message) for path, message in causes if not message.startswith("Duplicate value")]


def validate(obj: Obj, old: Obj | None, subresource: str, release: str = "1.37") -> Causes:
    """Causes for one decoded scheduling.k8s.io object (empty when it is fine), by `release`'s rules."""
    kind = obj.get("kind")
    spec = obj.get("spec") or {}
    old_spec = None if old is None else (old.get("spec") or {})
    if kind == "Workload":
        return _workload_spec(spec, old_spec, release)
    if kind == "PodGroup":
        if subresource == "status":
            return _pod_group_status(obj, release)
        return _pod_group_spec(spec, old_spec, alpha=str(obj.get("apiVersion", "")).endswith(f"/{ALPHA}"),
                               release=release)
    return []


def pod_causes(pod: Obj) -> Causes:
    """spec.schedulingGroup of a new Pod (core validation's validateSchedulingGroup)."""
    group = (pod.get("spec") or {}).get("schedulingGroup")
    if group is None:
        return []
    name = group.get("podGroupName")
    if name is None:
        return [("spec.schedulingGroup.podGroupName", "Invalid value: null: must specify one of: `podGroupName`")]
    causes: Causes = []
    _invalid("spec.schedulingGroup.podGroupName", name, names.dns1123_subdomain(name), causes)
    return causes
