"""kopf event handlers that keep the cluster view current and wake the control loops.

`@kopf.on.event` handlers neither patch nor store progress on the objects: they
only feed `Runtime.cluster`. When kopf pauses this replica (peering), they stop
with everything else; the active replica relists when it (re)starts its loops.
"""

from __future__ import annotations

from typing import Any

import kopf

from dralloc.handlers.runtime import Runtime

# (kind, group, version, plural): what the operator watches.
WATCHED = (
    ("Pod", "", "v1", "pods"),
    ("Node", "", "v1", "nodes"),
    ("ResourceClaim", "resource.k8s.io", "v1", "resourceclaims"),
    ("ResourceClaimTemplate", "resource.k8s.io", "v1", "resourceclaimtemplates"),
    ("ResourceSlice", "resource.k8s.io", "v1", "resourceslices"),
    ("DeviceClass", "resource.k8s.io", "v1", "deviceclasses"),
)


def feed(rt: Runtime, kind: str, event_type: str | None, raw: dict[str, Any]) -> None:
    """Apply one event to the view and mark what the loops must look at."""
    if not rt.cluster.apply(kind, event_type, raw):
        return
    meta = raw.get("metadata") or {}
    key = (meta.get("namespace") or "", meta.get("name") or "")
    if kind == "Pod":
        rt.dirty_pods.add(key)
        rt.lifecycle_wakeup.set()
    elif kind == "ResourceClaim":
        rt.dirty_claims.add(key)
        claim = rt.cluster.claims.get(*key)
        if claim is not None:
            rt.ledger.observed(claim)
        elif event_type == "DELETED":
            rt.ledger.forget_deleted(str(meta.get("uid") or ""))
        rt.lifecycle_wakeup.set()
    elif kind == "ResourceClaimTemplate":
        rt.dirty_pods.update(k for k in rt.cluster.pods.entries if k[0] == key[0])
        rt.lifecycle_wakeup.set()
    rt.scheduling_wakeup.set()


def _register(kind: str, group: str, version: str, plural: str) -> None:
    @kopf.on.event(group=group, version=version, plural=plural, id=f"watch-{plural}")
    async def on_event(**kwargs: Any) -> None:
        # async on purpose: kopf runs sync handlers in a thread pool, and the cluster view and the
        # loops' wake-up events belong to the event loop's thread.
        event, memo = kwargs["event"], kwargs["memo"]
        raw = event.get("object")
        if isinstance(raw, dict) and isinstance(memo, Runtime):
            feed(memo, kind, event.get("type"), raw)


for _kind, _group, _version, _plural in WATCHED:
    _register(_kind, _group, _version, _plural)
