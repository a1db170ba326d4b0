"""Consolidation (issue 34): a pod that fits nowhere gets room by moving a few movable pods elsewhere.

`dralloc simulate --consolidate M`: a single pod that fits no node as the cluster is may take a node
from which at most M pods annotated `dralloc.io/movable: "true"` are moved to other nodes. The
annotation marks a pod whose owner accepts a restart elsewhere, such as a replica behind a Service or a
checkpointing trainer. Every placement here is the policy's own `Placer.place`, and the allocator
decides each one. The fragmentation model only ranks the nodes worth trying:

- For each node holding movable pods, it counts what the pod still lacks there. That is the device
  capacity its requests can use: what is free plus what the node's movable pods hold. It also counts
  CPU and memory. The node's movable pods, smallest first, are taken until that is covered. A node
  needing more than M of them, or lacking something even with all of them gone, is not tried.
- The nodes needing the fewest moves, then the least capacity moved, then by name, are tried in
  turn, at most `CANDIDATES` of them. Each is tried exactly: the chosen pods are released one by
  one until the pod fits (anywhere: only that node changed), then the released pods are placed
  again, largest first, by the policy (another node, or the same one when there is room left).
  When every one of them finds a place, the moves stand. Otherwise every step is undone
  (`Placer.begin_trial`) and the next node is tried.

Nothing else moves: gang members, pods with shared claims or volumes, and pods without the
annotation stay where they were placed. A moved pod keeps its claims' requests, and only its
placement changes. Deterministic: the same cluster and pod give the same moves.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Iterable, Sequence
from typing import Protocol

from dralloc.allocation import interruption
from dralloc.allocation.fragmentation import Amount, DeviceState, Measure, NodeState, Shape
from dralloc.allocation.pools import DeviceID
from dralloc.model import claims as model_claims
from dralloc.model import pods as model_pods
from dralloc.scheduling import batching, nodefit, placement

MOVABLE_ANNOTATION = "dralloc.io/movable"
CANDIDATES = 4  # nodes tried exactly per pod that fits nowhere


def _given_back(free: Sequence[Amount], amounts: Sequence[Amount], total: Sequence[Amount]) -> tuple[Amount, ...]:
    """A device's free amounts once a pod that took `amounts` of it is gone (never above its totals)."""
    return tuple(min(t, f + a) for f, a, t in zip(free, amounts, total, strict=True))


def movable(pod: model_pods.Pod | None) -> bool:
    """Whether the pod is marked movable (annotation `dralloc.io/movable: "true"`)."""
    return pod is not None and pod.metadata.annotations.get(MOVABLE_ANNOTATION) == "true"


@dataclasses.dataclass
class Placed:
    """A pod placed in the cluster as consolidation counts it (an `Entry`): what it asks for (its claims'
    specs, the pod as its controller re-creates it: no node) and where it is (its claims' allocations)."""

    item: placement.Item
    placement: placement.Placement | None


def placed_pod(pod: model_pods.Pod, claims: Sequence[model_claims.ResourceClaim]) -> Placed | None:
    """A bound pod that may be moved, as an `Entry`; None when it may not. Moving a pod in the operator is
    deleting it for its controller to re-create elsewhere, so it must be marked movable, be bound and not
    terminating, have a controller (an owner reference with `controller: true`: a bare pod would be
    lost), belong to no PodGroup (a gang moves whole or not at all), bind no volume, have no DRA extended
    resources (their claim is made for the node chosen), and hold only claims
    of its own (`claims`: one per entry of `spec.resourceClaims`, made from templates, allocated and
    reserved for it alone; a shared claim stays allocated when one of its pods goes)."""
    if not movable(pod) or not pod.spec.node_name or pod.metadata.deletion_timestamp:
        return None
    if not any(owner.controller for owner in pod.metadata.owner_references) or pod.spec.scheduling_group is not None:
        return None
    if not batching.self_contained(pod) or len(claims) != len(pod.spec.resource_claims):
        return None
    if "extendedResourceClaimStatus" in (pod.status.model_extra or {}):
        return None  # its DRA extended resources' claim is made for a node: what it would ask elsewhere is not known here
    uid = pod.metadata.uid
    results = []
    for claim in claims:
        allocation = claim.status.allocation
        if allocation is None or [r.uid for r in claim.status.reserved_for] != [uid]:
            return None
        results.append(allocation)
    asked = tuple(claim.model_copy(update={"status": model_claims.ResourceClaimStatus()}) for claim in claims)
    again = pod.model_copy(update={"spec": pod.spec.model_copy(update={"node_name": None})})
    name = f"{pod.metadata.namespace or 'default'}/{pod.metadata.name}"
    return Placed(placement.Item(name, claims=asked, pod=again),
                  placement.Placement(pod.spec.node_name, tuple(results),
                                      node_allocatable=pod.status.node_allocatable_resource_claim_statuses))


