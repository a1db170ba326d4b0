"""kube-scheduler's volume filters: VolumeRestrictions, NodeVolumeLimits, VolumeBinding, VolumeZone.

What the default profile (1.37) checks of a pod's volumes, with its semantics and reason
strings, as two steps like upstream's PreFilter and Filter:

`prepare(pod, storage, placed)` reads the pod's claims once. None: the pod has no volume any
filter reads (no PVC, no generic ephemeral volume, no in-tree disk the restrictions check).
A string: the pod cannot go anywhere until the cluster changes (a PreFilter's
UnschedulableAndUnresolvable status; the first, in the profile's plugin order):

- VolumeRestrictions: a `persistentVolumeClaim` volume's claim missing
  (`persistentvolumeclaim "x" not found`);
- VolumeBinding (`podHasPVCs`, `GetPodVolumeClaims`): a generic ephemeral volume's claim
  (`<pod>-<volume>`) not created yet, a claim `Lost` or being deleted, an ephemeral claim the
  pod does not control, or a claim neither bound nor WaitForFirstConsumer
  (`pod has unbound immediate PersistentVolumeClaims`; a claim with `volumeName` but without
  the bind-completed annotation is one);
- VolumeZone: a bound claim's PV missing (`persistentvolume "x" not found`).

Else a `Check`, whose `reject(node)` runs the Filters in the profile's order:

- VolumeRestrictions: the pod's in-tree GCE PD, AWS EBS, iSCSI or RBD volume also used by a
  pod on the node (same PD / volume ID / IQN / monitors+pool+image; read-only everywhere is
  fine except for EBS): `node(s) had no available disk`. A ReadWriteOncePod claim of the pod
  used by any pod anywhere (bound or placed): `node(s) unavailable due to PersistentVolumeClaim
  with ReadWriteOncePod access mode already in-use by another pod` (every node, as upstream:
  preemption may help).
- NodeVolumeLimits (CSI): the pod's volumes as `<driver>/<volumeHandle>` (a bound claim's PV
  `spec.csi`; an unbound one: its class's provisioner and a handle of its own), the node's
  pods' volumes likewise, each unique volume counted once per driver; over the node's
  CSINode `allocatable.count`: `node(s) exceed max volume count`. With VolumeLimitScaling
  (beta, on in 1.37): a driver whose CSIDriver sets `preventPodSchedulingIfMissing` and that
  the node's CSINode does not list: `<driver> CSI driver is not installed on the node`.
- VolumeBinding (`FindPodVolumes`): a bound claim's PV node affinity against the node's
  labels (`node(s) didn't match PersistentVolume's node affinity`; PV gone: `node(s)
  unavailable due to one or more pvc(s) bound to non-existent pv(s)`); WaitForFirstConsumer claims: one already given another node
  (`volume.kubernetes.io/selected-node`) fails fast, the others take, smallest request first,
  the smallest Available PV of their class that fits (pre-bound to the claim first; capacity,
  volume mode, selector, access modes, node affinity; no two claims one PV); a claim without
  one is provisioned when its class has a provisioner (not `kubernetes.io/no-provisioner`)
  and its `allowedTopologies` select the node: else `node(s) didn't find available
  persistent volumes to bind`; and, when the class's CSI driver publishes storage capacity
  (CSIDriver `storageCapacity: true`), a CSIStorageCapacity of the class whose nodeTopology
  selects the node has room for the claim's request (maximumVolumeSize when set, else
  capacity): else `node(s) did not have enough free storage`. Several reasons are joined
  with ", ".
- VolumeZone: a bound PV's zone/region labels (`topology.kubernetes.io/*` and the legacy
  `failure-domain.beta.kubernetes.io/*`, `__`-separated zone sets; a beta key falls back to
  the node's GA label) against a node that has any of them: `node(s) had no available
  volume zone`.

`binding(node)` / `plan(node)`: what placing the pod on the node asks of the writer
(upstream's Reserve/PreBind): the claims to be given the node (selected-node annotation) and
the pre-provisioned PVs to be bound to claims; `assume` applies a plan to a `Storage` for the
rest of a placement pass, as upstream's assume cache does.

Not done (gaps, each a documented difference):

- In-tree → CSI migration (csi-translation-lib): NodeVolumeLimits counts no in-tree PV,
  inline in-tree volume or in-tree provisioner (upstream counts them on a node whose CSINode
  lists the plugin as migrated); VolumeBinding reads an in-tree PV's node affinity as written,
  not as translated.
- NodeVolumeLimits' VolumeAttachment count (volumes attached to the node with no pod there
  any more): `Storage` has no VolumeAttachments.
- VolumeBinding's scores (StorageCapacityScoring): not scored.
- Upstream picks among equal candidate PVs in its cache's order; here PVs are taken by name.
  A claim two of the pod's volumes use is one claim here (upstream would look for two PVs).
- Upstream's error statuses: an existing pod's ephemeral claim it does not control makes
  NodeVolumeLimits fail the pod's whole cycle (here: not counted); a StorageClass without
  `volumeBindingMode` is an error (here: Immediate, the API's default).

Pure: imports the model, `dralloc.allocation.nodeaffinity` and this package's label selectors.
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from dralloc.allocation import nodeaffinity
from dralloc.model import nodes, pods
from dralloc.model import storage as api
from dralloc.scheduling import labels as selectors

if TYPE_CHECKING:
    from dralloc.scheduling import placedpods

# Reasons, as upstream words them.
DISK_CONFLICT = "node(s) had no available disk"
READ_WRITE_ONCE_POD_CONFLICT = ("node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access "
                                "mode already in-use by another pod")
MAX_VOLUME_COUNT = "node(s) exceed max volume count"
NODE_CONFLICT = "node(s) didn't match PersistentVolume's node affinity"
BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
ZONE_CONFLICT = "node(s) had no available volume zone"
UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"


def claim_not_found(name: str) -> str:
    return f'persistentvolumeclaim "{name}" not found'


def driver_missing(driver: str) -> str:
    return f"{driver} CSI driver is not installed on the node"


# VolumeZone's labels, in upstream's order; the legacy ones fall back to their GA name on the node.
TOPOLOGY_LABELS = (
    "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region",
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
)
_GA_LABEL = {TOPOLOGY_LABELS[0]: TOPOLOGY_LABELS[2], TOPOLOGY_LABELS[1]: TOPOLOGY_LABELS[3]}
ZONE_DELIMITER = "__"  # a PV label naming several zones: "zone-a__zone-b"

# The in-tree sources VolumeRestrictions compares (pod volume fields, kept as unknown fields).
RESTRICTED_SOURCES = ("gcePersistentDisk", "awsElasticBlockStore", "rbd", "iscsi")
# In-tree provisioners csi-translation-lib migrates to a CSI driver.
MIGRATABLE_PROVISIONERS = frozenset({
    "kubernetes.io/aws-ebs", "kubernetes.io/gce-pd", "kubernetes.io/azure-disk", "kubernetes.io/azure-file",
    "kubernetes.io/cinder", "kubernetes.io/vsphere-volume", "kubernetes.io/portworx-volume"})
# Unbound claims are counted under their class's provisioner with a handle no real volume has
# (upstream: a random prefix per scheduler), so one claim shared by two pods counts once.
_UNBOUND_HANDLE = "\x00unbound"

ClaimKey = tuple[str, str]  # (namespace, name)


@dataclasses.dataclass(frozen=True)
class Storage:
    """What the filters read, from the cluster view."""

    claims: Mapping[ClaimKey, api.PersistentVolumeClaim]
    volumes: Mapping[str, api.PersistentVolume]
    classes: Mapping[str, api.StorageClass]
    csi_nodes: Mapping[str, api.CSINode]  # by node name
    drivers: Mapping[str, api.CSIDriver] = dataclasses.field(default_factory=dict)  # CSIDriver by name
    # CSIStorageCapacity objects by StorageClass name (of every namespace, as upstream lists them).
    capacities: Mapping[str, tuple[api.CSIStorageCapacity, ...]] = dataclasses.field(default_factory=dict)

    @classmethod
    def of(cls, claims: Iterable[api.PersistentVolumeClaim] = (), volumes: Iterable[api.PersistentVolume] = (),
           classes: Iterable[api.StorageClass] = (), csi_nodes: Iterable[api.CSINode] = (),
           drivers: Iterable[api.CSIDriver] = (), capacities: Iterable[api.CSIStorageCapacity] = ()) -> Storage:
        """Keyed as the filters look them up."""
        by_class: dict[str, list[api.CSIStorageCapacity]] = {}
        for capacity in capacities:
            by_class.setdefault(capacity.storage_class_name, []).append(capacity)
        return cls(claims={(c.namespace, c.name): c for c in claims}, volumes={v.name: v for v in volumes},
                   classes={c.name: c for c in classes}, csi_nodes={n.name: n for n in csi_nodes},
                   drivers={d.name: d for d in drivers},
                   capacities={name: tuple(found) for name, found in by_class.items()})


EMPTY = Storage(claims={}, volumes={}, classes={}, csi_nodes={})


def claim_name(pod: pods.Pod, volume: pods.Volume) -> str | None:
    """The PVC a pod volume uses: its claimName, `<pod>-<volume>` for a generic ephemeral volume,
    None for other sources."""
    if volume.persistent_volume_claim is not None:
        return volume.persistent_volume_claim.claim_name
    if volume.ephemeral is not None:
        return f"{pod.name}-{volume.name}"
    return None


def controlled_by(claim: api.PersistentVolumeClaim, pod: pods.Pod) -> bool:
    """Whether the claim is the pod's ephemeral one (its controller owner reference is the pod)."""
    if claim.namespace != pod.namespace:
        return False
    for ref in claim.metadata.owner_references:
        if ref.controller:
            return ref.uid == (pod.metadata.uid or "")
    return False


