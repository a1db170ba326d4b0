"""The walk for one claim with one plain request (`Search.run_plain`) answers exactly as the recursion does.

Placement calls the allocator mostly for such claims, so the walk answers them without the
recursion (issue 31). It must give the same outcome, the same devices, the same step count
(metrics and budget messages show it), the same reasons and the same errors, whatever the budget:
each case runs once with the walk and once with it switched off.
"""

from __future__ import annotations

from typing import Any
from unittest import mock

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.builders import DRIVER, claim, class_, device, node, result, slice_, snapshot
from tests.strategies import clusters

from dralloc import allocation
from dralloc.allocation import errors, outcomes
from dralloc.allocation.features import Features
from dralloc.allocation.search import Search

SETTINGS = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])

SELECTORS = (
    f'device.attributes["{DRIVER}"].model == "x"',
    f'device.attributes["{DRIVER}"].numa > 0',
    # A runtime error on the devices without `zone`: the first one the search meets names it.
    f'device.attributes["{DRIVER}"].zone == "z1"',
)


def _answer(snap: Any, claims: list[Any], features: Features, budget: int | None, explain: bool) -> Any:
    try:
        outcome = allocation.allocate(snap, claims, node(), features=features, budget=budget, explain=explain)
    except errors.AllocationInputError as exc:
        return type(exc), str(exc)
    if isinstance(outcome, outcomes.Allocated):
        return "allocated", outcome.steps, [r.model_dump() for r in outcome.results]
    if isinstance(outcome, outcomes.Unsatisfiable):
        return "unsatisfiable", outcome.steps, outcome.reasons
    assert isinstance(outcome, outcomes.BudgetExhausted)
    return "budget", outcome.steps


def _both(snap: Any, claims: list[Any], features: Features, budget: int | None, explain: bool) -> Any:
    walked = _answer(snap, claims, features, budget, explain)
    with mock.patch.object(Search, "run_plain", return_value=None):
        recursed = _answer(snap, claims, features, budget, explain)
    assert walked == recursed
    return walked


@st.composite
def plain_cases(draw: st.DrawFn) -> tuple[Any, list[Any], Features, int | None, bool]:
    names = [f"gpu-{i}" for i in range(draw(st.integers(1, 12)))]
    published = []
    for name in names:
        built = device(name).attr("model", draw(st.sampled_from("xy"))).attr("numa", draw(st.integers(0, 2)))
        if draw(st.booleans()):
            built = built.attr("zone", draw(st.sampled_from(["z1", "z2"])))
        if draw(st.integers(0, 5)) == 0:
            built = built.taint("k1", None, draw(st.sampled_from(["NoSchedule", "NoExecute", "None"])))
        if draw(st.integers(0, 7)) == 0:
            built = built.shared()
        if draw(st.integers(0, 7)) == 0:
            built = built.capacity("memory", "40Gi", default="10Gi")
        published.append(built)
    held = draw(st.lists(st.sampled_from(names), unique=True, max_size=len(names)))
    allocated = [claim("holder").request("r", "gpu").allocated(*(result("r", name) for name in held))] if held else []
    request: dict[str, Any] = {"count": draw(st.integers(1, 10)),
                               "selectors": draw(st.lists(st.sampled_from(SELECTORS), max_size=2))}
    if draw(st.integers(0, 3)) == 0:
        request["tolerations"] = [{"key": "k1", "operator": "Exists"}]
    wanted = claim("c", uid="uid-c").request("r", "gpu", **request)
    features = draw(st.sampled_from([Features(), Features(consumable_capacity=False), Features(release="1.36"),
                                     Features(release="1.38"), Features(device_taints=False)]))
    gpu = class_("gpu", draw(st.sampled_from([None, f'device.driver == "{DRIVER}"', SELECTORS[1]])))
    snap = snapshot(classes=[gpu], slices=[slice_("s1", devices=published)], allocated=allocated, features=features)
    budget = draw(st.sampled_from([None, None, 1_000_000, 3, 6, 13, 64, 200, 300]))
    return snap, [wanted.build()], features, budget, draw(st.booleans())


@SETTINGS
@given(plain_cases())
def test_the_walk_answers_as_the_recursion(case: tuple[Any, list[Any], Features, int | None, bool]) -> None:
    _both(*case)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(max_claims=1))
def test_the_walk_answers_as_the_recursion_on_random_clusters(cluster: Any) -> None:
    """The general strategy's clusters: pools of several slices, subrequests, admin access, constraints."""
    snap = snapshot(classes=cluster.classes, slices=cluster.slices, allocated=cluster.allocated,
                    features=cluster.features)
    _both(snap, [c.build() for c in cluster.claims], cluster.features, None, True)


def test_the_walk_takes_the_first_usable_devices_in_count_plus_three_steps() -> None:
    gpus = [device(f"gpu-{i}").attr("model", "xy"[i % 2]) for i in range(6)]
    snap = snapshot(classes=[class_("gpu")], slices=[slice_("s1", devices=gpus)],
                    allocated=[claim("holder").request("r", "gpu").allocated(result("r", "gpu-0"))])
    wanted = claim("c").request("r", "gpu", count=2, selectors=[f'device.attributes["{DRIVER}"].model == "x"'])
    answer = _both(snap, [wanted.build()], Features(), None, True)
    assert answer[0] == "allocated" and answer[1] == 5
    assert [r["device"] for r in answer[2][0]["devices"]["results"]] == ["gpu-2", "gpu-4"]


def test_the_walk_fails_in_as_many_steps_as_there_are_subsets() -> None:
    gpus = [device(f"gpu-{i}") for i in range(5)]
    snap = snapshot(classes=[class_("gpu")], slices=[slice_("s1", devices=gpus)])
    answer = _both(snap, [claim("c").request("r", "gpu", count=6).build()], Features(), None, False)
    assert answer[:2] == ("unsatisfiable", 32)