class Entry(Protocol):
    """A placed item as the caller records it (simulate's ItemResult)."""

    item: placement.Item
    placement: placement.Placement | None


@dataclasses.dataclass
class Stats:
    """What consolidation did: pods that fit nowhere it tried to place, how many of them got a place,
    and the moves that took (a pod moved twice counts twice)."""

    tried: int = 0
    placed: int = 0
    moves: int = 0


@dataclasses.dataclass(frozen=True)
class _Plan:
    moves: int
    moved_size: Amount
    index: int
    entries: tuple[Entry, ...]


@dataclasses.dataclass(frozen=True)
class _NodeSummary:
    """A node's movable pods by device position, what each device would have free with all of them gone,
    and the CPU and memory it would have left then."""

    by_position: dict[int, list[tuple[_Held, tuple[Amount, ...]]]]
    freeable: tuple[tuple[int, tuple[Amount, ...]], ...]
    bound: tuple[int, ...]


@dataclasses.dataclass(frozen=True)
class _Held:
    """What a movable placed pod holds on its node, as the model counts it: per device position, the
    amounts it took; its node resources; its device capacity (`Measure.size`)."""

    entry: Entry
    amounts: tuple[tuple[int, tuple[Amount, ...]], ...]
    resources: tuple[int, ...]
    size: Amount
    # (device signature, amounts) per device, and the resources: pods of one kind have room in the same places
    kind: tuple[tuple[tuple[int, tuple[Amount, ...]], ...], tuple[int, ...]]


