"""The bound on one evaluation's work (dralloc.cel.cost), worded as upstream's cost limit."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from dralloc.cel import cost, selectors

Evaluate = Callable[..., bool]

_EXCEEDED = "operation cancelled: actual cost limit exceeded"


def test_nested_comprehensions_stop_at_the_limit(evaluate: Evaluate) -> None:
    """A million iterations (upstream cancels this one too) end in upstream's error, which no
    `||` absorbs."""
    with pytest.raises(selectors.CELRuntimeError, match=_EXCEEDED):
        evaluate("lists.range(1000).all(i, lists.range(1000).all(j, true)) || true")


def test_under_the_limit_nothing_changes(evaluate: Evaluate) -> None:
    assert evaluate("lists.range(500).all(i, lists.range(500).all(j, i + j >= 0))") is True


def test_range_has_upstreams_maximum(evaluate: Evaluate) -> None:
    with pytest.raises(selectors.CELRuntimeError, match=r"lists.range: size 1000001 exceeds maximum allowed \(1000000\)"):
        evaluate("lists.range(1000001).size() > 0")


def test_each_evaluation_has_its_own_budget(evaluate: Evaluate) -> None:
    """The budget is per evaluation: many evaluations near the limit all succeed, also in threads."""
    expression = "lists.range(600).all(i, lists.range(600).all(j, true))"  # about 720,000 units
    outcomes: list[bool] = []

    def run() -> None:
        outcomes.append(evaluate(expression))

    threads = [threading.Thread(target=run) for _ in range(3)]
    for thread in threads:
        thread.start()
    run()
    for thread in threads:
        thread.join()
    assert outcomes == [True] * 4


def test_charge_outside_an_evaluation_is_free() -> None:
    """Library functions called directly (tests, the fast path's fallbacks) are not limited."""
    cost.charge(cost.LIMIT * 10)
    with cost.evaluation(limit=5), pytest.raises(cost.CostLimitExceeded):
        cost.charge(6)
