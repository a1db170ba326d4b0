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
