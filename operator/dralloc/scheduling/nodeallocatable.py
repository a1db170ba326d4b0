"""Node resources that allocated devices stand for (DRANodeAllocatableResources, alpha in 1.37).

A device may declare `nodeAllocatableResources`: node resources (cpu, memory, hugepages, ...)
that its allocation maps onto (`mapping`: a CPU driver's cores are the node's cpu) or costs on
top (`overhead`: host memory a GPU pins). kube-scheduler 1.37's DynamicResources plugin, with
the gate on, computes after a pod's claims are allocated on a node what they add to the pod:

- per claim with at least one such device: `mapping` sums `consumedCapacity[capacityKey] x
  capacityMultiplier` (or `deviceMultiplier` per device) per resource; `overhead` sums
  `perPod` and `perContainer` per resource;
- the pod's status entry per such claim (`status.nodeAllocatableResourceClaimStatuses`):
  the claim's name, the containers (init containers first) whose `resources.claims` name
  the pod's entry for it, the mapping and the overhead, each sorted by resource name; the
  scheduler writes it before binding, and the kubelet sizes cgroups from it;
- the pod's demand: its own requests plus every mapping, every `perPod` and `perContainer`
  times the number of containers referencing the claim; it must fit what the node has left
  of cpu, memory, ephemeral-storage and hugepages ("Insufficient cpu"); bound pods count
  with their status entries;
- a claim with a mapped device is never shared by two pods (overhead-only claims may be).

Pure: objects in, values out. Quantities keep the format of their first addend, as Go's
`Quantity.Add` does (so the status strings are what kube-scheduler writes).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from dralloc.model import claims as model_claims
from dralloc.model import devices, pods
from dralloc.model.quantities import Quantity

# The node resources kube-scheduler checks against the demand (its nodeFitsResources).
CHECKED = ("cpu", "memory", "ephemeral-storage")
HUGEPAGES_PREFIX = "hugepages-"

DeviceOf = Callable[[str, str, str], "devices.Device | None"]  # (driver, pool, device) -> the node's device


class NodeAllocatableError(Exception):
    """A claim's allocation cannot be accounted (upstream fails the scheduling attempt with it)."""


@dataclasses.dataclass(frozen=True)
class ClaimFootprint:
    """What one allocated claim adds to a pod through its devices' nodeAllocatableResources."""

    claim: str
    mapping: Mapping[str, Quantity]
    per_pod: Mapping[str, Quantity]
    per_container: Mapping[str, Quantity]
    mapped: bool  # some device maps a resource: the claim cannot be shared across pods


def _add(into: dict[str, Quantity], name: str, amount: Quantity) -> None:
    into[name] = into[name] + amount if name in into else amount


def claim_footprint(claim_ref: str, results: Sequence[model_claims.DeviceRequestAllocationResult],
                    device_of: DeviceOf) -> ClaimFootprint | None:
    """The claim's footprint, None when none of its devices declares nodeAllocatableResources.

    `claim_ref` is "namespace/name" (for errors). Raises NodeAllocatableError with upstream's
    words when a mapping names a capacity the allocation did not consume at all.
    """
    found = False
    mapped = False
    mapping: dict[str, Quantity] = {}
    per_pod: dict[str, Quantity] = {}
    per_container: dict[str, Quantity] = {}
    for result in results:
        device = device_of(result.driver, result.pool, result.device)
        if device is None or not device.node_allocatable_resources:
            continue
        found = True
        for name, declared in sorted(device.node_allocatable_resources.items()):
            rule = declared.mapping
            if rule is not None:
                mapped = True
                if rule.capacity_key:
                    if not result.consumed_capacity:
                        raise NodeAllocatableError(
                            f"claim {claim_ref}, device {result.device}: ConsumedCapacity is nil, but Capacity key "
                            f"'{rule.capacity_key}' is set in NodeAllocatableResources for resource {name}")
                    consumed = result.consumed_capacity.get(rule.capacity_key)
                    if consumed is not None:
                        factor = rule.capacity_multiplier.value if rule.capacity_multiplier is not None else 1
                        _add(mapping, name, consumed.with_value(consumed.value * factor))
                elif rule.device_multiplier is not None:
                    _add(mapping, name, rule.device_multiplier)
            cost = declared.overhead
            if cost is not None:
                if cost.per_pod is not None:
                    _add(per_pod, name, cost.per_pod)
                if cost.per_container is not None:
                    _add(per_container, name, cost.per_container)
    if not found:
        return None
    name = claim_ref.split("/", 1)[-1]
    return ClaimFootprint(name, mapping, per_pod, per_container, mapped)


