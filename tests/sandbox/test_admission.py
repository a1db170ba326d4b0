"""Admission over HTTP: resource.k8s.io validation (422 with field paths) and pod rules.

What kube-apiserver 1.37 answers to each of these (and many more) is pinned by
tests/handlers/test_admission.py, which runs against both servers."""

from __future__ import annotations

from typing import Any

import pytest
from tests.sandbox.conftest import STRATEGIC, Http

RES = "/apis/resource.k8s.io/v1"
CLAIMS = f"{RES}/namespaces/default/resourceclaims"
PODS = "/api/v1/namespaces/default/pods"


def claim(name: str = "c", **request: Any) -> dict[str, Any]:
    exactly = {"deviceClassName": "gpu", **request}
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}}


def fields(body: dict[str, Any]) -> list[str]:
    return [c["field"] for c in body["details"]["causes"]]


async def test_defaults_are_applied(http: Http) -> None:
    code, obj = await http.post(CLAIMS, claim())
    assert code == 201
    assert obj["spec"]["devices"]["requests"][0]["exactly"] == {
        "deviceClassName": "gpu", "allocationMode": "ExactCount", "count": 1}


@pytest.mark.parametrize(("body", "field"), [
    (claim(selectors=[{"cel": {"expression": "device.driver =="}}]),
     "spec.devices.requests[0].exactly.selectors[0].cel.expression"),
    (claim(count=-1), "spec.devices.requests[0].exactly.count"),
    (claim(allocationMode="Some"), "spec.devices.requests[0].exactly.allocationMode"),
    (claim(tolerations=[{"key": "k", "operator": "Near"}]), "spec.devices.requests[0].exactly.tolerations[0].operator"),
    (claim(selectors=[{"cel": {"expression": "true"}}] * 33), "spec.devices.requests[0].exactly.selectors"),
    (claim(selectors=[{"cel": {"expression": "x" * 10241}}]),
     "spec.devices.requests[0].exactly.selectors[0].cel.expression"),
])
async def test_invalid_claims_are_rejected_with_field_paths(http: Http, body: dict[str, Any], field: str) -> None:
    code, status = await http.post(CLAIMS, body)
    assert code == 422, status
    assert status["reason"] == "Invalid" and field in fields(status)


async def test_count_zero_is_defaulted_like_no_count(http: Http) -> None:
    """Go cannot tell `count: 0` from no count: both become 1, as upstream's defaulting does."""
    code, obj = await http.post(CLAIMS, claim(count=0))
    assert code == 201 and obj["spec"]["devices"]["requests"][0]["exactly"]["count"] == 1


@pytest.mark.parametrize(("count", "shown"), [("two", "string"), (1.5, "number 1.5"), (2**63, f"number {2**63}")])
async def test_a_value_of_the_wrong_json_type_does_not_decode(http: Http, count: Any, shown: str) -> None:
    """Not a 422: the body does not decode into the Go type, and the 400 names the Go struct and field."""
    code, status = await http.post(CLAIMS, claim(count=count))
    assert code == 400 and status["reason"] == "BadRequest"
    assert status["message"] == ('ResourceClaim in version "v1" cannot be handled as a ResourceClaim: json: cannot '
                                 f"unmarshal {shown} into Go struct field ExactDeviceRequest.spec.devices.requests."
                                 "exactly.count of type int64")


async def test_too_many_requests(http: Http) -> None:
    body = claim()
    body["spec"]["devices"]["requests"] = [{"name": f"r{i}", "exactly": {"deviceClassName": "gpu"}}
                                           for i in range(33)]
    code, status = await http.post(CLAIMS, body)
    assert code == 422 and "spec.devices.requests" in fields(status)


async def test_unknown_field_rejected_only_when_strict(http: Http) -> None:
    body = claim()
    body["spec"]["devices"]["requests"][0]["exactly"]["colour"] = "red"
    code, status = await http.post(CLAIMS, body, fieldValidation="Strict")
    assert code == 400 and status["message"].endswith(
        'strict decoding error: unknown field "spec.devices.requests[0].exactly.colour"')
    code, stored = await http.post(CLAIMS, body)
    assert code == 201 and "colour" not in stored["spec"]["devices"]["requests"][0]["exactly"]


