"""storage.k8s.io/v1 CSIStorageCapacities as kube-apiserver 1.37.2 serves them (sandbox/storagecapacities.py).

Every answer, refusal and table cell here was recorded from the real 1.37.2 server (`make e2e`'s
control plane).
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.sandbox.conftest import Http

Obj = dict[str, Any]
GV = "/apis/storage.k8s.io/v1"
CAPACITIES = f"{GV}/namespaces/default/csistoragecapacities"
SUBDOMAIN = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
             "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
             "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
LABEL_KEY = ("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
             "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
             "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")
LABEL_VALUE = ("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
               "start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used "
               "for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")
ZONE = {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["a"]}
TOPOLOGY = {"matchLabels": {"a": "2", "z": "1"}, "matchExpressions": [ZONE]}
TOPOLOGY_JSON = ('{"matchLabels":{"a":"2","z":"1"},"matchExpressions":[{"key":"topology.kubernetes.io/zone",'
                 '"operator":"In","values":["a"]}]}')
TOPOLOGY_Z2 = TOPOLOGY_JSON.replace('"z":"1"', '"z":"2"')  # a merge patch changes one label
TOPOLOGY_Q = TOPOLOGY_JSON.replace('"a":"2",', '"a":"2","q":"r",')  # or adds one


def capacity(name: str = "cap", **fields: Any) -> Obj:
    return {"apiVersion": "storage.k8s.io/v1", "kind": "CSIStorageCapacity", "metadata": {"name": name}, **fields}


def causes(body: Obj) -> list[tuple[str, str, str]]:
    return [(c["field"], c["reason"], c["message"]) for c in body["details"]["causes"]]


def fields(obj: Obj) -> list[tuple[str, Any]]:
    """The object's own fields (not TypeMeta, not metadata), in the order they came back."""
    return [(k, v) for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata")]


async def test_discovery_lists_csistoragecapacities(http: Http) -> None:
    _, listing = await http.get(GV)
    served = {r["name"]: r for r in listing["resources"]}
    found = served["csistoragecapacities"]
    assert found["kind"] == "CSIStorageCapacity" and found["namespaced"]
    assert found["singularName"] == "csistoragecapacity"
    assert "shortNames" not in found and "categories" not in found and "csistoragecapacities/status" not in served
    assert found["verbs"] == ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]


async def test_nothing_is_defaulted_and_fields_come_back_in_go_order(http: Http) -> None:
    code, created = await http.post(CAPACITIES, capacity("a", storageClassName="std"))
    assert code == 201, created
    assert fields(created) == [("storageClassName", "std")]
    body = capacity("full", maximumVolumeSize="0.5", capacity="1.5Gi", storageClassName="std",
                    nodeTopology={"matchExpressions": [{"values": ["a"], "operator": "In",
                                                        "key": "topology.kubernetes.io/zone"}],
                                  "matchLabels": {"z": "1", "a": "2"}})
    code, created = await http.post(CAPACITIES, body)
    assert code == 201, created
    assert fields(created) == [("nodeTopology", TOPOLOGY), ("storageClassName", "std"), ("capacity", "1536Mi"),
                               ("maximumVolumeSize", "500m")]  # quantities canonical, as Go writes them
    assert [list(created["nodeTopology"]), list(created["nodeTopology"]["matchLabels"]),
            list(created["nodeTopology"]["matchExpressions"][0])] == [
        ["matchLabels", "matchExpressions"], ["a", "z"], ["key", "operator", "values"]]
    code, created = await http.post(CAPACITIES, capacity("ints", storageClassName="std", capacity=1000,
                                                         maximumVolumeSize=-5))
    assert code == 201 and (created["capacity"], created["maximumVolumeSize"]) == ("1k", "-5")


async def test_empty_selector_parts_are_not_written_back(http: Http) -> None:
    code, created = await http.post(CAPACITIES, capacity("empty", storageClassName="std",
                                                         nodeTopology={"matchLabels": {}, "matchExpressions": []}))
    assert code == 201 and created["nodeTopology"] == {}  # an empty selector (every node) stays one
    code, created = await http.post(CAPACITIES, capacity("exists", storageClassName="std", nodeTopology={
        "matchExpressions": [{"key": "k", "operator": "Exists", "values": []}]}))
    assert code == 201 and created["nodeTopology"] == {"matchExpressions": [{"key": "k", "operator": "Exists"}]}


