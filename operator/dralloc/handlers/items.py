"""What a pod asks of the scheduler, read from the cluster view: whether it is ours (`owned`), whether
scheduling gates other than ours still hold it back (`held_by`), its claims as a placement item, what
it waits for, and which changes may make it fit.

`item_for` is the one place that turns a pod's `spec.resourceClaims` (names, templates,
DRA extended resources) into the `placement.Item` the placer decides on: the claims to
allocate, the allocated ones it will share, or why it cannot be decided now — not ready
(a claim the lifecycle is still creating, a write of ours not observed yet: None), waiting
for an object that is not there (`Waiting`), or an input error (`PodInputError`).
`wants` lists what the pod's queue entry is woken by (queueing hints).

Reads only: no await, no write. Imports the runtime and the pure packages; every decision
pass above (handlers/scheduling.py, ganging.py, completing.py) and the claim lifecycle use it.
"""

from __future__ import annotations

import time

from dralloc.handlers.runtime import Runtime
from dralloc.lifecycle import extended
from dralloc.model import claims as model_claims
from dralloc.model import pods
from dralloc.scheduling import placedpods, placement, queueing, volumes

MAX_RESERVATIONS = 256  # ResourceClaimReservedForMaxSize: status.reservedFor holds at most this many


def owned(pod: pods.Pod, *, scheduler_name: str, gate: str) -> bool:
    """The pod is dralloc's to place: it carries our gate (gate mode), or names our scheduler and has no
    node (scheduler mode); now, or once its other scheduling gates are gone (`held_by`)."""
    if pod.finished() or pod.metadata.deletion_timestamp:
        return False
    if gate in [g.name for g in pod.spec.scheduling_gates]:
        return True
    return pod.spec.scheduler_name == scheduler_name and not pod.spec.node_name


def held_by(pod: pods.Pod, *, gate: str) -> tuple[str, ...]:
    """The scheduling gates that hold a pod of ours back: every gate but ours (Kueue's
    `kueue.x-k8s.io/admission`, any admission controller's). kube-scheduler does not even queue a
    pod with a gate; dralloc places a gate-mode pod once our gate is its only one, a scheduler-mode
    pod once it has none, and allocates nothing for it before."""
    return tuple(g.name for g in pod.spec.scheduling_gates if g.name != gate)


# kube-apiserver's PodScheduled message for a pod created with scheduling gates (reason SchedulingGated).
GATED_MESSAGE = "Scheduling is blocked due to non-empty scheduling gates"


def gated_message(gates: tuple[str, ...], *, gate_mode: bool, gate: str) -> str:
    """What a held pod's PodScheduled condition (reason SchedulingGated) says: kube-apiserver's words, then
    which gates dralloc waits for."""
    names = ", ".join(gates)
    if gate_mode:
        return (f"{GATED_MESSAGE}: dralloc allocates this pod's devices once {gate} is its only scheduling gate; "
                f"waiting for the removal of {names}")
    return f"{GATED_MESSAGE}: dralloc places this pod once it has no scheduling gates; waiting for the removal of {names}"


class Waiting(str):
    """A pod's reason to wait that is an object not there yet (a template, a claim): it waits for its
    claim (`waiting-for-claim` in the queue gauge), it is not unschedulable."""

    __slots__ = ()


def _claim_names(rt: Runtime, pod: pods.Pod) -> list[tuple[str, bool]] | str | None:
    """The claim of every pod.spec.resourceClaims entry (and of its DRA extended resources), each with
    whether the pod names it directly; None while one is still to be created and recorded by the
    lifecycle; a message when it never will be (its template does not exist)."""
    recorded = {s.name: s.resource_claim_name for s in pod.status.resource_claim_statuses}
    namespace = pod.metadata.namespace or "default"
    names: list[tuple[str, bool]] = []
    for entry in pod.spec.resource_claims:
        if entry.resource_claim_name:
            names.append((entry.resource_claim_name, True))
        elif entry.resource_claim_template_name:
            name = recorded.get(entry.name)
            if not name:
                template = entry.resource_claim_template_name
                if rt.cluster.templates.get(namespace, template) is None:
                    problem = rt.cluster.templates.problems.get((namespace, template))
                    if problem is not None:
                        raise PodInputError(f"pod entry {entry.name}: ResourceClaimTemplate {namespace}/{template} "
                                            f"cannot be used: {problem}")
                    return Waiting(f"pod entry {entry.name}: ResourceClaimTemplate {namespace}/{template} not found")
                return _awaiting_controller_manager(rt, pod, entry.name, template)
            names.append((name, False))
    if extended.dra_resources(pod, list(rt.cluster.classes.all())):
        name = extended.recorded_claim_name(pod)
        if not name:
            return None
        names.append((name, False))
    return names


# How long a pod waits, unreported, for kube-controller-manager to create a claim from a template.
CLAIM_CREATION_PATIENCE = 10.0