async def test_claim_spec_is_immutable(http: Http) -> None:
    await http.post(CLAIMS, claim())
    code, status = await http.patch(f"{CLAIMS}/c", {"spec": {"devices": {"requests": [
        {"name": "gpu", "exactly": {"deviceClassName": "nic"}}]}}})
    assert code == 422 and fields(status) == ["spec"]


async def test_reserved_for_limits(http: Http) -> None:
    await http.post(CLAIMS, claim())
    alloc = {"devices": {"results": [{"request": "gpu", "driver": "gpu.dralloc.dev", "pool": "p",
                                      "device": "gpu-0"}]}}
    refs = [{"resource": "pods", "name": f"p{i}", "uid": f"u{i}"} for i in range(257)]
    code, status = await http.patch(f"{CLAIMS}/c/status", {"status": {"allocation": alloc, "reservedFor": refs}})
    assert code == 422 and "status.reservedFor" in fields(status)
    code, _ = await http.patch(f"{CLAIMS}/c/status", {"status": {"allocation": alloc,
                                                                  "reservedFor": refs[:256]}})
    assert code == 200


async def test_reserved_for_needs_an_allocation(http: Http) -> None:
    await http.post(CLAIMS, claim())
    code, status = await http.patch(f"{CLAIMS}/c/status", {"status": {"reservedFor": [
        {"resource": "pods", "name": "p", "uid": "u"}]}})
    assert code == 422 and fields(status) == ["status.reservedFor"]


async def test_allocation_is_immutable_once_set(http: Http) -> None:
    await http.post(CLAIMS, claim())
    result = {"request": "gpu", "driver": "gpu.dralloc.dev", "pool": "p", "device": "gpu-0"}
    await http.patch(f"{CLAIMS}/c/status", {"status": {"allocation": {"devices": {"results": [result]}}}})
    other = {**result, "device": "gpu-1"}
    code, status = await http.patch(f"{CLAIMS}/c/status",
                                    {"status": {"allocation": {"devices": {"results": [other]}}}})
    assert code == 422 and fields(status) == ["status.allocation"]
    code, _ = await http.patch(f"{CLAIMS}/c/status", {"status": {"allocation": None}})
    assert code == 200, "clearing an allocation is allowed"


async def test_allocation_result_must_name_a_request(http: Http) -> None:
    await http.post(CLAIMS, claim())
    bad = {"request": "nope", "driver": "gpu.dralloc.dev", "pool": "p", "device": "gpu-0"}
    code, status = await http.patch(f"{CLAIMS}/c/status",
                                    {"status": {"allocation": {"devices": {"results": [bad]}}}})
    assert code == 422 and fields(status) == ["status.allocation.devices.results[0].request"]


