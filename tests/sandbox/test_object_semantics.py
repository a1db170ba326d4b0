"""Object semantics over HTTP: identity, resourceVersions, generation, conflicts, status split."""

from __future__ import annotations

import asyncio

from tests.sandbox.conftest import JSONPATCH, MERGE, STRATEGIC, Http, configmap

from dralloc.sandbox import ThreadedApiServer

CM = "/api/v1/namespaces/default/configmaps"
CLAIMS = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims"


def claim(name: str) -> dict[str, object]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}}


class TestCreate:
    async def test_server_sets_identity(self, http: Http) -> None:
        """Create assigns uid, creationTimestamp, generation 1 and a resourceVersion."""
        code, obj = await http.post(CM, configmap("a"))
        assert code == 201
        meta = obj["metadata"]
        assert meta["uid"] and meta["creationTimestamp"] and meta["generation"] == 1
        assert int(meta["resourceVersion"]) > 0

    async def test_generate_name(self, http: Http) -> None:
        """generateName gets a 5-character suffix, different each time."""
        names = set()
        for _ in range(3):
            code, obj = await http.post(CM, {"metadata": {"generateName": "gen-"}, "data": {}})
            assert code == 201
            assert obj["metadata"]["name"].startswith("gen-") and len(obj["metadata"]["name"]) == 9
            names.add(obj["metadata"]["name"])
        assert len(names) == 3

    async def test_duplicate_is_already_exists(self, http: Http) -> None:
        await http.post(CM, configmap("dup"))
        code, body = await http.post(CM, configmap("dup"))
        assert code == 409 and body["reason"] == "AlreadyExists" and body["kind"] == "Status"

    async def test_unknown_namespace_is_not_found(self, http: Http) -> None:
        code, body = await http.post("/api/v1/namespaces/nope/configmaps", configmap("x"))
        assert code == 404 and body["reason"] == "NotFound"

    async def test_resource_versions_are_global_and_increasing(self, http: Http) -> None:
        _, a = await http.post(CM, configmap("rv-a"))
        _, n = await http.post("/api/v1/nodes", {"metadata": {"name": "n1"}})
        _, b = await http.post(CM, configmap("rv-b"))
        rvs = [int(o["metadata"]["resourceVersion"]) for o in (a, n, b)]
        assert rvs == sorted(rvs) and len(set(rvs)) == 3


class TestUpdate:
    async def test_stale_resource_version_conflicts(self, http: Http) -> None:
        _, obj = await http.post(CM, configmap("c", {"k": "1"}))
        obj["data"] = {"k": "2"}
        code, _ = await http.put(f"{CM}/c", obj)
        assert code == 200
        obj["data"] = {"k": "3"}
        code, body = await http.put(f"{CM}/c", obj)  # still carries the old resourceVersion
        assert code == 409
        assert body["reason"] == "Conflict" and "the object has been modified" in body["message"]

    async def test_concurrent_puts_exactly_one_wins(self, http: Http) -> None:
        """Ten PUTs with the same resourceVersion, sent concurrently: one 200, nine 409."""
        _, obj = await http.post(CM, configmap("race"))

        async def put(i: int) -> int:
            code, _ = await http.put(f"{CM}/race", {**obj, "data": {"writer": str(i)}})
            return code

        codes = await asyncio.gather(*(put(i) for i in range(10)))
        assert sorted(codes) == [200] + [409] * 9

    async def test_generation_bumps_on_spec_change_only(self, http: Http) -> None:
        await http.post(CLAIMS, claim("g"))
        code, patched = await http.patch(f"{CLAIMS}/g", {"metadata": {"labels": {"a": "b"}}})
        assert code == 200 and patched["metadata"]["generation"] == 1
        await http.post(CM, configmap("gen", {"a": "1"}))
        _, cm2 = await http.patch(f"{CM}/gen", {"data": {"a": "2"}})
        assert cm2["metadata"]["generation"] == 2

    async def test_noop_write_keeps_resource_version(self, http: Http) -> None:
        _, obj = await http.post(CM, configmap("noop", {"a": "1"}))
        _, same = await http.patch(f"{CM}/noop", {"data": {"a": "1"}})
        assert same["metadata"]["resourceVersion"] == obj["metadata"]["resourceVersion"]

    async def test_status_subresource_split(self, http: Http) -> None:
        """The main resource ignores status; /status ignores everything else."""
        await http.post(CLAIMS, claim("s"))
        _, obj = await http.patch(f"{CLAIMS}/s", {"status": {"reservedFor": []},
                                                  "metadata": {"labels": {"x": "y"}}})
        assert "status" not in obj and obj["metadata"]["labels"] == {"x": "y"}
        alloc = {"devices": {"results": [{"request": "gpu", "driver": "gpu.dralloc.dev", "pool": "node-0",
                                          "device": "gpu-0"}]}}
        code, obj = await http.patch(f"{CLAIMS}/s/status", {"status": {"allocation": alloc},
                                                            "metadata": {"labels": {"x": "z"}}})
        assert code == 200, obj
        assert obj["status"]["allocation"] == alloc and obj["metadata"]["labels"] == {"x": "y"}

    async def test_status_patch_with_stale_resource_version_conflicts(self, http: Http) -> None:
        _, obj = await http.post(CLAIMS, claim("st"))
        await http.patch(f"{CLAIMS}/st", {"metadata": {"labels": {"bump": "1"}}})
        code, body = await http.patch(f"{CLAIMS}/st/status", {
            "metadata": {"resourceVersion": obj["metadata"]["resourceVersion"]}, "status": {}})
        assert code == 409 and body["reason"] == "Conflict"


