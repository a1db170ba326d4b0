"""kube-scheduler's volume filters (scheduling/volumes.py): one named row per rule and reason.

`PREPARED` rows: what `prepare` says of a pod before any node (None: no volume any filter
reads; a string: upstream's PreFilter reason, the pod waits). `REJECTED` rows, by filter:
the pod, the storage objects, the pods already placed, the node, and the reason the node is
rejected (None: the pod's volumes allow it). The ids are the row names.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from tests.scheduling.objects import node_

from dralloc.model import conversion, nodes, pods
from dralloc.model import storage as api
from dralloc.scheduling import placedpods, volumes

NS = "default"
DRIVER = "csi.example.com"
ZONE = "topology.kubernetes.io/zone"
BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"


# ---- objects (API JSON, parsed)

def claim(name: str, *, cls: str | None = "fast", volume: str | None = None, bound: bool | None = None,
          storage: str | None = None, modes: Sequence[str] = ("ReadWriteOnce",), namespace: str = NS,
          annotations: Mapping[str, str] | None = None, phase: str | None = None, owner: str | None = None,
          deleting: bool = False, selector: Mapping[str, Any] | None = None,
          volume_mode: str | None = None) -> api.PersistentVolumeClaim:
    """A PVC; with `volume` it is bound (bind-completed) unless `bound=False` (pre-bound only)."""
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "uid": f"uid-claim-{name}",
                            "annotations": dict(annotations or {})}
    if volume and bound is not False:
        meta["annotations"][api.BIND_COMPLETED] = "yes"
    if owner is not None:
        meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "Pod", "name": owner, "uid": f"uid-{NS}-{owner}",
                                    "controller": True}]
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    spec: dict[str, Any] = {"accessModes": list(modes)}
    if cls is not None:
        spec["storageClassName"] = cls
    if volume is not None:
        spec["volumeName"] = volume
    if storage is not None:
        spec["resources"] = {"requests": {"storage": storage}}
    if selector is not None:
        spec["selector"] = dict(selector)
    if volume_mode is not None:
        spec["volumeMode"] = volume_mode
    raw = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta, "spec": spec,
           "status": {"phase": phase or ("Bound" if volume else "Pending")}}
    parsed: api.PersistentVolumeClaim = conversion.parse_as(api.PersistentVolumeClaim, raw)
    return parsed


def affinity(*terms: Mapping[str, Sequence[str]]) -> dict[str, Any]:
    """A PV node affinity: one term per mapping (each key In its values)."""
    return {"required": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": k, "operator": "In", "values": list(v)} for k, v in term.items()]}
        for term in terms]}}


def volume(name: str, *, cls: str = "fast", capacity: str = "10Gi", modes: Sequence[str] = ("ReadWriteOnce",),
           phase: str = "Available", claim_ref: tuple[str, str] | None = None, node_affinity: dict[str, Any] | None = None,
           handle: str | None = None, driver: str = DRIVER, labels: Mapping[str, str] | None = None,
           source: Mapping[str, Any] | None = None, volume_mode: str | None = None,
           deleting: bool = False) -> api.PersistentVolume:
    """A PV; `handle` makes it a CSI volume of `driver`, `source` an in-tree one."""
    spec: dict[str, Any] = {"capacity": {"storage": capacity}, "accessModes": list(modes), "storageClassName": cls}
    if claim_ref is not None:
        spec["claimRef"] = {"kind": "PersistentVolumeClaim", "namespace": claim_ref[0], "name": claim_ref[1]}
    if node_affinity is not None:
        spec["nodeAffinity"] = node_affinity
    if handle is not None:
        spec["csi"] = {"driver": driver, "volumeHandle": handle}
    if volume_mode is not None:
        spec["volumeMode"] = volume_mode
    spec.update(source or {})
    meta: dict[str, Any] = {"name": name, "labels": dict(labels or {})}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    raw = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": meta, "spec": spec, "status": {"phase": phase}}
    parsed: api.PersistentVolume = conversion.parse_as(api.PersistentVolume, raw)
    return parsed


def storage_class(name: str = "fast", *, mode: str | None = "WaitForFirstConsumer", provisioner: str = DRIVER,
                  topologies: Sequence[Mapping[str, Sequence[str]]] = ()) -> api.StorageClass:
    raw: dict[str, Any] = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name},
                           "provisioner": provisioner}
    if mode is not None:
        raw["volumeBindingMode"] = mode
    if topologies:
        raw["allowedTopologies"] = [{"matchLabelExpressions": [{"key": k, "values": list(v)} for k, v in t.items()]}
                                    for t in topologies]
    parsed: api.StorageClass = conversion.parse_as(api.StorageClass, raw)
    return parsed


def csi_node(node: str, limits: Mapping[str, int | None]) -> api.CSINode:
    drivers = [{"name": d, "nodeID": node} | ({"allocatable": {"count": c}} if c is not None else {})
               for d, c in limits.items()]
    parsed: api.CSINode = conversion.parse_as(api.CSINode, {
        "apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": node}, "spec": {"drivers": drivers}})
    return parsed


def csi_driver(name: str = DRIVER, *, prevent: bool | None = True) -> api.CSIDriver:
    spec = {"preventPodSchedulingIfMissing": prevent} if prevent is not None else {}
    parsed: api.CSIDriver = conversion.parse_as(api.CSIDriver, {
        "apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": name}, "spec": spec})
    return parsed


def capacity(name: str, *, cls: str = "fast", size: str | None = "10Gi", maximum: str | None = None,
             topology: Mapping[str, str] | None = None) -> api.CSIStorageCapacity:
    """A CSIStorageCapacity of class `cls` for the nodes whose labels include `topology` (None: no
    nodeTopology, which reaches no node; {}: every node)."""
    raw: dict[str, Any] = {"apiVersion": "storage.k8s.io/v1", "kind": "CSIStorageCapacity",
                           "metadata": {"name": name, "namespace": "kube-system"}, "storageClassName": cls}
    if size is not None:
        raw["capacity"] = size
    if maximum is not None:
        raw["maximumVolumeSize"] = maximum
    if topology is not None:
        raw["nodeTopology"] = {"matchLabels": dict(topology)}
    parsed: api.CSIStorageCapacity = conversion.parse_as(api.CSIStorageCapacity, raw)
    return parsed


def tracking(name: str = DRIVER) -> api.CSIDriver:
    """A CSIDriver that publishes storage capacity."""
    parsed: api.CSIDriver = conversion.parse_as(api.CSIDriver, {
        "apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": name},
        "spec": {"storageCapacity": True}})
    return parsed


def uses(claim_name: str, name: str | None = None) -> dict[str, Any]:
    return {"name": name or f"vol-{claim_name}", "persistentVolumeClaim": {"claimName": claim_name}}


def ephemeral(name: str) -> dict[str, Any]:
    return {"name": name, "ephemeral": {"volumeClaimTemplate": {"spec": {"accessModes": ["ReadWriteOnce"]}}}}


def inline(kind: str, name: str = "disk", **source: Any) -> dict[str, Any]:
    return {"name": name, kind: source}


def pod(name: str = "p", *volume_list: Mapping[str, Any], node: str | None = None, namespace: str = NS) -> pods.Pod:
    spec: dict[str, Any] = {"containers": [{"name": "main"}], "volumes": [dict(v) for v in volume_list]}
    if node is not None:
        spec["nodeName"] = node
    parsed: pods.Pod = conversion.parse_as(pods.Pod, {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace,
                                                        "uid": f"uid-{namespace}-{name}"}, "spec": spec})
    return parsed


@dataclasses.dataclass(frozen=True)
class Case:
    pod: pods.Pod
    expect: str | None
    objects: tuple[Any, ...] = ()  # claims, volumes, classes, CSINodes, CSIDrivers
    placed: tuple[pods.Pod, ...] = ()  # pods with spec.nodeName, on n1 or n2
    node: nodes.Node = dataclasses.field(default_factory=lambda: node_("n1"))


def storage_of(objects: Sequence[Any]) -> volumes.Storage:
    def of(kind: type[Any]) -> list[Any]:
        return [o for o in objects if isinstance(o, kind)]
    return volumes.Storage.of(claims=of(api.PersistentVolumeClaim), volumes=of(api.PersistentVolume),
                              classes=of(api.StorageClass), csi_nodes=of(api.CSINode), drivers=of(api.CSIDriver),
                              capacities=of(api.CSIStorageCapacity))


def prepared(case: Case) -> volumes.Check | str | None:
    placed = placedpods.PlacedPods([case.node, node_("n2")], case.placed)
    return volumes.prepare(case.pod, storage_of(case.objects), placed)


WFFC = storage_class()
IMMEDIATE = storage_class("standard", mode="Immediate")
N1_ONLY = affinity({"kubernetes.io/hostname": ["n1"]})
N2_ONLY = affinity({"kubernetes.io/hostname": ["n2"]})
N1 = node_("n1", labels={"kubernetes.io/hostname": "n1", ZONE: "a", REGION: "r"})

PREPARED: dict[str, Case] = {
    "pod-without-volumes-skips-the-filters": Case(pod(), None),
    "pod-with-only-config-volumes-skips-the-filters": Case(
        pod("p", {"name": "cfg", "configMap": {"name": "c"}}, {"name": "tmp", "emptyDir": {}}), None),
    "missing-claim-waits": Case(pod("p", uses("data")), 'persistentvolumeclaim "data" not found'),
    "missing-ephemeral-claim-waits-for-the-ephemeral-controller": Case(
        pod("p", ephemeral("scratch")),
        'waiting for ephemeral volume controller to create the persistentvolumeclaim "p-scratch"'),
    "restrictions-report-a-missing-claim-before-binding-reports-a-missing-ephemeral-one": Case(
        pod("p", ephemeral("scratch"), uses("data")), 'persistentvolumeclaim "data" not found'),
    "lost-claim-waits": Case(pod("p", uses("data")), 'persistentvolumeclaim "data" bound to non-existent '
                             'persistentvolume "pv-gone"', (claim("data", volume="pv-gone", phase="Lost"),)),
    "claim-being-deleted-waits": Case(pod("p", uses("data")), 'persistentvolumeclaim "data" is being deleted',
                                      (claim("data", deleting=True), WFFC)),
    "ephemeral-claim-of-another-pod-waits": Case(
        pod("p", ephemeral("scratch")), "PVC default/p-scratch was not created for pod default/p (pod is not owner)",
        (claim("p-scratch", owner="other"), WFFC)),
    "unbound-immediate-claim-waits": Case(pod("p", uses("data")), volumes.UNBOUND_IMMEDIATE,
                                          (claim("data", cls="standard"), IMMEDIATE)),
    "unbound-claim-without-class-is-immediate": Case(pod("p", uses("data")), volumes.UNBOUND_IMMEDIATE,
                                                     (claim("data", cls=None),)),
    "unbound-claim-of-a-missing-class-is-immediate": Case(pod("p", uses("data")), volumes.UNBOUND_IMMEDIATE,
                                                          (claim("data", cls="gone"),)),
    "class-without-binding-mode-is-immediate-as-the-api-defaults-it": Case(
        pod("p", uses("data")), volumes.UNBOUND_IMMEDIATE, (claim("data"), storage_class(mode=None))),
    "pre-bound-claim-not-yet-bind-completed-is-immediate": Case(
        pod("p", uses("data")), volumes.UNBOUND_IMMEDIATE, (claim("data", volume="pv1", bound=False), WFFC)),
    "bound-claim-whose-volume-is-gone-waits": Case(pod("p", uses("data")), 'persistentvolume "pv-gone" not found',
                                                   (claim("data", volume="pv-gone"),)),
}


@pytest.mark.parametrize("case", PREPARED.values(), ids=PREPARED.keys())
def test_prepare(case: Case) -> None:
    outcome = prepared(case)
    if case.expect is None:
        assert outcome is None
    else:
        assert outcome == case.expect


def test_a_waiting_for_first_consumer_claim_prepares_a_check() -> None:
    check = prepared(Case(pod("p", uses("data")), None, (claim("data"), WFFC)))
    assert isinstance(check, volumes.Check) and check.binds


BOUND_CSI = (claim("data", volume="pv1"), volume("pv1", handle="h1", phase="Bound", claim_ref=(NS, "data")))


def csi_pods(count: int, node: str = "n1", *, prefix: str = "old") -> tuple[tuple[pods.Pod, ...], tuple[Any, ...]]:
    """`count` pods on the node, each with its own bound CSI volume of DRIVER."""
    placed, objects = [], []
    for i in range(count):
        name = f"{prefix}{i}"
        placed.append(pod(name, uses(f"c-{name}"), node=node))
        objects += [claim(f"c-{name}", volume=f"pv-{name}"),
                    volume(f"pv-{name}", handle=f"h-{name}", phase="Bound", claim_ref=(NS, f"c-{name}"))]
    return tuple(placed), tuple(objects)


TWO_ON_N1, TWO_VOLUMES = csi_pods(2)
LIMIT_2 = csi_node("n1", {DRIVER: 2})
RBD = {"monitors": ["m1", "m2"], "pool": "p", "image": "img"}

REJECTED: dict[str, Case] = {
    # ---- VolumeRestrictions: in-tree disks shared with the node's pods
    "same-gce-pd-read-write-conflicts": Case(
        pod("p", inline("gcePersistentDisk", pdName="pd1")), volumes.DISK_CONFLICT,
        placed=(pod("old", inline("gcePersistentDisk", pdName="pd1", readOnly=True), node="n1"),)),
    "same-gce-pd-read-only-everywhere-is-shared": Case(
        pod("p", inline("gcePersistentDisk", pdName="pd1", readOnly=True)), None,
        placed=(pod("old", inline("gcePersistentDisk", pdName="pd1", readOnly=True), node="n1"),)),
    "other-gce-pd-does-not-conflict": Case(
        pod("p", inline("gcePersistentDisk", pdName="pd1")), None,
        placed=(pod("old", inline("gcePersistentDisk", pdName="pd2"), node="n1"),)),
    "same-ebs-volume-conflicts-even-read-only": Case(
        pod("p", inline("awsElasticBlockStore", volumeID="vol-1", readOnly=True)), volumes.DISK_CONFLICT,
        placed=(pod("old", inline("awsElasticBlockStore", volumeID="vol-1", readOnly=True), node="n1"),)),
    "same-iscsi-iqn-read-write-conflicts": Case(
        pod("p", inline("iscsi", iqn="iqn.1", targetPortal="t", lun=0)), volumes.DISK_CONFLICT,
        placed=(pod("old", inline("iscsi", iqn="iqn.1", targetPortal="t", lun=0), node="n1"),)),
    "same-iscsi-iqn-read-only-everywhere-is-shared": Case(
        pod("p", inline("iscsi", iqn="iqn.1", readOnly=True)), None,
        placed=(pod("old", inline("iscsi", iqn="iqn.1", readOnly=True), node="n1"),)),
    "rbd-image-with-a-shared-monitor-conflicts": Case(
        pod("p", inline("rbd", **RBD)), volumes.DISK_CONFLICT,
        placed=(pod("old", inline("rbd", **(RBD | {"monitors": ["m2", "m3"]})), node="n1"),)),
    "rbd-image-without-a-shared-monitor-does-not-conflict": Case(
        pod("p", inline("rbd", **RBD)), None,
        placed=(pod("old", inline("rbd", **(RBD | {"monitors": ["m9"]})), node="n1"),)),
    "disk-used-on-another-node-does-not-conflict": Case(
        pod("p", inline("gcePersistentDisk", pdName="pd1")), None,
        placed=(pod("old", inline("gcePersistentDisk", pdName="pd1"), node="n2"),)),
    # ---- VolumeRestrictions: ReadWriteOncePod claims
    "read-write-once-pod-claim-used-by-a-pod-on-another-node-rejects-every-node": Case(
        pod("p", uses("data")), volumes.READ_WRITE_ONCE_POD_CONFLICT,
        (claim("data", volume="pv1", modes=("ReadWriteOncePod",)), volume("pv1", phase="Bound")),
        placed=(pod("old", uses("data"), node="n2"),)),
    "read-write-once-pod-claim-used-by-no-pod-fits": Case(
        pod("p", uses("data")), None, (claim("data", volume="pv1", modes=("ReadWriteOncePod",)), volume("pv1"))),
    "same-claim-name-in-another-namespace-is-another-claim": Case(
        pod("p", uses("data")), None, (claim("data", volume="pv1", modes=("ReadWriteOncePod",)), volume("pv1")),
        placed=(pod("old", uses("data"), node="n1", namespace="other"),)),
    "read-write-once-claim-is-shared": Case(
        pod("p", uses("data")), None, BOUND_CSI, placed=(pod("old", uses("data"), node="n1"),)),
    # ---- NodeVolumeLimits (CSI)
    "new-volume-over-the-driver-limit-rejects": Case(
        pod("p", uses("data")), volumes.MAX_VOLUME_COUNT, (*BOUND_CSI, *TWO_VOLUMES, LIMIT_2), TWO_ON_N1),
    "new-volume-within-the-driver-limit-fits": Case(
        pod("p", uses("data")), None, (*BOUND_CSI, *TWO_VOLUMES, csi_node("n1", {DRIVER: 3})), TWO_ON_N1),
    "volume-the-node-already-has-counts-once": Case(
        pod("p", uses("c-old0")), None, (*TWO_VOLUMES, LIMIT_2), TWO_ON_N1),
    "two-claims-of-one-volume-handle-count-once": Case(
        pod("p", uses("alias")), None,
        (*TWO_VOLUMES, LIMIT_2, claim("alias", volume="pv-alias"),
         volume("pv-alias", handle="h-old0", phase="Bound", claim_ref=(NS, "alias"))), TWO_ON_N1),
    "volumes-on-other-nodes-do-not-count": Case(
        pod("p", uses("data")), None, (*BOUND_CSI, *csi_pods(2, "n2")[1], LIMIT_2), csi_pods(2, "n2")[0]),
    "another-drivers-limit-does-not-apply": Case(
        pod("p", uses("data")), None, (*BOUND_CSI, *TWO_VOLUMES, csi_node("n1", {"other.example.com": 0})),
        TWO_ON_N1),
    "node-without-csinode-has-no-limit": Case(pod("p", uses("data")), None, (*BOUND_CSI, *TWO_VOLUMES), TWO_ON_N1),
    "driver-without-allocatable-count-has-no-limit": Case(
        pod("p", uses("data")), None, (*BOUND_CSI, *TWO_VOLUMES, csi_node("n1", {DRIVER: None})), TWO_ON_N1),
    "unbound-claim-counts-under-its-class-provisioner": Case(
        pod("p", uses("new")), volumes.MAX_VOLUME_COUNT, (claim("new"), WFFC, *TWO_VOLUMES, LIMIT_2), TWO_ON_N1),
    "unbound-claim-shared-with-a-node-pod-counts-once": Case(
        pod("p", uses("new")), None, (claim("new"), WFFC, *csi_pods(1)[1], LIMIT_2),
        (*csi_pods(1)[0], pod("sharer", uses("new"), node="n1"))),
    "in-tree-volume-is-not-counted-without-migration": Case(
        pod("p", uses("data")), None,
        (claim("data", volume="pv1"), volume("pv1", source={"gcePersistentDisk": {"pdName": "pd"}}),
         *TWO_VOLUMES, LIMIT_2), TWO_ON_N1),
    "driver-that-must-be-installed-and-is-not-rejects": Case(
        pod("p", uses("data")), volumes.driver_missing(DRIVER),
        (*BOUND_CSI, csi_driver(), csi_node("n1", {"other.example.com": 5}))),
    "driver-that-must-be-installed-and-no-csinode-rejects": Case(
        pod("p", uses("data")), volumes.driver_missing(DRIVER), (*BOUND_CSI, csi_driver())),
    "driver-that-must-be-installed-and-is-listed-fits": Case(
        pod("p", uses("data")), None, (*BOUND_CSI, csi_driver(), csi_node("n1", {DRIVER: None}))),
    "driver-that-need-not-be-installed-fits-anywhere": Case(
        pod("p", uses("data")), None, (*BOUND_CSI, csi_driver(prevent=False))),
    # ---- VolumeBinding: bound claims
    "bound-volume-whose-affinity-selects-the-node-fits": Case(
        pod("p", uses("data")), None, (claim("data", volume="pv1"), volume("pv1", node_affinity=N1_ONLY)), node=N1),
    "bound-volume-whose-affinity-selects-another-node-rejects": Case(
        pod("p", uses("data")), volumes.NODE_CONFLICT,
        (claim("data", volume="pv1"), volume("pv1", node_affinity=N2_ONLY)), node=N1),
    "volume-affinity-by-node-name-field-selects-no-node": Case(
        pod("p", uses("data")), volumes.NODE_CONFLICT,
        (claim("data", volume="pv1"), volume("pv1", node_affinity={"required": {"nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}})), node=N1),
    "malformed-affinity-term-is-skipped-for-the-next-one": Case(
        pod("p", uses("data")), None,
        (claim("data", volume="pv1"), volume("pv1", node_affinity={"required": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "k", "operator": "Bogus"}]},
            {"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["a"]}]}]}})), node=N1),
    "bound-ephemeral-claim-whose-volume-is-gone-rejects": Case(
        pod("p", ephemeral("scratch")), volumes.PV_NOT_EXIST, (claim("p-scratch", volume="pv-gone", owner="p"),)),
    # ---- VolumeBinding: WaitForFirstConsumer claims
    "available-volume-on-the-node-fits": Case(
        pod("p", uses("data")), None, (claim("data", storage="5Gi"), volume("pv1", node_affinity=N1_ONLY),
                                       storage_class(provisioner=api.NO_PROVISIONER)), node=N1),
    "volume-only-elsewhere-without-provisioner-rejects": Case(
        pod("p", uses("data")), volumes.BIND_CONFLICT,
        (claim("data"), volume("pv1", node_affinity=N2_ONLY), storage_class(provisioner=api.NO_PROVISIONER)), node=N1),
    "volume-only-elsewhere-is-provisioned-instead": Case(
        pod("p", uses("data")), None, (claim("data"), volume("pv1", node_affinity=N2_ONLY), WFFC), node=N1),
    "class-without-provisioner-rejects": Case(
        pod("p", uses("data")), volumes.BIND_CONFLICT, (claim("data"), storage_class(provisioner="")), node=N1),
    # ---- VolumeBinding: storage capacity (a CSI driver with storageCapacity: true)
    "capacity-of-the-class-reaching-the-node-fits": Case(
        pod("p", uses("data")), None,
        (claim("data", storage="5Gi"), WFFC, tracking(), capacity("c1", topology={ZONE: "a"})), node=N1),
    "capacity-too-small-rejects": Case(
        pod("p", uses("data")), volumes.NOT_ENOUGH_SPACE,
        (claim("data", storage="20Gi"), WFFC, tracking(), capacity("c1", topology={ZONE: "a"})), node=N1),
    "maximum-volume-size-wins-over-capacity": Case(
        pod("p", uses("data")), volumes.NOT_ENOUGH_SPACE,
        (claim("data", storage="5Gi"), WFFC, tracking(), capacity("c1", maximum="4Gi", topology={ZONE: "a"})),
        node=N1),
    "capacity-for-other-nodes-rejects": Case(
        pod("p", uses("data")), volumes.NOT_ENOUGH_SPACE,
        (claim("data", storage="5Gi"), WFFC, tracking(), capacity("c1", topology={ZONE: "b"})), node=N1),
    "capacity-without-node-topology-reaches-no-node": Case(
        pod("p", uses("data")), volumes.NOT_ENOUGH_SPACE,
        (claim("data", storage="5Gi"), WFFC, tracking(), capacity("c1", topology=None)), node=N1),
    "capacity-of-another-class-does-not-count": Case(
        pod("p", uses("data")), volumes.NOT_ENOUGH_SPACE,
        (claim("data", storage="5Gi"), WFFC, tracking(), capacity("c1", cls="slow", topology={})), node=N1),
    "no-capacity-object-at-all-rejects": Case(
        pod("p", uses("data")), volumes.NOT_ENOUGH_SPACE, (claim("data", storage="5Gi"), WFFC, tracking()), node=N1),
    "a-driver-that-publishes-no-capacity-is-not-checked": Case(
        pod("p", uses("data")), None, (claim("data", storage="5Gi"), WFFC, csi_driver(prevent=None)), node=N1),
    "a-claim-without-a-request-is-not-checked": Case(
        pod("p", uses("data")), None, (claim("data", storage=None), WFFC, tracking()), node=N1),
    "a-class-that-does-not-reach-the-node-says-bind-conflict-first": Case(
        pod("p", uses("data")), volumes.BIND_CONFLICT,
        (claim("data", storage="5Gi"), storage_class(topologies=[{ZONE: ["b"]}]), tracking()), node=N1),
    "allowed-topology-of-another-zone-rejects": Case(
        pod("p", uses("data")), volumes.BIND_CONFLICT, (claim("data"), storage_class(topologies=[{ZONE: ["b"]}])),
        node=N1),
    "allowed-topology-of-the-nodes-zone-fits": Case(
        pod("p", uses("data")), None,
        (claim("data"), storage_class(topologies=[{ZONE: ["b"]}, {ZONE: ["a", "c"], REGION: ["r"]}])), node=N1),
    "claim-given-another-node-rejects": Case(
        pod("p", uses("data")), volumes.BIND_CONFLICT, (claim("data", annotations={api.SELECTED_NODE: "n2"}), WFFC),
        node=N1),
    "claim-given-this-node-fits": Case(
        pod("p", uses("data")), None, (claim("data", annotations={api.SELECTED_NODE: "n1"}), WFFC), node=N1),
    "too-small-volume-is-no-match": Case(
        pod("p", uses("data")), volumes.BIND_CONFLICT,
        (claim("data", storage="20Gi"), volume("pv1"), storage_class(provisioner=api.NO_PROVISIONER)), node=N1),
    "volume-without-the-access-mode-is-no-match": Case(
        pod("p", uses("data")), volumes.BIND_CONFLICT,
        (claim("data", modes=("ReadWriteMany",)), volume("pv1"), storage_class(provisioner=api.NO_PROVISIONER)),
        node=N1),
    "block-volume-for-filesystem-claim-is-no-match": Case(
        pod("p", uses("data")), volumes.BIND_CONFLICT,
        (claim("data"), volume("pv1", volume_mode="Block"), storage_class(provisioner=api.NO_PROVISIONER)), node=N1),
    "volume-outside-the-claim-selector-is-no-match": Case(
        pod("p", uses("data")), volumes.BIND_CONFLICT,
        (claim("data", selector={"matchLabels": {"tier": "gold"}}), volume("pv1", labels={"tier": "silver"}),
         storage_class(provisioner=api.NO_PROVISIONER)), node=N1),
    "released-volume-is-no-match": Case(
        pod("p", uses("data")), volumes.BIND_CONFLICT,
        (claim("data"), volume("pv1", phase="Released"), storage_class(provisioner=api.NO_PROVISIONER)), node=N1),
    "volume-being-deleted-is-no-match": Case(
        pod("p", uses("data")), volumes.BIND_CONFLICT,
        (claim("data"), volume("pv1", deleting=True), storage_class(provisioner=api.NO_PROVISIONER)), node=N1),
    "volume-claimed-by-another-claim-is-no-match": Case(
        pod("p", uses("data")), volumes.BIND_CONFLICT,
        (claim("data"), volume("pv1", claim_ref=(NS, "other")), storage_class(provisioner=api.NO_PROVISIONER)),
        node=N1),
    "volume-of-another-class-is-no-match": Case(
        pod("p", uses("data")), volumes.BIND_CONFLICT,
        (claim("data"), volume("pv1", cls="slow"), storage_class(provisioner=api.NO_PROVISIONER)), node=N1),
    "volume-pre-bound-to-the-claim-matches-though-not-available": Case(
        pod("p", uses("data")), None,
        (claim("data"), volume("pv1", phase="Pending", claim_ref=(NS, "data")),
         storage_class(provisioner=api.NO_PROVISIONER)), node=N1),
    "volume-pre-bound-to-the-claim-elsewhere-leaves-only-provisioning": Case(
        pod("p", uses("data")), volumes.BIND_CONFLICT,
        (claim("data"), volume("pv1", claim_ref=(NS, "data"), node_affinity=N2_ONLY), volume("pv2"),
         storage_class(provisioner=api.NO_PROVISIONER)), node=N1),
    "two-claims-cannot-share-one-volume": Case(
        pod("p", uses("a"), uses("b")), volumes.BIND_CONFLICT,
        (claim("a"), claim("b"), volume("pv1"), storage_class(provisioner=api.NO_PROVISIONER)), node=N1),
    "bound-and-unbound-failures-are-both-reported": Case(
        pod("p", uses("data"), uses("new")), f"{volumes.NODE_CONFLICT}, {volumes.BIND_CONFLICT}",
        (claim("data", volume="pv1"), volume("pv1", node_affinity=N2_ONLY), claim("new"),
         storage_class(provisioner=api.NO_PROVISIONER)), node=N1),
    # ---- VolumeZone
    "volume-in-the-nodes-zone-fits": Case(
        pod("p", uses("data")), None, (claim("data", volume="pv1"), volume("pv1", labels={ZONE: "a"})), node=N1),
    "volume-in-another-zone-rejects": Case(
        pod("p", uses("data")), volumes.ZONE_CONFLICT, (claim("data", volume="pv1"), volume("pv1", labels={ZONE: "b"})),
        node=N1),
    "volume-in-several-zones-fits-any-of-them": Case(
        pod("p", uses("data")), None, (claim("data", volume="pv1"), volume("pv1", labels={ZONE: "b__a"})), node=N1),
    "legacy-zone-label-on-the-volume-reads-the-nodes-ga-label": Case(
        pod("p", uses("data")), volumes.ZONE_CONFLICT,
        (claim("data", volume="pv1"), volume("pv1", labels={BETA_ZONE: "b"})), node=N1),
    "legacy-zone-label-matching-the-nodes-ga-label-fits": Case(
        pod("p", uses("data")), None, (claim("data", volume="pv1"), volume("pv1", labels={BETA_ZONE: "a"})), node=N1),
    "node-without-any-zone-label-takes-any-volume": Case(
        pod("p", uses("data")), None, (claim("data", volume="pv1"), volume("pv1", labels={ZONE: "b"}))),
    "node-with-a-region-but-no-zone-rejects-a-zoned-volume": Case(
        pod("p", uses("data")), volumes.ZONE_CONFLICT, (claim("data", volume="pv1"), volume("pv1", labels={ZONE: "a"})),
        node=node_("n1", labels={REGION: "r"})),
    "malformed-zone-label-is-ignored": Case(
        pod("p", uses("data")), None, (claim("data", volume="pv1"), volume("pv1", labels={ZONE: "b__"})), node=N1),
}


@pytest.mark.parametrize("case", REJECTED.values(), ids=REJECTED.keys())
def test_reject(case: Case) -> None:
    check = prepared(case)
    assert isinstance(check, volumes.Check), check
    assert check.reject(case.node) == case.expect


def test_the_smallest_fitting_volume_is_planned_and_smaller_claims_choose_first() -> None:
    case = Case(pod("p", uses("big"), uses("small")), None,
                (claim("big", storage="8Gi"), claim("small", storage="1Gi"), volume("pv-10", capacity="10Gi"),
                 volume("pv-2", capacity="2Gi"), volume("pv-9", capacity="9Gi"),
                 storage_class(provisioner=api.NO_PROVISIONER)), node=N1)
    check = prepared(case)
    assert isinstance(check, volumes.Check)
    assert check.plan(N1) == volumes.VolumePlan(node="n1", static=(((NS, "small"), "pv-2"), ((NS, "big"), "pv-9")))
    assert check.binding(N1) == ((NS, "small"), (NS, "big"))


def test_claims_without_a_volume_are_planned_for_provisioning_on_the_node() -> None:
    check = prepared(Case(pod("p", uses("data"), ephemeral("scratch")), None,
                          (claim("data"), claim("p-scratch", owner="p"), WFFC), node=N1))
    assert isinstance(check, volumes.Check)
    assert check.plan(N1) == volumes.VolumePlan(node="n1", provision=((NS, "data"), (NS, "p-scratch")))


def test_a_rejected_node_has_no_plan_and_bound_claims_need_none() -> None:
    rejected = prepared(Case(pod("p", uses("data")), None, (claim("data", annotations={api.SELECTED_NODE: "n2"}), WFFC)))
    assert isinstance(rejected, volumes.Check)
    assert rejected.plan(N1) is None and rejected.binding(N1) == ()
    bound = prepared(Case(pod("p", uses("data")), None, BOUND_CSI))
    assert isinstance(bound, volumes.Check) and not bound.binds
    assert bound.binding(N1) == ()


def test_assumed_plans_bind_the_volume_and_give_the_claim_its_node() -> None:
    objects = (claim("a"), claim("b"), volume("pv1", node_affinity=N1_ONLY), WFFC)
    storage = storage_of(objects)
    placed = placedpods.PlacedPods([N1, node_("n2", labels={"kubernetes.io/hostname": "n2"})])
    first = volumes.prepare(pod("p1", uses("a")), storage, placed)
    assert isinstance(first, volumes.Check)
    plan = first.plan(N1)
    assert plan == volumes.VolumePlan(node="n1", static=(((NS, "a"), "pv1"),))
    storage = volumes.assume(storage, plan)
    taken = storage.volumes["pv1"]
    assert taken.spec.claim_ref is not None and (taken.spec.claim_ref.namespace, taken.spec.claim_ref.name) == (NS, "a")
    assert taken.metadata.annotations[api.BOUND_BY_CONTROLLER] == "yes"
    # The next pod's claim no longer matches pv1: provisioned instead, and then given the node.
    second = volumes.prepare(pod("p2", uses("b")), storage, placed)
    assert isinstance(second, volumes.Check)
    plan = second.plan(N1)
    assert plan == volumes.VolumePlan(node="n1", provision=((NS, "b"),))
    storage = volumes.assume(storage, plan)
    assert storage.claims[(NS, "b")].metadata.annotations[api.SELECTED_NODE] == "n1"
    # A third pod sharing claim b must follow it to n1.
    third = volumes.prepare(pod("p3", uses("b")), storage, placed)
    assert isinstance(third, volumes.Check)
    assert third.reject(node_("n2")) == volumes.BIND_CONFLICT and third.reject(N1) is None


def test_a_pod_does_not_conflict_with_itself_once_placed() -> None:
    me = pod("p", inline("awsElasticBlockStore", volumeID="vol-1"), uses("data"))
    objects = (claim("data", volume="pv1", modes=("ReadWriteOncePod",)), volume("pv1"))
    check = prepared(Case(me, None, objects, placed=(me.model_copy(update={"spec": me.spec.model_copy(
        update={"node_name": "n1"})}),)))
    assert isinstance(check, volumes.Check)
    assert check.reject(node_("n1")) is None


def test_filters_report_in_the_profiles_order() -> None:
    """A node failing several filters is reported by the first: restrictions, limits, binding, zone."""
    objects = (claim("data", volume="pv1"), volume("pv1", handle="h1", labels={ZONE: "b"}, node_affinity=N2_ONLY),
               *TWO_VOLUMES, LIMIT_2)
    check = prepared(Case(pod("p", uses("data"), inline("gcePersistentDisk", pdName="pd")), None, objects,
                          (*TWO_ON_N1, pod("disk", inline("gcePersistentDisk", pdName="pd"), node="n1")), node=N1))
    assert isinstance(check, volumes.Check)
    assert check.reject(N1) == volumes.DISK_CONFLICT
    check = prepared(Case(pod("p", uses("data")), None, objects, TWO_ON_N1, node=N1))
    assert isinstance(check, volumes.Check)
    assert check.reject(N1) == volumes.MAX_VOLUME_COUNT
    check = prepared(Case(pod("p", uses("data")), None, objects, node=N1))
    assert isinstance(check, volumes.Check)
    assert check.reject(N1) == volumes.NODE_CONFLICT
