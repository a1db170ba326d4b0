"""FA-batch (issue 34), the pure part: which orders to try for a burst of arrivals, and which outcome wins.

`dralloc simulate --batch N` takes single pods N at a time (a burst) and decides the burst as one:
it places the burst in a few orders on the cluster as it is (each placement by the policy, as one
by one), measures each outcome, keeps the best and undoes the others (`offline.simulating`). This
module decides, without I/O and without the cluster:

- `orders`: the orders to try, arrival order always first, then "hardest first" variants (the
  most device capacity first, the rarest shape of the workload first among equals, then the most
  CPU and memory), deduplicated, at most `limit` of them (the per-burst budget, `--batch-orders`);
- `best`: the outcome with the most device capacity allocated, then the least expected
  fragmentation left, then the most items placed; ties go to the earlier order, so arrival order
  is kept unless another order is strictly better. A burst is therefore never worse, by this
  measure, than the same policy placing it in arrival order.

Everything is deterministic: the same burst gives the same orders and the same choice.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from fractions import Fraction

Amount = int | Fraction


@dataclasses.dataclass(frozen=True)
class Demand:
    """What an item of a burst asks, as the orders compare it.

    `size`: its device capacity (in the fragmentation measure's units: `Measure.size`, 0 when it
    takes no devices or its shape is not modelled); `rarity`: how many items of the workload have its
    shape (fewer: rarer, harder to find room for later); `resources`: its node resources (CPU,
    memory, in nano-units)."""

    size: Amount
    rarity: int = 1
    resources: tuple[int, ...] = ()


@dataclasses.dataclass(frozen=True)
class Score:
    """One order's outcome: device capacity allocated (`Demand.size` of the placed items), the
    growth of expected fragmentation over the nodes the burst touched, and the items placed."""

    allocated: Amount
    fragmentation: Amount
    placed: int

    def key(self) -> tuple[Amount, Amount, int]:
        """Larger is better."""
        return (self.allocated, -self.fragmentation, self.placed)


DEFAULT_ORDERS = 4  # orders tried per burst (--batch-orders): arrival order and three hardest-first variants

_Key = Callable[[int], tuple[object, ...]]


def _variants(demands: Sequence[Demand]) -> list[_Key]:
    """The hardest-first sort keys, most promising first (index last: stable and deterministic)."""
    def hardest(i: int) -> tuple[object, ...]:
        d = demands[i]
        return (-d.size, d.rarity, tuple(-r for r in d.resources), i)

    def largest(i: int) -> tuple[object, ...]:
        return (-demands[i].size, i)

    def rarest(i: int) -> tuple[object, ...]:
        d = demands[i]
        return (d.rarity, -d.size, i)

    def heaviest(i: int) -> tuple[object, ...]:
        d = demands[i]
        return (tuple(-r for r in d.resources), -d.size, i)

    return [hardest, largest, rarest, heaviest]


def orders(demands: Sequence[Demand], limit: int = DEFAULT_ORDERS) -> list[tuple[int, ...]]:
    """The orders (permutations of the burst's indexes) to try: arrival order first, then the
    hardest-first variants, without repeats, at most `limit` (at least arrival order)."""
    arrival = tuple(range(len(demands)))
    found = [arrival]
    seen = {arrival}
    for key in _variants(demands):
        if len(found) >= max(1, limit):
            break
        order = tuple(sorted(arrival, key=key))
        if order not in seen:
            seen.add(order)
            found.append(order)
    return found


def best(scores: Sequence[Score]) -> int:
    """The index of the best score (`Score.key`), the first among equals: with arrival order's score
    first, another order is kept only when strictly better."""
    if not scores:
        raise ValueError("no score")
    chosen = 0
    for i, score in enumerate(scores):
        if score.key() > scores[chosen].key():
            chosen = i
    return chosen


def bursts(count: int, size: int) -> list[range]:
    """Consecutive index ranges of at most `size` covering `count` items (the arrivals taken N at a time)."""
    if size < 1:
        raise ValueError("a burst holds at least one item")
    return [range(start, min(start + size, count)) for start in range(0, count, size)]
