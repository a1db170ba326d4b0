"""What fails at compile time, and how the message reads."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dralloc.cel import selectors


@pytest.mark.parametrize(("expression", "reason"), [
    pytest.param("device.foo", "undefined field 'foo'", id="unknown-device-field"),
    pytest.param("foo == 1", "undeclared reference to 'foo'", id="unknown-variable"),
    pytest.param("nosuch(1)", "undeclared reference to 'nosuch'", id="unknown-function"),
    pytest.param('"a".nosuch()', "undeclared reference to 'nosuch'", id="unknown-method"),
    pytest.param('device.driver.compareTo(1) == 0 || device.foo', "undefined field 'foo'",
                 id="error-in-unevaluated-branch"),
    pytest.param("[1].all(x, y > 0)", "undeclared reference to 'y'", id="unknown-in-macro"),
    pytest.param('has(device.attributes["d"])', "invalid argument to has() macro", id="has-of-index"),
    pytest.param("[1].reduce(a, b, a)", "undeclared reference to 'reduce'", id="reduce-not-a-cel-macro"),
    pytest.param("1 +", "Syntax error", id="syntax"),
    pytest.param("", "Syntax error", id="empty"),
    pytest.param("Foo{a: 1}", "message construction", id="message-construction"),
])
def test_compile_error(expression: str, reason: str) -> None:
    """The error names the reason, in upstream's 'compilation failed: ERROR: <input>:L:C:' form."""
    with pytest.raises(selectors.CELCompileError) as excinfo:
        selectors.compile_selector(expression)
    message = str(excinfo.value)
    assert message.startswith("compilation failed: ")
    assert reason in message


@pytest.mark.parametrize(("expression", "kind"), [
    pytest.param("device.driver", "string", id="string-result"),
    pytest.param("1", "int", id="int-literal-result"),
    pytest.param('ip("1.2.3.4").family()', "int", id="function-result"),
    pytest.param('device.capacity["d"].memory', "kubernetes.Quantity", id="capacity-result"),
])
def test_result_type_error(expression: str, kind: str) -> None:
    """A selector that is not a bool fails as upstream's output check words it: a bare message
    (oracle: "CEL compile error: must evaluate to bool or the unknown type, not string")."""
    with pytest.raises(selectors.CELCompileError) as excinfo:
        selectors.compile_selector(expression)
    assert str(excinfo.value) == f"must evaluate to bool or the unknown type, not {kind}"


@pytest.mark.parametrize(("expression", "message"), [
    # cel-go's literal validators (oracle: same messages and positions).
    pytest.param('"a".matches("(")', "ERROR: <input>:1:13: invalid matches argument", id="matches-literal"),
    pytest.param('duration("1d") > duration("1s")', "ERROR: <input>:1:10: invalid duration argument", id="duration"),
    pytest.param('timestamp("2020-13-01T00:00:00Z") > timestamp("2020-01-01T00:00:00Z")',
                 "ERROR: <input>:1:11: invalid timestamp argument", id="timestamp"),
])
def test_literal_validators(expression: str, message: str) -> None:
    with pytest.raises(selectors.CELCompileError, match=re.escape(message)):
        selectors.compile_selector(expression)


@pytest.mark.parametrize("expression", [
    pytest.param('"a".find("(") == ""', id="find"),
    pytest.param('matches("a", "(")', id="global-matches"),
    pytest.param('"a".matches(dyn("("))', id="through-dyn"),
])
def test_constant_regex_fails_when_the_program_is_built(expression: str) -> None:
    """Upstream compiles constant patterns when it builds the program: a bare message."""
    with pytest.raises(selectors.CELCompileError) as excinfo:
        selectors.compile_selector(expression)
    assert str(excinfo.value) == "program instantiation failed: error parsing regexp: missing closing ): `(`"


def test_message_points_at_the_problem() -> None:
    """Line and column locate the offending token, with a caret under it."""
    with pytest.raises(selectors.CELCompileError) as excinfo:
        selectors.compile_selector("device.driver == x")
    assert str(excinfo.value) == (
        "compilation failed: ERROR: <input>:1:18: undeclared reference to 'x' (in container '')\n"
        " | device.driver == x\n"
        " | .................^"
    )


def test_all_problems_are_reported() -> None:
    """Several undeclared references are all listed."""
    with pytest.raises(selectors.CELCompileError) as excinfo:
        selectors.compile_selector("a == b")
    assert "'a'" in str(excinfo.value) and "'b'" in str(excinfo.value)


def test_overlong_expression_is_rejected() -> None:
    """Upstream's 10 KiB CELSelectorExpressionMaxLength."""
    with pytest.raises(selectors.CELCompileError, match="longer than"):
        selectors.compile_selector("true && " * 2000 + "true")


def test_failed_compilation_is_not_cached_as_success() -> None:
    """Compiling a bad expression again raises again."""
    for _ in range(2):
        with pytest.raises(selectors.CELCompileError):
            selectors.compile_selector("device.bad")


@given(st.sampled_from(["a100", "h100", "t4"]), st.integers(0, 7))
def test_compile_selector_is_memoized(model: str, numa: int) -> None:
    """The same text always yields the same compiled object."""
    text = f'device.attributes["gpu.example.com"].model == "{model}" && device.attributes["gpu.example.com"].numa == {numa}'
    assert selectors.compile_selector(text) is selectors.compile_selector(str(text))


class TestWithoutListValues:
    """Upstream 1.36 with DRAListTypeAttributes off types attribute values as 'any'."""

    EXPRESSION = ('"numas" in device.attributes[device.driver] && '
                  'device.attributes[device.driver].numas.exists(n, n == 1)')

    @pytest.mark.parametrize("expression", [
        pytest.param(EXPRESSION, id="field-selection"),
        pytest.param('device.attributes["d"]["numas"].all(n, n > 0)', id="index"),
        pytest.param('device.attributes["d"].numas.filter(n, n > 0).size() > 0', id="filter"),
    ])
    def test_macro_over_an_attribute_value_does_not_compile(self, expression: str) -> None:
        """exists/all/filter over an attribute's value fail to compile, as in cel-go."""
        with pytest.raises(selectors.CELCompileError, match="expression of type 'any' cannot be range"):
            selectors.compile_selector(expression, list_values=False)

    def test_the_error_points_at_the_attribute_name(self) -> None:
        """The column is the '.' before the attribute name, where cel-go reports it (1:80 here)."""
        with pytest.raises(selectors.CELCompileError, match=r"<input>:1:80: "):
            selectors.compile_selector(self.EXPRESSION, list_values=False)

    @pytest.mark.parametrize("expression", [
        pytest.param('device.attributes["d"].exists(k, k == "numas")', id="over-the-domain-map"),
        pytest.param("[1, 2].exists(n, n == 1)", id="over-a-literal"),
        pytest.param('device.attributes["d"].numas == 1', id="no-macro"),
    ])
    def test_other_macros_compile(self, expression: str) -> None:
        """Ranging over the attribute map itself or a literal list is fine."""
        selectors.compile_selector(expression, list_values=False)

    def test_with_list_values_the_macro_compiles(self) -> None:
        """1.37 (or the gate on) types attribute values as dyn: the macro compiles."""
        selectors.compile_selector(self.EXPRESSION)