def _source(volume: pods.Volume, key: str) -> Mapping[str, Any] | None:
    value = (volume.model_extra or {}).get(key)
    return value if isinstance(value, Mapping) else None


def restricted(volume: pods.Volume) -> bool:
    """An in-tree disk VolumeRestrictions compares with the node's pods' volumes."""
    return any(_source(volume, key) is not None for key in RESTRICTED_SOURCES)


def disks_conflict(volume: pods.Volume, other: pods.Volume) -> bool:
    """Whether two pods' volumes are the same disk, used in a way that cannot be shared."""
    for key in RESTRICTED_SOURCES:
        mine, theirs = _source(volume, key), _source(other, key)
        if mine is None or theirs is None:
            continue
        read_only = bool(mine.get("readOnly")) and bool(theirs.get("readOnly"))
        if key == "gcePersistentDisk":
            if mine.get("pdName") == theirs.get("pdName") and not read_only:
                return True
        elif key == "awsElasticBlockStore":
            if mine.get("volumeID") == theirs.get("volumeID"):
                return True
        elif key == "iscsi":
            if mine.get("iqn") == theirs.get("iqn") and not read_only:
                return True
        else:  # rbd: one shared monitor, same pool (defaulted "rbd") and image
            monitors = set(mine.get("monitors") or ())
            if (monitors.intersection(theirs.get("monitors") or ())
                    and mine.get("pool", "rbd") == theirs.get("pool", "rbd")
                    and mine.get("image") == theirs.get("image") and not read_only):
                return True
    return False


