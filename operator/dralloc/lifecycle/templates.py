"""ResourceClaims generated from ResourceClaimTemplates for the entries of a pod.

A pod entry with `resourceClaimTemplateName` gets its own ResourceClaim, owned by
the pod, so that the claim lives and dies with the pod. Upstream's resourceclaim
controller does this; here we compute the same decisions as values:

- The claim is created with `generateName` `<pod>-<entry>-`. Names are limited to
  63 characters and the API server appends five random ones, so a base longer
  than 57 characters is cut: the pod name and the entry name are each shortened
  in proportion to their length and joined with a hyphen. As upstream, that
  shortened base has no trailing hyphen (`<pod-prefix>-<entry-prefix>` + random).
- The operator sends the create with a name of that very shape whose five last
  characters derive from the pod's UID and the entry (handlers/lifecycle.py
  `deterministic_name`), so a create sent twice — retried after a timeout, or by two
  replicas during a handover — meets AlreadyExists instead of making a second claim.
- Owner: the pod, as controller with blockOwnerDeletion, so the garbage
  collector removes the claim with the pod.
- The annotation `resource.kubernetes.io/pod-claim-name` holds the entry name. It
  is how a claim that was created but never recorded in the pod status (a crash,
  a conflict on the status write) is found again: by controller owner UID and
  annotation. That lookup comes before any create, so one entry never gets two
  claims, across restarts too.
- The template's labels and annotations are copied; our annotation wins over a
  template annotation of the same key. The spec is the template's spec.
- The generated name is recorded in `pod.status.resourceClaimStatuses`.

PodGroup claims from templates (KEP-5729, DRAWorkloadResourceClaims), as upstream's
resourceclaim controller does them in 1.37 (`syncPodGroup` / `handlePodGroupClaim`):

- A PodGroup entry with `resourceClaimTemplateName` gets one claim for the whole group:
  `generateName` `<podgroup>-<entry>-` (cut as above), the PodGroup as controller owner
  (`apiVersion` its served version, no blockOwnerDeletion: upstream sets none), the same
  annotation and copied labels/annotations, the template's spec. Its name is recorded in
  the PodGroup's `status.resourceClaimStatuses`, and found again by owner and annotation
  before any create.
- A pod entry matching a PodGroup entry (same name, same resourceClaimName and
  resourceClaimTemplateName: upstream's `BindTo`) gets no claim of its own: the pod's
  `status.resourceClaimStatuses` records the PodGroup's claim, once it exists.
- A pod naming a PodGroup that is not there yet gets no claims for its template entries
  yet (which of them are the group's is not known): upstream retries the pod the same way.

Deliberate differences from upstream, release 1.36:
- Pods that are being deleted or have finished get no claims (upstream skips
  only deleted ones; a finished pod will never run, and creating a claim for it
  would only have the claim controller delete it again).
- A missing template is reported with a Warning Event on the pod (reason
  `FailedResourceClaimCreation`, as upstream), but the other entries of the pod
  are still handled; upstream stops at the first failing entry.
- Upstream refuses templates that ask for admin access while the DRAAdminAccess
  gate is off. That is an admission question, answered by the API server (or
  the sandbox) when the claim is created, so it is not repeated here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from dralloc.lifecycle import plans
from dralloc.model import conversion
from dralloc.model.base import OwnerReference
from dralloc.model.claims import ResourceClaim, ResourceClaimTemplate
from dralloc.model.pods import Pod, PodResourceClaim
from dralloc.model.scheduling import GROUP as SCHEDULING_GROUP
from dralloc.model.scheduling import PodGroup, PodGroupResourceClaim

POD_CLAIM_NAME_ANNOTATION = "resource.kubernetes.io/pod-claim-name"
CLAIM_API_VERSION = "resource.k8s.io/v1"

# 63 characters for a name, minus the 5 random characters the API server adds and a hyphen.
_MAX_GENERATE_NAME_BASE = 57


def generate_name(pod_name: str, entry_name: str) -> str:
    """The `generateName` of the claim for a pod entry (see the module docstring for the cut)."""
    base = f"{pod_name}-{entry_name}-"
    if len(base) <= _MAX_GENERATE_NAME_BASE:
        return base
    # Both parts shrink by the same ratio, so a long pod name cannot push the entry name out.
    keep_pod = len(pod_name) * _MAX_GENERATE_NAME_BASE // len(base)
    keep_entry = len(entry_name) * _MAX_GENERATE_NAME_BASE // len(base)
    return f"{pod_name[:keep_pod]}-{entry_name[:keep_entry]}"


def pod_owner_reference(pod: Pod) -> dict[str, Any]:
    """The controller owner reference a generated claim carries to its pod."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "name": pod.name,
        "uid": pod.metadata.uid or "",
        "controller": True,
        "blockOwnerDeletion": True,
    }


