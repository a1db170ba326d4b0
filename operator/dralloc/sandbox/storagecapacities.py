"""CSIStorageCapacities (storage.k8s.io/v1, namespaced), admitted as kube-apiserver 1.37.2 does.

A CSI driver with `storageCapacity: true` (sandbox/csidrivers.py) publishes one of these per
storage class and topology segment; kube-scheduler's volume binding reads them to decide
whether a node can provision a WaitForFirstConsumer claim. The sandbox serves them so dralloc
can learn them. Each rule was recorded from the real 1.37.2 server
(tests/sandbox/test_storagecapacities.py, tests/handlers/test_admission.py) and follows
upstream's pkg/apis/storage/validation (ValidateCSIStorageCapacity,
ValidateCSIStorageCapacityUpdate) and pkg/registry/storage/csistoragecapacity (the strategy).

No defaults: v1 has no SetDefaults for the kind and the strategy's PrepareFor* do nothing.
What comes back is what Go's encoding writes: the fields in the Go struct's order
(`nodeTopology`, `storageClassName`, `capacity`, `maximumVolumeSize`), quantities canonical
(`1.5Gi` as `1536Mi`, structural.py), and the selector's empty `matchLabels`,
`matchExpressions` and `values` dropped (omitempty), so `nodeTopology: {}` stays `{}`.

Refusals (422, upstream's paths and texts, in its order): the name is a DNS subdomain;
`nodeTopology` is a label selector (metav1 ValidateLabelSelector: label keys and values,
`In`/`NotIn` need values, `Exists`/`DoesNotExist` take none, no other operator, not even the
node selectors' `Gt`/`Lt`); `storageClassName` is a DNS subdomain, a missing one is
checked as "" (an Invalid, not a Required); `capacity` is not negative. `maximumVolumeSize`
is not checked at all: a negative one is stored. On update the same checks run (label values
of the selector are not checked when the old selector already failed them, as the strategy
allows: read from its source, not recorded, as no API write makes such an old object), then `nodeTopology` (compared semantically: an empty list is no list, but null is
not `{}`) and `storageClassName` are immutable.

`kubectl get` shows the generic NAME / CREATED AT table, as upstream does: its storage uses
the default table convertor, so printCSIStorageCapacity in pkg/printers is never reached
(tables.py needs no printer).

Not reproduced, as for every kind the sandbox serves (store-wide, not this module's): the
Warning headers the real server adds for deprecated node labels in `nodeTopology`
(`beta.kubernetes.io/os is deprecated since v1.14; ...`) and for unknown fields of a
non-strict write; and a PUT without `metadata.resourceVersion`, which the real server refuses
here (422 `metadata.resourceVersion: Invalid value: 0: must be specified for an update`:
the strategy allows no unconditional update) and the sandbox applies. Like the real server,
the sandbox leaves `metadata.generation` unset (`ResourceType.generation`).
"""

from __future__ import annotations

from typing import Any

from dralloc.sandbox import errors, names, quantities, volumes

Obj = dict[str, Any]
Causes = list[tuple[str, str]]

STORAGE = "storage.k8s.io/csistoragecapacities"
IMMUTABLE = "field is immutable"
NEGATIVE = "must be greater than or equal to 0"
# CSIStorageCapacity's own fields in the Go struct's order (after TypeMeta and ObjectMeta).
_FIELDS = ("nodeTopology", "storageClassName", "capacity", "maximumVolumeSize")


def _requirement(req: Any) -> Any:
    """A LabelSelectorRequirement as Go writes it: key and operator always, values when not empty."""
    if not isinstance(req, dict):
        return req
    out: Obj = {"key": req.get("key", ""), "operator": req.get("operator", "")}
    if req.get("values"):
        out["values"] = req["values"]
    out.update((k, v) for k, v in req.items() if k not in ("key", "operator", "values"))
    return out


def go_selector(selector: Obj) -> Obj:
    """A metav1 LabelSelector as Go writes it: matchLabels (keys sorted), then matchExpressions,
    each only when not empty."""
    out: Obj = {}
    labels = selector.get("matchLabels")
    if labels:
        out["matchLabels"] = dict(sorted(labels.items())) if isinstance(labels, dict) else labels
    expressions = selector.get("matchExpressions")
    if expressions:
        out["matchExpressions"] = ([_requirement(r) for r in expressions] if isinstance(expressions, list)
                                   else expressions)
    out.update((k, v) for k, v in selector.items() if k not in ("matchLabels", "matchExpressions"))
    return out


def default(capacity: Obj) -> None:
    """No defaults upstream: only Go's shape of the written object (field order, omitempty)."""
    topology = capacity.get("nodeTopology")
    if isinstance(topology, dict):
        capacity["nodeTopology"] = go_selector(topology)
    moved = {field: capacity.pop(field) for field in _FIELDS if field in capacity}
    capacity.update(moved)


def _selector_causes(selector: Any, *, allow_invalid_values: bool) -> Causes:
    """metav1 ValidateLabelSelector at `nodeTopology`; with AllowInvalidLabelValueInSelector the
    expressions' values are not checked (their causes are the only ones at `values[i]`)."""
    if not isinstance(selector, dict):
        return []
    causes = volumes.label_selector_causes(selector, "nodeTopology")
    if allow_invalid_values:
        causes = [(path, message) for path, message in causes if ".values[" not in path]
    return causes


def _negative(value: Any) -> str | None:
    """The quantity as upstream prints it when it is below zero, else None."""
    parsed = quantities.parse(value) if isinstance(value, str | int | float) else None
    if parsed is None or parsed.value >= 0:
        return None
    return str(parsed)


def validate(capacity: Obj, old: Obj | None, release: str = "1.37") -> Causes:
    """ValidateCSIStorageCapacity (after the name, which admission checks for every kind), and
    on update ValidateCSIStorageCapacityUpdate's immutable fields after it. 1.38 says a missing or
    empty `storageClassName` is Required (checked against v1.38.0-beta.0); 1.37 that "" is no
    DNS subdomain."""
    allow = old is not None and bool(_selector_causes(old.get("nodeTopology"), allow_invalid_values=False))
    causes = _selector_causes(capacity.get("nodeTopology"), allow_invalid_values=allow)
    class_name = capacity.get("storageClassName", "")
    if not class_name and release not in ("1.36", "1.37"):
        causes.append(("storageClassName", "Required value"))
    else:
        causes += [("storageClassName", f"Invalid value: {errors.go_value(class_name)}: {detail}")
                   for detail in names.dns1123_subdomain(str(class_name))]
    shown = _negative(capacity.get("capacity"))
    if shown is not None:
        causes.append(("capacity", f"Invalid value: {errors.go_quote(shown)}: {NEGATIVE}"))
    if old is None:
        return causes
    topology, before = capacity.get("nodeTopology"), old.get("nodeTopology")
    if (topology is None) != (before is None) or volumes.semantic(topology) != volumes.semantic(before):
        causes.append(("nodeTopology", f"Invalid value: {errors.go_json(topology)}: {IMMUTABLE}"))
    if class_name != old.get("storageClassName", ""):
        causes.append(("storageClassName", f"Invalid value: {errors.go_value(class_name)}: {IMMUTABLE}"))
    return causes
