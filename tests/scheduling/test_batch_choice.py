"""`scheduling.batching.choose`: a batch tried in a few orders on the placer, which is left as it was.

Trace-shaped clusters (tests/scheduling/test_fragmentation_policy.py's builders). A batch that one
by one in arrival order leaves a pod out is placed whole by a hardest-first order; trying never
changes the placer (what it places next is what it placed before); a CPU budget (`interruption`)
that runs out while a later order is tried keeps the best order tried in full, and one that runs
out during arrival order itself stops the decision.
"""

from __future__ import annotations

import pytest
from tests.allocation.test_interruption import Counting
from tests.scheduling.test_fragmentation_policy import item, node, placer, task

from dralloc.allocation import interruption
from dralloc.scheduling import batching, placement

NODES = [node("node-a", gpus=2), node("node-b", gpus=8)]
TASKS = [task("t1", 1), task("t4", 4), task("t3", 3), task("t2", 2)]  # one by one: t2 fits nowhere


def _fresh() -> tuple[placement.Placer, list[placement.Item], dict[tuple[object, ...], int]]:
    p = placer(NODES, "fragmentation-aware")
    burst = [item(t) for t in TASKS]
    p.expect(burst)
    return p, burst, batching.shape_counts(p, burst)


def _next_placement(p: placement.Placer) -> object:
    decision = p.place(item(task("probe", 1)))
    assert isinstance(decision, placement.Placement)
    return decision.node, [r.device for a in decision.results for r in a.devices.results]


def test_a_hardest_first_order_places_the_whole_batch() -> None:
    p, burst, counts = _fresh()
    choice = batching.choose(p, burst, counts, 4)
    assert choice.reordered and not choice.cut_short
    assert choice.tried == 2  # arrival order and largest first (the other variants give the same order)
    assert all(isinstance(choice.decisions[i], placement.Placement) for i in range(4))
    arrival = batching.choose(p, burst, counts, 1)
    assert arrival.order == (0, 1, 2, 3) and isinstance(arrival.decisions[3], placement.NoPlacement)


def test_trying_leaves_the_placer_as_it_was() -> None:
    p, burst, counts = _fresh()
    before = _next_placement(p)
    batching.choose(p, burst, counts, 4)
    assert _next_placement(p) == before
    again = batching.choose(p, burst, counts, 4)
    assert again == batching.choose(p, burst, counts, 4)  # deterministic


def _checks_per_order() -> int:
    p, burst, counts = _fresh()
    counting = Counting(10**9)
    with interruption.interrupt_when(counting):
        batching.choose(p, burst, counts, 1)
    return counting.calls


def test_a_budget_spent_on_a_later_order_keeps_the_best_tried_in_full() -> None:
    p, burst, counts = _fresh()
    before = _next_placement(p)
    with interruption.interrupt_when(Counting(_checks_per_order() + 1)):
        choice = batching.choose(p, burst, counts, 4)
    assert choice.cut_short and choice.tried == 1 and choice.order == (0, 1, 2, 3)
    assert _next_placement(p) == before


def test_a_budget_spent_on_arrival_order_stops_the_decision() -> None:
    assert _checks_per_order() >= 2  # the check is consulted inside arrival order, not only at its end
    p, burst, counts = _fresh()
    before = _next_placement(p)
    with pytest.raises(interruption.Interrupted), interruption.interrupt_when(Counting(2)):
        batching.choose(p, burst, counts, 4)
    assert _next_placement(p) == before


def test_choosing_needs_the_fragmentation_aware_policy() -> None:
    p = placer(NODES, "first-fit")
    with pytest.raises(ValueError, match="fragmentation-aware"):
        batching.choose(p, [item(t) for t in TASKS], {}, 4)
