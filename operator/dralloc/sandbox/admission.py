"""Admission: the defaults and the refusals a client would meet on a real API server.

Decoding comes first, as upstream decodes the body into its Go type (`structural.py`):
a value of the wrong JSON type, a quantity that does not parse, and, when the request
says `fieldValidation=Strict` (as kubectl does), an unknown field are a 400 BadRequest
(`Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal ...`); nulls
are dropped. Defaulting (mutating) follows: Namespaces get the `kubernetes` finalizer
and phase Active, Pods get a scheduler name and phase Pending, device requests get
`allocationMode: ExactCount` and `count: 1`, tolerations `operator: Equal`, CRDs an
Established status, Namespaces the `kubernetes.io/metadata.name` label. Validation comes last, and what it rejects is a 422 Invalid whose
causes carry field paths (`spec.devices.requests[0].exactly.selectors[0].cel.expression`)
and upstream's wording (`names.py` for name syntax):

- every object: metadata.name syntax (a DNS subdomain; a DNS label for Namespaces;
  core Events only avoid '/' and '%'), label keys and values;
- every built-in kind: enums and unique list-map keys of the real 1.37 OpenAPI schema
  (kubernetes-validate's copy);
- resource.k8s.io: then the DRA rules in `dra.py`, including that admin access to
  devices is only requested in namespaces labelled
  `resource.kubernetes.io/admin-access: "true"` (DRAAdminAccess);
- custom resources: pruned, defaulted and validated by their CRD's openAPIV3Schema
  (`customresources.py`);
- Pods: containers (named, with an image), resourceClaims entries (a DNS label name,
  exactly one of resourceClaimName / resourceClaimTemplateName) and container
  `resources.claims` naming them, the label keys of inter-pod terms (`pods.py`, which also
  merges them into the terms' selectors on create); after creation the spec is immutable except for the fields upstream lets change (images,
  activeDeadlineSeconds, added tolerations, removed scheduling gates, and nodeSelector
  and affinity while the pod is still gated);
- PersistentVolumeClaims, PersistentVolumes, StorageClasses, CSINodes: `volumes.py`, with
  the StorageObjectInUseProtection, DefaultStorageClass and PersistentVolumeClaimResize
  admission plugins; CSIDrivers: `csidrivers.py`; CSIStorageCapacities:
  `storagecapacities.py`; PodDisruptionBudgets: `disruptionbudgets.py` (their names are only
  path segments, checked once the spec passed); PriorityClasses and the Priority
  admission plugin (Pods, PodGroups): `priorities.py`. Admission plugins that mutate run
  with the defaults, those that only validate after validation, as kube-apiserver orders
  them; their refusals are 403s.
"""

from __future__ import annotations

import contextvars
import json
import re
from collections.abc import Callable
from typing import Any

from dralloc.sandbox import (
    csidrivers,
    customresources,
    disruptionbudgets,
    dra,
    errors,
    names,
    pods,
    priorities,
    resources,
    scheduler,
    slices,
    storagecapacities,
    structural,
    volumes,
)
from dralloc.sandbox import workloads as workloads

Obj = dict[str, Any]
Causes = list[tuple[str, str]]

strict_fields: contextvars.ContextVar[bool] = contextvars.ContextVar("strict_fields", default=False)

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
# Upstream's rule for the names of each kind: a DNS subdomain unless listed here. Core
# Events only may not break a URL path; events.k8s.io/v1 Events are subdomains again.
_NAME_RULES: dict[str, Callable[[str], list[str]]] = {"namespaces": names.namespace_name, "events": names.path_segment,
                                                      "poddisruptionbudgets": names.path_segment}


def decoded(rt: resources.ResourceType, obj: Obj, old: Obj | None) -> tuple[Obj, Causes]:
    """`obj` as Go decodes it (unknown and null fields dropped) and the schema's causes against it,
    or the 400 kube-apiserver answers when it does not decode."""
    try:
        return structural.decode(obj, strict=strict_fields.get(), old=old)
    except structural.DecodeError as exc:
        version = str(obj.get("apiVersion", "")).rpartition("/")[2]
        raise errors.ApiError(400, f'{rt.kind} in version "{version}" cannot be handled as a {rt.kind}: {exc}') from exc


