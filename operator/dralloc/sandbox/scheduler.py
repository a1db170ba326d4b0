"""A stand-in for kube-scheduler, part of `--simulate-pods`.

dralloc's gate mode allocates claims, pins the pod to a node with a nodeSelector,
removes its scheduling gate and leaves the binding to kube-scheduler. The sandbox has
no kube-scheduler, so with the pod simulator on, this stand-in binds pods whose
`schedulerName` is `default-scheduler` once they are ungated:

- nodes: not `spec.unschedulable`, matching `nodeSelector` and required node affinity
  (matchExpressions In/NotIn/Exists/DoesNotExist/Gt/Lt, matchFields on metadata.name),
  NoSchedule/NoExecute taints tolerated; the first such node by name wins;
- claims: every claim of the pod must exist and be allocated (it never allocates: that
  is dralloc's job), and the node must satisfy each allocation's nodeSelector; the pod
  is added to each claim's `reservedFor` before binding, as the scheduler's DRA plugin
  does.

Otherwise the pod gets `PodScheduled=False, reason=Unschedulable` with the reason. No
resource fit, priorities, preemption or scoring.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from dralloc.sandbox import pods, watches
from dralloc.sandbox import store as store_

Obj = dict[str, Any]
_TRIGGERS = ("/pods", "/nodes", "resource.k8s.io/resourceclaims")


def _expression_ok(values: dict[str, str], expr: Obj) -> bool:
    key, op, wanted = expr.get("key", ""), expr.get("operator", "In"), expr.get("values") or []
    present, value = key in values, values.get(key, "")
    if op == "In":
        return present and value in wanted
    if op == "NotIn":
        return not present or value not in wanted
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op in ("Gt", "Lt") and present and wanted:
        try:
            return int(value) > int(wanted[0]) if op == "Gt" else int(value) < int(wanted[0])
        except ValueError:
            return False
    return False


def selector_matches(selector: Obj | None, node: Obj) -> bool:
    """A v1 NodeSelector (terms are ORed, expressions within a term ANDed); None matches all."""
    if not selector:
        return True
    labels = node["metadata"].get("labels") or {}
    fields = {"metadata.name": node["metadata"]["name"]}
    return any(all(_expression_ok(labels, e) for e in term.get("matchExpressions") or [])
               and all(_expression_ok(fields, e) for e in term.get("matchFields") or [])
               for term in selector.get("nodeSelectorTerms") or [])


def _tolerated(taint: Obj, tolerations: list[Obj]) -> bool:
    for tol in tolerations:
        op = tol.get("operator", "Equal")
        key_ok = (not tol.get("key") and op == "Exists") or tol.get("key") == taint.get("key")
        value_ok = op == "Exists" or tol.get("value", "") == taint.get("value", "")
        effect_ok = not tol.get("effect") or tol.get("effect") == taint.get("effect")
        if key_ok and value_ok and effect_ok:
            return True
    return False


def node_fits(pod: Obj, node: Obj) -> bool:
    spec, node_spec = pod.get("spec") or {}, node.get("spec") or {}
    if node_spec.get("unschedulable"):
        return False
    labels = node["metadata"].get("labels") or {}
    if any(labels.get(k) != v for k, v in (spec.get("nodeSelector") or {}).items()):
        return False
    required = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution"))
    if required and not selector_matches(required, node):
        return False
    return all(_tolerated(t, spec.get("tolerations") or []) for t in node_spec.get("taints") or []
               if t.get("effect") in ("NoSchedule", "NoExecute"))


class SchedulerStandIn:
    def __init__(self, store: store_.Store, *, delay: float = 0.05) -> None:
        self.store = store
        self.delay = delay
        self._timer: asyncio.TimerHandle | None = None
        store.listeners.append(self._on_event)

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _on_event(self, event: watches.Event) -> None:
        if event.storage in _TRIGGERS and self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self.delay, self._pass)

    def _pass(self) -> None:
        self._timer = None
        nodes = [entry.obj for _, entry in self.store.scan("/nodes")]
        for (ns, name), entry in list(self.store.scan("/pods")):
            pod = entry.obj
            spec = pod.get("spec") or {}
            if (spec.get("schedulerName", "default-scheduler") != "default-scheduler" or spec.get("nodeName")
                    or spec.get("schedulingGates") or pod["metadata"].get("deletionTimestamp")
                    or (pod.get("status") or {}).get("phase", "Pending") != "Pending"):
                continue
            claims, why = self._claims(pod, ns)
            fitting = [n for n in nodes if node_fits(pod, n) and all(
                selector_matches(((c.obj.get("status") or {}).get("allocation") or {}).get("nodeSelector"), n)
                for _, c in claims)]
            if why or not fitting:
                self._unschedulable(("/pods", ns, name), entry, why or f"0/{len(nodes)} nodes are available: "
                                                                    "none matches the pod's node constraints")
                continue
            for key, claim in claims:
                self._reserve(key, claim, pod)
            bound = json.loads(entry.raw)
            pods.bind(bound, fitting[0]["metadata"]["name"])
            self.store.put_internal(("/pods", ns, name), bound, entry.obj)

    def _claims(self, pod: Obj, ns: str) -> tuple[list[tuple[store_.Key, store_.Entry]], str]:
        statuses = {s.get("name"): s.get("resourceClaimName")
                    for s in (pod.get("status") or {}).get("resourceClaimStatuses") or []}
        found = []
        for ref in (pod.get("spec") or {}).get("resourceClaims") or []:
            claim_name = ref.get("resourceClaimName") or statuses.get(ref.get("name"))
            if not claim_name:
                return [], f"waiting for the ResourceClaim of {ref.get('name')!r} to be created"
            key = ("resource.k8s.io/resourceclaims", ns, claim_name)
            claim = self.store.objects[key[0]].get(key[1:])
            if claim is None:
                return [], f'resourceclaim "{claim_name}" not found'
            if (claim.obj.get("status") or {}).get("allocation") is None:
                return [], f'resourceclaim "{claim_name}" is not allocated (the stand-in scheduler never allocates)'
            found.append((key, claim))
        return found, ""

    def _reserve(self, key: store_.Key, claim: store_.Entry, pod: Obj) -> None:
        reserved = (claim.obj.get("status") or {}).get("reservedFor") or []
        if any(r.get("uid") == pod["metadata"]["uid"] for r in reserved):
            return
        new = json.loads(claim.raw)
        new["status"]["reservedFor"] = [*reserved, {"resource": "pods", "name": pod["metadata"]["name"],
                                                     "uid": pod["metadata"]["uid"]}]
        self.store.put_internal(key, new, claim.obj)

    def _unschedulable(self, key: store_.Key, entry: store_.Entry, message: str) -> None:
        current: Obj = next((c for c in (entry.obj.get("status") or {}).get("conditions") or []
                        if c.get("type") == "PodScheduled"), {})
        if current.get("status") == "False" and current.get("message") == message:
            return
        pod = json.loads(entry.raw)
        pods.set_condition(pod, "PodScheduled", "False", "Unschedulable", message)
        self.store.put_internal(key, pod, entry.obj)
