"""The sandbox API server and the `dralloc run` replicas, each a real subprocess.

The sandbox accepts one bearer token per replica process plus one for the test itself,
so fault rules can aim at a single replica (`token=`). Faults are driven only through
the injector's public interface: the `--faults` spec at start and the loopback
`/_faults` endpoint while it runs.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import pathlib
import secrets
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable
from typing import Any

import yaml

from dralloc.sandbox import kubeconfig as sandbox_kubeconfig

REPO = pathlib.Path(__file__).resolve().parents[2]
BIN = pathlib.Path(sys.executable).parent  # the venv running the tests also has `dralloc`
DRALLOC = str(BIN / "dralloc") if (BIN / "dralloc").exists() else str(REPO / ".venv" / "bin" / "dralloc")
Obj = dict[str, Any]

LEASE_NAME = "dralloc"


class ApiError(Exception):
    def __init__(self, status: int, body: str) -> None:
        super().__init__(f"HTTP {status}: {body[:300]}")
        self.status = status


def parse_time(stamp: str | None) -> dt.datetime | None:
    """An RFC 3339 timestamp as the replicas and the server write them (Z, optional fraction)."""
    if not stamp:
        return None
    return dt.datetime.fromisoformat(stamp.replace("Z", "+00:00"))


class Sandbox:
    """`dralloc sandbox` in a subprocess, and an HTTP client for it with the test's own token."""

    def __init__(self, workdir: pathlib.Path, seed: Iterable[Obj], *, tokens: int = 40, faults: str | None = None,
                 faults_seed: int | None = None) -> None:
        self.workdir = workdir
        self.admin_token = "admin-" + secrets.token_hex(4)
        self._free_tokens = [f"replica-token-{i}-{secrets.token_hex(3)}" for i in range(tokens)]
        self.seed_file = workdir / "seed.json"
        self.seed_file.write_text(json.dumps(list(seed)))
        self.log_path = workdir / "sandbox.log"
        self.faults, self.faults_seed = faults, faults_seed
        self.proc: subprocess.Popen[bytes] | None = None
        self.url = ""

    def start(self, timeout: float = 60.0) -> Sandbox:
        args = [DRALLOC, "sandbox", "--port", "0", "--seed", str(self.seed_file), "--simulate-pods",
                "--token", self.admin_token]
        for token in self._free_tokens:
            args += ["--token", token]
        if self.faults:
            args += ["--faults", self.faults]
        if self.faults_seed is not None:
            args += ["--faults-seed", str(self.faults_seed)]
        out = self.workdir / "sandbox.out"
        with open(out, "wb") as stdout, open(self.log_path, "wb") as stderr:
            self.proc = subprocess.Popen(args, stdout=stdout, stderr=stderr, cwd=REPO)
        deadline = time.monotonic() + timeout
        while not self.url:
            for line in out.read_text().splitlines():
                if "listening on " in line:
                    self.url = line.split("listening on ", 1)[1].strip()
            if self.proc.poll() is not None:
                raise RuntimeError(f"the sandbox exited ({self.proc.returncode}): {self.log_path.read_text()[-2000:]}")
            if not self.url:
                if time.monotonic() > deadline:
                    raise RuntimeError("the sandbox did not start")
                time.sleep(0.05)
        return self

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)

    def take_token(self) -> str:
        return self._free_tokens.pop(0)

    def kubeconfig(self, token: str, name: str) -> pathlib.Path:
        return sandbox_kubeconfig.write(self.workdir / f"{name}.kubeconfig", self.url, token)

    # ---- raw API calls with the test's token -------------------------------------------------

    def request(self, method: str, path: str, body: Any = None, content_type: str = "application/json",
                timeout: float = 20.0) -> Any:
        data = None
        if body is not None:
            data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Authorization", f"Bearer {self.admin_token}")
        if data is not None:
            req.add_header("Content-Type", content_type)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            raise ApiError(exc.code, exc.read().decode(errors="replace")) from exc
        return json.loads(raw) if raw else {}

    def get(self, path: str) -> Obj | None:
        try:
            found: Obj = self.request("GET", path)
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise
        return found

    def items(self, path: str) -> list[Obj]:
        listed: list[Obj] = self.request("GET", path).get("items") or []
        return listed

    def create(self, path: str, obj: Obj) -> Obj:
        created: Obj = self.request("POST", path, obj)
        return created

    def delete(self, path: str, grace: int | None = None) -> None:
        query = f"?gracePeriodSeconds={grace}" if grace is not None else ""
        try:
            self.request("DELETE", path + query)
        except ApiError as exc:
            if exc.status != 404:
                raise

    def lease(self, namespace: str) -> Obj:
        found = self.get(f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{LEASE_NAME}")
        return (found or {}).get("spec") or {}

    # ---- the fault injector's control endpoint ------------------------------------------------

    def add_faults(self, spec: str) -> list[Obj]:
        answer: Obj = self.request("POST", "/_faults", {"spec": spec})
        added: list[Obj] = answer.get("added") or []
        return added

    def remove_fault(self, rule_id: int) -> None:
        try:
            self.request("DELETE", f"/_faults/{rule_id}")
        except ApiError as exc:
            if exc.status != 404:
                raise

    def clear_faults(self) -> None:
        self.request("DELETE", "/_faults")

    def fault_state(self) -> Obj:
        state: Obj = self.request("GET", "/_faults")
        return state


class Replica:
    """One `dralloc run` process with its own identity and bearer token."""

    def __init__(self, sandbox: Sandbox, number: int, *, namespace: str, timing: tuple[float, float, float],
                 log_level: str = "INFO") -> None:
        self.identity = f"replica-{number}"
        self.token = sandbox.take_token()
        self.timing = timing
        self.kubeconfig = sandbox.kubeconfig(self.token, self.identity)
        self.log_path = sandbox.workdir / f"{self.identity}.log"
        lease, deadline, retry = timing
        self.args = [DRALLOC, "run", "--kubeconfig", str(self.kubeconfig), "--identity", self.identity,
                     "--leader-elect-resource-namespace", namespace, "--leader-elect-resource-name", LEASE_NAME,
                     "--leader-elect-lease-duration", f"{lease:g}", "--leader-elect-renew-deadline", f"{deadline:g}",
                     "--leader-elect-retry-period", f"{retry:g}", "--metrics-port", "0", "--health-port", "0",
                     "--log-level", log_level]
        self.proc: subprocess.Popen[bytes] | None = None
        self.exit_how = ""

    def start(self) -> Replica:
        env = {**os.environ, "POD_NAME": self.identity}  # Events' reportingInstance names the replica
        env.pop("KUBECONFIG", None)
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(self.args, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=REPO)
        return self

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill9(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)
        self.exit_how = "kill -9"

    def terminate(self, timeout: float = 40.0) -> int:
        """SIGTERM: a clean stop, which gives the Lease up. Returns the exit code."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
            self.exit_how = "SIGTERM timed out, killed"
            return -9
        self.exit_how = f"SIGTERM, exit {code}"
        return code

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


def seed_yaml(paths: Iterable[pathlib.Path]) -> list[Obj]:
    return [doc for path in paths for doc in yaml.safe_load_all(path.read_text()) if doc]
