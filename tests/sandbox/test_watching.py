"""Watch semantics over HTTP: one event per write, resume, 410 Gone, bookmarks, timeouts."""

from __future__ import annotations

import asyncio

import pytest
from tests.sandbox.conftest import JSONPATCH, Http, configmap

from dralloc.sandbox import ApiServer

CM = "/api/v1/namespaces/default/configmaps"


async def _rv(http: Http) -> int:
    _, body = await http.get(CM)
    return int(body["metadata"]["resourceVersion"])


async def test_one_event_per_write_with_its_resource_version(http: Http) -> None:
    """kopf waits for the event carrying the RV a patch returned: every write has exactly one."""
    start = await _rv(http)
    written = []
    _, obj = await http.post(CM, configmap("w"))
    written.append(("ADDED", obj["metadata"]["resourceVersion"]))
    _, obj = await http.patch(f"{CM}/w", {"data": {"a": "1"}})
    written.append(("MODIFIED", obj["metadata"]["resourceVersion"]))
    ops = [{"op": "test", "path": "/metadata/resourceVersion", "value": obj["metadata"]["resourceVersion"]},
           {"op": "add", "path": "/metadata/finalizers", "value": ["a/b"]}]
    _, obj = await http.patch(f"{CM}/w", ops, JSONPATCH)
    written.append(("MODIFIED", obj["metadata"]["resourceVersion"]))
    _, obj = await http.patch(f"{CM}/w", {"data": {"a": "1"}})  # no-op: no event
    _, obj = await http.delete(f"{CM}/w")
    written.append(("MODIFIED", obj["metadata"]["resourceVersion"]))  # deletionTimestamp set
    _, obj = await http.patch(f"{CM}/w", {"metadata": {"finalizers": None}})
    written.append(("DELETED", obj["metadata"]["resourceVersion"]))
    events = await http.watch(CM, count=len(written), resourceVersion=start)
    assert [(e["type"], e["object"]["metadata"]["resourceVersion"]) for e in events] == written


async def test_resume_replays_missed_events_in_order(http: Http) -> None:
    await http.post(CM, configmap("r"))
    since = await _rv(http)
    for i in range(5):
        await http.patch(f"{CM}/r", {"data": {"i": str(i)}})
    await http.post(CM, configmap("r2"))
    events = await http.watch(CM, count=6, resourceVersion=since)
    assert [e["object"]["data"].get("i") for e in events[:5]] == ["0", "1", "2", "3", "4"]
    assert events[5]["type"] == "ADDED" and events[5]["object"]["metadata"]["name"] == "r2"
    rvs = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    assert rvs == sorted(rvs)


async def test_watch_without_version_starts_with_current_objects(http: Http) -> None:
    await http.post(CM, configmap("x1"))
    await http.post(CM, configmap("x2"))
    events = await http.watch(CM, count=2)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "x1"), ("ADDED", "x2")]


async def test_compaction_gives_410_and_relist_recovers(async_apiserver: ApiServer, http: Http) -> None:
    await http.post(CM, configmap("c"))
    old = await _rv(http)
    await http.patch(f"{CM}/c", {"data": {"v": "1"}})
    async_apiserver.compact()
    events = await http.watch(CM, count=2, resourceVersion=old)
    assert len(events) == 1 and events[0]["type"] == "ERROR"
    assert events[0]["object"]["code"] == 410 and events[0]["object"]["reason"] == "Expired"
    fresh = await _rv(http)  # relist ...
    await http.patch(f"{CM}/c", {"data": {"v": "2"}})
    events = await http.watch(CM, count=1, resourceVersion=fresh)  # ... and watch again
    assert events[0]["type"] == "MODIFIED" and events[0]["object"]["data"] == {"v": "2"}


@pytest.mark.sandbox(history=3)
async def test_bounded_history_expires_old_versions(http: Http) -> None:
    await http.post(CM, configmap("h"))
    old = await _rv(http)
    for i in range(5):
        await http.patch(f"{CM}/h", {"data": {"i": str(i)}})
    events = await http.watch(CM, count=1, resourceVersion=old)
    assert events[0]["type"] == "ERROR" and events[0]["object"]["code"] == 410


@pytest.mark.sandbox(bookmark_interval=0.05)
async def test_bookmarks_carry_the_current_version(http: Http) -> None:
    _, obj = await http.post(CM, configmap("b"))
    events = await http.watch(CM, count=2, resourceVersion=obj["metadata"]["resourceVersion"],
                              allowWatchBookmarks="true")
    assert [e["type"] for e in events] == ["BOOKMARK", "BOOKMARK"]
    assert events[0]["object"]["metadata"]["resourceVersion"] == obj["metadata"]["resourceVersion"]
    assert events[0]["object"]["kind"] == "ConfigMap"


async def test_timeout_seconds_ends_the_stream(http: Http) -> None:
    events = await http.watch(CM, count=100, resourceVersion=await _rv(http), timeoutSeconds=1)
    assert events == []


@pytest.mark.parametrize("spelling", ["true", "True", "TRUE", "1"])
async def test_watch_parameter_in_any_spelling(http: Http, spelling: str) -> None:
    await http.post(CM, configmap(f"s{spelling.lower()}"))
    status, _ = await http.get(CM)
    async with http.session.get(http.url + CM, params={"watch": spelling}) as resp:
        line = await resp.content.readline()
    assert status == 200 and b'"type":"ADDED"' in line


async def test_selector_transitions_become_added_and_deleted(http: Http) -> None:
    await http.post(CM, configmap("t", labels={"team": "a"}))
    since = await _rv(http)
    await http.patch(f"{CM}/t", {"metadata": {"labels": {"team": "b"}}})
    await http.patch(f"{CM}/t", {"metadata": {"labels": {"team": "a"}}})
    events = await http.watch(CM, count=2, resourceVersion=since, labelSelector="team=a")
    assert [e["type"] for e in events] == ["DELETED", "ADDED"]


async def test_sorted_by_namespace_in_all_namespace_watch(http: Http) -> None:
    await http.post("/api/v1/namespaces", {"metadata": {"name": "other"}})
    since = await _rv(http)
    await http.post("/api/v1/namespaces/other/configmaps", configmap("o"))
    await http.post(CM, configmap("d"))
    events = await http.watch("/api/v1/configmaps", count=2, resourceVersion=since)
    assert [e["object"]["metadata"]["namespace"] for e in events] == ["other", "default"]
    events = await http.watch(CM, count=1, resourceVersion=since)
    assert events[0]["object"]["metadata"]["name"] == "d"


async def test_close_watches_ends_streams(async_apiserver: ApiServer, http: Http) -> None:
    since = await _rv(http)
    task = asyncio.create_task(http.watch(CM, count=10, resourceVersion=since))
    await asyncio.sleep(0.2)
    async_apiserver.close_watches()
    assert await task == []


async def test_send_initial_events_ends_with_a_marked_bookmark(http: Http) -> None:
    await http.post(CM, configmap("i"))
    events = await http.watch(CM, count=2, sendInitialEvents="true", allowWatchBookmarks="true",
                              resourceVersionMatch="NotOlderThan")
    assert events[0]["type"] == "ADDED"
    assert events[1]["type"] == "BOOKMARK"
    assert events[1]["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}
