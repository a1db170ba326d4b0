"""Shared test configuration.

Warnings are errors (pyproject). End-to-end tests against a real cluster are opt-in
with `--e2e-real` and need KUBECONFIG.
"""

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--e2e-real", action="store_true", default=False,
                     help="run end-to-end tests against the cluster KUBECONFIG points at")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--e2e-real"):
        return
    skip = pytest.mark.skip(reason="real-cluster e2e test: pass --e2e-real with KUBECONFIG set")
    for item in items:
        if "e2e" in item.keywords:
            item.add_marker(skip)
