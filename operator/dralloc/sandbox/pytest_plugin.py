"""pytest fixtures for tests that need an API server.

- `apiserver`: a `ThreadedApiServer` (its own loop in a thread: safe with kopf, with
  sync tests and with async tests alike) on a random 127.0.0.1 port, with a kubeconfig
  written to `tmp_path / "kubeconfig"` (`apiserver.kubeconfig`).
- `async_apiserver`: an `ApiServer` in the test's own event loop (for async tests that
  only talk HTTP to it; never run kopf in that loop).

Options come from the `sandbox` marker: `@pytest.mark.sandbox(simulate_pods=True,
bookmark_interval=0.2, history=100, token="t")` (any `ApiServer` keyword). Load the
plugin with `pytest_plugins = ["dralloc.sandbox.pytest_plugin"]` in the root conftest,
or import the fixtures into a conftest; a conftest that starts its own server reads the
marker's options with `sandbox_options(request)`.
"""

from __future__ import annotations

import pathlib
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import pytest_asyncio

from dralloc.sandbox import apiserver as apiserver_
from dralloc.sandbox import threads


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "sandbox(**options): options for the sandbox API server fixtures")


def sandbox_options(request: pytest.FixtureRequest) -> dict[str, Any]:
    """The `ApiServer` keywords of the test's `sandbox` markers (the closest marker wins), for a conftest
    that starts its own server."""
    options: dict[str, Any] = {}
    for marker in reversed(list(request.node.iter_markers("sandbox"))):  # closest marker wins
        options.update(marker.kwargs)
    return options


@pytest.fixture
def apiserver(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> Iterator[threads.ThreadedApiServer]:
    server = threads.ThreadedApiServer(**sandbox_options(request)).start()
    try:
        server.kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig")
        yield server
    finally:
        server.stop()


@pytest_asyncio.fixture
async def async_apiserver(request: pytest.FixtureRequest,
                          tmp_path: pathlib.Path) -> AsyncIterator[apiserver_.ApiServer]:
    async with apiserver_.ApiServer(**sandbox_options(request)) as server:
        server.kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig")
        yield server
