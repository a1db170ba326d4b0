"""A gang's binds recorded on its PodGroup before the first one: the record, read and written.

Kubernetes cannot unbind a pod, so before a gang's first bind (handlers/ganging.py) the
decision is recorded on the PodGroup: a condition of type `dralloc.io/GangBinds` in its
**status** lists every member (pod name, uid) with its node; it is removed once every member
is bound. A pass that finds it completes the recorded binds (handlers/completing.py) instead
of deciding the gang again. The record lives in the status because tenants, who may create
and edit their PodGroups, have no right to write their status subresource (the
`podgroups/status` permission is the scheduler's): a record a tenant wrote into the object
itself (an annotation, as dralloc used to keep it) is never read.

Every write is conditioned on the PodGroup's resourceVersion and settled as committing.py
settles claim writes: a conflict reads it back and tries again, an unknown outcome is read
back and never taken as failed. Imports the runtime and `committing`.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Sequence
from typing import Any

from dralloc.handlers import clock, committing
from dralloc.handlers.runtime import Runtime
from dralloc.kube import errors as kube_errors
from dralloc.kube import writing
from dralloc.model import pods

logger = logging.getLogger(__name__)

CONDITION = "dralloc.io/GangBinds"  # the PodGroup status condition that records a gang's binds
REASON = "BindsRecorded"
Raw = dict[str, Any]
Key = tuple[str, str]  # the PodGroup: (namespace, name)


@dataclasses.dataclass(frozen=True)
class Bind:
    pod: str  # name, in the PodGroup's namespace
    uid: str
    node: str


@dataclasses.dataclass(frozen=True)
class Intent:
    binds: tuple[Bind, ...]

    @classmethod
    def of(cls, members: Sequence[tuple[pods.Pod, str]]) -> Intent:
        """The record of these members (each with its node)."""
        return cls(tuple(Bind(pod.metadata.name, pod.metadata.uid or "", node) for pod, node in members))

    def encode(self) -> str:
        return json.dumps({"members": [{"pod": b.pod, "uid": b.uid, "node": b.node} for b in self.binds]},
                          separators=(",", ":"))


def _conditions(raw: Raw | None) -> list[Raw]:
    found = ((raw or {}).get("status") or {}).get("conditions") or []
    return [c for c in found if isinstance(c, dict)] if isinstance(found, list) else []


def _recorded(raw: Raw | None) -> str | None:
    for condition in _conditions(raw):
        if condition.get("type") == CONDITION and condition.get("status") == "True":
            return str(condition.get("message") or "")
    return None


def intent_of(rt: Runtime, key: Key) -> Intent | None:
    """The PodGroup's recorded binds (its status); None when it has none. A record that does not parse
    is logged and taken as none: the gang is then decided from what its claims show, as before."""
    text = _recorded(rt.cluster.pod_groups.raw(*key))
    if text is None:
        return None
    try:
        members = json.loads(text)["members"]
        return Intent(tuple(Bind(str(m["pod"]), str(m["uid"]), str(m["node"])) for m in members))
    except (ValueError, KeyError, TypeError) as exc:
        logger.warning("podgroup=%s/%s: condition %s does not parse (%s): ignored", *key, CONDITION, exc)
        return None


async def patch_group_condition(rt: Runtime, key: Key, kind: str, condition: Raw | None) -> Raw:
    """Set (or, with None, remove) the condition `kind` in the PodGroup's status, keeping every other one;
    `condition` without type and lastTransitionTime (added here, kept while the status stays;
    observedGeneration too). The write
    carries the resourceVersion it was made from: a conflict reads the PodGroup again and retries. Raises
    Refused when the cluster serves no PodGroups or it is gone, Unknown when it kept changing, and the
    API's errors as they come."""
    resource = rt.pod_group_resource
    if resource is None:
        raise committing.Refused(f"PodGroup {key[0]}/{key[1]}: this cluster no longer serves PodGroups")
    raw = rt.cluster.pod_groups.raw(*key)
    for _ in range(committing.RESENDS + 1):
        if raw is None:
            raise committing.Refused(f"PodGroup {key[0]}/{key[1]} is gone")
        meta = raw.get("metadata") or {}
        every = (raw.get("status") or {}).get("conditions") or []
        before = next((c for c in every if c.get("type") == kind), None)
        conditions = [c for c in every if c.get("type") != kind]
        if condition is not None:
            # As apimeta.SetStatusCondition: the transition time moves only when the status does.
            since = (before or {}).get("lastTransitionTime") if (before or {}).get("status") == condition.get(
                "status") else None
            conditions.append({"type": kind, **condition, "lastTransitionTime": since or clock.stamp(),
                               **({"observedGeneration": meta["generation"]} if meta.get("generation") else {})})
        patch = {"metadata": {"resourceVersion": meta.get("resourceVersion")}, "status": {"conditions": conditions}}
        try:
            stored = await writing.merge_patch(rt.require_session(), resource, key[1], patch, key[0] or "default",
                                               subresource="status")
        except kube_errors.ConflictError:
            raw = await committing.read_back(rt, "PodGroup", resource, *key)
            continue
        committing.into_view(rt, "PodGroup", stored)
        return stored
    raise committing.Unknown(f"PodGroup {key[0]}/{key[1]}: its status kept changing while condition {kind} was written")


async def _patch(rt: Runtime, key: Key, value: str | None) -> Raw:
    """Set (or, with None, remove) the record in the PodGroup's status, keeping every other condition."""
    return await patch_group_condition(
        rt, key, CONDITION, None if value is None else {"status": "True", "reason": REASON, "message": value})


async def record(rt: Runtime, key: Key, intent: Intent) -> None:
    """Write the intent before the first bind. Raises committing.Refused when the PodGroup refused it (or is
    gone), committing.Unknown when whether it was written cannot be told (no member is bound then)."""
    wanted = intent.encode()
    resource = rt.pod_group_resource
    for _ in range(committing.RESENDS + 1):
        try:
            await _patch(rt, key, wanted)
            return
        except kube_errors.KubeError as exc:
            if not kube_errors.outcome_unknown(exc):
                raise committing.Refused(f"PodGroup {key[0]}/{key[1]}: recording the gang's binds: {exc}") from exc
            assert resource is not None  # _patch raised Refused otherwise
            got = await committing.read_back(rt, "PodGroup", resource, *key)
            if got is None:
                raise committing.Refused(f"PodGroup {key[0]}/{key[1]} is gone") from exc
            if _recorded(got) == wanted:
                return
    raise committing.Unknown(f"PodGroup {key[0]}/{key[1]}: recording the gang's binds kept failing with an "
                             "unknown outcome")


async def clear(rt: Runtime, key: Key) -> None:
    """Remove the intent once nothing of it is left to bind. A failure only leaves it for the next pass,
    which finds every member bound and removes it then."""
    if _recorded(rt.cluster.pod_groups.raw(*key)) is None:
        return
    try:
        await _patch(rt, key, None)
    except (kube_errors.KubeError, committing.Refused, committing.Unknown) as exc:
        logger.warning("podgroup=%s/%s: cannot remove condition %s (%s); removed on a later pass", *key,
                       CONDITION, exc)
