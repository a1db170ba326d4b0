"""The Kubernetes quantity library, exact over dralloc's Quantity."""

from __future__ import annotations

import re
from collections.abc import Callable
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.cel import builders

from dralloc.cel import selectors
from dralloc.model.quantities import Quantity

Evaluate = Callable[..., bool]


@pytest.mark.parametrize("expression", [
    pytest.param('quantity("1Gi") == quantity("1024Mi")', id="equal-across-suffixes"),
    pytest.param('quantity("1k") != quantity("1Ki")', id="decimal-vs-binary"),
    pytest.param('quantity("1500m").compareTo(quantity("1.5")) == 0', id="compare-equal"),
    pytest.param('quantity("2").compareTo(quantity("1")) == 1', id="compare-greater"),
    pytest.param('quantity("1").compareTo(quantity("2")) == -1', id="compare-less"),
    pytest.param('quantity("2").isGreaterThan(quantity("1"))', id="is-greater-than"),
    pytest.param('quantity("1").isLessThan(quantity("2"))', id="is-less-than"),
    pytest.param('!quantity("1").isLessThan(quantity("1"))', id="not-less-than-itself"),
    pytest.param('quantity("1Gi").add(quantity("1Gi")) == quantity("2Gi")', id="add-quantity"),
    pytest.param('quantity("1").add(2) == quantity("3")', id="add-int"),
    pytest.param('quantity("3").sub(quantity("1")) == quantity("2")', id="sub-quantity"),
    pytest.param('quantity("3").sub(5) == quantity("-2")', id="sub-int"),
    pytest.param('quantity("1Ki").asInteger() == 1024', id="as-integer"),
    pytest.param('quantity("1.5").asApproximateFloat() == 1.5', id="as-approximate-float"),
    # Upstream declares sign as a global function: `sign(q)`; `q.sign()` does not compile.
    pytest.param('sign(quantity("-3")) == -1 && sign(quantity("0")) == 0', id="sign"),
    pytest.param('quantity("1").isInteger() && !quantity("1500m").isInteger()', id="is-integer"),
    pytest.param('!quantity("10000P").isInteger()', id="beyond-int64-is-not-integer"),
    pytest.param('isQuantity("1Gi") && !isQuantity("1GB")', id="is-quantity"),
    pytest.param('device.capacity["gpu.example.com"].memory.isGreaterThan(quantity("40Gi"))', id="capacity"),
])
def test_quantity_functions(evaluate: Evaluate, expression: str) -> None:
    """Each quantity function behaves as upstream's library."""
    assert evaluate(expression) is True


@pytest.mark.parametrize(("expression", "message"), [
    pytest.param('quantity("1GB") == quantity("1")', "quantities must match", id="bad-literal"),
    pytest.param('quantity("1500m").asInteger() == 1', "cannot convert value to integer", id="fraction-as-integer"),
    pytest.param('quantity("10000P").asInteger() == 1', "cannot convert value to integer", id="overflow-as-integer"),
    pytest.param('quantity("1").compareTo(dyn(1)) == 0', "no such overload: compareTo(kubernetes.Quantity, int)",
                 id="compare-with-int"),
    pytest.param('dyn(quantity("1")) < dyn(quantity("2"))', "no such overload: _<_", id="no-ordering-operators"),
])
def test_quantity_errors(evaluate: Evaluate, expression: str, message: str) -> None:
    """Misuse is a runtime error naming the problem."""
    with pytest.raises(selectors.CELRuntimeError, match=re.escape(message)):
        evaluate(expression)


def test_quantity_is_not_comparable_with_int(evaluate: Evaluate) -> None:
    """Upstream's Quantity.Equal refuses other types: a compile error where the checker sees both
    types, "no such overload" at run time with the quantity on the left, false with it on the right
    (cel-go asks the left operand)."""
    with pytest.raises(selectors.CELCompileError, match=r"'_==_' applied to '\(kubernetes.Quantity, int\)'"):
        evaluate('quantity("1") == 1')
    with pytest.raises(selectors.CELRuntimeError, match="no such overload"):
        evaluate('quantity("1") == dyn(1)')
    assert evaluate('dyn(1) == quantity("1")') is False


_AMOUNTS = st.builds(
    lambda n, suffix: f"{n}{suffix}",
    st.integers(min_value=-(10**6), max_value=10**6),
    st.sampled_from(["", "m", "k", "M", "Ki", "Mi", "Gi", "u", "n"]),
)


@given(left=_AMOUNTS, right=_AMOUNTS)
def test_compare_to_agrees_with_quantity_ordering(left: str, right: str) -> None:
    """CEL's compareTo on capacities matches dralloc's exact Quantity ordering."""
    device = builders.gpu(capacity={"a": left, "b": right})
    selector = selectors.compile_selector(
        'cel.bind(c, device.capacity["gpu.example.com"], c.a.compareTo(c.b))'
        ' == cel.bind(c, device.capacity["gpu.example.com"], c.a.isGreaterThan(c.b) ? 1 : '
        '(c.a.isLessThan(c.b) ? -1 : 0))'
    )
    assert selector.evaluate(device) is True
    expected = Quantity.parse(left).compare(Quantity.parse(right))
    for value, text in ((1, "1"), (0, "0"), (-1, "-1")):
        check = selectors.compile_selector(
            f'device.capacity["gpu.example.com"].a.compareTo(device.capacity["gpu.example.com"].b) == {text}'
        )
        assert check.evaluate(device) is (expected == value)


@given(st.fractions(min_value=Fraction(-(10**9)), max_value=Fraction(10**9)).map(
    lambda f: Fraction(round(f * 1000), 1000)))
def test_add_then_sub_is_identity(value: Fraction) -> None:
    """Quantity arithmetic in CEL is exact."""
    device = builders.gpu(capacity={"x": str(Quantity(value))})
    selector = selectors.compile_selector(
        'cel.bind(x, device.capacity["gpu.example.com"].x, x.add(quantity("1.001")).sub(quantity("1.001")) == x)'
    )
    assert selector.evaluate(device) is True
