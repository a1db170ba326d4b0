"""Kubernetes string extensions, regex and list libraries."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from dralloc.cel import selectors

Evaluate = Callable[..., bool]


@pytest.mark.parametrize("expression", [
    pytest.param('"hello".charAt(1) == "e" && "hello".charAt(5) == ""', id="char-at"),
    pytest.param('"hello".indexOf("l") == 2 && "hello".indexOf("l", 3) == 3 && "hello".indexOf("z") == -1',
                 id="index-of"),
    pytest.param('"hello".lastIndexOf("l") == 3 && "hello".lastIndexOf("l", 2) == 2', id="last-index-of"),
    pytest.param('"AbC".lowerAscii() == "abc" && "AbC".upperAscii() == "ABC"', id="case"),
    pytest.param('"a-b-c".replace("-", "+") == "a+b+c" && "a-b-c".replace("-", "+", 1) == "a+b-c"',
                 id="replace"),
    pytest.param('"a,b,c".split(",") == ["a", "b", "c"] && "a,b,c".split(",", 2) == ["a", "b,c"]', id="split"),
    pytest.param('"hello".substring(1) == "ello" && "hello".substring(1, 3) == "el"', id="substring"),
    pytest.param('"  x ".trim() == "x"', id="trim"),
    pytest.param('["a", "b"].join() == "ab" && ["a", "b"].join("-") == "a-b"', id="join"),
    pytest.param('"gpu-a100-80g".matches("^gpu-.*") && !"x".matches("^gpu")', id="matches"),
    pytest.param('"gpu-a100-80g".find("[0-9]+") == "100" && "abc".find("z") == ""', id="find"),
    pytest.param('"a1b22c333".findAll("[0-9]+") == ["1", "22", "333"]', id="find-all"),
    pytest.param('"a1b22c333".findAll("[0-9]+", 2) == ["1", "22"]', id="find-all-limit"),
    pytest.param('"ab".startsWith("a") && "ab".endsWith("b") && "ab".contains("b")', id="base-string-functions"),
    pytest.param("[1, 2, 3].isSorted() && ![2, 1].isSorted()", id="is-sorted"),
    pytest.param("[1, 2, 3].sum() == 6 && [].sum() == 0", id="sum"),
    pytest.param("[3, 1, 2].min() == 1 && [3, 1, 2].max() == 3", id="min-max"),
    pytest.param("[1, 2, 1].indexOf(1) == 0 && [1, 2, 1].lastIndexOf(1) == 2 && [1].indexOf(5) == -1",
                 id="list-index-of"),
    pytest.param('device.attributes["gpu.example.com"].tags.exists(t, t.startsWith("fa"))', id="attribute-list"),
])
def test_library_function(evaluate: Evaluate, expression: str) -> None:
    """Each library function behaves as upstream's."""
    assert evaluate(expression) is True


@pytest.mark.parametrize(("expression", "message"), [
    pytest.param('"abc".charAt(9) == ""', "index out of range: 9", id="char-at-out-of-range"),
    pytest.param('"abc".substring(2, 1) == ""', "invalid substring range", id="substring-reversed"),
    pytest.param("[].min() == 0", "min called on empty list", id="min-of-empty"),
    pytest.param('"abc".find(device.attributes["gpu.example.com"].model + "(") == ""', "error parsing regexp",
                 id="bad-regex"),
])
def test_library_errors(evaluate: Evaluate, expression: str, message: str) -> None:
    """Misuse is a runtime error naming the problem."""
    with pytest.raises(selectors.CELRuntimeError, match=message):
        evaluate(expression)
