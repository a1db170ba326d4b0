"""dralloc's CEL environment answers as upstream's (Kubernetes 1.37 and 1.38, the allocator's
stored expressions environment), case by case.

upstream_1_37.json holds selectors over the IP/CIDR, URLs, Format, sets, optional, strings (format,
strings.quote), lists-extension and two-variable-comprehension libraries, type errors the
checker reports at compile time, and runtime errors, each with the answer upstream's
allocator v0.37.2 gave for it on the file's device (true / false / the compile or runtime
error message), and the answer of v0.38.0-beta.0, recorded by refresh_upstream_cases.py from
the oracles. Here each is
compiled and evaluated by dralloc, on both engines, and must give the same answer.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dralloc.cel import devices, selectors
from dralloc.model.quantities import Quantity

_DATA = json.loads(Path(__file__).with_name("upstream_1_37.json").read_text())

# Differences we know of and leave (docs/cel.md, "Not reproduced"): strict xfail, so that a
# fix shows up.
KNOWN_DIFFERENCES = {
    "1.all(x, true)": "known difference (docs/cel.md): dralloc's parser reads `1.` as the number 1.0, "
                      "upstream's as the integer 1 followed by `.all`, so the two report different errors",
    '{"a": 1}.filter(k, v, true)': "known difference (docs/cel.md): both refuse a three-argument filter; "
                                   "upstream words it as undeclared references, dralloc as a macro error",
    "lists.range(999999).size() > 0": "known difference (docs/cel.md): dralloc's cost limit counts list "
                                      "elements, not every operation, so a selector upstream cancels near "
                                      "the limit can still finish in dralloc",
}


def _device(*, lazy: bool = False) -> devices.DeviceEnv:
    device = _DATA["device"]
    return devices.device_env(driver=device["driver"], attributes=device["attributes"],
                              capacity={k: Quantity.parse(v) for k, v in device["capacity"].items()},
                              allow_multiple_allocations=False, lazy=lazy)


def _answer(compile_selector: Any, expression: str, env: devices.DeviceEnv, **options: Any) -> str:
    try:
        return "true" if compile_selector(expression, **options).evaluate(env) else "false"
    except selectors.CELCompileError as exc:
        return f"compile: {exc}"
    except selectors.CELRuntimeError as exc:
        return f"runtime: {exc}"


def _params() -> list[Any]:
    params = []
    for case in _DATA["cases"]:
        expression = case["expression"]
        marks = ([pytest.mark.xfail(reason=KNOWN_DIFFERENCES[expression], strict=True)]
                 if expression in KNOWN_DIFFERENCES else [])
        params.append(pytest.param(expression, case["upstream"], marks=marks, id=expression[:80]))
    return params


@pytest.mark.parametrize(("expression", "upstream"), _params())
def test_same_answer_as_upstream(expression: str, upstream: str) -> None:
    """The fast path (when there is one) and the celpy program both answer as upstream did."""
    env = _device()
    assert _answer(selectors.compile_selector, expression, env) == upstream
    assert _answer(selectors.compile_reference, expression, env) == upstream


# Where 1.38's CEL (cel.dev/cel-go v0.33.2) words an answer otherwise and dralloc does not follow
# yet (docs/cel.md, "Kubernetes 1.38"): strict xfail, so that a fix shows up.
KNOWN_DIFFERENCES_1_38 = {
    **KNOWN_DIFFERENCES,
}


def _params_1_38() -> list[Any]:
    params = []
    for case in _DATA["cases"]:
        expression = case["expression"]
        marks = ([pytest.mark.xfail(reason=KNOWN_DIFFERENCES_1_38[expression], strict=True)]
                 if expression in KNOWN_DIFFERENCES_1_38 else [])
        params.append(pytest.param(expression, case["upstream_1_38"], marks=marks, id=expression[:80]))
    return params


@pytest.mark.parametrize(("expression", "upstream"), _params_1_38())
def test_same_answer_as_upstream_1_38(expression: str, upstream: str) -> None:
    """The same at Kubernetes 1.38: its CIDR library version 1, attributes read lazily."""
    env = _device(lazy=True)
    assert _answer(selectors.compile_selector, expression, env, cidr_v1=True) == upstream
    assert _answer(selectors.compile_reference, expression, env, cidr_v1=True) == upstream


def test_the_table_covers_each_library() -> None:
    """Every library this environment adds has cases, some passing and some failing."""
    answers: dict[str, set[str]] = {}
    for case in _DATA["cases"]:
        for marker in ("cidr(", "ip(", "sets.", ".?", "optional.", "format(", "strings.quote", "transform",
                       "existsOne", ".sort", "lists.range", "flatten", "url(", "isURL(", "getQuery()", "format.named(",
                       ".validate("):
            if marker in case["expression"]:
                answers.setdefault(marker, set()).add(case["upstream"].split(":")[0])
    assert {"true", "false"} <= set().union(*answers.values())
    for marker, kinds in answers.items():
        assert "true" in kinds, marker


def test_every_declared_function_has_a_case() -> None:
    """Every function dralloc declares (its compile-time checker's names) is called in some case
    upstream answered, so that none is declared or behaves without upstream's word on it."""
    import re

    from dralloc.cel import functions

    called = "\n".join(case["expression"] for case in _DATA["cases"])
    names = functions.GLOBAL_FUNCTIONS | functions.MEMBER_FUNCTIONS | functions.QUALIFIED_FUNCTIONS
    missing = sorted(name for name in names if re.fullmatch(r"[A-Za-z_][\w.]*", name)
                     and not re.search(rf"(?<![\w.]){re.escape(name)}\s*\(", called)
                     and not re.search(rf"\.{re.escape(name)}\s*\(", called))
    assert missing == []
