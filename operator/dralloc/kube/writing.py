"""Writes, carried out exactly as asked: the caller decides what, when and whether to retry.

Every write that could overwrite someone else's change carries a precondition, and a
failed precondition surfaces as its own error class so the caller can tell "someone
else got there first" from "this is broken":

- `replace_claim_status` is a PUT of the status subresource carrying the claim's
  `metadata.resourceVersion`: a stale copy gets `ConflictError` and nothing is written.
  (It is how the allocation and `reservedFor` land together in one write.)
  `replace_object` is the same for any type and subresource (DeviceTaintRule status,
  Leases), and also refuses to send a write without a resourceVersion.
- `delete_object` sends uid/resourceVersion preconditions in DeleteOptions (409 when
  they no longer hold); a missing object is `NotFoundError`, and whether that counts as
  success is the caller's call.
- `json_patch` can carry a `test` op; when it fails the server answers 422,
  `InvalidError`.
- `bind_pod` names the pod's uid in the Binding, so a re-created pod of the same name
  is not bound by mistake; binding a bound pod is a `ConflictError`.

`merge_patch` sends `application/merge-patch+json` explicitly: a plain dict body would
otherwise be a strategic merge patch, which merges lists by key on core types instead
of replacing them, and is not supported at all on CRDs.

`post_event` is best effort: an Event that cannot be written must never fail the
operation it describes, so only a `TransportError` (the API is unreachable, which the
caller will meet anyway) is raised; API refusals are logged.
"""

from __future__ import annotations

import datetime
import json
import logging
import os
import socket
import time
from typing import Any

from dralloc.kube import errors, protowire, reading, resources
from dralloc.kube.resources import Resource
from dralloc.kube.session import JSON_PATCH, MERGE_PATCH, Session

logger = logging.getLogger(__name__)
Obj = dict[str, Any]

# events.k8s.io/v1 rejects a `note` longer than 1 kB; cut at a UTF-8 boundary below it.
MAX_EVENT_NOTE_BYTES = 1024
# reportingInstance / action / reason are limited to 128 characters by validation.
MAX_EVENT_FIELD = 128


async def replace_claim_status(session: Session, claim: Obj, status: Obj) -> Obj:
    """PUT `claim` with `status` to resourceclaims/{name}/status; the stored claim.

    The claim's own `metadata.resourceVersion` is the precondition: `ConflictError` if
    the claim changed since it was read, and then nothing is written.
    """
    return await replace_object(session, resources.RESOURCE_CLAIMS, {**claim, "status": status},
                                subresource="status")


async def replace_object(session: Session, resource: Resource, obj: Obj, *, subresource: str | None = None) -> Obj:
    """PUT `obj` (named by its metadata) with its resourceVersion as precondition; the stored object.

    `ConflictError` if the object changed since `obj` was read. A resourceVersion is
    required: an unconditional replace would silently undo someone else's write.
    """
    meta = obj.get("metadata") or {}
    if not meta.get("resourceVersion"):
        raise ValueError(f"replacing a {resource.kind} needs its metadata.resourceVersion (the precondition)")
    body = {**obj, "apiVersion": resource.api_version, "kind": resource.kind}
    path = resource.object_path(meta.get("name", ""), meta.get("namespace") if resource.namespaced else None,
                                subresource)
    return reading.fill_type(resource, await session.request("PUT", path, body=body))


async def create_object(session: Session, resource: Resource, obj: Obj) -> Obj:
    """POST `obj` (its metadata.namespace for namespaced types); the stored object.

    `metadata.generateName` without a name is honoured by the server, which picks the
    name; an existing name is `AlreadyExistsError`.
    """
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace") if resource.namespaced else None
    if resource.namespaced and not namespace:
        raise ValueError(f"creating a {resource.kind} needs metadata.namespace")
    body = {**obj, "apiVersion": resource.api_version, "kind": resource.kind}
    stored = await session.request("POST", resource.collection_path(namespace), body=body)
    return reading.fill_type(resource, stored)


