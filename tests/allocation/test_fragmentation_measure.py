"""allocation/fragmentation.py on its own: the expected fragmentation of node states, by hand.

One signature: a shareable GPU with a `compute` capacity of 1000. Node states are
(devices, (cpu, memory) left); shapes ask for shares or whole GPUs and CPU/memory.
The numbers are in milli-GPUs times shape weights (the unit is 1000: a whole GPU).
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from dralloc.allocation.fragmentation import DeviceDemand, Measure, NodeState, Shape, Signature

GPU = Signature((1000,), shareable=True)


def share(milli: int, count: int = 1) -> DeviceDemand:
    return DeviceDemand(count, {0: (milli,)})


def shape(demand: DeviceDemand, cpu: int = 1, memory: int = 1) -> Shape:
    return Shape((demand,), (cpu, memory))


def state(*free: int, cpu: int = 10, memory: int = 10) -> tuple[tuple[tuple[int, tuple[int]], ...], tuple[int, int]]:
    return tuple((0, (f,)) for f in free), (cpu, memory)


def test_fragmentation_counts_what_each_shape_cannot_use() -> None:
    """Two GPUs, 300 and 1000 free. A whole-GPU shape (weight 2) cannot use the 300: 2 x 300; a
    500 share (weight 1) cannot use it either: 1 x 300; a 200 share can use both: 0."""
    measure = Measure([GPU], [(shape(share(1000)), 2), (shape(share(500)), 1), (shape(share(200)), 5)])
    assert measure.fragmentation(state(300, 1000)) == 2 * 300 + 1 * 300


def test_a_shape_that_does_not_fit_loses_all_free_capacity() -> None:
    """A 2-GPU shape on a node with one whole GPU free, or with too little CPU left: all free counts."""
    measure = Measure([GPU], [(shape(share(1000, count=2), cpu=4), 1)])
    assert measure.fragmentation(state(1000, 400)) == 1400
    assert measure.fragmentation(state(1000, 1000, cpu=3)) == 2000
    assert measure.fragmentation(state(1000, 1000, cpu=4)) == 0


def test_choose_completes_the_partly_used_gpu() -> None:
    """A 400 share with GPUs at 1000 and 400 free: taking the 400 leaves a whole GPU for the whole
    shapes (growth -400: the 400 that was unusable for them is gone); taking the whole one would
    leave 600 + 400 unusable for them (growth +600)."""
    measure = Measure([GPU], [(shape(share(1000)), 1), (shape(share(400)), 1)])
    assert measure.choose(state(1000, 400), shape(share(400))) == (-400, (1,))


def test_choose_says_none_when_the_shape_cannot_fit() -> None:
    measure = Measure([GPU], [(shape(share(1000)), 1)])
    assert measure.choose(state(300, 300), shape(share(400))) is None
    assert measure.choose(state(1000, cpu=0), shape(share(400))) is None


def test_equal_choices_take_the_earliest_device() -> None:
    measure = Measure([GPU], [(shape(share(1000)), 1)])
    assert measure.choose(state(1000, 1000, 1000), shape(share(1000, count=2))) == (0, (0, 1))


def test_rank_breaks_equal_growths_of_a_cpu_only_request_by_the_free_gpus() -> None:
    """A CPU-only request (no devices) grows nothing on a node with a whole GPU free and plenty of
    CPU, nor on one whose GPUs are used up: the key after the growth is the node's free GPU
    capacity, so the used-up node comes first (its CPU strands no GPU)."""
    measure = Measure([GPU], [(shape(share(1000)), 1)])
    cpu_only = Shape((), (2, 2))
    assert measure.rank(state(1000), cpu_only) == ((0, 1000, 0), ())
    assert measure.rank(state(0, 0), cpu_only) == ((0, 0, 0), ())
    assert measure.rank(state(0, 0), cpu_only) < measure.rank(state(1000), cpu_only)  # type: ignore[operator]


def test_rank_breaks_equal_growths_of_a_gpu_request_by_cpu_per_free_gpu() -> None:
    """The workload asks for 4 CPU per whole GPU (balance 4/1000 per milli-GPU). A whole GPU with
    2 CPU grows nothing on either 2-GPU node (one whole GPU and enough CPU stay for the shape):
    the node left with 8 CPU for its free GPU (4 from the balance) comes before the one left
    with 18 (14 from it); a node left without free GPUs comes before both."""
    measure = Measure([GPU], [(shape(share(1000), cpu=4), 1)])
    assert measure.balance() == Fraction(4, 1000)
    request = shape(share(1000), cpu=2)
    assert measure.rank(state(1000, 1000, cpu=10), request) == ((0, 0.004, Fraction(4, 1000), 0), (0,))
    assert measure.rank(state(1000, 1000, cpu=20), request) == ((0, 0.014, Fraction(14, 1000), 0), (0,))
    assert measure.rank(state(1000, cpu=10), request) == ((0, -1, -1, 0), (0,))


def test_rank_puts_the_growth_first() -> None:
    """The tie-break only orders growths in one step: completing the 400 (growth -400, in steps
    of 4 % of the 400 share times the weights, 32: -12.5, rounded up to -12) ranks first; the
    exact growth is the last key."""
    measure = Measure([GPU], [(shape(share(1000)), 1), (shape(share(400)), 1)])
    assert measure.rank(state(1000, 400), shape(share(400)))[0][0] == -12  # type: ignore[index]
    assert measure.rank(state(1000, 400), shape(share(400)))[0][-1] == -400  # type: ignore[index]
    assert measure.rank(state(1000, 400), shape(share(400)))[1] == (1,)  # type: ignore[index]
    assert measure.rank(state(300, 300), shape(share(400))) is None


def test_rank_orders_distances_exactly_where_their_floats_are_equal() -> None:
    """CPU left per free GPU of 10^14 and 10^14 + 0.002 milli-GPU round to one float; the
    exact distance in the key still puts the nearer one first."""
    measure = Measure([GPU], [(shape(share(1000), cpu=4), 1)])
    request = shape(share(1000), cpu=2)
    near = measure.rank(state(1000, 1000, cpu=10**17 + 2), request)
    far = measure.rank(state(1000, 1000, cpu=10**17 + 4), request)
    assert near is not None and far is not None
    assert near[0][1] == far[0][1]  # the floats alone would tie
    assert near < far


# ---- near-ties: the growth compared in steps (issue 34) ----------------------------------------

def policy_order(measure: Measure, request: Shape, states: dict[str, NodeState]) -> list[str]:
    """The names of the nodes the request fits, in the policy's order: key, then name."""
    ranked = {name: measure.rank(s, request) for name, s in states.items()}
    keys = {name: r[0] for name, r in ranked.items() if r is not None}
    return sorted(keys, key=lambda name: (keys[name], name))


