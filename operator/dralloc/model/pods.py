"""Core v1 Pod subset: what placement and the claim lifecycle read.

Besides devices and resources, placement reads what kube-scheduler's other filters read:
pod (anti-)affinity terms, topology spread constraints, host ports and volumes. Volume
sources other than persistentVolumeClaim and ephemeral are kept as unknown fields (the
model keeps what it does not name) and read from there by the volume filters.
"""

from typing import Any

from pydantic import Field

from dralloc.model.base import ApiModel, Object
from dralloc.model.nodes import NodeSelector, NodeSelectorTerm
from dralloc.model.quantities import Quantity

# Gate mode: the node dralloc pinned a pod to, written with the pin (handlers/committing.py), so that a
# later process, and `kubectl dralloc why`, still know which ungated pods dralloc pinned.
PINNED_NODE_ANNOTATION = "dralloc.io/pinned-node"


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


class LabelSelectorRequirement(ApiModel):
    key: str
    operator: str
    values: tuple[str, ...] = ()


class LabelSelector(ApiModel):
    """meta/v1 LabelSelector: an absent selector (None where one is optional) matches nothing,
    an empty one everything (LabelSelectorAsSelector)."""

    match_labels: dict[str, str] = Field(default_factory=dict)
    match_expressions: tuple[LabelSelectorRequirement, ...] = ()


class PodAffinityTerm(ApiModel):
    label_selector: LabelSelector | None = None
    namespaces: tuple[str, ...] = ()
    topology_key: str = ""
    namespace_selector: LabelSelector | None = None
    match_label_keys: tuple[str, ...] = ()
    mismatch_label_keys: tuple[str, ...] = ()


class WeightedPodAffinityTerm(ApiModel):
    weight: int = 0
    pod_affinity_term: PodAffinityTerm = Field(default_factory=PodAffinityTerm)


class PodAffinity(ApiModel):
    required_during_scheduling_ignored_during_execution: tuple[PodAffinityTerm, ...] = ()
    preferred_during_scheduling_ignored_during_execution: tuple[WeightedPodAffinityTerm, ...] = ()


class Affinity(ApiModel):
    node_affinity: NodeAffinity | None = None
    pod_affinity: PodAffinity | None = None
    pod_anti_affinity: PodAffinity | None = None  # the same shape as pod_affinity (core v1 PodAntiAffinity)


class TopologySpreadConstraint(ApiModel):
    max_skew: int | None = None  # required by the API (at least 1)
    topology_key: str = ""
    when_unsatisfiable: str | None = None  # required by the API: DoNotSchedule or ScheduleAnyway
    label_selector: LabelSelector | None = None
    min_domains: int | None = None
    node_affinity_policy: str | None = None  # Honor (the default) or Ignore
    node_taints_policy: str | None = None  # Ignore (the default) or Honor
    match_label_keys: tuple[str, ...] = ()


class ContainerPort(ApiModel):
    name: str | None = None
    container_port: int = 0
    host_port: int | None = None
    protocol: str | None = None  # TCP when absent (the API's default)
    host_ip: str | None = Field(default=None, alias="hostIP")  # not to_camel's hostIp


class PersistentVolumeClaimVolumeSource(ApiModel):
    claim_name: str = ""
    read_only: bool | None = None


class Volume(ApiModel):
    """A pod volume; sources other than these two stay unknown fields (`model_extra`)."""

    name: str = ""
    persistent_volume_claim: PersistentVolumeClaimVolumeSource | None = None
    ephemeral: dict[str, Any] | None = None  # a generic ephemeral volume: its PVC is <pod>-<volume>


class ResourceClaimReference(ApiModel):
    name: str = ""


class ResourceRequirements(ApiModel):
    requests: dict[str, Quantity] = Field(default_factory=dict)
    limits: dict[str, Quantity] = Field(default_factory=dict)
    claims: tuple[ResourceClaimReference, ...] = ()


class Container(ApiModel):
    name: str = ""
    resources: ResourceRequirements = Field(default_factory=ResourceRequirements)
    ports: tuple[ContainerPort, ...] = ()


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
    preemption_policy: str | None = None  # PreemptLowerPriority (the default) or Never
    scheduling_group: PodSchedulingGroup | None = None
    topology_spread_constraints: tuple[TopologySpreadConstraint, ...] = ()
    volumes: tuple[Volume, ...] = ()
    host_network: bool | None = None


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
    start_time: str | None = None  # RFC 3339; set by the kubelet when it starts the pod
    # 1.37, DRANodeAllocatableResources: what the scheduler computed from the pod's claims (API JSON).
    node_allocatable_resource_claim_statuses: tuple[dict[str, Any], ...] = ()


class Pod(Object):
    spec: PodSpec = Field(default_factory=PodSpec)
    status: PodStatus = Field(default_factory=PodStatus)

    def finished(self) -> bool:
        return self.status.phase in ("Succeeded", "Failed")
