"""Devices alike in what a selector reads share its result, exactly as if each were evaluated.

`allocation.selectors.evaluate` keeps a result per (expression, view, the values the
selector reads of the device) when the fast path names what it reads
(`fastpath.device_reads`): a fleet's GPUs differ in UUIDs and bus addresses, not in the
model a selector compares. These tests evaluate random selectors on random devices through
that shared memo, in one process (so later devices hit what earlier ones stored), and
compare every result and error message with the celpy reference program run on the
device's own CEL value.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.builders import built, slice_
from tests.cel.test_fastpath_equivalence import _AMOUNT as AMOUNTS
from tests.cel.test_fastpath_equivalence import _ATTRIBUTE as ATTRIBUTES
from tests.cel.test_fastpath_equivalence import _TYPICAL as TYPICAL
from tests.cel.test_fastpath_equivalence import CAPACITY_IDS, DOMAINS, DRIVER, EXPRESSIONS, IDS, SELECTORS

from dralloc.allocation import errors, selectors
from dralloc.allocation.pools import DeviceInfo
from dralloc.cel import devices as cel_devices
from dralloc.cel import fastpath, grammar
from dralloc.cel import selectors as cel_selectors


def _qualified(domain: str, ident: str, short: bool) -> str:
    return ident if domain == DRIVER and short else f"{domain}/{ident}"


@st.composite
def device_specs(draw: st.DrawFn) -> dict[str, Any]:
    """A device as a slice publishes it; attributes of the driver's domain under either name form."""
    attributes: dict[str, Any] = {}
    for domain in DOMAINS[:2]:
        for ident in IDS:
            if draw(st.integers(0, 3)):
                typical = TYPICAL[ident] if draw(st.integers(0, 4)) else ATTRIBUTES
                attributes[_qualified(domain, ident, draw(st.booleans()))] = draw(typical)
    # Per-device values no selector here reads: what makes real devices differ.
    attributes["uuid"] = {"string": f"GPU-{draw(st.integers(0, 10**6))}"}
    capacity: dict[str, Any] = {}
    for domain in DOMAINS[:2]:
        for ident in CAPACITY_IDS:
            if draw(st.booleans()):
                capacity[_qualified(domain, ident, draw(st.booleans()))] = {"value": draw(AMOUNTS)}
    return {"attributes": attributes, "capacity": capacity,
            "allowMultipleAllocations": draw(st.booleans())}


def _infos(specs: list[dict[str, Any]], driver: str) -> list[DeviceInfo]:
    named = [{"name": f"gpu-{i}", **spec} for i, spec in enumerate(specs)]
    slice_model = built(slice_("s1", driver=driver, devices=named))
    return [DeviceInfo(slice_model, device) for device in slice_model.spec.devices]


def _reference(info: DeviceInfo, expression: str, view: selectors.CelView) -> tuple[str, object]:
    env = cel_devices.device_env(
        driver=info.driver, attributes={n: a.raw() for n, a in info.device.attributes.items()},
        capacity={n: c.value for n, c in info.device.capacity.items()},
        allow_multiple_allocations=info.allow_multiple and view.allow_multiple, list_values=view.list_values)
    try:
        return "value", cel_selectors.compile_reference(expression).evaluate(env)
    except cel_selectors.CELRuntimeError as exc:
        message = str(exc)
        if "no such key:" in message:
            message += selectors.NO_SUCH_KEY_HINT
        return "error", f"owner: selector #0 on device {info.id}: CEL runtime error: {message}"


def _shared(info: DeviceInfo, expression: str, view: selectors.CelView) -> tuple[str, object]:
    try:
        return "value", selectors.evaluate(info, expression, owner="owner", index=0, view=view)
    except errors.InvalidSelectorError as exc:
        return "error", str(exc)


def _check(expression: str, specs: list[dict[str, Any]], driver: str, view: selectors.CelView) -> None:
    try:
        cel_selectors.compile_selector(expression, list_values=view.list_values)
    except cel_selectors.CELCompileError:
        return
    # Twice over fresh DeviceInfos: the second round finds every result in the shared memo.
    for _ in range(2):
        for info in _infos(specs, driver):
            assert _shared(info, expression, view) == _reference(info, expression, view), (expression, info.id)


VIEWS = st.sampled_from([selectors.FULL_VIEW, selectors.CelView(allow_multiple=False),
                         selectors.CelView(list_values=False)])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(expression=EXPRESSIONS, specs=st.lists(device_specs(), min_size=1, max_size=4),
       driver=st.sampled_from([DRIVER, DRIVER, "other.example.com"]), view=VIEWS)
def test_shared_results_match_each_devices_own_evaluation(expression: str, specs: list[dict[str, Any]],
                                                          driver: str, view: selectors.CelView) -> None:
    _check(expression, specs, driver, view)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(expression=SELECTORS, specs=st.lists(device_specs(), min_size=1, max_size=4),
       driver=st.sampled_from([DRIVER, "other.example.com"]), view=VIEWS)
def test_typed_selectors_share_results_exactly(expression: str, specs: list[dict[str, Any]], driver: str,
                                               view: selectors.CelView) -> None:
    _check(expression, specs, driver, view)


def test_devices_differing_only_in_unread_attributes_share_one_evaluation() -> None:
    expression = f'device.attributes["{DRIVER}"].model == "a100" && device.driver == "{DRIVER}"'
    specs = [{"attributes": {"model": {"string": "a100"}, "uuid": {"string": f"GPU-{i}"}}} for i in range(50)]
    before = selectors.STATS.evaluated
    infos = _infos(specs, DRIVER)
    assert all(selectors.evaluate(info, expression, owner="o", index=0) for info in infos)
    assert selectors.STATS.evaluated - before == 50  # each device asked once ...
    # ... but only the first built its CEL value: the others found the shared result.
    assert sum(selectors._key(selectors.FULL_VIEW, selectors._CEL_ENV) in info.selector_results
               for info in infos) <= 1


@pytest.mark.parametrize(("expression", "reads"), [
    ('device.driver == "x" && device.attributes["x"].type == "gpu"',
     (("attributes", "x", "type"), ("device", "driver"))),
    ('device.capacity["x"].memory.compareTo(quantity("40Gi")) >= 0', (("capacity", "x", "memory"),)),
    ('has(device.attributes["a"].b) || device.attributes["a"]["c/d"] == 1',
     (("attributes", "a", "b"), ("attributes", "a", "c/d"))),
    ("device.allowMultipleAllocations", (("device", "allowMultipleAllocations"),)),
    ('"a" in device.attributes', None),  # the domain map as a whole
    ('device.attributes["a"] == device.attributes["b"]', None),
])
def test_reads_name_single_fields_or_nothing(expression: str, reads: object) -> None:
    tree = grammar.parse(expression)
    assert fastpath.device_reads(tree) == reads


def test_a_name_with_both_forms_on_one_device_is_not_shared() -> None:
    """`model` and `gpu.example.com/model` on one device: which one CEL sees is the CEL value's
    business, so that device is evaluated on its own."""
    spec = {"attributes": {"model": {"string": "a100"}, f"{DRIVER}/model": {"string": "h100"}}}
    expression = f'device.attributes["{DRIVER}"].model == "a100"'
    (info,) = _infos([spec], DRIVER)
    assert _shared(info, expression, selectors.FULL_VIEW) == _reference(info, expression, selectors.FULL_VIEW)