# Whole GPUs with 4 CPU, shares of 300 and of 80 (weights 6, 3, 1): a 400 share on a GPU with 450
# free (50 left, which no shape uses) grows the expected fragmentation 100 less than on one with
# 500 free (100 left, which the 80 share uses): 0.6 of a step (4 % of 400 times the weights, 160).
NEAR = Measure([GPU], [(shape(share(1000), cpu=4), 6), (shape(share(300), cpu=1), 3), (shape(share(80), cpu=1), 1)])
# The same with weights 1, 8, 1: the 100 left on the second GPU costs 350 more, 2.2 steps.
FAR = Measure([GPU], [(shape(share(1000), cpu=4), 1), (shape(share(300), cpu=1), 8), (shape(share(80), cpu=1), 1)])
# Whole GPUs with 4 CPU (weight 25), shares of 80 with 20 CPU (weight 1): a whole GPU taking the
# last GPU of a node with 10 CPU grows -1000 (the 80 share could not use it for CPU), of one with
# 30 CPU 0: one step (4 % of a GPU times 26, 1040), both nodes left without free GPUs.
CPU_BOUND = Measure([GPU], [(shape(share(1000), cpu=4), 25), (shape(share(80), cpu=20), 1)])
# Whole GPUs and 810 shares with 8 CPU (weights 50, 45), 160 shares with 1 (weight 5).
SMALL = Measure([GPU], [(shape(share(1000), cpu=8), 50), (shape(share(810), cpu=8), 45),
                        (shape(share(160), cpu=1), 5)])


@pytest.mark.parametrize(("measure", "request_", "states", "expected"), [
    pytest.param(NEAR, shape(share(400), cpu=1), {"a": state(450, 1000, cpu=10), "b": state(500, 1000, cpu=6)},
                 ["b", "a"], id="within a step, CPU per free GPU decides: b grows 100 more, keeps 5 CPU per GPU"),
    pytest.param(NEAR, shape(share(400), cpu=1), {"a": state(450, 1000, cpu=40), "b": state(500, 1000, cpu=10)},
                 ["b", "a"], id="within a step, a grows less but keeps 39 CPU for its GPU"),
    pytest.param(FAR, shape(share(400), cpu=1), {"a": state(450, 1000, cpu=10), "b": state(500, 1000, cpu=6)},
                 ["a", "b"], id="beyond a step, the growth decides whatever the CPU"),
    pytest.param(CPU_BOUND, shape(share(1000), cpu=1), {"a": state(1000, cpu=30), "b": state(1000, cpu=10)},
                 ["b", "a"], id="within a step and equal tie-breaks, the exact growth decides before the name"),
    pytest.param(SMALL, shape(share(160), cpu=1), {"a": state(290, 0, cpu=4), "b": state(410, 0, cpu=10)},
                 ["b", "a"], id="a small share's step is small: 6.5 milli-GPUs apart is beyond its 6.4"),
    pytest.param(SMALL, shape(share(160), cpu=1), {"a": state(190, 0, cpu=1), "b": state(410, 0, cpu=10)},
                 ["a", "b"], id="a small share within its step: a grows 1.5 milli-GPUs more, uses up its CPU"),
])
def test_near_ties_break_by_the_tie_breaks_and_the_growth_decides_beyond_a_step(
        measure: Measure, request_: Shape, states: dict[str, NodeState], expected: list[str]) -> None:
    assert policy_order(measure, request_, states) == expected


