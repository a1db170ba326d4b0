"""`dralloc run` flags become the operator's settings and its runtime limits."""

from __future__ import annotations

import socket

import pytest

from dralloc import cli, running
from dralloc.allocation import errors
from dralloc.allocation.features import Features, parse_gates
from dralloc.handlers.runtime import Runtime


def _settings(*argv: str):  # type: ignore[no-untyped-def]
    args = cli.build_parser().parse_args(["run", *argv])
    return cli.settings_from_args(args, Features.from_gates(parse_gates(args.features)))


def test_defaults_are_documented_ones() -> None:
    """No flags: scheduler name dralloc, gate dralloc.io/allocate, endpoints on loopback 8080/8081 (movable),
    leader election on with kube-scheduler's durations."""
    settings = _settings()
    assert (settings.scheduling.scheduler_name, settings.scheduling.gate) == ("dralloc", "dralloc.io/allocate")
    runtime = settings.runtime
    assert (runtime.metrics_port, runtime.health_port) == (8080, 8081)
    assert (runtime.metrics_address, runtime.health_address) == ("127.0.0.1", "127.0.0.1")
    assert runtime.metrics_port_may_move and runtime.health_port_may_move
    assert runtime.standalone is False
    election = runtime.leader_election
    assert (election.lease_duration, election.renew_deadline, election.retry_period) == (15.0, 10.0, 2.0)
    assert (election.resource_name, election.resource_namespace, election.identity) == ("dralloc", None, None)


def test_leader_election_and_endpoint_flags() -> None:
    runtime = _settings("--leader-elect-lease-duration", "30", "--leader-elect-renew-deadline", "20",
                        "--leader-elect-retry-period", "4", "--leader-elect-resource-name", "mine",
                        "--leader-elect-resource-namespace", "ops", "--identity", "replica-a",
                        "--metrics-port", "9090", "--health-address", "10.0.0.7").runtime
    election = runtime.leader_election
    assert (election.lease_duration, election.renew_deadline, election.retry_period) == (30.0, 20.0, 4.0)
    assert (election.resource_name, election.resource_namespace, election.identity) == ("mine", "ops", "replica-a")
    assert runtime.metrics_port == 9090 and not runtime.metrics_port_may_move  # given: never moves
    assert runtime.health_address == "10.0.0.7" and runtime.health_port_may_move
    assert _settings("--standalone").runtime.standalone is True


def test_durations_that_cannot_fence_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["run", "--leader-elect-lease-duration", "5", "--leader-elect-renew-deadline", "10"]) == 2
    assert "must be greater than --leader-elect-renew-deadline" in capsys.readouterr().err


def test_two_replicas_on_one_host_get_distinct_identities_and_ports() -> None:
    a, b = Runtime(_settings()), Runtime(_settings())
    assert a.identity != b.identity
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        port = taken.getsockname()[1]
        moved = running.usable_port("127.0.0.1", port, may_move=True, what="/metrics")
        assert moved not in (0, port)
        with pytest.raises(OSError, match=r"cannot listen on 127\.0\.0\.1"):
            running.usable_port("127.0.0.1", port, may_move=False, what="/metrics")


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


def test_budget_and_backoff_flags_reach_the_runtime() -> None:
    """--budget, --gang-budget, --decision-cpu-budget and the backoff flags are what the scheduler uses
    (--budget used to be accepted and ignored: the placer always got 1,000,000 steps)."""
    settings = _settings("--budget", "777", "--gang-budget", "99", "--decision-cpu-budget", "0.25",
                         "--pod-initial-backoff", "2", "--pod-max-backoff", "16")
    rt = Runtime(settings)
    assert rt.views.placer("first-fit").budget == 777
    assert settings.scheduling.gang_budget == 99
    assert rt.decider.cpu_budget == 0.25
    assert (rt.queue.initial_backoff, rt.queue.max_backoff) == (2.0, 16.0)
    defaults = Runtime(_settings())
    assert (defaults.queue.initial_backoff, defaults.queue.max_backoff) == (1.0, 10.0)  # kube-scheduler's
    assert defaults.decider.cpu_budget == 0.5 and defaults.views.placer("first-fit").budget == 1_000_000


@pytest.mark.parametrize(("argv", "said"), [
    (["--budget", "0"], "--budget: 0 must be at least 1"),
    (["--gang-budget", "-3"], "--gang-budget: -3 must be at least 1"),
    (["--decision-cpu-budget", "0"], "--decision-cpu-budget: 0.0 must be a positive number of seconds"),
    (["--pod-initial-backoff", "5", "--pod-max-backoff", "2"], "--pod-max-backoff: 2.0 must be at least"),
])
def test_bad_budget_and_backoff_flags_are_refused(argv: list[str], said: str,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["run", "--kubernetes-version", "1.37", *argv]) == 2
    assert said in capsys.readouterr().err


def test_the_cel_cache_flag_reaches_the_settings_and_is_checked(capsys: pytest.CaptureFixture[str]) -> None:
    assert _settings("--cel-cache-results", "5000").scheduling.cel_cache_results == 5000
    assert _settings().scheduling.cel_cache_results == 1 << 21
    assert cli.main(["run", "--kubernetes-version", "1.37", "--cel-cache-results", "0"]) == 2
    assert "--cel-cache-results: 0 must be at least 1" in capsys.readouterr().err
