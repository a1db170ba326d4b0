"""The memo of selector results is bounded, and evicting from it changes no result.

`allocation.selectors` keeps each expression's results per device in a least-recently-used
map of at most `CACHE_EXPRESSIONS` expressions and `CACHE_RESULTS` results (issue 26: tenants
writing ever new selectors made the operator's memory grow without end). These tests count
what the map holds after more distinct selectors than it keeps, check that an evicted
selector gives the same result (or the same error) when evaluated again, compare random
evaluation sequences under a tiny limit with the same sequences under no eviction, and
measure with tracemalloc what the memo holds after 2,000 selectors over 2,000 devices.
"""

from __future__ import annotations

import contextlib
import gc
import threading
import tracemalloc
from collections.abc import Iterator
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.builders import built, slice_

from dralloc.allocation import errors, selectors
from dralloc.allocation.pools import DeviceInfo

DRIVER = "gpu.example.com"


@contextlib.contextmanager
def memo_limits(expressions: int, results: int | None = None) -> Iterator[None]:
    """The memo emptied and bounded as given for the block; its former limits after."""
    memo = selectors._MEMO
    before = memo.entries_limit, memo.weight_limit
    memo.clear()
    selectors.set_cache_limit(expressions, results)
    try:
        yield
    finally:
        memo.clear()
        memo.resize(*before)


def infos(count: int, *, per_slice: int = 100, name: str = "s") -> list[DeviceInfo]:
    """`count` GPUs (model, numa, memory; a UUID each) in slices of `per_slice`."""
    found: list[DeviceInfo] = []
    models = ("a100", "h100", "t4")
    for first in range(0, count, per_slice):
        devices = [{"name": f"gpu-{i}", "attributes": {"model": {"string": models[i % 3]}, "numa": {"int": i % 2},
                                                      "uuid": {"string": f"GPU-{i}"}},
                    "capacity": {"memory": {"value": f"{16 * (1 + i % 6)}Gi"}}}
                   for i in range(first, min(count, first + per_slice))]
        model = built(slice_(f"{name}-{first}", pool=f"{name}-{first}", devices=devices))
        found += [DeviceInfo(model, device) for device in model.spec.devices]
    return found


def outcome(info: DeviceInfo, expression: str, view: selectors.CelView = selectors.FULL_VIEW) -> tuple[str, Any]:
    try:
        return "value", selectors.evaluate(info, expression, owner="owner", index=0, view=view)
    except errors.InvalidSelectorError as exc:
        return "error", str(exc)


def held() -> tuple[int, int]:
    """(expressions, results) the memo really holds, counted (not its own weights)."""
    memos = list(selectors._MEMO.data.values())
    return len(memos), sum(memo.size() for memo in memos)


def test_the_memo_never_holds_more_expressions_than_its_limit() -> None:
    devices = infos(200)
    with memo_limits(8):
        for i in range(50):
            expression = f'device.attributes["{DRIVER}"].numa == {i % 2} && device.driver == "{DRIVER}{"x" * i}"'
            for info in devices:
                outcome(info, expression)
            expressions, results = held()
            assert expressions <= 8
            assert results <= 8 * (len(devices) + 4)  # a result per device, and what alike devices share
        assert selectors.cache_usage()[0] == 8


def test_the_memo_never_holds_many_more_results_than_its_limit() -> None:
    devices = infos(300)
    with memo_limits(1024, results=1000):
        for i in range(40):
            for info in devices:
                outcome(info, f'device.driver == "{DRIVER}" || {i} == 0')
            # Each memo is weighed every WEIGH_EVERY results, so it may hold that many more.
            expressions, results = held()
            assert results <= 1000 + expressions * selectors.WEIGH_EVERY
            assert selectors.cache_usage()[1] <= 1000


def test_an_evicted_selector_gives_the_same_result_and_the_same_error() -> None:
    devices = infos(30)
    texts = [f'device.attributes["{DRIVER}"].model == "a100"',
             'device.driver == "gpu.example.com"',
             f'device.attributes["{DRIVER}"].nosuch == 1',  # a runtime error on every device
             f'device.attributes["{DRIVER}"].model ==',  # a compile error
             f'cel.bind(a, device.attributes["{DRIVER}"], a.numa == 1 && a.model.startsWith("a"))']
    with memo_limits(2, results=64):
        first = {(text, info.id): outcome(info, text) for text in texts for info in devices}
        assert selectors.cache_usage()[0] <= 2
        before = selectors.STATS.evaluated
        again = {(text, info.id): outcome(info, text) for text in texts for info in devices}
        assert selectors.STATS.evaluated - before >= len(devices)  # evicted: evaluated again
    assert again == first
    errors_seen = {value for (text, _), (kind, value) in first.items() if kind == "error"}
    assert any("CEL runtime error: no such key: nosuch" in message for message in errors_seen)
    assert any("CEL compile error" in message for message in errors_seen)
    assert first[(texts[0], devices[0].id)] == ("value", True)
    assert first[(texts[0], devices[1].id)] == ("value", False)