def _awaiting_controller_manager(rt: Runtime, pod: pods.Pod, entry: str, template: str) -> str | None:
    """None while the claim of a template entry may still come; a message once kube-controller-manager,
    which creates it (--claim-lifecycle), has not done so for CLAIM_CREATION_PATIENCE seconds."""
    if rt.coexistence.does("claim-lifecycle"):
        return None  # our own lifecycle creates it, on its next pass
    memory = rt.memory(pod.metadata.uid or "")
    now = time.monotonic()
    if memory.claims_awaited_since is None:
        memory.claims_awaited_since = now
    if now - memory.claims_awaited_since < CLAIM_CREATION_PATIENCE:
        return None
    return Waiting(f"pod entry {entry}: waiting for kube-controller-manager to create its ResourceClaim from "
            f"ResourceClaimTemplate {pod.metadata.namespace or 'default'}/{template} (its resourceclaim-controller "
            "does that while its leader Lease is held; if that controller is off, run dralloc with "
            "--claim-lifecycle=dralloc)")


class PodInputError(Exception):
    """One of the pod's own objects cannot be used as it is (the message names it and why)."""


def item_for(rt: Runtime, pod: pods.Pod) -> placement.Item | str | None:
    """The placement item for a pod; a string when it cannot be placed as is; None when not ready.

    Raises `PodInputError` when a claim of the pod exists but cannot be read.
    """
    names = _claim_names(rt, pod)
    if names is None or isinstance(names, str):
        return names
    namespace = pod.metadata.namespace or "default"
    to_allocate: list[model_claims.ResourceClaim] = []
    allocated: list[model_claims.ResourceClaim] = []
    for name, direct in names:
        claim = rt.cluster.claims.get(namespace, name)
        if claim is None:
            problem = rt.cluster.claims.problems.get((namespace, name))
            if problem is not None:
                raise PodInputError(f"ResourceClaim {namespace}/{name} cannot be used: {problem}")
            if direct:  # as kube-scheduler: the pod waits for it, and says so
                return Waiting(f"waiting for ResourceClaim {namespace}/{name} to be created")
            return None  # created by the lifecycle, not seen yet
        if claim.metadata.deletion_timestamp:
            return f"ResourceClaim {namespace}/{name} is being deleted"
        if (claim.metadata.uid or "") in rt.ledger:
            return None  # our write for it is not observed yet
        if claim.status.allocation is None:
            to_allocate.append(claim)
        else:
            reserved = claim.status.reserved_for
            if len(reserved) >= MAX_RESERVATIONS and not any(r.uid == pod.metadata.uid for r in reserved):
                return (f"ResourceClaim {namespace}/{name} is in use: reserved for the maximum of "
                        f"{MAX_RESERVATIONS} consumers")
            allocated.append(claim)
    return placement.Item(name=f"{namespace}/{pod.metadata.name}", claims=tuple(to_allocate), pod=pod,
                          allocated=tuple(allocated))



def wants(rt: Runtime, pod: pods.Pod, item: placement.Item | None = None, gang: tuple[str, str] | None = None,
          ) -> queueing.Wants:
    """What may make the pod fit besides a change that frees something for everyone (queueing hints):
    its own object, its claims and their classes, its templates, its PodGroup, and a pod joining a
    node when its required pod affinity or topology spread counts other pods."""
    namespace = pod.metadata.namespace or ""
    recorded = {s.name: s.resource_claim_name for s in pod.status.resource_claim_statuses}
    claim_keys: set[tuple[str, str]] = set()
    template_keys: set[tuple[str, str]] = set()
    for entry in pod.spec.resource_claims:
        name = entry.resource_claim_name or recorded.get(entry.name)
        if name:
            claim_keys.add((namespace, name))
        if entry.resource_claim_template_name:
            template_keys.add((namespace, entry.resource_claim_template_name))
    classes: set[str] = set()
    claims_ = item.claims + item.allocated if item is not None else tuple(
        c for c in (rt.cluster.claims.get(*k) for k in claim_keys) if c is not None)
    for claim in claims_:
        claim_keys.add((claim.metadata.namespace or "", claim.metadata.name))
        for request in claim.spec.devices.requests:
            if request.exactly is not None and request.exactly.device_class_name:
                classes.add(request.exactly.device_class_name)
            classes.update(sub.device_class_name for sub in request.first_available if sub.device_class_name)
    spread = any(c.when_unsatisfiable != "ScheduleAnyway" for c in pod.spec.topology_spread_constraints)
    volume_claims = frozenset((namespace, name) for name in (volumes.claim_name(pod, v) for v in pod.spec.volumes)
                              if name is not None)
    return queueing.Wants(pod=(namespace, pod.metadata.name), claims=frozenset(claim_keys),
                          classes=frozenset(classes), templates=frozenset(template_keys), pod_group=gang,
                          neighbours=spread or placedpods.has_required_affinity(pod), volume_claims=volume_claims)
