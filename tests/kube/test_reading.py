"""Reads over HTTP: paginated lists, selectors, filled-in types, watches with resume and 410.

ConfigMaps stand in for "many objects of a namespaced type" (the functions are generic
over `Resource`); claims and slices show the resource.k8s.io/v1 path. Watches are read
with a guard timeout so a broken stream fails the test instead of hanging it; nothing
asserts on how long anything took.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest
from tests.kube.objects import claim, configmap

from dralloc.kube import errors, reading, resources, writing
from dralloc.kube.resources import Resource
from dralloc.kube.session import Session
from dralloc.sandbox import ApiServer, demo_objects

CONFIGMAPS = Resource("", "v1", "configmaps", "ConfigMap", True)


async def _events(session: Session, resource: Resource, rv: str, count: int, *,
                  timeout_seconds: int = 30, **kwargs: Any) -> list[tuple[str, dict[str, Any]]]:
    """The first `count` events after `rv` (fewer if the server ends the stream)."""
    seen: list[tuple[str, dict[str, Any]]] = []
    async with asyncio.timeout(20):
        async with contextlib.aclosing(reading.watch_objects(
                session, resource, resource_version=rv, timeout_seconds=timeout_seconds, **kwargs)) as events:
            async for event in events:
                seen.append(event)
                if len(seen) >= count:
                    break
    return seen


async def test_list_walks_every_page(async_apiserver: ApiServer, session: Session,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """250 objects at 40 per page: all of them, each once, in 7 requests."""
    async_apiserver.seed([configmap(f"cm-{i:03}") for i in range(250)])
    calls: list[dict[str, Any]] = []
    original = session.request

    async def counting(method: str, path: str, **kwargs: Any) -> Any:
        calls.append(kwargs.get("query") or {})
        return await original(method, path, **kwargs)

    monkeypatch.setattr(session, "request", counting)
    items, rv = await reading.list_objects(session, CONFIGMAPS, namespace="default", page_size=40)
    names = [i["metadata"]["name"] for i in items]
    assert sorted(names) == [f"cm-{i:03}" for i in range(250)] and len(set(names)) == 250
    assert len(calls) == 7 and all(c["limit"] == 40 for c in calls)
    assert rv and int(rv) > 0


async def test_list_items_get_api_version_and_kind(async_apiserver: ApiServer, session: Session) -> None:
    """List items (which the server sends without them) carry apiVersion and kind."""
    async_apiserver.seed(demo_objects())
    slices, _ = await reading.list_objects(session, resources.RESOURCE_SLICES)
    assert slices and {(s["apiVersion"], s["kind"]) for s in slices} == {("resource.k8s.io/v1", "ResourceSlice")}


async def test_label_and_field_selectors(async_apiserver: ApiServer, session: Session) -> None:
    """label_selector and field_selector are passed to the server and narrow the list."""
    async_apiserver.seed([configmap("a", labels={"tier": "x"}), configmap("b", labels={"tier": "y"}),
                          configmap("c", labels={"tier": "x"}), configmap("d", namespace="kube-system")])
    by_label, _ = await reading.list_objects(session, CONFIGMAPS, namespace="default", label_selector="tier=x")
    by_field, _ = await reading.list_objects(session, CONFIGMAPS, field_selector="metadata.name=d")
    everywhere, _ = await reading.list_objects(session, CONFIGMAPS)
    assert sorted(i["metadata"]["name"] for i in by_label) == ["a", "c"]
    assert [(i["metadata"]["namespace"], i["metadata"]["name"]) for i in by_field] == [("kube-system", "d")]
    assert len(everywhere) == 4


async def test_field_selector_on_slices_by_node(async_apiserver: ApiServer, session: Session) -> None:
    """ResourceSlices by spec.nodeName, the way the state is fed per node."""
    async_apiserver.seed(demo_objects())
    slices, _ = await reading.list_objects(session, resources.RESOURCE_SLICES, field_selector="spec.nodeName=node-1")
    assert slices and {s["spec"]["nodeName"] for s in slices} == {"node-1"}


async def test_get_object(session: Session) -> None:
    """get_object returns the stored object as raw camelCase JSON."""
    await writing.create_object(session, resources.RESOURCE_CLAIMS, claim("c"))
    got = await reading.get_object(session, resources.RESOURCE_CLAIMS, "c", "default")
    assert got["kind"] == "ResourceClaim" and got["apiVersion"] == "resource.k8s.io/v1"
    assert got["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] == "gpu"


async def test_watch_from_list_version_then_resume(session: Session) -> None:
    """Events after the list's version arrive in order; resuming from the last one skips them."""
    _, rv = await reading.list_objects(session, resources.RESOURCE_CLAIMS, namespace="default")
    await writing.create_object(session, resources.RESOURCE_CLAIMS, claim("a"))
    await writing.create_object(session, resources.RESOURCE_CLAIMS, claim("b"))
    first = await _events(session, resources.RESOURCE_CLAIMS, rv, 2, namespace="default")
    assert [(t, o["metadata"]["name"]) for t, o in first] == [("ADDED", "a"), ("ADDED", "b")]
    assert all(o["kind"] == "ResourceClaim" for _, o in first)

    await writing.delete_object(session, resources.RESOURCE_CLAIMS, "a", "default")
    resumed = await _events(session, resources.RESOURCE_CLAIMS, first[-1][1]["metadata"]["resourceVersion"], 1,
                            namespace="default")
    assert [(t, o["metadata"]["name"]) for t, o in resumed] == [("DELETED", "a")]


