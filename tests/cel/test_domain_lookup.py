"""Qualified names, domain maps and missing keys, as upstream's DeviceMatches builds them."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from tests.cel import builders

from dralloc.cel import selectors

Evaluate = Callable[..., bool]


@pytest.mark.parametrize(("expression", "expected"), [
    pytest.param('device.attributes["gpu.example.com"].numa == 1', True, id="bare-name-in-driver-domain"),
    pytest.param('device.attributes["nic.example.com"].ports == [1, 2, 4]', True, id="prefixed-name-in-own-domain"),
    pytest.param('device.capacity["nic.example.com"].bandwidth == quantity("100G")', True,
                 id="prefixed-capacity-in-own-domain"),
    pytest.param('device.attributes["unknown.example.com"].size() == 0', True, id="unknown-domain-is-empty-map"),
    pytest.param('device.capacity["unknown.example.com"] == {}', True, id="unknown-capacity-domain-is-empty"),
    pytest.param('"gpu.example.com" in device.attributes', True, id="in-known-domain"),
    pytest.param('"unknown.example.com" in device.attributes', False, id="in-unknown-domain"),
    pytest.param('"numa" in device.attributes["gpu.example.com"]', True, id="in-known-id"),
    pytest.param('"gone" in device.attributes["gpu.example.com"]', False, id="in-missing-id"),
    pytest.param('has(device.attributes["gpu.example.com"].numa)', True, id="has-known-id"),
    pytest.param('has(device.attributes["gpu.example.com"].gone)', False, id="has-missing-id"),
    pytest.param('has(device.attributes["gpu.example.com"].gone) && device.attributes["gpu.example.com"].gone',
                 False, id="has-guards-missing-id"),
    pytest.param('device.attributes["gpu.example.com"].tags.includes("fast")', True, id="string-list"),
])
def test_lookup(evaluate: Evaluate, expression: str, expected: bool) -> None:
    """Lookups through device.attributes and device.capacity."""
    assert evaluate(expression) is expected


def test_bare_and_prefixed_name_are_the_same_attribute() -> None:
    """`numa` and `gpu.example.com/numa` on a gpu.example.com device both land in that domain."""
    selector = selectors.compile_selector('device.attributes["gpu.example.com"].numa == 7')
    bare = builders.gpu({"numa": {"int": 7}})
    prefixed = builders.gpu({"gpu.example.com/numa": {"int": 7}})
    assert selector.evaluate(bare) is True
    assert selector.evaluate(prefixed) is True


def test_missing_id_is_runtime_error(evaluate: Evaluate) -> None:
    """Reading an id the device does not have fails the selector ("no such key")."""
    with pytest.raises(selectors.CELRuntimeError, match="no such key: gone"):
        evaluate('device.attributes["gpu.example.com"].gone == 1')


def test_missing_id_in_unknown_domain_is_runtime_error(evaluate: Evaluate) -> None:
    """An unknown domain is empty, so any id read from it is missing."""
    with pytest.raises(selectors.CELRuntimeError, match="no such key: x"):
        evaluate('device.attributes["unknown.example.com"].x == 1')


@pytest.mark.parametrize(("attribute", "expression"), [
    pytest.param({"int": 5}, "x == 5", id="int"),
    pytest.param({"bool": False}, "x == false", id="bool"),
    pytest.param({"string": "s"}, 'x == "s"', id="string"),
    pytest.param({"version": "1.2.3-rc.1"}, 'x == semver("1.2.3-rc.1")', id="version"),
    pytest.param({"ints": [1, 2]}, "x == [1, 2] && x.includes(2)", id="ints"),
    pytest.param({"bools": [True]}, "x == [true]", id="bools"),
    pytest.param({"strings": ["a", "b"]}, 'x.includes("b") && !x.includes("c")', id="strings"),
    pytest.param({"versions": ["1.0.0", "2.0.0"]}, 'x.includes(semver("2.0.0"))', id="versions"),
])
def test_attribute_value_types(attribute: dict[str, object], expression: str) -> None:
    """Every attribute form becomes the matching CEL value."""
    device = builders.gpu({"x": attribute})
    text = f'cel.bind(x, device.attributes["gpu.example.com"].x, {expression})'
    assert selectors.compile_selector(text).evaluate(device) is True


def test_invalid_version_attribute_fails_every_selector() -> None:
    """Like upstream, a version attribute that does not parse breaks all selectors on the device."""
    device = builders.gpu({"v": {"version": "v1"}, "ok": {"int": 1}})
    with pytest.raises(selectors.CELRuntimeError, match="attribute v: parse semantic version"):
        selectors.compile_selector("true").evaluate(device)


def test_attribute_without_value_fails_every_selector() -> None:
    """An attribute with no known value type is reported, as upstream does."""
    device = builders.gpu({"weird": {"float": 1.5}})
    with pytest.raises(selectors.CELRuntimeError, match="attribute weird: unsupported attribute value"):
        selectors.compile_selector("true").evaluate(device)


def test_includes_on_scalar_is_equality(evaluate: Evaluate) -> None:
    """`includes` on a single value compares it, as upstream's includesFunc does."""
    assert evaluate('device.attributes["gpu.example.com"].model.includes("a100")') is True
    assert evaluate('device.attributes["gpu.example.com"].model.includes("h100")') is False