def slice_(**spec: Any) -> dict[str, Any]:
    base = {"driver": "gpu.example.com", "nodeName": "n1",
            "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1}}
    return {"metadata": {"name": "s"}, "spec": {**base, **spec}}


@pytest.mark.parametrize(("spec", "field"), [
    ({"devices": [{"name": f"d{i}"} for i in range(129)]}, "spec.devices"),
    ({"devices": [{"name": "Bad_Name"}]}, "spec.devices[0].name"),
    ({"devices": [{"name": "d", "attributes": {"v": {"version": "not-semver"}}}]},
     "spec.devices[0].attributes[v].version"),
    ({"devices": [{"name": "d", "attributes": {"s": {"string": "x" * 65}}}]},
     "spec.devices[0].attributes[s].string"),
    ({"devices": [{"name": "d", "attributes": {f"a{i}": {"int": i} for i in range(33)}}]}, "spec.devices[0]"),
    ({"allNodes": True}, "spec"),
    ({"devices": [{"name": "d"}], "sharedCounters": [{"name": "c", "counters": {}}]}, "spec"),
    ({"pool": {"name": "n1", "generation": 1, "resourceSliceCount": 0}}, "spec.pool.resourceSliceCount"),
])
async def test_invalid_slices(http: Http, spec: dict[str, Any], field: str) -> None:
    code, status = await http.post(f"{RES}/resourceslices", slice_(**spec))
    assert code == 422, status
    assert field in fields(status)


async def test_device_class_selector_must_compile(http: Http) -> None:
    body = {"metadata": {"name": "bad"}, "spec": {"selectors": [{"cel": {"expression": "device.(("}}]}}
    code, status = await http.post(f"{RES}/deviceclasses", body)
    assert code == 422 and fields(status) == ["spec.selectors[0].cel.expression"]


async def test_demo_seed_is_valid(http: Http) -> None:
    from dralloc.sandbox import demo_objects
    for obj in demo_objects():
        plural = {"Node": "/api/v1/nodes", "DeviceClass": f"{RES}/deviceclasses",
                  "ResourceSlice": f"{RES}/resourceslices",
                  "Lease": "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"}[obj["kind"]]
        code, status = await http.post(plural, obj)
        assert code == 201, status


async def test_core_kinds_are_checked_against_their_schema(http: Http) -> None:
    code, status = await http.post(PODS, {"metadata": {"name": "bad"}, "spec": {"containers": "nginx"}})
    assert code == 400 and status["message"].endswith(
        "json: cannot unmarshal string into Go struct field PodSpec.spec.containers of type []v1.Container")
    pod = {"metadata": {"name": "typo"}, "spec": {"containers": [{"name": "c", "image": "i",
                                                                  "ports": [{"containerPort": "http"}]}]}}
    code, status = await http.post(PODS, pod)
    assert code == 400 and "Go struct field ContainerPort.spec.containers.ports.containerPort of type int32" in \
        status["message"]
    pod = {"metadata": {"name": "extra"}, "spec": {"containers": [{"name": "c", "image": "i", "colour": 1}]}}
    code, status = await http.post(PODS, pod, fieldValidation="Strict")
    assert code == 400 and status["message"].endswith('unknown field "spec.containers[0].colour"')
    code, _ = await http.post(PODS, pod)
    assert code == 201, "unknown fields are only refused when the client asks for strict validation"


class TestPods:
    async def _pod(self, http: Http, name: str = "p", **spec: Any) -> dict[str, Any]:
        code, obj = await http.post(PODS, {"metadata": {"name": name}, "spec": {
            "containers": [{"name": "c", "image": "img"}], **spec}})
        assert code == 201
        return obj  # type: ignore[no-any-return]

    async def test_binding_sets_node_and_condition(self, http: Http) -> None:
        await self._pod(http)
        code, status = await http.post(f"{PODS}/p/binding", {"apiVersion": "v1", "kind": "Binding",
                                                            "metadata": {"name": "p"},
                                                            "target": {"kind": "Node", "name": "n1"}})
        assert code == 201 and status["kind"] == "Status" and status["status"] == "Success"
        _, pod = await http.get(f"{PODS}/p")
        assert pod["spec"]["nodeName"] == "n1"
        assert {"type": "PodScheduled", "status": "True"}.items() <= pod["status"]["conditions"][0].items()
        code, status = await http.post(f"{PODS}/p/binding", {"target": {"kind": "Node", "name": "n2"}})
        assert code == 409 and "already assigned" in status["message"]

    async def test_eviction_deletes(self, http: Http) -> None:
        await self._pod(http)
        code, _status = await http.post(f"{PODS}/p/eviction", {"apiVersion": "policy/v1", "kind": "Eviction",
                                                             "metadata": {"name": "p"}})
        assert code == 201
        code, _ = await http.get(f"{PODS}/p")
        assert code == 404

    async def test_spec_is_immutable_except_allowed_fields(self, http: Http) -> None:
        await self._pod(http, schedulingGates=[{"name": "dralloc.io/allocate"}])
        code, _ = await http.patch(f"{PODS}/p", {"spec": {"nodeSelector": {"kubernetes.io/hostname": "n1"}}})
        assert code == 200, "gated pods may get a node selector"
        code, _ = await http.patch(f"{PODS}/p", {"spec": {"schedulingGates": [{"name": "other"}]}})
        assert code == 422
        code, _ = await http.patch(f"{PODS}/p", {"spec": {"schedulingGates": None}})
        assert code == 200, "gates may be removed"
        code, status = await http.patch(f"{PODS}/p", {"spec": {"nodeSelector": {"a": "b"}}})
        assert code == 422 and status["reason"] == "Invalid"
        code, _ = await http.patch(f"{PODS}/p", {"spec": {"containers": [{"name": "c", "image": "img2"}]}},
                                   STRATEGIC)
        assert code == 200


    async def test_a_gated_pod_says_so_and_its_gates_go_one_by_one(self, http: Http) -> None:
        """As kube-apiserver: a pod created with gates gets PodScheduled=False, reason SchedulingGated; a
        strategic merge patch removes one gate by name (the list merges on `name`), the others stay, and
        the condition stays until a scheduler writes another."""
        pod = await self._pod(http, schedulingGates=[{"name": "dralloc.io/allocate"},
                                                     {"name": "kueue.x-k8s.io/admission"}])
        (scheduled,) = pod["status"]["conditions"]
        assert (scheduled["type"], scheduled["status"], scheduled["reason"], scheduled["message"]) == (
            "PodScheduled", "False", "SchedulingGated", "Scheduling is blocked due to non-empty scheduling gates")
        code, pod = await http.patch(f"{PODS}/p", {"spec": {"schedulingGates": [
            {"$patch": "delete", "name": "kueue.x-k8s.io/admission"}]}}, STRATEGIC)
        assert code == 200 and pod["spec"]["schedulingGates"] == [{"name": "dralloc.io/allocate"}]
        assert pod["status"]["conditions"][0]["reason"] == "SchedulingGated"
        code, _ = await http.post(f"{PODS}/p/binding", {"target": {"kind": "Node", "name": "n1"}})
        assert code == 409, "a pod with a gate left is not bound"
        code, pod = await http.patch(f"{PODS}/p", {"spec": {"schedulingGates": [
            {"$patch": "delete", "name": "dralloc.io/allocate"}]}}, STRATEGIC)
        assert code == 200 and not pod["spec"].get("schedulingGates")

    async def test_a_pod_without_gates_gets_no_condition_on_create(self, http: Http) -> None:
        pod = await self._pod(http)
        assert not pod["status"].get("conditions")


async def test_admin_access_needs_the_namespace_label(http: Http) -> None:
    code, status = await http.post(CLAIMS, claim("admin", adminAccess=True))
    assert code == 422 and fields(status) == ["spec.devices.requests[0].adminAccess"]
    await http.post("/api/v1/namespaces", {"metadata": {"name": "ops", "labels": {
        "resource.kubernetes.io/admin-access": "true"}}})
    code, _ = await http.post("/apis/resource.k8s.io/v1/namespaces/ops/resourceclaims", claim("admin", adminAccess=True))
    assert code == 201


async def test_template_spec_is_immutable(http: Http) -> None:
    path = f"{RES}/namespaces/default/resourceclaimtemplates"
    body = {"metadata": {"name": "t"}, "spec": {"spec": claim()["spec"]}}
    code, _ = await http.post(path, body)
    assert code == 201
    code, status = await http.patch(f"{path}/t", {"spec": {"spec": {"devices": {"requests": [
        {"name": "other", "exactly": {"deviceClassName": "gpu"}}]}}}})
    assert code == 422 and fields(status) == ["spec"]


async def test_device_taint_rule_effect(http: Http) -> None:
    body = {"metadata": {"name": "r"}, "spec": {"deviceSelector": {"driver": "gpu.dralloc.dev"},
                                                "taint": {"key": "k", "effect": "Sometimes"}}}
    code, status = await http.post(f"{RES}/devicetaintrules", body)
    assert code == 422 and fields(status) == ["spec.taint.effect"]


@pytest.mark.parametrize(("spec", "field"), [
    ({}, "spec.containers"),
    ({"containers": [{"name": "c"}]}, "spec.containers[0].image"),
    ({"containers": [{"name": "c", "image": "i"}, {"name": "c", "image": "i"}]}, "spec.containers[1].name"),
    ({"containers": [{"name": "c", "image": "i"}], "resourceClaims": [{"name": "gpu"}]}, "spec.resourceClaims[0]"),
    ({"containers": [{"name": "c", "image": "i", "resources": {"claims": [{"name": "gpu"}]}}]},
     "spec.containers[0].resources.claims[0]"),
])
async def test_invalid_pods(http: Http, spec: dict[str, Any], field: str) -> None:
    code, status = await http.post(PODS, {"metadata": {"name": "p"}, "spec": spec})
    assert code == 422 and field in fields(status)


async def test_generate_name_is_validated_as_a_name_prefix(http: Http) -> None:
    """As kube-apiserver 1.37 answers (seen by `make e2e`): events.k8s.io/v1 Events get strict names, and
    generateName must be a DNS subdomain once one trailing '-' is masked: `pod.` is refused, `pod-` is not."""
    event = {"regarding": {"kind": "Pod", "name": "p"}, "reason": "R", "note": "n", "type": "Normal",
             "eventTime": "2026-01-01T00:00:00.000000Z", "reportingController": "dralloc",
             "reportingInstance": "x", "action": "A"}
    code, status = await http.post("/apis/events.k8s.io/v1/namespaces/default/events",
                                   {**event, "metadata": {"generateName": "p."}})
    assert code == 422 and fields(status) == ["metadata.generateName"]
    code, _ = await http.post("/apis/events.k8s.io/v1/namespaces/default/events", {**event, "metadata": {"name": "p."}})
    assert code == 422
    code, _ = await http.post("/apis/events.k8s.io/v1/namespaces/default/events", {**event, "metadata": {"name": "p.1"}})
    assert code == 201
    code, status = await http.post(CLAIMS, {**claim(), "metadata": {"generateName": "c."}})
    assert code == 422 and fields(status) == ["metadata.generateName"]
    code, _ = await http.post(CLAIMS, {**claim(), "metadata": {"generateName": "c-"}})
    assert code == 201


async def test_allocated_resources_status_names_the_containers_claim_entry(http: Http) -> None:
    """As kube-apiserver 1.37 answers (seen by `make e2e`): `claim:<the container's claim entry>`, with
    `/<request>` only when the entry names one; not the ResourceClaim's name."""
    pod = {"metadata": {"name": "worker"}, "spec": {
        "containers": [{"name": "main", "image": "busybox", "resources": {"claims": [{"name": "gpus"}]}}],
        "resourceClaims": [{"name": "gpus", "resourceClaimTemplateName": "t"}]}}
    code, _ = await http.post(PODS, pod)
    assert code == 201

    def status(name: str) -> dict[str, Any]:
        return {"status": {"containerStatuses": [{
            "name": "main", "ready": True, "restartCount": 0, "image": "busybox", "imageID": "",
            "allocatedResourcesStatus": [{"name": name, "resources": [{"resourceID": "d/p/x", "health": "Unhealthy"}]}]}]}}

    for wrong in ("claim:gpus/gpu", "claim:worker-gpus-abcde", "example.com/gpu"):
        code, body = await http.patch(f"{PODS}/worker/status", status(wrong))
        assert code == 422 and fields(body) == ["status.containerStatuses[0].allocatedResourcesStatus[0].name"], wrong
    code, _ = await http.patch(f"{PODS}/worker/status", status("claim:gpus"))
    assert code == 200