def _entry_claim_names(pod: pods.Pod) -> dict[str, str]:
    """The pod's `resourceClaims` entry names -> the ResourceClaim each stands for."""
    generated = {s.name: s.resource_claim_name for s in pod.status.resource_claim_statuses if s.resource_claim_name}
    names: dict[str, str] = {}
    for entry in pod.spec.resource_claims:
        claim = entry.resource_claim_name or generated.get(entry.name)
        if claim:
            names[entry.name] = claim
    return names


def pod_statuses(pod: pods.Pod, footprints: Iterable[ClaimFootprint]) -> list[dict[str, Any]]:
    """`status.nodeAllocatableResourceClaimStatuses` as kube-scheduler writes it (API JSON)."""
    by_claim = {f.claim: f for f in footprints if f.mapping or f.per_pod or f.per_container}
    entries = _entry_claim_names(pod)
    containers: dict[str, list[str]] = {name: [] for name in by_claim}
    for container in (*pod.spec.init_containers, *pod.spec.containers):
        for reference in container.resources.claims:
            claim = entries.get(reference.name)
            if claim in containers:
                containers[claim].append(container.name)
    statuses: list[dict[str, Any]] = []
    for claim in sorted(by_claim):
        footprint = by_claim[claim]
        status: dict[str, Any] = {"resourceClaimName": claim}
        if containers[claim]:
            status["containers"] = containers[claim]
        if footprint.mapping:
            status["mapping"] = [{"name": n, "quantity": str(q)} for n, q in sorted(footprint.mapping.items())]
        overhead = []
        for name in sorted({*footprint.per_pod, *footprint.per_container}):
            row: dict[str, Any] = {"name": name}
            if name in footprint.per_pod:
                row["perPod"] = str(footprint.per_pod[name])
            if name in footprint.per_container:
                row["perContainer"] = str(footprint.per_container[name])
            overhead.append(row)
        if overhead:
            status["overhead"] = overhead
        statuses.append(status)
    return statuses


def status_demand(statuses: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """What the status entries add to the pod's requests, in nano-units (component-helpers'
    addDRANodeAllocatableClaimResources: mappings, perPod, perContainer x containers)."""
    total: dict[str, int] = {}

    def add(name: str, text: Any, times: int = 1) -> None:
        if text is None or times == 0:
            return
        total[name] = total.get(name, 0) + Quantity.parse(text).nanos * times

    for status in statuses:
        for row in status.get("mapping") or ():
            add(str(row.get("name")), row.get("quantity"))
        referencing = len(status.get("containers") or ())
        for row in status.get("overhead") or ():
            add(str(row.get("name")), row.get("perPod"))
            add(str(row.get("name")), row.get("perContainer"), referencing)
    return total


def insufficient(demand: Mapping[str, int], allocatable: Mapping[str, Quantity],
                 used: Mapping[str, int]) -> list[str]:
    """The resources a pod's whole demand does not fit on the node, in kube-scheduler's words
    and order ("Insufficient cpu", then memory, ephemeral-storage, hugepages-*)."""
    reasons = []
    names = [*CHECKED, *sorted(n for n in demand if n.startswith(HUGEPAGES_PREFIX))]
    for name in names:
        wanted = demand.get(name, 0)
        if wanted <= 0:
            continue
        have = allocatable.get(name)
        capacity = have.nanos if have is not None else 0
        if wanted > capacity - used.get(name, 0):
            reasons.append(f"Insufficient {name}")
    return reasons


def shared_mapped_claim(claim: model_claims.ResourceClaim, pod_uid: str, footprint: ClaimFootprint | None) -> str | None:
    """Why a claim the pod would share cannot be used by it: a mapped device already reserved
    for another pod or pod group; None when it can."""
    if footprint is None or not footprint.mapped:
        return None
    reserved = claim.status.reserved_for if claim.status is not None else ()
    if reserved and not any(r.uid == pod_uid for r in reserved):
        return (f"node allocatable resource claim {claim.metadata.name} has a mapped device and cannot be "
                f"shared across pods")
    return None