def _device_class_name(value: str) -> list[str]:
    # DeviceClass names are validated declaratively, which counts the limit in bytes.
    return [d.replace("characters", "bytes") if d.startswith("must be no more") else d
            for d in names.dns1123_subdomain(value)]


def _name_rule(rt: resources.ResourceType) -> Callable[[str], list[str]]:
    if rt.plural == "events" and rt.group == "events.k8s.io":
        return names.dns1123_subdomain
    if rt.plural == "deviceclasses":
        return _device_class_name
    return _NAME_RULES.get(rt.plural, names.dns1123_subdomain)


def metadata_causes(rt: resources.ResourceType, obj: Obj) -> Causes:
    meta = obj.get("metadata") or {}
    causes: Causes = []
    rule = _name_rule(rt)
    # generateName is checked as a name prefix (upstream masks one trailing '-'), then the name.
    for path, name, prefix in (("metadata.generateName", meta.get("generateName"), True),
                               ("metadata.name", meta.get("name", ""), False)):
        if prefix and (not name or rt.plural == "deviceclasses"):
            continue  # DeviceClasses are validated declaratively: only the generated name is checked
        if not isinstance(name, str):  # decoding reports the type
            continue
        checked = name[:-1] + "a" if prefix and name.endswith("-") else name
        causes += [(path, f"Invalid value: {errors.go_value(name)}: {detail}") for detail in rule(checked)]
    for key, value in (meta.get("labels") or {}).items():
        causes += [("metadata.labels", f"Invalid value: {errors.go_value(key)}: {detail}")
                   for detail in names.qualified_name(key)]
        causes += [("metadata.labels", f"Invalid value: {errors.go_value(value)}: {detail}")
                   for detail in names.label_value(str(value))]
    return causes


_CONDITION_ITEM = re.compile(r"(^|\.)conditions\[\d+\]$")


def _conditions_in_go_order(causes: Causes) -> Causes:
    """1.38 (the conditions' list-map rule declarative, beta): a repeated condition type prints the
    whole metav1.Condition in Go's field order."""
    out: Causes = []
    for path, message in causes:
        prefix = "Duplicate value: "
        if _CONDITION_ITEM.search(path) and message.startswith(prefix + "{"):
            try:
                item = json.loads(message[len(prefix):])
            except ValueError:
                item = None
            if isinstance(item, dict):
                message = prefix + errors.go_json(workloads.go_condition(item))
        out.append((path, message))
    return out


