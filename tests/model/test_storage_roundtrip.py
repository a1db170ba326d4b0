"""Storage models (model/storage.py) read what the API serves, write it back unchanged, and default
what the API server defaults."""

from __future__ import annotations

from typing import Any

import pytest

from dralloc.model import conversion, storage

CLAIM: dict[str, Any] = {
    "apiVersion": "v1", "kind": "PersistentVolumeClaim",
    "metadata": {"name": "data", "namespace": "ml", "uid": "u-1",
                 "annotations": {"pv.kubernetes.io/bind-completed": "yes",
                                 "volume.kubernetes.io/selected-node": "n1"}},
    "spec": {"accessModes": ["ReadWriteOncePod"], "resources": {"requests": {"storage": "10Gi"}},
             "storageClassName": "fast", "volumeName": "pv-1", "volumeMode": "Block",
             "selector": {"matchLabels": {"tier": "gold"}}, "dataSourceRef": {"kind": "VolumeSnapshot", "name": "s"}},
    "status": {"phase": "Bound", "accessModes": ["ReadWriteOncePod"], "capacity": {"storage": "10Gi"}},
}
VOLUME: dict[str, Any] = {
    "apiVersion": "v1", "kind": "PersistentVolume",
    "metadata": {"name": "pv-1", "labels": {"topology.kubernetes.io/zone": "a__b"}},
    "spec": {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": "fast",
             "claimRef": {"kind": "PersistentVolumeClaim", "namespace": "ml", "name": "data", "uid": "u-1"},
             "nodeAffinity": {"required": {"nodeSelectorTerms": [
                 {"matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["a"]}]}]}},
             "csi": {"driver": "csi.example.com", "volumeHandle": "h-1", "fsType": "ext4",
                     "volumeAttributes": {"k": "v"}},
             "persistentVolumeReclaimPolicy": "Delete", "mountOptions": ["ro"]},
    "status": {"phase": "Bound"},
}
IN_TREE_VOLUME: dict[str, Any] = {
    "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv-2"},
    "spec": {"capacity": {"storage": "1Gi"}, "gcePersistentDisk": {"pdName": "pd", "fsType": "ext4"}},
    "status": {"phase": "Available"},
}
CLASS: dict[str, Any] = {
    "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "fast"},
    "provisioner": "csi.example.com", "parameters": {"type": "ssd"}, "reclaimPolicy": "Delete",
    "volumeBindingMode": "WaitForFirstConsumer", "allowVolumeExpansion": True,
    "allowedTopologies": [{"matchLabelExpressions": [{"key": "topology.kubernetes.io/zone", "values": ["a", "b"]}]}],
}
CSI_NODE: dict[str, Any] = {
    "apiVersion": "storage.k8s.io/v1", "kind": "CSINode",
    "metadata": {"name": "n1", "annotations": {storage.MIGRATED_PLUGINS: "kubernetes.io/gce-pd,kubernetes.io/aws-ebs"}},
    "spec": {"drivers": [{"name": "csi.example.com", "nodeID": "i-1", "topologyKeys": ["topology.kubernetes.io/zone"],
                          "allocatable": {"count": 25}}, {"name": "other.example.com", "nodeID": "i-1"}]},
}
CSI_DRIVER: dict[str, Any] = {
    "apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": "csi.example.com"},
    "spec": {"attachRequired": True, "podInfoOnMount": False, "preventPodSchedulingIfMissing": True},
}


@pytest.mark.parametrize(("model", "raw"), [
    (storage.PersistentVolumeClaim, CLAIM), (storage.PersistentVolume, VOLUME), (storage.PersistentVolume, IN_TREE_VOLUME),
    (storage.StorageClass, CLASS), (storage.CSINode, CSI_NODE), (storage.CSIDriver, CSI_DRIVER),
], ids=["claim", "csi-volume", "in-tree-volume", "class", "csinode", "csidriver"])
def test_served_objects_round_trip(model: type[storage.PersistentVolumeClaim], raw: dict[str, Any]) -> None:
    assert conversion.to_raw(conversion.parse_as(model, raw)) == raw


def test_a_claim_reads_its_class_binding_and_request() -> None:
    claim = conversion.parse_as(storage.PersistentVolumeClaim, CLAIM)
    assert claim.class_name() == "fast" and claim.fully_bound() and claim.volume_mode() == "Block"
    assert str(claim.requested_storage()) == "10Gi"
    assert claim.metadata.annotations[storage.SELECTED_NODE] == "n1"
    assert claim.spec.selector is not None and claim.spec.selector.match_labels == {"tier": "gold"}


def test_the_beta_class_annotation_comes_before_the_class_name() -> None:
    raw = CLAIM | {"metadata": CLAIM["metadata"] | {"annotations": {storage.BETA_STORAGE_CLASS: "legacy"}}}
    claim = conversion.parse_as(storage.PersistentVolumeClaim, raw)
    assert claim.class_name() == "legacy" and not claim.fully_bound()
    volume = conversion.parse_as(storage.PersistentVolume, VOLUME | {
        "metadata": {"name": "pv-1", "annotations": {storage.BETA_STORAGE_CLASS: "legacy"}}})
    assert volume.class_name() == "legacy"


def test_a_volume_reads_its_csi_source_and_keeps_in_tree_ones() -> None:
    volume = conversion.parse_as(storage.PersistentVolume, VOLUME)
    assert volume.spec.csi is not None and (volume.spec.csi.driver, volume.spec.csi.volume_handle) == (
        "csi.example.com", "h-1")
    assert volume.spec.claim_ref is not None and volume.spec.claim_ref.uid == "u-1"
    assert volume.spec.node_affinity is not None and volume.spec.node_affinity.required is not None
    in_tree = conversion.parse_as(storage.PersistentVolume, IN_TREE_VOLUME)
    assert in_tree.spec.csi is None and in_tree.spec.model_extra == {"gcePersistentDisk": {"pdName": "pd", "fsType": "ext4"}}
    assert in_tree.volume_mode() == storage.FILESYSTEM and in_tree.class_name() == ""


def test_defaults_are_the_api_servers() -> None:
    unset = conversion.parse_as(storage.StorageClass, {"kind": "StorageClass", "metadata": {"name": "c"},
                                                       "provisioner": "p"})
    assert unset.binding_mode() == storage.IMMEDIATE
    assert conversion.parse_as(storage.StorageClass, CLASS).binding_mode() == storage.WAIT_FOR_FIRST_CONSUMER
    claim = conversion.parse_as(storage.PersistentVolumeClaim, {"kind": "PersistentVolumeClaim",
                                                                "metadata": {"name": "c"}})
    assert claim.volume_mode() == storage.FILESYSTEM and claim.class_name() == "" and claim.requested_storage() is None


def test_a_csinode_reads_its_drivers_limits_and_migrated_plugins() -> None:
    node = conversion.parse_as(storage.CSINode, CSI_NODE)
    assert [(d.name, d.node_id, d.allocatable.count if d.allocatable else None) for d in node.spec.drivers] == [
        ("csi.example.com", "i-1", 25), ("other.example.com", "i-1", None)]
    assert node.migrated_plugins() == {"kubernetes.io/gce-pd", "kubernetes.io/aws-ebs"}
    driver = conversion.parse_as(storage.CSIDriver, CSI_DRIVER)
    assert driver.spec.prevent_pod_scheduling_if_missing is True