async def test_a_negative_maximum_volume_size_is_stored(http: Http) -> None:
    code, created = await http.post(CAPACITIES, capacity(storageClassName="std", maximumVolumeSize="-1Gi"))
    assert code == 201 and created["maximumVolumeSize"] == "-1Gi"  # upstream only checks `capacity`


async def test_crud_list_and_watch(http: Http) -> None:
    _, listed = await http.get(CAPACITIES)
    start = listed["metadata"]["resourceVersion"]
    await http.post(CAPACITIES, capacity("b", storageClassName="std"))
    await http.post(CAPACITIES, capacity("a", storageClassName="std"))
    code, changed = await http.patch(f"{CAPACITIES}/a", {"capacity": "2Gi"})
    assert code == 200 and changed["capacity"] == "2Gi"
    code, _ = await http.delete(f"{CAPACITIES}/b")
    assert code == 200
    _, listed = await http.get(f"{GV}/csistoragecapacities")  # across namespaces
    assert listed["kind"] == "CSIStorageCapacityList" and [i["metadata"]["name"] for i in listed["items"]] == ["a"]
    events = await http.watch(CAPACITIES, count=4, resourceVersion=start)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
        ("ADDED", "b"), ("ADDED", "a"), ("MODIFIED", "a"), ("DELETED", "b")]
    assert (await http.get(f"{CAPACITIES}/b"))[0] == 404


CREATE_REFUSALS = {
    "missing-class-is-invalid-not-required": (capacity(), [
        ("storageClassName", "FieldValueInvalid", f'Invalid value: "": {SUBDOMAIN}')]),
    "bad-class": (capacity(storageClassName="Bad_Class"), [
        ("storageClassName", "FieldValueInvalid", f'Invalid value: "Bad_Class": {SUBDOMAIN}')]),
    "long-class": (capacity(storageClassName="a" * 254), [
        ("storageClassName", "FieldValueInvalid", f'Invalid value: "{"a" * 254}": must be no more than 253 '
                                                  "characters")]),
    "negative-capacity": (capacity(storageClassName="std", capacity="-1Gi"), [
        ("capacity", "FieldValueInvalid", 'Invalid value: "-1Gi": must be greater than or equal to 0')]),
    "negative-capacity-printed-canonical": (capacity(storageClassName="std", capacity="-0.5", maximumVolumeSize="-2"), [
        ("capacity", "FieldValueInvalid", 'Invalid value: "-500m": must be greater than or equal to 0')]),
    "bad-selector": (capacity(storageClassName="std", nodeTopology={
        "matchLabels": {"bad key": "bad value!", "ok": "fine"},
        "matchExpressions": [{"key": "k", "operator": "Bogus"}, {"key": "Bad Key", "operator": "In"},
                             {"key": "k", "operator": "Exists", "values": ["x"]},
                             {"key": "k", "operator": "NotIn", "values": ["ok", "not ok!"]},
                             {"key": "k", "operator": "Gt", "values": ["1"]}]}), [
        ("nodeTopology.matchLabels", "FieldValueInvalid", f'Invalid value: "bad key": {LABEL_KEY}'),
        ("nodeTopology.matchLabels", "FieldValueInvalid", f'Invalid value: "bad value!": {LABEL_VALUE}'),
        ("nodeTopology.matchExpressions[0].operator", "FieldValueInvalid",
         'Invalid value: "Bogus": not a valid selector operator'),
        ("nodeTopology.matchExpressions[1].values", "FieldValueRequired",
         "Required value: must be specified when `operator` is 'In' or 'NotIn'"),
        ("nodeTopology.matchExpressions[1].key", "FieldValueInvalid", f'Invalid value: "Bad Key": {LABEL_KEY}'),
        ("nodeTopology.matchExpressions[2].values", "FieldValueForbidden",
         "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"),
        ("nodeTopology.matchExpressions[3].values[1]", "FieldValueInvalid", f'Invalid value: "not ok!": {LABEL_VALUE}'),
        ("nodeTopology.matchExpressions[4].operator", "FieldValueInvalid",  # a label selector: no Gt/Lt
         'Invalid value: "Gt": not a valid selector operator')]),
    "null-expression": (capacity(storageClassName="std", nodeTopology={"matchExpressions": [None]}), [
        ("nodeTopology.matchExpressions[0].operator", "FieldValueInvalid",
         'Invalid value: "": not a valid selector operator'),
        ("nodeTopology.matchExpressions[0].key", "FieldValueInvalid", 'Invalid value: "": name part must be non-empty'),
        ("nodeTopology.matchExpressions[0].key", "FieldValueInvalid", f'Invalid value: "": {LABEL_KEY}')]),
    "all-in-upstreams-order": (capacity("Bad_Name", storageClassName="Bad", capacity="-1", maximumVolumeSize="-1",
                                        nodeTopology={"matchLabels": {"a": "b c"}}), [
        ("metadata.name", "FieldValueInvalid", f'Invalid value: "Bad_Name": {SUBDOMAIN}'),
        ("nodeTopology.matchLabels", "FieldValueInvalid", f'Invalid value: "b c": {LABEL_VALUE}'),
        ("storageClassName", "FieldValueInvalid", f'Invalid value: "Bad": {SUBDOMAIN}'),
        ("capacity", "FieldValueInvalid", 'Invalid value: "-1": must be greater than or equal to 0')]),
}


