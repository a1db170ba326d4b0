"""Core v1 and storage.k8s.io/v1 subset: what kube-scheduler's volume filters read.

PersistentVolumeClaim and PersistentVolume (core v1), StorageClass, CSINode, CSIDriver and
CSIStorageCapacity (storage.k8s.io/v1). Only the fields the filters read are named; the rest (a PV's in-tree
sources such as `gcePersistentDisk` or `awsElasticBlockStore`, a class's `parameters`, a
driver's `attachRequired`, ...) are kept as unknown fields, so an object read and written
back loses nothing.

Where the API server defaults a field (a StorageClass's `volumeBindingMode`, a claim's or
volume's `volumeMode`), the model keeps what it read (None when absent) and a method gives
the defaulted value, so objects written by hand (`dralloc simulate`) read as served ones.
"""

from pydantic import Field

from dralloc.model.base import ApiModel, Object
from dralloc.model.nodes import NodeSelector
from dralloc.model.pods import LabelSelector
from dralloc.model.quantities import Quantity

# PVC annotations the volume binder reads and writes.
SELECTED_NODE = "volume.kubernetes.io/selected-node"  # the node the scheduler chose for provisioning
BIND_COMPLETED = "pv.kubernetes.io/bind-completed"  # the PV controller finished binding the claim
BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
BETA_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"  # read before spec.storageClassName
# CSINode annotation: the in-tree plugins the node's kubelet has migrated to CSI (comma separated).
MIGRATED_PLUGINS = "storage.alpha.kubernetes.io/migrated-plugins"

# Access modes, volume binding modes, phases.
READ_WRITE_ONCE_POD = "ReadWriteOncePod"
IMMEDIATE = "Immediate"
WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"
FILESYSTEM = "Filesystem"
CLAIM_LOST = "Lost"
VOLUME_AVAILABLE = "Available"
NO_PROVISIONER = "kubernetes.io/no-provisioner"  # a class whose volumes are only pre-provisioned


class VolumeResourceRequirements(ApiModel):
    requests: dict[str, Quantity] = Field(default_factory=dict)
    limits: dict[str, Quantity] = Field(default_factory=dict)


class PersistentVolumeClaimSpec(ApiModel):
    access_modes: tuple[str, ...] = ()
    selector: LabelSelector | None = None  # which pre-provisioned volumes may bind (None: any)
    resources: VolumeResourceRequirements = Field(default_factory=VolumeResourceRequirements)
    volume_name: str | None = None  # the PV bound (or pre-bound) to the claim
    storage_class_name: str | None = None
    volume_mode: str | None = None  # Filesystem when absent (the API's default)


class PersistentVolumeClaimStatus(ApiModel):
    phase: str | None = None  # Pending, Bound or Lost
    access_modes: tuple[str, ...] = ()
    capacity: dict[str, Quantity] = Field(default_factory=dict)


class PersistentVolumeClaim(Object):
    spec: PersistentVolumeClaimSpec = Field(default_factory=PersistentVolumeClaimSpec)
    status: PersistentVolumeClaimStatus = Field(default_factory=PersistentVolumeClaimStatus)

    def class_name(self) -> str:
        """The claim's StorageClass: the beta annotation first, then `spec.storageClassName` ("" for none)."""
        if BETA_STORAGE_CLASS in self.metadata.annotations:
            return self.metadata.annotations[BETA_STORAGE_CLASS]
        return self.spec.storage_class_name or ""

    def volume_mode(self) -> str:
        return self.spec.volume_mode or FILESYSTEM

    def requested_storage(self) -> Quantity | None:
        return self.spec.resources.requests.get("storage")

    def fully_bound(self) -> bool:
        """Bound to a PV and the PV controller done with it (`volumeName` and the bind-completed annotation)."""
        return bool(self.spec.volume_name) and BIND_COMPLETED in self.metadata.annotations


class ObjectReference(ApiModel):
    """core v1 ObjectReference: a PV's `claimRef`."""

    api_version: str | None = None
    kind: str | None = None
    namespace: str | None = None
    name: str | None = None
    uid: str | None = None
    resource_version: str | None = None


class VolumeNodeAffinity(ApiModel):
    required: NodeSelector | None = None


