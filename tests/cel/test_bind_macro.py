"""`cel.bind(var, init, body)`, which upstream enables through ext.Bindings."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from dralloc.cel import selectors

Evaluate = Callable[..., bool]


@pytest.mark.parametrize(("expression", "expected"), [
    pytest.param('cel.bind(g, device.attributes["gpu.example.com"], g.model == "a100" && g.numa == 1)', True,
                 id="domain-shortcut"),
    pytest.param("cel.bind(x, 2, cel.bind(y, x * 3, y == 6))", True, id="nested"),
    pytest.param("cel.bind(x, 2, cel.bind(x, x * 3, x == 6))", True, id="inner-shadows-outer"),
    pytest.param("cel.bind(x, 2, cel.bind(x, 5, x == 5) && x == 2)", True, id="shadow-ends-with-scope"),
    pytest.param("cel.bind(x, [1, 2, 3], x.all(v, v > 0) && x.exists(v, v == x[2]))", True,
                 id="inside-macros"),
    pytest.param("[1, 2].all(v, cel.bind(w, v * 2, w > v))", True, id="bind-inside-macro"),
    pytest.param("cel.bind(x, 1 / 0, true)", True, id="unused-binding-error-is-ignored"),
    pytest.param("cel.bind(x, 1 / 0, false && x == 1)", False, id="short-circuit-skips-binding"),
    pytest.param('cel.bind(device, "shadow", device == "shadow")', True, id="may-shadow-device"),
])
def test_bind(evaluate: Evaluate, expression: str, expected: bool) -> None:
    """cel.bind evaluates the body with the variable bound, lazily, with proper scoping."""
    assert evaluate(expression) is expected


def test_used_binding_error_propagates(evaluate: Evaluate) -> None:
    """An error in the bound expression surfaces once the body reads the variable."""
    with pytest.raises(selectors.CELRuntimeError, match="division by zero"):
        evaluate("cel.bind(x, 1 / 0, x == 1)")


def test_variable_is_not_visible_outside(evaluate: Evaluate) -> None:
    """The bound name is only declared inside the body."""
    with pytest.raises(selectors.CELCompileError, match="undeclared reference to 'x'"):
        evaluate("cel.bind(x, 1, true) && x == 1")


@pytest.mark.parametrize(("expression", "message"), [
    pytest.param("cel.bind(x.y, 1, true)", "simple identifier", id="dotted-name"),
    pytest.param("cel.bind(x, 1)", "takes 3 arguments", id="two-arguments"),
    pytest.param("cel.bind(get, 1, true)", "reserved", id="reserved-name"),
])
def test_malformed_bind_is_compile_error(expression: str, message: str) -> None:
    """Misuse of cel.bind fails at compile time."""
    with pytest.raises(selectors.CELCompileError, match=message):
        selectors.compile_selector(expression)
