"""Who does the claim lifecycle and taint eviction (state/coexistence.py, handlers/duties.py):
dralloc, or kube-controller-manager while its leader Lease shows it runs."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dralloc import cli
from dralloc.allocation.features import Features, parse_gates
from dralloc.handlers.duties import Coexistence, choices
from dralloc.settings import CoexistenceSettings
from dralloc.state.coexistence import CHOICES, DUTIES, ControllerManagerLease, Record, owners

KCM = "kube-controller-manager"


def lease(holder: str, renew: str, duration: float | None = 15.0) -> Record:
    return Record(holder=holder, lease_duration=duration, renew_time=renew, acquire_time=None, transitions=0,
                  resource_version=renew)


# ---- is KCM running? ----------------------------------------------------------------------------


def test_unknown_until_the_lease_is_read() -> None:
    assert ControllerManagerLease().running(0.0) is None


def test_no_lease_or_a_released_one_means_not_running() -> None:
    watch = ControllerManagerLease()
    watch.observed(None, received_at=0.1)
    assert watch.running(0.1) is False
    watch.observed(lease("", "t1"), received_at=1.1)
    assert watch.running(1.1) is False


def test_a_renewed_lease_means_running_and_one_not_renewed_for_its_duration_means_stopped() -> None:
    watch = ControllerManagerLease()
    watch.observed(lease("kcm-1", "t0"), received_at=0.0)
    for now, renew in ((2.0, "t1"), (4.0, "t2"), (6.0, "t2"), (18.9, "t2")):
        watch.observed(lease("kcm-1", renew), received_at=now)
        assert watch.running(now) is True
    # t2 was first seen at 4: 15 s later, without a change, the holder is gone.
    watch.observed(lease("kcm-1", "t2"), received_at=19.0)
    assert watch.running(19.0) is False


def test_the_lease_duration_comes_from_the_lease() -> None:
    watch = ControllerManagerLease()
    watch.observed(lease("kcm-1", "t0", duration=2.0), received_at=0.0)
    assert watch.running(1.9) is True
    assert watch.running(2.0) is False
    watch.observed(lease("kcm-1", "t0", duration=None), received_at=3.0)  # unset: KCM's default, 15 s
    assert watch.running(14.9) is True


def test_unsure_means_running_a_lease_first_read_counts_from_that_read() -> None:
    """However old the renewal is, the first read cannot tell (clocks differ): KCM counts as running
    for one lease duration, so dralloc never takes a duty over on a guess."""
    watch = ControllerManagerLease()
    watch.observed(lease("kcm-1", "long ago"), received_at=100.0)
    assert watch.running(114.9) is True
    assert watch.running(115.0) is False


# ---- who does each duty -------------------------------------------------------------------------


def test_auto_follows_kcm_explicit_choices_do_not() -> None:
    auto = {"claim-lifecycle": "auto", "taint-eviction": "auto"}
    assert owners(auto, True) == {"claim-lifecycle": KCM, "taint-eviction": KCM}
    assert owners(auto, False) == {"claim-lifecycle": "dralloc", "taint-eviction": "dralloc"}
    mixed = {"claim-lifecycle": "dralloc", "taint-eviction": KCM}
    for running in (True, False, None):
        assert owners(mixed, running) == {"claim-lifecycle": "dralloc", "taint-eviction": KCM}


def test_unknown_keeps_the_last_answer_and_starts_with_dralloc() -> None:
    auto = {"claim-lifecycle": "auto", "taint-eviction": "auto"}
    assert owners(auto, None) == {"claim-lifecycle": "dralloc", "taint-eviction": "dralloc"}
    before = owners(auto, True)
    assert owners(auto, None, before) == before


@given(st.fixed_dictionaries({d: st.sampled_from(CHOICES) for d in DUTIES}), st.sampled_from([True, False, None]))
def test_every_duty_has_exactly_one_owner(given_choices: dict[str, str], running: bool | None) -> None:
    decided = owners(given_choices, running)  # type: ignore[arg-type]
    assert set(decided) == set(DUTIES)
    for duty, owner in decided.items():
        assert owner in ("dralloc", KCM)
        if given_choices[duty] != "auto":
            assert owner == given_choices[duty]


# ---- flags and environment ----------------------------------------------------------------------


def _settings(*argv: str) -> CoexistenceSettings:
    args = cli.build_parser().parse_args(["run", *argv])
    return cli.settings_from_args(args, Features.from_gates(parse_gates(args.features))).coexistence


def test_flags_win_over_the_environment_which_wins_over_auto() -> None:
    environ = {"DRALLOC_CLAIM_LIFECYCLE": "dralloc"}
    assert choices(_settings(), {}) == {"claim-lifecycle": "auto", "taint-eviction": "auto"}
    assert choices(_settings(), environ) == {"claim-lifecycle": "dralloc", "taint-eviction": "auto"}
    flagged = _settings("--claim-lifecycle", KCM, "--taint-eviction", "dralloc")
    assert choices(flagged, environ) == {"claim-lifecycle": KCM, "taint-eviction": "dralloc"}
    assert _settings("--controller-manager-lease", "ops/kcm").controller_manager_lease == "ops/kcm"


def test_a_bad_environment_value_is_refused_naming_the_variable(capsys: pytest.CaptureFixture[str],
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DRALLOC_TAINT_EVICTION", "kcm")
    assert cli.main(["run"]) == 2
    assert "$DRALLOC_TAINT_EVICTION: 'kcm' is not one of auto, dralloc, kube-controller-manager" in \
        capsys.readouterr().err


def test_a_lease_that_is_not_namespace_slash_name_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["run", "--controller-manager-lease", "kube-controller-manager"]) == 2
    assert "--controller-manager-lease: 'kube-controller-manager' is not NAMESPACE/NAME" in capsys.readouterr().err


def test_a_duty_comes_back_to_dralloc_when_kcm_stops_renewing() -> None:
    state = Coexistence(CoexistenceSettings(), {})
    assert state.follows_lease and state.does("claim-lifecycle")  # before the first read: as before
    assert state.observe(lease("kcm-1", "t0"), received_at=0.0) == []
    assert not state.does("claim-lifecycle") and not state.does("taint-eviction")
    assert state.describe() == {"claim-lifecycle": f"{KCM} (auto)", "taint-eviction": f"{KCM} (auto)"}
    assert state.observe(lease("kcm-1", "t0"), received_at=20.0) == ["claim-lifecycle", "taint-eviction"]
    assert state.does("claim-lifecycle") and state.does("taint-eviction")


def test_explicit_choices_never_read_the_lease() -> None:
    state = Coexistence(CoexistenceSettings(claim_lifecycle="dralloc", taint_eviction=KCM), {})
    assert not state.follows_lease
    assert state.does("claim-lifecycle") and not state.does("taint-eviction")
