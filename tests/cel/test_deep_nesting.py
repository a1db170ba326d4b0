"""Selectors nested deeper than the compiler can walk are compile errors, never crashes.

Found by tests/fuzz: `((((...))))` a hundred or more deep raised RecursionError (or Python's
own SyntaxError from the transpiled code) out of `compile_selector`, which the operator
reported as an internal error and which failed its metrics scrape.
"""

from __future__ import annotations

import pytest

from dralloc.cel import selectors
from dralloc.cel.devices import device_env

INNER = 'device.driver == "gpu.example.com"'
DEEP = {
    "parentheses": "(" * 400 + INNER + ")" * 400,
    "negations": "!!" * 1200 + f"({INNER})",
    "lists": "[" * 400 + "1" + "]" * 400 + f" != [] && {INNER}",
    "binds": "".join(f"cel.bind(v{i}, {i}, " for i in range(250)) + INNER + ")" * 250,
}


@pytest.mark.parametrize("shape", sorted(DEEP))
def test_too_deep_is_a_compile_error(shape: str) -> None:
    for _ in range(2):  # the second time from the failure cache: same error
        with pytest.raises(selectors.CELCompileError, match="compilation failed: expression nested too deeply"):
            selectors.compile_selector(DEEP[shape])


def test_deep_but_flat_still_compiles_and_runs() -> None:
    env = device_env(driver="gpu.example.com", attributes={}, capacity={}, allow_multiple_allocations=False)
    assert selectors.compile_selector(" && ".join([INNER] * 250)).evaluate(env) is True
    assert selectors.compile_selector("(" * 20 + INNER + ")" * 20).evaluate(env) is True