def controlling_pod(claim: ResourceClaim) -> OwnerReference | None:
    """The claim's controller owner reference if that owner is a Pod (core v1), else None."""
    for owner in claim.metadata.owner_references:
        if owner.controller and owner.api_version == "v1" and owner.kind == "Pod":
            return owner
    return None


def is_controlled_by(claim: ResourceClaim, pod: Pod) -> bool:
    """True when the pod (this incarnation: same UID) is the claim's controller.

    An owner reference names an object of the claim's own namespace, by name and UID (as the
    garbage collector reads it): a claim in another namespace naming this pod's UID is not its."""
    owner = controlling_pod(claim)
    return (owner is not None and bool(pod.metadata.uid) and owner.uid == pod.metadata.uid
            and claim.namespace == pod.namespace and owner.name == pod.name)


def claim_for_template(pod: Pod, entry: PodResourceClaim, template: ResourceClaimTemplate) -> dict[str, Any]:
    """The ResourceClaim (API JSON) to create for `entry` of `pod` from `template`."""
    annotations = dict(template.spec.metadata.annotations)
    annotations[POD_CLAIM_NAME_ANNOTATION] = entry.name
    metadata: dict[str, Any] = {
        "generateName": generate_name(pod.name, entry.name),
        "namespace": pod.namespace,
        "ownerReferences": [pod_owner_reference(pod)],
        "annotations": annotations,
    }
    if template.spec.metadata.labels:
        metadata["labels"] = dict(template.spec.metadata.labels)
    return {
        "apiVersion": CLAIM_API_VERSION,
        "kind": "ResourceClaim",
        "metadata": metadata,
        "spec": conversion.to_raw(template.spec.spec),
    }


def find_generated_claim(pod: Pod, entry_name: str, claims: Iterable[ResourceClaim]) -> ResourceClaim | None:
    """The claim generated for `entry_name` of this pod: controlled by its UID and annotated with the entry.

    Claims without the annotation are never picked (a user's claim that happens to be
    owned by the pod is not ours to adopt). Should several match, which only a bug
    elsewhere can cause, the oldest (then the first by name) wins, so the answer does
    not depend on the order of `claims`.
    """
    matches = [
        claim
        for claim in claims
        if claim.namespace == pod.namespace
        and claim.metadata.annotations.get(POD_CLAIM_NAME_ANNOTATION) == entry_name
        and is_controlled_by(claim, pod)
    ]
    if not matches:
        return None
    return min(matches, key=lambda c: (c.metadata.creation_timestamp or "", c.name))


def claim_name_for(pod: Pod, entry: PodResourceClaim) -> str | None:
    """The name of the ResourceClaim a pod entry uses, or None when there is none (yet).

    A `resourceClaimName` entry names it directly. A template entry's claim is the one
    recorded in `pod.status.resourceClaimStatuses`; before it is recorded (or when the
    status says no claim was needed) there is none.
    """
    if entry.resource_claim_name:
        return entry.resource_claim_name
    if entry.resource_claim_template_name:
        for status in pod.status.resource_claim_statuses:
            if status.name == entry.name:
                return status.resource_claim_name or None
    return None


