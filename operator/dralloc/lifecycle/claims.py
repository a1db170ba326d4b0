"""What happens to a ResourceClaim after its consumers go away.

Upstream's resourceclaim controller (kube-controller-manager) keeps three things
true, and `claim_plan` decides the same for one observed claim:

1. Reservations. `status.reservedFor` lists who may use the claim. A pod entry
   (apiGroup "", resource "pods") stops being valid when the pod no longer
   exists, has been replaced by another pod of the same name (other UID), or is
   done: phase Succeeded or Failed, or being deleted before it was ever
   scheduled. Such entries are dropped; valid ones keep their order.
2. Deallocation. When dropping leaves nobody, the allocation is cleared in the
   same status write, so the next consumer can get devices anywhere instead of
   being tied to the node of the previous one, and the devices are free for
   others. It is triggered by that transition, not by "unreserved" alone:
   something may legitimately allocate a claim before reserving it. A claim being
   deleted that nobody reserves is deallocated too.
3. Deletion. A claim generated for a pod (its controller owner is a core/v1 Pod)
   that nobody reserves is deleted once that pod is gone or done; the garbage
   collector would do it only when the pod object itself is removed.

The finalizer `resource.kubernetes.io/delete-protection` is added by whoever
allocates (kube-scheduler in PreBind; dralloc's placement through
`finalizers_for_allocation`), before the allocation is written. It makes the
deletion of an allocated claim wait until the claim is deallocated. As upstream,
it is removed right after a deallocation, and from a claim being deleted that
nobody reserves (deallocating it first if needed). It is not removed from other
unallocated claims: an allocator adds it before writing the allocation, and
taking it away in between would fight that allocator. A finalizer left on an
unallocated claim only matters at deletion, where it is removed, so a plan
executed in parts and planned again still ends in the same state.

References name objects of the claim's own namespace. A reservation is that consumer's
while an object of its resource with the claim's namespace, the entry's name and UID exists
(as upstream: it looks the pod up by the claim's namespace and the entry's name, then
compares the UID); the controlling owner likewise (the garbage collector looks owners up the
same way). A UID that belongs to an object in another namespace names nothing: a tenant who
writes another namespace's pod UID into its own claim gets its reservation dropped as that of
a consumer that does not exist, and a claim generated for a pod of another namespace is one
whose pod is gone.

Deliberate differences from upstream, release 1.36:
- The pod view is complete: `pods_by_uid` must hold every pod of the claim's
  namespace the informer knows (synced). A UID absent from it (or held by a pod of
  another namespace or name) means the pod is gone. Upstream double-checks with a
  GET because its cache may lag; the caller does the equivalent by planning only
  from a synced view.
- Generated claims whose pod is gone are deleted here; upstream leaves that case
  to the garbage collector (which the sandbox also implements). Deleting is
  guarded by the claim's UID, so it cannot hit a successor.
- Reservations of consumers that are not pods are kept as valid. Upstream fails
  the sync with "unsupported ReservedFor entry" and retries forever, which keeps
  them too, but also blocks the rest.
- Upstream clears the allocation only when the claim carries the finalizer (a
  sanity check that the scheduler made it). In resource.k8s.io/v1 nothing else
  allocates, and leaking devices is worse than being lenient, so we deallocate on
  the transition either way.
- With `now` given, a claim that is allocated, reserved by nobody, not needed by
  any pod that may still run (no such pod references it), and allocated at least
  `unreserved_grace` ago is deallocated as well. Upstream has no such repair (its
  scheduler deallocates such claims only when a pod that needs them cannot be
  scheduled); we need it for restart safety when a drop and a deallocation were
  written separately and the process died in between.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Mapping
from typing import Any

from dralloc.lifecycle import extended, plans, templates
from dralloc.model import conversion
from dralloc.model.claims import ResourceClaim, ResourceClaimConsumerReference
from dralloc.model.pods import Pod

DELETE_PROTECTION_FINALIZER = "resource.kubernetes.io/delete-protection"
UNRESERVED_GRACE = dt.timedelta(seconds=30)


def reserved_for_pod(pod: Pod) -> dict[str, Any]:
    """The `status.reservedFor` entry for a pod, as the API writes it (empty apiGroup omitted)."""
    return {"resource": "pods", "name": pod.name, "uid": pod.metadata.uid or ""}


def finalizers_for_allocation(claim: ResourceClaim) -> tuple[str, ...]:
    """The claim's finalizers with delete protection added: write these before writing an allocation."""
    if DELETE_PROTECTION_FINALIZER in claim.metadata.finalizers:
        return claim.metadata.finalizers
    return (*claim.metadata.finalizers, DELETE_PROTECTION_FINALIZER)


def pod_is_done(pod: Pod) -> bool:
    """True when none of the pod's containers runs and none ever will (upstream's test, exactly)."""
    return pod.finished() or (pod.metadata.deletion_timestamp is not None and not pod.spec.node_name)


def is_pod_consumer(ref: ResourceClaimConsumerReference) -> bool:
    return not ref.api_group and ref.resource == "pods"


def is_pod_group_consumer(ref: ResourceClaimConsumerReference) -> bool:
    return ref.api_group == "scheduling.k8s.io" and ref.resource == "podgroups"


PodGroupRef = tuple[str, str, str]  # namespace, name, uid of a PodGroup that exists


