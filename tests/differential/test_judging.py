"""The differential judge's rules on hand-made answers, and the generator's determinism.

No oracle is needed: upstream's answers are written out here, and the rules that would
ask upstream again (pinning, the incubating channel, the previous release) get no
oracles and stay silent.
"""

from __future__ import annotations

import copy
from typing import Any

from tests.differential import generating, judging, running, shrinking

CASE: dict[str, Any] = {
    "name": "t", "features": ["DRAConsumableCapacity"], "node": {"name": "node-1"},
    "objects": {
        "deviceClasses": [{"metadata": {"name": "c"}, "spec": {}}],
        "resourceSlices": [{"metadata": {"name": "s"}, "spec": {
            "driver": "a.example.com", "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
            "nodeName": "node-1", "devices": [
                {"name": "d0", "attributes": {"numa": {"int": 0}}, "allowMultipleAllocations": True},
                {"name": "d1", "attributes": {"numa": {"int": 0}}},
                {"name": "d2", "attributes": {"numa": {"int": 1}}}]}}],
        "allocatedClaims": [],
        "claims": [{"metadata": {"name": "x", "namespace": "default"}, "spec": {"devices": {
            "requests": [{"name": "r", "exactly": {"deviceClassName": "c", "allocationMode": "ExactCount",
                                                   "count": 2}}],
            "constraints": [{"distinctAttribute": "a.example.com/numa"}]}}}],
    },
}


def allocated(*devices: str, share: str | None = None) -> dict[str, Any]:
    results = [{"request": "r", "driver": "a.example.com", "pool": "p", "device": d,
                **({"shareID": share} if share and d == "d0" else {})} for d in devices]
    return {"status": "allocated", "message": "", "claims": [
        {"namespace": "default", "name": "x", "allocation": {"devices": {"results": results}}}]}


def test_same_answers_are_no_difference() -> None:
    assert judging.judge(CASE, allocated("d1", "d2"), allocated("d1", "d2"), None) is None
    assert judging.judge(CASE, {"status": "error", "message": "a"}, {"status": "error", "message": "b"}, None) is None


def test_share_id_values_only_are_deliberate() -> None:
    verdict = judging.judge(CASE, allocated("d0", "d2", share="u1"), allocated("d0", "d2", share="u2"), None)
    assert verdict is not None and verdict.deliberate == "share IDs"


def test_upstream_breaking_distinct_attribute_is_deliberate() -> None:
    ours = {"status": "unschedulable", "message": "", "claims": []}
    verdict = judging.judge(CASE, ours, allocated("d0", "d1"), None)  # both numa 0
    assert verdict is not None and verdict.deliberate == "distinctAttribute across all devices"


def test_upstream_timeout_against_does_not_fit_is_the_counting_bound() -> None:
    ours = {"status": "unschedulable", "message": "", "claims": []}
    verdict = judging.judge(CASE, ours, {"status": "timeout", "message": "", "claims": []}, None)
    assert verdict is not None and verdict.deliberate == "counting bound"


def test_other_devices_are_a_difference() -> None:
    verdict = judging.judge(CASE, allocated("d1", "d2"), allocated("d0", "d2"), None)
    assert verdict is not None and verdict.label == "devices differ" and verdict.deliberate is None


def test_list_attributes_with_the_gate_off_are_known_a() -> None:
    case = copy.deepcopy(CASE)
    case["objects"]["resourceSlices"][0]["spec"]["devices"][2]["attributes"]["tags"] = {"strings": ["x"]}
    theirs = {"status": "error", "claims": [],
              "message": "class c: selector #0: CEL runtime error: attribute tags: unsupported attribute value"}
    verdict = judging.judge(case, allocated("d1", "d2"), theirs, None)
    assert verdict is not None and verdict.known == judging.KNOWN_A


def test_cases_depend_only_on_the_seed() -> None:
    assert generating.case(12345) == generating.case(12345)
    assert generating.case(12345) != generating.case(12346)


def test_shrinking_keeps_what_the_predicate_needs() -> None:
    def needs_d2(case: dict[str, Any]) -> bool:
        return any(d["name"] == "d2" for s in case["objects"]["resourceSlices"] for d in s["spec"].get("devices", []))

    small, checks = shrinking.shrink(CASE, needs_d2)
    devices = [d["name"] for s in small["objects"]["resourceSlices"] for d in s["spec"]["devices"]]
    assert devices == ["d2"] and checks > 0
    assert running.answer(small)["status"] in ("allocated", "unschedulable", "error")