def volume_affinity_matches(volume: api.PersistentVolume, labels: Mapping[str, str]) -> bool:
    """A PV's required node affinity against node labels, as `CheckNodeAffinity` evaluates it: the
    node's labels only (a `metadata.name` field requirement sees no name); a malformed term
    selects nothing; no affinity selects every node."""
    affinity = volume.spec.node_affinity
    if affinity is None or affinity.required is None:
        return True
    for term in affinity.required.node_selector_terms:
        try:
            if nodeaffinity.term_matches(term, "", labels):
                return True
        except ValueError:
            continue
    return False


def topology_matches(terms: Sequence[api.TopologySelectorTerm], labels: Mapping[str, str]) -> bool:
    """A StorageClass's allowedTopologies: none allows every node; else one term whose every
    requirement holds (key present with one of the values); an empty term selects nothing."""
    if not terms:
        return True
    for term in terms:
        if not term.match_label_expressions:
            continue
        if all(req.values and req.key in labels and labels[req.key] in req.values
               for req in term.match_label_expressions):
            return True
    return False


def zone_set(value: str) -> frozenset[str] | None:
    """The zones a PV topology label names (`__`-separated); None if one is empty (ignored)."""
    zones = [zone.strip() for zone in value.split(ZONE_DELIMITER)]
    return None if any(not zone for zone in zones) else frozenset(zones)