async def delete_object(
    session: Session,
    resource: Resource,
    name: str,
    namespace: str | None = None,
    *,
    uid: str | None = None,  # only if it is still this object (not a re-created namesake)
    resource_version: str | None = None,  # only if unchanged since read
    propagation: str | None = None,  # "Foreground" | "Background" | "Orphan"; None: the type's default
    grace_period_seconds: int | None = None,
) -> None:
    """DELETE with DeleteOptions preconditions; `NotFoundError` and `ConflictError` pass through."""
    options: Obj = {"apiVersion": "v1", "kind": "DeleteOptions"}
    preconditions = {k: v for k, v in (("uid", uid), ("resourceVersion", resource_version)) if v}
    if preconditions:
        options["preconditions"] = preconditions
    if propagation:
        options["propagationPolicy"] = propagation
    if grace_period_seconds is not None:
        options["gracePeriodSeconds"] = grace_period_seconds
    await session.request("DELETE", resource.object_path(name, namespace), body=options)


async def merge_patch(session: Session, resource: Resource, name: str, patch: Obj, namespace: str | None = None,
                      *, subresource: str | None = None) -> Obj:
    """RFC 7386 merge patch (lists are replaced whole; null deletes a key); the stored object."""
    stored = await session.request("PATCH", resource.object_path(name, namespace, subresource), body=patch,
                                   content_type=MERGE_PATCH)
    return reading.fill_type(resource, stored)


async def json_patch(session: Session, resource: Resource, name: str, ops: list[Obj], namespace: str | None = None,
                     *, subresource: str | None = None) -> Obj:
    """RFC 6902 JSON patch; a failed `test` op is `InvalidError` (422) and nothing is written."""
    stored = await session.request("PATCH", resource.object_path(name, namespace, subresource), body=ops,
                                   content_type=JSON_PATCH)
    return reading.fill_type(resource, stored)


async def patch_finalizer(session: Session, resource: Resource, name: str, namespace: str | None, finalizer: str,
                          *, present: bool, resource_version: str, finalizers: list[str]) -> Obj:
    """Add (present=True) or remove `finalizer` on the object at `resource_version`, whose finalizers are
    `finalizers` at that version; the stored object.

    A JSON patch with a `test` of the resourceVersion first. When kube-apiserver refuses it as a change of an
    immutable spec the patch never touched, the object carries a RawExtension stored in a spelling no JSON
    write reproduces (see kube/protowire.py): the same edit is then made as kube-scheduler makes it, a
    protobuf read and an update of exactly those bytes plus or minus the finalizer, conditioned on the same
    resourceVersion (409 when it moved on)."""
    ops: list[Obj] = [{"op": "test", "path": "/metadata/resourceVersion", "value": resource_version}]
    if present and finalizer not in finalizers:
        ops.append({"op": "add", "path": "/metadata/finalizers/-", "value": finalizer} if finalizers
                   else {"op": "add", "path": "/metadata/finalizers", "value": [finalizer]})
    elif not present and finalizer in finalizers:
        ops.append({"op": "remove", "path": f"/metadata/finalizers/{finalizers.index(finalizer)}"})
    try:
        return await json_patch(session, resource, name, ops, namespace)
    except errors.InvalidError as exc:
        if not immutable_spelling_refusal(exc):
            raise
        logger.info("%s %s/%s: a JSON write is refused as changing its immutable spec (a RawExtension stored "
                    "with blanks); writing the finalizer through protobuf", resource.kind, namespace, name)
    path = resource.object_path(name, namespace)
    stored, _ = await session.request_bytes("GET", path, accept=protowire.PROTOBUF)
    if protowire.resource_version(stored) != resource_version:
        raise errors.ConflictError(409, "Conflict", f"{resource.kind} {namespace}/{name}: resourceVersion is "
                                   f"{protowire.resource_version(stored)}, not {resource_version}")
    edited = protowire.with_finalizer(stored, finalizer, present=present)
    answer, status = await session.request_bytes("PUT", path, body=edited, content_type=protowire.PROTOBUF)
    try:
        return reading.fill_type(resource, json.loads(answer))
    except ValueError as exc:
        raise errors.ServerError(status, "BadResponse", f"PUT {path}: the answer is not JSON") from exc


def immutable_spelling_refusal(exc: errors.InvalidError) -> bool:
    """kube-apiserver's answer to a JSON write of an object whose stored RawExtension differs from its compact
    re-encoding: the whole `spec` named immutable, though the write did not change it."""
    return any(c.get("field") == "spec" and "immutable" in str(c.get("message", "")) for c in exc.causes) or (
        not exc.causes and "spec: Invalid value: null: field is immutable" in exc.message)


