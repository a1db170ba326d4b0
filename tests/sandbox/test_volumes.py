"""PersistentVolumeClaims, PersistentVolumes, StorageClasses and CSINodes as kube-apiserver 1.37.2 serves them
(sandbox/volumes.py, the protection controllers in sandbox/collecting.py).

Every default and refusal here was recorded from the real 1.37.2 server (`make e2e`'s control
plane, with kube-controller-manager's PV binder off so that nothing bound the objects): the
sandbox's emulation of that controller is off here too (test_volume_binding.py tests it).
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.sandbox.conftest import Http

Obj = dict[str, Any]
PVCS = "/api/v1/namespaces/default/persistentvolumeclaims"
PVS = "/api/v1/persistentvolumes"
SCS = "/apis/storage.k8s.io/v1/storageclasses"
CSINODES = "/apis/storage.k8s.io/v1/csinodes"
PODS = "/api/v1/namespaces/default/pods"
STORAGE = {"requests": {"storage": "1Gi"}}
AFFINITY = {"required": {"nodeSelectorTerms": [{"matchExpressions": [
    {"key": "kubernetes.io/hostname", "operator": "In", "values": ["node-0"]}]}]}}
DEFAULT_CLASS = {"storageclass.kubernetes.io/is-default-class": "true"}
pytestmark = pytest.mark.sandbox(pv_binder=False)

SUBDOMAIN = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
             "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
             "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
NAME_PART = ("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
             "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
             "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")
LABEL_KEY = ("a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with "
             "an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
             "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. "
             "'example.com/MyName')")
LABEL_VALUE = ("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
               "start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used "
               "for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")


def claim(name: str = "c", meta: Obj | None = None, **spec: Any) -> Obj:
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name, **(meta or {})},
            "spec": spec}


def good_claim(name: str = "c", **spec: Any) -> Obj:
    return claim(name, **{"accessModes": ["ReadWriteOnce"], "resources": STORAGE, **spec})


def volume(name: str = "v", meta: Obj | None = None, **spec: Any) -> Obj:
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name, **(meta or {})}, "spec": spec}


def good_volume(name: str = "v", **spec: Any) -> Obj:
    return volume(name, **{"accessModes": ["ReadWriteOnce"], "capacity": {"storage": "10Gi"},
                           "hostPath": {"path": "/data"}, **spec})


def storage_class(name: str = "fast", meta: Obj | None = None, **fields: Any) -> Obj:
    return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name, **(meta or {})},
            **fields}


def csi_node(name: str = "node-0", *drivers: Obj) -> Obj:
    return {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": name},
            "spec": {"drivers": list(drivers)}}


def causes(body: Obj) -> list[tuple[str, str, str]]:
    return [(c["field"], c["reason"], c["message"]) for c in body["details"]["causes"]]


# ---- discovery ----------------------------------------------------------------------------------

async def test_discovery_serves_claims_volumes_classes_and_csi_nodes(http: Http) -> None:
    _, core = await http.get("/api/v1")
    served = {r["name"]: r for r in core["resources"]}
    assert served["persistentvolumeclaims"]["shortNames"] == ["pvc"] and served["persistentvolumeclaims"]["namespaced"]
    assert served["persistentvolumes"]["shortNames"] == ["pv"] and not served["persistentvolumes"]["namespaced"]
    assert served["persistentvolumeclaims/status"]["verbs"] == ["get", "patch", "update"]
    assert "persistentvolumes/status" in served and "watch" in served["persistentvolumes"]["verbs"]
    _, storage = await http.get("/apis/storage.k8s.io/v1")
    served = {r["name"]: r for r in storage["resources"]}
    assert set(served) == {"csidrivers", "csinodes", "csinodes/status", "csistoragecapacities",
                           "storageclasses"}  # test_csidrivers.py, test_storagecapacities.py
    assert served["storageclasses"]["shortNames"] == ["sc"] and not served["csinodes"]["namespaced"]
    _, group = await http.get("/apis/storage.k8s.io")
    assert group["preferredVersion"]["version"] == "v1"


# ---- defaults -----------------------------------------------------------------------------------

async def test_a_claim_is_defaulted_pending_and_protected(http: Http) -> None:
    code, created = await http.post(PVCS, good_claim(resources={"requests": {"storage": "1.5"}}))
    assert code == 201, created
    assert created["spec"] == {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1500m"}},
                               "volumeMode": "Filesystem"}
    assert created["status"] == {"phase": "Pending"}
    assert created["metadata"]["finalizers"] == ["kubernetes.io/pvc-protection"]
    code, got = await http.get(f"{PVCS}/c")
    assert code == 200 and got == created
    _, listed = await http.get(PVCS)
    assert [item["metadata"]["name"] for item in listed["items"]] == ["c"]


async def test_a_volume_is_defaulted_pending_and_protected(http: Http) -> None:
    code, created = await http.post(PVS, good_volume())
    assert code == 201, created
    assert created["spec"] == {"accessModes": ["ReadWriteOnce"], "capacity": {"storage": "10Gi"},
                               "hostPath": {"path": "/data", "type": ""}, "persistentVolumeReclaimPolicy": "Retain",
                               "volumeMode": "Filesystem"}
    assert created["status"]["phase"] == "Pending" and created["status"]["lastPhaseTransitionTime"]
    assert created["metadata"]["finalizers"] == ["kubernetes.io/pv-protection"]
    code, written = await http.patch(f"{PVS}/v/status", {"status": {"phase": "Available"}})
    assert code == 200 and written["status"]["phase"] == "Available" and written["spec"] == created["spec"]


async def test_a_storage_class_and_a_csi_node_are_defaulted(http: Http) -> None:
    code, created = await http.post(SCS, storage_class(provisioner="csi.example.com", parameters={"type": "ssd"}))
    assert code == 201, created
    assert {k: v for k, v in created.items() if k not in ("metadata", "apiVersion", "kind")} == {
        "provisioner": "csi.example.com", "parameters": {"type": "ssd"}, "reclaimPolicy": "Delete",
        "volumeBindingMode": "Immediate"}
    code, node = await http.post(CSINODES, csi_node("node-0", {"name": "csi.example.com", "nodeID": "n0"}))
    assert code == 201 and node["spec"] == {"drivers": [{"name": "csi.example.com", "nodeID": "n0",
                                                         "topologyKeys": None}]}
    assert node["status"] == {}
    code, node = await http.post(CSINODES, csi_node("node-1"))
    assert code == 201 and node["spec"] == {"drivers": None}  # no omitempty: empty comes back as null


async def test_data_sources_are_mirrored_and_foreign_ones_dropped(http: Http) -> None:
    code, created = await http.post(PVCS, good_claim("a", dataSource={"kind": "PersistentVolumeClaim", "name": "src"}))
    assert code == 201
    assert created["spec"]["dataSource"] == created["spec"]["dataSourceRef"] == {
        "apiGroup": None, "kind": "PersistentVolumeClaim", "name": "src"}
    code, created = await http.post(PVCS, good_claim("b", dataSourceRef={"apiGroup": "example.com", "kind": "Thing",
                                                                         "name": "x"}))
    assert created["spec"]["dataSource"] == {"apiGroup": "example.com", "kind": "Thing", "name": "x"}
    code, created = await http.post(PVCS, good_claim("d", dataSource={"kind": "Foo", "name": "x"}))
    assert code == 201 and "dataSource" not in created["spec"] and "dataSourceRef" not in created["spec"]


async def test_a_claim_without_a_class_gets_the_newest_default_class(http: Http) -> None:
    await http.post(SCS, storage_class("old", {"annotations": DEFAULT_CLASS}, provisioner="p.example.com"))
    await http.post(SCS, storage_class("new", {"annotations": DEFAULT_CLASS}, provisioner="p.example.com"))
    _, created = await http.post(PVCS, good_claim("a"))
    assert created["spec"]["storageClassName"] == "new"  # the newer one (in the same second: the first by name)
    _, created = await http.post(PVCS, good_claim("b", storageClassName=""))
    assert created["spec"]["storageClassName"] == ""  # an explicit "" asks for no class
    _, created = await http.post(PVCS, claim("d", {"annotations": {"volume.beta.kubernetes.io/storage-class": "x"}},
                                             accessModes=["ReadWriteOnce"], resources=STORAGE))
    assert "storageClassName" not in created["spec"]


# ---- watch and the protection controllers -------------------------------------------------------

async def test_a_deleted_claim_stays_while_a_pod_on_a_node_uses_it(http: Http) -> None:
    _, listed = await http.get(PVCS)
    start = listed["metadata"]["resourceVersion"]
    await http.post(PVCS, good_claim("data"))
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"nodeName": "node-0", "containers": [{"name": "c", "image": "i"}],
                    "volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": "data"}}]}}
    code, _ = await http.post(PODS, pod)
    assert code == 201
    code, deleting = await http.delete(f"{PVCS}/data")
    assert code == 200 and deleting["metadata"]["deletionTimestamp"]
    code, still = await http.get(f"{PVCS}/data")
    assert code == 200 and still["metadata"]["finalizers"] == ["kubernetes.io/pvc-protection"]
    await http.delete(f"{PODS}/p")
    events = await http.watch(PVCS, count=3, resourceVersion=start)
    assert [e["type"] for e in events] == ["ADDED", "MODIFIED", "DELETED"]
    assert (await http.get(f"{PVCS}/data"))[0] == 404


async def test_a_deleted_volume_stays_while_bound(http: Http) -> None:
    _, created = await http.post(PVS, good_volume())
    await http.patch(f"{PVS}/v/status", {"status": {"phase": "Bound"}})
    await http.delete(f"{PVS}/v")
    code, still = await http.get(f"{PVS}/v")
    assert code == 200 and still["metadata"]["deletionTimestamp"]
    await http.patch(f"{PVS}/v/status", {"status": {"phase": "Released"}})
    events = await http.watch(PVS, count=4, resourceVersion=created["metadata"]["resourceVersion"])
    # Bound, the deletion, Released, then the pv-protection controller's finalizer removal
    assert [e["type"] for e in events] == ["MODIFIED", "MODIFIED", "MODIFIED", "DELETED"]
    assert (await http.get(f"{PVS}/v"))[0] == 404


# ---- refusals, as the real server words them ---------------------------------------------------

CREATE_REFUSALS = {
    "claim-empty": (PVCS, claim("c"), [
        ("spec.accessModes", "FieldValueRequired", "Required value: at least 1 access mode is required"),
        ("spec.resources[storage]", "FieldValueRequired", "Required value")]),
    "claim-modes-size-class-mode": (PVCS, claim("c", accessModes=["ReadWriteOnce", "Nope", "ReadWriteOncePod"],
                                                resources={"requests": {"storage": "0"}}, volumeMode="Weird",
                                                storageClassName="Bad_Name"), [
        ("spec.accessModes", "FieldValueNotSupported", 'Unsupported value: "Nope": supported values: "ReadOnlyMany", '
                                                       '"ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"'),
        ("spec.accessModes", "FieldValueForbidden", "Forbidden: may not use ReadWriteOncePod with other access modes"),
        ("spec.resources[storage]", "FieldValueInvalid", 'Invalid value: "0": must be greater than zero'),
        ("spec.storageClassName", "FieldValueInvalid", f'Invalid value: "Bad_Name": {SUBDOMAIN}'),
        ("spec.volumeMode", "FieldValueNotSupported", 'Unsupported value: "Weird": supported values: "Block", '
                                                      '"Filesystem"')]),
    "claim-negative-size": (PVCS, good_claim(resources={"requests": {"storage": "-1"}}), [
        ("spec.resources[storage]", "FieldValueInvalid", 'Invalid value: "-1": must be greater than zero')]),
    "claim-selector": (PVCS, good_claim(selector={"matchLabels": {"a/b/c": "x y"}, "matchExpressions": [
        {"key": "a", "operator": "In"}, {"key": "b", "operator": "Exists", "values": ["v"]},
        {"key": "c", "operator": "Like"}]}), [
        ("spec.selector.matchLabels", "FieldValueInvalid", f'Invalid value: "a/b/c": {LABEL_KEY}'),
        ("spec.selector.matchLabels", "FieldValueInvalid", f'Invalid value: "x y": {LABEL_VALUE}'),
        ("spec.selector.matchExpressions[0].values", "FieldValueRequired",
         "Required value: must be specified when `operator` is 'In' or 'NotIn'"),
        ("spec.selector.matchExpressions[1].values", "FieldValueForbidden",
         "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"),
        ("spec.selector.matchExpressions[2].operator", "FieldValueInvalid",
         'Invalid value: "Like": not a valid selector operator')]),
    "claim-data-sources": (PVCS, good_claim(dataSourceRef={"kind": "Thing", "apiGroup": "Bad_Group"},
                                            dataSource={"kind": "PersistentVolumeClaim", "name": "y"}), [
        ("spec.dataSourceRef.name", "FieldValueRequired", "Required value"),
        ("spec.dataSourceRef.apiGroup", "FieldValueInvalid", f'Invalid value: "Bad_Group": {SUBDOMAIN}'),
        ("spec", "FieldValueInvalid", "Invalid value: {}: must match dataSourceRef")]),
    "volume-empty": (PVS, volume("v"), [
        ("spec.accessModes", "FieldValueRequired", "Required value"),
        ("spec.capacity", "FieldValueRequired", "Required value"),
        ("spec.capacity", "FieldValueNotSupported", 'Unsupported value: null: supported values: "storage"'),
        ("spec", "FieldValueRequired", "Required value: must specify a volume type")]),
    "volume-two-sources": (PVS, volume("v", accessModes=["ReadWriteOnce"], capacity={"storage": "1Gi", "cpu": "1"},
                                       hostPath={"path": "/a"}, nfs={"server": "s", "path": "rel"},
                                       csi={"driver": "", "volumeHandle": ""}), [
        ("spec.capacity", "FieldValueNotSupported",
         'Unsupported value: {"cpu":"1","storage":"1Gi"}: supported values: "storage"'),
        ("spec.nfs", "FieldValueForbidden", "Forbidden: may not specify more than 1 volume type"),
        ("spec.csi", "FieldValueForbidden", "Forbidden: may not specify more than 1 volume type")]),
    "volume-local-without-affinity": (PVS, good_volume(hostPath=None, local={"path": "/a/../b"}), [
        ("spec.local.path", "FieldValueInvalid", "Invalid value: \"/a/../b\": must not contain '..'"),
        ("spec.nodeAffinity", "FieldValueRequired", "Required value: Local volume requires node affinity")]),
    "volume-size-policy-terms": (PVS, good_volume(capacity={"storage": "0"}, persistentVolumeReclaimPolicy="Keep",
                                                  nodeAffinity={"required": {"nodeSelectorTerms": []}}), [
        ("spec.capacity[storage]", "FieldValueInvalid", 'Invalid value: "0": must be greater than zero'),
        ("spec.persistentVolumeReclaimPolicy", "FieldValueNotSupported",
         'Unsupported value: "Keep": supported values: "Delete", "Recycle", "Retain"'),
        ("spec.nodeAffinity.required.nodeSelectorTerms", "FieldValueRequired",
         "Required value: must have at least one node selector term")]),
    "volume-affinity-without-required": (PVS, good_volume(nodeAffinity={}), [
        ("spec.nodeAffinity.required", "FieldValueRequired", "Required value: must specify required node constraints")]),
    "volume-node-selector-rules": (PVS, good_volume(nodeAffinity={"required": {"nodeSelectorTerms": [{
        "matchExpressions": [{"key": "bad key", "operator": "Near", "values": ["a"]}, {"key": "k", "operator": "In"},
                             {"key": "k", "operator": "Exists", "values": ["x"]}],
        "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["a", "b"]}]}]}}), [
        ("spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].operator", "FieldValueInvalid",
         'Invalid value: "Near": not a valid selector operator'),
        ("spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].key", "FieldValueInvalid",
         f'Invalid value: "bad key": {NAME_PART}'),
        ("spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[1].values", "FieldValueRequired",
         "Required value: must be specified when `operator` is 'In' or 'NotIn'"),
        ("spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[2].values", "FieldValueForbidden",
         "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"),
        ("spec.nodeAffinity.required.nodeSelectorTerms[0].matchFields[0].values", "FieldValueRequired",
         "Required value: must be only one value when `operator` is 'In' or 'NotIn' for node field selector")]),
    "volume-negative-root-host-path": (PVS, good_volume(capacity={"storage": "-1.5"}, hostPath={"path": "/",
                                                                                                "type": "Weird"},
                                                        persistentVolumeReclaimPolicy="Recycle"), [
        ("spec.capacity[storage]", "FieldValueInvalid", "Invalid value: -2: must be a valid resource quantity"),
        ("spec.capacity[storage]", "FieldValueInvalid", 'Invalid value: "-1500m": must be greater than zero'),
        ("spec.hostPath.type", "FieldValueNotSupported", 'Unsupported value: "Weird": supported values: "", '
         '"BlockDevice", "CharDevice", "Directory", "DirectoryOrCreate", "File", "FileOrCreate", "Socket"'),
        ("spec.persistentVolumeReclaimPolicy", "FieldValueForbidden",
         "Forbidden: may not be 'recycle' for a hostPath mount of '/'")]),
    "class-without-provisioner": (SCS, storage_class(), [("provisioner", "FieldValueRequired", "Required value")]),
    "class-fields": (SCS, storage_class(provisioner="Not A/Qualified/Name", reclaimPolicy="Recycle",
                                        volumeBindingMode="Later", parameters={"": "x"}, allowedTopologies=[
                                            {"matchLabelExpressions": [{"key": "zone", "values": []},
                                                                       {"key": "zone", "values": ["a", "a"]}]},
                                            {"matchLabelExpressions": []}]), [
        ("provisioner", "FieldValueInvalid", f'Invalid value: "not a/qualified/name": {LABEL_KEY}'),
        ("parameters", "FieldValueInvalid", 'Invalid value: "": field can not be empty.'),
        ("reclaimPolicy", "FieldValueNotSupported", 'Unsupported value: "Recycle": supported values: "Delete", '
                                                    '"Retain"'),
        ("volumeBindingMode", "FieldValueNotSupported",
         'Unsupported value: "Later": supported values: "Immediate", "WaitForFirstConsumer"'),
        ("allowedTopologies[0].matchLabelExpressions[0].values", "FieldValueRequired", "Required value"),
        ("allowedTopologies[0].matchLabelExpressions[1].values[1]", "FieldValueDuplicate", 'Duplicate value: "a"'),
        ("allowedTopologies[0].matchLabelExpressions[1].key", "FieldValueDuplicate", 'Duplicate value: "zone"'),
        ("allowedTopologies[1].matchLabelExpressions", "FieldValueDuplicate", 'Duplicate value: ""')]),
    "csi-node-drivers": (CSINODES, csi_node(
        "node-1", {"name": "csi.example.com", "nodeID": "", "topologyKeys": ["", "a", "a", "b/c/d"],
                   "allocatable": {"count": -1}},
        {"name": "csi.example.com", "nodeID": "y"}, {"name": "", "nodeID": "z"},
        {"name": "a" * 64 + ".com", "nodeID": "z"}), [
        ("spec.drivers[0].nodeID", "FieldValueRequired", "Required value"),
        ("spec.drivers[0].allocatable.count", "FieldValueInvalid",
         "Invalid value: -1: must be greater than or equal to 0"),
        ("spec.drivers[0]", "FieldValueRequired", "Required value"),
        ("spec.drivers[0]", "FieldValueInvalid", 'Invalid value: "": name part must be non-empty'),
        ("spec.drivers[0]", "FieldValueInvalid", f'Invalid value: "": {NAME_PART}'),
        ("spec.drivers[0]", "FieldValueDuplicate", 'Duplicate value: "a"'),
        ("spec.drivers[0]", "FieldValueInvalid", f'Invalid value: "b/c/d": {LABEL_KEY}'),
        ("spec.drivers[1].name", "FieldValueDuplicate", 'Duplicate value: "csi.example.com"'),
        ("spec.drivers[2].name", "FieldValueRequired", "Required value"),
        ("spec.drivers[3].name", "FieldValueTooLong", "Too long: may not be more than 63 bytes")]),
}


@pytest.mark.parametrize(("collection", "body", "expected"), CREATE_REFUSALS.values(), ids=CREATE_REFUSALS.keys())
async def test_invalid_objects_are_refused_with_upstreams_causes(http: Http, collection: str, body: Obj,
                                                                 expected: list[tuple[str, str, str]]) -> None:
    code, answer = await http.post(collection, body)
    assert code == 422, answer
    assert causes(answer) == expected
    group = ".storage.k8s.io" if collection.startswith("/apis/") else ""
    assert answer["message"].startswith(f'{body["kind"]}{group} "{body["metadata"]["name"]}" is invalid: ')


UPDATE_REFUSALS = {
    "claim-volume-mode": (PVCS, good_claim(), {"spec": {"volumeMode": "Block"}}, "", [
        ("spec", "FieldValueForbidden", "Forbidden: spec is immutable after creation except resources.requests and "
                                        "volumeAttributesClassName for bound claims\n@@ -11,7 +11,7 @@\n  },\n"
                                        '  "VolumeName": "",\n  "StorageClassName": null,\n'
                                        '- "VolumeMode": "Filesystem",\n+ "VolumeMode": "Block",\n'
                                        '  "DataSource": null,\n  "DataSourceRef": null,\n'
                                        '  "VolumeAttributesClassName": null\n'),
        ("volumeMode", "FieldValueInvalid", 'Invalid value: "Block": field is immutable')]),
    "claim-status-capacity": (PVCS, good_claim(), {"status": {"capacity": {"storage": "-1"},
                                                             "allocatedResources": {"cpu": "1", "storage": "-1"},
                                                             "allocatedResourceStatuses": {"storage": "Sleeping"}}},
                              "status", [
        ("status.capacity[storage]", "FieldValueInvalid", "Invalid value: -1: must be a valid resource quantity"),
        ("status.allocatedResourceStatuses", "FieldValueNotSupported",
         'Unsupported value: "storage": supported values: "ControllerResizeInProgress", "ControllerResizeInfeasible", '
         '"NodeResizeInProgress", "NodeResizeInfeasible", "NodeResizePending"'),
        ("status.allocatedResources", "FieldValueNotSupported", 'Unsupported value: "cpu": supported values: "storage"'),
        ("status.allocatedResources[storage]", "FieldValueInvalid",
         "Invalid value: -1: must be a valid resource quantity")]),
    "volume-source": (PVS, good_volume(), {"spec": {"hostPath": {"path": "/other"}}}, "", [
        ("spec.persistentvolumesource", "FieldValueForbidden",
         'Forbidden: spec.persistentvolumesource is immutable after creation\n@@ -2,7 +2,7 @@\n'
         '  "GCEPersistentDisk": null,\n  "AWSElasticBlockStore": null,\n  "HostPath": {\n'
         '-  "Path": "/data",\n+  "Path": "/other",\n   "Type": ""\n  },\n  "Glusterfs": null,\n')]),
    "volume-mode": (PVS, good_volume(), {"spec": {"volumeMode": "Block"}}, "", [
        ("volumeMode", "FieldValueInvalid", 'Invalid value: "Block": field is immutable')]),
    "volume-node-affinity": (PVS, good_volume(hostPath=None, local={"path": "/mnt"}, nodeAffinity=AFFINITY),
                             {"spec": {"nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                                 {"key": "kubernetes.io/hostname", "operator": "In", "values": ["node-1"]}]}]}}}}, "", [
        ("nodeAffinity", "FieldValueInvalid",
         'Invalid value: {"Required":{"NodeSelectorTerms":[{"MatchExpressions":[{"Key":"kubernetes.io/hostname",'
         '"Operator":"In","Values":["node-1"]}],"MatchFields":null}]}}: field is immutable, except for updating from '
         "beta label to GA")]),
    "class-immutables": (SCS, storage_class(provisioner="csi.example.com", parameters={"type": "ssd"}),
                         {"provisioner": "other.example.com", "parameters": {"type": "hdd"}, "reclaimPolicy": "Retain",
                          "volumeBindingMode": "WaitForFirstConsumer"}, "", [
        ("provisioner", "FieldValueInvalid", "Invalid value: null: field is immutable"),
        ("parameters", "FieldValueInvalid", "Invalid value: null: field is immutable"),
        ("reclaimPolicy", "FieldValueInvalid", "Invalid value: null: field is immutable"),
        ("volumeBindingMode", "FieldValueInvalid", "Invalid value: null: field is immutable")]),
    "class-topologies-revalidated": (SCS, storage_class(provisioner="csi.example.com"),
                                     {"allowedTopologies": [{"matchLabelExpressions": [{"key": "bad key",
                                                                                         "values": []}]}]}, "", [
        ("allowedTopologies[0].matchLabelExpressions[0].values", "FieldValueRequired", "Required value"),
        ("allowedTopologies[0].matchLabelExpressions[0].key", "FieldValueInvalid",
         f'Invalid value: "bad key": {NAME_PART}')]),
    "csi-node-driver": (CSINODES, csi_node("node-0", {"name": "csi.example.com", "nodeID": "n0"}),
                        {"spec": {"drivers": [{"name": "csi.example.com", "nodeID": "n1"}]}}, "", [
        ("spec.drivers", "FieldValueInvalid", 'Invalid value: {"Name":"csi.example.com","NodeID":"n1",'
                                              '"TopologyKeys":null,"Allocatable":null}: field is immutable')]),
}


@pytest.mark.parametrize(("collection", "body", "patch", "subresource", "expected"), UPDATE_REFUSALS.values(),
                         ids=UPDATE_REFUSALS.keys())
async def test_immutable_fields_and_bad_status_are_refused(http: Http, collection: str, body: Obj, patch: Obj,
                                                           subresource: str, expected: list[tuple[str, str, str]]) -> None:
    code, created = await http.post(collection, body)
    assert code == 201, created
    path = f"{collection}/{body['metadata']['name']}" + (f"/{subresource}" if subresource else "")
    code, answer = await http.patch(path, patch)
    assert code == 422, answer
    assert causes(answer) == expected


async def test_what_may_change_after_creation(http: Http) -> None:
    await http.post(PVCS, good_claim())
    code, bound = await http.patch(f"{PVCS}/c", {"spec": {"volumeName": "pv-a"}})  # once, as the PV controller does
    assert code == 200 and bound["spec"]["volumeName"] == "pv-a"
    code, answer = await http.patch(f"{PVCS}/c", {"spec": {"volumeName": "pv-b"}})
    assert code == 422 and causes(answer)[0][2].endswith('- "VolumeName": "pv-a",\n+ "VolumeName": "pv-b",\n'
                                                         '  "StorageClassName": null,\n  "VolumeMode": "Filesystem",\n'
                                                         '  "DataSource": null,\n')
    code, classed = await http.patch(f"{PVCS}/c", {"spec": {"storageClassName": "fast"}})  # from none, once
    assert code == 200 and classed["spec"]["storageClassName"] == "fast"
    await http.post(PVS, good_volume())
    code, changed = await http.patch(f"{PVS}/v", {"spec": {
        "capacity": {"storage": "20Gi"}, "persistentVolumeReclaimPolicy": "Delete", "storageClassName": "x",
        "accessModes": ["ReadWriteMany"], "nodeAffinity": AFFINITY, "claimRef": {"namespace": "default", "name": "c"}}})
    assert code == 200 and changed["spec"]["capacity"] == {"storage": "20Gi"}
    await http.post(CSINODES, csi_node("node-0", {"name": "csi.example.com", "nodeID": "n0"}))
    code, _ = await http.patch(f"{CSINODES}/node-0", {"spec": {"drivers": [
        {"name": "csi.example.com", "nodeID": "n0", "allocatable": {"count": 8}}, {"name": "b.example.com",
                                                                                   "nodeID": "n0"}]}})
    assert code == 200


async def test_only_a_bound_claim_of_an_expandable_class_grows(http: Http) -> None:
    await http.post(SCS, storage_class("grow", provisioner="p.example.com", allowVolumeExpansion=True))
    await http.post(PVCS, good_claim("a", storageClassName="grow"))
    await http.post(PVCS, good_claim("b"))
    grow = {"spec": {"resources": {"requests": {"storage": "2Gi"}}}}
    code, answer = await http.patch(f"{PVCS}/a", grow)
    assert code == 422 and causes(answer)[0][0] == "spec"  # not bound: requests are part of the immutable spec
    for name in ("a", "b"):
        await http.patch(f"{PVCS}/{name}/status", {"status": {"phase": "Bound", "capacity": {"storage": "1Gi"}}})
    code, grown = await http.patch(f"{PVCS}/a", grow)
    assert code == 200 and grown["spec"]["resources"]["requests"]["storage"] == "2Gi"
    code, answer = await http.patch(f"{PVCS}/b", grow)
    assert code == 403 and answer["message"] == (
        'persistentvolumeclaims "b" is forbidden: only dynamically provisioned pvc can be resized and the '
        "storageclass that provisions the pvc must support resize")
    code, answer = await http.patch(f"{PVCS}/a", {"spec": {"resources": {"requests": {"storage": "512Mi"}}}})
    assert code == 422 and causes(answer) == [("spec.resources.requests.storage", "FieldValueForbidden",
                                               "Forbidden: field can not be less than status.capacity")]


# ---- kubectl's table -----------------------------------------------------------------------------

async def test_tables_have_upstreams_columns(http: Http) -> None:
    await http.post(SCS, storage_class("std", {"annotations": DEFAULT_CLASS}, provisioner="p.example.com"))
    await http.post(PVCS, good_claim(volumeName="v"))
    await http.patch(f"{PVCS}/c/status", {"status": {"phase": "Bound", "accessModes": ["ReadWriteMany", "ReadWriteOnce"],
                                                     "capacity": {"storage": "2Gi"}}})
    accept = "application/json;as=Table;v=v1;g=meta.k8s.io"
    async with http.session.get(http.url + PVCS, headers={"Accept": accept}) as resp:
        table = await resp.json()
    assert [c["name"] for c in table["columnDefinitions"]] == [
        "Name", "Status", "Volume", "Capacity", "Access Modes", "StorageClass", "VolumeAttributesClass", "Age",
        "VolumeMode"]
    cells = table["rows"][0]["cells"]
    assert cells[:7] == ["c", "Bound", "v", "2Gi", "RWO,RWX", "std", "<unset>"] and cells[8] == "Filesystem"
    async with http.session.get(http.url + SCS, headers={"Accept": accept}) as resp:
        table = await resp.json()
    assert table["rows"][0]["cells"][:5] == ["std (default)", "p.example.com", "Delete", "Immediate", False]