def _recorded(pod: Pod, entry_name: str) -> tuple[bool, str | None]:
    for status in pod.status.resource_claim_statuses:
        if status.name == entry_name:
            return True, status.resource_claim_name
    return False, None


def group_entry_for(entry: PodResourceClaim, group: PodGroup | None) -> PodGroupResourceClaim | None:
    """The PodGroup entry a pod entry uses (upstream's BindTo: same name, claim name and template name)."""
    if group is None:
        return None
    for candidate in group.spec.resource_claims:
        if (candidate.name == entry.name and candidate.resource_claim_name == entry.resource_claim_name
                and candidate.resource_claim_template_name == entry.resource_claim_template_name):
            return candidate
    return None


def pod_group_owner_reference(group: PodGroup, api_version: str) -> dict[str, Any]:
    """The controller owner reference of a PodGroup's generated claim (`api_version`: the served one)."""
    return {"apiVersion": api_version, "kind": "PodGroup", "name": group.metadata.name,
            "uid": group.metadata.uid or "", "controller": True}


def is_controlled_by_group(claim: ResourceClaim, group: PodGroup) -> bool:
    """True when this PodGroup (same UID; any scheduling.k8s.io version) is the claim's controller
    (in the claim's namespace, by name and UID, as `is_controlled_by`)."""
    return bool(group.metadata.uid) and claim.namespace == group.namespace and any(
        owner.controller and owner.kind == "PodGroup" and owner.api_version.startswith(f"{SCHEDULING_GROUP}/")
        and owner.uid == group.metadata.uid and owner.name == group.metadata.name
        for owner in claim.metadata.owner_references)


def find_pod_group_claim(group: PodGroup, entry_name: str, claims: Iterable[ResourceClaim]) -> ResourceClaim | None:
    """The claim generated for `entry_name` of this PodGroup: controlled by it, annotated with the entry
    (oldest, then first by name, should a bug elsewhere have made several)."""
    matches = [claim for claim in claims
               if claim.namespace == group.metadata.namespace
               and claim.metadata.annotations.get(POD_CLAIM_NAME_ANNOTATION) == entry_name
               and is_controlled_by_group(claim, group)]
    return min(matches, key=lambda c: (c.metadata.creation_timestamp or "", c.name)) if matches else None


def claim_for_pod_group_template(group: PodGroup, entry: PodGroupResourceClaim, template: ResourceClaimTemplate,
                                 api_version: str) -> dict[str, Any]:
    """The ResourceClaim (API JSON) to create for `entry` of the PodGroup from `template`."""
    annotations = dict(template.spec.metadata.annotations)
    annotations[POD_CLAIM_NAME_ANNOTATION] = entry.name
    metadata: dict[str, Any] = {
        "generateName": generate_name(group.metadata.name, entry.name),
        "namespace": group.metadata.namespace,
        "ownerReferences": [pod_group_owner_reference(group, api_version)],
        "annotations": annotations,
    }
    if template.spec.metadata.labels:
        metadata["labels"] = dict(template.spec.metadata.labels)
    return {"apiVersion": CLAIM_API_VERSION, "kind": "ResourceClaim", "metadata": metadata,
            "spec": conversion.to_raw(template.spec.spec)}


