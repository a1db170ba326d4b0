"""Deletion over HTTP: finalizers, garbage collection (background, foreground, orphan), namespaces."""

from __future__ import annotations

import asyncio
from typing import Any

from tests.sandbox.conftest import Http, configmap

CM = "/api/v1/namespaces/default/configmaps"


async def eventually_gone(http: Http, path: str, tries: int = 200) -> bool:
    for _ in range(tries):
        code, _ = await http.get(path)
        if code == 404:
            return True
        await asyncio.sleep(0.02)
    return False


def owned_by(owner: dict[str, Any], **extra: Any) -> list[dict[str, Any]]:
    return [{"apiVersion": "v1", "kind": "ConfigMap", "name": owner["metadata"]["name"],
             "uid": owner["metadata"]["uid"], **extra}]


async def test_finalizers_hold_deletion(http: Http) -> None:
    await http.post(CM, {"metadata": {"name": "f", "finalizers": ["a/b"]}})
    code, obj = await http.delete(f"{CM}/f")
    assert code == 200 and obj["metadata"]["deletionTimestamp"]
    code, obj = await http.get(f"{CM}/f")
    assert code == 200 and obj["metadata"]["finalizers"] == ["a/b"]
    code, _body = await http.patch(f"{CM}/f", {"metadata": {"finalizers": ["a/b", "c/d"]}})
    assert code == 422, "no new finalizers on an object being deleted"
    await http.patch(f"{CM}/f", {"metadata": {"finalizers": None}})
    code, _ = await http.get(f"{CM}/f")
    assert code == 404


async def test_delete_precondition_conflicts(http: Http) -> None:
    await http.post(CM, configmap("p"))
    code, _body = await http.delete(f"{CM}/p", {"preconditions": {"resourceVersion": "1"}})
    assert code == 409


async def test_background_gc_deletes_dependents(http: Http) -> None:
    _, owner = await http.post(CM, configmap("owner"))
    for i in range(3):
        await http.post(CM, {"metadata": {"name": f"dep-{i}", "ownerReferences": owned_by(owner)}})
    await http.delete(f"{CM}/owner")
    for i in range(3):
        assert await eventually_gone(http, f"{CM}/dep-{i}")


async def test_dependent_with_another_live_owner_survives(http: Http) -> None:
    _, a = await http.post(CM, configmap("a"))
    _, b = await http.post(CM, configmap("b"))
    await http.post(CM, {"metadata": {"name": "shared", "ownerReferences": owned_by(a) + owned_by(b)}})
    await http.delete(f"{CM}/a")
    for _ in range(100):
        _, obj = await http.get(f"{CM}/shared")
        if len(obj["metadata"]["ownerReferences"]) == 1:
            break
        await asyncio.sleep(0.02)
    assert [r["name"] for r in obj["metadata"]["ownerReferences"]] == ["b"]


async def test_foreground_deletion_waits_for_dependents(http: Http) -> None:
    _, owner = await http.post(CM, configmap("fg"))
    await http.post(CM, {"metadata": {"name": "fg-dep", "finalizers": ["hold/on"],
                                      "ownerReferences": owned_by(owner, blockOwnerDeletion=True)}})
    code, obj = await http.delete(f"{CM}/fg", {"propagationPolicy": "Foreground"})
    assert "foregroundDeletion" in obj["metadata"]["finalizers"]
    for _ in range(50):
        _, dep = await http.get(f"{CM}/fg-dep")
        if dep["metadata"].get("deletionTimestamp"):
            break
        await asyncio.sleep(0.02)
    assert dep["metadata"]["deletionTimestamp"]
    code, _ = await http.get(f"{CM}/fg")
    assert code == 200, "the owner stays while its dependent exists"
    await http.patch(f"{CM}/fg-dep", {"metadata": {"finalizers": None}})
    assert await eventually_gone(http, f"{CM}/fg")


async def test_orphan_keeps_dependents(http: Http) -> None:
    _, owner = await http.post(CM, configmap("o"))
    await http.post(CM, {"metadata": {"name": "o-dep", "ownerReferences": owned_by(owner)}})
    await http.delete(f"{CM}/o", propagationPolicy="Orphan")
    await asyncio.sleep(0.1)
    code, dep = await http.get(f"{CM}/o-dep")
    assert code == 200 and "ownerReferences" not in dep["metadata"]


async def test_namespace_deletion_removes_its_objects(http: Http) -> None:
    await http.post("/api/v1/namespaces", {"metadata": {"name": "doomed"}})
    base = "/api/v1/namespaces/doomed/configmaps"
    await http.post(base, configmap("one"))
    await http.post(base, {"metadata": {"name": "held", "finalizers": ["x/y"]}})
    code, ns = await http.delete("/api/v1/namespaces/doomed")
    assert code == 200 and ns["status"]["phase"] == "Terminating"
    code, _body = await http.post(base, configmap("late"))
    assert code == 403
    assert await eventually_gone(http, f"{base}/one")
    code, _ = await http.get("/api/v1/namespaces/doomed")
    assert code == 200, "held by an object with a finalizer"
    await http.patch(f"{base}/held", {"metadata": {"finalizers": None}})
    assert await eventually_gone(http, "/api/v1/namespaces/doomed")


async def test_delete_collection_with_selector(http: Http) -> None:
    await http.post(CM, configmap("k1", labels={"kill": "yes"}))
    await http.post(CM, configmap("k2", labels={"kill": "no"}))
    code, body = await http.delete(CM, labelSelector="kill=yes")
    assert code == 200 and [i["metadata"]["name"] for i in body["items"]] == ["k1"]
    _, listed = await http.get(CM)
    assert [i["metadata"]["name"] for i in listed["items"]] == ["k2"]


