"""Each construct of the fast-path subset, on the typical GPU, against the celpy reference.

Every row must compile to closures (`has_fast_path`), give the expected outcome,
and agree with `compile_reference` exactly (same bool, or same error message).
"""

from __future__ import annotations

import pytest
from tests.cel import builders

from dralloc.cel import devices, selectors

_G = 'device.attributes["gpu.example.com"]'
_C = 'device.capacity["gpu.example.com"]'


def _outcome(selector: selectors.CompiledSelector, env: devices.DeviceEnv) -> object:
    try:
        return selector.evaluate(env)
    except selectors.CELRuntimeError as exc:
        return f"error: {exc}"


def _check(expression: str, expected: object, env: devices.DeviceEnv | None = None) -> None:
    env = builders.gpu() if env is None else env
    selector = selectors.compile_selector(expression)
    assert selector.has_fast_path
    fast = _outcome(selector, env)
    reference = _outcome(selectors.compile_reference(expression), env)
    assert fast == reference
    if isinstance(expected, bool):
        assert fast is expected
    else:
        assert isinstance(fast, str)
        assert str(expected) in fast


@pytest.mark.parametrize(("expression", "expected"), [
    # Device fields and literals.
    pytest.param('device.driver == "gpu.example.com"', True, id="driver"),
    pytest.param("device.allowMultipleAllocations", False, id="allow-multiple"),
    pytest.param("!device.allowMultipleAllocations", True, id="not"),
    pytest.param("!!true", True, id="double-not"),
    pytest.param('"a" == \'a\' && """a""" == r"a"', True, id="string-literal-forms"),
    pytest.param(r'"\x41\u0042" == "AB"', True, id="string-escapes"),
    pytest.param("0x10 == 16 && -1 < 0", True, id="int-literals"),
    pytest.param("1.5 > 1.25 && 2.0 == 2.0", True, id="double-literals"),
    pytest.param("true != false", True, id="bool-literals"),
    pytest.param("(true)", True, id="parentheses"),
    # Attribute and capacity lookups.
    pytest.param(f'{_G}.model == "a100"', True, id="string-attribute"),
    pytest.param(f'{_G}["model"] == "a100"', True, id="index-form"),
    pytest.param(f"{_G}.numa == 1 && {_G}.numa >= 1 && {_G}.numa < 2", True, id="int-attribute"),
    pytest.param(f"{_G}.ecc", True, id="bool-attribute"),
    pytest.param('device.attributes["nic.example.com"].ports.includes(4)', True, id="prefixed-int-list"),
    pytest.param(f'{_G}.tags.includes("fast") && !{_G}.tags.includes("slow")', True, id="string-list"),
    pytest.param(f'{_G}.model.includes("a100")', True, id="includes-on-scalar"),
    pytest.param(f'{_C}.memory.compareTo(quantity("40Gi")) >= 0', True, id="capacity-compare-to"),
    pytest.param('device.capacity["nic.example.com"].bandwidth == quantity("100G")', True,
                 id="capacity-equality"),
    # Missing ids and unknown domains.
    pytest.param(f"{_G}.gone == 1", "no such key: gone", id="missing-id"),
    pytest.param(f'{_G}["gone"] == 1', "no such key: gone", id="missing-id-index-form"),
    pytest.param('device.attributes["unknown.example.com"].x == 1', "no such key: x", id="unknown-domain"),
    pytest.param('device.capacity["unknown.example.com"].memory == quantity("1")', "no such key: memory",
                 id="unknown-capacity-domain"),
    pytest.param(f"has({_G}.numa) && !has({_G}.gone)", True, id="has"),
    pytest.param('!has(device.attributes["unknown.example.com"].x)', True, id="has-unknown-domain"),
    pytest.param(f"has({_C}.memory)", True, id="has-capacity"),
    pytest.param("has(device.driver)", True, id="has-device-field"),
    pytest.param(f'"numa" in {_G} && !("gone" in {_G})', True, id="in-domain"),
    pytest.param('!("x" in device.attributes["unknown.example.com"])', True, id="in-unknown-domain"),
    pytest.param('"gpu.example.com" in device.attributes && !("x.example.com" in device.attributes)', True,
                 id="in-domains"),
    pytest.param(f"{_G}.numa in {_G}", False, id="non-string-in-domain"),
    pytest.param(f'{_G}.model in ["a100", "h100"]', True, id="in-list-literal"),
    pytest.param(f"{_G}.numa in [1.0, 2.0]", True, id="in-list-heterogeneous"),
    pytest.param(f'"fast" in {_G}.tags', True, id="in-attribute-list"),
    # Errors and how && / || absorb them.
    pytest.param(f"false && {_G}.gone", False, id="false-and-error"),
    pytest.param(f"{_G}.gone && false", False, id="error-and-false"),
    pytest.param(f"true || {_G}.gone", True, id="true-or-error"),
    pytest.param(f"{_G}.gone || true", True, id="error-or-true"),
    pytest.param(f"true && {_G}.gone", "no such key: gone", id="true-and-error"),
    pytest.param(f"{_G}.gone || false", "no such key: gone", id="error-or-false"),
    pytest.param(f"{_G}.gone && {_G}.lost", "no such key: gone", id="first-error-wins"),
    pytest.param(f"{_G}.model && true", "no such overload", id="non-bool-in-and"),
    pytest.param(f"false || {_G}.numa", "no such overload", id="non-bool-in-or"),
    # cel-go: the first operand that is not a bool decides (oracle-checked both ways).
    pytest.param(f"{_G}.model && {_G}.gone", "no such overload", id="first-non-bool-decides"),
    pytest.param(f"{_G}.gone && {_G}.model", "no such key: gone", id="first-error-decides"),
    pytest.param(f"!{_G}.gone", "no such key: gone", id="not-of-error"),
    pytest.param(f"!{_G}.model", "no such overload", id="not-of-string"),
    pytest.param(f"!({_G}.gone && true)", "no such key: gone", id="not-of-error-value"),
    pytest.param(f"{_G}.numa", "CEL result of type int could not be converted to bool", id="non-bool-result"),
    pytest.param(f"true ? {_G}.numa : true", "CEL result of type int could not be converted to bool",
                 id="non-bool-branch"),
    pytest.param(f"{_G}.ecc ? true : {_G}.gone", True, id="ternary-skips-branch"),
    pytest.param(f"{_G}.model ? true : false", "no such overload", id="ternary-non-bool"),
    # Heterogeneous comparisons go to the reference operators.
    pytest.param(f"{_G}.numa == 1.0", True, id="int-equals-double"),
    pytest.param(f'{_G}.numa == "1"', False, id="int-never-equals-string"),
    pytest.param(f"{_G}.ecc == 1", False, id="bool-never-equals-int"),
    pytest.param(f"{_G}.numa < 1.5", True, id="int-less-than-double"),
    pytest.param(f"{_G}.model > 1", "no such overload", id="string-greater-than-int"),
    # Quantities do not order (`<` on one is a compile error); semvers neither.
    pytest.param(f"{_G}.driverVersion < {_G}.driverVersion", "no such overload: _<_", id="no-semver-ordering"),
    pytest.param('"a" < "b" && "b" >= "b" && false < true', True, id="same-type-ordering"),
    pytest.param(f'{_G}.driverVersion == semver("1.2.3")', True, id="semver-equality"),
    pytest.param(f"{_G}.tags == [\"fast\", \"big\"]", True, id="list-equality"),
    # Quantity library.
    pytest.param(f'{_C}.memory.isGreaterThan(quantity("40Gi"))', True, id="is-greater-than"),
    pytest.param(f'{_C}.memory.isLessThan(quantity("40Gi"))', False, id="is-less-than"),
    pytest.param('sign(quantity("-3")) == -1', True, id="sign"),
    pytest.param('quantity("1500m").isInteger()', False, id="is-integer"),
    pytest.param('quantity("1Ki").asInteger() == 1024', True, id="as-integer"),
    pytest.param('quantity("1500m").asInteger() == 1', "cannot convert value to integer", id="as-integer-error"),
    pytest.param('quantity("1.5").asApproximateFloat() == 1.5', True, id="as-approximate-float"),
    pytest.param(f'{_C}.memory.add(quantity("1Gi")) == quantity("81Gi")', True, id="add"),
    pytest.param(f'{_C}.memory.sub(1) == quantity("1")', False, id="sub-int"),
    pytest.param('quantity("1GB") == quantity("1")', "quantities must match", id="bad-quantity-literal"),
    pytest.param(f"{_C}.memory.compareTo({_G}.numa) == 0",
                 "no such overload: compareTo(kubernetes.Quantity, int)", id="compare-to-int"),
    pytest.param('isQuantity("1Gi") && !isQuantity("x")', True, id="is-quantity"),
    # Semver library.
    pytest.param(f'{_G}.driverVersion.isGreaterThan(semver("1.2.0"))', True, id="semver-greater"),
    pytest.param(f'{_G}.driverVersion.isLessThan(semver("1.10.0"))', True, id="semver-less"),
    pytest.param(f'{_G}.driverVersion.compareTo(semver("1.2.3")) == 0', True, id="semver-compare-to"),
    pytest.param(f"{_G}.driverVersion.major() == 1 && {_G}.driverVersion.minor() == 2 && "
                 f"{_G}.driverVersion.patch() == 3", True, id="semver-parts"),
    pytest.param('semver("v1.2", true) == semver("1.2.0")', True, id="semver-normalized"),
    pytest.param('semver("nope").major() == 1', "No Major.Minor.Patch elements found", id="bad-semver-literal"),
    pytest.param(f'{_G}.driverVersion.compareTo(quantity("1")) == 0', "no such overload", id="semver-vs-quantity"),
    pytest.param('isSemver("1.0.0")', True, id="is-semver"),
    # Strings.
    pytest.param(f'{_G}.model.startsWith("a1") && {_G}.model.endsWith("00") && {_G}.model.contains("10")',
                 True, id="starts-ends-contains"),
    pytest.param(f'{_G}.model.matches("^a[0-9]+$") && matches({_G}.model, "1")', True, id="matches"),
    pytest.param(f'{_G}.model.upperAscii() == "A100" && "AbC".lowerAscii() == "abc"', True, id="case"),
    pytest.param(f"{_G}.model.size() == 4 && size({_G}.tags) == 2", True, id="size"),
    pytest.param(f"{_G}.numa.size() == 1", "no such overload", id="size-of-int"),
    pytest.param(f'{_G}.numa.startsWith("1")', "no such overload", id="starts-with-on-int"),
])
def test_construct(expression: str, expected: object) -> None:
    """Fast path, reference and expectation agree."""
    _check(expression, expected)


