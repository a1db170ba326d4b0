"""allocation/fragmentation.py against its definition, written out naively here.

The measure keeps per-device vectors, sums them per node, takes a dot product with the
weights whose CPU and memory fit, and shares device steps between shapes: all to be
fast on a cluster of thousands of alike GPUs. This reference computes the module
docstring's definitions directly, shape by shape and device by device, with Fractions;
hypothesis draws signatures (shareable or not, totals that do or do not divide the
unit), workloads (several requests per shape, counts above one) and node states, and
the measure must agree exactly: the fragmentation, the greedy choice and its growth,
also for shapes the workload did not announce and for requests whose devices must share a
topology domain (a device serves such a request only in a domain with room for all of it).
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

from dralloc.allocation.fragmentation import UNRANKED, DeviceDemand, Measure, NodeState, Shape, Signature


def _share(signatures: list[Signature], unit: int, device: tuple[int, tuple[int, ...]]) -> Fraction:
    totals = signatures[device[0]].totals
    return min(Fraction(f) / t for f, t in zip(device[1], totals, strict=True)) * unit


def _usable(device: tuple[int, tuple[int, ...]], demand: DeviceDemand) -> bool:
    amounts = demand.amounts.get(device[0])
    return amounts is not None and all(f >= a for f, a in zip(device[1], amounts, strict=True))


def _hosting(devices: Sequence[tuple[int, tuple[int, ...]]], demand: DeviceDemand,
             excluded: Sequence[int] = ()) -> set[object] | None:
    """The domains with enough devices for the demand (None: a demand without domains)."""
    if demand.domains is None:
        return None
    count: dict[object, int] = {}
    for position, device in enumerate(devices):
        if position not in excluded and _usable(device, demand):
            count[demand.domains[device[0]]] = count.get(demand.domains[device[0]], 0) + 1
    return {domain for domain, n in count.items() if n >= demand.count}


def _serves(device: tuple[int, tuple[int, ...]], demand: DeviceDemand, hosting: set[object] | None) -> bool:
    return _usable(device, demand) and (hosting is None or demand.domains[device[0]] in hosting)  # type: ignore[index]


def _fits(state: NodeState, shape: Shape) -> bool:
    if any(n > h for n, h in zip(shape.resources, state[1], strict=True)):
        return False
    for demand in shape.devices:
        hosting = _hosting(state[0], demand)
        if hosting is not None and not hosting:
            return False
        if sum(_usable(d, demand) for d in state[0]) < demand.count:
            return False
    return True


def reference_fragmentation(signatures: list[Signature], unit: int, shapes: list[tuple[Shape, int]],
                            state: NodeState) -> Fraction:
    total = Fraction(0)
    for shape, weight in shapes:
        if not shape.devices or weight <= 0:
            continue
        shares = [_share(signatures, unit, d) for d in state[0]]
        if not _fits(state, shape):
            total += weight * sum(shares, Fraction(0))
        else:
            hosting = [_hosting(state[0], demand) for demand in shape.devices]
            total += weight * sum((s for s, d in zip(shares, state[0], strict=True)
                                   if not any(_serves(d, demand, h) for demand, h in zip(shape.devices, hosting,
                                                                                         strict=True))), Fraction(0))
    return total


def reference_choose(signatures: list[Signature], unit: int, shapes: list[tuple[Shape, int]], state: NodeState,
                     shape: Shape) -> tuple[Fraction, tuple[int, ...]] | None:
    if not _fits(state, shape):
        return None
    before = reference_fragmentation(signatures, unit, shapes, state)
    devices = list(state[0])
    resources = tuple(h - n for h, n in zip(state[1], shape.resources, strict=True))
    taken: list[int] = []
    for demand in shape.devices:
        excluded = [p for p in taken if not signatures[devices[p][0]].shareable]
        hosting = _hosting(devices, demand, excluded)
        mine: list[int] = []  # one request never takes a device twice
        for _ in range(demand.count):
            best = None
            for position, device in enumerate(devices):
                if not _usable(device, demand) or position in mine or (
                        position in taken and not signatures[device[0]].shareable):
                    continue
                if hosting is not None and demand.domains[device[0]] not in hosting:  # type: ignore[index]
                    continue
                after = devices.copy()
                after[position] = (device[0], tuple(f - a for f, a in zip(device[1], demand.amounts[device[0]],
                                                                          strict=True)))
                value = reference_fragmentation(signatures, unit, shapes, (tuple(after), resources))
                if best is None or value < best[0]:
                    best = (value, position, after)
            if best is None:
                return Fraction(UNRANKED), ()
            if hosting is not None:
                hosting = {demand.domains[devices[best[1]][0]]}  # type: ignore[index]
            devices = best[2]
            taken.append(best[1])
            mine.append(best[1])
    return reference_fragmentation(signatures, unit, shapes, (tuple(devices), resources)) - before, tuple(taken)


@st.composite
def worlds(draw: st.DrawFn) -> tuple[list[Signature], list[tuple[Shape, int]], list[NodeState], list[Shape]]:
    signatures = [Signature((draw(st.sampled_from([1, 3, 4, 10])),), shareable=True),
                  Signature((1,), shareable=False),
                  Signature((draw(st.sampled_from([4, 6])), 8), shareable=True)]

    def demand() -> DeviceDemand:
        amounts: dict[int, tuple[int, ...]] = {}
        if draw(st.booleans()):
            amounts[0] = (draw(st.integers(1, signatures[0].totals[0])),)  # type: ignore[arg-type]
        if draw(st.booleans()):
            amounts[1] = (draw(st.integers(0, 1)),)  # 0: only to show taken devices are not retaken
        if draw(st.booleans()):
            amounts[2] = (draw(st.integers(1, 4)), draw(st.integers(0, 8)))
        domains = {sig: draw(st.sampled_from("ab")) for sig in amounts} if draw(st.booleans()) else None
        return DeviceDemand(draw(st.integers(1, 3)), amounts, domains)

    def shape() -> Shape:
        return Shape(tuple(demand() for _ in range(draw(st.integers(0, 2)))),
                     (draw(st.integers(0, 4)), draw(st.integers(0, 4))))

    workload = [(shape(), draw(st.integers(0, 3))) for _ in range(draw(st.integers(1, 5)))]  # weight 0: not measured

    def device() -> tuple[int, tuple[int, ...]]:
        sig = draw(st.integers(0, 2))
        return sig, tuple(draw(st.integers(0, int(t))) for t in signatures[sig].totals)

    states = [(tuple(device() for _ in range(draw(st.integers(0, 7)))), (draw(st.integers(0, 5)), draw(st.integers(0, 5))))
              for _ in range(draw(st.integers(1, 4)))]
    asked = [s for s, _ in workload] + [shape() for _ in range(2)]  # two the workload did not announce
    return signatures, workload, states, asked


@settings(max_examples=500, deadline=None)
@given(worlds())
def test_property_measure_matches_its_definition(world: tuple[list[Signature], list[tuple[Shape, int]],
                                                              list[NodeState], list[Shape]]) -> None:
    signatures, workload, states, asked = world
    measure = Measure(signatures, workload)
    unit = measure.unit
    for state in states:
        assert measure.fragmentation(state) == reference_fragmentation(signatures, unit, workload, state)
        for shape in asked:
            assert measure.choose(state, shape) == reference_choose(signatures, unit, workload, state, shape)
    # Asked again (memoized now), in another order: the same answers.
    for state in reversed(states):
        for shape in reversed(asked):
            assert measure.choose(state, shape) == reference_choose(signatures, unit, workload, state, shape)
