"""Real Prometheus for the tests: the binaries, the rules out of manifests/, a server process.

`binaries()` finds `promtool` and `prometheus` on PATH and, when they are absent,
installs Debian's `prometheus` package (2.42 on bookworm) with apt-get, as root (or with
passwordless sudo), once per machine (a file lock keeps concurrent test runs from installing
twice). Where that cannot be done (no root, no apt-get, the install fails) it says why, and the tests
skip with that reason: a fresh CI machine has only what the repo installs, so the
install is part of the test setup.

`rules()` is the rule file Prometheus reads, taken out of the PrometheusRule in
manifests-monitoring/monitoring.yaml (its `spec` is a rule file's `groups:`, unchanged).
`Prometheus` runs a server on a free loopback port with its own storage directory.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import fcntl
import json
import os
import pathlib
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from typing import Any

import yaml

REPO = pathlib.Path(__file__).resolve().parents[2]
MONITORING = REPO / "manifests-monitoring" / "monitoring.yaml"
DASHBOARD = REPO / "manifests" / "dashboard.json"
PACKAGE = "prometheus"  # Debian's package: /usr/bin/prometheus and /usr/bin/promtool
LOCK = pathlib.Path(tempfile.gettempdir()) / "dralloc-prometheus-install.lock"
INSTALL_TIMEOUT = 900.0

Obj = dict[str, Any]


@dataclasses.dataclass(frozen=True)
class Binaries:
    promtool: str
    prometheus: str


def _found() -> Binaries | None:
    promtool, prometheus = shutil.which("promtool"), shutil.which("prometheus")
    if promtool and prometheus:
        return Binaries(promtool, prometheus)
    return None


def _as_root() -> list[str] | None:
    """The command prefix that runs apt-get as root: none for root, `sudo -n` where sudo needs no
    password; None where neither works."""
    if os.geteuid() == 0:
        return []
    if shutil.which("sudo") and subprocess.run(["sudo", "-n", "true"], capture_output=True, timeout=30).returncode == 0:
        return ["sudo", "-n", "env", "DEBIAN_FRONTEND=noninteractive"]
    return None


def _apt_install(prefix: list[str]) -> str | None:
    """Install the package; None on success, else what went wrong."""
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    # --no-install-recommends: the package recommends node-exporter and friends, which the tests never use.
    install = [*prefix, "apt-get", "install", "-y", "-q", "--no-install-recommends", PACKAGE]
    first = subprocess.run(install, env=env, capture_output=True, text=True, timeout=INSTALL_TIMEOUT)
    if first.returncode == 0:
        return None
    # A machine whose package lists were never fetched knows no `prometheus` yet.
    update = subprocess.run([*prefix, "apt-get", "update", "-q"], env=env, capture_output=True, text=True,
                            timeout=INSTALL_TIMEOUT)
    if update.returncode != 0:
        return f"apt-get update failed: {update.stderr.strip()[-500:]}"
    second = subprocess.run(install, env=env, capture_output=True, text=True, timeout=INSTALL_TIMEOUT)
    if second.returncode != 0:
        return f"apt-get install {PACKAGE} failed: {second.stderr.strip()[-500:]}"
    return None


def binaries() -> Binaries | str:
    """promtool and prometheus, installed when absent; a string saying why they cannot be had."""
    found = _found()
    if found is not None:
        return found
    if shutil.which("apt-get") is None:
        return f"promtool/prometheus are not on PATH and there is no apt-get to install Debian's {PACKAGE!r} package"
    prefix = _as_root()
    if prefix is None:
        return (f"promtool/prometheus are not on PATH, and installing Debian's {PACKAGE!r} package needs root "
                f"or passwordless sudo (run `apt-get install -y {PACKAGE}` as root once)")
    with LOCK.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another test run may be installing it right now
        found = _found()
        if found is not None:
            return found
        problem = _apt_install(prefix)
    if problem is not None:
        return problem
    return _found() or f"Debian's {PACKAGE!r} package installed, but promtool/prometheus are still not on PATH"


def rule_file() -> Obj:
    """The `spec` of the PrometheusRule in manifests-monitoring/monitoring.yaml: a Prometheus rule file."""
    docs = [d for d in yaml.safe_load_all(MONITORING.read_text()) if d]
    rules = [d for d in docs if d.get("kind") == "PrometheusRule"]
    assert len(rules) == 1, f"{MONITORING}: expected one PrometheusRule, found {len(rules)}"
    return copy.deepcopy(rules[0]["spec"])


def alerts(rules: Obj) -> list[Obj]:
    return [r for group in rules["groups"] for r in group["rules"] if "alert" in r]


def with_for(rules: Obj, durations: dict[str, str]) -> Obj:
    """A copy whose alerts wait `durations[name]` instead of their `for:`; expressions untouched."""
    out = copy.deepcopy(rules)
    for rule in alerts(out):
        if rule["alert"] in durations:
            rule["for"] = durations[rule["alert"]]
    return out


def write_rules(rules: Obj, path: pathlib.Path) -> pathlib.Path:
    path.write_text(yaml.safe_dump(rules, sort_keys=False))
    return path


def dashboard_queries() -> list[tuple[str, str]]:
    """(panel title, PromQL) for every target of every panel of manifests/dashboard.json."""
    board = json.loads(DASHBOARD.read_text())
    return [(panel["title"], target["expr"]) for panel in board["panels"] for target in panel.get("targets", [])]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class Prometheus:
    """A Prometheus server of its own: loopback port, storage in `workdir`, one scrape job."""

    def __init__(self, binary: str, workdir: pathlib.Path, *, targets: list[str], rules: pathlib.Path,
                 interval: str = "1s", job: str = "dralloc", labels: dict[str, str] | None = None) -> None:
        self.binary = binary
        self.workdir = workdir
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        # `labels` on the target stand for what the ServiceMonitor's relabelling gives a scraped pod
        # (namespace, service, pod): the rules select `up` by them.
        config = {
            "global": {"scrape_interval": interval, "evaluation_interval": interval, "scrape_timeout": interval},
            "rule_files": [str(rules)],
            "scrape_configs": [{"job_name": job, "static_configs": [{"targets": targets, "labels": labels or {}}]}],
        }
        self.config = workdir / "prometheus.yml"
        self.config.write_text(yaml.safe_dump(config, sort_keys=False))
        self.log = workdir / "prometheus.log"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 60.0) -> Prometheus:
        storage = self.workdir / "data"
        storage.mkdir(exist_ok=True)
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(
                [self.binary, f"--config.file={self.config}", f"--storage.tsdb.path={storage}",
                 f"--web.listen-address=127.0.0.1:{self.port}", "--web.enable-lifecycle",
                 "--storage.tsdb.retention.time=1h"],
                stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"prometheus exited with {self.process.returncode}: {self.log.read_text()[-2000:]}")
            with contextlib.suppress(OSError):
                with urllib.request.urlopen(f"{self.url}/-/ready", timeout=2) as response:
                    if response.status == 200:
                        return self
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"prometheus not ready after {timeout:.0f}s: {self.log.read_text()[-2000:]}")
            time.sleep(0.2)

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)

    def api(self, path: str, **params: str) -> Any:
        """GET /api/v1/<path>; the `data` of a successful answer."""
        query = urllib.parse.urlencode(params)
        with urllib.request.urlopen(f"{self.url}/api/v1/{path}?{query}", timeout=10) as response:
            body = json.loads(response.read())
        assert body["status"] == "success", body
        return body["data"]

    def query(self, expr: str) -> list[Obj]:
        data = self.api("query", query=expr)
        assert data["resultType"] == "vector", data
        result: list[Obj] = data["result"]
        return result

    def alert_states(self) -> dict[str, str]:
        """alert name -> its most advanced state now (firing > pending)."""
        states: dict[str, str] = {}
        for alert in self.api("alerts")["alerts"]:
            name = alert["labels"]["alertname"]
            if states.get(name) != "firing":
                states[name] = alert["state"]
        return states

    def targets_up(self) -> bool:
        active = self.api("targets")["activeTargets"]
        return bool(active) and all(t["health"] == "up" for t in active)


@contextlib.contextmanager
def running(binary: str, workdir: pathlib.Path, **kwargs: Any) -> Iterator[Prometheus]:
    server = Prometheus(binary, workdir, **kwargs).start()
    try:
        yield server
    finally:
        server.stop()
