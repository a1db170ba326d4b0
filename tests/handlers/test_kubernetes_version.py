"""`dralloc run --kubernetes-version auto`: the API server's release decides the allocator semantics."""

from __future__ import annotations

import argparse
import pathlib

import pytest
import yaml
from tests.handlers.conftest import Cluster
from tests.handlers.helpers import server_release

from dralloc import cli

# The server's release (GET /version) -> the allocator auto follows there: the sandbox (1.37, or the release
# its marker names) and the e2e control plane (1.37.2, or v1.38.0-beta.0 with E2E_KUBE_VERSION=1.38, #30).
FOLLOWED = {(1, 36): "1.36", (1, 37): "1.37", (1, 38): "1.38"}


@pytest.mark.parametrize("sandbox_release", [
    pytest.param(None, id="server"),
    pytest.param("1.38", id="sandbox-1.38", marks=pytest.mark.sandbox(kubernetes_version="1.38")),
])
def test_auto_follows_the_api_servers_release(apiserver: Cluster, capsys: pytest.CaptureFixture[str],
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
    release = cli._served_release(argparse.Namespace(kubeconfig=str(kubeconfig), context=None, in_cluster=None))
    assert release == FOLLOWED[served]
    major, minor = served
    assert (f"the API server is Kubernetes {major}.{minor}: following its allocator ({FOLLOWED[served]})"
            in capsys.readouterr().err)


def test_auto_without_a_reachable_server_follows_the_default_and_says_so(
        tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Nobody listens: 1.37 (the default) with a warning; the operator reports the connection itself."""
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": "http://127.0.0.1:9"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        "users": [{"name": "u", "user": {}}]}))
    release = cli._served_release(argparse.Namespace(kubeconfig=str(kubeconfig), context=None, in_cluster=None))
    assert release == "1.37"
    assert "cannot read the API server's version" in capsys.readouterr().err
