"""Batch placement (issue 34's FA-batch): single pods pending together decided as one.

`dralloc simulate --batch N` takes arrivals N at a time, and the operator (an AllocationPolicy with
`spec.batchOrders` above 1) the single pods of a pass's run; both decide such a burst as one, here:
the burst is placed in a few orders on the placer as it is (each placement by the policy, as one by
one would make it, committed so the next sees it), each outcome is measured, every placement is
undone, and the best order is returned for the caller to commit. Pure: no I/O, no clock; the caller's
CPU budget (`allocation.interruption`) may stop the trying, and what was tried in full still counts.

- `orders`: the orders to try, arrival order always first, then "hardest first" variants (the
  most device capacity first, the rarest shape of the queue first among equals, then the most
  CPU and memory), deduplicated, at most `limit` of them (`--batch-orders`, `spec.batchOrders`);
- `best`: among the orders that place every item arrival order places (no pod loses, to another's
  benefit, the placement it gets in its turn: the fair order and priorities keep their meaning),
  the one with the most device capacity allocated, then the least expected fragmentation left, then
  the most items placed; ties go to the earlier order, so arrival order is kept unless another is
  strictly better. A burst is therefore never worse, by this measure, than the same policy placing
  it in arrival order.
- `choose`: the trying itself, on a `Placer` under the fragmentation-aware policy.

Everything is deterministic: the same burst on the same cluster gives the same orders and the same choice.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from fractions import Fraction
from typing import Any

from dralloc.allocation import errors, interruption
from dralloc.model import pods
from dralloc.scheduling import nodefit, placement

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
    growth of expected fragmentation over the nodes the burst touched, and the items placed (their
    indexes in the burst)."""

    allocated: Amount
    fragmentation: Amount
    placed: frozenset[int]

    def key(self) -> tuple[Amount, Amount, int]:
        """Larger is better."""
        return (self.allocated, -self.fragmentation, len(self.placed))


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
    """The index of the best score (`Score.key`) among those that place every item the first (arrival
    order) places; the first among equals: another order is kept only when strictly better."""
    if not scores:
        raise ValueError("no score")
    chosen = 0
    for i, score in enumerate(scores):
        if score.placed >= scores[0].placed and score.key() > scores[chosen].key():
            chosen = i
    return chosen


# ---- trying the orders on a placer ------------------------------------------------------------

Decision = placement.Placement | placement.NoPlacement | Exception  # an input error is the item's own answer


def batchable(pod: pods.Pod, item: placement.Item) -> bool:
    """Whether a single pod may be decided in a burst: `self_contained`, and none of its claims allocated
    already (an earlier attempt's, which pin it to a node)."""
    return not item.allocated and self_contained(pod)


def self_contained(pod: pods.Pod) -> bool:
    """Whether the pod can be placed, undone and placed again exactly: its claims are its own (made from
    templates, or its extended resources: no shared claim another item could allocate first) and it binds
    no volume (`Placer.release` does not return volumes)."""
    if any(entry.resource_claim_name for entry in pod.spec.resource_claims):
        return False
    return not any(v.persistent_volume_claim is not None or v.ephemeral is not None for v in pod.spec.volumes)


def as_bound(pod: pods.Pod | None, decision: placement.Placement) -> pods.Pod | None:
    """The pod as `Placer.release` reads a bound one: with the node resources its devices took
    (what `Placer.commit` added for it)."""
    if pod is None or not decision.node_allocatable:
        return pod
    status = pod.status.model_copy(update={"node_allocatable_resource_claim_statuses": decision.node_allocatable})
    return pod.model_copy(update={"status": status})


def shape_counts(placer: placement.Placer, queue: Iterable[placement.Item]) -> dict[tuple[object, ...], int]:
    """How many items of the queue (a whole workload, the pods pending) have each request shape: the
    rarity `orders` reads. Empty without the fragmentation-aware policy's model."""
    counts: dict[tuple[object, ...], int] = {}
    for item in queue:
        shape = _shape(placer, item)
        if shape is not None:
            counts[shape.key()] = counts.get(shape.key(), 0) + 1
    return counts


