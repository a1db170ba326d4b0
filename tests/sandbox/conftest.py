"""Fixtures for the sandbox's own tests: every test talks HTTP to a real server.

`async_apiserver` / `apiserver` come from `dralloc.sandbox.pytest_plugin`; `http`
is an aiohttp session with helpers that return (status, body) so tests read like the
requests they make. Nothing here calls the store directly.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest_asyncio

from dralloc.sandbox import ApiServer
from dralloc.sandbox.pytest_plugin import apiserver, async_apiserver, pytest_configure

__all__ = ["Http", "apiserver", "async_apiserver", "http", "pytest_configure"]

Obj = dict[str, Any]
MERGE = "application/merge-patch+json"
JSONPATCH = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"


class Http:
    """A thin client: `await http.get(path)` -> (status, json body)."""

    def __init__(self, session: aiohttp.ClientSession, url: str) -> None:
        self.session = session
        self.url = url

    async def request(self, method: str, path: str, body: Any = None, *,
                      content_type: str = "application/json", **params: Any) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body)
        query = {k: str(v) for k, v in params.items()}
        async with self.session.request(method, self.url + path, data=data, params=query,
                                        headers={"Content-Type": content_type}) as resp:
            text = await resp.text()
            try:
                return resp.status, json.loads(text) if text else None
            except ValueError:
                return resp.status, text

    async def get(self, path: str, **params: Any) -> tuple[int, Any]:
        return await self.request("GET", path, **params)

    async def post(self, path: str, body: Any, **params: Any) -> tuple[int, Any]:
        return await self.request("POST", path, body, **params)

    async def put(self, path: str, body: Any, **params: Any) -> tuple[int, Any]:
        return await self.request("PUT", path, body, **params)

    async def patch(self, path: str, body: Any, content_type: str = MERGE, **params: Any) -> tuple[int, Any]:
        return await self.request("PATCH", path, body, content_type=content_type, **params)

    async def delete(self, path: str, body: Any = None, **params: Any) -> tuple[int, Any]:
        return await self.request("DELETE", path, body, **params)

    async def watch(self, path: str, *, count: int, timeout: float = 10, **params: Any) -> list[Obj]:
        """The first `count` events of a watch (fewer if the server ends the stream)."""
        events: list[Obj] = []
        query = {"watch": "true", **{k: str(v) for k, v in params.items()}}
        async with self.session.get(self.url + path, params=query,
                                    timeout=aiohttp.ClientTimeout(total=timeout)) as resp:
            async for line in resp.content:
                if line.strip():
                    events.append(json.loads(line))
                if len(events) >= count:
                    break
        return events


@pytest_asyncio.fixture
async def http(async_apiserver: ApiServer) -> AsyncIterator[Http]:
    async with aiohttp.ClientSession() as session:
        yield Http(session, async_apiserver.url)


def configmap(name: str, data: Obj | None = None, **meta: Any) -> Obj:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, **meta}, "data": data or {}}
