"""scheduling.k8s.io/v1beta1 Workload and PodGroup as kube-apiserver 1.37.2 serves them (sandbox/workloads.py).

Every refusal here was recorded from the real 1.37.2 server (`make e2e`'s control plane:
GenericWorkload, DRAWorkloadResourceClaims and TopologyAwareWorkloadScheduling on).
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.sandbox.conftest import Http

Obj = dict[str, Any]
GV = "/apis/scheduling.k8s.io/v1beta1"
NS = "default"
PG = f"{GV}/namespaces/{NS}/podgroups"
WL = f"{GV}/namespaces/{NS}/workloads"


def pod_group(name: str = "g", **spec: Any) -> Obj:
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": {"name": name},
            "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}, **spec}}


def template(name: str = "t", **extra: Any) -> Obj:
    return {"name": name, "schedulingPolicy": {"gang": {"minCount": 2}}, **extra}


def workload(name: str = "w", *templates: Obj, **spec: Any) -> Obj:
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "Workload", "metadata": {"name": name},
            "spec": {"podGroupTemplates": list(templates), **spec}}


def causes(body: Obj) -> list[tuple[str, str, str]]:
    return [(c["field"], c["reason"], c["message"]) for c in body["details"]["causes"]]


# ---- discovery ----------------------------------------------------------------------------------

async def test_discovery_lists_workloads_and_podgroups_with_status(http: Http) -> None:
    _, listing = await http.get(GV)
    served = {r["name"]: r for r in listing["resources"]}
    assert set(served) == {"workloads", "podgroups", "podgroups/status"}
    assert served["podgroups"]["namespaced"] and served["workloads"]["namespaced"]
    assert served["podgroups"]["kind"] == "PodGroup" and served["workloads"]["kind"] == "Workload"
    assert "watch" in served["podgroups"]["verbs"] and "patch" in served["podgroups/status"]["verbs"]
    _, group = await http.get("/apis/scheduling.k8s.io")
    # PriorityClasses are scheduling.k8s.io/v1, the group's preferred version (sandbox/priorities.py).
    assert [v["version"] for v in group["versions"]] == ["v1", "v1beta1"]
    assert group["preferredVersion"]["version"] == "v1"


# ---- CRUD and defaults --------------------------------------------------------------------------

async def test_a_pod_group_gets_upstreams_defaults_and_an_empty_status(http: Http) -> None:
    body = pod_group(schedulingConstraints={"topology": [{"key": "topology.kubernetes.io/rack"}]})
    body["status"] = {"conditions": [{"type": "X", "status": "True", "reason": "R", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}
    code, created = await http.post(PG, body)
    assert code == 201, created
    assert created["spec"] == {"schedulingPolicy": {"gang": {"minCount": 2}},
                               "schedulingConstraints": {"topology": [{"key": "topology.kubernetes.io/rack"}]},
                               "disruptionMode": {"single": {}}, "priority": 0}
    assert created.get("status", {}) == {}
    code, got = await http.get(f"{PG}/g")
    assert code == 200 and got["metadata"]["uid"] == created["metadata"]["uid"]
    code, listed = await http.get(PG)
    assert [item["metadata"]["name"] for item in listed["items"]] == ["g"]
    code, _ = await http.delete(f"{PG}/g")
    assert code == 200
    assert (await http.get(f"{PG}/g"))[0] == 404


async def test_pod_groups_and_workloads_carry_no_generation_as_in_kube_apiserver(http: Http) -> None:
    """kube-apiserver 1.37's PodGroup and Workload strategies leave metadata.generation unset (found on the
    real control plane: kube-scheduler's observedGeneration on a PodGroup condition is then omitted), on
    create and on a later write alike."""
    _, group = await http.post(PG, pod_group("nogen"))
    _, work = await http.post(WL, workload("nogen", template()))
    assert "generation" not in group["metadata"] and "generation" not in work["metadata"]
    _, labelled = await http.patch(f"{PG}/nogen", {"metadata": {"labels": {"a": "b"}}})
    assert "generation" not in labelled["metadata"]


async def test_gated_off_fields_are_dropped_as_upstream_drops_them(http: Http) -> None:
    _, group = await http.post(PG, pod_group(preemptionPolicy="Never", parentCompositePodGroupName="p"))
    assert "preemptionPolicy" not in group["spec"] and "parentCompositePodGroupName" not in group["spec"]
    _, created = await http.post(WL, workload("w", template(), compositePodGroupTemplates=[{"name": "c"}]))
    assert created["spec"] == {"podGroupTemplates": [{**template(), "schedulingConstraints": None}]}


async def test_min_count_may_change_and_the_spec_write_keeps_the_status(http: Http) -> None:
    await http.post(PG, pod_group(resourceClaims=[{"name": "c", "resourceClaimTemplateName": "t"}]))
    status = {"resourceClaimStatuses": [{"name": "c", "resourceClaimName": "g-c-x1y2z"}]}
    code, written = await http.patch(f"{PG}/g/status", {"status": status, "spec": {"priority": 7}})
    assert code == 200 and written["status"] == status and written["spec"]["priority"] == 0
    code, written = await http.patch(f"{PG}/g", {"spec": {"schedulingPolicy": {"gang": {"minCount": 5}}},
                                                 "status": None})
    assert code == 200, written
    assert written["spec"]["schedulingPolicy"] == {"gang": {"minCount": 5}} and written["status"] == status


async def test_an_unknown_priority_class_is_forbidden_by_priority_admission(http: Http) -> None:
    code, body = await http.post(PG, pod_group(priorityClassName="gold"))
    assert code == 403
    assert body["message"] == 'podgroups.scheduling.k8s.io "g" is forbidden: no PriorityClass with name gold was found'
    # A system class resolves, and then its priority is over the user maximum: the real server refuses it too.
    code, body = await http.post(PG, pod_group(priorityClassName="system-node-critical"))
    assert code == 422 and causes(body) == [("spec.priority", "FieldValueInvalid", "Invalid value: 2000001000: must be "
                                                                                   "less than or equal to 1000000000")]


async def test_watch_sends_the_writes_of_pod_groups(http: Http) -> None:
    _, listed = await http.get(PG)
    start = listed["metadata"]["resourceVersion"]
    await http.post(PG, pod_group("a"))
    await http.patch(f"{PG}/a", {"spec": {"schedulingPolicy": {"gang": {"minCount": 3}}}})
    await http.delete(f"{PG}/a")
    events = await http.watch(PG, count=3, resourceVersion=start)
    assert [(e["type"], e["object"]["kind"]) for e in events] == [("ADDED", "PodGroup"), ("MODIFIED", "PodGroup"),
                                                                  ("DELETED", "PodGroup")]
    assert events[1]["object"]["spec"]["schedulingPolicy"]["gang"]["minCount"] == 3


# ---- refusals, as the real server words them ---------------------------------------------------

LABEL = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and "
         "end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
         "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')")

CREATE_REFUSALS = {
    "no-policy": (PG, pod_group(schedulingPolicy={}),
                  [("spec.schedulingPolicy", "FieldValueInvalid", 'Invalid value: "": must specify one of: `basic`, `gang`')]),
    "both-policies": (PG, pod_group(schedulingPolicy={"basic": {}, "gang": {"minCount": 1}}),
                      [("spec.schedulingPolicy", "FieldValueInvalid",
                        'Invalid value: "{basic, gang}": must specify exactly one of: `basic`, `gang`')]),
    "min-count-missing": (PG, pod_group(schedulingPolicy={"gang": {}}),
                          [("spec.schedulingPolicy.gang.minCount", "FieldValueRequired", "Required value")]),
    "min-count-negative": (PG, pod_group(schedulingPolicy={"gang": {"minCount": -1}}),
                           [("spec.schedulingPolicy.gang.minCount", "FieldValueInvalid",
                             "Invalid value: -1: must be greater than or equal to 1")]),
    "two-topology-constraints": (PG, pod_group(schedulingConstraints={"topology": [{"key": "a"}, {"key": "b"}]}),
                                 [("spec.schedulingConstraints.topology", "FieldValueTooMany",
                                   "Too many: 2: must have at most 1 item")]),
    "topology-without-key": (PG, pod_group(schedulingConstraints={"topology": [{}]}),
                             [("spec.schedulingConstraints.topology[0].key", "FieldValueRequired", "Required value")]),
    "five-claims": (PG, pod_group(resourceClaims=[{"name": f"c{i}", "resourceClaimName": "x"} for i in range(5)]),
                    [("spec.resourceClaims", "FieldValueTooMany", "Too many: 5: must have at most 4 items")]),
    "claim-without-source": (PG, pod_group(resourceClaims=[{"name": "c"}]),
                             [("spec.resourceClaims[0]", "FieldValueInvalid", 'Invalid value: "": must specify one of: '
                               "`resourceClaimName`, `resourceClaimTemplateName`")]),
    "claim-named-twice": (PG, pod_group(resourceClaims=[{"name": "c", "resourceClaimName": "x"},
                                                        {"name": "c", "resourceClaimName": "y"}]),
                          [("spec.resourceClaims[1]", "FieldValueDuplicate",
                            'Duplicate value: {"name":"c","resourceClaimName":"y"}')]),
    "claim-name-not-a-label": (PG, pod_group(resourceClaims=[{"name": "C_1", "resourceClaimName": "x"}]),
                               [("spec.resourceClaims[0].name", "FieldValueInvalid", f'Invalid value: "C_1": {LABEL}')]),
    "empty-workload-ref": (PG, pod_group(workloadRef={}),
                           [("spec.workloadRef.workloadName", "FieldValueRequired", "Required value"),
                            ("spec.workloadRef.templateName", "FieldValueRequired", "Required value")]),
    "dotted-template-name": (PG, pod_group(workloadRef={"workloadName": "w", "templateName": "b.c"}),
                             [("spec.workloadRef.templateName", "FieldValueInvalid",
                               'Invalid value: "b.c": must not contain dots')]),
    "empty-disruption-mode": (PG, pod_group(disruptionMode={}),
                              [("spec.disruptionMode", "FieldValueInvalid",
                                'Invalid value: "": must specify one of: `single`, `all`')]),
    "workload-without-templates": (WL, workload("w"),
                                   [("spec", "FieldValueInvalid", 'Invalid value: "": must specify one of: '
                                     "`podGroupTemplates`, `compositePodGroupTemplates`")]),
    "nine-templates": (WL, workload("w", *[template(f"t{i}") for i in range(9)]),
                       [("spec.podGroupTemplates", "FieldValueTooMany", "Too many: 9: must have at most 8 items")]),
    "template-named-twice": (WL, workload("w", template(), template()),
                             [("spec.podGroupTemplates[1]", "FieldValueDuplicate",
                               'Duplicate value: {"name":"t","schedulingPolicy":{"gang":{"minCount":2}},'
                               '"schedulingConstraints":null}')]),
    "template-min-count-zero": (WL, workload("w", template(schedulingPolicy={"gang": {"minCount": 0}})),
                                [("spec.podGroupTemplates[0].schedulingPolicy.gang.minCount", "FieldValueRequired",
                                  "Required value")]),
    "templates-on-two-priorities": (WL, workload("w", template("a", priority=1), template("b", priority=2)),
                                    [("spec", "FieldValueInvalid",
                                      "Invalid value: null: detected multiple priority configurations")]),
    "controller-ref-kind-with-slash": (WL, workload("w", template(), controllerRef={"kind": "a/b", "name": "j"}),
                                       [("spec.controllerRef.kind", "FieldValueInvalid",
                                         "Invalid value: \"a/b\": may not contain '/'")]),
}


@pytest.mark.parametrize(("collection", "body", "expected"), CREATE_REFUSALS.values(), ids=CREATE_REFUSALS.keys())
async def test_invalid_objects_are_refused_with_upstreams_causes(http: Http, collection: str, body: Obj,
                                                                 expected: list[tuple[str, str, str]]) -> None:
    code, answer = await http.post(collection, body)
    assert code == 422, answer
    assert causes(answer) == expected
    kind = body["kind"]
    assert answer["message"].startswith(f'{kind}.scheduling.k8s.io "{body["metadata"]["name"]}" is invalid: ')


CLAIMS = [{"name": "c", "resourceClaimTemplateName": "t"}]
UPDATE_REFUSALS = {
    "gang-to-basic": (PG, pod_group(), {"spec": {"schedulingPolicy": {"gang": None, "basic": {}}}}, "",
                      [("spec.schedulingPolicy.basic", "FieldValueInvalid", "Invalid value: null: field is immutable"),
                       ("spec.schedulingPolicy.gang", "FieldValueInvalid",
                        "Invalid value: null: field cannot be cleared once set")]),
    "topology-changed": (PG, pod_group(schedulingConstraints={"topology": [{"key": "a"}]}),
                         {"spec": {"schedulingConstraints": {"topology": [{"key": "b"}]}}}, "",
                         [("spec.schedulingConstraints", "FieldValueInvalid", "Invalid value: null: field is immutable")]),
    "claims-changed": (PG, pod_group(resourceClaims=CLAIMS),
                       {"spec": {"resourceClaims": [{"name": "d", "resourceClaimName": "x"}]}}, "",
                       [("spec.resourceClaims", "FieldValueInvalid", "Invalid value: null: field is immutable")]),
    "status-names-no-claim": (PG, pod_group(resourceClaims=CLAIMS),
                              {"status": {"resourceClaimStatuses": [{"name": "x", "resourceClaimName": "n"}]}}, "status",
                              [("status.resourceClaimStatuses[0].name", "FieldValueInvalid",
                                'Invalid value: "x": must match the name of an entry in `spec.resourceClaims`')]),
    "bad-condition": (PG, pod_group(), {"status": {"conditions": [{"type": "", "status": "Maybe", "reason": "R"}]}},
                      "status",
                      [("status.conditions[0].type", "FieldValueRequired", "Required value: is required"),
                       ("status.conditions[0].status", "FieldValueNotSupported",
                        'Unsupported value: "Maybe": supported values: "False", "True", "Unknown"'),
                       ("status.conditions[0].lastTransitionTime", "FieldValueRequired", "Required value")]),
    "template-added": (WL, workload("w", template("a")), {"spec": {"podGroupTemplates": [template("a"), template("b")]}},
                       "", [("spec.podGroupTemplates[1]", "FieldValueForbidden", "Forbidden: item may not be added")]),
    "template-removed": (WL, workload("w", template("a"), template("b")), {"spec": {"podGroupTemplates": [template("a")]}},
                         "", [("spec.podGroupTemplates", "FieldValueForbidden", "Forbidden: item may not be removed")]),
    "template-claims-changed": (WL, workload("w", template("a")),
                                {"spec": {"podGroupTemplates": [template("a", resourceClaims=CLAIMS)]}}, "",
                                [("spec.podGroupTemplates[0].resourceClaims", "FieldValueInvalid",
                                  "Invalid value: null: field is immutable")]),
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


async def test_a_template_may_change_its_min_count(http: Http) -> None:
    await http.post(WL, workload("w", template("a")))
    code, written = await http.patch(f"{WL}/w", {"spec": {"podGroupTemplates": [
        template("a", schedulingPolicy={"gang": {"minCount": 7}})]}})
    assert code == 200 and written["spec"]["podGroupTemplates"][0]["schedulingPolicy"] == {"gang": {"minCount": 7}}


# ---- pods joining a group -----------------------------------------------------------------------

def pod(name: str, group: Obj) -> Obj:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "i"}], "schedulingGroup": group}}


async def test_pods_join_a_group_by_name_and_may_not_switch(http: Http) -> None:
    code, created = await http.post(f"/api/v1/namespaces/{NS}/pods", pod("p", {"podGroupName": "g"}))
    assert code == 201 and created["spec"]["schedulingGroup"] == {"podGroupName": "g"}
    code, answer = await http.patch(f"/api/v1/namespaces/{NS}/pods/p", {"spec": {"schedulingGroup": {"podGroupName": "h"}}})
    assert code == 422 and causes(answer)[0][0] == "spec"


async def test_a_scheduling_group_needs_a_valid_pod_group_name(http: Http) -> None:
    code, answer = await http.post(f"/api/v1/namespaces/{NS}/pods", pod("p", {}))
    assert code == 422
    assert causes(answer) == [("spec.schedulingGroup.podGroupName", "FieldValueInvalid",
                               "Invalid value: null: must specify one of: `podGroupName`")]
    code, answer = await http.post(f"/api/v1/namespaces/{NS}/pods", pod("p", {"podGroupName": "Bad_"}))
    assert code == 422 and causes(answer)[0][0] == "spec.schedulingGroup.podGroupName"
    assert "a lowercase RFC 1123 subdomain" in causes(answer)[0][2]