def bound_to(volume: api.PersistentVolume, claim: api.PersistentVolumeClaim) -> bool:
    """The PV is (pre-)bound to the claim: claimRef names it (and its uid, when the ref has one)."""
    ref = volume.spec.claim_ref
    if ref is None or (ref.name or "") != claim.name or (ref.namespace or "") != claim.namespace:
        return False
    return not ref.uid or ref.uid == (claim.metadata.uid or "")


def _storage_amount(quantity: Any) -> Fraction:
    return quantity.value if quantity is not None else Fraction(0)


def matching_volume(claim: api.PersistentVolumeClaim, candidates: Iterable[api.PersistentVolume],
                    labels: Mapping[str, str], excluded: Iterable[str] = ()) -> api.PersistentVolume | None:
    """The PV a WaitForFirstConsumer claim would bind to on a node with these labels (upstream's
    `FindMatchingVolume`, scheduler path): a PV pre-bound to the claim (None if it does not fit the
    node), else the smallest Available one of the claim's class that is large enough, of its
    volume mode, selected by its selector, offers its access modes and fits the node."""
    excluded = set(excluded)
    wanted = _storage_amount(claim.requested_storage())
    wanted_class = claim.class_name()
    selector = claim.spec.selector
    best: api.PersistentVolume | None = None
    best_size = Fraction(0)
    for volume in candidates:
        if volume.name in excluded:
            continue
        if volume.spec.claim_ref is not None and not bound_to(volume, claim):
            continue
        size = _storage_amount(volume.capacity_storage())
        if size < wanted or volume.volume_mode() != claim.volume_mode():
            continue
        if volume.metadata.deletion_timestamp is not None:
            continue
        fits_node = volume_affinity_matches(volume, labels)
        if bound_to(volume, claim):
            return volume if fits_node else None
        if volume.status.phase != api.VOLUME_AVAILABLE:
            continue
        if selector is not None:
            try:
                if not selectors.matches(selector, volume.metadata.labels):
                    continue
            except ValueError:
                continue
        if volume.class_name() != wanted_class or not fits_node:
            continue
        if any(mode not in volume.spec.access_modes for mode in claim.spec.access_modes):
            continue
        if best is None or best_size > size:
            best, best_size = volume, size
    return best


def _csi_volume(claim: api.PersistentVolumeClaim, storage: Storage) -> tuple[str, str] | None:
    """(driver, volume handle) NodeVolumeLimits counts a claim as; None: not counted."""
    if claim.spec.volume_name:
        volume = storage.volumes.get(claim.spec.volume_name)
        if volume is not None:
            csi = volume.spec.csi
            if csi is None or not csi.driver or not csi.volume_handle:
                return None  # in-tree (migration not translated) or incomplete
            return csi.driver, csi.volume_handle
    # Unbound, or its PV not known yet: the class's provisioner, a handle of the claim's own.
    class_name = claim.class_name()
    storage_class = storage.classes.get(class_name) if class_name else None
    if storage_class is None or not storage_class.provisioner:
        return None
    if storage_class.provisioner in MIGRATABLE_PROVISIONERS:
        return None  # counted under its CSI driver once the node migrated it (not translated here)
    return storage_class.provisioner, f"{_UNBOUND_HANDLE}-{claim.namespace}/{claim.name}"


def attachable(pod: pods.Pod, storage: Storage, into: dict[str, str]) -> None:
    """Add the pod's CSI volumes to `into` as `<driver>/<handle>` -> driver (claims not found, or
    ephemeral claims the pod does not control, are not counted)."""
    for volume in pod.spec.volumes:
        name = claim_name(pod, volume)
        if name is None:
            continue
        claim = storage.claims.get((pod.namespace, name))
        if claim is None or (volume.persistent_volume_claim is None and not controlled_by(claim, pod)):
            continue
        found = _csi_volume(claim, storage)
        if found is not None:
            driver, handle = found
            into[f"{driver}/{handle}"] = driver


