"""The sandbox running as Kubernetes 1.36: scheduling.k8s.io/v1alpha2 instead of v1beta1 (sandbox/workloads.py).

The shape is k8s.io/api v0.36's scheduling/v1alpha2 (podGroupTemplateRef, disruptionMode as
a string) and 1.36's OpenAPI definitions; the refusals are the rules shared with v1beta1
(tests/sandbox/test_scheduling_api.py, recorded from a real 1.37.2 server). No real 1.36
server was asked.
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.sandbox.conftest import Http

Obj = dict[str, Any]
GV = "/apis/scheduling.k8s.io/v1alpha2"
PG = f"{GV}/namespaces/default/podgroups"

pytestmark = pytest.mark.sandbox(kubernetes_version="1.36")


def pod_group(name: str = "g", **spec: Any) -> Obj:
    return {"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup", "metadata": {"name": name},
            "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}, **spec}}


def causes(body: Obj) -> list[tuple[str, str]]:
    return [(c["field"], c["message"]) for c in body["details"]["causes"]]


async def test_version_and_discovery_say_1_36_and_v1alpha2(http: Http) -> None:
    _, version = await http.get("/version")
    assert (version["major"], version["minor"]) == ("1", "36")
    _, group = await http.get("/apis/scheduling.k8s.io")
    assert [v["version"] for v in group["versions"]] == ["v1", "v1alpha2"]  # v1: PriorityClasses
    _, listing = await http.get(GV)
    assert {r["name"] for r in listing["resources"]} == {"workloads", "podgroups", "podgroups/status"}
    code, _ = await http.get("/apis/scheduling.k8s.io/v1beta1/namespaces/default/podgroups")
    assert code == 404


async def test_a_pod_group_in_the_1_36_shape_is_stored_as_sent(http: Http) -> None:
    """podGroupTemplateRef (shown as null when unset: no omitempty), no disruptionMode or priority
    (WorkloadAwarePreemption off), an empty status."""
    code, created = await http.post(PG, pod_group(
        podGroupTemplateRef={"workload": {"workloadName": "w", "podGroupTemplateName": "workers"}},
        resourceClaims=[{"name": "link", "resourceClaimTemplateName": "fabric"}]))
    assert code == 201, created
    assert created["spec"] == {
        "podGroupTemplateRef": {"workload": {"workloadName": "w", "podGroupTemplateName": "workers"}},
        "schedulingPolicy": {"gang": {"minCount": 2}},
        "resourceClaims": [{"name": "link", "resourceClaimTemplateName": "fabric"}]}
    assert created["status"] == {}
    code, bare = await http.post(PG, pod_group("bare"))
    assert code == 201 and bare["spec"]["podGroupTemplateRef"] is None


async def test_the_1_37_fields_are_unknown_fields(http: Http) -> None:
    """v1beta1's workloadRef is not a field of v1alpha2: dropped as any unknown field is (fieldValidation Warn)."""
    code, body = await http.post(PG, pod_group(workloadRef={"workloadName": "w", "templateName": "t"}))
    assert code == 201, body
    assert "workloadRef" not in body["spec"]


async def test_the_template_ref_needs_both_names(http: Http) -> None:
    code, body = await http.post(PG, pod_group(podGroupTemplateRef={"workload": {"workloadName": "w"}}))
    assert code == 422, body
    assert ("spec.podGroupTemplateRef.workload.podGroupTemplateName", "Required value") in causes(body)


async def test_rules_shared_with_v1beta1_apply(http: Http) -> None:
    code, body = await http.post(PG, pod_group(schedulingPolicy={"gang": {"minCount": -1}}))
    assert code == 422, body
    assert ("spec.schedulingPolicy.gang.minCount", "Invalid value: -1: must be greater than or equal to 1") \
        in causes(body)
