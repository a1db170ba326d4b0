"""Does an oracle outcome reproduce a vector's `expect` block?

The comparison rules are the vectors' (tests/conformance/README.md, via
tests/conformance/vectors.py): results as multisets, any share ID for `<generated>`,
quantities by value, config in order, node selectors ignoring order; `exact: false`
vectors need the same shape only; an expected error is a substring of the message.
"""

from __future__ import annotations

from typing import Any

from tests.conformance import vectors


def difference(expect: dict[str, Any], outcome: dict[str, Any], *, strict: bool = False) -> str | None:
    """None when `outcome` reproduces `expect`, else what differs (one line).

    `strict` compares `exact: false` vectors' devices exactly too.
    """
    status = outcome["status"]
    if "error" in expect:
        if status != "error":
            return f"expected error {expect['error']!r}, got {status}: {_summary(outcome)}"
        if expect["error"] not in outcome["message"]:
            return f"expected error {expect['error']!r}, got error {outcome['message']!r}"
        if "failedOnNode" in expect and bool(outcome.get("failedOnNode")) != expect["failedOnNode"]:
            return f"expected failedOnNode {expect['failedOnNode']}, got {bool(outcome.get('failedOnNode'))}"
        return None
    if expect.get("unschedulable"):
        return None if status == "unschedulable" else f"expected unschedulable, got {status}: {_summary(outcome)}"
    if status != "allocated":
        return f"expected an allocation, got {status}: {_summary(outcome)}"
    wanted = expect.get("results") or []
    got = outcome["claims"]
    if [w["claim"] for w in wanted] != [g["name"] for g in got]:
        return f"claims differ: {[w['claim'] for w in wanted]} vs {[g['name'] for g in got]}"
    exact = strict or expect.get("exact", True)
    for w, g in zip(wanted, got, strict=True):
        compare = vectors.same_allocation if exact else vectors.same_shape
        problem = compare(g["allocation"], w["allocation"])
        if problem is not None:
            return f"claim {w['claim']}: " + " ".join(problem.split())
    return None


def _summary(outcome: dict[str, Any]) -> str:
    if outcome["status"] == "allocated":
        return "; ".join(f"{c['name']}: " + ", ".join(f"{r['request']}={r['pool']}/{r['device']}"
                                                     for r in c["allocation"]["devices"]["results"])
                         for c in outcome["claims"])
    return str(outcome.get("message", ""))
