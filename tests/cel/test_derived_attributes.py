"""Derived attributes' CEL (DRADerivedAttributes): which expressions compile, what they compute.

Expected messages are upstream's (k8s.io/dynamic-resource-allocation v0.37.2, cel/compile.go:
validateOutputType and valToDeviceAttribute), checked with the oracle; the allocator's use of
them is covered by the `derived-attributes-*` conformance vectors.
"""

from __future__ import annotations

from typing import Any

import pytest

from dralloc.cel import derived
from dralloc.cel.devices import device_env
from dralloc.cel.selectors import CELCompileError, CELRuntimeError

DEVICE = device_env(
    driver="gpu.example.com",
    attributes={"numa": {"int": 1}, "topo": {"string": "numa-1"}, "fw": {"version": "1.2.3"}},
    capacity={},
    allow_multiple_allocations=True,
)

COMPUTES: dict[str, tuple[str, Any]] = {
    "1": ("int", 1),
    'device.attributes["gpu.example.com"].numa': ("int", 1),
    'int(device.attributes["gpu.example.com"].topo.split("-")[1])': ("int", 1),
    "device.driver": ("string", "gpu.example.com"),
    "device.allowMultipleAllocations": ("bool", True),
    'device.attributes["gpu.example.com"].fw': ("version", "1.2.3"),
    'semver("01.2.3", true)': ("version", "1.2.3"),
    "[1, 2]": ("ints", (1, 2)),
    "[true]": ("bools", (True,)),
    '["a", "b"]': ("strings", ("a", "b")),
    '[semver("1.0.0")]': ("versions", ("1.0.0",)),
    "[]": ("strings", ()),
    "dyn([])": ("strings", ()),
    'device.attributes["gpu.example.com"].?numa.orValue(0)': ("int", 1),
}


@pytest.mark.parametrize("expression", list(COMPUTES))
def test_an_attribute_typed_expression_computes_its_value(expression: str) -> None:
    assert derived.compile_derived(expression).evaluate(DEVICE) == COMPUTES[expression]


NOT_AN_ATTRIBUTE_TYPE = {
    "1.5": "double",
    '{"a": 1}': "map(string, int)",
    "null": "null_type",
    "1u": "uint",
    'quantity("1")': "kubernetes.Quantity",
    "optional.of(1)": "optional_type(int)",
    "[[1]]": "list(list(int))",
    "device.capacity": "map(string, map(string, kubernetes.Quantity))",
    'device.attributes["gpu.example.com"]': "map(string, dyn)",
}


@pytest.mark.parametrize("expression", list(NOT_AN_ATTRIBUTE_TYPE))
def test_an_expression_of_another_type_does_not_compile(expression: str) -> None:
    with pytest.raises(CELCompileError) as info:
        derived.compile_derived(expression)
    assert str(info.value) == ("must evaluate to a primitive scalar (string, integer, boolean, semver) "
                               f"or a list of these scalars, not {NOT_AN_ATTRIBUTE_TYPE[expression]}")


def test_type_errors_are_compile_errors_with_their_position() -> None:
    with pytest.raises(CELCompileError) as info:
        derived.compile_derived('[1, "a"]')
    assert str(info.value).startswith("compilation failed: ERROR: <input>:1:5: expected type 'int' but found 'string'")


FAILS_AT_RUN_TIME = {
    "dyn(1.5)": "unsupported CEL return type: float64",
    'dyn({"a": 1})': "unsupported CEL return type: map[ref.Val]ref.Val",
    "dyn(null)": "unsupported CEL return type: structpb.NullValue",
    "dyn(1u)": "unsupported CEL return type: uint64",
    "dyn([1.5])": "unsupported list element type: float64",
    "dyn([[1]])": "unsupported list element type: []ref.Val",
    '[dyn(1), dyn("a")]': "expected list element at index 1 to be int, got string",
    '[dyn(semver("1.0.0")), dyn(1)]': "expected list element at index 1 to be semver, got int64",
    "1/0": "division by zero",
    'device.attributes["gpu.example.com"].missing': "no such key: missing",
}


@pytest.mark.parametrize("expression", list(FAILS_AT_RUN_TIME))
def test_a_value_that_is_no_attribute_fails_with_upstreams_words(expression: str) -> None:
    program = derived.compile_derived(expression)
    with pytest.raises(CELRuntimeError) as info:
        program.evaluate(DEVICE)
    assert str(info.value) == FAILS_AT_RUN_TIME[expression]


def test_selectors_keep_their_own_output_rule() -> None:
    """`1` computes an attribute but is no selector; `true` is both."""
    from dralloc.cel.selectors import compile_selector

    with pytest.raises(CELCompileError, match="must evaluate to bool or the unknown type, not int"):
        compile_selector("1")
    assert derived.compile_derived("true").evaluate(DEVICE) == ("bool", True)
