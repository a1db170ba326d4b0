"""Small constructors for the objects the lifecycle decisions read: pods, templates, claims.

Each returns the frozen model, parsed from API JSON through `dralloc.model.conversion`,
so tests read like the YAML a user would write:

    pod("train", entries={"gpu": template_entry("gpu-tpl")}, phase="Running", node="n1")
    claim("shared", reserved=[consumer(p)], allocated=True, protected=True)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from dralloc.lifecycle import claims as lifecycle_claims
from dralloc.lifecycle import templates as lifecycle_templates
from dralloc.model import claims as model_claims
from dralloc.model import classes, conversion
from dralloc.model import pods as model_pods

NAMESPACE = "default"
CLASS = "gpu.example.com"
DELETED_AT = "2030-01-01T00:00:00Z"


def template_entry(template: str) -> dict[str, Any]:
    return {"resourceClaimTemplateName": template}


def claim_entry(claim_name: str) -> dict[str, Any]:
    return {"resourceClaimName": claim_name}


def pod(
    name: str = "p",
    *,
    uid: str | None = None,
    namespace: str = NAMESPACE,
    entries: Mapping[str, Mapping[str, Any]] | None = None,
    statuses: Mapping[str, str | None] | None = None,
    phase: str | None = None,
    node: str | None = None,
    deleting: bool = False,
    containers: Iterable[Mapping[str, Any]] = (),
    init_containers: Iterable[Mapping[str, Any]] = (),
    extended_status: Mapping[str, Any] | None = None,
) -> model_pods.Pod:
    metadata: dict[str, Any] = {"name": name, "namespace": namespace, "uid": uid or f"uid-{name}"}
    if deleting:
        metadata["deletionTimestamp"] = DELETED_AT
    spec: dict[str, Any] = {
        "resourceClaims": [{"name": entry, **source} for entry, source in (entries or {}).items()],
        "containers": [dict(c) for c in containers] or [{"name": "main"}],
    }
    if init_containers:
        spec["initContainers"] = [dict(c) for c in init_containers]
    if node:
        spec["nodeName"] = node
    status: dict[str, Any] = {}
    if phase:
        status["phase"] = phase
    if statuses:
        status["resourceClaimStatuses"] = [
            {"name": entry, **({"resourceClaimName": claimed} if claimed else {})}
            for entry, claimed in statuses.items()
        ]
    if extended_status is not None:
        status["extendedResourceClaimStatus"] = dict(extended_status)
    raw = {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec, "status": status}
    parsed: model_pods.Pod = conversion.parse_as(model_pods.Pod, raw)
    return parsed


def container(name: str, **requests: str) -> dict[str, Any]:
    return {"name": name, "resources": {"requests": dict(requests)}}


def device_spec(*requests: tuple[str, str]) -> dict[str, Any]:
    return {"devices": {"requests": [{"name": r, "exactly": {"deviceClassName": c}} for r, c in requests]}}


def template(
    name: str = "gpu-tpl",
    *,
    namespace: str = NAMESPACE,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    spec: Mapping[str, Any] | None = None,
) -> model_claims.ResourceClaimTemplate:
    meta: dict[str, Any] = {}
    if labels:
        meta["labels"] = dict(labels)
    if annotations:
        meta["annotations"] = dict(annotations)
    raw = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-tpl-{name}"},
        "spec": {"metadata": meta, "spec": dict(spec or device_spec(("gpu", CLASS)))},
    }
    parsed: model_claims.ResourceClaimTemplate = conversion.parse_as(model_claims.ResourceClaimTemplate, raw)
    return parsed


def consumer(p: model_pods.Pod) -> dict[str, Any]:
    return lifecycle_claims.reserved_for_pod(p)


def claim(
    name: str = "c",
    *,
    uid: str | None = None,
    namespace: str = NAMESPACE,
    owner: model_pods.Pod | None = None,
    entry: str | None = None,
    reserved: Iterable[Mapping[str, Any]] = (),
    allocated: bool = False,
    allocated_at: str | None = None,
    protected: bool = False,
    deleting: bool = False,
    created_at: str | None = None,
) -> model_claims.ResourceClaim:
    metadata: dict[str, Any] = {"name": name, "namespace": namespace, "uid": uid or f"uid-{name}"}
    if owner is not None:
        metadata["ownerReferences"] = [lifecycle_templates.pod_owner_reference(owner)]
    if entry is not None:
        metadata["annotations"] = {lifecycle_templates.POD_CLAIM_NAME_ANNOTATION: entry}
    if protected:
        metadata["finalizers"] = [lifecycle_claims.DELETE_PROTECTION_FINALIZER]
    if deleting:
        metadata["deletionTimestamp"] = DELETED_AT
    if created_at:
        metadata["creationTimestamp"] = created_at
    status: dict[str, Any] = {}
    if allocated:
        allocation: dict[str, Any] = {
            "devices": {"results": [{"request": "gpu", "driver": CLASS, "pool": "pool-1", "device": "gpu-0"}]}
        }
        if allocated_at:
            allocation["allocationTimestamp"] = allocated_at
        status["allocation"] = allocation
    reserved = list(reserved)
    if reserved:
        status["reservedFor"] = [dict(r) for r in reserved]
    raw = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": metadata,
        "spec": device_spec(("gpu", CLASS)),
        "status": status,
    }
    parsed: model_claims.ResourceClaim = conversion.parse_as(model_claims.ResourceClaim, raw)
    return parsed


def device_class(name: str, extended_resource_name: str | None = None) -> classes.DeviceClass:
    spec: dict[str, Any] = {}
    if extended_resource_name:
        spec["extendedResourceName"] = extended_resource_name
    raw = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name}, "spec": spec}
    parsed: classes.DeviceClass = conversion.parse_as(classes.DeviceClass, raw)
    return parsed


def by_uid(*pods: model_pods.Pod) -> dict[str, model_pods.Pod]:
    return {p.metadata.uid or "": p for p in pods}
