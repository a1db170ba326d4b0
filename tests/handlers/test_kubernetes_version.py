"""`dralloc run --kubernetes-version auto`: the API server's release decides the allocator semantics."""

from __future__ import annotations

import argparse
import pathlib

import pytest
import yaml
from tests.handlers.conftest import Cluster

from dralloc import cli


def test_auto_follows_the_api_servers_release(apiserver: Cluster, capsys: pytest.CaptureFixture[str]) -> None:
    """The sandbox and the e2e control plane are Kubernetes 1.37: auto picks 1.37 and says why."""
    kubeconfig = apiserver.kubeconfig
    if kubeconfig is None:
        pytest.skip("runs `dralloc run --kubeconfig FILE`, but this cluster's KUBECONFIG names several files, "
                    "not one to pass (set KUBECONFIG to a single file to run it)")
    release = cli._served_release(argparse.Namespace(kubeconfig=str(kubeconfig), context=None, in_cluster=None))
    assert release == "1.37"
    assert "the API server is Kubernetes 1.37: following its allocator (1.37)" in capsys.readouterr().err


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