class CSIPersistentVolumeSource(ApiModel):
    """A CSI volume: its driver and the driver's handle for it (other fields kept as unknown ones)."""

    driver: str = ""
    volume_handle: str = ""
    read_only: bool | None = None


class PersistentVolumeSpec(ApiModel):
    """In-tree sources (`gcePersistentDisk`, `awsElasticBlockStore`, `rbd`, `iscsi`, ...) stay unknown fields."""

    capacity: dict[str, Quantity] = Field(default_factory=dict)
    access_modes: tuple[str, ...] = ()
    claim_ref: ObjectReference | None = None
    storage_class_name: str = ""
    node_affinity: VolumeNodeAffinity | None = None
    volume_mode: str | None = None  # Filesystem when absent (the API's default)
    csi: CSIPersistentVolumeSource | None = None
    persistent_volume_reclaim_policy: str | None = None


class PersistentVolumeStatus(ApiModel):
    phase: str | None = None  # Pending, Available, Bound, Released or Failed


class PersistentVolume(Object):
    spec: PersistentVolumeSpec = Field(default_factory=PersistentVolumeSpec)
    status: PersistentVolumeStatus = Field(default_factory=PersistentVolumeStatus)

    def class_name(self) -> str:
        """The volume's StorageClass: the beta annotation first, then `spec.storageClassName`."""
        if BETA_STORAGE_CLASS in self.metadata.annotations:
            return self.metadata.annotations[BETA_STORAGE_CLASS]
        return self.spec.storage_class_name

    def volume_mode(self) -> str:
        return self.spec.volume_mode or FILESYSTEM

    def capacity_storage(self) -> Quantity | None:
        return self.spec.capacity.get("storage")


class TopologySelectorLabelRequirement(ApiModel):
    key: str = ""
    values: tuple[str, ...] = ()


class TopologySelectorTerm(ApiModel):
    match_label_expressions: tuple[TopologySelectorLabelRequirement, ...] = ()


class StorageClass(Object):
    """storage.k8s.io/v1 StorageClass (no spec: its fields are top-level)."""

    provisioner: str = ""
    parameters: dict[str, str] = Field(default_factory=dict)
    reclaim_policy: str | None = None
    volume_binding_mode: str | None = None  # Immediate when absent (the API's default)
    allowed_topologies: tuple[TopologySelectorTerm, ...] = ()

    def binding_mode(self) -> str:
        return self.volume_binding_mode or IMMEDIATE


class VolumeNodeResources(ApiModel):
    count: int | None = None  # how many of the driver's volumes the node can use (None: no limit)


class CSINodeDriver(ApiModel):
    name: str = ""
    node_id: str = Field(default="", alias="nodeID")
    topology_keys: tuple[str, ...] = ()
    allocatable: VolumeNodeResources | None = None


class CSINodeSpec(ApiModel):
    drivers: tuple[CSINodeDriver, ...] = ()


class CSINode(Object):
    """storage.k8s.io/v1 CSINode: the CSI drivers on a node (named as the node) and their volume limits."""

    spec: CSINodeSpec = Field(default_factory=CSINodeSpec)

    def migrated_plugins(self) -> frozenset[str]:
        value = self.metadata.annotations.get(MIGRATED_PLUGINS, "")
        return frozenset(value.split(",")) if value else frozenset()


class CSIDriverSpec(ApiModel):
    attach_required: bool | None = None
    storage_capacity: bool | None = None
    # 1.35+, VolumeLimitScaling: pods using the driver wait for a node that lists it in its CSINode.
    prevent_pod_scheduling_if_missing: bool | None = None


class CSIDriver(Object):
    """storage.k8s.io/v1 CSIDriver (named as the driver)."""

    spec: CSIDriverSpec = Field(default_factory=CSIDriverSpec)


class CSIStorageCapacity(Object):
    """storage.k8s.io/v1 CSIStorageCapacity (namespaced; no spec: its fields are top-level): how much a
    StorageClass's provisioner can still provision for the nodes its `nodeTopology` selects."""

    storage_class_name: str = ""
    node_topology: LabelSelector | None = None  # None: no node can reach it
    capacity: Quantity | None = None
    maximum_volume_size: Quantity | None = None  # when set, the size one new volume may have
