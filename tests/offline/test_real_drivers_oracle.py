"""Real drivers' claims on real drivers' clusters: dralloc answers as upstream's allocator (v0.37.2) does.

290 cases (tests/offline/real_drivers_cases.py): every claim file of the shared real-drivers set
(the NVIDIA, DRANET, Intel and dra-example-driver demo specs, and CEL probes: IP/CIDR, sets,
optional chaining, format, strings.quote, two-variable comprehensions, type errors, ...) on every
cluster it targets (GB200 on OKE, p4d with EFA on EKS, GB300 on AKS, MIG A100, dra-example-driver
with partitions and shared GPUs), all claims of a file together on the cluster's node. Upstream's
answers were recorded with the oracle (`python -m tests.offline.real_drivers_cases`); the
comparison is the differential judge's (tests/differential/judging.py): the same devices, config
and node selector, or both unschedulable, or both an error. Only deliberate differences pass.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from tests.differential import judging, running
from tests.offline import real_drivers_cases

CASES = real_drivers_cases.cases()
ANSWERS: dict[str, dict[str, Any]] = json.loads(real_drivers_cases.ANSWERS.read_text())
# Claim files dralloc does not answer as upstream yet, with the reason (docs/cel.md lists them).
NOT_YET: dict[str, str] = {}


def _param(case: dict[str, Any]) -> Any:
    reason = next((why for suffix, why in NOT_YET.items() if case["name"].endswith(suffix)), None)
    marks = [pytest.mark.xfail(reason=reason, strict=True)] if reason else []
    return pytest.param(case, id=case["name"], marks=marks)


def test_every_case_has_an_upstream_answer() -> None:
    """The recorded answers cover exactly the cases (re-record after changing the data)."""
    assert sorted(ANSWERS) == sorted(c["name"] for c in CASES)


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_dralloc_answers_as_upstream(case: dict[str, Any]) -> None:
    theirs = ANSWERS[case["name"]]
    ours = running.answer(case, release="1.37")
    verdict = judging.judge(case, ours, theirs, None, previous=False)
    assert verdict is None or verdict.deliberate, (
        f"{verdict.label}: {verdict.detail}\n dralloc: {ours['status']} {ours.get('message', '')[:300]}"
        f"\n upstream: {theirs['status']} {theirs.get('message', '')[:300]}")
