"""Fixtures for dralloc.kube tests: the package logs in to a real sandbox over HTTP.

`async_apiserver` is the sandbox in the test's loop (with a kubeconfig written to
tmp_path); `session` is a `kube.session.Session` logged in through that kubeconfig,
closed after the test so no aiohttp session is left open. Faults are scripted on the
server (`async_apiserver.faults.next(...)`); nothing here reaches into the store.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest_asyncio

from dralloc.kube import session as session_
from dralloc.sandbox import ApiServer
from dralloc.sandbox.pytest_plugin import apiserver, async_apiserver, pytest_configure

__all__ = ["apiserver", "async_apiserver", "pytest_configure", "session"]


@pytest_asyncio.fixture
async def session(async_apiserver: ApiServer) -> AsyncIterator[session_.Session]:
    async with await session_.Session.connect(kubeconfig=str(async_apiserver.kubeconfig)) as s:
        yield s
