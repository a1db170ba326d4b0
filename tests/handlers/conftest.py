"""The real operator (kopf) running against the sandbox API server.

`apiserver` (from dralloc.sandbox's pytest plugin) runs the server in its own
thread; `operator` runs `dralloc.running.run_in_loop` in another thread with its
own event loop (kopf cancels every task of the loop it runs in), logged in
through the sandbox's kubeconfig, standalone (no peering). The CRDs from crds/
are installed first. Tests talk to the server over HTTP (through the sandbox
handle or a client) and wait for the state they expect.
"""

from __future__ import annotations

import pathlib
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import yaml

from dralloc import running
from dralloc.sandbox import ThreadedApiServer
from dralloc.sandbox.pytest_plugin import apiserver, pytest_configure
from dralloc.settings import ConnectionSettings, RuntimeSettings, SchedulingSettings, Settings

__all__ = ["OperatorThread", "apiserver", "operator", "pytest_configure", "wait_for"]

REPO = pathlib.Path(__file__).resolve().parents[2]


def crds() -> list[dict[str, Any]]:
    return [doc for path in sorted((REPO / "crds").glob("*.yaml")) for doc in yaml.safe_load_all(path.read_text())]


def wait_for(condition: Callable[[], Any], *, timeout: float = 30.0, what: str = "condition") -> Any:
    """Poll until `condition()` returns something truthy; fail with `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


class OperatorThread(running.OperatorThread):
    """The operator's thread, failing the test (AssertionError) when it does not start or stop."""

    def start(self, timeout: float = 30.0) -> OperatorThread:
        try:
            super().start(timeout)
        except RuntimeError as exc:
            raise AssertionError(str(exc)) from exc
        return self

    def stop(self, timeout: float = 30.0) -> None:
        try:
            super().stop(timeout)
        except RuntimeError as exc:
            raise AssertionError(str(exc)) from exc


def operator_settings(server: ThreadedApiServer, *, peering: int | None = None, **scheduling: Any) -> Settings:
    """Standalone, or with `peering=<priority>` in the ClusterKopfPeering named `default`."""
    runtime = (RuntimeSettings(metrics_port=0, health_port=0, standalone=True) if peering is None else
               RuntimeSettings(metrics_port=0, health_port=0, standalone=False, priority=peering,
                               peering_name="default"))
    return Settings(
        connection=ConnectionSettings(kubeconfig=str(server.kubeconfig)),
        scheduling=SchedulingSettings(**scheduling),
        runtime=runtime,
    )


@pytest.fixture
def operator(apiserver: ThreadedApiServer) -> Iterator[OperatorThread]:
    apiserver.seed(crds())
    running_operator = OperatorThread(operator_settings(apiserver)).start()
    try:
        yield running_operator
    finally:
        running_operator.stop()
