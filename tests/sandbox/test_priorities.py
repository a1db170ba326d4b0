"""scheduling.k8s.io/v1 PriorityClasses and the Priority admission plugin, as kube-apiserver 1.37.2 does them
(sandbox/priorities.py).

Every answer here was recorded from the real 1.37.2 server (`make e2e`'s control plane).
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.sandbox.conftest import Http

Obj = dict[str, Any]
GV = "/apis/scheduling.k8s.io/v1"
PCS = f"{GV}/priorityclasses"
PODS = "/api/v1/namespaces/default/pods"
GROUPS = "/apis/scheduling.k8s.io/v1beta1/namespaces/default/podgroups"
SYSTEM = "priority class names with 'system-' prefix are reserved for system use only. error: "


def priority_class(name: str = "high", **fields: Any) -> Obj:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, **fields}


def pod(name: str = "p", **spec: Any) -> Obj:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "i"}], **spec}}


def causes(body: Obj) -> list[tuple[str, str, str]]:
    return [(c["field"], c["reason"], c["message"]) for c in body["details"]["causes"]]


def priority_fields(obj: Obj) -> Obj:
    return {k: v for k, v in obj["spec"].items() if k in ("priorityClassName", "priority", "preemptionPolicy")}


async def test_discovery_and_the_system_classes(http: Http) -> None:
    _, listing = await http.get(GV)
    assert [(r["name"], r["kind"], r["namespaced"], r["shortNames"]) for r in listing["resources"]] == [
        ("priorityclasses", "PriorityClass", False, ["pc"])]
    _, listed = await http.get(PCS)
    system = {item["metadata"]["name"]: item for item in listed["items"]}
    assert {name: (c["value"], c["preemptionPolicy"]) for name, c in system.items()} == {
        "system-cluster-critical": (2000000000, "PreemptLowerPriority"),
        "system-node-critical": (2000001000, "PreemptLowerPriority")}
    assert system["system-node-critical"]["description"] == ("Used for system critical pods that must not be moved "
                                                             "from their current node.")
    code, answer = await http.delete(f"{PCS}/system-node-critical")
    assert code == 403 and answer["message"] == ('priorityclasses.scheduling.k8s.io "system-node-critical" is '
                                                 "forbidden: this is a system priority class and cannot be deleted")


async def test_defaults_crud_and_watch(http: Http) -> None:
    _, listed = await http.get(PCS)
    code, created = await http.post(PCS, priority_class("zero"))
    assert code == 201 and (created["value"], created["preemptionPolicy"]) == (0, "PreemptLowerPriority")
    code, updated = await http.patch(f"{PCS}/zero", {"description": "may change"})
    assert code == 200 and updated["description"] == "may change"
    code, _ = await http.delete(f"{PCS}/zero")
    assert code == 200
    events = await http.watch(PCS, count=3, resourceVersion=listed["metadata"]["resourceVersion"])
    assert [e["type"] for e in events] == ["ADDED", "MODIFIED", "DELETED"]


CREATE_REFUSALS = {
    "too-high-and-bad-policy": (priority_class("toohigh", value=1000000001, preemptionPolicy="Sometimes"), [
        ("value", "FieldValueForbidden", "Forbidden: maximum allowed value of a user defined priority is 1000000000"),
        ("preemptionPolicy", "FieldValueNotSupported",
         'Unsupported value: "Sometimes": supported values: "PreemptLowerPriority", "Never"')]),
    "empty-policy": (priority_class("neg", value=-2147483648, preemptionPolicy=""), [
        ("preemptionPolicy", "FieldValueRequired", "Required value")]),
    "system-prefix": (priority_class("system-foo", value=5), [
        ("metadata.name", "FieldValueForbidden", f"Forbidden: {SYSTEM}system-foo is not a known system priority class")]),
    "system-class-wrong-value": (priority_class("system-node-critical", value=5), [
        ("metadata.name", "FieldValueForbidden",
         f"Forbidden: {SYSTEM}value of system-node-critical PriorityClass must be 2000001000")]),
    "system-class-as-default": (priority_class("system-node-critical", value=2000001000, globalDefault=True), [
        ("metadata.name", "FieldValueForbidden",
         f"Forbidden: {SYSTEM}globalDefault of system-node-critical PriorityClass must be false")]),
}


@pytest.mark.parametrize(("body", "expected"), CREATE_REFUSALS.values(), ids=CREATE_REFUSALS.keys())
async def test_invalid_classes_are_refused_with_upstreams_causes(http: Http, body: Obj,
                                                                 expected: list[tuple[str, str, str]]) -> None:
    code, answer = await http.post(PCS, body)  # validated before the name is found taken (409)
    assert code == 422, answer
    assert causes(answer) == expected
    assert answer["message"].startswith(f'PriorityClass.scheduling.k8s.io "{body["metadata"]["name"]}" is invalid: ')


async def test_value_and_policy_are_immutable_and_nothing_else_is_rechecked(http: Http) -> None:
    await http.post(PCS, priority_class(value=1000))
    code, answer = await http.patch(f"{PCS}/high", {"value": 2000, "preemptionPolicy": "Never"})
    assert code == 422 and causes(answer) == [
        ("value", "FieldValueForbidden", "Forbidden: may not be changed in an update."),
        ("preemptionPolicy", "FieldValueInvalid", 'Invalid value: "Never": field is immutable')]
    code, answer = await http.patch(f"{PCS}/high", {"value": 2000000000})
    assert code == 422 and causes(answer) == [("value", "FieldValueForbidden",
                                               "Forbidden: may not be changed in an update.")]


async def test_only_one_class_is_the_global_default(http: Http) -> None:
    code, _ = await http.post(PCS, priority_class("def1", value=10, globalDefault=True))
    assert code == 201
    code, answer = await http.post(PCS, priority_class("def2", value=5, globalDefault=True))
    assert code == 403 and answer["reason"] == "Forbidden"
    assert answer["message"] == ('priorityclasses.scheduling.k8s.io "def2" is forbidden: PriorityClass def1 is already '
                                 "marked as default. Only one default can exist")
    code, answer = await http.post(PCS, priority_class("def3", value=2000000000, globalDefault=True))
    assert code == 422  # validation comes before the admission plugin's check
    await http.post(PCS, priority_class("other", value=1))
    code, answer = await http.patch(f"{PCS}/other", {"globalDefault": True})
    assert code == 403 and answer["message"].endswith("PriorityClass def1 is already marked as default. Only one "
                                                      "default can exist")
    code, _ = await http.patch(f"{PCS}/def1", {"description": "the default may still be written"})
    assert code == 200


# ---- the Priority admission plugin ---------------------------------------------------------------

async def test_pods_get_the_priority_of_their_class_or_the_default(http: Http) -> None:
    _, created = await http.post(PODS, pod("none"))
    assert priority_fields(created) == {"priority": 0, "preemptionPolicy": "PreemptLowerPriority"}
    _, created = await http.post(PODS, pod("system", priorityClassName="system-node-critical"))
    assert priority_fields(created) == {"priorityClassName": "system-node-critical", "priority": 2000001000,
                                        "preemptionPolicy": "PreemptLowerPriority"}
    await http.post(PCS, priority_class("batch", value=-5, preemptionPolicy="Never", globalDefault=True))
    _, created = await http.post(PODS, pod("defaulted"))
    assert priority_fields(created) == {"priorityClassName": "batch", "priority": -5, "preemptionPolicy": "Never"}
    _, created = await http.post(PODS, pod("matching", priority=-5, preemptionPolicy="Never"))
    assert priority_fields(created)["priorityClassName"] == "batch"
    code, _ = await http.patch(f"{PODS}/matching", {"metadata": {"labels": {"a": "b"}}})
    assert code == 200
    _, group = await http.post(GROUPS, {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
                                        "metadata": {"name": "g"},
                                        "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}}})
    assert (group["spec"]["priorityClassName"], group["spec"]["priority"]) == ("batch", -5)


POD_REFUSALS = {
    "unknown-class": (pod("p", priorityClassName="nope"), "no PriorityClass with name nope was found"),
    "priority-given": (pod("p", priority=5), "the integer value of priority (5) must not be provided in pod spec; "
                                             "priority admission controller computed 0 from the given PriorityClass name"),
    "policy-given": (pod("p", preemptionPolicy="Never"),
                     "the string value of PreemptionPolicy (Never) must not be provided in pod spec; priority admission "
                     "controller computed PreemptLowerPriority from the given PriorityClass name"),
}


@pytest.mark.parametrize(("body", "why"), POD_REFUSALS.values(), ids=POD_REFUSALS.keys())
async def test_pods_naming_no_class_or_other_values_are_forbidden(http: Http, body: Obj, why: str) -> None:
    code, answer = await http.post(PODS, body)
    assert code == 403 and answer["reason"] == "Forbidden"
    assert answer["message"] == f'pods "p" is forbidden: {why}'


async def test_kubectl_style_apply_of_a_priority_class(http: Http) -> None:
    """`kubectl apply` reads, creates with its annotation, then patches (strategic merge) on the second run."""
    body = priority_class("apply-me", value=100, description="first")
    body["metadata"]["annotations"] = {"kubectl.kubernetes.io/last-applied-configuration": "{}"}
    assert (await http.get(f"{PCS}/apply-me"))[0] == 404
    code, created = await http.post(PCS, body, fieldValidation="Strict")
    assert code == 201, created
    code, patched = await http.patch(f"{PCS}/apply-me", {"description": "second"},
                                     content_type="application/strategic-merge-patch+json", fieldValidation="Strict")
    assert code == 200 and (patched["value"], patched["description"]) == (100, "second")
