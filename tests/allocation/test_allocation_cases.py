"""The named allocation cases of cases.py, one test id per case name."""

from __future__ import annotations

import pytest
from tests.allocation.cases import CASES, Allocates, Case, DoesNotFit, Raises, RunsOutOfBudget
from tests.builders import built, snapshot

from dralloc import allocation
from dralloc.allocation import outcomes


def run(case: Case) -> outcomes.Outcome:
    snap = snapshot(classes=case.classes, slices=case.slices, allocated=case.allocated,
                    features=case.features, extra_taints=case.extra_taints)
    return allocation.allocate(snap, [built(c) for c in case.claims], case.node,
                               features=case.features, budget=case.budget)


def _picks(result: object) -> list[tuple[str, str]]:
    entries = result.devices.results  # type: ignore[attr-defined]
    return [(r.request, r.device) for r in entries]


def _expected_picks(picks: tuple[tuple[str, str], ...], actual: object) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """Compare `pool/device` where the case names a pool, else the device name alone."""
    entries = actual.devices.results  # type: ignore[attr-defined]
    got = [(r.request, f"{r.pool}/{r.device}" if "/" in want else r.device)
           for r, (_, want) in zip(entries, picks, strict=False)]
    got += [(r.request, r.device) for r in entries[len(picks):]]
    return list(picks), got


def _reason_key(reason: outcomes.RequestReason) -> str:
    return f"{reason.claim.split('/', 1)[1]}/{reason.request}"


@pytest.mark.parametrize("case", list(CASES.values()), ids=list(CASES))
def test_allocation_case(case: Case) -> None:
    """The allocator answers the case as its name says."""
    check(case)


def check(case: Case) -> None:
    """Run `case` and assert its `expect` (and `max_steps`, `check`); for other case tables too."""
    expect = case.expect
    if isinstance(expect, Raises):
        with pytest.raises(expect.error) as info:
            run(case)
        assert expect.phrase in str(info.value)
        return
    outcome = run(case)
    if isinstance(expect, RunsOutOfBudget):
        assert isinstance(outcome, outcomes.BudgetExhausted), outcome
        assert outcome.steps > (case.budget or 0)
    elif isinstance(expect, DoesNotFit):
        assert isinstance(outcome, outcomes.Unsatisfiable), outcome
        reasons = {_reason_key(r): r for r in outcome.reasons}
        for key, removed in (expect.removed or {}).items():
            assert dict((c, n) for c, n in reasons[key].removed if n) == dict(removed), reasons[key]
        for key, candidates in (expect.candidates or {}).items():
            assert reasons[key].candidates == candidates, reasons[key]
        for key, devices in (expect.devices or {}).items():
            assert reasons[key].devices == devices, reasons[key]
    else:
        assert isinstance(expect, Allocates)
        assert isinstance(outcome, outcomes.Allocated), outcome
        assert len(outcome.results) == len(expect.claims)
        for picks, actual in zip(expect.claims, outcome.results, strict=True):
            wanted, got = _expected_picks(picks, actual)
            assert got == wanted
    if case.max_steps is not None:
        assert outcome.steps <= case.max_steps
    if case.check is not None:
        case.check(outcome, lambda: run(case))