def consumer_valid(ref: ResourceClaimConsumerReference, namespace: str, pods_by_uid: Mapping[str, Pod],
                   pod_groups: Collection[PodGroupRef] | None) -> bool:
    """Whether a reservation of a claim in `namespace` stands: a pod's (see `pod_consumer_valid`); a
    PodGroup's while that PodGroup (the claim's namespace, the entry's name and UID) exists
    (kube-controller-manager 1.37, DRAWorkloadResourceClaims: gone or replaced, the entry goes); any
    other consumer's, and PodGroups' when the cluster serves none we watch (`pod_groups` None), are
    kept: they are not ours to judge."""
    if is_pod_consumer(ref):
        return pod_consumer_valid(ref, namespace, pods_by_uid)
    if is_pod_group_consumer(ref) and pod_groups is not None:
        return (namespace, ref.name, ref.uid) in pod_groups
    return True


def pod_named(pods_by_uid: Mapping[str, Pod], namespace: str, name: str, uid: str) -> Pod | None:
    """The pod a reference from an object in `namespace` names: that namespace, name and UID, or None.

    A UID alone is not enough: a tenant can write any UID into its own objects, and a pod of
    another namespace is never what a claim's reference means."""
    pod = pods_by_uid.get(uid) if uid else None
    if pod is None or pod.namespace != namespace or pod.name != name:
        return None
    return pod


def pod_consumer_valid(ref: ResourceClaimConsumerReference, namespace: str, pods_by_uid: Mapping[str, Pod]) -> bool:
    """Whether a pod's reservation on a claim in `namespace` still stands: that very pod (the claim's
    namespace, the entry's name, same UID) exists and is not done."""
    pod = pod_named(pods_by_uid, namespace, ref.name, ref.uid)
    return pod is not None and not pod_is_done(pod)


def pod_uses_claim(pod: Pod, claim: ResourceClaim) -> bool:
    """Whether the pod refers to the claim: by an entry, a recorded generated name, or its extended-resource claim."""
    if pod.namespace != claim.namespace:
        return False
    if any(templates.claim_name_for(pod, entry) == claim.name for entry in pod.spec.resource_claims):
        return True
    return extended.recorded_claim_name(pod) == claim.name


def _parse_time(value: str | None) -> dt.datetime | None:
    if not value:
        return None
    try:
        parsed = dt.datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)


def _aware(moment: dt.datetime) -> dt.datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=dt.UTC)


def _stranded(
    claim: ResourceClaim,
    pods_by_uid: Mapping[str, Pod],
    now: dt.datetime,
    grace: dt.timedelta,
) -> bool:
    """Allocated, reserved by nobody, wanted by no pod that may run, and old enough to not be in flight."""
    allocation = claim.status.allocation
    assert allocation is not None
    if any(pod_uses_claim(pod, claim) and not pod_is_done(pod) for pod in pods_by_uid.values()):
        return False
    since = _parse_time(allocation.allocation_timestamp) or _parse_time(claim.metadata.creation_timestamp)
    return since is None or _aware(now) - since >= grace


def claim_plan(
    claim: ResourceClaim,
    *,
    pods_by_uid: Mapping[str, Pod],
    now: dt.datetime | None = None,  # None: no time-based repair of stranded allocations (pure upstream)
    unreserved_grace: dt.timedelta = UNRESERVED_GRACE,
    pod_groups: Collection[PodGroupRef] | None = None,  # the PodGroups that exist; None: not watched
) -> plans.Plan:
    """Drop stale reservations, deallocate, release the finalizer, delete a generated claim: in that order."""
    namespace, name = claim.namespace, claim.name
    reserved = claim.status.reserved_for
    keep = tuple(ref for ref in reserved if consumer_valid(ref, namespace, pods_by_uid, pod_groups))
    dropped = len(keep) < len(reserved)
    deleting = claim.metadata.deletion_timestamp is not None
    allocated = claim.status.allocation is not None

    steps: list[plans.PlanStep] = []
    if dropped:
        steps.append(plans.DropReservations(namespace, name, tuple(conversion.to_raw(ref) for ref in keep)))
    if keep:
        return tuple(steps)  # somebody still uses it: nothing else may change

    deallocate = allocated and (
        dropped or deleting or (now is not None and _stranded(claim, pods_by_uid, now, unreserved_grace))
    )
    if deallocate:
        steps.append(plans.Deallocate(namespace, name))
    if DELETE_PROTECTION_FINALIZER in claim.metadata.finalizers and (deallocate or deleting):
        steps.append(plans.RemoveFinalizer(namespace, name, DELETE_PROTECTION_FINALIZER))

    owner = templates.controlling_pod(claim)
    if owner is not None and not deleting:
        pod = pod_named(pods_by_uid, namespace, owner.name, owner.uid)
        if pod is None or pod_is_done(pod):
            steps.append(plans.DeleteClaim(namespace, name, claim.metadata.uid or ""))
    return tuple(steps)


def pod_condition_unschedulable(
    message: str,
    *,
    now: dt.datetime | None = None,  # None: leave lastTransitionTime to whoever merges the condition
    observed_generation: int | None = None,
) -> dict[str, Any]:
    """The `PodScheduled` condition kube-scheduler writes for a pod that fits nowhere."""
    condition: dict[str, Any] = {
        "type": "PodScheduled",
        "status": "False",
        "reason": "Unschedulable",
        "message": message,
    }
    if now is not None:
        condition["lastTransitionTime"] = _aware(now).astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    if observed_generation is not None:
        condition["observedGeneration"] = observed_generation
    return condition