class Admission:
    """The `store.Admission` the server uses; `validate_schemas=False` skips the OpenAPI check."""

    def __init__(
        self,
        *,
        validate_schemas: bool = True,
        namespace_labels: Callable[[str], dict[str, str]] | None = None,  # None: no namespace rules
        node: Callable[[str], Obj | None] | None = None,  # None: no NodeDeclaredFeatureValidator
        nodes: Callable[[], list[Obj]] | None = None,
        objects: Callable[[str], list[Obj]] | None = None,  # storage -> stored objects; None: no lookups
        release: str = "1.37",  # whose rules apply where 1.38 changed them (DRA kinds, PodGroups)
    ) -> None:
        self.release = release
        self.validate_schemas = validate_schemas
        self.namespace_labels = namespace_labels
        self.node = node
        self.nodes = nodes
        self.objects = objects

    def admit(self, rt: resources.ResourceType, new: Obj, old: Obj | None, subresource: str) -> None:
        checked = self.validate_schemas and not rt.crd
        found: Causes = []
        if checked:  # decoding comes first upstream: defaults and validation see the Go value
            shaped, found = decoded(rt, new, old)
            new.clear()
            new.update(shaped)
        self.default(rt, new, old, subresource)
        causes = metadata_causes(rt, new) if old is None else []
        causes += found
        if rt.group == "resource.k8s.io":
            if self.release not in ("1.36", "1.37"):
                causes = _conditions_in_go_order(causes)
            if not causes or checked:
                causes += dra.validate(new, old, subresource, self.release)
            if not causes and old is None and self.namespace_labels is not None:
                labels = self.namespace_labels((new.get("metadata") or {}).get("namespace", ""))
                causes += dra.admin_access_causes(new, labels)
        elif rt.storage == priorities.STORAGE and (checked or not causes):
            causes += priorities.validate(new, old, self.release)
        elif rt.storage in volumes.STORAGES and (checked or not causes):
            causes = volumes.schema_causes(rt.storage, causes) + volumes.validate(rt.storage, new, old, subresource)
        elif rt.storage == csidrivers.STORAGE and (checked or not causes):
            causes = csidrivers.schema_causes(causes) + csidrivers.validate(new, old)
        elif rt.storage == storagecapacities.STORAGE and (checked or not causes):
            causes += storagecapacities.validate(new, old, self.release)
        elif rt.storage == disruptionbudgets.STORAGE and (checked or not causes):
            # The strategy's checks first; the generic ones of the metadata only when those pass (the
            # decoder's list-map check of conditions is the strategy's, worded its own way).
            causes = disruptionbudgets.validate(new, old, subresource, self.release) or (
                metadata_causes(rt, new) if old is None else [])
        elif rt.group == workloads.GROUP and (checked or not causes):
            causes = workloads.schema_causes(causes) + workloads.validate(new, old, subresource, self.release)
        elif rt.plural == "nodes" and rt.group == "":
            causes += declared_features_causes(((new.get("status") or {}).get("declaredFeatures")) or [])
        elif rt.storage == "/events" and old is None:
            causes += event_causes(new, modern=rt.group == "events.k8s.io")
        elif rt.plural == "pods" and old is None and not causes:  # shapes are right from here on
            causes += pod_create_causes(new)
        elif rt.plural == "pods" and old is not None and subresource == "":
            causes += pod_update_causes(new, old)
        elif rt.plural == "pods" and old is not None and subresource == "status" and not causes:
            causes += pod_status_causes(new)
        elif rt.crd and rt.schema:
            shaped, found = customresources.admit(new, rt.schema)
            new.clear()
            new.update(shaped)
            causes += found
        if causes:
            # Events of both APIs are validated as the core type: refusals name the core kind.
            group = "" if rt.storage == "/events" else rt.group
            raise errors.invalid(rt.kind, group, (new.get("metadata") or {}).get("name", ""), causes)
        name = (new.get("metadata") or {}).get("name", "")
        if rt.storage == volumes.CLAIMS and old is not None and subresource == "":
            refusal = volumes.resize_refusal(new, old, self.objects)
            if refusal:
                raise priorities.forbidden(rt.plural, "", name, refusal)
        if rt.storage == priorities.STORAGE:
            refusal = priorities.global_default_refusal(new, old, self.objects)
            if refusal:
                raise priorities.forbidden(rt.plural, rt.group, name, refusal)
        if rt.plural == "resourceslices" and self.node is not None and self.nodes is not None:
            refusal = node_allocatable_refusal(new, self.node, self.nodes)
            if refusal:
                name = (new.get("metadata") or {}).get("name", "")
                raise errors.ApiError(403, f'resourceslices.resource.k8s.io "{name}" is forbidden: {refusal}',
                                      details={"name": name, "group": "resource.k8s.io", "kind": "resourceslices"})

    def default(self, rt: resources.ResourceType, obj: Obj, old: Obj | None, subresource: str = "") -> None:
        if rt.storage == "/namespaces":
            meta = obj.setdefault("metadata", {})
            # Upstream labels every namespace with its name, on every write (namespaceSelectors use it).
            meta["labels"] = {**(meta.get("labels") or {}), "kubernetes.io/metadata.name": meta.get("name", "")}
        if rt.storage == "/namespaces" and old is None:
            obj.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
            obj.setdefault("status", {}).setdefault("phase", "Active")
        elif rt.storage == "/pods" and old is None:
            if obj.get("spec") is None:
                obj["spec"] = {}  # null is an empty PodSpec, as Go decodes it
            spec = obj["spec"]
            if not isinstance(spec, dict):
                return  # the schema check refuses it
            spec.setdefault("schedulerName", "default-scheduler")
            spec.setdefault("restartPolicy", "Always")
            spec.setdefault("terminationGracePeriodSeconds", 30)
            refusal = priorities.admit_pod(obj, None, self.objects)  # the Priority admission plugin
            if refusal:
                raise priorities.forbidden("pods", "", (obj.get("metadata") or {}).get("name", ""), refusal)
            if obj.get("status") is None:
                obj["status"] = {}
            if isinstance(obj["status"], dict):
                obj["status"].setdefault("phase", "Pending")
                pods.mark_gated(obj)  # the strategy's PrepareForCreate
            pods.merge_label_keys(obj)  # the strategy's PrepareForCreate
        elif rt.storage == "/pods" and subresource == "":
            priorities.admit_pod(obj, old, self.objects)
        elif rt.storage == "apiextensions.k8s.io/customresourcedefinitions":
            names = (obj.get("spec") or {}).get("names") or {}
            names.setdefault("singular", str(names.get("kind", "")).lower())
            names.setdefault("listKind", f"{names.get('kind', '')}List")
            obj["status"] = {
                "acceptedNames": names,
                "storedVersions": [v["name"] for v in (obj.get("spec") or {}).get("versions") or []
                                   if v.get("storage")],
                "conditions": [
                    {"type": t, "status": "True", "reason": r, "message": m,
                     "lastTransitionTime": obj["metadata"].get("creationTimestamp")}
                    for t, r, m in (("NamesAccepted", "NoConflicts", "no conflicts found"),
                                    ("Established", "InitialNamesAccepted", "the initial names have been accepted"))
                ],
            }
        elif rt.group == "resource.k8s.io":
            dra.default(obj)
        elif rt.storage == priorities.STORAGE:
            priorities.default(obj)
        elif rt.storage in volumes.STORAGES:
            volumes.default(rt.storage, obj, old, subresource, self.objects)
        elif rt.storage == csidrivers.STORAGE:
            csidrivers.default(obj)
        elif rt.storage == storagecapacities.STORAGE:
            storagecapacities.default(obj)
        elif rt.storage == disruptionbudgets.STORAGE:
            disruptionbudgets.default(obj, old)
        elif rt.group == workloads.GROUP:
            workloads.default(obj, old, self.objects, release=self.release)
        elif rt.plural == "nodes" and rt.group == "":
            status = obj.get("status")
            if isinstance(status, dict) and status.get("declaredFeatures") == []:
                del status["declaredFeatures"]  # omitempty: an empty list is not written back


