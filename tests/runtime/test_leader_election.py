"""Leader election decisions (state/leadership.py): who may act, and when a candidate takes over."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from dralloc.state.leadership import Elector, Record, Timing

TIMING = Timing(lease_duration=15.0, renew_deadline=10.0, retry_period=2.0)


def record(holder: str, renew: str, *, duration: float | None = 15.0) -> Record:
    return Record(holder=holder, lease_duration=duration, renew_time=renew, acquire_time=None, transitions=0,
                  resource_version="1")


def test_nobody_holds_it_create_then_lead() -> None:
    me = Elector("a", TIMING)
    me.observed(None, sent_at=0.0, received_at=0.1)
    assert me.wants(0.1) == "create" and not me.may_act(0.1)
    me.succeeded(record("a", "t0"), sent_at=0.2)
    assert me.may_act(0.3) and me.wants(0.3) == "renew"


def test_the_holder_stops_acting_at_its_renew_deadline() -> None:
    me = Elector("a", TIMING)
    me.succeeded(record("a", "t0"), sent_at=100.0)
    assert me.may_act(109.9)
    assert not me.may_act(110.0)


def test_a_candidate_waits_a_lease_duration_from_the_last_change() -> None:
    other = Elector("b", TIMING)
    other.observed(record("a", "t0"), sent_at=0.0, received_at=0.0)
    other.observed(record("a", "t1"), sent_at=2.0, received_at=2.0)  # renewed between 0 and 2
    assert other.expires_at() == 15.0 - TIMING.early  # from the earliest moment the renewal could have been written
    for now in (4.0, 10.0, 14.85):
        other.observed(record("a", "t1"), sent_at=now, received_at=now)
        assert other.wants(now) == "wait"
    assert other.wants(15.0) == "acquire"


def test_a_slow_read_does_not_move_the_estimate_before_retry_period() -> None:
    other = Elector("b", TIMING)
    other.observed(record("a", "t0"), sent_at=0.0, received_at=0.0)
    other.observed(record("a", "t1"), sent_at=1.0, received_at=30.0)  # a read that took 29 s
    assert other.expires_at() == 28.0 + 15.0 - TIMING.early


def test_a_released_lease_is_taken_at_once() -> None:
    other = Elector("b", TIMING)
    other.observed(record("", "t9", duration=1), sent_at=5.0, received_at=5.0)
    assert other.wants(5.0) == "acquire"


def test_someone_else_holding_it_means_we_do_not_lead() -> None:
    me = Elector("a", TIMING)
    me.succeeded(record("a", "t0"), sent_at=0.0)
    me.observed(record("b", "t5"), sent_at=1.0, received_at=1.0)
    assert not me.may_act(1.0)


def test_timing_must_leave_the_holder_time_to_stop() -> None:
    assert Timing(10, 10, 2).problems() and Timing(15, 2, 2).problems() and Timing(15, 10, 0).problems()
    assert Timing(15, 10, 6).problems()  # a read up to 6 s late could let a candidate start too soon
    assert not TIMING.problems()


@settings(max_examples=300, deadline=None)
@given(timing=st.sampled_from([TIMING, Timing(3.0, 2.0, 0.5), Timing(60.0, 40.0, 10.0)]),
       renew_gaps=st.lists(st.floats(0.1, 1.0), min_size=1, max_size=12),
       read_gaps=st.lists(st.floats(0.05, 3.0), min_size=1, max_size=60),
       latency=st.floats(0.0, 0.4), died_after=st.integers(0, 11))
def test_no_candidate_starts_before_the_holder_has_stopped(timing: Timing, renew_gaps: list[float],
                                                           read_gaps: list[float], latency: float,
                                                           died_after: int) -> None:
    """Whatever the read timing: when a candidate may take over, the holder's renew deadline has passed.

    The holder renews at irregular intervals (sending at s, written at s + latency) and
    then dies; the candidate reads at irregular intervals (each read sees the last write
    before it was sent).
    """
    holder = Elector("a", timing)
    writes: list[tuple[float, str]] = []  # (written at, renew stamp)
    now = 0.0
    for i, gap in enumerate(renew_gaps[: died_after + 1]):
        now += gap * timing.retry_period
        holder.succeeded(record("a", f"t{i}"), sent_at=now)
        writes.append((now + latency * timing.retry_period, f"t{i}"))
    holder_stops = (holder.renewed_at or 0.0) + timing.renew_deadline
    candidate = Elector("b", timing)
    read_at = 0.0
    for gap in read_gaps:
        read_at += gap * timing.retry_period
        seen = [stamp for at, stamp in writes if at <= read_at]
        if not seen:
            continue
        received = read_at + latency * timing.retry_period
        candidate.observed(record("a", seen[-1], duration=timing.lease_duration), sent_at=read_at,
                           received_at=received)
        decision_time = received
        if candidate.wants(decision_time) == "acquire":
            assert decision_time >= holder_stops, (decision_time, holder_stops)
            break
