"""allocation/fragmentation.py against its definition, written out naively here.

The measure keeps per-device vectors, sums them per node, takes a dot product with the
weights whose CPU and memory fit, and shares device steps between shapes: all to be
fast on a cluster of thousands of alike GPUs. This reference computes the module
docstring's definitions directly, shape by shape and device by device, with Fractions;
hypothesis draws signatures (shareable or not, totals that do or do not divide the
unit), workloads (several requests per shape, counts above one) and node states, and
the measure must agree exactly: the fragmentation, the greedy choice and its growth,
also for shapes the workload did not announce.
"""

from __future__ import annotations

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


def _fits(state: NodeState, shape: Shape) -> bool:
    if any(n > h for n, h in zip(shape.resources, state[1], strict=True)):
        return False
    return all(sum(_usable(d, demand) for d in state[0]) >= demand.count for demand in shape.devices)


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
            total += weight * sum((s for s, d in zip(shares, state[0], strict=True)
                                   if not any(_usable(d, demand) for demand in shape.devices)), Fraction(0))
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
        for _ in range(demand.count):
            best = None
            for position, device in enumerate(devices):
                if not _usable(device, demand) or (position in taken and not signatures[device[0]].shareable):
                    continue
                after = devices.copy()
                after[position] = (device[0], tuple(f - a for f, a in zip(device[1], demand.amounts[device[0]],
                                                                          strict=True)))
                value = reference_fragmentation(signatures, unit, shapes, (tuple(after), resources))
                if best is None or value < best[0]:
                    best = (value, position, after)
            if best is None:
                return Fraction(UNRANKED), ()
            devices = best[2]
            taken.append(best[1])
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
        return DeviceDemand(draw(st.integers(1, 3)), amounts)

    def shape() -> Shape:
        return Shape(tuple(demand() for _ in range(draw(st.integers(0, 2)))),
                     (draw(st.integers(0, 4)), draw(st.integers(0, 4))))

    workload = [(shape(), draw(st.integers(0, 3))) for _ in range(draw(st.integers(1, 5)))]

    def device() -> tuple[int, tuple[int, ...]]:
        sig = draw(st.integers(0, 2))
        return sig, tuple(draw(st.integers(0, int(t))) for t in signatures[sig].totals)

    states = [(tuple(device() for _ in range(draw(st.integers(0, 5)))), (draw(st.integers(0, 5)), draw(st.integers(0, 5))))
              for _ in range(draw(st.integers(1, 4)))]
    asked = [s for s, _ in workload] + [shape() for _ in range(2)]  # two the workload did not announce
    return signatures, workload, states, asked


@settings(max_examples=300, deadline=None)
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
