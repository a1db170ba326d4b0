"""Fragmentation-aware placement (FGD): the choice that wastes the least of what is left.

Weng et al., "Beware of Fragmentation" (USENIX ATC '23): a node's free device capacity is
*fragmented* for a request shape when that shape cannot use it — the whole free capacity
when the shape does not fit the node at all (too few usable devices, or too little CPU or
memory left: stranding), otherwise the free capacity of the devices that cannot serve one
of its devices (a GPU with 200 milli left, for a share of 460; a partly used GPU, for a
whole one; a GPU of another model, for a shape that selects a model). The node's expected
fragmentation weighs every shape of the workload by how often it occurs. For each
candidate node and device choice, the policy computes how much that expected
fragmentation grows and picks the least; ties break by node name, then device order.

This module is the measure only: pure, exact (Fractions), no I/O. It sees the cluster
as the scheduling layer describes it — per node the devices in the allocator's order,
each as a signature (which shapes may use it, its capacities) and what is free of it,
plus the node resources left — and the workload as `Shape`s with weights. The
allocator still decides whether a choice is valid: the policy only orders nodes and
states which devices to try first.

Devices are measured in units of one device: a device's free share is the least, over
its capacities, of free / declared (1 for an untouched device without capacities, 0 for
one in use). A request asks, per device signature it may use, for amounts of each
capacity (what the allocator would consume, request policies applied); a device that
cannot be shared takes all of its one unit.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from fractions import Fraction

ZERO = Fraction(0)
ONE = Fraction(1)


@dataclasses.dataclass(frozen=True)
class Signature:
    """What the policy knows of a device kind: the totals of its dimensions (capacities, or one unit)."""

    totals: tuple[Fraction, ...]
    shareable: bool


@dataclasses.dataclass(frozen=True)
class DeviceDemand:
    """One request: `count` devices, each of a signature in `amounts` (what it takes of each dimension)."""

    count: int
    amounts: Mapping[int, tuple[Fraction, ...]]  # signature id -> amount per dimension

    def key(self) -> tuple[object, ...]:
        return (self.count, tuple(sorted(self.amounts.items())))


@dataclasses.dataclass(frozen=True)
class Shape:
    """A request shape of the workload: its device requests and the node resources it needs."""

    devices: tuple[DeviceDemand, ...]
    resources: tuple[int, ...]  # aligned with the model's resource names (nano-units)

    def key(self) -> tuple[object, ...]:
        return (tuple(d.key() for d in self.devices), self.resources)


# A device's state: (signature id, free amount per dimension). A node's: its devices in the
# allocator's order and the resources left.
DeviceState = tuple[int, tuple[Fraction, ...]]
NodeState = tuple[tuple[DeviceState, ...], tuple[int, ...]]


class Measure:
    """Expected fragmentation of node states for one weighted set of shapes, memoized per state."""

    def __init__(self, signatures: Sequence[Signature], shapes: Sequence[tuple[Shape, int]]) -> None:
        self.signatures = list(signatures)
        merged: dict[tuple[object, ...], list[object]] = {}
        for shape, weight in shapes:
            if weight <= 0 or not shape.devices:
                continue  # a shape without devices cannot be left without devices by a choice
            entry = merged.setdefault(shape.key(), [shape, 0])
            entry[1] = int(entry[1]) + weight  # type: ignore[call-overload]
        # Sorted by key: the sum is exact anyway, the order only keeps runs reproducible.
        self.shapes: list[tuple[Shape, int]] = [(s, w) for s, w in (tuple(v) for k, v in sorted(  # type: ignore[misc]
            merged.items(), key=lambda kv: repr(kv[0])))]
        self.total_weight = sum(w for _, w in self.shapes)
        self._memo: dict[NodeState, Fraction] = {}

    def share(self, device: DeviceState) -> Fraction:
        """The free part of one device, in device units."""
        signature = self.signatures[device[0]]
        if not signature.totals:
            return ZERO
        return min(free / total for free, total in zip(device[1], signature.totals, strict=True))

    @staticmethod
    def usable(device: DeviceState, demand: DeviceDemand) -> bool:
        amounts = demand.amounts.get(device[0])
        return amounts is not None and all(f >= a for f, a in zip(device[1], amounts, strict=True))

    def fits(self, state: NodeState, shape: Shape) -> bool:
        """A necessary condition for the shape to fit the node (each request on its own)."""
        if any(need > left for need, left in zip(shape.resources, state[1], strict=True)):
            return False
        for demand in shape.devices:
            usable = 0
            for device in state[0]:
                if self.usable(device, demand):
                    usable += 1
                    if usable >= demand.count:
                        break
            else:
                return False
        return True

    def fragmentation(self, state: NodeState) -> Fraction:
        """The node's expected fragmentation (device units, times the total weight: kept integral)."""
        known = self._memo.get(state)
        if known is not None:
            return known
        devices = state[0]
        shares = [self.share(d) for d in devices]
        free = sum(shares, ZERO)
        total = ZERO
        if free:
            for shape, weight in self.shapes:
                if not self.fits(state, shape):
                    total += weight * free
                    continue
                unusable = ZERO
                for device, share in zip(devices, shares, strict=True):
                    if share and not any(self.usable(device, d) for d in shape.devices):
                        unusable += share
                total += weight * unusable
        self._memo[state] = total
        return total

    @staticmethod
    def take(device: DeviceState, amounts: tuple[Fraction, ...]) -> DeviceState:
        return device[0], tuple(f - a for f, a in zip(device[1], amounts, strict=True))

    def choose(self, state: NodeState, shape: Shape) -> tuple[Fraction, tuple[int, ...]] | None:
        """(growth of the expected fragmentation, device positions in the order to take them),
        or None when the shape cannot fit the node.

        Devices are taken one at a time, request by request, each time the one whose taking
        leaves the least expected fragmentation (ties: the earliest position): greedy, as FGD.
        """
        if not self.fits(state, shape):
            return None
        before = self.fragmentation(state)
        devices = list(state[0])
        resources = tuple(left - need for left, need in zip(state[1], shape.resources, strict=True))
        taken: list[int] = []
        for demand in shape.devices:
            for _ in range(demand.count):
                best: tuple[Fraction, int] | None = None
                seen: set[DeviceState] = set()
                for position, device in enumerate(devices):
                    if device in seen or not self.usable(device, demand) or (
                            position in taken and not self.signatures[device[0]].shareable):
                        continue
                    seen.add(device)  # equal devices give equal results: the earliest stands for all
                    after = devices.copy()
                    after[position] = self.take(device, demand.amounts[device[0]])
                    value = self.fragmentation((tuple(after), resources))
                    if best is None or value < best[0]:
                        best = (value, position)
                if best is None:
                    return None  # two requests competing for the same devices
                position = best[1]
                devices[position] = self.take(devices[position], demand.amounts[devices[position][0]])
                taken.append(position)
        after_all = self.fragmentation((tuple(devices), resources))
        return after_all - before, tuple(taken)
