"""`dralloc run --kubernetes-version auto`: the API server's release decides the allocator semantics."""

from __future__ import annotations

import argparse
import json
import logging
import os
import pathlib
import signal
import subprocess
import sys

import pytest
import yaml
from tests.handlers.conftest import REPO, Cluster, wait_for
from tests.handlers.helpers import server_release

from dralloc import cli

# The server's release (GET /version) -> the allocator auto follows there: the sandbox (1.37, or the release
# its marker names) and the e2e control plane (1.37.2, or v1.38.0-beta.0 with E2E_KUBE_VERSION=1.38, #30).
FOLLOWED = {(1, 36): "1.36", (1, 37): "1.37", (1, 38): "1.38"}


@pytest.mark.parametrize("sandbox_release", [
    pytest.param(None, id="server"),
    pytest.param("1.38", id="sandbox-1.38", marks=pytest.mark.sandbox(kubernetes_version="1.38")),
])
def test_auto_follows_the_api_servers_release(apiserver: Cluster, caplog: pytest.LogCaptureFixture,
                                              sandbox_release: str | None) -> None:
    """auto picks the allocator of the server's own release and says why: 1.37 on the sandbox and on `make e2e`'s
    control plane, 1.38 on `make e2e E2E_KUBE_VERSION=1.38`'s and on a sandbox running as 1.38."""
    if sandbox_release is not None and apiserver.real:
        pytest.skip(f"a sandbox running as {sandbox_release}; the `server` case covers the real server's release")
    kubeconfig = apiserver.kubeconfig
    if kubeconfig is None:
        pytest.skip("runs `dralloc run --kubeconfig FILE`, but this cluster's KUBECONFIG names several files, "
                    "not one to pass (set KUBECONFIG to a single file to run it)")
    served = server_release(apiserver)
    assert served in FOLLOWED, f"the server is Kubernetes {served}: not a release this test knows"
    if sandbox_release is not None:
        assert served == tuple(map(int, sandbox_release.split(".")))
    caplog.set_level(logging.INFO, logger="dralloc.cli")
    release = cli._served_release(argparse.Namespace(kubeconfig=str(kubeconfig), context=None, in_cluster=None))
    assert release == FOLLOWED[served]
    major, minor = served
    assert [entry for entry in caplog.record_tuples if entry[0] == "dralloc.cli"] == [
        ("dralloc.cli", logging.INFO, f"--kubernetes-version auto: the API server is Kubernetes {major}.{minor}: "
         f"following its allocator ({FOLLOWED[served]})")]


def test_auto_without_a_reachable_server_follows_the_default_and_says_so(
        tmp_path: pathlib.Path, caplog: pytest.LogCaptureFixture) -> None:
    """Nobody listens: 1.37 (the default) with a warning; the operator reports the connection itself."""
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": "http://127.0.0.1:9"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        "users": [{"name": "u", "user": {}}]}))
    release = cli._served_release(argparse.Namespace(kubeconfig=str(kubeconfig), context=None, in_cluster=None))
    assert release == "1.37"
    [(logger, level, message)] = [entry for entry in caplog.record_tuples if entry[0] == "dralloc.cli"]
    assert (logger, level) == ("dralloc.cli", logging.WARNING)
    assert "cannot read the API server's version" in message and message.endswith("; following 1.37")


def test_json_log_format_makes_every_line_json_the_release_line_first(
        apiserver: Cluster, tmp_path: pathlib.Path) -> None:
    """`dralloc run --log-format json`: the line saying which allocator auto follows is a JSON record like every
    other line (it was a plain `dralloc run: the API server is ...` line before the first JSON one, #32)."""
    if apiserver.real:
        pytest.skip("the log format does not depend on the server: the sandbox shows it, and the operator this "
                    "runs would act on the whole cluster")
    kubeconfig = apiserver.kubeconfig
    assert kubeconfig is not None
    stderr = tmp_path / "stderr"
    with open(stderr, "wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "dralloc", "run", "--kubeconfig", str(kubeconfig), "--log-format", "json",
             "--standalone", "--metrics-port", "0", "--health-port", "0", "--namespace", apiserver.namespace],
            stdout=subprocess.PIPE, stderr=err, cwd=REPO, env=os.environ | {"PYTHONPATH": str(REPO / "operator")})
    try:
        wait_for(lambda: "control loops running" in stderr.read_text(), timeout=60,
                 what="the operator's loops to start", extra=stderr.read_text)
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
    lines = stderr.read_text().splitlines()
    assert out == b"" and lines
    records = [json.loads(line) for line in lines]  # every line: one JSON record
    assert all(isinstance(record, dict) for record in records)
    served = ".".join(map(str, server_release(apiserver)))
    assert (records[0]["logger"], records[0]["level"]) == ("dralloc.cli", "INFO")
    assert records[0]["message"].startswith(f"--kubernetes-version auto: the API server is Kubernetes {served}: ")