def test_bad_regex_from_an_attribute() -> None:
    """A pattern known only at run time fails there, in Go's words, on both paths (a constant
    one is a compile error: test_compile_errors)."""
    env = builders.gpu({"model": {"string": "a100"}, "pattern": {"string": "("}})
    _check(f"{_G}.model.matches({_G}.pattern)", "error parsing regexp: missing closing ): `(`", env)


def test_device_with_bad_attribute_fails_every_selector() -> None:
    """The device's own error comes first, on both paths."""
    env = builders.gpu({"v": {"version": "v1"}})
    _check('device.driver == "gpu.example.com"', "attribute v: parse semantic version", env)


@pytest.mark.parametrize("expression", [
    pytest.param('cel.bind(m, device.attributes["gpu.example.com"].model, m == "a100")', id="cel-bind"),
    pytest.param('device.attributes["gpu.example.com"].tags.exists(t, t == "fast")', id="macro"),
    pytest.param('device.attributes["gpu.example.com"].numa + 1 == 2', id="arithmetic"),
    pytest.param("1u == 1u", id="uint-literal"),
    pytest.param('device.attributes["gpu.example.com"].size() == 5', id="domain-map-as-value"),
    pytest.param('device.attributes["gpu.example.com"].tags.join("-") == "fast-big"', id="other-function"),
    pytest.param('device.attributes[device.driver].numa == 1', id="computed-domain"),
    pytest.param('{"a": 1}["a"] == 1', id="map-literal"),
])
def test_outside_the_subset_runs_on_celpy(expression: str) -> None:
    """Such selectors have no fast path and still evaluate (to true on the typical GPU)."""
    selector = selectors.compile_selector(expression)
    assert not selector.has_fast_path
    assert selector.evaluate(builders.gpu()) is True


def test_fast_path_does_not_build_the_celpy_scope() -> None:
    """The per-device celpy conversion is skipped entirely for subset selectors."""
    env = builders.gpu()
    assert selectors.compile_selector(f'{_C}.memory.compareTo(quantity("40Gi")) >= 0').evaluate(env)
    assert env._scope is None
    selectors.compile_reference('device.driver == "x"').evaluate(env)
    assert env._scope is not None


def test_reference_selector_shares_the_text_and_is_memoized() -> None:
    """compile_reference returns the celpy-only twin of the memoized selector."""
    text = 'device.driver == "twin.example.com"'
    reference = selectors.compile_reference(text)
    assert reference is selectors.compile_reference(text)
    assert reference.expression == text
    assert not reference.has_fast_path
    assert selectors.compile_selector(text).has_fast_path


def test_reference_path_reports_compile_errors_too() -> None:
    """compile_reference compiles through the same checks."""
    with pytest.raises(selectors.CELCompileError):
        selectors.compile_reference("device.nope")