async def test_system_namespaces_cannot_be_deleted(http: Http) -> None:
    code, status = await http.delete("/api/v1/namespaces/default")
    assert code == 403 and status["reason"] == "Forbidden"


# ---- owners in another namespace: kube's GC looks an owner up in the dependent's namespace ----------


def pod(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "img:1"}]}}


def ref(obj: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": obj["apiVersion"], "kind": obj["kind"], "name": obj["metadata"]["name"],
            "uid": obj["metadata"]["uid"]}


async def namespaces(http: Http, *names: str) -> None:
    for name in names:
        code, _ = await http.post("/api/v1/namespaces", {"metadata": {"name": name}})
        assert code == 201


async def eventually(http: Http, path: str, check: Any, tries: int = 200) -> dict[str, Any]:
    for _ in range(tries):
        code, obj = await http.get(path)
        if code == 200 and check(obj):
            return obj
        await asyncio.sleep(0.02)
    raise AssertionError(f"{path}: {obj}")


async def test_deleting_a_pod_collects_only_dependents_in_its_own_namespace(http: Http) -> None:
    """An object in namespace b naming the uid of pod x of namespace a is not x's dependent: the
    reference counts as absent (it is dropped while the object has an owner of its own), and
    deleting x collects x's dependent in a but leaves the object in b alone."""
    await namespaces(http, "a", "b")
    _, x = await http.post("/api/v1/namespaces/a/pods", pod("x"))
    await http.post("/api/v1/namespaces/a/configmaps", {"metadata": {"name": "dep", "ownerReferences": [ref(x)]}})
    _, keeper = await http.post("/api/v1/namespaces/b/configmaps", configmap("keeper"))
    code, _ = await http.post("/api/v1/namespaces/b/configmaps", {"metadata": {
        "name": "other", "ownerReferences": [ref(keeper), ref(x)]}})
    assert code == 201
    other = await eventually(http, "/api/v1/namespaces/b/configmaps/other",
                             lambda o: len(o["metadata"]["ownerReferences"]) == 1)
    assert other["metadata"]["ownerReferences"] == [ref(keeper)], "x owns nothing in b, even while it lives"
    await http.delete("/api/v1/namespaces/a/pods/x", gracePeriodSeconds=0)
    assert await eventually_gone(http, "/api/v1/namespaces/a/configmaps/dep")
    code, after = await http.get("/api/v1/namespaces/b/configmaps/other")
    assert code == 200 and after["metadata"]["resourceVersion"] == other["metadata"]["resourceVersion"]


async def test_object_whose_only_owner_is_in_another_namespace_is_collected_as_ownerless(http: Http) -> None:
    """As upstream ("a namespaced owner must exist in the same namespace as the dependent; if it
    does not, the owner reference is treated as absent"): collected at once, like an object whose
    owner never existed, not when x goes."""
    await namespaces(http, "a", "b")
    _, x = await http.post("/api/v1/namespaces/a/pods", pod("x"))
    code, _ = await http.post("/api/v1/namespaces/b/configmaps", {"metadata": {
        "name": "stray", "ownerReferences": [ref(x)]}})
    assert code == 201
    assert await eventually_gone(http, "/api/v1/namespaces/b/configmaps/stray")
    assert (await http.get("/api/v1/namespaces/a/pods/x"))[0] == 200


async def test_foreground_deletion_waits_only_for_dependents_in_its_own_namespace(http: Http) -> None:
    await namespaces(http, "a", "b")
    _, x = await http.post("/api/v1/namespaces/a/pods", pod("x"))
    _, keeper = await http.post("/api/v1/namespaces/b/configmaps", configmap("keeper"))
    await http.post("/api/v1/namespaces/a/configmaps", {"metadata": {"name": "dep", "ownerReferences": [ref(x)]}})
    await http.post("/api/v1/namespaces/b/configmaps", {"metadata": {
        "name": "other", "finalizers": ["hold/on"], "ownerReferences": [ref(keeper), ref(x)]}})
    await http.delete("/api/v1/namespaces/a/pods/x", {"propagationPolicy": "Foreground", "gracePeriodSeconds": 0})
    assert await eventually_gone(http, "/api/v1/namespaces/a/pods/x")
    assert await eventually_gone(http, "/api/v1/namespaces/a/configmaps/dep")
    _, other = await http.get("/api/v1/namespaces/b/configmaps/other")
    assert not other["metadata"].get("deletionTimestamp")
    assert other["metadata"]["ownerReferences"] == [ref(keeper)]


async def test_cluster_scoped_object_naming_a_namespaced_owner_is_never_collected(http: Http) -> None:
    """Upstream cannot resolve such a reference and leaves the object alone."""
    await namespaces(http, "a")
    _, x = await http.post("/api/v1/namespaces/a/pods", pod("x"))
    _, gone = await http.post("/api/v1/namespaces/a/pods", pod("gone"))
    await http.delete("/api/v1/namespaces/a/pods/gone", gracePeriodSeconds=0)
    await http.post("/api/v1/namespaces/a/configmaps", {"metadata": {"name": "dep", "ownerReferences": [ref(x)]}})
    for name, owner in (("n1", x), ("n2", gone)):
        code, _ = await http.post("/api/v1/nodes", {"metadata": {"name": name, "ownerReferences": [ref(owner)]}})
        assert code == 201
    await http.delete("/api/v1/namespaces/a/pods/x", gracePeriodSeconds=0)
    assert await eventually_gone(http, "/api/v1/namespaces/a/configmaps/dep")
    for name, owner in (("n1", x), ("n2", gone)):
        code, node = await http.get(f"/api/v1/nodes/{name}")
        assert code == 200 and node["metadata"]["ownerReferences"] == [ref(owner)]
