"""Fixtures for the tests that run the real Prometheus tools (tests/monitoring/prometheus.py)."""

from __future__ import annotations

import pathlib

import pytest
from tests.monitoring import prometheus


@pytest.fixture(scope="session")
def prometheus_binaries() -> prometheus.Binaries:
    """promtool and prometheus, installed from Debian's package when absent; skips saying why otherwise."""
    found = prometheus.binaries()
    if isinstance(found, str):
        pytest.skip(f"the alert rules cannot be checked with a real Prometheus here: {found}")
    return found


@pytest.fixture
def rules_path(tmp_path: pathlib.Path) -> pathlib.Path:
    """The PrometheusRule's rule file as manifests/ ship it."""
    return prometheus.write_rules(prometheus.rule_file(), tmp_path / "dralloc-rules.yaml")
