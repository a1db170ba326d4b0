"""Decisions run off the event loop under a CPU budget: the loop keeps running, costly ones stop."""

from __future__ import annotations

import asyncio
import functools
import threading

import pytest
from tests import builders as b
from tests.allocation.test_interruption import costly

from dralloc import allocation
from dralloc.allocation.features import Features
from dralloc.handlers import deciding


def _heavy_search() -> object:
    snapshot, claim = costly(alternatives=8)  # minutes of CPU without a budget
    return allocation.allocate(snapshot, [claim], b.node(), features=Features(), explain=False)


async def _ticking(during: asyncio.Future[object]) -> tuple[object, int]:
    """The awaited result, and how often a loop task ran while it was being worked out."""
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.005)
            ticks += 1

    ticker = asyncio.create_task(tick())
    try:
        result = await during
    finally:
        ticker.cancel()
    return result, ticks


def test_a_costly_decision_is_stopped_at_its_budget_while_the_loop_runs() -> None:
    decider = deciding.Decider(cpu_budget=0.2)

    async def main() -> tuple[object, int]:
        return await _ticking(asyncio.ensure_future(decider.run(_heavy_search)))

    answer, ticks = asyncio.run(main())
    decider.close()
    assert isinstance(answer, deciding.TooCostly)
    assert answer.budget == 0.2 and answer.cpu_seconds >= 0.2 and not answer.stopping
    assert ticks >= 3  # the loop was never blocked by the search (a blocked loop would not tick at all)


def test_a_cheap_decision_returns_its_value_and_errors_propagate() -> None:
    decider = deciding.Decider(cpu_budget=5.0)
    snapshot, claim = costly(alternatives=1, requests=2)

    def failing() -> None:
        raise ValueError("bad input")

    async def main() -> object:
        found = await decider.run(functools.partial(allocation.allocate, snapshot, [claim], b.node(),
                                                    features=Features()))
        with pytest.raises(ValueError, match="bad input"):
            await decider.run(failing)
        return found

    answer = asyncio.run(main())
    decider.close()
    assert isinstance(answer, deciding.Decided)
    assert isinstance(answer.value, allocation.outcomes.Allocated)


def test_stopping_the_operator_stops_a_decision_in_flight() -> None:
    """A cancelled wait (the loops stopping) ends the decision at its next checkpoint, whatever its budget."""
    decider = deciding.Decider(cpu_budget=3600.0)
    finished = threading.Event()

    def search() -> object:
        try:
            return _heavy_search()
        finally:
            finished.set()

    async def main() -> None:
        task = asyncio.create_task(decider.run(search))
        await asyncio.sleep(0.1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert finished.wait(timeout=30)  # an hour of budget, yet it ended (typically within milliseconds)
    decider.close()


def test_the_budget_must_be_positive() -> None:
    with pytest.raises(ValueError, match="must be positive"):
        deciding.Decider(cpu_budget=0)


def test_what_follows_a_decision_runs_in_the_same_thread_outside_the_budget() -> None:
    """Recording a decision in the placer must not be cut in the middle by the budget."""
    decider = deciding.Decider(cpu_budget=5.0)
    seen: list[tuple[object, str, object]] = []

    def record(value: object) -> None:
        from dralloc.allocation import interruption

        seen.append((value, threading.current_thread().name, interruption.current()))

    answer = asyncio.run(decider.run(lambda: 42, record))
    decider.close()
    assert isinstance(answer, deciding.Decided) and answer.value == 42
    assert seen[0][0] == 42 and seen[0][1].startswith("dralloc-decide") and seen[0][2] is None


def test_each_decision_of_a_trip_has_its_own_budget() -> None:
    """A batch of pods decided as one gets one budget per pod (`budgets`): the same costly search stops at
    its own budget, and the cheap one after it is answered."""
    decider = deciding.Decider(cpu_budget=0.1)

    def cheap() -> str:
        return "cheap"

    async def main() -> list[object]:
        return list(await decider.run_each([_heavy_search, cheap], budgets=[0.3, 0.1], slice_cpu=10.0))

    heavy, light = asyncio.run(main())
    decider.close()
    assert isinstance(heavy, deciding.TooCostly) and heavy.budget == 0.3 and heavy.cpu_seconds >= 0.3
    assert isinstance(light, deciding.Decided) and light.value == "cheap"


def test_one_budget_per_decision() -> None:
    decider = deciding.Decider()
    with pytest.raises(ValueError, match="one budget per decision"):
        asyncio.run(decider.run_each([lambda: None], budgets=[0.1, 0.2]))
    decider.close()