@dataclasses.dataclass(frozen=True)
class PodClaim:
    """One of the pod's claims: the pod volume that uses it and the claim."""

    volume: str
    claim: api.PersistentVolumeClaim
    ephemeral: bool

    @property
    def key(self) -> ClaimKey:
        return (self.claim.namespace, self.claim.name)


@dataclasses.dataclass(frozen=True)
class VolumePlan:
    """What placing the pod on a node asks of the writer: pre-provisioned PVs to bind to claims
    (the PV's claimRef), and claims to provision there (the selected-node annotation)."""

    node: str
    static: tuple[tuple[ClaimKey, str], ...] = ()  # (claim, PV name)
    provision: tuple[ClaimKey, ...] = ()

    def claims(self) -> tuple[ClaimKey, ...]:
        return (*(key for key, _ in self.static), *self.provision)


class Check:
    """The volume filters for one pod, its claims read (`prepare`): `reject(node)` per node."""

    def __init__(self, pod: pods.Pod, storage: Storage, placed: placedpods.PlacedPods, *,
                 disks: Sequence[pods.Volume] = (), read_write_once_pod_conflict: bool = False,
                 csi_volumes: Mapping[str, str] | None = None, bound: Sequence[PodClaim] = (),
                 delayed: Sequence[PodClaim] = (),
                 zones: Sequence[tuple[str, str, frozenset[str]]] = ()) -> None:
        self.pod = pod
        self.storage = storage
        self.placed = placed
        self.disks = tuple(disks)
        self.read_write_once_pod_conflict = read_write_once_pod_conflict
        self.csi_volumes = dict(csi_volumes or {})  # the pod's `<driver>/<handle>` -> driver
        self.bound = tuple(bound)  # fully bound claims
        self.delayed = tuple(delayed)  # unbound WaitForFirstConsumer claims
        self.zones = tuple(zones)  # (PV name, label key, zones) of bound PVs
        # The PVs each delayed claim's class offers, by name (upstream: the PV cache's class index).
        self.candidates: dict[str, tuple[api.PersistentVolume, ...]] = {}
        if self.delayed:
            wanted = {c.claim.class_name() for c in self.delayed}
            by_class: dict[str, list[api.PersistentVolume]] = {name: [] for name in wanted}
            for volume in storage.volumes.values():
                if volume.class_name() in by_class:
                    by_class[volume.class_name()].append(volume)
            self.candidates = {name: tuple(sorted(found, key=lambda v: v.name)) for name, found in by_class.items()}

    @property
    def binds(self) -> bool:
        """Whether placing the pod gives claims a node (it has unbound WaitForFirstConsumer claims)."""
        return bool(self.delayed)

    def _others_on(self, node: str) -> Iterable[pods.Pod]:
        uid = self.pod.metadata.uid
        return (p for p in self.placed.on(node) if not uid or p.metadata.uid != uid)

    def reject(self, node: nodes.Node) -> str | None:
        """Why the pod's volumes keep it off the node (the first filter that fails); None: they don't."""
        name = node.metadata.name
        if self.disks and any(disks_conflict(mine, theirs) for other in self._others_on(name)
                              for theirs in other.spec.volumes for mine in self.disks):
            return DISK_CONFLICT
        if self.read_write_once_pod_conflict:
            return READ_WRITE_ONCE_POD_CONFLICT
        reason = self._volume_limits(node)
        if reason is not None:
            return reason
        reasons, _ = self._find(node)
        if reasons:
            return ", ".join(reasons)
        return self._zone(node)

    def plan(self, node: nodes.Node) -> VolumePlan | None:
        """What placing the pod on the node asks of the writer; None if VolumeBinding rejects the node."""
        reasons, plan = self._find(node)
        return None if reasons else plan

    def binding(self, node: nodes.Node) -> tuple[ClaimKey, ...]:
        """The WaitForFirstConsumer claims (namespace, name) placing the pod on the node gives it."""
        plan = self.plan(node)
        return plan.claims() if plan is not None else ()

    # ---- NodeVolumeLimits
    def _volume_limits(self, node: nodes.Node) -> str | None:
        if not self.csi_volumes:
            return None
        name = node.metadata.name
        csi_node = self.storage.csi_nodes.get(name)
        listed = {d.name for d in csi_node.spec.drivers} if csi_node is not None else set()
        for driver in dict.fromkeys(self.csi_volumes.values()):
            spec = self.storage.drivers.get(driver)
            if spec is not None and spec.spec.prevent_pod_scheduling_if_missing and driver not in listed:
                return driver_missing(driver)
        limits = {d.name: d.allocatable.count for d in (csi_node.spec.drivers if csi_node is not None else ())
                  if d.allocatable is not None and d.allocatable.count is not None}
        if not limits:
            return None
        attached: dict[str, str] = {}
        for other in self._others_on(name):
            attachable(other, self.storage, attached)
        new = dict(self.csi_volumes)
        used: collections.Counter[str] = collections.Counter()
        for unique, driver in attached.items():
            new.pop(unique, None)  # a volume the node already has counts once
            used[driver] += 1
        for driver, count in collections.Counter(new.values()).items():
            if driver in limits and used[driver] + count > limits[driver]:
                return MAX_VOLUME_COUNT
        return None

    # ---- VolumeBinding
    def _find(self, node: nodes.Node) -> tuple[list[str], VolumePlan]:
        labels = node.metadata.labels
        bound_ok, volumes_found = self._check_bound(labels)
        unbound_ok, enough_space, static, provision = self._find_unbound(node)
        reasons = []
        if not bound_ok:
            reasons.append(NODE_CONFLICT)
        if not unbound_ok:
            reasons.append(BIND_CONFLICT)
        if not enough_space:
            reasons.append(NOT_ENOUGH_SPACE)
        if not volumes_found:
            reasons.append(PV_NOT_EXIST)
        plan = VolumePlan(node=node.metadata.name, static=tuple((c.key, v.name) for c, v in static),
                          provision=tuple(c.key for c in provision))
        return reasons, plan

    def _check_bound(self, labels: Mapping[str, str]) -> tuple[bool, bool]:
        """(node affinity satisfied, PVs found) for the bound claims; stops at the first failure."""
        for pod_claim in self.bound:
            volume = self.storage.volumes.get(pod_claim.claim.spec.volume_name or "")
            if volume is None:
                return True, False
            if not volume_affinity_matches(volume, labels):
                return False, True
        return True, True

    def _find_unbound(self, node: nodes.Node) -> tuple[
            bool, bool, list[tuple[PodClaim, api.PersistentVolume]], list[PodClaim]]:
        """(satisfied, enough storage, static bindings, claims to provision) for the WaitForFirstConsumer
        claims."""
        if not self.delayed:
            return True, True, [], []
        to_match: list[PodClaim] = []
        to_provision: list[PodClaim] = []
        for pod_claim in self.delayed:
            annotations = pod_claim.claim.metadata.annotations
            if api.SELECTED_NODE in annotations:
                if annotations[api.SELECTED_NODE] != node.metadata.name:
                    return False, True, [], []  # already given another node
                to_provision.append(pod_claim)
            else:
                to_match.append(pod_claim)
        labels = node.metadata.labels
        satisfied = enough = True
        static: list[tuple[PodClaim, api.PersistentVolume]] = []
        chosen: set[str] = set()
        for pod_claim in sorted(to_match, key=lambda c: _storage_amount(c.claim.requested_storage())):
            volume = matching_volume(pod_claim.claim, self.candidates.get(pod_claim.claim.class_name(), ()),
                                     labels, chosen)
            if volume is None:
                satisfied = False
                to_provision.append(pod_claim)
                continue
            chosen.add(volume.name)
            static.append((pod_claim, volume))
        if to_provision:
            # Upstream: what provisioning decides replaces what matching found.
            satisfied, enough = self._check_provisions([c.claim for c in to_provision], labels)
        return satisfied, enough, static, (to_provision if satisfied and enough else [])

    def _check_provisions(self, claims: Sequence[api.PersistentVolumeClaim],
                          labels: Mapping[str, str]) -> tuple[bool, bool]:
        """(provisioning satisfied, enough storage), claim by claim, stopping at the first that fails, as
        upstream's checkVolumeProvisions: a class that provisions, whose allowedTopologies select the node,
        and, for a CSI driver that publishes storage capacity (its CSIDriver's `storageCapacity`), a
        CSIStorageCapacity of the class that reaches the node and has room for the claim's request."""
        for claim in claims:
            storage_class = self.storage.classes.get(claim.class_name())
            if storage_class is None or storage_class.provisioner in ("", api.NO_PROVISIONER):
                return False, True
            if not topology_matches(storage_class.allowed_topologies, labels):
                return False, True
            if not self._enough_capacity(claim, storage_class, labels):
                return True, False
        return True, True

    def _enough_capacity(self, claim: api.PersistentVolumeClaim, storage_class: api.StorageClass,
                         labels: Mapping[str, str]) -> bool:
        """Upstream's hasEnoughCapacity: maximumVolumeSize when the object sets it, else capacity, in whole
        bytes, at least the claim's request; the object's nodeTopology (absent: no node) selects the node."""
        size = claim.requested_storage()
        driver = self.storage.drivers.get(storage_class.provisioner)
        if size is None or driver is None or not driver.spec.storage_capacity:
            return True  # nothing to check: no request, or a driver that publishes no capacity
        wanted = size.as_int_ceil()
        for capacity in self.storage.capacities.get(storage_class.name, ()):
            limit = capacity.maximum_volume_size if capacity.maximum_volume_size is not None else capacity.capacity
            if limit is None or limit.as_int_ceil() < wanted or capacity.node_topology is None:
                continue
            try:
                if selectors.matches(capacity.node_topology, labels):
                    return True
            except ValueError:
                continue  # upstream logs a selector it cannot convert and takes the object as out of reach
        return False

    # ---- VolumeZone
    def _zone(self, node: nodes.Node) -> str | None:
        labels = node.metadata.labels
        if not self.zones or not any(key in labels for key in TOPOLOGY_LABELS):
            return None  # a node without zone labels takes any volume (single-zone clusters)
        for _volume, key, zones in self.zones:
            if key in labels:
                value = labels[key]
            elif _GA_LABEL.get(key, key) in labels:
                value = labels[_GA_LABEL.get(key, key)]
            else:
                return ZONE_CONFLICT
            if value not in zones:
                return ZONE_CONFLICT
        return None


