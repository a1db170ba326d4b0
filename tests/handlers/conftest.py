"""The real operator (kopf) against an API server: the sandbox, or a real cluster.

Two modes, one set of tests:

- default: `apiserver` is the in-process sandbox (`dralloc.sandbox.ThreadedApiServer`
  in its own thread, fresh for every test) behind `SandboxCluster`;
- `--e2e-real` with KUBECONFIG: `apiserver` is a `RealCluster`
  (tests/handlers/realcluster.py) on the cluster KUBECONFIG points at.

Both offer the `Cluster` interface: `seed(objects)` (create, or replace; status
included; namespaced objects without a namespace go to the test's namespace), `get`,
`list_objects`, `request(method, path, body)` for raw API calls, `kubeconfig`, and the
test's scope: `namespace` (its own, never `default`) and `name(base)` (a cluster-scoped
name unique to the test: Nodes, ResourceSlices, DeviceClasses, rules, policies).
Tests that need server-side fault injection take the `faults` fixture, which skips
them on a real cluster.

`operator` runs `dralloc.running.run_in_loop` in another thread with its own event
loop (kopf cancels every task of the loop it runs in), logged in through the mode's
kubeconfig, standalone (no peering); in real mode it only handles the test's namespace.
The CRDs from crds/ (`dralloc.testing.cluster.crds`) are installed first (on a real cluster:
when missing). Tests talk to the server over HTTP and wait for the state they expect.
"""

from __future__ import annotations

import json
import os
import pathlib
import secrets
import time
import urllib.request
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol

import pytest

from dralloc import running
from dralloc.handlers import duties
from dralloc.sandbox import Faults, ThreadedApiServer
from dralloc.sandbox.pytest_plugin import pytest_configure, sandbox_options
from dralloc.settings import CoexistenceSettings, LeaderElectionSettings, Settings
from dralloc.state.coexistence import Duty
from dralloc.testing.cluster import crds
from dralloc.testing.settings import run_settings

__all__ = ["Cluster", "OperatorThread", "apiserver", "duty_owner", "faults", "operator", "pytest_configure",
           "wait_for"]

REPO = pathlib.Path(__file__).resolve().parents[2]
Obj = dict[str, Any]


class Cluster(Protocol):
    """What the tests use of the API server, in either mode."""

    real: bool
    namespace: str
    operator_namespaces: tuple[str, ...]  # the operator's --namespace flags (empty: all)

    @property
    def kubeconfig(self) -> pathlib.Path | None: ...
    @property
    def faults(self) -> Faults: ...
    def name(self, base: str) -> str: ...
    def serves(self, api_version: str, kind: str) -> bool: ...
    def seed(self, objects: Iterable[Obj]) -> list[Obj]: ...
    def get(self, api_version: str, kind: str, name: str, namespace: str = "") -> Obj | None: ...
    def list_objects(self, api_version: str, kind: str, namespace: str | None = None) -> list[Obj]: ...
    def request(self, method: str, path: str, body: Obj | None = None,
                content_type: str = "application/merge-patch+json") -> Obj: ...


class SandboxCluster:
    """The sandbox handle with the test's scope; raw calls go over HTTP as a client's would."""

    real = False
    operator_namespaces: tuple[str, ...] = ()

    def __init__(self, server: ThreadedApiServer, token: str | None = None) -> None:
        self.server = server
        self.token_ = token or secrets.token_hex(3)
        self.namespace = f"dralloc-test-{self.token_}"

    def name(self, base: str) -> str:
        return f"{base}-{self.token_}"

    @property
    def kubeconfig(self) -> pathlib.Path | None:
        return self.server.kubeconfig

    @property
    def faults(self) -> Faults:
        return self.server.faults

    def serves(self, api_version: str, kind: str) -> bool:
        return self._namespaced(api_version, kind) is not None

    def seed(self, objects: Iterable[Obj]) -> list[Obj]:
        scoped = []
        for obj in objects:
            meta = obj.get("metadata") or {}
            if not meta.get("namespace") and self._namespaced(obj.get("apiVersion", ""), obj.get("kind", "")):
                obj = {**obj, "metadata": {**meta, "namespace": self.namespace}}
            scoped.append(obj)
        return self.server.seed(scoped)

    def get(self, api_version: str, kind: str, name: str, namespace: str = "") -> Obj | None:
        return self.server.get(api_version, kind, name, namespace)

    def list_objects(self, api_version: str, kind: str, namespace: str | None = None) -> list[Obj]:
        return self.server.list_objects(api_version, kind, namespace)

    def request(self, method: str, path: str, body: Obj | None = None,
                content_type: str = "application/merge-patch+json") -> Obj:
        return sandbox_request(self.server, method, path, body, content_type)

    def _namespaced(self, api_version: str, kind: str) -> bool | None:
        assert self.server.server is not None
        rt = self.server.server.registry.by_kind(api_version, kind)
        return None if rt is None else rt.namespaced


