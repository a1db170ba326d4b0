"""Core v1 Pod subset: what placement and the claim lifecycle read."""

from typing import Any

from pydantic import Field

from dralloc.model.base import ApiModel, Object
from dralloc.model.nodes import NodeSelector, NodeSelectorTerm
from dralloc.model.quantities import Quantity


class Toleration(ApiModel):
    key: str | None = None
    operator: str | None = None
    value: str | None = None
    effect: str | None = None
    toleration_seconds: int | None = None


class PreferredSchedulingTerm(ApiModel):
    weight: int = 0
    preference: NodeSelectorTerm = Field(default_factory=NodeSelectorTerm)


class NodeAffinity(ApiModel):
    required_during_scheduling_ignored_during_execution: NodeSelector | None = None
    preferred_during_scheduling_ignored_during_execution: tuple[PreferredSchedulingTerm, ...] = ()


class Affinity(ApiModel):
    node_affinity: NodeAffinity | None = None


class ResourceClaimReference(ApiModel):
    name: str = ""


class ResourceRequirements(ApiModel):
    requests: dict[str, Quantity] = Field(default_factory=dict)
    limits: dict[str, Quantity] = Field(default_factory=dict)
    claims: tuple[ResourceClaimReference, ...] = ()


class Container(ApiModel):
    name: str = ""
    resources: ResourceRequirements = Field(default_factory=ResourceRequirements)


class PodResourceClaim(ApiModel):
    name: str
    resource_claim_name: str | None = None
    resource_claim_template_name: str | None = None


class SchedulingGate(ApiModel):
    name: str


class PodSchedulingGroup(ApiModel):
    """core/v1 PodSpec.schedulingGroup (1.36+, GenericWorkload): the PodGroup the pod belongs to."""

    pod_group_name: str | None = None


class PodSpec(ApiModel):
    node_name: str | None = None
    node_selector: dict[str, str] = Field(default_factory=dict)
    affinity: Affinity | None = None
    tolerations: tuple[Toleration, ...] = ()
    scheduler_name: str | None = None
    scheduling_gates: tuple[SchedulingGate, ...] = ()
    resource_claims: tuple[PodResourceClaim, ...] = ()
    containers: tuple[Container, ...] = ()
    init_containers: tuple[Container, ...] = ()
    overhead: dict[str, Quantity] = Field(default_factory=dict)
    priority: int | None = None
    scheduling_group: PodSchedulingGroup | None = None


class PodResourceClaimStatus(ApiModel):
    name: str
    resource_claim_name: str | None = None


class PodCondition(ApiModel):
    type: str
    status: str
    reason: str | None = None
    message: str | None = None


class PodStatus(ApiModel):
    phase: str | None = None
    conditions: tuple[PodCondition, ...] = ()
    resource_claim_statuses: tuple[PodResourceClaimStatus, ...] = ()
    nominated_node_name: str | None = None
    # 1.37, DRANodeAllocatableResources: what the scheduler computed from the pod's claims (API JSON).
    node_allocatable_resource_claim_statuses: tuple[dict[str, Any], ...] = ()


class Pod(Object):
    spec: PodSpec = Field(default_factory=PodSpec)
    status: PodStatus = Field(default_factory=PodStatus)

    def finished(self) -> bool:
        return self.status.phase in ("Succeeded", "Failed")
