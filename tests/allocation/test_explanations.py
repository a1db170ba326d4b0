"""Explanations: counts per request's class, and what rules out every combination when each request
has enough devices on its own (a constraint, a counter set, competing requests, or "cannot tell which").

Each case is one node's devices and claims that do not fit there; the table gives, per reported
reason ("claim/request"), the exact message, and which reasons are reported at all.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import pytest
from tests.builders import (
    DRIVER,
    ClaimBuilder,
    SliceBuilder,
    claim,
    class_,
    device,
    node,
    result,
    slice_,
    snapshot,
)

from dralloc import allocation
from dralloc.allocation import explaining, outcomes
from dralloc.allocation.features import Features

GPU = class_("gpu", f'device.driver == "{DRIVER}"')
NIC = class_("nic", 'device.driver == "nic.example.com"')
NUMA = f"{DRIVER}/numa"
MODEL = f"{DRIVER}/model"
POOL = f"{DRIVER}/pool-1"
ENOUGH = "enough devices individually, but "


def gpus(*attrs: tuple[int, str]) -> SliceBuilder:
    """gpu-0, gpu-1, ... with (numa, model)."""
    return slice_("s1", devices=[device(f"gpu-{i}").attr("numa", n).attr("model", m) for i, (n, m) in enumerate(attrs)])


def nics(count: int) -> SliceBuilder:
    return slice_("nics", driver="nic.example.com", pool="nics", devices=[device(f"nic-{i}") for i in range(count)])


def partitions(sets: dict[str, int], parts: dict[str, dict[str, int]]) -> list[SliceBuilder]:
    """A pool with counter sets (name -> memory in Gi) and partitions consuming from them (set -> Gi)."""
    devices = []
    for name, uses in parts.items():
        part = device(name)
        for set_name, gi in uses.items():
            part = part.consumes(set_name, {"memory": f"{gi}Gi"})
        devices.append(part)
    return [slice_("s-counters", slice_count=2, counters={n: {"memory": f"{gi}Gi"} for n, gi in sets.items()}),
            slice_("s-parts", slice_count=2, devices=devices)]


@dataclasses.dataclass(frozen=True)
class Case:
    claims: Sequence[ClaimBuilder]
    slices: Sequence[SliceBuilder]
    messages: dict[str, str]  # "claim/request" -> message, for exactly the reasons reported
    culprits: tuple[str, ...] = ()  # the kinds of culprit named
    allocated: Sequence[ClaimBuilder] = ()


CASES: dict[str, Case] = {
    "counts-only-devices-of-the-class-and-names-it": Case(
        claims=[claim("c").request("r", "gpu", count=2)],
        slices=[gpus((0, "x")), nics(5)],
        messages={"c/r": "claim default/c, request r: 1 of 1 devices of class gpu usable, 2 needed"},
    ),
    "removed-devices-are-of-the-class": Case(
        claims=[claim("c").request("r", "gpu", count=2, selectors=[f'device.attributes["{DRIVER}"].model == "x"'])],
        slices=[gpus((0, "x"), (0, "x"), (0, "y")), nics(5)],
        allocated=[claim("old").request("r", "gpu").allocated(result("r", "gpu-0"))],
        messages={"c/r": "claim default/c, request r: 1 of 3 devices of class gpu usable, 2 needed "
                         "(removed: 1 request selector, 1 in use)"},
    ),
    "match-attribute-is-named": Case(
        claims=[claim("c").request("r", "gpu", count=2).constraint_match(NUMA)],
        slices=[gpus((0, "x"), (1, "x"))],
        messages={"c/r": "claim default/c, request r: 2 of 2 devices of class gpu usable, 2 needed; " + ENOUGH
                         + f"matchAttribute {NUMA} (claim default/c, constraint #0) rules out every combination: "
                         "without it the claims fit"},
        culprits=("constraint",),
    ),
    "distinct-attribute-is-named-with-its-requests-only": Case(
        claims=[claim("c").request("a", "gpu").request("b", "gpu").request("n", "nic")
                .constraint_distinct(MODEL, "a", "b")],
        slices=[gpus((0, "x"), (1, "x")), nics(1)],
        messages={
            "c/a": "claim default/c, request a: 2 of 2 devices of class gpu usable, 1 needed; " + ENOUGH
                   + f"distinctAttribute {MODEL} over requests a, b (claim default/c, constraint #0) rules out "
                   "every combination: without it the claims fit",
            "c/b": "claim default/c, request b: 2 of 2 devices of class gpu usable, 1 needed; " + ENOUGH
                   + f"distinctAttribute {MODEL} over requests a, b (claim default/c, constraint #0) rules out "
                   "every combination: without it the claims fit",
        },
        culprits=("constraint",),
    ),
    "either-of-two-constraints": Case(
        claims=[claim("c").request("a", "gpu").request("b", "gpu").constraint_match(NUMA).constraint_match(MODEL)],
        slices=[gpus((0, "x"), (0, "y"), (1, "x"))],
        messages={f"c/{r}": f"claim default/c, request {r}: 3 of 3 devices of class gpu usable, 1 needed; " + ENOUGH
                  + "each of these rules out every combination (relaxing any one of them, the claims fit): "
                  f"matchAttribute {NUMA} (claim default/c, constraint #0); "
                  f"matchAttribute {MODEL} (claim default/c, constraint #1)" for r in ("a", "b")},
        culprits=("constraint", "constraint"),
    ),
    "two-constraints-only-together-cannot-tell": Case(
        claims=[claim("c").request("a", "gpu").request("b", "gpu").constraint_match(NUMA).constraint_match(MODEL)],
        slices=[gpus((0, "x"), (1, "y"))],
        messages={f"c/{r}": f"claim default/c, request {r}: 2 of 2 devices of class gpu usable, 1 needed; "
                  "enough devices individually; constraints, counters or the other requests rule out every "
                  "combination, cannot tell which" for r in ("a", "b")},
    ),
    "counter-set-is-named": Case(
        claims=[claim("c").request("r", "gpu", count=2)],
        slices=partitions({"gpu-0": 10, "gpu-1": 10}, {"p0": {"gpu-0": 6}, "p1": {"gpu-0": 6}}),
        messages={"c/r": "claim default/c, request r: 2 of 2 devices of class gpu usable, 2 needed; " + ENOUGH
                         + f"counter set gpu-0 of pool {POOL} runs out: with more of it the claims fit"},
        culprits=("counter-set",),
    ),
    "counter-set-used-up-by-an-allocated-sibling": Case(
        # The sibling partition is blocked by the counters the allocated one holds: counted as such
        # per device (issue 17), not as usable with "enough devices individually".
        claims=[claim("c").request("r", "gpu")],
        slices=partitions({"gpu-0": 8}, {"p0": {"gpu-0": 8}, "p1": {"gpu-0": 8}}),
        allocated=[claim("old").request("r", "gpu").allocated(result("r", "p0"))],
        messages={"c/r": "claim default/c, request r: 0 of 2 devices of class gpu usable, 1 needed "
                         "(removed: 1 in use, 1 counters used up)"},
    ),
    "counters-of-two-sets-together": Case(
        claims=[claim("c").request("r", "gpu", count=2)],
        slices=partitions({"a": 10, "b": 10}, {"p0": {"a": 6, "b": 6}, "p1": {"a": 6, "b": 6}}),
        messages={"c/r": "claim default/c, request r: 2 of 2 devices of class gpu usable, 2 needed; " + ENOUGH
                         + "the shared counters run out (no single counter set is to blame): with unlimited "
                         "counters the claims fit"},
        culprits=("counters",),
    ),
    "competing-requests-of-one-claim": Case(
        claims=[claim("c").request("a", "gpu", count=2).request("b", "gpu", count=2).request("n", "nic")],
        slices=[gpus((0, "x"), (0, "x"), (0, "x")), nics(1)],
        messages={f"c/{r}": f"claim default/c, request {r}: 3 of 3 devices of class gpu usable, 2 needed; " + ENOUGH
                  + "requests a and b of claim default/c compete for the same devices: they "
                  "cannot all be satisfied together, even without constraints and counters" for r in ("a", "b")},
        culprits=("requests",),
    ),
    "competing-claims": Case(
        claims=[claim("c1").request("r", "gpu", count=2), claim("c2").request("r", "nic"),
                claim("c3").request("r", "gpu", count=2)],
        slices=[gpus((0, "x"), (0, "x"), (0, "x")), nics(1)],
        messages={f"{c}/r": f"claim default/{c}, request r: 3 of 3 devices of class gpu usable, 2 needed; " + ENOUGH
                  + "request r of claim default/c1 and request r of claim default/c3 compete for the same devices: they "
                  "cannot all be satisfied together, even without constraints and counters" for c in ("c1", "c3")},
        culprits=("requests",),
    ),
    "competition-wins-over-a-constraint-that-is-not-needed": Case(
        claims=[claim("c").request("a", "gpu", count=2).request("b", "gpu", count=2).constraint_match(MODEL)],
        slices=[gpus((0, "x"), (0, "x"), (1, "x"))],
        messages={f"c/{r}": f"claim default/c, request {r}: 3 of 3 devices of class gpu usable, 2 needed; " + ENOUGH
                  + "requests a and b of claim default/c compete for the same devices: they "
                  "cannot all be satisfied together, even without constraints and counters" for r in ("a", "b")},
        culprits=("requests",),
    ),
}


def _run(case: Case, budget: int | None = allocation.DEFAULT_BUDGET) -> outcomes.Outcome:
    snap = snapshot(classes=[GPU, NIC], slices=case.slices, allocated=case.allocated)
    return allocation.allocate(snap, [c.build() for c in case.claims], node(), features=Features(), budget=budget)


@pytest.mark.parametrize("name", list(CASES))
def test_explanation(name: str) -> None:
    case = CASES[name]
    outcome = _run(case)
    assert isinstance(outcome, outcomes.Unsatisfiable), outcome
    got = {f"{r.claim.split('/', 1)[1]}/{r.request}": r.message() for r in outcome.reasons}
    assert got == case.messages
    kinds = {tuple(c.kind for c in r.culprits) for r in outcome.reasons}
    assert kinds == {case.culprits}


@pytest.mark.parametrize("name", list(CASES))
def test_explanation_is_deterministic_and_leaves_no_state(name: str) -> None:
    """Explaining twice gives the same reasons; the relaxed searches leave nothing behind."""
    case = CASES[name]
    assert _run(case) == _run(case)


def test_devices_consuming_counters_with_partitionable_devices_off_are_counted_in_words() -> None:
    """With DRAPartitionableDevices off a device that consumes counters is no candidate; the count reads as
    devices ("2 consuming counters ..."), not as "2 counters" (issue 32)."""
    snap = snapshot(classes=[GPU, NIC], slices=partitions({"gpu-0": 10}, {"p0": {"gpu-0": 5}, "p1": {"gpu-0": 5}}))
    outcome = allocation.allocate(snap, [claim("c").request("r", "gpu").build()], node(),
                                  features=dataclasses.replace(Features(), partitionable_devices=False))
    assert isinstance(outcome, outcomes.Unsatisfiable), outcome
    assert [r.message() for r in outcome.reasons] == [
        "claim default/c, request r: 0 of 2 devices of class gpu usable, 1 needed "
        "(removed: 2 consuming counters (DRAPartitionableDevices off))"]
    assert [r.message(usage=False) for r in outcome.reasons] == [
        "claim default/c, request r: 1 needed of the 2 devices of class gpu, too few are usable "
        "(ruled out: consuming counters (DRAPartitionableDevices off))"]


def test_extra_searches_out_of_steps_say_they_cannot_tell(monkeypatch: pytest.MonkeyPatch) -> None:
    """When the extra searches run out of their steps, the note says it cannot tell which instead of
    guessing, and no culprit is named."""
    monkeypatch.setattr(explaining, "EXPLAIN_STEPS", 1)
    outcome = _run(CASES["match-attribute-is-named"], budget=None)
    assert isinstance(outcome, outcomes.Unsatisfiable), outcome
    assert [(r.note, r.culprits) for r in outcome.reasons] == [(
        "enough devices individually; constraints, counters or the other requests rule out every combination, "
        "cannot tell which", ())]


def test_extra_searches_get_at_most_the_calls_budget() -> None:
    """A call with a small budget gives its explanation no more than that (counting bound aside)."""
    trials = explaining._Trials(search=None, plans=[], budget=5)  # type: ignore[arg-type]
    assert trials.budget == 5
    assert explaining._Trials(search=None, plans=[], budget=None).budget == explaining.EXPLAIN_STEPS  # type: ignore[arg-type]


# ---- what an explanation costs: its extra searches share one budget and are guided --------------


def tight_competition() -> Case:
    """31 GPUs, 8 in use; four requests need 31 of the 23 usable. Leaving one out leaves a tight fit (every
    usable device taken, each by the one request whose selectors allow it) that plain first-fit hunts for
    through thousands of combinations: before issue 31 two of the four extra searches ran out of steps."""
    models = ["a"] * 7 + ["b"] * 8 + ["c"] * 8 + ["d"] * 8
    model = f'device.attributes["{DRIVER}"].model'
    return Case(
        claims=[claim("c").request("r0", "gpu", count=8)
                .request("r1", "gpu", count=8, selectors=[f'{model} in ["a", "b"]'])
                .request("r2", "gpu", count=7, selectors=[f'{model} == "a"'])
                .request("r3", "gpu", count=8, selectors=[f'{model} in ["a", "b", "c"]'])],
        slices=[slice_("s1", devices=[device(f"gpu-{i}").attr("model", m) for i, m in enumerate(models)])],
        allocated=[claim(f"old-{i}").request("r", "gpu").allocated(result("r", f"gpu-{23 + i}")) for i in range(8)],
        messages={},
    )


class _CountingSearch(explaining.Search):
    """The explanation's Search, recording the steps of every extra search."""

    steps_taken: list[int] = []

    def run(self) -> bool:
        try:
            return super().run()
        finally:
            _CountingSearch.steps_taken.append(self.steps)


