"""The quick parser builds exactly celpy's tree, or declines.

If it ever built a different tree, checking, the reference program and the fast
path would all silently follow it; so the property compares trees node by node
(rule names, token types and texts) with celpy's parser, over the selector
grammars of the equivalence tests and over random token soup.
"""

from __future__ import annotations

from typing import Any

import lark
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.cel import test_fastpath_equivalence as grammars

from dralloc.cel import compiling, quickparse


def _shape(node: Any) -> Any:
    if isinstance(node, lark.Tree):
        return (str(node.data), [_shape(c) for c in node.children])
    assert isinstance(node, lark.Token)
    return (node.type, str(node.value))


def _celpy_shape(expression: str) -> Any:
    try:
        return _shape(compiling.parse(expression))
    except compiling.CELCompileError:
        return None


def _assert_same_or_declined(expression: str) -> None:
    quick = quickparse.parse(expression)
    if quick is not None:
        assert _shape(quick) == _celpy_shape(expression), expression


_SOUP = st.lists(st.sampled_from([
    "device", ".", "attributes", "[", "]", '"d"', "'x'", "(", ")", "==", "!=", "<", "<=", ">", ">=",
    "&&", "||", "!", "?", ":", ",", "in", "true", "false", "1", "-1", "0", "10", "x", "has", "size",
    "quantity", '"', "-", "1.5", '""', "r", "null", "as", "u", " ", "\n",
]), max_size=14).map(lambda parts: "".join(parts))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(grammars.EXPRESSIONS, grammars.SELECTORS))
def test_selector_trees_match_celpy(expression: str) -> None:
    """For generated selectors the trees are identical."""
    _assert_same_or_declined(expression)


@settings(max_examples=500, deadline=None)
@given(_SOUP)
def test_token_soup_trees_match_celpy(expression: str) -> None:
    """Arbitrary token sequences: identical tree, or declined (celpy then reports errors)."""
    _assert_same_or_declined(expression)


@pytest.mark.parametrize("expression", [
    'device.attributes["gpu.example.com"].model == "a100" && device.capacity["d"].m.compareTo(quantity("1")) >= 0',
    "a == b == c", "!!x", "x ? y : z ? 1 : 2", "f()", "x.f()", "[1, -2, []]", "(a || b) && c",
    '"a" in x && x in [1]', "true != false",
])
def test_handled(expression: str) -> None:
    """Common shapes are parsed here, not by celpy."""
    assert quickparse.parse(expression) is not None
    _assert_same_or_declined(expression)


@pytest.mark.parametrize("expression", [
    r'"a\n"', 'r"a"', 'b"a"', '"""a"""', "1.5", "0x1", "1u", "x - 1", "x -1", "-x", "null", "a + b",
    "{}", ".x", "// c\ntrue", "x.in", "", "(", "a b", "[1,]", "as",
])
def test_declined(expression: str) -> None:
    """Everything outside the small grammar, and every syntax error, is left to celpy."""
    assert quickparse.parse(expression) is None