async def test_watch_ends_when_server_ends_it(session: Session) -> None:
    """A watch with nothing to say ends normally at its timeoutSeconds (the caller resumes)."""
    _, rv = await reading.list_objects(session, CONFIGMAPS, namespace="default")
    assert await _events(session, CONFIGMAPS, rv, 1, timeout_seconds=1, namespace="default") == []


@pytest.mark.sandbox(bookmark_interval=0.1)
async def test_watch_yields_bookmarks(session: Session) -> None:
    """Bookmarks are asked for and passed on, carrying a resourceVersion to resume from."""
    _, rv = await reading.list_objects(session, CONFIGMAPS, namespace="default")
    [(kind, obj)] = await _events(session, CONFIGMAPS, rv, 1, namespace="default")
    assert kind == "BOOKMARK" and obj["metadata"]["resourceVersion"]


async def test_watch_too_old_is_gone(async_apiserver: ApiServer, session: Session) -> None:
    """After the server compacts its history, resuming from an older version raises GoneError."""
    _, rv = await reading.list_objects(session, CONFIGMAPS, namespace="default")
    await writing.create_object(session, CONFIGMAPS, configmap("x"))
    async_apiserver.compact()
    with pytest.raises(errors.GoneError) as caught:
        await _events(session, CONFIGMAPS, rv, 1, namespace="default")
    assert caught.value.status == 410


async def test_watch_refused_with_410_is_gone(async_apiserver: ApiServer, session: Session) -> None:
    """A 410 answer to the watch request itself (not an ERROR event) is GoneError too."""
    async_apiserver.faults.next("GET", "/api/v1/namespaces/default/configmaps", status=410)
    with pytest.raises(errors.GoneError):
        await _events(session, CONFIGMAPS, "1", 1, namespace="default")


async def test_list_continue_expired_is_gone(async_apiserver: ApiServer, session: Session,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A page request answered 410 (continue token expired) is GoneError: relist from scratch."""
    async_apiserver.seed([configmap(f"cm-{i}") for i in range(5)])
    original = session.request
    pages = 0

    async def second_page_gone(method: str, path: str, **kwargs: Any) -> Any:
        nonlocal pages
        pages += 1
        if pages == 2:
            async_apiserver.faults.next("GET", path, status=410)
        return await original(method, path, **kwargs)

    monkeypatch.setattr(session, "request", second_page_gone)
    with pytest.raises(errors.GoneError):
        await reading.list_objects(session, CONFIGMAPS, namespace="default", page_size=2)


async def test_watch_with_label_selector(session: Session) -> None:
    """The watch passes labelSelector on: only matching objects are seen."""
    _, rv = await reading.list_objects(session, CONFIGMAPS, namespace="default")
    await writing.create_object(session, CONFIGMAPS, configmap("other", labels={"app": "other"}))
    await writing.create_object(session, CONFIGMAPS, configmap("mine", labels={"app": "dralloc"}))
    seen = await _events(session, CONFIGMAPS, rv, 1, namespace="default", label_selector="app=dralloc")
    assert [(t, o["metadata"]["name"]) for t, o in seen] == [("ADDED", "mine")]


async def test_server_closing_watches_ends_the_stream(async_apiserver: ApiServer, session: Session) -> None:
    """A server that drops its watch streams (restart, load balancer) ends the iteration cleanly."""
    _, rv = await reading.list_objects(session, CONFIGMAPS, namespace="default")
    await writing.create_object(session, CONFIGMAPS, configmap("a"))
    seen: list[str] = []
    async with asyncio.timeout(20):
        async with contextlib.aclosing(reading.watch_objects(session, CONFIGMAPS, resource_version=rv,
                                                             namespace="default")) as events:
            async for kind, _obj in events:
                seen.append(kind)
                async_apiserver.close_watches()
    assert seen == ["ADDED"]