@pytest.mark.parametrize(("body", "expected"), CREATE_REFUSALS.values(), ids=CREATE_REFUSALS.keys())
async def test_invalid_capacities_are_refused_with_upstreams_causes(http: Http, body: Obj,
                                                                    expected: list[tuple[str, str, str]]) -> None:
    code, answer = await http.post(CAPACITIES, body)
    assert code == 422, answer
    assert causes(answer) == expected
    assert answer["message"].startswith(f'CSIStorageCapacity.storage.k8s.io "{body["metadata"]["name"]}" is invalid: ')


DECODE_REFUSALS = {
    "class-of-the-wrong-type": (capacity(storageClassName=5), {}, (
        "json: cannot unmarshal number into Go struct field CSIStorageCapacity.storageClassName of type string")),
    "labels-of-the-wrong-type": (capacity(storageClassName="std", nodeTopology={"matchLabels": "x"}), {}, (
        "json: cannot unmarshal string into Go struct field LabelSelector.nodeTopology.matchLabels of type "
        "map[string]string")),
    "not-a-quantity": (capacity(storageClassName="std", capacity="lots"), {}, (
        "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")),
    "unknown-field-when-strict": (capacity(storageClassName="std", spec={}), {"fieldValidation": "Strict"}, (
        'strict decoding error: unknown field "spec"')),
}


@pytest.mark.parametrize(("body", "query", "detail"), DECODE_REFUSALS.values(), ids=DECODE_REFUSALS.keys())
async def test_what_does_not_decode_is_a_bad_request(http: Http, body: Obj, query: dict[str, str], detail: str) -> None:
    code, answer = await http.post(CAPACITIES, body, **query)
    assert code == 400 and answer["message"] == (
        f'CSIStorageCapacity in version "v1" cannot be handled as a CSIStorageCapacity: {detail}')


async def test_an_unknown_field_is_dropped_when_not_strict(http: Http) -> None:
    code, created = await http.post(CAPACITIES, capacity(storageClassName="std", spec={"x": 1}))
    assert code == 201 and "spec" not in created


