"""The API writes of a placement and their settlement: the one module that writes claims and binds.

Its public face, used by the decision passes (scheduling, ganging, completing), the gang
binds' record (intents) and the claim lifecycle:

- the ledger: `reserve` a decision's devices before any write, `release_unsent` what was
  never sent or was refused for certain;
- reads: `read_back` (GET into the view; `Unknown` when it cannot be read), `into_view`;
- claim writes: `protect` (the delete-protection finalizer), `allocate` (allocation +
  reservedFor), `reserve_shared` (a pod added to an allocated claim), `write_claim_status`,
  `give_back` (reservations removed, allocations nobody holds any more deallocated);
- pod writes: `write_node_allocatable`, `bind`, `pin_and_ungate`, `bind_or_ungate`;
- a single pod's whole placement: `commit` (every write in order, then `placed`), and
  `backoff` for a pod whose write failed;
- `resolve_unknown`: settle the ledger entries whose write outcome is still unknown.

Every write carries a precondition (the claim's or pod's resourceVersion), and every
failure is one of two kinds (`kube.errors.outcome_unknown`):

- **refused** (4xx, or not sent): nothing was written (`Refused`; `Rejected` when the server
  refused it as invalid or forbidden, which the pod is told). The pod's remaining ledger
  entries are released and it backs off; claims already written for it are finished
  or rolled back by the next pass (see scheduling.py).
- **unknown** (5xx, timeout, reset): the write may have happened — kube-apiserver
  answers 504 when etcd times out, possibly after committing. Nothing is released
  on that answer. The object is read back (GET): if it shows our write, the commit
  goes on as if the write had succeeded; if it shows a newer version without it,
  the write can never apply and is refused after all; if it shows the very version
  the write was conditioned on, the same write is sent again — either it applies
  now, or it meets a 409 because the first one did apply after all, and a read says
  which. When even the read fails, the claim's ledger entry stays `unknown` (its
  devices held back) until `resolve_unknown` or the watch settles it (`Unknown`).

A bind answered with 409 or an unknown outcome is read back the same way: a pod
bound to our node was bound by us. After a successful bind the pod is remembered as
bound until the watch shows it, so no later pass binds it again.

Imports only the runtime and `clock` of handlers/, the kube client and the pure packages.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

from dralloc import metrics
from dralloc.handlers import clock
from dralloc.handlers.runtime import Runtime
from dralloc.kube import errors as kube_errors
from dralloc.kube import reading, resources, writing
from dralloc.lifecycle import claims as lifecycle_claims
from dralloc.model import claims as model_claims
from dralloc.model import conversion, pods, storage
from dralloc.scheduling import placement, queueing, volumes
from dralloc.state.ledger import Reservation

logger = logging.getLogger(__name__)

Raw = dict[str, Any]
RESENDS = 3  # how often a write with an unknown outcome is sent again after a read showed it did not apply
RESOLVE_EVERY = 2.0  # seconds between read-backs of a claim whose write outcome is still unknown
FENCE_ANNOTATION = "dralloc.io/fenced-write"
# Gate mode: the node dralloc pinned a pod to (handlers/reclaiming.py reads it after a restart).
PINNED_ANNOTATION = pods.PINNED_NODE_ANNOTATION


class Refused(Exception):
    """The write did not happen, for certain (the message says what the server or a read showed)."""


class Unknown(Exception):
    """Whether the write happened is still not known (the object could not be read back)."""


class Rejected(Exception):
    """The API server refused the placement's writes as invalid or forbidden: retrying the same
    will not help until something changes, and the pod must say why (the message names the object)."""


def pod_ref(pod: pods.Pod) -> Raw:
    return {"resource": "pods", "name": pod.metadata.name, "uid": pod.metadata.uid or ""}


def reserve(rt: Runtime, pod: pods.Pod, item: placement.Item, decision: placement.Placement) -> None:
    for claim, allocation in zip(item.claims, decision.results, strict=True):
        rt.ledger.reserve(Reservation(claim.metadata.uid or "", claim.ref(), allocation, pod.metadata.uid or ""))


def release_unsent(rt: Runtime, item: placement.Item) -> None:
    """Release the entries whose write is not in doubt: never sent, or refused for certain."""
    for claim in item.claims:
        entry = rt.ledger.get(claim.metadata.uid or "")
        if entry is not None and not entry.unknown:
            rt.ledger.release(claim.metadata.uid or "")


def backoff(rt: Runtime, pod: pods.Pod, operation: str, exc: BaseException) -> None:
    uid = pod.metadata.uid or ""
    delay = rt.queue.back_off(uid, time.monotonic()) if uid in rt.queue else 0.0
    metrics.observe_retry(operation)
    if isinstance(exc, kube_errors.ConflictError):
        metrics.observe_conflict(operation)
    logger.info("pod=%s/%s: %s failed (%s); retrying in %.1fs", pod.metadata.namespace, pod.metadata.name,
                operation, exc, delay)


def into_view(rt: Runtime, kind: str, raw: Raw) -> None:
    """A version of an object the server gave us (a write's answer, a read): the view and ledger learn it."""
    rt.cluster.apply(kind, "MODIFIED", raw)
    if kind == "ResourceClaim":
        meta = raw.get("metadata") or {}
        parsed = rt.cluster.claims.get(meta.get("namespace") or "", meta.get("name") or "")
        if parsed is not None:
            rt.ledger.observed(parsed)


async def read_back(rt: Runtime, kind: str, resource: resources.Resource, namespace: str, name: str) -> Raw | None:
    """GET the object into the view; None when it is gone. Raises Unknown when it cannot be read."""
    try:
        got = await reading.get_object(rt.require_session(), resource, name, namespace or None)
    except kube_errors.NotFoundError:
        raw = rt.cluster.store(kind).raw(namespace, name)
        if raw is not None:
            rt.cluster.apply(kind, "DELETED", raw)
            if kind == "ResourceClaim":
                rt.ledger.forget_deleted(str((raw.get("metadata") or {}).get("uid") or ""))
        return None
    except kube_errors.KubeError as exc:
        raise Unknown(f"{kind} {namespace}/{name} cannot be read back: {exc}") from exc
    into_view(rt, kind, got)
    return got


def _rv(raw: Raw) -> str:
    return str((raw.get("metadata") or {}).get("resourceVersion") or "")


async def write_claim_status(rt: Runtime, claim: model_claims.ResourceClaim, status: Raw) -> None:
    """One status write of the claim, conditioned on the version the view has; the answer joins the
    view. Raises KubeError as the server answered (Refused when the claim is gone from the view)."""
    stored = await writing.replace_claim_status(rt.require_session(), _claim_raw(rt, claim), status)
    into_view(rt, "ResourceClaim", stored)


def _claim_raw(rt: Runtime, claim: model_claims.ResourceClaim) -> Raw:
    raw = rt.cluster.claims.raw(claim.metadata.namespace or "", claim.metadata.name)
    if raw is None or (raw.get("metadata") or {}).get("uid") != claim.metadata.uid:
        raise Refused(f"ResourceClaim {claim.ref()} is gone")
    return raw


def _results(allocation: Raw | None) -> list[tuple[Any, ...]]:
    results = ((allocation or {}).get("devices") or {}).get("results") or []
    return sorted((r.get("request"), r.get("driver"), r.get("pool"), r.get("device"), r.get("shareID"))
                  for r in results)


async def allocate(rt: Runtime, claim: model_claims.ResourceClaim, allocation: model_claims.AllocationResult,
                    me: Raw) -> None:
    """Write allocation + reservedFor of one claim; returns once it is known to be written.

    Raises Refused when it certainly was not written, Unknown when that is not known.
    """
    namespace, name, uid = claim.metadata.namespace or "", claim.metadata.name, claim.metadata.uid or ""
    wanted = conversion.to_raw(allocation)
    if rt.settings.scheduling.features.binding_conditions and not wanted.get("allocationTimestamp"):
        # As kube-scheduler writes it (DRADeviceBindingConditions, DRAResourceClaimDeviceStatus: on in
        # 1.37). Without it, kube-scheduler adds it when it reserves the claim for a pod of its own, and
        # the API server refuses any change to a written allocation: that pod would never be scheduled.
        wanted["allocationTimestamp"] = clock.stamp()
    for _ in range(RESENDS + 1):
        raw = _claim_raw(rt, claim)
        status = dict(raw.get("status") or {})
        if status.get("allocation") is not None:
            if _results(status["allocation"]) == _results(wanted) and any(
                    r.get("uid") == me["uid"] for r in status.get("reservedFor") or []):
                return  # ours, already (an earlier send did apply)
            raise Refused(f"ResourceClaim {claim.ref()} was allocated meanwhile by someone else")
        status["allocation"] = wanted
        status["reservedFor"] = [*(status.get("reservedFor") or []), me]
        sent = _rv(raw)
        rt.ledger.sending(uid, sent)
        try:
            await write_claim_status(rt, claim, status)
            logger.info("claim=%s/%s: allocated (%s) and reserved for pod %s", namespace, name,
                        ", ".join(f"{r[0]}={r[2]}/{r[3]}" for r in _results(wanted)), me["name"])
            return
        except kube_errors.KubeError as exc:
            if not kube_errors.outcome_unknown(exc) and not isinstance(exc, kube_errors.ConflictError):
                raise Refused(str(exc)) from exc
            if not isinstance(exc, kube_errors.ConflictError):
                rt.ledger.outcome_unknown(uid)
                logger.warning("claim=%s/%s: allocation write outcome unknown (%s); reading it back",
                               namespace, name, exc)
            got = await read_back(rt, "ResourceClaim", resources.RESOURCE_CLAIMS, namespace, name)
            if got is None:
                raise Refused(f"ResourceClaim {claim.ref()} is gone") from exc
            if (got.get("status") or {}).get("allocation") is None and _rv(got) != sent:
                if isinstance(exc, kube_errors.ConflictError):
                    raise Refused(str(exc)) from exc  # a plain conflict: someone else changed the claim
                raise Refused(f"ResourceClaim {claim.ref()} changed meanwhile; the write did not apply") from exc
            if isinstance(exc, kube_errors.ConflictError):
                # A 409 sent again is counted here; one that ends the attempt is counted by backoff().
                metrics.observe_conflict("claim-status")
            # Allocated (ours or not: the loop looks), or still at the version we sent: send again.
    raise Unknown(f"ResourceClaim {claim.ref()}: the allocation write kept failing with an unknown outcome")


async def _read_back_claim_after(rt: Runtime, claim: model_claims.ResourceClaim, exc: kube_errors.KubeError) -> None:
    """A claim write failed: Refused when it certainly did not apply, else the claim is read back (and the
    caller's loop looks again)."""
    if not kube_errors.outcome_unknown(exc):
        raise Refused(str(exc)) from exc
    namespace, name = claim.metadata.namespace or "", claim.metadata.name
    if await read_back(rt, "ResourceClaim", resources.RESOURCE_CLAIMS, namespace, name) is None:
        raise Refused(f"ResourceClaim {claim.ref()} is gone") from exc


async def reserve_shared(rt: Runtime, claim: model_claims.ResourceClaim, me: Raw) -> None:
    """Add the pod to an allocated claim's reservedFor (a claim shared with other pods)."""
    namespace, name = claim.metadata.namespace or "", claim.metadata.name
    for _ in range(RESENDS + 1):
        raw = _claim_raw(rt, claim)
        status = dict(raw.get("status") or {})
        reserved = list(status.get("reservedFor") or [])
        if any(r.get("uid") == me["uid"] for r in reserved):
            return
        if status.get("allocation") is None:
            raise Refused(f"ResourceClaim {claim.ref()} was deallocated meanwhile")
        status["reservedFor"] = [*reserved, me]
        try:
            await write_claim_status(rt, claim, status)
            logger.info("claim=%s/%s: reserved for pod %s", namespace, name, me["name"])
            return
        except kube_errors.KubeError as exc:
            await _read_back_claim_after(rt, claim, exc)
    raise Unknown(f"ResourceClaim {claim.ref()}: the reservation write kept failing with an unknown outcome")


async def protect(rt: Runtime, claim: model_claims.ResourceClaim) -> None:
    """Add the delete-protection finalizer before the allocation is written (as kube-scheduler does)."""
    namespace, name = claim.metadata.namespace or "", claim.metadata.name
    for _ in range(RESENDS + 1):
        raw = _claim_raw(rt, claim)
        meta = raw.get("metadata") or {}
        finalizers = list(meta.get("finalizers") or [])
        if lifecycle_claims.DELETE_PROTECTION_FINALIZER in finalizers:
            return
        try:
            stored = await writing.patch_finalizer(
                rt.require_session(), resources.RESOURCE_CLAIMS, name, namespace or "default",
                lifecycle_claims.DELETE_PROTECTION_FINALIZER, present=True, finalizers=finalizers,
                resource_version=str(meta.get("resourceVersion") or ""))
            rt.cluster.apply("ResourceClaim", "MODIFIED", stored)
            return
        except kube_errors.KubeError as exc:
            await _read_back_claim_after(rt, claim, exc)
    raise Unknown(f"ResourceClaim {claim.ref()}: adding the finalizer kept failing with an unknown outcome")


def _bound_to(raw: Raw | None, uid: str) -> str | None:
    if raw is None or (raw.get("metadata") or {}).get("uid") != uid:
        return None
    return (raw.get("spec") or {}).get("nodeName") or None


async def write_node_allocatable(rt: Runtime, pod: pods.Pod, statuses: tuple[Raw, ...]) -> None:
    """DRANodeAllocatableResources: the pod's status.nodeAllocatableResourceClaimStatuses before
    the bind, as kube-scheduler's PreBind writes them (the kubelet sizes cgroups from them)."""
    namespace, name, uid = pod.metadata.namespace or "default", pod.metadata.name, pod.metadata.uid or ""
    wanted = list(statuses)
    for _ in range(RESENDS + 1):
        try:
            stored = await writing.merge_patch(
                rt.require_session(), resources.PODS, name,
                {"metadata": {"uid": uid}, "status": {"nodeAllocatableResourceClaimStatuses": wanted}},
                namespace, subresource="status")
            rt.cluster.apply("Pod", "MODIFIED", stored)
            return
        except kube_errors.KubeError as exc:
            if not kube_errors.outcome_unknown(exc):
                raise Refused(str(exc)) from exc
            got = await read_back(rt, "Pod", resources.PODS, namespace, name)
            if got is None or (got.get("metadata") or {}).get("uid") != uid:
                raise Refused(f"pod {namespace}/{name} is gone") from exc
            if ((got.get("status") or {}).get("nodeAllocatableResourceClaimStatuses") or []) == wanted:
                return
    raise Unknown(f"pod {namespace}/{name}: writing nodeAllocatableResourceClaimStatuses kept failing "
                  "with an unknown outcome")


async def bind(rt: Runtime, pod: pods.Pod, node: str) -> None:
    """Bind the pod to the node (scheduler mode); a 409 or an unknown outcome is read back: bound to this
    node is done, bound elsewhere or gone is Refused."""
    namespace, name, uid = pod.metadata.namespace or "default", pod.metadata.name, pod.metadata.uid or ""
    for _ in range(RESENDS + 1):
        try:
            await writing.bind_pod(rt.require_session(), namespace, name, uid, node)
            logger.info("pod=%s/%s: bound to node %s", namespace, name, node)
            return
        except kube_errors.KubeError as exc:
            if not kube_errors.outcome_unknown(exc) and not isinstance(exc, kube_errors.ConflictError):
                raise Refused(str(exc)) from exc
            got = await read_back(rt, "Pod", resources.PODS, namespace, name)
            where = _bound_to(got, uid)
            if where == node:
                logger.info("pod=%s/%s: bound to node %s (seen on reading it back after: %s)", namespace, name,
                            node, exc)
                return
            if where is not None or got is None or isinstance(exc, kube_errors.ConflictError):
                raise Refused(f"pod {namespace}/{name}: {exc}" + (f"; it is bound to {where}" if where else "")
                              ) from exc
    raise Unknown(f"pod {namespace}/{name}: binding kept failing with an unknown outcome")


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def _ungated_on(raw: Raw | None, uid: str, gate: str, hostname: str) -> bool:
    if raw is None or (raw.get("metadata") or {}).get("uid") != uid:
        return False
    spec = raw.get("spec") or {}
    return (gate not in [g.get("name") for g in spec.get("schedulingGates") or []]
            and (spec.get("nodeSelector") or {}).get("kubernetes.io/hostname") == hostname)


async def pin_and_ungate(rt: Runtime, pod: pods.Pod, node_name: str) -> None:
    """Gate mode: pin the node through the pod's nodeSelector, then drop our gate (one JSON patch, which
    also records the node in PINNED_ANNOTATION)."""
    namespace, name, uid = pod.metadata.namespace or "", pod.metadata.name, pod.metadata.uid or ""
    gate = rt.settings.scheduling.gate
    node = rt.cluster.nodes.get("", node_name)
    hostname = (node.metadata.labels.get("kubernetes.io/hostname") if node else None) or node_name
    for _ in range(RESENDS + 1):
        raw = rt.cluster.pods.raw(namespace, name) or {}
        if _ungated_on(raw, uid, gate, hostname):
            return
        spec = raw.get("spec") or {}
        ops: list[Raw] = [{"op": "test", "path": "/metadata/resourceVersion",
                           "value": (raw.get("metadata") or {}).get("resourceVersion")}]
        if spec.get("nodeSelector"):
            ops.append({"op": "add", "path": f"/spec/nodeSelector/{_escape('kubernetes.io/hostname')}",
                        "value": hostname})
        else:
            ops.append({"op": "add", "path": "/spec/nodeSelector", "value": {"kubernetes.io/hostname": hostname}})
        if (raw.get("metadata") or {}).get("annotations"):
            ops.append({"op": "add", "path": f"/metadata/annotations/{_escape(PINNED_ANNOTATION)}", "value": node_name})
        else:
            ops.append({"op": "add", "path": "/metadata/annotations", "value": {PINNED_ANNOTATION: node_name}})
        gates = [g.get("name") for g in spec.get("schedulingGates") or []]
        if gate not in gates:
            raise Refused(f"pod {namespace}/{name}: our scheduling gate is gone")
        index = gates.index(gate)
        ops.append({"op": "test", "path": f"/spec/schedulingGates/{index}/name", "value": gate})
        ops.append({"op": "remove", "path": f"/spec/schedulingGates/{index}"})
        try:
            stored = await writing.json_patch(rt.require_session(), resources.PODS, name, ops, namespace or "default")
            rt.cluster.apply("Pod", "MODIFIED", stored)
            logger.info("pod=%s/%s: pinned to node %s and ungated", namespace, name, node_name)
            return
        except kube_errors.KubeError as exc:
            if not kube_errors.outcome_unknown(exc):
                raise Refused(str(exc)) from exc
            got = await read_back(rt, "Pod", resources.PODS, namespace, name)
            if got is None:
                raise Refused(f"pod {namespace}/{name} is gone") from exc
    raise Unknown(f"pod {namespace}/{name}: ungating kept failing with an unknown outcome")


async def bind_volumes(rt: Runtime, pod: pods.Pod, plan: volumes.VolumePlan) -> int:
    """Scheduler mode's VolumeBinding PreBind, as kube-scheduler writes it: each pre-provisioned PV of the
    plan gets its claim in `spec.claimRef` (and `pv.kubernetes.io/bound-by-controller`), each claim to
    provision gets the node in `volume.kubernetes.io/selected-node`; the PV controller (and a provisioner)
    then bind them. Each write is conditioned on the object's version; a write already done is skipped.
    Raises Refused or Unknown. How many writes were sent."""
    sent = 0
    for (namespace, name), volume_name in plan.static:
        claim = rt.cluster.volume_claims.get(namespace, name)
        raw = rt.cluster.volumes.raw("", volume_name)
        if claim is None or raw is None:
            raise Refused(f"PersistentVolume {volume_name} or PersistentVolumeClaim {namespace}/{name} is gone")
        ref = (raw.get("spec") or {}).get("claimRef") or {}
        if ref.get("namespace") == namespace and ref.get("name") == name:
            continue
        await _patch_volume_object(rt, "PersistentVolume", resources.PERSISTENT_VOLUMES, "", volume_name, raw, {
            "metadata": {"annotations": {storage.BOUND_BY_CONTROLLER: "yes"}},
            "spec": {"claimRef": {"kind": "PersistentVolumeClaim", "apiVersion": "v1", "namespace": namespace,
                                  "name": name, "uid": claim.metadata.uid or ""}}})
        sent += 1
    for namespace, name in plan.provision:
        raw = rt.cluster.volume_claims.raw(namespace, name)
        if raw is None:
            raise Refused(f"PersistentVolumeClaim {namespace}/{name} is gone")
        if ((raw.get("metadata") or {}).get("annotations") or {}).get(storage.SELECTED_NODE) == plan.node:
            continue
        await _patch_volume_object(rt, "PersistentVolumeClaim", resources.PERSISTENT_VOLUME_CLAIMS, namespace, name,
                                   raw, {"metadata": {"annotations": {storage.SELECTED_NODE: plan.node}}})
        sent += 1
    if sent:
        logger.info("pod=%s/%s: volumes given node %s (%s); the pod is bound once they are", pod.metadata.namespace,
                    pod.metadata.name, plan.node, ", ".join(f"{k[0]}/{k[1]}" for k in plan.claims()))
    return sent


async def _patch_volume_object(rt: Runtime, kind: str, resource: resources.Resource, namespace: str, name: str,
                               raw: Raw, patch: Raw) -> None:
    """A merge patch conditioned on `raw`'s resourceVersion; an unknown outcome is read back and, if the
    object still shows the version sent, the patch is sent again."""
    for _ in range(RESENDS + 1):
        body = {**patch, "metadata": {**patch.get("metadata", {}), "resourceVersion": _rv(raw)}}
        try:
            stored = await writing.merge_patch(rt.require_session(), resource, name, body, namespace or None)
            into_view(rt, kind, stored)
            return
        except kube_errors.KubeError as exc:
            if not kube_errors.outcome_unknown(exc):
                raise Refused(f"{kind} {namespace + '/' if namespace else ''}{name}: {exc}") from exc
            got = await read_back(rt, kind, resource, namespace, name)
            if got is None:
                raise Refused(f"{kind} {namespace + '/' if namespace else ''}{name} is gone") from exc
            if _rv(got) != _rv(raw):
                return  # it changed: applied, or someone else's change; the next pass looks again
            raw = got
    raise Unknown(f"{kind} {namespace + '/' if namespace else ''}{name}: the write kept failing with an unknown outcome")


async def bind_or_ungate(rt: Runtime, pod: pods.Pod, node: str) -> None:
    """The last write of a placement whose claims are all written: bind the pod (scheduler mode) or pin
    and ungate it (gate mode), then remember it there until the watch shows it bound. Raises Refused
    or Unknown. Used for gang members."""
    if rt.settings.scheduling.gate in [g.name for g in pod.spec.scheduling_gates]:
        await pin_and_ungate(rt, pod, node)
    else:
        await bind(rt, pod, node)
    rt.memory(pod.metadata.uid or "").bound_to = node


async def _volumes_bound_later(rt: Runtime, pod: pods.Pod, plan: volumes.VolumePlan,
                               wants: queueing.Wants | None) -> None:
    """Give the pod's WaitForFirstConsumer volumes the node (what is not given it already). The pod is bound
    on a later pass, once the PV controller has bound them: its claims now hold it to this node, and a
    change of its volume claims wakes it. Raises Refused or Unknown."""
    await bind_volumes(rt, pod, plan)
    uid = pod.metadata.uid or ""
    if wants is not None and uid in rt.queue:
        rt.queue.unschedulable(uid, time.monotonic(), wants)
    rt.memory(uid).failure = "waiting"


async def commit(rt: Runtime, pod: pods.Pod, item: placement.Item, decision: placement.Placement,
                 wants: queueing.Wants | None = None) -> bool:
    """Write the placement; True when the pod is bound (or ungated) with its claims allocated. False
    otherwise: a write failed (the pod backs off), or its WaitForFirstConsumer volumes were given the
    node and it waits for them, parked until a change it `wants` (its claims' binding)."""
    me = pod_ref(pod)
    operation = "claim-status"
    try:
        for claim, allocation in zip(item.claims, decision.results, strict=True):
            await protect(rt, claim)
            await allocate(rt, claim, allocation, me)
        for claim in item.allocated:
            await reserve_shared(rt, claim, me)
        if rt.settings.scheduling.gate in [g.name for g in pod.spec.scheduling_gates]:
            # kube-scheduler binds the volumes of the node dralloc pins (its VolumeBinding PreBind).
            operation = "pod-patch"
            await pin_and_ungate(rt, pod, decision.node)
            rt.memory(pod.metadata.uid or "").bound_to = decision.node
        else:
            if decision.volumes is not None:
                operation = "volume-binding"
                await _volumes_bound_later(rt, pod, decision.volumes, wants)
                return False
            if decision.node_allocatable:
                # Gate mode leaves this to kube-scheduler, which computes it again when it binds.
                operation = "pod-status"
                await write_node_allocatable(rt, pod, decision.node_allocatable)
            operation = "bind"
            await bind(rt, pod, decision.node)
            rt.memory(pod.metadata.uid or "").bound_to = decision.node
    except (Refused, Unknown) as exc:
        release_unsent(rt, item)
        cause = exc.__cause__
        if isinstance(cause, (kube_errors.InvalidError, kube_errors.ForbiddenError)):
            raise Rejected(f"the API server refused the {operation} write: {cause}") from cause
        backoff(rt, pod, operation, cause if isinstance(cause, kube_errors.KubeError) else exc)
        return False
    except kube_errors.KubeError as exc:  # a read or write outside the cases above (e.g. not the leader)
        release_unsent(rt, item)
        backoff(rt, pod, operation, exc)
        return False
    await placed(rt, pod, decision)
    return True


async def placed(rt: Runtime, pod: pods.Pod, decision: placement.Placement, note: str = "") -> None:
    """The pod is bound (or ungated) with its claims allocated: forget its failures, say so, measure."""
    rt.placements += 1
    rt.queue.succeeded(pod.metadata.uid or "")
    memory = rt.memory(pod.metadata.uid or "")
    memory.failure = memory.last_message = ""
    pod_raw = rt.cluster.pods.raw(pod.metadata.namespace or "", pod.metadata.name) or {}
    devices = ", ".join(f"{r.request}={r.pool}/{r.device}" for r in _devices_of(rt, pod, decision))
    try:
        await writing.post_event(
            rt.require_session(), regarding=pod_raw, reason="Allocated", type_="Normal", action="Scheduling",
            message=f"Placed on node {decision.node}" + (f" with devices {devices}" if devices else "") + note,
        )
    except kube_errors.KubeError as exc:  # the placement stands; only its Event is lost
        logger.warning("pod=%s/%s: cannot post the Allocated Event: %s", pod.metadata.namespace,
                       pod.metadata.name, exc)
    created = pod.metadata.creation_timestamp
    if created:
        metrics.observe_placement_latency(clock.age_seconds(created))


def _devices_of(rt: Runtime, pod: pods.Pod, decision: placement.Placement
                ) -> list[model_claims.DeviceRequestAllocationResult]:
    """The devices of every claim the pod uses, in its entries' order: those of claims it shares that were
    allocated before it (a second reader of a shared claim, a gang's PodGroup claim) as well as those
    this decision allocated (those first, then any of the decision's the view does not show yet, such as
    an extended-resource claim's)."""
    recorded = {s.name: s.resource_claim_name for s in pod.status.resource_claim_statuses}
    namespace = pod.metadata.namespace or "default"
    found: list[model_claims.DeviceRequestAllocationResult] = []
    for entry in pod.spec.resource_claims:
        name = entry.resource_claim_name or recorded.get(entry.name)
        claim = rt.cluster.claims.get(namespace, name) if name else None
        if claim is not None and claim.status.allocation is not None:
            found.extend(claim.status.allocation.devices.results)
    seen = {(r.request, r.driver, r.pool, r.device) for r in found}
    found.extend(r for a in decision.results for r in a.devices.results
                 if (r.request, r.driver, r.pool, r.device) not in seen)
    return found


async def give_back(rt: Runtime, held: Sequence[tuple[model_claims.ResourceClaim, str]]) -> int:
    """Give back reservations: each (claim, consumer uid) has the consumer's reservation removed, and the
    allocation with it when nobody else holds the claim, last first (a gang's writes undone, an earlier
    attempt's reservations that no longer fit). Each write is conditioned on the claim's version; a
    conflict or an unknown outcome reads the claim back and looks again. The number of claims known to
    be given back (a claim gone, or no longer reserved for the consumer, counts)."""
    undone = 0
    for claim, consumer in reversed(held):
        namespace, name = claim.metadata.namespace or "", claim.metadata.name
        for _ in range(RESENDS + 1):
            raw = rt.cluster.claims.raw(namespace, name)
            if raw is None or (raw.get("metadata") or {}).get("uid") != claim.metadata.uid:
                undone += 1
                break
            status = dict(raw.get("status") or {})
            reserved = list(status.get("reservedFor") or [])
            if not any(r.get("uid") == consumer for r in reserved):
                undone += 1  # not written after all (or already undone)
                break
            keep = [r for r in reserved if r.get("uid") != consumer]
            if keep:
                status["reservedFor"] = keep
            else:
                for field in ("reservedFor", "allocation", "devices"):
                    status.pop(field, None)
            try:
                await write_claim_status(rt, claim, status)
                logger.info("claim=%s/%s: reservation for %s rolled back", namespace, name, consumer)
                undone += 1
                break
            except kube_errors.KubeError as exc:
                if not (kube_errors.outcome_unknown(exc) or isinstance(exc, kube_errors.ConflictError)):
                    logger.warning("claim=%s/%s: rolling back failed: %s", namespace, name, exc)
                    break
                try:
                    await read_back(rt, "ResourceClaim", resources.RESOURCE_CLAIMS,
                                               namespace, name)
                except Unknown as unknown:
                    logger.warning("claim=%s/%s: rolling back: %s", namespace, name, unknown)
                    break
    return undone


async def resolve_unknown(rt: Runtime) -> None:
    """Settle ledger entries whose write outcome is still unknown, each at most every RESOLVE_EVERY s.

    Reading the claim settles it when it shows the allocation or a newer version. When
    it still shows the version the write was conditioned on, a fence (an annotation
    written with that version as precondition) makes sure the old write can never apply
    later; the fence's own answer is then read like any other.
    """
    now = time.monotonic()
    for entry in rt.ledger.unknown():
        if now - rt.unknown_checked.get(entry.claim_uid, 0.0) < RESOLVE_EVERY:
            continue
        rt.unknown_checked[entry.claim_uid] = now
        namespace, _, name = entry.claim_ref.partition("/")
        try:
            got = await read_back(rt, "ResourceClaim", resources.RESOURCE_CLAIMS, namespace, name)
            if got is None or entry.claim_uid not in rt.ledger:
                continue
            if entry.sent_version is None or _rv(got) != str(entry.sent_version):
                continue  # observed() decided, or a version we cannot order: the watch will tell
            meta = got.get("metadata") or {}
            ops: list[Raw] = [{"op": "test", "path": "/metadata/resourceVersion", "value": _rv(got)}]
            if meta.get("annotations"):
                ops.append({"op": "add", "path": f"/metadata/annotations/{_escape(FENCE_ANNOTATION)}",
                            "value": _rv(got)})
            else:
                ops.append({"op": "add", "path": "/metadata/annotations", "value": {FENCE_ANNOTATION: _rv(got)}})
            stored = await writing.json_patch(rt.require_session(), resources.RESOURCE_CLAIMS, name, ops, namespace)
            into_view(rt, "ResourceClaim", stored)
            logger.info("claim=%s/%s: fenced an allocation write of unknown outcome (version %s)", namespace, name,
                        entry.sent_version)
        except (Unknown, kube_errors.KubeError) as exc:
            logger.info("claim=%s/%s: allocation write outcome still unknown: %s", namespace, name, exc)
    rt.unknown_checked = {uid: at for uid, at in rt.unknown_checked.items() if uid in rt.ledger}
