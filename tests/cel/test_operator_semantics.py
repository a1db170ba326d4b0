"""CEL operators with cel-go's semantics where celpy differs (heterogeneous equality, ordering)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

Evaluate = Callable[..., bool]


# Operands of different static types are compile errors upstream (`1 == 1u`: no matching
# overload, tests/cel/test_type_checking.py); dyn() keeps them to run time, where cel-go's
# heterogeneous equality applies. Each expectation here was checked against the oracle.
@pytest.mark.parametrize(("expression", "expected"), [
    pytest.param("dyn(1) == 1u", True, id="int-equals-uint"),
    pytest.param("dyn(1) == 1.0", True, id="int-equals-double"),
    pytest.param('dyn(1) == "1"', False, id="int-never-equals-string"),
    pytest.param("dyn(true) == 1", False, id="bool-never-equals-int"),
    pytest.param("dyn(1) != 1u", False, id="not-equal-across-numbers"),
    pytest.param("1 < 1.5", True, id="int-less-than-double"),
    pytest.param("2u > 1", True, id="uint-greater-than-int"),
    pytest.param("-1 < 1u", True, id="negative-int-below-uint"),
    pytest.param("9007199254740993 > 9007199254740992.0", True, id="exact-int-double-ordering"),
    pytest.param('"a" < "b"', True, id="string-ordering"),
    pytest.param("false < true", True, id="bool-ordering"),
    pytest.param('"ab" == "ab"', True, id="string-equality"),
    pytest.param("dyn(1u) in [1, 2]", True, id="in-list-numeric"),
    pytest.param('dyn("1") in [1, 2]', False, id="in-list-other-type"),
    pytest.param('"a" in {"a": 1}', True, id="in-map"),
    pytest.param("[dyn(1), dyn([2])] == [dyn(1.0), dyn([2u])]", True, id="nested-list-equality"),
    pytest.param('dyn({"a": 1}) == {"a": 1u}', True, id="map-equality"),
    pytest.param("null == null", True, id="null-equality"),
    pytest.param('device.attributes["gpu.example.com"].numa == 1u', True, id="attribute-int-vs-uint"),
    pytest.param('device.attributes["gpu.example.com"].numa == "1"', False, id="attribute-int-vs-string"),
    pytest.param('device.attributes["gpu.example.com"].numa < 1.5', True, id="attribute-int-vs-double"),
    pytest.param("[1, 2].exists_one(x, x == 2)", True, id="exists-one"),
    pytest.param("[1, 2].map(x, x * 2) == [2, 4]", True, id="map-macro"),
    pytest.param("[1, 2, 3].filter(x, x > 1).size() == 2", True, id="filter-macro"),
    pytest.param("size([1, 2]) == 2 && size(\"ab\") == 2", True, id="size"),
])
def test_operator(evaluate: Evaluate, expression: str, expected: bool) -> None:
    """Operators agree with cel-go."""
    assert evaluate(expression) is expected