class TestPatchFormats:
    async def test_merge_patch_null_deletes(self, http: Http) -> None:
        await http.post(CM, configmap("m", {"a": "1", "b": "2"}))
        _, obj = await http.patch(f"{CM}/m", {"data": {"a": None, "c": "3"}}, MERGE)
        assert obj["data"] == {"b": "2", "c": "3"}

    async def test_json_patch_test_failure_is_422(self, http: Http) -> None:
        """kopf's finalizer patches carry a `test` on resourceVersion: a mismatch must be 422."""
        _, obj = await http.post(CM, configmap("j"))
        ops = [{"op": "test", "path": "/metadata/resourceVersion", "value": "999999"},
               {"op": "add", "path": "/metadata/finalizers", "value": ["x/y"]}]
        code, body = await http.patch(f"{CM}/j", ops, JSONPATCH)
        assert code == 422 and body["kind"] == "Status"
        ops[0]["value"] = obj["metadata"]["resourceVersion"]
        code, obj = await http.patch(f"{CM}/j", ops, JSONPATCH)
        assert code == 200 and obj["metadata"]["finalizers"] == ["x/y"]

    async def test_strategic_merge_merges_lists_by_key(self, http: Http) -> None:
        pod = {"metadata": {"name": "p"}, "spec": {"containers": [
            {"name": "a", "image": "img:1"}, {"name": "b", "image": "img:1"}],
            "tolerations": [{"key": "k1", "operator": "Exists"}]}}
        await http.post("/api/v1/namespaces/default/pods", pod)
        patch = {"spec": {"containers": [{"name": "b", "image": "img:2"}]}}
        code, obj = await http.patch("/api/v1/namespaces/default/pods/p", patch, STRATEGIC)
        assert code == 200, obj
        assert [(c["name"], c["image"]) for c in obj["spec"]["containers"]] == [("a", "img:1"), ("b", "img:2")]
        status = {"status": {"conditions": [{"type": "Ready", "status": "True"}]}}
        await http.patch("/api/v1/namespaces/default/pods/p/status", status, STRATEGIC)
        status = {"status": {"conditions": [{"type": "Custom", "status": "False"}]}}
        _, obj = await http.patch("/api/v1/namespaces/default/pods/p/status", status, STRATEGIC)
        assert [c["type"] for c in obj["status"]["conditions"]] == ["Ready", "Custom"]

    async def test_strategic_merge_refused_for_custom_resources(self, http: Http) -> None:
        await http.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd())
        path = "/apis/example.dralloc.dev/v1/namespaces/default/widgets"
        await http.post(path, {"apiVersion": "example.dralloc.dev/v1", "kind": "Widget",
                               "metadata": {"name": "w"}, "spec": {"size": 1}})
        code, _ = await http.patch(f"{path}/w", {"spec": {"size": 2}}, STRATEGIC)
        assert code == 415
        code, obj = await http.patch(f"{path}/w", {"spec": {"size": 2}}, MERGE)
        assert code == 200 and obj["spec"]["size"] == 2


def crd() -> dict[str, object]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.dralloc.dev"},
        "spec": {"group": "example.dralloc.dev", "scope": "Namespaced",
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"]},
                 "versions": [{"name": "v1", "served": True, "storage": True,
                               "subresources": {"status": {}},
                               "schema": {"openAPIV3Schema": {"type": "object",
                                                              "x-kubernetes-preserve-unknown-fields": True}}}]},
    }


class TestApply:
    async def test_server_side_apply_creates_then_merges(self, http: Http) -> None:
        """apply-patch creates a missing object and merges into an existing one (no field ownership)."""
        apply = "application/apply-patch+yaml"
        body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ssa"}, "data": {"a": "1"}}
        code, obj = await http.patch(f"{CM}/ssa", body, apply, fieldManager="test")
        assert code == 201 and obj["data"] == {"a": "1"}
        code, obj = await http.patch(f"{CM}/ssa", {**body, "data": {"b": "2"}}, apply, fieldManager="test")
        assert code == 200 and obj["data"] == {"a": "1", "b": "2"}


def test_threaded_server_helpers(apiserver: ThreadedApiServer) -> None:
    """The threaded handle can be driven from plain code: seed, read back, count versions."""
    before = apiserver.resource_version
    apiserver.seed([configmap("t1", namespace="fresh")])
    stored = apiserver.get("v1", "ConfigMap", "t1", "fresh")
    assert stored is not None and apiserver.resource_version > before
    assert "fresh" in [o["metadata"]["name"] for o in apiserver.list_objects("v1", "Namespace")]
