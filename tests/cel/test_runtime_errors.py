"""What fails while evaluating: every such error is fatal upstream, so it must be raised."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from dralloc.cel import selectors

Evaluate = Callable[..., bool]


@pytest.mark.parametrize(("expression", "message"), [
    pytest.param('device.attributes["gpu.example.com"].gone', "no such key: gone", id="missing-key"),
    pytest.param('device.attributes["gpu.example.com"].numa', "CEL result of type int could not be converted to bool: unsupported type conversion from 'int' to bool",
                 id="non-bool-result"),
    pytest.param('device.attributes["gpu.example.com"].model > 1', "no such overload", id="type-mismatch"),
    pytest.param('device.attributes["gpu.example.com"].model && true', "no such overload", id="non-bool-in-and"),
    pytest.param("1 / 0 == 1", "division by zero", id="division-by-zero"),
    pytest.param("[1, 2][5] == 1", "index out of bounds: 5", id="index-out-of-range"),
    pytest.param("[1, 2][-1] == 1", "index out of bounds: -1", id="negative-index"),
    pytest.param("9223372036854775807 + 1 > 0", "overflow", id="int-overflow"),
    pytest.param('"abc".matches(device.attributes["gpu.example.com"].model + "(")',
                 "error parsing regexp: missing closing \\)", id="bad-regex"),
])
def test_runtime_error(evaluate: Evaluate, expression: str, message: str) -> None:
    """The error is a CELRuntimeError naming the problem."""
    with pytest.raises(selectors.CELRuntimeError, match=message):
        evaluate(expression)


@pytest.mark.parametrize(("expression", "expected"), [
    pytest.param('false && device.attributes["gpu.example.com"].gone', False, id="and-false-absorbs"),
    pytest.param('device.attributes["gpu.example.com"].gone && false', False, id="and-false-absorbs-left-error"),
    pytest.param('true || device.attributes["gpu.example.com"].gone', True, id="or-true-absorbs"),
    pytest.param('device.attributes["gpu.example.com"].gone || true', True, id="or-true-absorbs-left-error"),
    pytest.param('true ? true : device.attributes["gpu.example.com"].gone', True, id="ternary-skips-branch"),
    pytest.param("[1, 0].exists(x, 1 / x == 1)", True, id="exists-absorbs-errors-when-true"),
])
def test_errors_absorbed_like_cel(evaluate: Evaluate, expression: str, expected: bool) -> None:
    """CEL's commutative && and || swallow an error when the other side decides."""
    assert evaluate(expression) is expected


def test_error_not_absorbed_when_other_side_does_not_decide(evaluate: Evaluate) -> None:
    """true && error is the error."""
    with pytest.raises(selectors.CELRuntimeError, match="no such key"):
        evaluate('true && device.attributes["gpu.example.com"].gone')