def _shape(placer: placement.Placer, item: placement.Item) -> Any:
    model = placer.model
    if model is None or item.allocated:
        return None
    return model.shape(item.claims, nodefit.pod_requests(item.pod) if item.pod is not None else None)


def demand(placer: placement.Placer, item: placement.Item, counts: dict[tuple[object, ...], int]) -> Demand:
    """The item as the orders compare it (`Demand`), from the placer's fragmentation model."""
    shape = _shape(placer, item)
    if shape is None:
        return Demand(0, 0)
    assert placer.model is not None
    return Demand(placer.model.measure.size(shape), counts.get(shape.key(), 0), tuple(shape.resources))


@dataclasses.dataclass(frozen=True)
class Choice:
    """What `choose` found: the order kept (indexes into the burst), each item's decision in it, the
    orders tried in full, and whether the budget stopped the trying before every order was tried."""

    order: tuple[int, ...]
    decisions: dict[int, Decision]
    tried: int
    cut_short: bool = False

    @property
    def reordered(self) -> bool:
        return self.order != tuple(range(len(self.order)))


def choose(placer: placement.Placer, burst: Sequence[placement.Item], counts: dict[tuple[object, ...], int],
           limit: int = DEFAULT_ORDERS) -> Choice:
    """The burst's best order (`best`) among `orders`, each tried on the placer and undone: the
    placer is as it was when this returns (or raises), and the caller commits the chosen decisions
    (valid as they are: the cluster is the one they were found on). An interruption (the caller's
    budget) while arrival order is tried propagates; one while a later order is tried ends the trying
    and the best of the orders tried in full is kept. Needs the fragmentation-aware policy's model."""
    if placer.model is None:
        raise ValueError("batch placement needs the fragmentation-aware policy")
    demands = [demand(placer, item, counts) for item in burst]
    candidates = orders(demands, limit)
    tried: list[tuple[Score, dict[int, Decision]]] = []
    for candidate in candidates:
        try:
            tried.append(_try(placer, burst, candidate, demands))
        except interruption.Interrupted:
            if not tried:
                raise
            chosen = best([score for score, _ in tried])
            return Choice(candidates[chosen], tried[chosen][1], len(tried), cut_short=True)
    chosen = best([score for score, _ in tried])
    return Choice(candidates[chosen], tried[chosen][1], len(tried))


def _try(placer: placement.Placer, burst: Sequence[placement.Item], order: Sequence[int],
         demands: Sequence[Demand]) -> tuple[Score, dict[int, Decision]]:
    """The burst placed in `order`, scored, then undone (also when interrupted half-way)."""
    decisions: dict[int, Decision] = {}
    placed: list[int] = []
    touched: set[int] = set()
    after: Amount = 0
    end = placer.begin_trial()
    try:
        for i in order:
            try:
                decision: Decision = placer.place(burst[i], explain=False)
            except errors.AllocationInputError as exc:
                decisions[i] = exc
                continue
            decisions[i] = decision
            if isinstance(decision, placement.Placement):
                with interruption.interrupt_when(_never):  # a commit is never cut in the middle
                    placer.commit(burst[i], decision)
                placed.append(i)
                touched |= _touched(placer, decision)
        after = _fragmentation(placer, touched)
    finally:
        with interruption.interrupt_when(_never):
            for i in reversed(placed):
                done = decisions[i]
                assert isinstance(done, placement.Placement)
                placer.release(done.node, done.results, as_bound(burst[i].pod, done))
            end()
    before = _fragmentation(placer, touched)
    allocated = sum((demands[i].size for i in placed), 0)
    return Score(allocated, after - before, frozenset(placed)), decisions


def _never() -> bool:
    return False


def _touched(placer: placement.Placer, decision: placement.Placement) -> set[int]:
    """The nodes whose devices the placement takes (its node, and every node of a pool it draws from)."""
    model = placer.model
    assert model is not None
    touched = {placer.index[decision.node]}
    for allocation_ in decision.results:
        for result in allocation_.devices.results:
            touched.update(model.nodes_of_pool.get((result.driver, result.pool), ()))
    return touched


def _fragmentation(placer: placement.Placer, nodes: set[int]) -> Amount:
    model = placer.model
    assert model is not None
    return sum((model.measure.fragmentation(model.state(i)) for i in sorted(nodes)), 0)
