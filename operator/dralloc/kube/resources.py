"""What dralloc talks to: one descriptor per resource type, and the list of calls we make.

A `Resource` is enough to build every URL (`/api/v1/...` for the core group,
`/apis/{group}/{version}/...` otherwise) and to fill in `apiVersion`/`kind` on list
items, which the API server leaves out. DeviceTaintRule is the one type whose served
version differs between clusters (v1alpha3 / v1beta2 today, v1 from Kubernetes 1.37):
`DEVICE_TAINT_RULES` names v1, and the caller replaces the version with
`DEVICE_TAINT_RULES.at_version(await session.served_version(...))`.

`API_CALLS` is the contract with the RBAC manifests: every (group, resource[/sub], verb)
the operator makes through this package. The generic functions in `reading` and
`writing` would accept any resource; this list is what the operator is built to use,
and a test checks the ClusterRole grants each entry.
"""

from __future__ import annotations

import dataclasses
from urllib.parse import quote


@dataclasses.dataclass(frozen=True)
class Resource:
    """A resource type as the REST API addresses it."""

    group: str  # "" for the core group
    version: str
    plural: str
    kind: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def at_version(self, version: str) -> Resource:
        """The same type at another served version (see `Session.served_version`)."""
        return dataclasses.replace(self, version=version)

    def collection_path(self, namespace: str | None = None) -> str:
        """The list/create URL path; for a namespaced type without `namespace`, all namespaces."""
        root = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            return f"{root}/namespaces/{_segment(namespace)}/{self.plural}"
        return f"{root}/{self.plural}"

    def object_path(self, name: str, namespace: str | None = None, subresource: str | None = None) -> str:
        if self.namespaced and not namespace:
            raise ValueError(f"{self.plural} are namespaced: a namespace is needed for {name!r}")
        if not self.namespaced and namespace:
            raise ValueError(f"{self.plural} are cluster-scoped: no namespace for {name!r}")
        if not name:
            raise ValueError(f"an object name is needed for {self.plural}")
        path = f"{self.collection_path(namespace)}/{_segment(name)}"
        return f"{path}/{subresource}" if subresource else path


def _segment(value: str) -> str:
    # Names are DNS labels in practice; quoting keeps a bad one from changing the path.
    return quote(value, safe="")


CORE, RESOURCE, DRALLOC = "", "resource.k8s.io", "dralloc.io"

