"""Gate mode's safety net: the devices of a pinned pod kube-scheduler keeps refusing are given back.

In gate mode dralloc allocates a pod's claims, pins the chosen node through its nodeSelector
and removes its gate; kube-scheduler then binds it. dralloc pins only nodes that pass every
filter it knows of kube-scheduler's (scheduling/placement.py), but kube-scheduler may still
refuse the node: a plugin dralloc does not know (a custom profile), or a race (a pod bound
there meanwhile by someone else). The pod then waits forever, its GPUs held.

A pod dralloc pinned in this process (its memory's `bound_to`), still unbound and ungated,
whose PodScheduled condition kube-scheduler has set to False (reason Unschedulable) for at
least REFUSAL_PATIENCE seconds, gets its devices back: every claim reserved for it has the
reservation removed, and the allocation with it when nobody else holds the claim
(`committing.give_back`). A Warning Event `GateRefused` on the pod says which node, what
kube-scheduler said, and what to do: an ungated pod's node selector cannot change, so the pod
must be recreated (deleting it lets its controller do that; dralloc places the new one). The
pod is no longer counted on that node (`Runtime.placer`). Counted in
`dralloc_gate_refusals_total`.

The pin is also written on the pod (`committing.PINNED_ANNOTATION`), so a pod pinned by an earlier
process (before a restart or a leader change) is adopted (`adopt_pins`): still unbound and ungated,
its nodeSelector holding that node's hostname, and a claim of it allocated and reserved for it,
it counts on that node and is watched for kube-scheduler's refusal as if pinned here. The claim
test keeps a tenant's own annotation from doing anything on its own: only a scheduler writes a
claim's status. Pods of dralloc's own schedulerName are not looked at: dralloc binds them itself.

A decision-pass helper: calls the runtime, `committing` and `clock`; handlers/scheduling.py
runs it at the start of every pass.
"""

from __future__ import annotations

import logging
from typing import Any

from dralloc import metrics
from dralloc.handlers import clock, committing
from dralloc.handlers.runtime import Runtime
from dralloc.kube import errors as kube_errors

logger = logging.getLogger(__name__)

REFUSAL_PATIENCE = 10.0  # seconds kube-scheduler's refusal must stand (its first attempt may race its cache)


def refusal(raw: dict[str, Any]) -> tuple[str, float] | None:
    """kube-scheduler's PodScheduled=False (Unschedulable) on the pod: its message and age in seconds."""
    for condition in (raw.get("status") or {}).get("conditions") or []:
        if (isinstance(condition, dict) and condition.get("type") == "PodScheduled"
                and condition.get("status") == "False" and condition.get("reason") == "Unschedulable"):
            return str(condition.get("message") or ""), clock.age_seconds(str(condition.get("lastTransitionTime") or ""))
    return None


def record_pin(rt: Runtime, raw: dict[str, Any]) -> None:
    """Called for each pod the watch shows: one with dralloc's pinned-node annotation and no node yet is
    for `adopt_pins` to look at."""
    meta = raw.get("metadata") or {}
    if (meta.get("annotations") or {}).get(committing.PINNED_ANNOTATION) and not (raw.get("spec") or {}).get("nodeName"):
        rt.pin_records.add(str(meta.get("uid") or ""))


def adopt_pins(rt: Runtime) -> int:
    """Remember the pods pinned by an earlier process as pinned (see the module's docstring); how many."""
    adopted = 0
    scheduler_name = rt.settings.scheduling.scheduler_name
    while rt.pin_records:
        uid = rt.pin_records.pop()
        key = rt.cluster.pod_keys.get(uid)
        pod = rt.cluster.pods.get(*key) if key is not None else None
        known = rt.pods.get(uid)
        if (pod is None or pod.spec.node_name or pod.spec.scheduling_gates or pod.metadata.deletion_timestamp
                or pod.spec.scheduler_name == scheduler_name or (known is not None and known.bound_to is not None)):
            continue
        node_name = pod.metadata.annotations.get(committing.PINNED_ANNOTATION) or ""
        node = rt.cluster.nodes.get("", node_name)
        hostname = (node.metadata.labels.get("kubernetes.io/hostname") if node else None) or node_name
        if pod.spec.node_selector.get("kubernetes.io/hostname") != hostname:
            continue
        namespace = pod.metadata.namespace or ""
        for claim_key in rt.cluster.claims_naming(namespace, uid):
            claim = rt.cluster.claims.get(*claim_key)
            if (claim is not None and claim.status.allocation is not None
                    and any(r.uid == uid for r in claim.status.reserved_for)):
                rt.memory(uid).bound_to = node_name
                adopted += 1
                logger.info("pod=%s/%s: pinned to node %s by an earlier dralloc process; watched as pinned here",
                            namespace, pod.metadata.name, node_name)
                break
    return adopted


async def give_back_refused(rt: Runtime) -> int:
    """Give back the devices of every pinned pod kube-scheduler keeps refusing; how many pods."""
    adopt_pins(rt)
    settings = rt.settings.scheduling
    released = 0
    for uid, memory in list(rt.pods.items()):
        node = memory.bound_to
        key = rt.cluster.pod_keys.get(uid) if node is not None else None
        if node is None or key is None:
            continue
        pod = rt.cluster.pods.get(*key)
        if pod is None or pod.spec.node_name or pod.spec.scheduling_gates:
            continue
        if pod.spec.scheduler_name == settings.scheduler_name:
            continue  # ours to bind: a bind in flight, not a refusal
        raw = rt.cluster.pods.raw(*key) or {}
        refused = refusal(raw)
        if refused is None or refused[1] < REFUSAL_PATIENCE:
            continue
        namespace = pod.metadata.namespace or ""
        held = []
        for claim_key in rt.cluster.claims_naming(namespace, uid):
            claim = rt.cluster.claims.get(*claim_key)
            if claim is not None and any(r.uid == uid for r in claim.status.reserved_for):
                held.append((claim, uid))
        undone = await committing.give_back(rt, held)
        if undone < len(held):
            logger.warning("pod=%s/%s: kube-scheduler refuses node %s; gave back %d of %d claim(s), retrying",
                           namespace, pod.metadata.name, node, undone, len(held))
            continue
        memory.bound_to = None
        released += 1
        metrics.observe_gate_refusal()
        claims_ = ", ".join(claim.ref() for claim, _ in held) or "none"
        message = (f"kube-scheduler refuses node {node}, which dralloc pinned this pod to ({refused[0]}); dralloc "
                   f"gave back the devices it allocated (claims {claims_}). An ungated pod's node selector cannot "
                   "change: delete the pod so its controller recreates it, and dralloc places the new one")
        logger.warning("pod=%s/%s: %s", namespace, pod.metadata.name, message)
        try:
            await rt.events.post(rt.require_session(), regarding=raw, reason="GateRefused", type_="Warning",
                                 action="Scheduling", message=message)
        except kube_errors.KubeError as exc:
            logger.warning("pod=%s/%s: cannot post the GateRefused Event: %s", namespace, pod.metadata.name, exc)
    return released