def sandbox_request(server: ThreadedApiServer, method: str, path: str, body: Obj | None = None,
                    content_type: str = "application/merge-patch+json") -> Obj:
    """A raw API call to the sandbox over HTTP, as any client makes it: `content_type` is a PATCH's
    patch type; other bodies are JSON (kube-apiserver refuses a patch type on a POST, PUT or DELETE)."""
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(server.url + path, data=data, method=method)
    request.add_header("Content-Type", content_type if method == "PATCH" else "application/json")
    if server.token:
        request.add_header("Authorization", f"Bearer {server.token}")
    with urllib.request.urlopen(request, timeout=10) as response:
        result: Obj = json.loads(response.read() or b"{}")
        return result


def real_mode(config: pytest.Config) -> bool:
    return bool(config.getoption("--e2e-real"))


@pytest.fixture(scope="session")
def real_connection(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from tests.handlers import realcluster

    connection = realcluster.Connection(request.config.getoption("--e2e-kubeconfig"),
                                        tmp_path_factory.mktemp("discovery") / "cache.json")
    try:
        yield connection
    finally:
        connection.close()


@pytest.fixture
def apiserver(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> Iterator[Cluster]:
    """The sandbox (default) or the cluster KUBECONFIG points at (`--e2e-real`), scoped to this test."""
    if real_mode(request.config):
        from tests.handlers import realcluster

        real = realcluster.RealCluster(request.getfixturevalue("real_connection")).open()
        try:
            yield real
        finally:
            real.close()
        return
    server = ThreadedApiServer(**sandbox_options(request)).start()
    try:
        server.kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig")
        yield SandboxCluster(server)
    finally:
        server.stop()


def duty_owner(apiserver: Cluster, duty: Duty) -> str:
    """Who does `duty` beside the tests' operator on this cluster, as handlers/duties.py decides it:
    the choice in the environment (`make e2e`'s second pass sets dralloc), else kube-controller-manager
    when its leader Lease is held (a real cluster), else dralloc (the sandbox)."""
    choice = duties.choices(CoexistenceSettings(), os.environ)[duty]
    if choice != "auto":
        return choice
    lease = apiserver.get("coordination.k8s.io/v1", "Lease", "kube-controller-manager", "kube-system")
    return "kube-controller-manager" if lease and (lease.get("spec") or {}).get("holderIdentity") else "dralloc"


@pytest.fixture(autouse=True)
def _dralloc_duties(request: pytest.FixtureRequest) -> None:
    """`@pytest.mark.dralloc_duty("taint-eviction")`: the test shows how dralloc does that duty, so it
    skips where kube-controller-manager's controller does it instead."""
    marker = request.node.get_closest_marker("dralloc_duty")
    if marker is None:
        return
    apiserver = request.getfixturevalue("apiserver")
    for duty in marker.args:
        if duty_owner(apiserver, duty) != "dralloc":
            pytest.skip(f"shows dralloc's own {duty}, which kube-controller-manager does on this cluster; "
                        "make e2e runs it again with KCM's DRA controllers off and dralloc doing it")


@pytest.fixture
def faults(apiserver: Cluster) -> Faults:
    """The sandbox's fault rules; a test asking for them skips on a real cluster."""
    if apiserver.real:
        pytest.skip("needs server-side fault injection (apiserver.faults), which only the sandbox has")
    return apiserver.faults


def wait_for(condition: Callable[[], Any], *, timeout: float = 30.0, what: str = "condition",
             interval: float = 0.05, extra: Callable[[], str] | None = None) -> Any:
    """Poll until `condition()` returns something truthy; fail with `what` (and `extra()`, what to
    look at then) after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}" + (f"\n{extra()}" if extra else ""))
        time.sleep(interval)


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


def operator_settings(server: Cluster, *, elect: str | None = None, timing: tuple[float, float, float] = (3.0, 2.0, 0.5),
                      **scheduling: Any) -> Settings:
    """Standalone, or with `elect=<identity>`: leader election on the Lease `server.name("dralloc")` in the
    test's namespace, with short durations (lease, renew deadline, retry period) so tests see failovers."""
    election = None
    if elect is not None:
        lease, deadline, retry = timing
        election = LeaderElectionSettings(
            lease_duration=lease, renew_deadline=deadline, retry_period=retry, identity=elect,
            resource_name=server.name("dralloc"), resource_namespace=server.namespace)
    return run_settings(server.kubeconfig, namespaces=server.operator_namespaces, leader_election=election,
                        **scheduling)


@pytest.fixture
def operator(apiserver: Cluster) -> Iterator[OperatorThread]:
    apiserver.seed(crds())
    running_operator = OperatorThread(operator_settings(apiserver)).start()
    try:
        yield running_operator
    finally:
        running_operator.stop()
