"""Discovery, OpenAPI and CRDs over HTTP."""

from __future__ import annotations

from tests.sandbox.conftest import Http
from tests.sandbox.test_object_semantics import crd

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


async def test_core_discovery(http: Http) -> None:
    _, api = await http.get("/api")
    assert api["versions"] == ["v1"]
    _, core = await http.get("/api/v1")
    by_name = {r["name"]: r for r in core["resources"]}
    assert {"pods", "pods/status", "pods/binding", "pods/eviction", "nodes", "namespaces", "events",
            "configmaps"} <= set(by_name)
    assert by_name["pods"]["shortNames"] == ["po"] and "watch" in by_name["pods"]["verbs"]
    assert by_name["pods/eviction"]["group"] == "policy"


async def test_groups_and_preferred_versions(http: Http) -> None:
    _, apis = await http.get("/apis")
    groups = {g["name"]: g for g in apis["groups"]}
    assert groups["resource.k8s.io"]["preferredVersion"]["version"] == "v1"
    assert [v["version"] for v in groups["resource.k8s.io"]["versions"]] == ["v1", "v1beta2", "v1alpha3"]
    _, beta = await http.get("/apis/resource.k8s.io/v1beta2")
    assert [r["name"] for r in beta["resources"]] == ["devicetaintrules", "devicetaintrules/status"]
    code, _ = await http.get("/apis/nope.example.com/v1")
    assert code == 404


async def test_version(http: Http) -> None:
    _, version = await http.get("/version")
    assert (version["major"], version["minor"]) == ("1", "37")


async def test_openapi_v3_describes_patch_parameters_and_schemas(http: Http) -> None:
    _, index = await http.get("/openapi/v3")
    url = index["paths"]["apis/resource.k8s.io/v1"]["serverRelativeURL"]
    _, doc = await http.get(url.split("?")[0])
    ops = doc["paths"]["/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaims/{name}"]["patch"]
    assert ops["x-kubernetes-group-version-kind"]["kind"] == "ResourceClaim"
    assert "fieldValidation" in [p["name"] for p in ops["parameters"]]
    claim = doc["components"]["schemas"]["io.k8s.api.resource.v1.ResourceClaim"]
    assert claim["properties"]["spec"]["$ref"] == "#/components/schemas/io.k8s.api.resource.v1.ResourceClaimSpec"


async def test_crd_serves_its_resource_until_deleted(http: Http) -> None:
    path = "/apis/example.dralloc.dev/v1/namespaces/default/widgets"
    code, _ = await http.get(path)
    assert code == 404
    code, created = await http.post(CRDS, crd())
    assert code == 201
    assert {c["type"]: c["status"] for c in created["status"]["conditions"]}["Established"] == "True"
    _, resources = await http.get("/apis/example.dralloc.dev/v1")
    assert [r["name"] for r in resources["resources"]] == ["widgets", "widgets/status"]
    code, widget = await http.post(path, {"apiVersion": "example.dralloc.dev/v1", "kind": "Widget",
                                          "metadata": {"name": "w"}, "spec": {"size": 1}, "status": {"x": 1}})
    assert code == 201 and "status" not in widget
    code, widget = await http.patch(f"{path}/w/status", {"status": {"ready": True}})
    assert code == 200 and widget["status"] == {"ready": True}
    await http.delete(f"{CRDS}/widgets.example.dralloc.dev")
    code, _ = await http.get(path)
    assert code == 404


def policy_crd() -> dict[str, object]:
    schema = {"type": "object", "properties": {
        "spec": {"type": "object", "required": ["mode"], "properties": {
            "mode": {"type": "string", "enum": ["first-fit", "spread"]},
            "budget": {"type": "integer", "minimum": 1, "default": 1000},
            "nodes": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
            "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}},
        "status": {"type": "object", "properties": {"phase": {"type": "string"}}}}}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "policies.example.dralloc.dev"},
            "spec": {"group": "example.dralloc.dev", "scope": "Cluster",
                     "names": {"plural": "policies", "singular": "policy", "kind": "Policy"},
                     "versions": [{"name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
                                   "schema": {"openAPIV3Schema": schema}}]}}


async def test_crd_schema_prunes_defaults_and_validates(http: Http) -> None:
    await http.post(CRDS, policy_crd())
    path = "/apis/example.dralloc.dev/v1/policies"
    code, obj = await http.post(path, {"apiVersion": "example.dralloc.dev/v1", "kind": "Policy",
                                       "metadata": {"name": "p"},
                                       "spec": {"mode": "spread", "typo": 1, "extra": {"free": {"x": 1}}}})
    assert code == 201, obj
    assert obj["spec"] == {"mode": "spread", "budget": 1000, "extra": {"free": {"x": 1}}}
    code, status = await http.post(path, {"metadata": {"name": "q"}, "spec": {"mode": "best", "budget": 0,
                                                                               "nodes": ["a", "a"]}})
    assert code == 422
    assert sorted(c["field"] for c in status["details"]["causes"]) == ["spec.budget", "spec.mode", "spec.nodes[1]"]
    code, status = await http.post(path, {"metadata": {"name": "r"}, "spec": {}})
    assert code == 422 and [c["field"] for c in status["details"]["causes"]] == ["spec.mode"]
