"""The expression-keyed caches of dralloc.cel are bounded LRUs (issue 26), and eviction changes nothing.

`lru.LRU` bounds entries and total weight, least recently used first; the compile caches
(`selectors.compile_selector`, `derived.compile_derived`) use it, weighed by characters of
expression text, and cache compile errors as their message.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.cel import builders

from dralloc.cel import derived, lru, selectors


def test_the_least_recently_used_entry_goes_first() -> None:
    cache: lru.LRU[str, int] = lru.LRU(3, 100)
    for key in "abc":
        cache.setdefault(key, ord(key))
    assert cache.get("a") == ord("a")  # now the most recently used
    cache.setdefault("d", 4)
    assert list(cache.data) == ["c", "a", "d"]
    assert cache.get("b") is None


def test_the_total_weight_is_bounded_and_reweighing_evicts() -> None:
    cache: lru.LRU[str, object] = lru.LRU(100, 10)
    values = {key: object() for key in "abcdef"}
    for key in "abc":
        cache.setdefault(key, values[key], 3)
    assert (len(cache), cache.weight) == (3, 9)
    cache.reweigh("a", values["a"], 5)  # a is the least recently used: it goes itself
    assert list(cache.data) == ["b", "c"] and cache.weight == 6
    cache.reweigh("b", object(), 50)  # not what is stored under b: nothing happens
    assert cache.weight == 6
    cache.setdefault("d", values["d"], 5)
    assert list(cache.data) == ["c", "d"] and cache.weight == 8
    cache.resize(1, 10)
    assert list(cache.data) == ["d"] and cache.weight == 5
    with pytest.raises(ValueError, match="positive"):
        cache.resize(0, 10)


def test_setdefault_keeps_the_first_value() -> None:
    cache: lru.LRU[str, str] = lru.LRU(4, 100)
    assert cache.setdefault("k", "first") == "first"
    assert cache.setdefault("k", "second") == "first"
    assert cache.weight == 1


@settings(max_examples=200, deadline=None)
@given(operations=st.lists(st.tuples(st.sampled_from("abcdefgh"), st.integers(0, 7), st.booleans()), max_size=60),
       entries=st.integers(1, 5), weight=st.integers(1, 20))
def test_bounds_hold_after_any_operations(operations: list[tuple[str, int, bool]], entries: int, weight: int) -> None:
    cache: lru.LRU[str, tuple[str]] = lru.LRU(entries, weight)
    values = {key: (key,) for key in "abcdefgh"}
    weights: dict[str, int] = {}
    for key, amount, get in operations:
        if get:
            cache.get(key)
        elif cache.get(key) is None:
            cache.setdefault(key, values[key], amount)
            weights[key] = amount
        else:
            cache.reweigh(key, values[key], amount)
            weights[key] = amount
        assert len(cache) <= entries
        assert cache.weight <= weight or len(cache) == 0
        assert cache.weight == sum(weights[k] for k in cache.data)


def test_threads_reading_while_others_evict() -> None:
    cache: lru.LRU[int, int] = lru.LRU(8, 1000)
    failures: list[BaseException] = []

    def work(offset: int) -> None:
        try:
            for i in range(20_000):
                key = (i * 7 + offset) % 40
                value = cache.get(key)
                if value is None:
                    value = cache.setdefault(key, key * 2, 1 + key % 3)
                assert value == key * 2
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures, failures
    assert len(cache) <= 8


@contextlib.contextmanager
def compile_limits(expressions: int, characters: int) -> Iterator[None]:
    before = selectors._compiled.entries_limit, selectors._compiled.weight_limit
    selectors.set_cache_limit(expressions, characters)
    try:
        yield
    finally:
        selectors.set_cache_limit(*before)


def test_the_compile_cache_keeps_at_most_its_limit_of_selectors() -> None:
    texts = [f'device.attributes["gpu.example.com"].numa == {i}' for i in range(40)]
    with compile_limits(10, 1 << 20):
        for text in texts:
            selectors.compile_selector(text)
            assert len(selectors._compiled) <= 10
        assert set(selectors._compiled.data) == set(texts[-10:])
        # Evicted, compiled again: the same answers.
        device = builders.gpu({"numa": {"int": 3}})
        assert [selectors.compile_selector(text).evaluate(device) for text in texts] == [i == 3 for i in range(40)]


def test_the_compile_cache_is_bounded_by_characters_too() -> None:
    texts = [f'device.attributes["gpu.example.com"].model == "{"m" * 200}{i}"' for i in range(30)]
    with compile_limits(1000, 2000):
        for text in texts:
            selectors.compile_selector(text)
            assert selectors._compiled.weight <= 2000
        assert len(selectors._compiled) <= 2000 // len(texts[0])


def test_an_evicted_compile_error_is_the_same_error() -> None:
    broken = 'device.attributes["gpu.example.com"].model =='
    with pytest.raises(selectors.CELCompileError) as first:
        selectors.compile_selector(broken)
    with compile_limits(2, 1 << 20):
        for i in range(5):
            selectors.compile_selector(f"{i} == {i}")
        assert broken not in selectors._compiled.data
        with pytest.raises(selectors.CELCompileError) as again:
            selectors.compile_selector(broken)
    assert str(again.value) == str(first.value)
    assert "compilation failed" in str(first.value)


def test_the_check_without_list_values_is_bounded_and_stays_an_error() -> None:
    text = 'device.attributes["gpu.example.com"].tags.exists(t, t == "x")'
    with pytest.raises(selectors.CELCompileError) as first:
        selectors.compile_selector(text, list_values=False)
    with compile_limits(2, 1 << 20):
        for i in range(5):
            selectors.compile_selector(f"{i} == {i}", list_values=False)
        assert len(selectors._without_list_values) <= 2
        with pytest.raises(selectors.CELCompileError) as again:
            selectors.compile_selector(text, list_values=False)
    assert str(again.value) == str(first.value)
    assert selectors.compile_selector(text) is not None  # compiles with list values


def test_derived_expressions_are_cached_in_a_bounded_lru() -> None:
    cache = derived._compiled
    before = cache.entries_limit, cache.weight_limit
    cache.resize(3, 1 << 20)
    try:
        for i in range(10):
            assert derived.compile_derived(f"{i} + 1").expression == f"{i} + 1"
            assert len(cache) <= 3
        with pytest.raises(selectors.CELCompileError) as first:
            derived.compile_derived("1 +")
        assert cache.get("1 +") is not None  # the error is cached, as its message
        for i in range(5):
            derived.compile_derived(f"{i} + 2")
        with pytest.raises(selectors.CELCompileError) as again:
            derived.compile_derived("1 +")
        assert str(again.value) == str(first.value)
    finally:
        cache.resize(*before)