PODS = Resource(CORE, "v1", "pods", "Pod", True)
NODES = Resource(CORE, "v1", "nodes", "Node", False)
NAMESPACES = Resource(CORE, "v1", "namespaces", "Namespace", False)
EVENTS = Resource("events.k8s.io", "v1", "events", "Event", True)
LEASES = Resource("coordination.k8s.io", "v1", "leases", "Lease", True)
RESOURCE_CLAIMS = Resource(RESOURCE, "v1", "resourceclaims", "ResourceClaim", True)
RESOURCE_CLAIM_TEMPLATES = Resource(RESOURCE, "v1", "resourceclaimtemplates", "ResourceClaimTemplate", True)
RESOURCE_SLICES = Resource(RESOURCE, "v1", "resourceslices", "ResourceSlice", False)
DEVICE_CLASSES = Resource(RESOURCE, "v1", "deviceclasses", "DeviceClass", False)
# Served as v1alpha3/v1beta2 before Kubernetes 1.37: use .at_version(served_version(...)).
DEVICE_TAINT_RULES = Resource(RESOURCE, "v1", "devicetaintrules", "DeviceTaintRule", False)
# Gang scheduling: scheduling.k8s.io/v1beta1 in 1.37 (v1alpha2 in 1.36, another shape), served only
# with GenericWorkload on: use .at_version(served_version(SCHEDULING, "podgroups")), None = not served.
# PodGroups are listed and watched (handlers/watching.py, gangs); Workloads are not read: a PodGroup
# carries everything gang placement needs (copied from its Workload's template), so RBAC grants
# nothing for them.
SCHEDULING = "scheduling.k8s.io"
WORKLOADS = Resource(SCHEDULING, "v1beta1", "workloads", "Workload", True)
POD_GROUPS = Resource(SCHEDULING, "v1beta1", "podgroups", "PodGroup", True)
# Storage, read for kube-scheduler's volume filters (scheduling/volumes.py).
STORAGE = "storage.k8s.io"
PERSISTENT_VOLUME_CLAIMS = Resource(CORE, "v1", "persistentvolumeclaims", "PersistentVolumeClaim", True)
PERSISTENT_VOLUMES = Resource(CORE, "v1", "persistentvolumes", "PersistentVolume", False)
STORAGE_CLASSES = Resource(STORAGE, "v1", "storageclasses", "StorageClass", False)
CSI_NODES = Resource(STORAGE, "v1", "csinodes", "CSINode", False)
CSI_DRIVERS = Resource(STORAGE, "v1", "csidrivers", "CSIDriver", False)
CSI_STORAGE_CAPACITIES = Resource(STORAGE, "v1", "csistoragecapacities", "CSIStorageCapacity", True)
# PodDisruptionBudgets, read by priority preemption (scheduling/preemption.py).
POD_DISRUPTION_BUDGETS = Resource("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True)
ALLOCATION_POLICIES = Resource(DRALLOC, "v1alpha1", "allocationpolicies", "AllocationPolicy", False)
DEVICE_HEALTH_POLICIES = Resource(DRALLOC, "v1alpha1", "devicehealthpolicies", "DeviceHealthPolicy", False)

# Every resource the operator watches or lists (the leader Lease, only read by name and written, is apart).
ALL: tuple[Resource, ...] = (
    PODS, NODES, NAMESPACES, EVENTS, RESOURCE_CLAIMS, RESOURCE_CLAIM_TEMPLATES,
    RESOURCE_SLICES, DEVICE_CLASSES, DEVICE_TAINT_RULES, ALLOCATION_POLICIES, DEVICE_HEALTH_POLICIES,
    POD_GROUPS, PERSISTENT_VOLUME_CLAIMS, PERSISTENT_VOLUMES, STORAGE_CLASSES, CSI_NODES, CSI_DRIVERS,
    CSI_STORAGE_CAPACITIES, POD_DISRUPTION_BUDGETS,
)

_READ = ("get", "list", "watch")


def _calls() -> tuple[tuple[str, str, str], ...]:
    calls: list[tuple[str, str, str]] = []

    def add(resource: Resource, name: str, *verbs: str) -> None:
        calls.extend((resource.group, name, verb) for verb in verbs)

    # Everything we watch or look up (state is fed from these; events are never read).
    for resource in ALL:
        if resource is not EVENTS:
            add(resource, resource.plural, *_READ)
    # Claims: created from templates, deleted when their pod is done, finalizers and
    # annotations by merge/JSON patch; allocation + reservedFor by status replace.
    add(RESOURCE_CLAIMS, "resourceclaims", "create", "delete", "patch", "update")
    add(RESOURCE_CLAIMS, "resourceclaims/status", "patch", "update")
    # Not a request: kube-apiserver (1.36+, DRAResourceClaimGranularStatusAuthorization, on by
    # default) checks this permission on any status write that changes allocation or reservedFor.
    add(RESOURCE_CLAIMS, "resourceclaims/binding", "update")
    # Pods: gate removal + nodeSelector (patch), resourceClaimStatuses (status patch),
    # binding in scheduler mode, eviction/deletion for NoExecute device taints.
    add(PODS, "pods", "patch", "delete")
    add(PODS, "pods/status", "patch")
    add(PODS, "pods/binding", "create")
    add(PODS, "pods/eviction", "create")
    # Volumes (scheduler mode, kube-scheduler's VolumeBinding): a PV's claimRef, a claim's selected-node.
    add(PERSISTENT_VOLUMES, "persistentvolumes", "patch")
    add(PERSISTENT_VOLUME_CLAIMS, "persistentvolumeclaims", "patch")
    # Gangs: the binds of a gang recorded on its PodGroup (an annotation) before the first one;
    # the claims generated from its templates recorded in its status (status.resourceClaimStatuses).
    add(POD_GROUPS, "podgroups", "patch")
    add(POD_GROUPS, "podgroups/status", "patch")
    # Health: DeviceTaintRules are ours to write, with eviction progress in status.
    add(DEVICE_TAINT_RULES, "devicetaintrules", "create", "delete", "patch", "update")
    add(DEVICE_TAINT_RULES, "devicetaintrules/status", "patch", "update")
    # Our CRDs: status conditions (and kopf-style annotations/finalizers by patch); the
    # `default` AllocationPolicy is created at startup when missing.
    add(ALLOCATION_POLICIES, ALLOCATION_POLICIES.plural, "create")
    for resource in (ALLOCATION_POLICIES, DEVICE_HEALTH_POLICIES):
        add(resource, resource.plural, "patch")
        add(resource, f"{resource.plural}/status", "patch", "update")
    add(EVENTS, "events", "create", "patch")
    # Leader election: the Lease is read, created once, and renewed by replace; and
    # kube-controller-manager's Lease is read (handlers/coexisting.py).
    add(LEASES, "leases", "get", "create", "update")
    return tuple(calls)


API_CALLS: tuple[tuple[str, str, str], ...] = _calls()