_DECLARED_FEATURE = re.compile(r"^[A-Z][a-zA-Z0-9]*(/[a-zA-Z][a-zA-Z0-9]*)*$")
MAX_DECLARED_FEATURE = 253


def declared_features_causes(features: list[Any]) -> Causes:
    """Node.status.declaredFeatures (NodeDeclaredFeatures, GA in 1.37): sorted, unique names,
    each an UpperCamelCase segment and then '/'-separated segments."""
    causes: Causes = []
    for i, feature in enumerate(features):
        where = f"status.declaredFeatures[{i}]"
        if len(feature) > MAX_DECLARED_FEATURE:
            detail = f"must be no more than {MAX_DECLARED_FEATURE} characters"
        elif not _DECLARED_FEATURE.match(feature):
            detail = ("must start with an UpperCamelCase segment, with subsequent segments separated by '/' (e.g., "
                      "MyFeature or MyFeature/mySubFeature), and contain only alphanumeric characters and slashes")
        else:
            detail = ""
        if detail:
            causes.append((where, f"Invalid value: {errors.go_value(feature)}: invalid feature name "
                                  f"{errors.go_value(feature)}: {detail}"))
        if i + 1 < len(features):
            after = features[i + 1]
            if after == feature:
                causes.append((f"status.declaredFeatures[{i + 1}]", f"Duplicate value: {errors.go_value(after)}"))
            elif feature > after:
                causes.append((f"status.declaredFeatures[{i + 1}]", f"Invalid value: {errors.go_value(after)}: list "
                                                                    "must be sorted alphabetically"))
    return causes


