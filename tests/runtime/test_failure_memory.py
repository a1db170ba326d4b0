"""The loops' memory of objects they could not handle: exponential backoff, one report per message."""

from __future__ import annotations

import math

from dralloc.handlers.failures import Failures

POD = ("ns", "p")


def test_backoff_doubles_up_to_the_maximum() -> None:
    failures = Failures(initial=0.5, maximum=3.0)
    delays = [failures.failed("pod", POD, "boom", now=0.0)[0] for _ in range(5)]
    assert delays == [0.5, 1.0, 2.0, 3.0, 3.0]


def test_only_a_new_message_is_reported_again() -> None:
    failures = Failures()
    assert failures.failed("pod", POD, "boom", now=0.0)[1] is True
    assert failures.failed("pod", POD, "boom", now=1.0)[1] is False
    assert failures.failed("pod", POD, "bang", now=2.0)[1] is True


def test_due_hands_an_object_out_once_until_it_fails_again() -> None:
    failures = Failures(initial=1.0)
    failures.failed("pod", POD, "boom", now=0.0)
    failures.failed("claim", POD, "boom", now=5.0)
    assert failures.due(0.5) == []
    assert failures.next_due() == 1.0
    assert failures.due(1.0) == [("pod", POD)]
    assert failures.due(2.0) == []
    assert failures.next_due() == 6.0
    failures.failed("pod", POD, "boom", now=2.0)
    assert failures.next_due() == 4.0


def test_success_forgets_the_object() -> None:
    failures = Failures()
    failures.failed("pod", POD, "boom", now=0.0)
    failures.succeeded("pod", POD)
    assert ("pod", POD) not in failures and len(failures) == 0 and failures.next_due() is None
    assert failures.failed("pod", POD, "boom", now=0.0) == (0.5, True)
    assert not math.isinf(failures.next_due() or math.inf)


def test_failures_of_objects_that_are_gone_are_forgotten() -> None:
    """A deleted object's failure used to stay for good (handed out once, then kept): churn grew it."""
    failures = Failures()
    for i in range(100):
        failures.failed("pod", ("ns", f"gone-{i}"), "boom", now=0.0)
    failures.failed("pod", POD, "boom", now=0.0)
    assert failures.forget_unless(lambda kind, key: key == POD) == 100
    assert len(failures) == 1 and ("pod", POD) in failures
