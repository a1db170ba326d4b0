"""Lists over HTTP: label and field selectors, pagination, all-namespace lists."""

from __future__ import annotations

import pytest
from tests.sandbox.conftest import Http, configmap

from dralloc.sandbox import ApiServer

CM = "/api/v1/namespaces/default/configmaps"
PODS = "/api/v1/namespaces/default/pods"


def names(body: dict[str, object]) -> list[str]:
    return [i["metadata"]["name"] for i in body["items"]]  # type: ignore[attr-defined,index]


@pytest.mark.parametrize(("selector", "expected"), [
    ("tier=db", ["a"]),
    ("tier==db", ["a"]),
    ("tier!=db", ["b", "c"]),
    ("tier in (db,web)", ["a", "b"]),
    ("tier notin (db)", ["b", "c"]),
    ("tier", ["a", "b"]),
    ("!tier", ["c"]),
    ("tier,env=prod", ["a"]),
])
async def test_label_selectors(http: Http, selector: str, expected: list[str]) -> None:
    await http.post(CM, configmap("a", labels={"tier": "db", "env": "prod"}))
    await http.post(CM, configmap("b", labels={"tier": "web"}))
    await http.post(CM, configmap("c"))
    code, body = await http.get(CM, labelSelector=selector)
    assert code == 200 and names(body) == expected


async def test_field_selectors_on_pods(http: Http) -> None:
    for name, node in (("p1", "n1"), ("p2", "n2"), ("p3", "")):
        spec = {"containers": [{"name": "c", "image": "i"}], **({"nodeName": node} if node else {})}
        await http.post(PODS, {"metadata": {"name": name}, "spec": spec})
    _, body = await http.get(PODS, fieldSelector="spec.nodeName=n1")
    assert names(body) == ["p1"]
    _, body = await http.get(PODS, fieldSelector="spec.nodeName=")
    assert names(body) == ["p3"]
    _, body = await http.get(PODS, fieldSelector="metadata.name!=p1,status.phase=Pending")
    assert names(body) == ["p2", "p3"]


async def test_unsupported_field_selector_is_bad_request(http: Http) -> None:
    code, body = await http.get(CM, fieldSelector="data.x=1")
    assert code == 400 and "field label not supported" in body["message"]


async def test_resource_slice_field_selectors(http: Http) -> None:
    for i, node in enumerate(("n1", "n2")):
        await http.post("/apis/resource.k8s.io/v1/resourceslices", {
            "metadata": {"name": f"s{i}"},
            "spec": {"driver": "d.example.com", "nodeName": node,
                     "pool": {"name": node, "generation": 1, "resourceSliceCount": 1}, "devices": []}})
    _, body = await http.get("/apis/resource.k8s.io/v1/resourceslices", fieldSelector="spec.nodeName=n2")
    assert names(body) == ["s1"]


async def test_limit_and_continue_walk_everything_once(http: Http) -> None:
    for i in range(7):
        await http.post(CM, configmap(f"item-{i}"))
    seen: list[str] = []
    token = None
    pages = 0
    while True:
        params = {"limit": 3, **({"continue": token} if token else {})}
        code, body = await http.get(CM, **params)
        assert code == 200
        seen += names(body)
        pages += 1
        token = body["metadata"].get("continue")
        if not token:
            break
    assert seen == [f"item-{i}" for i in range(7)] and pages == 3


async def test_all_namespaces_list(http: Http) -> None:
    await http.post("/api/v1/namespaces", {"metadata": {"name": "n2"}})
    await http.post("/api/v1/namespaces/n2/configmaps", configmap("x"))
    await http.post(CM, configmap("y"))
    _, body = await http.get("/api/v1/configmaps")
    assert [(i["metadata"]["namespace"], i["metadata"]["name"]) for i in body["items"]] == [
        ("default", "y"), ("n2", "x")]
    assert body["kind"] == "ConfigMapList" and body["metadata"]["resourceVersion"]


async def test_events_are_one_storage_in_two_groups(http: Http) -> None:
    """A core/v1 Event shows up in events.k8s.io/v1 with the renamed fields, and back."""
    await http.post("/api/v1/namespaces/default/events", {
        "metadata": {"name": "e1"}, "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
        "reason": "Allocated", "message": "got a gpu", "type": "Normal"})
    code, modern = await http.get("/apis/events.k8s.io/v1/namespaces/default/events/e1")
    assert code == 200 and modern["note"] == "got a gpu" and modern["regarding"]["name"] == "p"
    await http.post("/apis/events.k8s.io/v1/namespaces/default/events", {
        "metadata": {"name": "e2"}, "regarding": {"kind": "Pod", "name": "q"}, "reason": "R",
        "note": "n", "type": "Warning", "eventTime": "2026-01-01T00:00:00.000000Z",
        "reportingController": "dralloc", "reportingInstance": "x", "action": "Allocate"})
    _, core = await http.get("/api/v1/namespaces/default/events", fieldSelector="involvedObject.name=q")
    assert [(e["message"], e["reportingComponent"]) for e in core["items"]] == [("n", "dralloc")]


async def test_pages_show_one_moment(http: Http) -> None:
    """Writes between pages do not leak into later pages: every page is as of the first one."""
    for i in range(6):
        await http.post(CM, configmap(f"page-{i}", {"v": "old"}))
    _, first = await http.get(CM, limit=2)
    await http.patch(f"{CM}/page-4", {"data": {"v": "new"}})
    await http.delete(f"{CM}/page-3")
    await http.post(CM, configmap("page-5a"))
    seen = [(i["metadata"]["name"], i["data"]["v"]) for i in first["items"]]
    token = first["metadata"]["continue"]
    while token:
        _, page = await http.get(CM, limit=2, **{"continue": token})
        assert page["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
        seen += [(i["metadata"]["name"], i["data"]["v"]) for i in page["items"]]
        token = page["metadata"].get("continue")
    assert seen == [(f"page-{i}", "old") for i in range(6)]


async def test_expired_continue_token_is_410(async_apiserver: ApiServer, http: Http) -> None:
    for i in range(3):
        await http.post(CM, configmap(f"x-{i}"))
    _, first = await http.get(CM, limit=1)
    await http.post(CM, configmap("x-9"))
    async_apiserver.compact()
    code, status = await http.get(CM, limit=1, **{"continue": first["metadata"]["continue"]})
    assert code == 410 and status["reason"] == "Expired"
