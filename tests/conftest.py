"""Shared test configuration.

Warnings are errors (pyproject). End-to-end tests against a real cluster are opt-in
with `--e2e-real` and need KUBECONFIG: tests marked `e2e` run only then, and the
operator tests in tests/handlers/ switch from the sandbox to that cluster. The tests in
tests/kubelet/ start a control plane and a real node themselves (root, `make e2e-kubelet`) and run
only with `--e2e-kubelet`.
"""

import os
import pathlib

import pytest

KUBELET_TESTS = pathlib.Path(__file__).resolve().parent / "kubelet"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--e2e-real", action="store_true", default=False,
                     help="run end-to-end tests against the cluster KUBECONFIG points at")
    # Read at startup: tests that run an operator against a sandbox repoint KUBECONFIG later.
    parser.addoption("--e2e-kubeconfig", default=os.environ.get("KUBECONFIG"), metavar="PATH",
                     help="kubeconfig for --e2e-real (default: $KUBECONFIG at startup)")
    parser.addoption("--e2e-kubelet", action="store_true", default=False,
                     help="run tests/kubelet: a control plane and a real node (kubelet, containerd, DRA test "
                     "driver) on this machine; needs root and e2e/build-kubelet.sh (make e2e-kubelet)")


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("--e2e-real") and not config.getoption("--e2e-kubeconfig"):
        raise pytest.UsageError("--e2e-real needs a cluster: set KUBECONFIG (or pass --e2e-kubeconfig)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not config.getoption("--e2e-kubelet"):
        kubelet = pytest.mark.skip(reason="real-node e2e test (a kubelet, containerd, a DRA driver; root): "
                                   "pass --e2e-kubelet, or run make e2e-kubelet")
        for item in items:
            if KUBELET_TESTS in item.path.parents:
                item.add_marker(kubelet)
    if config.getoption("--e2e-real"):
        return
    skip = pytest.mark.skip(reason="real-cluster e2e test: pass --e2e-real with KUBECONFIG set")
    for item in items:
        if "e2e" in item.keywords:
            item.add_marker(skip)