# A few devices and selectors covering every kind of result: the driver comparison (no CEL
# engine), typed reads shared by alike devices, the celpy program, runtime and compile errors,
# attributes that do not convert, a list attribute under the view without list values.
_DEVICES = [
    {"model": {"string": "a100"}, "numa": {"int": 1}},
    {"model": {"string": "a100"}, "numa": {"int": 1}, "uuid": {"string": "GPU-1"}},
    {"model": {"string": "t4"}, "numa": {"int": 0}, "tags": {"strings": ["x", "y"]}},
    {"numa": {"int": 2}},
    {"model": {"string": "a100"}, "driverVersion": {"version": "not-a-version"}},
]
_EXPRESSIONS = [
    f'device.driver == "{DRIVER}"',
    'device.driver == "other.example.com"',
    f'device.attributes["{DRIVER}"].model == "a100"',
    f'device.attributes["{DRIVER}"].numa > 0 && device.capacity["{DRIVER}"].memory.compareTo(quantity("40Gi")) >= 0',
    f'cel.bind(a, device.attributes["{DRIVER}"], has(a.model) && a.model.startsWith("a"))',
    f'device.attributes["{DRIVER}"].model +',
    f'has(device.attributes["{DRIVER}"].tags) && device.attributes["{DRIVER}"].tags.exists(t, t == "x")',
    "device.allowMultipleAllocations",
    f'device.attributes["{DRIVER}"].numa / 0 == 1',
]
_VIEWS = [selectors.FULL_VIEW, selectors.CelView(allow_multiple=False), selectors.CelView(list_values=False)]
_INFOS: list[DeviceInfo] = []


def _fixed_infos() -> list[DeviceInfo]:
    if not _INFOS:
        devices = [{"name": f"d{i}", "attributes": attributes, "allowMultipleAllocations": i % 2 == 0,
                    "capacity": {"memory": {"value": "80Gi"}}} for i, attributes in enumerate(_DEVICES)]
        model = built(slice_("fixed", pool="fixed", devices=devices))
        _INFOS.extend(DeviceInfo(model, device) for device in model.spec.devices)
    return _INFOS


STEPS = st.lists(st.tuples(st.integers(0, len(_EXPRESSIONS) - 1), st.integers(0, len(_DEVICES) - 1),
                           st.integers(0, len(_VIEWS) - 1)), min_size=1, max_size=40)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=STEPS, expressions=st.integers(1, 3), results=st.integers(1, 6))
def test_results_under_a_tiny_limit_equal_results_without_eviction(
        steps: list[tuple[int, int, int]], expressions: int, results: int) -> None:
    devices = _fixed_infos()

    def run() -> list[tuple[str, Any]]:
        return [outcome(devices[d], _EXPRESSIONS[e], _VIEWS[v]) for e, d, v in steps]

    with memo_limits(expressions, results):
        tiny = run()
        assert len(selectors._MEMO) <= expressions
    with memo_limits(10_000, 10_000_000):
        unbounded = run()
    assert tiny == unbounded


def test_a_rebuilt_snapshot_keeps_the_results_of_unchanged_slices() -> None:
    """DeviceInfos made again from the same slice objects (a new SliceIndex) find their results;
    a new slice object is evaluated afresh."""
    first = infos(10)
    text = f'device.attributes["{DRIVER}"].model == "a100"'
    with memo_limits(16):
        expected = [outcome(info, text) for info in first]
        rebuilt = [DeviceInfo(info.slice, info.device) for info in first]
        before = selectors.STATS.evaluated
        assert [outcome(info, text) for info in rebuilt] == expected
        assert selectors.STATS.evaluated == before
        fresh = infos(10)  # equal slices, other objects
        assert [outcome(info, text) for info in fresh] == expected
        assert selectors.STATS.evaluated == before + 10


def test_serials_of_a_slice_go_with_the_slice_object() -> None:
    with memo_limits(16):
        devices = infos(5, name="gone")
        outcome(devices[0], 'device.driver == "x"')
        key = id(devices[0].slice)
        assert key in selectors._SLICE_SERIALS
        del devices
        gc.collect()
        assert key not in selectors._SLICE_SERIALS


def test_threads_evaluating_under_a_tiny_limit_get_the_right_results() -> None:
    devices = infos(200)
    texts = [f'device.attributes["{DRIVER}"].numa == {i % 2} && {i} >= 0' for i in range(12)]
    expected = {text: [info.attributes[f"{DRIVER}/numa"].kind_and_value() == ("int", i % 2) for info in devices]
                for i, text in enumerate(texts)}
    failures: list[BaseException] = []

    def work(offset: int) -> None:
        try:
            for round_ in range(3):
                for text in texts[offset:] + texts[:offset]:
                    got = [selectors.evaluate(info, text, owner="o", index=0) for info in devices]
                    assert got == expected[text], (text, round_)
        except BaseException as exc:  # reported below, in the test's thread
            failures.append(exc)

    with memo_limits(3, results=500):
        threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(selectors._MEMO) <= 3
    assert not failures, failures


def test_memory_after_2000_selectors_over_2000_devices_is_bounded_by_the_limit() -> None:
    """What the memo holds grows with its limit, not with the selectors tenants wrote.

    With the memo on each device (before issue 26) this held every result: 4,000,000 of them,
    over 100 MiB.
    """
    devices = infos(2000)
    texts = [f'device.driver == "{DRIVER}-{i}"' for i in range(2000)]  # no CEL engine: fast enough
    limit = 50
    with memo_limits(limit):
        gc.collect()
        tracemalloc.start()
        try:
            for text in texts:
                for info in devices:
                    selectors.evaluate(info, text, owner="o", index=0)
            gc.collect()
            used, _ = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert held()[0] == limit
    # A result is a dict entry (about 40 bytes, dicts grow by doubling); allow 100 bytes, plus
    # 2 MiB for the rest (serials, the memos themselves, the interpreter's own).
    bound = limit * len(devices) * 100 + (2 << 20)
    assert used < bound, f"{used / 2**20:.1f} MiB held, bound {bound / 2**20:.1f} MiB"