def node_allocatable_refusal(slice_: Obj, node: Callable[[str], Obj | None], nodes: Callable[[], list[Obj]]) -> str:
    """Upstream's NodeDeclaredFeatureValidator admission (DRANodeAllocatableResources): a device
    with nodeAllocatableResources must map to nodes, and each of them must exist and declare the
    feature. '' when the slice may be written."""
    spec = slice_.get("spec") or {}
    for dev in spec.get("devices") or []:
        if not dev.get("nodeAllocatableResources"):
            continue
        source = dev if spec.get("perDeviceNodeSelection") else spec
        name = dev.get("name", "")
        if source.get("nodeName"):
            found = node(source["nodeName"])
            if found is None:
                return f'node "{source["nodeName"]}" not found for device "{name}"'
            matching = [found]
        elif source.get("nodeSelector") is not None or source.get("allNodes"):
            selector = source.get("nodeSelector") if not source.get("allNodes") else None
            matching = [n for n in nodes() if scheduler.selector_matches(selector, n)]
        else:
            return f'device "{name}" in ResourceSlice has NodeAllocatableResources but does not map to any nodes'
        for found in matching:
            if slices.NODE_ALLOCATABLE_FEATURE not in ((found.get("status") or {}).get("declaredFeatures") or []):
                return (f'node "{found["metadata"]["name"]}" does not support {slices.NODE_ALLOCATABLE_FEATURE} '
                        "feature")
    return ""


def event_causes(event: Obj, *, modern: bool) -> Causes:
    """A core Event lives in its object's namespace; one about a cluster-scoped object in `default`
    (or none). events.k8s.io/v1 only keeps the second rule (`regarding` may be elsewhere)."""
    namespace = (event.get("metadata") or {}).get("namespace", "")
    involved = (event.get("involvedObject") or {}).get("namespace", "")
    if (involved and involved != namespace and not modern) or (not involved and namespace not in ("", "default")):
        return [("involvedObject.namespace", f"Invalid value: {errors.go_value(involved)}: does not match "
                                             "event.namespace")]
    return []


def pod_create_causes(pod: Obj) -> Causes:
    """What upstream refuses in a new Pod that users (and DRA) get wrong: containers, claims."""
    spec = pod.get("spec") or {}
    causes: Causes = []
    containers = spec.get("containers") or []
    if not containers:
        causes.append(("spec.containers", "Required value"))
    claim_names: list[str] = []
    for i, ref in enumerate(spec.get("resourceClaims") or []):
        where = f"spec.resourceClaims[{i}]"
        name = ref.get("name") or ""
        causes += [(f"{where}.name", f"Invalid value: {errors.go_value(name)}: {detail}")
                   for detail in names.dns1123_label(name)]
        if name in claim_names:
            causes.append((f"{where}.name", f"Duplicate value: {errors.go_value(name)}"))
        claim_names.append(name)
        sources = [ref.get(f) for f in ("resourceClaimName", "resourceClaimTemplateName")]
        if len([s for s in sources if s]) != 1:
            # The internal Go struct (no JSON tags) is what upstream prints as the bad value.
            shown = errors.go_json({"Name": name, "ResourceClaimName": sources[0] or None,
                                    "ResourceClaimTemplateName": sources[1] or None})
            detail = ("must specify one of: `resourceClaimName`, `resourceClaimTemplateName`" if not any(sources)
                      else "at most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified")
            causes.append((where, f"Invalid value: {shown}: {detail}"))
        for field, source in zip(("resourceClaimName", "resourceClaimTemplateName"), sources, strict=True):
            if source:
                causes += [(f"{where}.{field}", f"Invalid value: {errors.go_value(source)}: {detail}")
                           for detail in names.dns1123_subdomain(source)]
    known = ": " + ", ".join(claim_names) if claim_names else " which is empty"
    for field in ("initContainers", "containers"):
        seen: set[str] = set()
        for i, container in enumerate(spec.get(field) or []):
            where = f"spec.{field}[{i}]"
            cname = container.get("name", "")
            if not cname:
                causes.append((f"{where}.name", "Required value"))
            elif cname in seen:
                causes.append((f"{where}.name", f"Duplicate value: {errors.go_value(cname)}"))
            seen.add(cname)
            if not container.get("image"):
                causes.append((f"{where}.image", "Required value"))
            for j, claim in enumerate(((container.get("resources") or {}).get("claims")) or []):
                if claim.get("name") not in claim_names:
                    causes.append((f"{where}.resources.claims[{j}]", f"Not found: {errors.go_value(claim.get('name'))}: "
                                                                     f"must be one of the names in pod.spec.resourceClaims{known}"))
    return causes + workloads.pod_causes(pod) + pods.label_keys_causes(pod)


_POD_MUTABLE_SPEC = ("activeDeadlineSeconds", "tolerations", "schedulingGates", "nodeSelector", "affinity",
                     "containers", "initContainers", "terminationGracePeriodSeconds")


