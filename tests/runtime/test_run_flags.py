"""`dralloc run` flags become the operator's settings and its runtime limits."""

from __future__ import annotations

import pytest

from dralloc import cli
from dralloc.allocation import errors
from dralloc.allocation.features import Features, parse_gates
from dralloc.handlers.runtime import Runtime


def _settings(*argv: str):  # type: ignore[no-untyped-def]
    args = cli.build_parser().parse_args(["run", *argv])
    return cli.settings_from_args(args, Features.from_gates(parse_gates(args.features)))


def test_defaults_are_documented_ones() -> None:
    """No flags: scheduler name dralloc, gate dralloc.io/allocate, metrics 8080, health 8081, peering on."""
    settings = _settings()
    assert (settings.scheduling.scheduler_name, settings.scheduling.gate) == ("dralloc", "dralloc.io/allocate")
    assert (settings.runtime.metrics_port, settings.runtime.health_port) == (8080, 8081)
    assert settings.runtime.standalone is False


def test_eviction_flags_reach_the_runtime(monkeypatch: pytest.MonkeyPatch) -> None:
    """--eviction-* flags win over DRALLOC_EVICTION_* variables."""
    monkeypatch.setenv("DRALLOC_EVICTION_PER_MINUTE", "5")
    runtime = Runtime(_settings("--eviction-per-minute", "12", "--eviction-max-percent", "30", "--eviction-dry-run"))
    assert (runtime.eviction_limits.per_minute, runtime.eviction_limits.max_percent) == (12, 30)
    assert runtime.eviction_limits.dry_run is True


def test_environment_fills_in_what_flags_leave_out(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without flags, the DRALLOC_EVICTION_* variables apply."""
    monkeypatch.setenv("DRALLOC_EVICTION_PER_MINUTE", "5")
    assert Runtime(_settings()).eviction_limits.per_minute == 5


def test_namespaces_and_features() -> None:
    """--namespace repeats; --features sets gates on top of the 1.36 defaults."""
    settings = _settings("--namespace", "a", "--namespace", "b", "--features", "DRADeviceTaints=false")
    assert settings.scheduling.namespaces == ("a", "b")
    assert settings.scheduling.features.device_taints is False
    assert settings.scheduling.features.admin_access is True


def test_unknown_gate_is_an_input_error() -> None:
    """An unknown gate name is refused."""
    with pytest.raises(errors.AllocationInputError):
        _settings("--features", "NoSuchGate=true")
