"""Kubernetes 1.38 reads a device's attributes lazily (`dralloc.cel.devices`, `lazy=True`).

An attribute it keeps no value for (none given, a version that does not parse, an empty list)
fails only an expression that reads it; 1.36 and 1.37 fail every expression on the device.
Each row was answered by the upstream allocator v0.38.0-beta.0 (tests/conformance/vectors/
cel-lazy-*), here checked on both engines and on a device with and without the bad value.
"""

from __future__ import annotations

from typing import Any

import pytest

from dralloc.cel import devices, selectors
from dralloc.model.quantities import Quantity

INVALID = "attribute links: value is invalid or its type is not supported by this version"
D = 'device.attributes["driver-a"]'

# (expression, attributes, 1.38's answer: True, False or the runtime error)
CASES: list[tuple[str, dict[str, Any], bool | str]] = [
    ('device.driver == "driver-a"', {"links": {}}, True),
    (f'{D}.model == "a100"', {"links": {}}, True),
    (f'{D}.links == 1', {"links": {}}, INVALID),
    (f'has({D}.links)', {"links": {}}, INVALID),
    (f'"links" in {D}', {"links": {}}, False),
    (f'{D}.size() == 2', {"links": {}}, True),
    (f'{D}.exists(k, k == "links")', {"links": {}}, True),
    (f'{D}.exists(k, {D}[k] == 1)', {"links": {}}, INVALID),
    (f'{D}.?links.orValue(1) == 1', {"links": {}}, INVALID),
    (f'{D}[?"links"].orValue(1) == 1', {"links": {}}, INVALID),
    (f'{D}.links == 1 || true', {"links": {}}, True),
    (f'{D}.links.size() == 0', {"links": {"ints": []}}, INVALID),
    (f'{D}.model == "a100"', {"links": {"version": "1.2.3.4"}}, True),
    (f'has({D}.links)', {"links": {"version": "1.2.3.4"}}, INVALID),
    (f'has({D}.nothing)', {"links": {}}, False),
]


def _env(attributes: dict[str, Any], *, lazy: bool) -> devices.DeviceEnv:
    return devices.device_env(driver="driver-a", attributes={"model": {"string": "a100"}, **attributes},
                              capacity={"memory": Quantity.parse("1Gi")}, allow_multiple_allocations=False,
                              lazy=lazy)


def _answer(compile_selector: Any, expression: str, env: devices.DeviceEnv) -> bool | str:
    try:
        return compile_selector(expression, cidr_v1=True).evaluate(env)
    except selectors.CELRuntimeError as exc:
        return str(exc)


@pytest.mark.parametrize(("expression", "attributes", "expected"), CASES, ids=[c[0] for c in CASES])
def test_an_attribute_without_a_value_fails_only_what_reads_it(expression: str, attributes: dict[str, Any],
                                                               expected: bool | str) -> None:
    env = _env(attributes, lazy=True)
    assert env.invalid and env.error is None
    assert _answer(selectors.compile_selector, expression, env) == expected
    assert _answer(selectors.compile_reference, expression, env) == expected


@pytest.mark.parametrize(("expression", "attributes", "expected"), CASES, ids=[c[0] for c in CASES])
def test_before_1_38_it_fails_every_expression(expression: str, attributes: dict[str, Any],
                                               expected: bool | str) -> None:
    env = _env(attributes, lazy=False)
    if attributes["links"].get("ints") == []:
        assert env.error is None  # 1.37 reads an empty list
        return
    assert env.error is not None and env.error.startswith("attribute links: ")
    with pytest.raises(selectors.CELRuntimeError):
        selectors.compile_selector(expression).evaluate(env)


@pytest.mark.parametrize("lazy", [False, True])
def test_the_qualified_name_wins_over_the_plain_one(lazy: bool) -> None:
    env = devices.device_env(driver="driver-a", attributes={"model": {"string": "a100"}, "driver-a/model": {"string": "q"}},
                             capacity={}, allow_multiple_allocations=False, lazy=lazy)
    for compile_selector in (selectors.compile_selector, selectors.compile_reference):
        assert compile_selector(f'{D}.model == "q"').evaluate(env) is True


def test_the_qualified_name_wins_even_without_a_value() -> None:
    env = devices.device_env(driver="driver-a", attributes={"model": {"string": "a100"}, "driver-a/model": {}},
                             capacity={}, allow_multiple_allocations=False, lazy=True)
    with pytest.raises(selectors.CELRuntimeError, match="attribute model: value is invalid"):
        selectors.compile_selector(f'{D}.model == "a100"').evaluate(env)


def test_a_valid_device_keeps_the_fast_path() -> None:
    env = _env({}, lazy=True)
    assert not env.invalid
    program = selectors.compile_selector(f'{D}.model == "a100"')
    assert program.has_fast_path and program.evaluate(env) is True


@pytest.mark.parametrize(("expression", "expected"), [
    ('cidr("10.0.0.0/8").isMask()', True),
    ('cidr("10.0.0.1/8").isMask()', False),
    ('cidr("fe80::/10").isMask()', True),
    ('cidr("::1/64").isMask()', False),
])
def test_is_mask_exists_from_1_38(expression: str, expected: bool) -> None:
    env = _env({}, lazy=True)
    assert selectors.compile_selector(expression, cidr_v1=True).evaluate(env) is expected
    with pytest.raises(selectors.CELCompileError, match="undeclared reference to 'isMask'"):
        selectors.compile_selector(expression)
