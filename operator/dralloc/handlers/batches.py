"""Single pods decided as one batch: the operator's side of issue 34's FA-batch.

With the `default` AllocationPolicy's `spec.batchOrders` above 1 (strategy FragmentationAware),
the single pods a scheduling pass takes together (a run of up to `scheduling.BATCH` in the
queue's fair order) are not decided strictly one after another: each stretch of two or more
consecutive pods that may be batched (`scheduling.batching.batchable`: claims of their own, no
volume to bind) and share a priority is one batch, decided in the decider's worker thread by
`scheduling.batching.choose`, exactly as `dralloc simulate --batch` decides a burst. The batch is
placed in arrival order and in up to batchOrders-1 hardest-first orders, each tried on the
pass's placer and undone; the kept order is the one that allocates the most device capacity,
then leaves the least expected fragmentation, and never one in which a pod that arrival order
places is left out. So batching never costs a pod the placement it would get in its turn:
the queue's fairness across namespaces and its priorities keep their meaning, and pods of
another priority are never in the same batch.

A batch has the CPU budget its pods would have one by one (one decision's each). When that is
spent while a later order is tried, the best order tried in full is kept (`cut-short`); when
it is spent before arrival order itself was tried in full, or the decision raises, its pods
are decided one by one, as without batching. Pods the kept order does not place are decided
once more one by one right after the batch (they fail again: what a batch commits only takes
room), which gives them their explanation and, when they may, priority preemption, as any
pod that fits nowhere.

Sits under `scheduling` (which runs the pass) and over `deciding`; pure helpers and the value
recorded in the placer, no I/O.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from dralloc.model import pods
from dralloc.scheduling import batching, placement, preemption


@dataclasses.dataclass(frozen=True)
class Batch:
    """Consecutive pods of a run (their positions) decided as one."""

    positions: tuple[int, ...]


Unit = int | Batch  # a pod decided alone (its position in the run), or a batch


def plan(run: Sequence[tuple[pods.Pod, placement.Item]], orders: int, alone: set[str]) -> list[Unit]:
    """The run cut into units, in its order: each stretch of two or more consecutive pods that may be
    batched and share a priority is a batch (when `orders` is above 1); every other pod, and those in
    `alone` (their uids: a batch already left them unplaced, or could not be decided), is decided alone."""
    units: list[Unit] = []
    stretch: list[int] = []

    def close() -> None:
        if len(stretch) >= 2:
            units.append(Batch(tuple(stretch)))
        else:
            units.extend(stretch)
        stretch.clear()

    for position, (pod, item) in enumerate(run):
        if orders < 2 or (pod.metadata.uid or "") in alone or not batching.batchable(pod, item):
            close()
            units.append(position)
            continue
        if stretch and preemption.priority(run[stretch[-1]][0]) != preemption.priority(pod):
            close()
        stretch.append(position)
    close()
    return units


@dataclasses.dataclass(frozen=True)
class Chosen:
    """A batch's decision: its items (in run order) and the order kept (`batching.Choice`)."""

    items: tuple[placement.Item, ...]
    choice: batching.Choice

    def placements(self) -> list[tuple[int, placement.Placement]]:
        """The placed items' indexes in the batch and their placements, in the order kept."""
        return [(i, decision) for i in self.choice.order
                if isinstance(decision := self.choice.decisions[i], placement.Placement)]

    def outcome(self) -> str:
        """The `dralloc_batch_decisions_total` outcome."""
        if self.choice.cut_short:
            return "cut-short"
        return "reordered" if self.choice.reordered else "arrival-order"


def decide(placer: placement.Placer, items: Sequence[placement.Item], counts: dict[tuple[object, ...], int],
           orders: int) -> Chosen:
    """The batch's best order (in the decider's thread, under the batch's budget): nothing is left
    committed in the placer; `record` commits the kept placements."""
    return Chosen(tuple(items), batching.choose(placer, items, counts, orders))


def record(placer: placement.Placer, chosen: Chosen) -> None:
    """The kept placements join the placer's view, in the order kept (in the decider's thread, outside
    the budget): the next decision of the pass cannot get the same devices."""
    for i, decision in chosen.placements():
        placer.commit(chosen.items[i], decision)
