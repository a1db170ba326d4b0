"""The interface the allocator codes against: compile once, evaluate per device, typed errors."""

from __future__ import annotations

import pytest
from tests.cel import builders

from dralloc.cel import devices, selectors


def test_compile_returns_reusable_selector() -> None:
    """One compiled selector evaluates against many devices."""
    selector = selectors.compile_selector('device.attributes["gpu.example.com"].model == "a100"')
    assert selector.evaluate(builders.gpu()) is True
    assert selector.evaluate(builders.gpu({"model": {"string": "h100"}})) is False


def test_selector_keeps_its_expression() -> None:
    """The compiled selector names the text it came from."""
    assert selectors.compile_selector("true").expression == "true"


def test_compiling_same_text_returns_same_object() -> None:
    """Compilation is memoized by expression text."""
    text = 'device.driver == "memo.example.com"'
    assert selectors.compile_selector(text) is selectors.compile_selector(text)


def test_compiled_selector_is_immutable() -> None:
    """Nobody can swap the expression of a shared, cached selector."""
    selector = selectors.compile_selector("true")
    with pytest.raises(AttributeError):
        selector.expression = "false"  # type: ignore[misc]


def test_error_classes_share_a_base_and_carry_the_expression() -> None:
    """CELCompileError and CELRuntimeError are CELErrors with .expression."""
    with pytest.raises(selectors.CELError) as compile_error:
        selectors.compile_selector("device.nope")
    assert isinstance(compile_error.value, selectors.CELCompileError)
    assert compile_error.value.expression == "device.nope"
    with pytest.raises(selectors.CELError) as runtime_error:
        selectors.compile_selector('device.attributes["gpu.example.com"].nope == 1').evaluate(builders.gpu())
    assert isinstance(runtime_error.value, selectors.CELRuntimeError)


def test_device_env_is_frozen() -> None:
    """A DeviceEnv is shared between selectors and must not change."""
    env = builders.gpu()
    with pytest.raises(AttributeError):
        env.driver = "other"  # type: ignore[misc]


@pytest.mark.parametrize(("expression", "expected"), [
    pytest.param('device.driver == "gpu.example.com"', True, id="driver"),
    pytest.param("device.allowMultipleAllocations", False, id="allow-multiple-allocations"),
    pytest.param('device.attributes["gpu.example.com"].ecc', True, id="bool-attribute-as-result"),
    pytest.param('device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0', True,
                 id="capacity-quantity"),
])
def test_device_fields(expression: str, expected: bool) -> None:
    """Every field of `device` is readable."""
    assert selectors.compile_selector(expression).evaluate(builders.gpu()) is expected


def test_allow_multiple_allocations_reflects_device() -> None:
    """The flag is the device's own value."""
    env = builders.gpu(allow_multiple_allocations=True)
    assert selectors.compile_selector("device.allowMultipleAllocations").evaluate(env) is True


def test_device_env_takes_raw_api_attribute_json() -> None:
    """device_env accepts the API's JSON attribute form directly."""
    env = devices.device_env(driver="d.example.com", attributes={"x": {"int": 3}}, capacity={},
                             allow_multiple_allocations=False)
    assert selectors.compile_selector('device.attributes["d.example.com"].x == 3').evaluate(env) is True