async def bind_pod(session: Session, namespace: str, name: str, uid: str, node: str) -> None:
    """POST pods/{name}/binding to `node`; `ConflictError` if bound already or the uid differs.

    The server answers with a Status, not a Pod; it is not returned (read the pod, or
    wait for the watch, to see `spec.nodeName`).
    """
    binding = {"apiVersion": "v1", "kind": "Binding",
               "metadata": {"name": name, "namespace": namespace, "uid": uid},
               "target": {"apiVersion": "v1", "kind": "Node", "name": node}}
    await session.request("POST", resources.PODS.object_path(name, namespace, "binding"), body=binding)


async def evict_pod(session: Session, namespace: str, name: str, *, uid: str | None = None) -> None:
    """POST a policy/v1 Eviction; `TooManyRequestsError` when a disruption budget forbids it now."""
    eviction: Obj = {"apiVersion": "policy/v1", "kind": "Eviction",
                     "metadata": {"name": name, "namespace": namespace}}
    if uid:
        eviction["deleteOptions"] = {"preconditions": {"uid": uid}}
    await session.request("POST", resources.PODS.object_path(name, namespace, "eviction"), body=eviction)


async def post_event(
    session: Session,
    *,
    regarding: Obj,
    reason: str,
    message: str,
    type_: str = "Normal",  # "Normal" | "Warning"
    action: str = "",  # what was done or failed, e.g. "Allocate"; "" = the reason
    reporting_controller: str = "dralloc.io/scheduler",
    reporting_instance: str = "",  # "" = this pod's name ($POD_NAME, else the host name)
    related: Obj | None = None,  # a second raw object, e.g. the claim of a pod's event
) -> str | None:
    """Create an events.k8s.io/v1 Event about the raw object `regarding`; best effort. Its
    name when it was created (None: refused, and logged).

    The Event goes to the object's namespace ("default" for cluster-scoped objects, as
    kubectl expects). Raises only `TransportError`; every API refusal is logged.
    """
    ref = _reference(regarding)
    namespace = ref.get("namespace") or "default"
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    event: Obj = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": _event_name(ref.get("name") or ""), "namespace": namespace},
        "eventTime": now,
        "reportingController": reporting_controller[:MAX_EVENT_FIELD],
        "reportingInstance": (reporting_instance or _instance())[:MAX_EVENT_FIELD],
        "action": (action or reason)[:MAX_EVENT_FIELD],
        "reason": reason[:MAX_EVENT_FIELD],
        "note": _cut_utf8(message, MAX_EVENT_NOTE_BYTES),
        "type": type_,
        "regarding": ref,
    }
    if related is not None:
        event["related"] = _reference(related)
    try:
        await create_object(session, resources.EVENTS, event)
    except errors.TransportError:
        raise
    except errors.KubeError as exc:
        logger.warning("could not post event %s on %s %s/%s: %s", reason, ref.get("kind"), namespace,
                       ref.get("name"), exc)
        return None
    return str(event["metadata"]["name"])


def _event_name(regarding: str) -> str:
    """`<name>.<nanoseconds in hex>`, as client-go's recorder names Events. Not `generateName: "<name>."`:
    events.k8s.io/v1 validates generateName as a DNS subdomain prefix, and one may not end in a dot."""
    prefix = regarding[:253 - 17].rstrip("-.") or "object"
    return f"{prefix}.{time.time_ns():x}"


def _reference(obj: Obj) -> Obj:
    meta = obj.get("metadata") or {}
    ref = {"apiVersion": obj.get("apiVersion"), "kind": obj.get("kind"), "name": meta.get("name"),
           "namespace": meta.get("namespace"), "uid": meta.get("uid"),
           "resourceVersion": meta.get("resourceVersion")}
    return {k: v for k, v in ref.items() if v}


def _cut_utf8(text: str, limit: int) -> str:
    encoded = text.encode("utf-8")
    if len(encoded) <= limit:
        return text
    return encoded[:limit].decode("utf-8", "ignore")


def _instance() -> str:
    return os.environ.get("POD_NAME") or socket.gethostname() or "dralloc"