def _read_write_once_pod_in_use(pod: pods.Pod, names: set[str], placed: placedpods.PlacedPods) -> bool:
    uid = pod.metadata.uid
    for other, _node in placed.all():
        if other.namespace != pod.namespace or (uid and other.metadata.uid == uid):
            continue
        for volume in other.spec.volumes:
            source = volume.persistent_volume_claim
            if source is not None and source.claim_name in names:
                return True
    return False


def prepare(pod: pods.Pod, storage: Storage, placed: placedpods.PlacedPods) -> Check | str | None:
    """None: the pod has no volume any filter reads (fast path); a string: the pod cannot be placed
    anywhere now (upstream PreFilter's unresolvable reasons, e.g. a PVC not found); else a Check."""
    namespace = pod.namespace
    uses: list[tuple[pods.Volume, str]] = []
    disks: list[pods.Volume] = []
    for volume in pod.spec.volumes:
        name = claim_name(pod, volume)
        if name is not None:
            uses.append((volume, name))
        if restricted(volume):
            disks.append(volume)
    if not uses and not disks:
        return None

    # VolumeRestrictions: the persistentVolumeClaim volumes' claims exist; which are ReadWriteOncePod.
    read_write_once_pod: set[str] = set()
    for volume, name in uses:
        if volume.persistent_volume_claim is None:
            continue
        claim = storage.claims.get((namespace, name))
        if claim is None:
            return claim_not_found(name)
        if api.READ_WRITE_ONCE_POD in claim.spec.access_modes:
            read_write_once_pod.add(name)
    conflict = bool(read_write_once_pod) and _read_write_once_pod_in_use(pod, read_write_once_pod, placed)

    # VolumeBinding: every claim usable; bound, or waiting for its first consumer.
    claims: dict[ClaimKey, PodClaim] = {}
    for volume, name in uses:
        ephemeral = volume.persistent_volume_claim is None
        claim = storage.claims.get((namespace, name))
        if claim is None:  # (a persistentVolumeClaim volume's was found missing above)
            return f'waiting for ephemeral volume controller to create the persistentvolumeclaim "{name}"'
        if claim.status.phase == api.CLAIM_LOST:
            return (f'persistentvolumeclaim "{claim.name}" bound to non-existent persistentvolume '
                    f'"{claim.spec.volume_name or ""}"')
        if claim.metadata.deletion_timestamp is not None:
            return f'persistentvolumeclaim "{claim.name}" is being deleted'
        if ephemeral and not controlled_by(claim, pod):
            return (f"PVC {claim.namespace}/{claim.name} was not created for pod {namespace}/{pod.name} "
                    f"(pod is not owner)")
        claims.setdefault((namespace, name), PodClaim(volume=volume.name, claim=claim, ephemeral=ephemeral))
    bound: list[PodClaim] = []
    delayed: list[PodClaim] = []
    for pod_claim in claims.values():
        claim = pod_claim.claim
        if claim.fully_bound():
            bound.append(pod_claim)
            continue
        class_name = claim.class_name()
        storage_class = storage.classes.get(class_name) if class_name else None
        waits = storage_class is not None and storage_class.binding_mode() == api.WAIT_FOR_FIRST_CONSUMER
        if not waits or claim.spec.volume_name:
            return UNBOUND_IMMEDIATE  # immediate (or pre-bound) claims are bound before scheduling
        delayed.append(pod_claim)

    # VolumeZone: the zone labels of the persistentVolumeClaim volumes' PVs.
    zones: list[tuple[str, str, frozenset[str]]] = []
    for volume, name in uses:
        if volume.persistent_volume_claim is None:
            continue
        claim = storage.claims[(namespace, name)]
        volume_name = claim.spec.volume_name
        if not volume_name:
            continue  # WaitForFirstConsumer: VolumeBinding let no other claim without a PV through
        persistent_volume = storage.volumes.get(volume_name)
        if persistent_volume is None:
            return f'persistentvolume "{volume_name}" not found'
        for key in TOPOLOGY_LABELS:
            if key in persistent_volume.metadata.labels:
                found = zone_set(persistent_volume.metadata.labels[key])
                if found is not None:
                    zones.append((persistent_volume.name, key, found))

    # NodeVolumeLimits: the pod's CSI volumes (the same on every node: no migration translation).
    csi_volumes: dict[str, str] = {}
    attachable(pod, storage, csi_volumes)
    return Check(pod, storage, placed, disks=disks, read_write_once_pod_conflict=conflict,
                 csi_volumes=csi_volumes, bound=bound, delayed=delayed, zones=zones)


