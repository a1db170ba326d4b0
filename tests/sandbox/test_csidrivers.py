"""storage.k8s.io/v1 CSIDrivers as kube-apiserver 1.37.2 serves them (sandbox/csidrivers.py).

Every default, refusal and table cell here was recorded from the real 1.37.2 server (`make e2e`'s
control plane).
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.sandbox.conftest import Http

Obj = dict[str, Any]
GV = "/apis/storage.k8s.io/v1"
DRIVERS = f"{GV}/csidrivers"
DEFAULTS = {"attachRequired": True, "podInfoOnMount": False, "volumeLifecycleModes": ["Persistent"],
            "storageCapacity": False, "fsGroupPolicy": "ReadWriteOnceWithFSType", "requiresRepublish": False,
            "seLinuxMount": False, "preventPodSchedulingIfMissing": False}
SUBDOMAIN = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
             "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
             "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
POLICIES = 'supported values: "File", "None", "ReadWriteOnceWithFSType"'
MODES = 'supported values: "Persistent", "Ephemeral"'


def driver(name: str = "csi.example.com", **spec: Any) -> Obj:
    return {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": name}, "spec": spec}


def causes(body: Obj) -> list[tuple[str, str, str]]:
    return [(c["field"], c["reason"], c["message"]) for c in body["details"]["causes"]]


async def test_discovery_lists_csidrivers(http: Http) -> None:
    _, listing = await http.get(GV)
    served = {r["name"]: r for r in listing["resources"]}
    assert served["csidrivers"]["kind"] == "CSIDriver" and not served["csidrivers"]["namespaced"]
    assert "shortNames" not in served["csidrivers"] and "csidrivers/status" not in served
    assert served["csidrivers"]["verbs"] == ["create", "delete", "deletecollection", "get", "list", "patch", "update",
                                             "watch"]


async def test_a_driver_is_defaulted_in_go_order(http: Http) -> None:
    code, created = await http.post(DRIVERS, driver())
    assert code == 201, created
    assert list(created["spec"].items()) == list(DEFAULTS.items())
    code, created = await http.post(DRIVERS, {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver",
                                              "metadata": {"name": "no-spec.example.com"}})
    assert code == 201 and created["spec"] == DEFAULTS
    code, created = await http.post(DRIVERS, driver("empty-modes.example.com", volumeLifecycleModes=[],
                                                    attachRequired=None))
    assert code == 201 and created["spec"] == DEFAULTS  # an empty list is defaulted, a null too
    code, created = await http.post(DRIVERS, driver("a" * 64 + ".com"))
    assert code == 201  # 1.37 checks the name as any object's: no 63-byte driver-name limit here


async def test_every_field_set_comes_back_in_go_order(http: Http) -> None:
    spec = {"tokenRequests": [{}, {"audience": "x", "expirationSeconds": 600}], "serviceAccountTokenInSecrets": True,
            "nodeAllocatableUpdatePeriodSeconds": 10, "preventPodSchedulingIfMissing": True, "seLinuxMount": True,
            "attachRequired": False, "podInfoOnMount": True, "fsGroupPolicy": "File", "storageCapacity": True,
            "requiresRepublish": True, "volumeLifecycleModes": ["Ephemeral", "Persistent", "Ephemeral"]}
    code, created = await http.post(DRIVERS, driver(**spec))
    assert code == 201, created
    assert list(created["spec"].items()) == [
        ("attachRequired", False), ("podInfoOnMount", True),
        ("volumeLifecycleModes", ["Ephemeral", "Persistent", "Ephemeral"]),  # a repeated mode passes
        ("storageCapacity", True), ("fsGroupPolicy", "File"),
        ("tokenRequests", [{"audience": ""}, {"audience": "x", "expirationSeconds": 600}]),  # audience written back
        ("requiresRepublish", True), ("seLinuxMount", True), ("nodeAllocatableUpdatePeriodSeconds", 10),
        ("serviceAccountTokenInSecrets", True), ("preventPodSchedulingIfMissing", True)]


async def test_crud_list_and_watch(http: Http) -> None:
    _, listed = await http.get(DRIVERS)
    start = listed["metadata"]["resourceVersion"]
    await http.post(DRIVERS, driver("b.example.com"))
    await http.post(DRIVERS, driver("a.example.com"))
    code, changed = await http.patch(f"{DRIVERS}/a.example.com", {"spec": {"storageCapacity": True}})
    assert code == 200 and changed["spec"]["storageCapacity"] is True
    code, _ = await http.delete(f"{DRIVERS}/b.example.com")
    assert code == 200
    _, listed = await http.get(DRIVERS)
    assert listed["kind"] == "CSIDriverList" and [i["metadata"]["name"] for i in listed["items"]] == ["a.example.com"]
    events = await http.watch(DRIVERS, count=4, resourceVersion=start)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
        ("ADDED", "b.example.com"), ("ADDED", "a.example.com"), ("MODIFIED", "a.example.com"),
        ("DELETED", "b.example.com")]
    assert (await http.get(f"{DRIVERS}/b.example.com"))[0] == 404


CREATE_REFUSALS = {
    "name": (driver("Bad_Name.example.com", fsGroupPolicy="Y"), [
        ("metadata.name", "FieldValueInvalid", f'Invalid value: "Bad_Name.example.com": {SUBDOMAIN}'),
        ("spec.fsGroupPolicy", "FieldValueNotSupported", f'Unsupported value: "Y": {POLICIES}')]),
    "policy-and-modes": (driver(fsGroupPolicy="Sometimes", volumeLifecycleModes=["Persistent", "Forever"]), [
        ("spec.fsGroupPolicy", "FieldValueNotSupported", f'Unsupported value: "Sometimes": {POLICIES}'),
        ("spec.volumeLifecycleModes", "FieldValueNotSupported", f'Unsupported value: "Forever": {MODES}')]),
    "empty-policy": (driver(fsGroupPolicy=""), [
        ("spec.fsGroupPolicy", "FieldValueNotSupported", f'Unsupported value: "": {POLICIES}')]),
    "token-requests": (driver(tokenRequests=[{"audience": "a", "expirationSeconds": 60}, {"audience": "a"},
                                             {"audience": "", "expirationSeconds": 2**33},
                                             {"audience": "b", "expirationSeconds": 600}]), [
        ("spec.tokenRequests[0].expirationSeconds", "FieldValueInvalid",
         "Invalid value: 60: may not specify a duration less than 10 minutes"),
        ("spec.tokenRequests[1].audience", "FieldValueDuplicate", 'Duplicate value: "a"'),
        ("spec.tokenRequests[2].expirationSeconds", "FieldValueInvalid",
         "Invalid value: 8589934592: may not specify a duration larger than 2^32 seconds")]),
    "period-and-secrets": (driver(nodeAllocatableUpdatePeriodSeconds=5, serviceAccountTokenInSecrets=True), [
        ("spec.nodeAllocatableUpdatePeriodSeconds", "FieldValueInvalid",
         "Invalid value: 5: must be greater than or equal to 10 seconds"),
        ("spec.serviceAccountTokenInSecrets", "FieldValueInvalid",
         "Invalid value: true: serviceAccountTokenInSecrets is set but no tokenRequests are specified")]),
    "secrets-false-without-requests": (driver(tokenRequests=[], serviceAccountTokenInSecrets=False), [
        ("spec.serviceAccountTokenInSecrets", "FieldValueInvalid",
         "Invalid value: false: serviceAccountTokenInSecrets is set but no tokenRequests are specified")]),
    "all-in-upstreams-order": (driver(serviceAccountTokenInSecrets=True, nodeAllocatableUpdatePeriodSeconds=1,
                                      volumeLifecycleModes=["X"], fsGroupPolicy="Y",
                                      tokenRequests=[{"audience": "a", "expirationSeconds": 1}, {"audience": "a"}]), [
        ("spec.fsGroupPolicy", "FieldValueNotSupported", f'Unsupported value: "Y": {POLICIES}'),
        ("spec.tokenRequests[0].expirationSeconds", "FieldValueInvalid",
         "Invalid value: 1: may not specify a duration less than 10 minutes"),
        ("spec.tokenRequests[1].audience", "FieldValueDuplicate", 'Duplicate value: "a"'),
        ("spec.volumeLifecycleModes", "FieldValueNotSupported", f'Unsupported value: "X": {MODES}'),
        ("spec.nodeAllocatableUpdatePeriodSeconds", "FieldValueInvalid",
         "Invalid value: 1: must be greater than or equal to 10 seconds")]),
}


@pytest.mark.parametrize(("body", "expected"), CREATE_REFUSALS.values(), ids=CREATE_REFUSALS.keys())
async def test_invalid_drivers_are_refused_with_upstreams_causes(http: Http, body: Obj,
                                                                 expected: list[tuple[str, str, str]]) -> None:
    code, answer = await http.post(DRIVERS, body)
    assert code == 422, answer
    assert causes(answer) == expected
    assert answer["message"].startswith(f'CSIDriver.storage.k8s.io "{body["metadata"]["name"]}" is invalid: ')


async def test_a_value_of_the_wrong_type_does_not_decode(http: Http) -> None:
    code, answer = await http.post(DRIVERS, driver(attachRequired="yes"))
    assert code == 400 and answer["message"] == (
        'CSIDriver in version "v1" cannot be handled as a CSIDriver: json: cannot unmarshal string into Go struct '
        "field CSIDriverSpec.spec.attachRequired of type bool")


UPDATE_REFUSALS = {
    "attach-required": ({"spec": {"attachRequired": False}}, [
        ("spec.attachedRequired", "FieldValueInvalid", "Invalid value: false: field is immutable")]),  # sic
    "lifecycle-modes": ({"spec": {"volumeLifecycleModes": ["Ephemeral"]}}, [
        ("spec.volumeLifecycleModes", "FieldValueInvalid", 'Invalid value: ["Ephemeral"]: field is immutable')]),
    "checks-first-then-immutables": ({"spec": {"attachRequired": False, "podInfoOnMount": True, "fsGroupPolicy": "Nope",
                                               "volumeLifecycleModes": ["Persistent", "Ephemeral"]}}, [
        ("spec.fsGroupPolicy", "FieldValueNotSupported", f'Unsupported value: "Nope": {POLICIES}'),
        ("spec.attachedRequired", "FieldValueInvalid", "Invalid value: false: field is immutable"),
        ("spec.volumeLifecycleModes", "FieldValueInvalid",
         'Invalid value: ["Persistent","Ephemeral"]: field is immutable')]),
    "short-token": ({"spec": {"tokenRequests": [{"audience": "q", "expirationSeconds": 5}]}}, [
        ("spec.tokenRequests[0].expirationSeconds", "FieldValueInvalid",
         "Invalid value: 5: may not specify a duration less than 10 minutes")]),
}


@pytest.mark.parametrize(("patch", "expected"), UPDATE_REFUSALS.values(), ids=UPDATE_REFUSALS.keys())
async def test_immutable_fields_are_refused(http: Http, patch: Obj, expected: list[tuple[str, str, str]]) -> None:
    code, _ = await http.post(DRIVERS, driver(tokenRequests=[{"expirationSeconds": 700}]))
    assert code == 201
    code, answer = await http.patch(f"{DRIVERS}/csi.example.com", patch)
    assert code == 422, answer
    assert causes(answer) == expected


async def test_what_may_change_after_creation(http: Http) -> None:
    await http.post(DRIVERS, driver(tokenRequests=[{"expirationSeconds": 700}]))
    mutable = {"podInfoOnMount": True, "fsGroupPolicy": "None", "storageCapacity": True, "requiresRepublish": True,
               "seLinuxMount": True, "preventPodSchedulingIfMissing": True, "nodeAllocatableUpdatePeriodSeconds": 30,
               "tokenRequests": [{"audience": "q"}], "serviceAccountTokenInSecrets": True}
    code, changed = await http.patch(f"{DRIVERS}/csi.example.com", {"spec": mutable})
    assert code == 200, changed
    assert changed["spec"] == {**DEFAULTS, **mutable}
    for reset in ("attachRequired", "volumeLifecycleModes"):  # a null is defaulted again: no change
        code, same = await http.patch(f"{DRIVERS}/csi.example.com", {"spec": {reset: None}})
        assert code == 200 and same["spec"] == changed["spec"]
    code, answer = await http.patch(f"{DRIVERS}/csi.example.com", {"spec": {"tokenRequests": None}})
    assert code == 422 and causes(answer) == [
        ("spec.serviceAccountTokenInSecrets", "FieldValueInvalid",
         "Invalid value: true: serviceAccountTokenInSecrets is set but no tokenRequests are specified")]


async def test_the_table_has_upstreams_columns(http: Http) -> None:
    await http.post(DRIVERS, driver("plain.example.com"))
    await http.post(DRIVERS, driver("tokens.example.com", attachRequired=False, podInfoOnMount=True,
                                    storageCapacity=True, requiresRepublish=True,
                                    tokenRequests=[{}, {"audience": "x"}],
                                    volumeLifecycleModes=["Ephemeral", "Persistent"]))
    accept = "application/json;as=Table;v=v1;g=meta.k8s.io"
    async with http.session.get(http.url + DRIVERS, headers={"Accept": accept}) as resp:
        table = await resp.json()
    assert [(c["name"], c["type"]) for c in table["columnDefinitions"]] == [
        ("Name", "string"), ("AttachRequired", "boolean"), ("PodInfoOnMount", "boolean"),
        ("StorageCapacity", "boolean"), ("TokenRequests", "string"), ("RequiresRepublish", "boolean"),
        ("Modes", "string"), ("Age", "string")]
    assert table["columnDefinitions"][1]["description"].endswith("This field is immutable.")
    assert [row["cells"][:7] for row in table["rows"]] == [
        ["plain.example.com", True, False, False, "<unset>", False, "Persistent"],
        ["tokens.example.com", False, True, True, ",x", True, "Ephemeral,Persistent"]]