def _extra_searches(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    _CountingSearch.steps_taken = []
    monkeypatch.setattr(explaining, "Search", _CountingSearch)
    return _CountingSearch.steps_taken


def test_a_tight_fit_the_counting_bound_matched_is_found_in_a_few_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each extra search tries first the devices the bound matched to each request: the competing requests
    are named with every extra search under 40 steps (the fit has 23 devices)."""
    steps = _extra_searches(monkeypatch)
    outcome = _run(tight_competition())
    assert isinstance(outcome, outcomes.Unsatisfiable)
    assert {c.text for r in outcome.reasons for c in r.culprits} == {
        "requests r0, r1 and r3 of claim default/c compete for the same devices: they cannot all be satisfied "
        "together, even without constraints and counters"}
    assert steps and max(steps) < 40


def test_without_the_matching_the_same_case_runs_out_of_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    """The case is hard for plain first-fit: unguided, an extra search runs out of 20,000 steps."""
    steps = _extra_searches(monkeypatch)
    monkeypatch.setattr(explaining, "EXPLAIN_TOTAL_STEPS", 10**9)
    monkeypatch.setattr(explaining, "_guided", lambda variant, scope, picks: (variant, scope))
    _run(tight_competition())
    assert max(steps) >= explaining.EXPLAIN_STEPS


def test_the_extra_searches_of_one_explanation_share_one_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """However many relaxations an explanation tries, their searches together take at most
    EXPLAIN_TOTAL_STEPS (each may overshoot by the step that found it out). Past it a relaxation counts as
    unknown: a request whose removal could not be tried stays among the competing ones, which still do not fit
    together (a culprit, perhaps not the smallest, never a wrong one)."""
    steps = _extra_searches(monkeypatch)
    monkeypatch.setattr(explaining, "EXPLAIN_TOTAL_STEPS", 30)
    monkeypatch.setattr(explaining, "_guided", lambda variant, scope, picks: (variant, scope))
    outcome = _run(tight_competition())
    assert isinstance(outcome, outcomes.Unsatisfiable)
    assert sum(steps) <= 30 + len(steps)
    assert {c.names for r in outcome.reasons for c in r.culprits} == {("default/c/r0", "default/c/r1", "default/c/r3")}


@pytest.mark.parametrize("name", list(CASES))
def test_the_guided_order_changes_no_explanation(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The matched devices first only make the extra searches shorter: every table case is explained the same
    without them."""
    guided = _run(CASES[name])
    monkeypatch.setattr(explaining, "_guided", lambda variant, scope, picks: (variant, scope))
    assert _run(CASES[name]) == guided
