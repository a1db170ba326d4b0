"""Shared test configuration.

Warnings are errors (pyproject). End-to-end tests against a real cluster are opt-in
with `--e2e-real` and need KUBECONFIG: tests marked `e2e` run only then, and the
operator tests in tests/handlers/ switch from the sandbox to that cluster.
"""

import os

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--e2e-real", action="store_true", default=False,
                     help="run end-to-end tests against the cluster KUBECONFIG points at")
    # Read at startup: tests that run an operator against a sandbox repoint KUBECONFIG later.
    parser.addoption("--e2e-kubeconfig", default=os.environ.get("KUBECONFIG"), metavar="PATH",
                     help="kubeconfig for --e2e-real (default: $KUBECONFIG at startup)")


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("--e2e-real") and not config.getoption("--e2e-kubeconfig"):
        raise pytest.UsageError("--e2e-real needs a cluster: set KUBECONFIG (or pass --e2e-kubeconfig)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--e2e-real"):
        return
    skip = pytest.mark.skip(reason="real-cluster e2e test: pass --e2e-real with KUBECONFIG set")
    for item in items:
        if "e2e" in item.keywords:
            item.add_marker(skip)