def pod_group_claim_plan(
    group: PodGroup,
    templates: Mapping[str, ResourceClaimTemplate],
    claims_by_owner: Iterable[ResourceClaim],
    *,
    api_version: str,
) -> plans.Plan:
    """Claims to create for the PodGroup's template entries, and the names to record in its status.

    As `pod_claim_plan`: `claims_by_owner` must include claims created and not yet seen back.
    """
    namespace, name = group.metadata.namespace or "", group.metadata.name
    if group.metadata.deletion_timestamp is not None:
        return ()
    owned = [claim for claim in claims_by_owner if is_controlled_by_group(claim, group)]
    by_name = {claim.name for claim in owned}
    recorded = {s.name: s.resource_claim_name for s in group.status.resource_claim_statuses}
    steps: list[plans.PlanStep] = []
    statuses: list[dict[str, Any]] = []
    for entry in group.spec.resource_claims:
        template_name = entry.resource_claim_template_name
        if entry.resource_claim_name or not template_name:
            continue
        if entry.name in recorded and recorded[entry.name] is None:
            continue  # the status says this entry needs no claim
        if recorded.get(entry.name) in by_name:
            continue  # created, recorded, and still the group's
        existing = find_pod_group_claim(group, entry.name, owned)
        if existing is not None:
            statuses.append({"name": entry.name, "resourceClaimName": existing.name})
            continue
        template = templates.get(f"{namespace}/{template_name}")
        if template is None:
            steps.append(plans.EmitEvent(
                regarding_kind="PodGroup", namespace=namespace, name=name, reason="FailedResourceClaimCreation",
                message=f"PodGroupResourceClaim {entry.name}: ResourceClaimTemplate {template_name!r} not found",
                type_="Warning", regarding_uid=group.metadata.uid or ""))
            continue
        steps.append(plans.CreateClaim(raw=claim_for_pod_group_template(group, entry, template, api_version)))
    if statuses:
        steps.append(plans.SetPodGroupClaimStatuses(namespace, name, tuple(statuses)))
    return tuple(steps)


def pod_claim_plan(
    pod: Pod,
    templates: Mapping[str, ResourceClaimTemplate],
    claims_by_owner: Iterable[ResourceClaim],
    *,
    group: PodGroup | None = None,
    group_claims: Iterable[ResourceClaim] = (),
    group_missing: bool = False,
) -> plans.Plan:
    """Claims to create for the pod's template entries, and the claim names to record.

    `templates` is keyed by "namespace/name". `claims_by_owner` are the claims
    controlled by the pod (more may be passed; only the pod's own are used). The
    caller must include claims it created and has not yet seen back from the watch,
    or a second plan would create a second claim (upstream keeps a mutation cache
    for the same reason). `group`: the PodGroup the pod names, with `group_claims`
    (claims it controls, at least); `group_missing`: the pod names one the cluster
    does not have (yet).
    """
    if pod.metadata.deletion_timestamp is not None or pod.finished():
        return ()
    owned = [claim for claim in claims_by_owner if is_controlled_by(claim, pod)]
    by_name = {claim.name: claim for claim in owned}
    steps: list[plans.PlanStep] = []
    statuses: list[dict[str, Any]] = []
    for entry in pod.spec.resource_claims:
        template_name = entry.resource_claim_template_name
        if entry.resource_claim_name or not template_name:
            continue
        if group_missing:
            continue  # whether the entry is the group's is not known until the PodGroup is there
        recorded, recorded_name = _recorded(pod, entry.name)
        if group is not None and group_entry_for(entry, group) is not None:
            # The PodGroup's claim, never one of the pod's own: recorded once it exists.
            shared = find_pod_group_claim(group, entry.name, group_claims)
            if shared is not None and shared.name != recorded_name:
                statuses.append({"name": entry.name, "resourceClaimName": shared.name})
            continue
        if recorded and recorded_name is None:
            continue  # the status says this entry needs no claim
        if recorded_name is not None and recorded_name in by_name:
            continue  # created, recorded, and still ours
        existing = find_generated_claim(pod, entry.name, owned)
        if existing is not None:
            if existing.name != recorded_name:
                statuses.append({"name": entry.name, "resourceClaimName": existing.name})
            continue
        template = templates.get(f"{pod.namespace}/{template_name}")
        if template is None:
            steps.append(
                plans.EmitEvent(
                    regarding_kind="Pod",
                    namespace=pod.namespace,
                    name=pod.name,
                    reason="FailedResourceClaimCreation",
                    message=f"PodResourceClaim {entry.name}: ResourceClaimTemplate {template_name!r} not found",
                    type_="Warning",
                    regarding_uid=pod.metadata.uid or "",
                )
            )
            continue
        steps.append(plans.CreateClaim(raw=claim_for_template(pod, entry, template)))
    if statuses:
        steps.append(plans.SetPodClaimStatuses(pod.namespace, pod.name, tuple(statuses)))
    return tuple(steps)
