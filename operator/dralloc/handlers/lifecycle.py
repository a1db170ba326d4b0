"""The claim lifecycle loop: carry out what `dralloc.lifecycle` decides.

For every pod that changed: create the claims of its template entries and record
them in `pod.status.resourceClaimStatuses`. For every PodGroup that changed: the same for
its template entries (one claim for the group, recorded in its status), and its member
pods looked at again (an entry they share with the PodGroup records the group's claim). For every claim that changed, or
whose pods changed: drop reservations of pods that are gone or done, deallocate
claims nobody reserves, release the delete-protection finalizer, delete
generated claims of finished pods. Runs for every pod in the cluster (as
kube-controller-manager's resourceclaim controller does), not only ours.

Each write carries a precondition (resourceVersion or UID). A conflict marks
the object dirty again: the next pass plans from the newer state. Objects we
wrote are put into the cluster view at once, so the next pass never plans a
second claim for one pod entry, even before the watch delivers it.

A loop of the top layers: calls the runtime, `items` (which pods are the scheduler's) and
`committing` (read-backs of writes whose outcome is unknown); the pure plans are
`dralloc.lifecycle`'s.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import functools
import hashlib
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from dralloc import metrics
from dralloc.handlers import committing, failures, items
from dralloc.handlers.runtime import Runtime
from dralloc.kube import errors as kube_errors
from dralloc.kube import reading, resources, writing
from dralloc.lifecycle import claims as lifecycle_claims
from dralloc.lifecycle import extended, plans, templates
from dralloc.model import claims as model_claims
from dralloc.model import pods
from dralloc.model import scheduling as scheduling_model
from dralloc.state.cluster import PodsByUid

logger = logging.getLogger(__name__)

Raw = dict[str, Any]


async def run_pass(rt: Runtime, *, everything: bool = False) -> int:
    """One pass over the dirty pods and claims; returns how many steps were executed."""
    if everything:
        rt.mark_all_dirty()
    failed = rt.lifecycle_failures
    if everything and len(failed):
        kinds = {"pod": "Pod", "podgroup": "PodGroup"}
        failed.forget_unless(lambda kind, key: rt.cluster.store(kinds.get(kind, "ResourceClaim")).raw(*key) is not None)
    for kind, key in failed.due(time.monotonic()):
        {"pod": rt.dirty_pods, "podgroup": rt.dirty_pod_groups}.get(kind, rt.dirty_claims).add(key)
    dirty_groups, rt.dirty_pod_groups = rt.dirty_pod_groups, set()
    # With kube-controller-manager doing the claim lifecycle (handlers/coexisting.py), what is
    # left here is the scheduler's part: the claims for DRA extended resources of our pods.
    # KCM 1.37 also creates PodGroups' template claims: those are ours only when the lifecycle is.
    ours = rt.coexistence.does("claim-lifecycle")
    template_map = {t.ref(): t for t in rt.cluster.templates.all()}
    executed = await _pod_group_claims(rt, dirty_groups, template_map) if ours and dirty_groups else 0
    dirty_pods, rt.dirty_pods = rt.dirty_pods, set()
    dirty_claims, rt.dirty_claims = rt.dirty_claims, set()
    if not dirty_pods and not dirty_claims and not dirty_groups:
        return executed
    cluster = rt.cluster
    affected_claims = set(dirty_claims)
    # Plans are made synchronously; each object's steps run in order, objects concurrently.
    work: list[list[Any]] = []
    replans: list[_Replan | None] = []
    for namespace, name in sorted(dirty_pods):
        pod = cluster.pods.get(namespace, name)
        if pod is None:
            continue
        affected_claims.update(cluster.claims_naming(namespace, pod.metadata.uid or ""))
        if not rt.watches_namespace(namespace):
            continue
        steps = await _pod_steps(rt, (namespace, name), template_map, ours)
        if steps:
            work.append(steps)
            replans.append(functools.partial(_pod_steps, rt, (namespace, name), template_map, ours))
    executed += await _run_concurrently(rt, work, replans)
    if not ours:
        return executed
    work = []
    # Pods that vanished leave their claims behind: those claims name uids no pod has any more.
    # PodGroups that are gone leave the claims reserved for them behind in the same way.
    pod_groups = ({(g.namespace, g.name, g.metadata.uid or "") for g in cluster.pod_groups.all()}
                  if rt.pod_group_resource is not None else None)
    if dirty_pods or dirty_groups:
        for uid in [u for u in cluster.claims_of if u not in cluster.pod_keys]:
            affected_claims |= cluster.claims_of.get(uid, set())
    pods_by_uid = PodsByUid(cluster)
    now = dt.datetime.now(dt.UTC)
    for key in sorted(affected_claims):
        current = cluster.claims.get(*key)
        if current is None or not rt.watches_namespace(key[0]):
            continue
        try:
            planned = _combined(lifecycle_claims.claim_plan(current, pods_by_uid=pods_by_uid, now=now,
                                                            pod_groups=pod_groups))
        except Exception as exc:
            await _failed(rt, "claim", key, exc)
            continue
        failed.succeeded("claim", key)
        if planned:
            work.append(planned)
    executed += await _run_concurrently(rt, work)
    return executed


CONCURRENCY = 32  # objects whose steps are in flight at once

_Replan = Callable[[], Awaitable[list[Any] | None]]


async def _pod_steps(rt: Runtime, key: tuple[str, str], template_map: dict[str, model_claims.ResourceClaimTemplate],
                     ours: bool) -> list[Any] | None:
    """The pod's lifecycle steps, planned from the view as it is now (None: the pod is gone, or planning failed,
    which is reported on the pod and backs it off)."""
    cluster = rt.cluster
    pod = cluster.pods.get(*key)
    if pod is None:
        return None
    owned = [c for claim_key in cluster.claims_naming(key[0], pod.metadata.uid or "")
             if (c := cluster.claims.get(*claim_key)) is not None]
    group, group_claims, missing = _group_of(rt, pod)
    try:
        steps: list[Any] = list(templates.pod_claim_plan(
            pod, template_map, owned, group=group, group_claims=group_claims, group_missing=missing)) if ours else []
        steps += _extended_resource_steps(rt, pod, owned)
    except Exception as exc:  # one pod must not stop the lifecycle of the others
        await _failed(rt, "pod", key, exc)
        return None
    rt.lifecycle_failures.succeeded("pod", key)
    return steps


def _group_of(rt: Runtime, pod: pods.Pod) -> tuple[scheduling_model.PodGroup | None, list[model_claims.ResourceClaim],
                                                   bool]:
    """The PodGroup a pod names, the claims that PodGroup controls, and whether it names one the
    cluster serves PodGroups for but does not have (yet). Without served PodGroups the API server
    drops spec.schedulingGroup, so there is nothing to look up."""
    group_ref = pod.spec.scheduling_group
    name = group_ref.pod_group_name if group_ref is not None else None
    if not name or rt.pod_group_resource is None:
        return None, [], False
    group = rt.cluster.pod_groups.get(pod.metadata.namespace or "", name)
    if group is None:
        return None, [], True
    owned = [c for key in rt.cluster.claims_naming(group.namespace, group.metadata.uid or "")
             if (c := rt.cluster.claims.get(*key)) is not None]
    return group, owned, False


def _members(rt: Runtime, key: tuple[str, str]) -> set[tuple[str, str]]:
    """The pods naming the PodGroup (raw: the view's pods are not all parsed)."""
    found = set()
    for pod_key in rt.cluster.pods.entries:
        if pod_key[0] != key[0]:
            continue
        spec = (rt.cluster.pods.raw(*pod_key) or {}).get("spec") or {}
        if (spec.get("schedulingGroup") or {}).get("podGroupName") == key[1]:
            found.add(pod_key)
    return found


async def _pod_group_claims(rt: Runtime, dirty: set[tuple[str, str]],
                            template_map: dict[str, model_claims.ResourceClaimTemplate]) -> int:
    """The claims of changed PodGroups' template entries: created, then recorded in the PodGroup's status;
    their member pods are looked at again (they record the group's claim, or waited for the group)."""
    resource = rt.pod_group_resource
    if resource is None:
        return 0
    work: list[list[Any]] = []
    for key in sorted(dirty):
        group = rt.cluster.pod_groups.get(*key)
        if group is None or not rt.watches_namespace(key[0]):
            continue
        rt.dirty_pods |= _members(rt, key)
        owned = [c for claim_key in rt.cluster.claims_naming(group.namespace, group.metadata.uid or "")
                 if (c := rt.cluster.claims.get(*claim_key)) is not None]
        try:
            steps = list(templates.pod_group_claim_plan(group, template_map, owned, api_version=resource.api_version))
        except Exception as exc:  # one PodGroup must not stop the others
            await _failed(rt, "podgroup", key, exc)
            continue
        rt.lifecycle_failures.succeeded("podgroup", key)
        if steps:
            work.append(steps)
    return await _run_concurrently(rt, work)


def _group_key(rt: Runtime, raw: Raw) -> tuple[str, str] | None:
    """The PodGroup a claim to create is controlled by (None: a pod's claim)."""
    meta = raw.get("metadata") or {}
    for ref in meta.get("ownerReferences") or []:
        if ref.get("kind") == "PodGroup" and str(ref.get("apiVersion") or "").startswith("scheduling.k8s.io/"):
            return str(meta.get("namespace") or ""), str(ref.get("name") or "")
    return None


@dataclasses.dataclass(frozen=True)
class _RecordExtendedClaim:
    """Write `pod.status.extendedResourceClaimStatus` (the pod's DRA extended-resource claim)."""

    pod_namespace: str
    pod_name: str
    status: Raw


def _extended_resource_steps(rt: Runtime, pod: pods.Pod, owned: list[model_claims.ResourceClaim]) -> list[Any]:
    """For pods we place: the claim backing their DRA extended-resource requests (KEP-5004).

    Upstream's scheduler makes this claim for the chosen node in PreBind, leaving resources a
    node's device plugin offers to that plugin. dralloc creates it before placement, with DRA
    serving every such request: a cluster mixing device plugins and DRA for one resource
    name is not supported (documented).
    """
    settings = rt.settings.scheduling
    if pod.finished() or pod.metadata.deletion_timestamp or not items.owned(
            pod, scheduler_name=settings.scheduler_name, gate=settings.gate):
        return []
    classes = list(rt.cluster.classes.all())
    existing = extended.find_extended_resource_claim(pod, owned)
    if existing is None:
        raw = extended.extended_resource_claim(pod, classes)
        return [plans.CreateClaim(raw=raw)] if raw is not None else []
    if extended.recorded_claim_name(pod) == existing.name:
        return []
    _, mappings = extended.requests_and_mappings(pod, classes)
    return [_RecordExtendedClaim(pod.metadata.namespace or "default", pod.metadata.name,
                                 extended.extended_claim_status(existing.name, mappings))]


async def _run_concurrently(rt: Runtime, work: list[list[Any]], replans: Sequence[_Replan | None] = ()) -> int:
    """Each object's steps in order, objects concurrently. `replans[i]`, when given, plans object i again
    once its steps created claims (all of them carried out): the created claims are in the view, so the
    new plan records them in the pod's status at once, in the same task (kube-controller-manager's
    syncPod also creates the claims, then updates the status), not a pass later."""
    limit = asyncio.Semaphore(CONCURRENCY)

    async def steps_done(steps: list[Any]) -> tuple[int, bool]:
        count = 0
        for step in steps:
            done = await _execute(rt, step)
            count += done
            if not done:
                return count, False  # a failed step: the object is dirty again, the rest is planned anew
        return count, True

    async def run(steps: list[Any], replan: _Replan | None) -> int:
        async with limit:
            count, complete = await steps_done(steps)
            if complete and replan is not None and any(isinstance(step, plans.CreateClaim) for step in steps):
                again = await replan()
                if again and not any(isinstance(step, plans.CreateClaim) for step in again):
                    count += (await steps_done(again))[0]
            return count

    results = await asyncio.gather(*(run(steps, replans[i] if i < len(replans) else None)
                                     for i, steps in enumerate(work)))
    return sum(results)


def _combined(steps: plans.Plan) -> list[plans.PlanStep | _DropAndDeallocate]:
    """Dropping the last reservation and deallocating must be one status write: a crash between
    two writes would strand the allocation until the stranded-claim repair."""
    out: list[plans.PlanStep | _DropAndDeallocate] = []
    for step in steps:
        previous = out[-1] if out else None
        if (isinstance(step, plans.Deallocate) and isinstance(previous, plans.DropReservations)
                and (previous.claim_namespace, previous.claim_name) == (step.claim_namespace, step.claim_name)):
            out[-1] = _DropAndDeallocate(previous)
        else:
            out.append(step)
    return out


@dataclasses.dataclass(frozen=True)
class _DropAndDeallocate:
    drop: plans.DropReservations


async def _execute(rt: Runtime, step: plans.PlanStep | _DropAndDeallocate) -> int:
    try:
        await _carry_out(rt, step)
        return 1
    except kube_errors.NotFoundError:
        return 0  # gone meanwhile: nothing left to do
    except kube_errors.KubeError as exc:
        if isinstance(exc, kube_errors.ConflictError):
            metrics.observe_conflict("claim-status" if not isinstance(step, plans.CreateClaim) else "claim-create")
        if isinstance(step, plans.CreateClaim):
            metrics.observe_claim_create(False)
        logger.warning("lifecycle step %s failed: %s; retrying", type(step).__name__, exc)
        if isinstance(exc, kube_errors.ConflictError) and not isinstance(step, plans.CreateClaim):
            await _refresh(rt, step)  # plan again from what the server has, not from a lagging watch
        _mark_dirty_again(rt, step)
        return 0
    except Exception as exc:  # a bug of ours met on one object: back that object off, go on
        target = _target(rt, step)
        if target is None:
            logger.exception("lifecycle step %s failed", type(step).__name__)
            metrics.observe_object_error("lifecycle")
        else:
            await _failed(rt, *target, exc)
        return 0


async def _refresh(rt: Runtime, step: plans.PlanStep | _DropAndDeallocate) -> None:
    """Read the object a conflicting step is about into the view; best effort."""
    target = _target(rt, step)
    if target is None:
        return
    kind, (namespace, name) = target
    resource = {"pod": resources.PODS, "podgroup": rt.pod_group_resource}.get(kind, resources.RESOURCE_CLAIMS)
    if resource is None:
        return
    try:
        await committing.read_back(rt, resource.kind, resource, namespace, name)
    except committing.Unknown as exc:
        logger.info("%s=%s/%s: cannot read it back after a conflict: %s", kind, namespace, name, exc)


def _target(rt: Runtime, step: plans.PlanStep | _DropAndDeallocate) -> tuple[str, tuple[str, str]] | None:
    """The object a step is about, as the lifecycle's failure memory keys it."""
    if isinstance(step, _DropAndDeallocate):
        return "claim", (step.drop.claim_namespace, step.drop.claim_name)
    if isinstance(step, plans.CreateClaim):
        group = _group_key(rt, step.raw)
        if group is not None:
            return "podgroup", group
        meta = step.raw.get("metadata") or {}
        for ref in meta.get("ownerReferences") or []:
            key = rt.cluster.pod_key_in(str(meta.get("namespace") or ""), str(ref.get("uid") or ""))
            if key is not None:
                return "pod", key
        return None
    if isinstance(step, plans.SetPodGroupClaimStatuses):
        return "podgroup", (step.namespace, step.name)
    if isinstance(step, (plans.SetPodClaimStatuses, _RecordExtendedClaim)):
        return "pod", (step.pod_namespace, step.pod_name)
    if isinstance(step, (plans.DropReservations, plans.Deallocate)):
        return "claim", (step.claim_namespace, step.claim_name)
    if isinstance(step, (plans.DeleteClaim, plans.RemoveFinalizer)):
        return "claim", (step.namespace, step.name)
    return None


async def _failed(rt: Runtime, kind: str, key: tuple[str, str], exc: BaseException) -> None:
    """Planning or carrying out the lifecycle of one object failed: report it on the object, back it off."""
    metrics.observe_object_error("lifecycle")
    message = failures.internal_error(exc, where="dralloc's claim lifecycle")
    delay, new = rt.lifecycle_failures.failed(kind, key, message, now=time.monotonic())
    if not new:
        return
    logger.error("%s=%s/%s: claim lifecycle failed; retrying in %.1fs", kind, key[0], key[1], delay, exc_info=exc)
    raw = rt.cluster.store({"pod": "Pod", "podgroup": "PodGroup"}.get(kind, "ResourceClaim")).raw(*key)
    if raw is None:
        return
    try:
        await writing.post_event(rt.require_session(), regarding=raw, reason="ClaimLifecycleError", type_="Warning",
                                 action="ClaimLifecycle", message=message,
                                 reporting_controller="dralloc.io/claim-lifecycle")
    except kube_errors.KubeError as failure:
        logger.warning("%s=%s/%s: cannot post the ClaimLifecycleError Event: %s", kind, key[0], key[1], failure)


def _mark_dirty_again(rt: Runtime, step: plans.PlanStep | _DropAndDeallocate) -> None:
    if isinstance(step, _DropAndDeallocate):
        rt.dirty_claims.add((step.drop.claim_namespace, step.drop.claim_name))
    elif isinstance(step, plans.CreateClaim):
        group = _group_key(rt, step.raw)
        if group is not None:
            rt.dirty_pod_groups.add(group)
        meta = step.raw.get("metadata") or {}
        for ref in meta.get("ownerReferences") or []:
            key = rt.cluster.pod_key_in(str(meta.get("namespace") or ""), str(ref.get("uid") or ""))
            if key is not None:
                rt.dirty_pods.add(key)
    elif isinstance(step, plans.SetPodGroupClaimStatuses):
        rt.dirty_pod_groups.add((step.namespace, step.name))
    elif isinstance(step, (plans.SetPodClaimStatuses, _RecordExtendedClaim)):
        rt.dirty_pods.add((step.pod_namespace, step.pod_name))
    elif isinstance(step, (plans.DropReservations, plans.Deallocate)):
        rt.dirty_claims.add((step.claim_namespace, step.claim_name))
    elif isinstance(step, (plans.DeleteClaim, plans.RemoveFinalizer)):
        rt.dirty_claims.add((step.namespace, step.name))


async def _carry_out(rt: Runtime, step: plans.PlanStep | _DropAndDeallocate) -> None:
    session = rt.require_session()
    if isinstance(step, _RecordExtendedClaim):
        pod_raw = rt.cluster.pods.raw(step.pod_namespace, step.pod_name)
        if pod_raw is None:
            return
        patch = {"metadata": {"resourceVersion": (pod_raw.get("metadata") or {}).get("resourceVersion")},
                 "status": {"extendedResourceClaimStatus": step.status}}
        stored = await writing.merge_patch(session, resources.PODS, step.pod_name, patch, step.pod_namespace,
                                           subresource="status")
        rt.cluster.apply("Pod", "MODIFIED", stored)
        logger.info("pod=%s/%s: recorded its extended-resource claim", step.pod_namespace, step.pod_name)
        rt.scheduling_wakeup.set()
    elif isinstance(step, _DropAndDeallocate):
        raw = _claim_raw(rt, step.drop.claim_namespace, step.drop.claim_name)
        status = dict(raw.get("status") or {})
        _set_reserved(status, step.drop.keep)
        status.pop("allocation", None)
        status.pop("devices", None)
        await _write_status(rt, raw, status)
        logger.info("claim=%s/%s: released and deallocated", step.drop.claim_namespace, step.drop.claim_name)
    elif isinstance(step, plans.CreateClaim):
        created = await _create_claim(rt, _protected(rt, step.raw))
        rt.cluster.apply("ResourceClaim", "ADDED", created)
        metrics.observe_claim_create(True)
        meta = created.get("metadata") or {}
        group = _group_key(rt, created)
        if group is not None:  # to be recorded in the PodGroup's status, and in its members'
            rt.dirty_pod_groups.add(group)
            rt.lifecycle_wakeup.set()
        for ref in meta.get("ownerReferences") or []:
            key = rt.cluster.pod_key_in(str(meta.get("namespace") or ""), str(ref.get("uid") or ""))
            if key is not None:
                rt.dirty_pods.add(key)
                rt.lifecycle_wakeup.set()
    elif isinstance(step, plans.SetPodGroupClaimStatuses):
        resource = rt.pod_group_resource
        group_raw = rt.cluster.pod_groups.raw(step.namespace, step.name)
        if group_raw is None or resource is None:
            return
        merged = _merge_statuses((group_raw.get("status") or {}).get("resourceClaimStatuses") or [], step.statuses)
        patch = {"metadata": {"resourceVersion": (group_raw.get("metadata") or {}).get("resourceVersion")},
                 "status": {"resourceClaimStatuses": merged}}
        stored = await writing.merge_patch(session, resource, step.name, patch, step.namespace, subresource="status")
        rt.cluster.apply("PodGroup", "MODIFIED", stored)
        logger.info("podgroup=%s/%s: recorded its claims %s", step.namespace, step.name,
                    ", ".join(f"{e.get('name')}={e.get('resourceClaimName')}" for e in step.statuses))
        rt.scheduling_wakeup.set()
    elif isinstance(step, plans.SetPodClaimStatuses):
        pod_raw = rt.cluster.pods.raw(step.pod_namespace, step.pod_name)
        if pod_raw is None:
            return
        merged = _merge_statuses((pod_raw.get("status") or {}).get("resourceClaimStatuses") or [], step.statuses)
        patch = {"metadata": {"resourceVersion": (pod_raw.get("metadata") or {}).get("resourceVersion")},
                 "status": {"resourceClaimStatuses": merged}}
        stored = await writing.merge_patch(session, resources.PODS, step.pod_name, patch, step.pod_namespace,
                                           subresource="status")
        rt.cluster.apply("Pod", "MODIFIED", stored)
        logger.info("pod=%s/%s: recorded its claims %s", step.pod_namespace, step.pod_name,
                    ", ".join(f"{e.get('name')}={e.get('resourceClaimName')}" for e in step.statuses))
        rt.scheduling_wakeup.set()
    elif isinstance(step, plans.DropReservations):
        raw = _claim_raw(rt, step.claim_namespace, step.claim_name)
        status = dict(raw.get("status") or {})
        _set_reserved(status, step.keep)
        await _write_status(rt, raw, status)
        logger.info("claim=%s/%s: reservations of gone or finished pods dropped (%d kept)", step.claim_namespace,
                    step.claim_name, len(step.keep))
    elif isinstance(step, plans.Deallocate):
        raw = _claim_raw(rt, step.claim_namespace, step.claim_name)
        status = dict(raw.get("status") or {})
        status.pop("allocation", None)
        status.pop("devices", None)
        await _write_status(rt, raw, status)
        logger.info("claim=%s/%s: deallocated (nobody reserves it)", step.claim_namespace, step.claim_name)
    elif isinstance(step, plans.RemoveFinalizer):
        raw = _claim_raw(rt, step.namespace, step.name)
        meta = raw.get("metadata") or {}
        finalizers = list(meta.get("finalizers") or [])
        if step.finalizer not in finalizers:
            return
        stored = await writing.patch_finalizer(session, resources.RESOURCE_CLAIMS, step.name, step.namespace,
                                               step.finalizer, present=False, finalizers=finalizers,
                                               resource_version=str(meta.get("resourceVersion") or ""))
        rt.cluster.apply("ResourceClaim", "MODIFIED", stored)
        logger.info("claim=%s/%s: finalizer %s removed", step.namespace, step.name, step.finalizer)
    elif isinstance(step, plans.DeleteClaim):
        await writing.delete_object(session, resources.RESOURCE_CLAIMS, step.name, step.namespace, uid=step.uid)
        logger.info("claim=%s/%s: deleted (its pod is gone or done)", step.namespace, step.name)
    elif isinstance(step, plans.EmitEvent):
        store = rt.cluster.store(step.regarding_kind if step.regarding_kind in ("Pod", "PodGroup")
                                 else "ResourceClaim")
        versions = {"Pod": "v1", "PodGroup": rt.pod_group_resource.api_version if rt.pod_group_resource else ""}
        regarding = store.raw(step.namespace, step.name) or {
            "apiVersion": versions.get(step.regarding_kind, "resource.k8s.io/v1"),
            "kind": step.regarding_kind,
            "metadata": {"name": step.name, "namespace": step.namespace, "uid": step.regarding_uid},
        }
        await writing.post_event(session, regarding=regarding, reason=step.reason, message=step.message,
                                 type_=step.type_, action="ClaimLifecycle",
                                 reporting_controller="dralloc.io/claim-lifecycle")


# The alphabet kube-apiserver draws generateName suffixes from (no vowels, no look-alikes).
_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_IDENTITY_ANNOTATIONS = (templates.POD_CLAIM_NAME_ANNOTATION, extended.EXTENDED_RESOURCE_CLAIM_ANNOTATION)


def _identity(raw: Raw) -> tuple[str, ...]:
    """What makes a generated claim the claim of one pod entry: its controller pod and entry annotation."""
    meta = raw.get("metadata") or {}
    owners = [str(o.get("uid") or "") for o in meta.get("ownerReferences") or [] if o.get("controller")]
    annotations = meta.get("annotations") or {}
    return (*owners, *(f"{k}={annotations[k]}" for k in _IDENTITY_ANNOTATIONS if k in annotations))


def deterministic_name(raw: Raw) -> str:
    """`generateName` plus five characters derived from the pod entry, in the shape the API server gives.

    The same entry always gets the same name, so a create sent twice (a retry after a
    timeout, or two replicas at a handover) meets AlreadyExists instead of making a second
    claim: the API server itself is the precondition.
    """
    meta = raw.get("metadata") or {}
    digest = hashlib.sha256("\x00".join(_identity(raw)).encode()).digest()
    suffix = "".join(_SUFFIX_ALPHABET[b % len(_SUFFIX_ALPHABET)] for b in digest[:5])
    return f"{meta.get('generateName') or ''}{suffix}"


async def _create_claim(rt: Runtime, raw: Raw) -> Raw:
    """Create the claim under its deterministic name; a claim of that name of the same entry is ours already."""
    session = rt.require_session()
    meta = raw.get("metadata") or {}
    name, namespace = deterministic_name(raw), str(meta.get("namespace") or "")
    named = {**raw, "metadata": {**meta, "name": name}}
    try:
        created = await writing.create_object(session, resources.RESOURCE_CLAIMS, named)
        logger.info("claim=%s/%s: created for pod entry %s", namespace, name, _identity(raw))
        return created
    except kube_errors.AlreadyExistsError:
        existing = await _existing(rt, namespace, name)
        if existing is not None and _identity(existing) == _identity(raw):
            logger.info("claim=%s/%s: exists already for this pod entry (an earlier create did apply)", namespace,
                        name)
            return existing
        # Someone else's claim holds the name (a 1 in 14 million chance): let the server pick one.
        created = await writing.create_object(session, resources.RESOURCE_CLAIMS, raw)
        logger.info("claim=%s/%s: created for pod entry %s", namespace, (created.get("metadata") or {}).get("name"),
                    _identity(raw))
        return created
    except kube_errors.KubeError as exc:
        if not kube_errors.outcome_unknown(exc):
            raise
        existing = await _existing(rt, namespace, name)
        if existing is not None and _identity(existing) == _identity(raw):
            logger.info("claim=%s/%s: created (seen on reading it back after: %s)", namespace, name, exc)
            return existing
        raise  # not there (yet): the entry is planned again, and the same name keeps it single


async def _existing(rt: Runtime, namespace: str, name: str) -> Raw | None:
    try:
        return await reading.get_object(rt.require_session(), resources.RESOURCE_CLAIMS, name, namespace)
    except kube_errors.NotFoundError:
        return None


def _set_reserved(status: Raw, keep: tuple[Raw, ...]) -> None:
    if keep:
        status["reservedFor"] = list(keep)
    else:
        status.pop("reservedFor", None)  # as the API writes it: no empty list


def _protected(rt: Runtime, raw: Raw) -> Raw:
    """A claim for a pod we will place gets the delete-protection finalizer when it is created.

    Upstream's scheduler adds it right before writing the allocation, one more write per
    claim; adding it at creation is equivalent for claims we allocate (the lifecycle removes it
    from an unallocated claim being deleted) and saves that write on the placement path.
    """
    meta = raw.get("metadata") or {}
    settings = rt.settings.scheduling
    for ref in meta.get("ownerReferences") or []:
        pod = rt.cluster.pod_in(str(meta.get("namespace") or ""), str(ref.get("uid") or ""))
        if pod is not None and items.owned(pod, scheduler_name=settings.scheduler_name, gate=settings.gate):
            finalizers = list(meta.get("finalizers") or [])
            if lifecycle_claims.DELETE_PROTECTION_FINALIZER not in finalizers:
                finalizers.append(lifecycle_claims.DELETE_PROTECTION_FINALIZER)
            return {**raw, "metadata": {**meta, "finalizers": finalizers}}
    return raw


def _claim_raw(rt: Runtime, namespace: str, name: str) -> Raw:
    raw = rt.cluster.claims.raw(namespace, name)
    if raw is None:
        raise kube_errors.NotFoundError(404, "NotFound", f"ResourceClaim {namespace}/{name} is gone")
    return raw


async def _write_status(rt: Runtime, raw: Raw, status: Raw) -> None:
    stored = await writing.replace_claim_status(rt.require_session(), raw, status)
    rt.cluster.apply("ResourceClaim", "MODIFIED", stored)
    rt.scheduling_wakeup.set()


def _merge_statuses(existing: list[Raw], updates: tuple[Raw, ...]) -> list[Raw]:
    by_name = {entry.get("name"): dict(entry) for entry in existing}
    for update in updates:
        by_name[update.get("name")] = dict(update)
    return list(by_name.values())


async def lifecycle_loop(rt: Runtime, stopped: asyncio.Event) -> None:
    """Passes whenever pods or claims changed; a full pass at start and every resync period."""
    resync = rt.settings.scheduling.resync_seconds
    everything = True
    loop = asyncio.get_running_loop()
    next_full = loop.time() + resync
    while not stopped.is_set():
        rt.lifecycle_wakeup.clear()
        executed = 0
        try:
            executed = await run_pass(rt, everything=everything)
        except Exception:  # per-object errors never get here: a bug of ours, or the API is gone
            logger.exception("claim lifecycle pass failed; retrying")
            metrics.observe_pass_failure("lifecycle")
            await asyncio.sleep(1.0)
        everything = False
        if rt.dirty_pods or rt.dirty_claims or rt.dirty_pod_groups:
            # What arrived during a pass that wrote is taken at once (a burst of pods must not wait a
            # pause per pass); after a pass that wrote nothing (conflicts, retries) a short pause.
            await asyncio.sleep(0 if executed else 0.2)
            continue
        timeout = next_full - loop.time()
        retry_at = rt.lifecycle_failures.next_due()
        if retry_at is not None:
            timeout = min(timeout, retry_at - time.monotonic())
        try:
            await asyncio.wait_for(rt.lifecycle_wakeup.wait(), timeout=max(0.1, timeout))
        except TimeoutError:
            if loop.time() >= next_full:
                everything = True
                next_full = loop.time() + resync