def assume(storage: Storage, plan: VolumePlan) -> Storage:
    """The storage as if the plan were written (upstream's assume cache, for the rest of a pass):
    each static PV's claimRef names its claim (and bound-by-controller is set when the PV was not
    pre-bound), each provisioned claim carries the selected-node annotation."""
    if not plan.static and not plan.provision:
        return storage
    volumes = dict(storage.volumes)
    for key, volume_name in plan.static:
        volume, claim = volumes.get(volume_name), storage.claims.get(key)
        if volume is None or claim is None:
            continue
        annotations = dict(volume.metadata.annotations)
        if not bound_to(volume, claim):
            annotations.setdefault(api.BOUND_BY_CONTROLLER, "yes")
        ref = api.ObjectReference(api_version="v1", kind="PersistentVolumeClaim", namespace=claim.namespace,
                                  name=claim.name, uid=claim.metadata.uid,
                                  resource_version=claim.metadata.resource_version)
        volumes[volume_name] = volume.model_copy(update={
            "metadata": volume.metadata.model_copy(update={"annotations": annotations}),
            "spec": volume.spec.model_copy(update={"claim_ref": ref})})
    claims = dict(storage.claims)
    for key in plan.provision:
        claim = claims.get(key)
        if claim is None:
            continue
        annotations = {**claim.metadata.annotations, api.SELECTED_NODE: plan.node}
        claims[key] = claim.model_copy(update={"metadata": claim.metadata.model_copy(update={"annotations": annotations})})
    return dataclasses.replace(storage, claims=claims, volumes=volumes)