def test_the_near_ties_of_a_small_share_are_not_those_of_a_whole_gpu() -> None:
    """In SMALL, a 160 share on 290 free and on 410 free grow 650 apart (-14550 and -15200, 6.5
    milli-GPUs of expected fragmentation): one step of a whole GPU (40 milli-GPUs, 4000) would
    merge them and the CPU tie-break would pick the 290; the share's own step (6.4, 640) keeps
    them apart."""
    request = shape(share(160), cpu=1)
    a, b = SMALL.rank(state(290, 0, cpu=4), request), SMALL.rank(state(410, 0, cpu=10), request)
    assert a is not None and b is not None
    assert (a[0][-1], b[0][-1]) == (-14550, -15200)
    assert -(14550 // 4000) == -(15200 // 4000)  # rounded up to a whole GPU's steps: one step
    assert (a[0][0], b[0][0]) == (-22, -23)
    assert a[0][1] < b[0][1]  # the tie-break prefers the 290


@pytest.mark.parametrize(("request_", "milli"), [
    pytest.param(shape(share(1000)), 40, id="a whole GPU: 40 milli-GPUs"),
    pytest.param(shape(share(160)), Fraction(32, 5), id="a share of 160: 6.4"),
    pytest.param(shape(share(1000, count=8)), 320, id="8 GPUs: 320"),
    pytest.param(Shape((), (1, 1)), 40, id="no devices: as a whole GPU"),
])
def test_the_step_is_4_percent_of_what_the_request_takes(request_: Shape, milli: Fraction) -> None:
    """In milli-GPUs of expected fragmentation; the growths are times the total weight (5)."""
    measure = Measure([GPU], [(shape(share(1000)), 3), (shape(share(500)), 2)])
    assert measure.step(request_) == milli * 5


def domain_state(*free: tuple[str, int], cpu: int = 10) -> tuple[tuple[tuple[int, tuple[int]], ...], tuple[int, int]]:
    """GPUs by domain: signature 0 lives in domain "a", signature 1 in "b" (both GPUs of 1000)."""
    return tuple((0 if domain == "a" else 1, (f,)) for domain, f in free), (cpu, 10)


def in_one_domain(milli: int, count: int) -> DeviceDemand:
    return DeviceDemand(count, {0: (milli,), 1: (milli,)}, {0: "a", 1: "b"})


def test_a_request_in_one_domain_cannot_use_domains_too_small_for_it() -> None:
    """Three whole GPUs in one domain: with 2 free in a and 2 in b the node cannot take them (all
    4000 is lost to the shape); with 3 in b, b serves it and a's single GPU cannot (1000)."""
    measure = Measure([GPU, GPU], [(shape(in_one_domain(1000, 3)), 1)])
    assert measure.fragmentation(domain_state(("a", 1000), ("a", 1000), ("b", 1000), ("b", 1000))) == 4000
    assert measure.fragmentation(domain_state(("a", 1000), ("b", 1000), ("b", 1000), ("b", 1000))) == 1000
    assert measure.choose(domain_state(("a", 1000), ("a", 1000), ("b", 1000), ("b", 1000)),
                          shape(in_one_domain(1000, 3))) is None


def test_choose_keeps_a_request_in_the_domain_of_its_first_device() -> None:
    """Two 400 shares in one domain (weight 2) beside whole GPUs of either domain (weight 1). a: 400
    and 1000 free, b: 1000 and 1000. The first share takes a's whole GPU (1000 lost, the least;
    taking a's 400 would leave a unable to host the pair: 2000). The second must stay in a: a's 400
    (1800); b's first GPU would have been less (1600) but splits the request across domains."""
    whole = DeviceDemand(1, {0: (1000,), 1: (1000,)})
    measure = Measure([GPU, GPU], [(shape(whole), 1), (shape(in_one_domain(400, 2)), 2)])
    state = domain_state(("a", 400), ("a", 1000), ("b", 1000), ("b", 1000))
    choice = measure.choose(state, shape(in_one_domain(400, 2)))
    assert choice is not None and choice[1] == (1, 0)


def test_one_request_takes_distinct_devices_and_the_next_may_share_one() -> None:
    """Two shares of 300 in one request take two GPUs (the allocator never gives one request a
    device twice), though one GPU has room for both; a second request of the shape may then
    take the GPU the first one used."""
    measure = Measure([GPU], [(shape(share(300, count=2)), 1)])
    choice = measure.choose(state(1000, 1000), shape(share(300, count=2)))
    assert choice is not None and sorted(choice[1]) == [0, 1]
    two_requests = Shape((share(300), share(300)), (1, 1))
    choice = measure.choose(state(1000, 1000), two_requests)
    assert choice is not None and choice[1] == (0, 0)