UPDATE_REFUSALS = {
    "class": ({"storageClassName": "other"}, [
        ("storageClassName", "FieldValueInvalid", 'Invalid value: "other": field is immutable')]),
    "topology": ({"nodeTopology": {"matchLabels": {"z": "2"}}}, [
        ("nodeTopology", "FieldValueInvalid", f"Invalid value: {TOPOLOGY_Z2}: field is immutable")]),
    "topology-removed": ({"nodeTopology": None}, [
        ("nodeTopology", "FieldValueInvalid", "Invalid value: null: field is immutable")]),
    "checks-first-then-immutables": ({"storageClassName": "", "nodeTopology": {"matchLabels": {"q": "r"}}}, [
        ("storageClassName", "FieldValueInvalid", f'Invalid value: "": {SUBDOMAIN}'),
        ("nodeTopology", "FieldValueInvalid", f"Invalid value: {TOPOLOGY_Q}: field is immutable"),
        ("storageClassName", "FieldValueInvalid", 'Invalid value: "": field is immutable')]),
    "selector-values-still-checked": ({"nodeTopology": {"matchExpressions": [
            ZONE, {"key": "k", "operator": "In", "values": ["bad value!"]}]}}, [
        ("nodeTopology.matchExpressions[1].values[0]", "FieldValueInvalid", f'Invalid value: "bad value!": {LABEL_VALUE}'),
        ("nodeTopology", "FieldValueInvalid",
         'Invalid value: {"matchLabels":{"a":"2","z":"1"},"matchExpressions":[{"key":"topology.kubernetes.io/zone",'
         '"operator":"In","values":["a"]},{"key":"k","operator":"In","values":["bad value!"]}]}: field is immutable')]),
    "negative-capacity": ({"capacity": "-1", "maximumVolumeSize": "-1"}, [
        ("capacity", "FieldValueInvalid", 'Invalid value: "-1": must be greater than or equal to 0')]),
}


@pytest.mark.parametrize(("patch", "expected"), UPDATE_REFUSALS.values(), ids=UPDATE_REFUSALS.keys())
async def test_immutable_fields_are_refused(http: Http, patch: Obj, expected: list[tuple[str, str, str]]) -> None:
    code, _ = await http.post(CAPACITIES, capacity(storageClassName="std", capacity="1Gi", nodeTopology=TOPOLOGY))
    assert code == 201
    code, answer = await http.patch(f"{CAPACITIES}/cap", patch)
    assert code == 422, answer
    assert causes(answer) == expected


async def test_what_may_change_after_creation(http: Http) -> None:
    await http.post(CAPACITIES, capacity(storageClassName="std", capacity="1Gi", maximumVolumeSize="1Gi",
                                         nodeTopology=TOPOLOGY))
    code, changed = await http.patch(f"{CAPACITIES}/cap", {"capacity": "2Gi", "maximumVolumeSize": None,
                                                            "metadata": {"labels": {"x": "y"}}})
    assert code == 200, changed
    assert fields(changed) == [("nodeTopology", TOPOLOGY), ("storageClassName", "std"), ("capacity", "2Gi")]
    assert changed["metadata"]["labels"] == {"x": "y"}
    code, changed = await http.patch(f"{CAPACITIES}/cap", {"capacity": None})
    assert code == 200 and "capacity" not in changed


async def test_the_topology_is_compared_semantically(http: Http) -> None:
    await http.post(CAPACITIES, capacity("none", storageClassName="std"))
    await http.post(CAPACITIES, capacity("every", storageClassName="std", nodeTopology={}))
    code, same = await http.patch(f"{CAPACITIES}/every", {"nodeTopology": {"matchLabels": {}}})
    assert code == 200 and same["nodeTopology"] == {}  # an empty map is no map
    code, answer = await http.patch(f"{CAPACITIES}/none", {"nodeTopology": {}})
    assert code == 422 and causes(answer) == [  # but no selector (no node) is not an empty one (every node)
        ("nodeTopology", "FieldValueInvalid", "Invalid value: {}: field is immutable")]


async def test_the_table_is_the_generic_one(http: Http) -> None:
    await http.post(CAPACITIES, capacity(storageClassName="std", capacity="1Gi"))
    accept = "application/json;as=Table;v=v1;g=meta.k8s.io"
    async with http.session.get(http.url + CAPACITIES, headers={"Accept": accept}) as resp:
        table = await resp.json()
    assert [(c["name"], c["type"], c["format"]) for c in table["columnDefinitions"]] == [
        ("Name", "string", "name"), ("Created At", "date", "")]  # upstream's printer is not wired to the storage
    [row] = table["rows"]
    assert row["cells"][0] == "cap" and row["cells"][1].endswith("Z")
