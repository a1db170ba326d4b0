"""Property: whatever writes happen (concurrently, with conflicts and deletions), the watch
stream from before them carries exactly one event per successful write, in resourceVersion
order, with the versions the writes returned, and folding it gives what a LIST returns."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import aiohttp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.sandbox.conftest import Http

from dralloc.sandbox import ThreadedApiServer

NAMES = ("a", "b", "c")
op = st.one_of(
    st.tuples(st.just("create"), st.sampled_from(NAMES), st.integers(0, 9)),
    st.tuples(st.just("patch"), st.sampled_from(NAMES), st.integers(0, 9)),
    st.tuples(st.just("stale-put"), st.sampled_from(NAMES), st.integers(0, 9)),
    st.tuples(st.just("delete"), st.sampled_from(NAMES), st.integers(0, 9)),
)
_namespaces = itertools.count()


async def run_ops(url: str, batches: list[list[tuple[str, str, int]]]) -> None:
    ns = f"prop-{next(_namespaces)}"
    async with aiohttp.ClientSession() as session:
        http = Http(session, url)
        await http.post("/api/v1/namespaces", {"metadata": {"name": ns}})
        base = f"/api/v1/namespaces/{ns}/configmaps"
        _, listed = await http.get(base)
        start = listed["metadata"]["resourceVersion"]

        async def one(kind: str, name: str, value: int) -> str | None:
            if kind == "create":
                code, obj = await http.post(base, {"metadata": {"name": name}, "data": {"v": str(value)}})
            elif kind == "patch":
                code, obj = await http.patch(f"{base}/{name}", {"data": {"v": str(value)}})
            elif kind == "stale-put":
                code, obj = await http.put(f"{base}/{name}", {"metadata": {"name": name, "resourceVersion": "1"},
                                                              "data": {"v": "stale"}})
                assert code in (404, 409)
            else:
                code, obj = await http.delete(f"{base}/{name}")
            return obj["metadata"]["resourceVersion"] if code in (200, 201) else None

        returned: list[int] = []
        for batch in batches:
            for rv in await asyncio.gather(*(one(*o) for o in batch)):
                if rv is not None:
                    returned.append(int(rv))
        # a no-op patch returns the unchanged version without an event: count each version once
        written = sorted(set(returned) - {int(start)})
        written = [rv for rv in written if rv > int(start)]
        events = await http.watch(base, count=len(written), resourceVersion=start, timeout=10) if written else []
        assert [int(e["object"]["metadata"]["resourceVersion"]) for e in events] == written
        state: dict[str, Any] = {}
        for event in events:
            name = event["object"]["metadata"]["name"]
            if event["type"] == "DELETED":
                state.pop(name, None)
            else:
                state[name] = event["object"]
        _, final = await http.get(base)
        assert {i["metadata"]["name"]: i for i in final["items"]} == state


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batches=st.lists(st.lists(op, min_size=1, max_size=5), min_size=1, max_size=4))
def test_watch_stream_matches_writes_and_list(apiserver: ThreadedApiServer,
                                              batches: list[list[tuple[str, str, int]]]) -> None:
    asyncio.run(run_ops(apiserver.url, batches))