_RESOURCE_STATUS_CLAIM = ("must match one of the container's resource claims as 'claim:<claimName>/<requestName>' "
                          "when container.resources.claims[*].request is set or 'claim:<claimName>' when it is empty")


def pod_status_causes(pod: Obj) -> Causes:
    """allocatedResourcesStatus names, as kube-apiserver checks them: `claim:<the container's claim
    entry>[/<its request>]` (or the pod's extended-resource claim and a mapped request), else the
    name of one of the container's resource requests."""
    causes: Causes = []
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    extended = status.get("extendedResourceClaimStatus") or {}
    for statuses, containers in (("containerStatuses", "containers"), ("initContainerStatuses", "initContainers")):
        by_name = {c.get("name"): c for c in spec.get(containers) or []}
        for i, container_status in enumerate(status.get(statuses) or []):
            container = by_name.get(container_status.get("name"))
            if container is None:
                continue
            resources_ = container.get("resources") or {}
            for j, allocated in enumerate(container_status.get("allocatedResourcesStatus") or []):
                name = str(allocated.get("name") or "")
                if name.startswith("claim:"):
                    claims = {"claim:" + c.get("name", "") + (f"/{c['request']}" if c.get("request") else "")
                              for c in resources_.get("claims") or []}
                    claim, _, request = name[len("claim:"):].partition("/")
                    mapped = bool(request) and claim == extended.get("resourceClaimName") and any(
                        m.get("containerName") == container.get("name") and m.get("requestName") == request
                        for m in extended.get("requestMappings") or [])
                    ok, message = name in claims or mapped, _RESOURCE_STATUS_CLAIM
                else:
                    ok, message = name in (resources_.get("requests") or {}), "must match one of the container's resource requests"
                if not ok:
                    causes.append((f"status.{statuses}[{i}].allocatedResourcesStatus[{j}].name",
                                   f'Invalid value: "{name}": {message}'))
    return causes


def pod_update_causes(new: Obj, old: Obj) -> Causes:
    """Which spec changes an update (not /status, not /binding) may make to a Pod."""
    ns, os_ = new.get("spec") or {}, old.get("spec") or {}
    causes: Causes = []
    fixed = {k: v for k, v in ns.items() if k not in _POD_MUTABLE_SPEC}
    if fixed != {k: v for k, v in os_.items() if k not in _POD_MUTABLE_SPEC}:
        causes.append(("spec", "Forbidden: pod updates may not change fields other than "
                               "`spec.containers[*].image`, `spec.initContainers[*].image`, "
                               "`spec.activeDeadlineSeconds`, `spec.tolerations` (only additions to existing "
                               "tolerations), `spec.terminationGracePeriodSeconds` and scheduling gates"))
    for field in ("containers", "initContainers"):
        strip = [{k: v for k, v in c.items() if k != "image"} for c in ns.get(field) or []]
        if strip != [{k: v for k, v in c.items() if k != "image"} for c in os_.get(field) or []]:
            causes.append((f"spec.{field}", "Forbidden: only the image of a container may change"))
    old_tol = os_.get("tolerations") or []
    if (ns.get("tolerations") or [])[:len(old_tol)] != old_tol:
        causes.append(("spec.tolerations", "Forbidden: existing toleration can not be modified except "
                                           "its tolerationSeconds"))
    old_gates = [g.get("name") for g in os_.get("schedulingGates") or []]
    new_gates = [g.get("name") for g in ns.get("schedulingGates") or []]
    if not set(new_gates) <= set(old_gates):
        causes.append(("spec.schedulingGates", "Forbidden: only deletion is allowed, but found new scheduling "
                                               "gates"))
    if not old_gates:
        for field in ("nodeSelector", "affinity"):
            if ns.get(field) != os_.get(field):
                causes.append((f"spec.{field}", "Forbidden: may only be changed while the pod has "
                                                "scheduling gates"))
    elif ns.get("nodeSelector") != os_.get("nodeSelector"):
        old_sel, new_sel = os_.get("nodeSelector") or {}, ns.get("nodeSelector") or {}
        if any(new_sel.get(k) != v for k, v in old_sel.items()):
            causes.append(("spec.nodeSelector", "Invalid value: only additions to the node selector are "
                                                "allowed while the pod is gated"))
    return causes