class Consolidator:
    """Movable placed pods per node, and `make_room` for a pod that fits nowhere.

    `release_pod(item, placement)` gives the pod as `Placer.release` must see it (bound, with what its devices took
    of the node); `moved(entry, placement)` is told of every pod that moved (its new placement is already
    set on the entry and committed)."""

    def __init__(self, placer: placement.Placer, max_moves: int,
                 release_pod: Callable[[placement.Item, placement.Placement], model_pods.Pod | None],
                 moved: Callable[[Entry, placement.Placement], None], *, candidates: int = CANDIDATES) -> None:
        assert placer.model is not None, "consolidation ranks nodes with the fragmentation model"
        self.placer, self.max_moves, self.candidates = placer, max_moves, candidates
        self._release_pod, self._moved = release_pod, moved
        self.on_node: dict[int, list[_Held]] = {}
        self._positions: dict[int, dict[DeviceID, int]] = {}
        self._hopeless: dict[tuple[object, ...], int] = {}  # shape key -> `Placer.changes` when nothing worked
        self._versions: dict[int, int] = {}  # node index -> bumped when its movable pods change
        self._summaries: dict[int, tuple[tuple[int, int], _NodeSummary]] = {}
        # `_room_elsewhere`'s answers and free devices, for one `Placer.changes`
        self._rooms: tuple[int, dict[tuple[object, ...], frozenset[int]],
                           dict[int, list[tuple[tuple[Amount, ...], tuple[int, ...], frozenset[int]]]] | None] = (
            -1, {}, None)
        self.stats = Stats()

    def _shape(self, item: placement.Item) -> Shape | None:
        model = self.placer.model
        assert model is not None
        return model.shape(item.claims, nodefit.pod_requests(item.pod) if item.pod is not None else None)

    def placed(self, entry: Entry) -> None:
        """Record a placed item; only a movable pod with claims of its own, whose shape the model measures,
        can be moved later."""
        if entry.placement is None or not movable(entry.item.pod) or entry.item.allocated:
            return
        model = self.placer.model
        assert model is not None
        shape = self._shape(entry.item)
        index = self.placer.index.get(entry.placement.node)
        if shape is None or index is None:
            return
        positions = self._positions.get(index)
        if positions is None:
            positions = self._positions[index] = {
                device: p for p, ids in enumerate(model.device_ids[index]) for device in ids}
        signatures = model.device_signatures[index]
        amounts: list[tuple[int, tuple[Amount, ...]]] = []
        for result in (r for a in entry.placement.results for r in a.devices.results):
            position = positions.get(DeviceID(result.driver, result.pool, result.device))
            if position is None:
                return  # a device the model does not measure on this node: not moved
            sig = signatures[position]
            signature = model.measure.signatures[sig]
            taken = next((d.amounts[sig] for d in shape.devices if sig in d.amounts), None)
            if taken is None or not signature.shareable:
                taken = signature.totals
            amounts.append((position, tuple(taken)))
        kind = (tuple((signatures[position], taken) for position, taken in amounts), shape.resources)
        self.on_node.setdefault(index, []).append(
            _Held(entry, tuple(amounts), shape.resources, model.measure.size(shape), kind))
        self._versions[index] = self._versions.get(index, 0) + 1

    def _forget(self, entry: Entry) -> None:
        assert entry.placement is not None
        index = self.placer.index[entry.placement.node]
        self.on_node[index] = [held for held in self.on_node[index] if held.entry is not entry]
        self._versions[index] = self._versions.get(index, 0) + 1

    def _summary(self, index: int) -> _NodeSummary:
        """Node `index` as consolidation sees it (kept while its state and its movable pods are the same)."""
        model = self.placer.model
        assert model is not None
        stamp = (model.state_ids[index], self._versions.get(index, 0))
        cached = self._summaries.get(index)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        devices, left = model.state(index)
        by_position: dict[int, list[tuple[_Held, tuple[Amount, ...]]]] = {}
        for held in self.on_node.get(index, ()):
            for position, amounts in held.amounts:
                by_position.setdefault(position, []).append((held, amounts))
        freeable = []
        for position, (sig, free) in enumerate(devices):
            total = model.measure.signatures[sig].totals
            room = list(free)
            for _, amounts in by_position.get(position, ()):
                room = list(_given_back(room, amounts, total))
            freeable.append((sig, tuple(room)))
        bound = tuple(have + sum(h.resources[k] for h in self.on_node.get(index, ()))
                      for k, have in enumerate(left))
        summary = _NodeSummary(by_position, tuple(freeable), bound)
        self._summaries[index] = (stamp, summary)
        return summary

    def _plans(self, shape: Shape) -> list[_Plan]:
        """The nodes worth trying, each with the movable pods to move off it: per request, the devices it
        could use that need the fewest of those pods gone (then the least capacity), counting only pods
        another node has room for, all within `max_moves`; kept when the model says the pod then fits."""
        model = self.placer.model
        assert model is not None
        measure = model.measure
        plans: list[_Plan] = []
        can_move = self._room_elsewhere()
        for index, holders in self.on_node.items():
            if not holders:
                continue
            interruption.checkpoint()  # the operator's decision budget (a cluster of movable pods is large)
            summary = self._summary(index)
            # Even with every movable pod gone, would the node have room? (Most nodes: no.)
            if any(need > have for need, have in zip(shape.resources, summary.bound, strict=False)):
                continue
            if any(sum(1 for sig, room in summary.freeable
                       if (wanted := demand.amounts.get(sig)) is not None
                       and all(r >= w for r, w in zip(room, wanted, strict=True))) < demand.count
                   for demand in shape.devices):
                continue
            devices, left = model.state(index)
            by_position = summary.by_position
            chosen: dict[int, _Held] = {}
            possible = True
            for demand in shape.devices:
                costs: list[tuple[int, Amount, int, tuple[_Held, ...]]] = []
                for position, device in enumerate(devices):
                    wanted = demand.amounts.get(device[0])
                    if wanted is None:
                        continue
                    free = list(device[1])
                    total = measure.signatures[device[0]].totals
                    if all(f >= w for f, w in zip(free, wanted, strict=True)):
                        costs.append((0, 0, position, ()))
                        continue
                    room = summary.freeable[position][1]
                    if not all(r >= w for r, w in zip(room, wanted, strict=True)):
                        continue  # not even with every movable pod on it gone
                    here = [h for h, _ in by_position.get(position, ()) if can_move(index, h)]
                    best = self._fewest(here, position, free, total, wanted)
                    if best is not None:
                        costs.append((len(best), sum((h.size for h in best), 0), position, best))
                costs.sort(key=lambda c: c[:3])
                if len(costs) < demand.count:
                    possible = False
                    break
                for _, _, _, taken_here in costs[:demand.count]:
                    for held in taken_here:
                        chosen[id(held)] = held
            if not possible or not chosen or len(chosen) > self.max_moves:
                continue
            # Node resources: the chosen pods' come back; more movable pods only if that is not enough.
            resources = [have + sum(h.resources[k] for h in chosen.values()) for k, have in enumerate(left)]
            for held in sorted(holders, key=lambda h: (h.size, h.resources)):
                if all(have >= need for have, need in zip(resources, shape.resources, strict=False)):
                    break
                if id(held) not in chosen and len(chosen) < self.max_moves:
                    chosen[id(held)] = held
                    resources = [have + more for have, more in zip(resources, held.resources, strict=False)]
            hypothetical = self._without(devices, resources, chosen.values(), measure)
            if not measure.fits(hypothetical, shape):
                continue
            taken_all = tuple(sorted(chosen.values(), key=lambda h: (h.size, h.amounts)))
            plans.append(_Plan(len(taken_all), sum((h.size for h in taken_all), 0), index,
                               tuple(h.entry for h in taken_all)))
        plans.sort(key=lambda p: (p.moves, p.moved_size, p.index))
        return plans[:self.candidates]

    def _fewest(self, holders: Sequence[_Held], position: int, free: Sequence[Amount], total: Sequence[Amount],
                wanted: Sequence[Amount]) -> tuple[_Held, ...] | None:
        """The fewest of `holders` (then the least capacity) whose leaving gives device `position` room for
        `wanted`; None when no `max_moves` of them do."""
        ordered = sorted(holders, key=lambda h: (h.size, h.amounts))
        for count in range(1, min(len(ordered), self.max_moves) + 1):
            best: tuple[Amount, tuple[_Held, ...]] | None = None
            for combo in itertools.combinations(ordered, count):
                room = list(free)
                for held in combo:
                    amounts = next(a for p, a in held.amounts if p == position)
                    room = list(_given_back(room, amounts, total))
                if all(f >= w for f, w in zip(room, wanted, strict=True)):
                    size = sum((h.size for h in combo), 0)
                    if best is None or size < best[0]:
                        best = (size, combo)
            if best is not None:
                return best[1]
        return None

    def _room_elsewhere(self) -> Callable[[int, _Held], bool]:
        """Whether some node other than the pod's has room for it now, by the model: a device with its
        amounts free, and its CPU and memory left there. Moving any other pod could only fail. Answers
        are kept per kind of pod (device signatures, amounts, resources) while the cluster is unchanged."""
        model = self.placer.model
        assert model is not None
        if self._rooms[0] != self.placer.changes:
            self._rooms = (self.placer.changes, {}, None)
        _, known, _ = self._rooms

        def free_by_sig() -> dict[int, list[tuple[tuple[Amount, ...], tuple[int, ...], frozenset[int]]]]:
            # per signature: (free amounts, resources left, nodes), the most free first (first dimension)
            index_ = self._rooms[2]
            if index_ is None:
                grouped: dict[int, dict[tuple[tuple[Amount, ...], tuple[int, ...]], set[int]]] = {}
                for other in range(len(model.state_ids)):
                    devices, left = model.state(other)
                    for sig, free in devices:
                        if any(free):
                            grouped.setdefault(sig, {}).setdefault((free, left), set()).add(other)
                index_ = {sig: sorted(((free, left, frozenset(nodes)) for (free, left), nodes in entries.items()),
                                      key=lambda e: (-e[0][0], e[0], e[1]) if e[0] else (0, e[0], e[1]))
                          for sig, entries in grouped.items()}
                self._rooms = (self._rooms[0], known, index_)
            return index_

        def rooms(wanted: tuple[tuple[int, tuple[Amount, ...]], ...], resources: tuple[int, ...]) -> frozenset[int]:
            """Up to two nodes with room for a pod of this kind (two: one besides the pod's own)."""
            found: set[int] | None = None
            for sig, amounts in wanted:
                here: set[int] = set()
                for free, left, nodes in free_by_sig().get(sig, ()):
                    if amounts and free and free[0] < amounts[0]:
                        break  # sorted by the first dimension: no later entry has room
                    if (all(f >= a for f, a in zip(free, amounts, strict=True))
                            and all(h >= n for h, n in zip(left, resources, strict=False))):
                        here |= nodes
                found = here if found is None else found & here
                if not found:
                    return frozenset()
            return frozenset(sorted(found or ())[:2])

        def can_move(index: int, held: _Held) -> bool:
            nodes = known.get(held.kind)
            if nodes is None:
                nodes = known[held.kind] = rooms(held.kind[0], held.resources)
            return bool(nodes - {index})
        return can_move

    @staticmethod
    def _without(devices: tuple[DeviceState, ...], resources: list[int], gone: Iterable[_Held],
                 measure: Measure) -> NodeState:
        """The node's state with the `gone` pods' devices given back (`resources` already counts theirs)."""
        freed = list(devices)
        for held in gone:
            for position, amounts in held.amounts:
                sig, free = freed[position]
                total = measure.signatures[sig].totals
                freed[position] = (sig, _given_back(free, amounts, total))
        return tuple(freed), tuple(resources)

    def make_room(self, item: placement.Item) -> placement.Placement | None:
        """Place `item`, which fits nowhere as the cluster is, by moving at most `max_moves` movable pods of
        one node elsewhere; the placement (committed, the moves made) or None (the cluster as it was)."""
        found = self._search(item, keep=True)
        return found.placed if found is not None else None

    def plan_room(self, item: placement.Item) -> Room | None:
        """What `make_room` would do, found the same way and then undone: the placer is as it was (also
        when the caller's budget interrupts the search, `allocation.interruption`). The operator carries
        the moves out itself (the moved pods are removed and come back through their controller)."""
        return self._search(item, keep=False)

    def _search(self, item: placement.Item, *, keep: bool) -> Room | None:
        shape = self._shape(item)
        if shape is None:
            return None  # a shape the model cannot measure: no way to tell which node is worth trying
        self.stats.tried += 1
        key = shape.key()
        if self._hopeless.get(key) == self.placer.changes:
            return None  # tried for this shape on this very cluster (a run of alike pods that fit nowhere)
        for plan in self._plans(shape):
            found = self._try(item, plan, keep)
            if found is not None:
                self.stats.placed += 1
                return found
        self._hopeless[key] = self.placer.changes
        return None

    def _try(self, item: placement.Item, plan: _Plan, keep: bool) -> Room | None:
        placer = self.placer
        end = placer.begin_trial()
        released: list[Entry] = []
        again: list[tuple[Entry, placement.Placement]] = []
        placed_item: placement.Placement | None = None
        try:
            decision: placement.Placement | placement.NoPlacement | None = None
            for entry in plan.entries:
                assert entry.placement is not None
                placer.release(entry.placement.node, entry.placement.results,
                               self._release_pod(entry.item, entry.placement))
                released.append(entry)
                decision = placer.place(item, explain=False)
                if isinstance(decision, placement.Placement):
                    break
            if not isinstance(decision, placement.Placement):
                self._undo(released, again, None, end)
                return None
            with interruption.interrupt_when(_never):
                placer.commit(item, decision)
            placed_item = decision
            sizes = {id(e): self._shape(e.item) for e in released}
            model = placer.model
            assert model is not None
            ordered = sorted(released,
                             key=lambda e: -(model.measure.size(s) if (s := sizes[id(e)]) is not None else 0))
            for entry in ordered:
                placed = placer.place(entry.item, explain=False)
                if not isinstance(placed, placement.Placement):
                    self._undo(released, again, (item, placed_item) if placed_item is not None else None, end)
                    return None
                with interruption.interrupt_when(_never):
                    placer.commit(entry.item, placed)
                again.append((entry, placed))
        except interruption.Interrupted:
            self._undo(released, again, (item, placed_item) if placed_item is not None else None, end)
            raise
        room = Room(placed_item, tuple(again))
        if not keep:
            self._undo(released, again, (item, placed_item) if placed_item is not None else None, end)
            return room
        # The moves stand. The trial's failure stamps stay (the release epochs of the trial): what failed
        # before it is forgotten, which is right, since pods left nodes.
        for entry, placed in again:
            self._forget(entry)
            entry.placement = placed
            self.placed(entry)
            self.stats.moves += 1
            self._moved(entry, placed)
        return room

    def _undo(self, released: list[Entry], again: list[tuple[Entry, placement.Placement]],
              made: tuple[placement.Item, placement.Placement] | None, end: Callable[[], None]) -> None:
        """Everything a trial did, undone in reverse (never interrupted): the pods placed again leave, the
        item leaves, the released pods come back where they were; then the trial ends."""
        placer = self.placer
        with interruption.interrupt_when(_never):
            for done_entry, done in reversed(again):
                placer.release(done.node, done.results, self._release_pod(done_entry.item, done))
            if made is not None:
                placer.release(made[1].node, made[1].results, self._release_pod(*made))
            for entry in reversed(released):
                assert entry.placement is not None
                placer.commit(entry.item, entry.placement)
            end()


def _never() -> bool:
    return False


@dataclasses.dataclass(frozen=True)
class Room:
    """Room made for a pod: its placement, and each moved pod with the placement found for it elsewhere."""

    placed: placement.Placement
    moves: tuple[tuple[Entry, placement.Placement], ...]
