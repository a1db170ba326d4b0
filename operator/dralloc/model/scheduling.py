"""scheduling.k8s.io Workload and PodGroup: gang scheduling (KEP-4671) and PodGroup claims (KEP-5729).

Served as `scheduling.k8s.io/v1beta1` by Kubernetes 1.37 (GenericWorkload, beta, off by
default) and as `v1alpha2` by 1.36. One model reads both: where they differ, each field
says which version has it (v1alpha2's `podGroupTemplateRef` and string `disruptionMode`
became v1beta1's `workloadRef` and `{single: {}}` / `{all: {}}`). Fields without a note are
in both. Pods join a PodGroup through `spec.schedulingGroup.podGroupName` (core/v1, 1.36+;
`model/pods.py`). A claim the PodGroup lists (`spec.resourceClaims`, DRAWorkloadResourceClaims)
is reserved for the PodGroup (`reservedFor: {apiGroup: scheduling.k8s.io, resource:
podgroups, name, uid}`), not for its pods; a member pod uses it by listing an identical
entry (same name, same resourceClaimName / resourceClaimTemplateName) in its own
`spec.resourceClaims`.
"""

from pydantic import Field

from dralloc.model.base import ApiModel, Object

GROUP = "scheduling.k8s.io"


class TypedLocalObjectReference(ApiModel):
    """Workload.spec.controllerRef: the Job, JobSet, ... that owns the Workload."""

    api_group: str | None = None
    kind: str = ""
    name: str = ""


class GangSchedulingPolicy(ApiModel):
    min_count: int = 0  # how many pods must be schedulable together (>= 1; the only mutable policy field)


class BasicSchedulingPolicy(ApiModel):
    """Empty: the pods are scheduled one by one."""


class PodGroupSchedulingPolicy(ApiModel):
    """Exactly one of basic and gang (chosen at creation, never switched)."""

    basic: BasicSchedulingPolicy | None = None
    gang: GangSchedulingPolicy | None = None


class TopologyConstraint(ApiModel):
    key: str = ""  # a node label key: all the group's pods land on nodes sharing one value of it


class PodGroupSchedulingConstraints(ApiModel):
    """TopologyAwareWorkloadScheduling (alpha in 1.36 and 1.37): at most one constraint."""

    topology: tuple[TopologyConstraint, ...] = ()


class PodGroupResourceClaim(ApiModel):
    """A claim of the whole group: exactly one of resourceClaimName and resourceClaimTemplateName."""

    name: str = ""  # a DNS label, unique in the group; member pods list a claim of the same name
    resource_claim_name: str | None = None
    resource_claim_template_name: str | None = None


class DisruptionMode(ApiModel):
    """v1beta1: exactly one of single and all (each an empty object). v1alpha2 has a string instead."""

    single: dict[str, object] | None = None
    all: dict[str, object] | None = None


class PodGroupTemplate(ApiModel):
    """One entry of Workload.spec.podGroupTemplates (at most 8; none added or removed after creation)."""

    name: str = ""
    scheduling_policy: PodGroupSchedulingPolicy = Field(default_factory=PodGroupSchedulingPolicy)
    scheduling_constraints: PodGroupSchedulingConstraints | None = None
    resource_claims: tuple[PodGroupResourceClaim, ...] = ()  # at most 4
    disruption_mode: DisruptionMode | str | None = None  # v1beta1 object; v1alpha2 "Pod" / "PodGroup"
    priority_class_name: str | None = None
    priority: int | None = None
    preemption_policy: str | None = None  # v1beta1 only (PodGroupPreemptionPolicy, alpha)


class WorkloadSpec(ApiModel):
    controller_ref: TypedLocalObjectReference | None = None
    pod_group_templates: tuple[PodGroupTemplate, ...] = ()
    composite_pod_group_templates: tuple[dict[str, object], ...] = ()  # v1beta1 only (CompositePodGroup, alpha)


class Workload(Object):
    """No status in either version."""

    spec: WorkloadSpec = Field(default_factory=WorkloadSpec)


class WorkloadReference(ApiModel):
    """v1beta1 PodGroup.spec.workloadRef."""

    workload_name: str = ""
    template_name: str = ""


class WorkloadPodGroupTemplateReference(ApiModel):
    """v1alpha2 PodGroup.spec.podGroupTemplateRef.workload."""

    workload_name: str = ""
    pod_group_template_name: str = ""


class PodGroupTemplateReference(ApiModel):
    """v1alpha2 PodGroup.spec.podGroupTemplateRef."""

    workload: WorkloadPodGroupTemplateReference | None = None


class PodGroupSpec(ApiModel):
    """Copied from a template by the workload's controller; all but gang.minCount is immutable."""

    workload_ref: WorkloadReference | None = None  # v1beta1
    pod_group_template_ref: PodGroupTemplateReference | None = None  # v1alpha2
    parent_composite_pod_group_name: str | None = None  # v1beta1 only (CompositePodGroup, alpha)
    scheduling_policy: PodGroupSchedulingPolicy = Field(default_factory=PodGroupSchedulingPolicy)
    scheduling_constraints: PodGroupSchedulingConstraints | None = None
    resource_claims: tuple[PodGroupResourceClaim, ...] = ()  # at most 4
    disruption_mode: DisruptionMode | str | None = None  # v1beta1 defaults to {single: {}}; v1alpha2 a string
    priority_class_name: str | None = None
    priority: int | None = None  # set by the Priority admission plugin (0 without a class)
    preemption_policy: str | None = None  # v1beta1 only (PodGroupPreemptionPolicy, alpha)

    def min_count(self) -> int:
        """How many member pods must fit at once: gang.minCount, 1 for basic scheduling."""
        gang = self.scheduling_policy.gang
        return gang.min_count if gang is not None else 1

    def disrupted_whole(self) -> bool:
        """Whether the group is disrupted as one (v1beta1 `disruptionMode: {all: {}}`, v1alpha2 "PodGroup"):
        a preemption then takes every member or none."""
        mode = self.disruption_mode
        if isinstance(mode, DisruptionMode):
            return mode.all is not None
        return mode == "PodGroup"

    def topology_key(self) -> str | None:
        """The node label all members must share a value of, if any."""
        constraints = self.scheduling_constraints
        return constraints.topology[0].key if constraints is not None and constraints.topology else None


class Condition(ApiModel):
    """metav1.Condition. Types: PodGroupInitiallyScheduled (v1beta1; v1alpha2 PodGroupScheduled), DisruptionTarget."""

    type: str = ""
    status: str = ""
    reason: str | None = None
    message: str | None = None
    last_transition_time: str | None = None
    observed_generation: int | None = None


class PodGroupResourceClaimStatus(ApiModel):
    """The claim generated from a template entry of spec.resourceClaims (no name: none was needed)."""

    name: str = ""
    resource_claim_name: str | None = None


class PodGroupStatus(ApiModel):
    conditions: tuple[Condition, ...] = ()
    resource_claim_statuses: tuple[PodGroupResourceClaimStatus, ...] = ()


class PodGroup(Object):
    spec: PodGroupSpec = Field(default_factory=PodGroupSpec)
    status: PodGroupStatus = Field(default_factory=PodGroupStatus)

    def consumer_reference(self) -> dict[str, str]:
        """The ResourceClaim.status.reservedFor entry of a claim reserved for this group."""
        return {"apiGroup": GROUP, "resource": "podgroups", "name": self.metadata.name, "uid": self.metadata.uid or ""}
