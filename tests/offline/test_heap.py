"""offline.heap.LongLived: the collector is off while building, frozen objects are left out after, and
everything is as before once the block ends, also when it raises."""

from __future__ import annotations

import gc

import pytest

from dralloc.offline import heap


def test_the_collector_is_off_while_building_and_back_after_built() -> None:
    assert gc.isenabled()
    with heap.LongLived() as long_lived:
        assert not gc.isenabled()
        built = [[i] for i in range(100)]
        long_lived.built()
        assert gc.isenabled()
        assert gc.get_freeze_count() >= len(built)
    assert gc.get_freeze_count() == 0
    assert gc.isenabled()


def test_leaving_early_with_an_error_turns_the_collector_back_on() -> None:
    with pytest.raises(RuntimeError), heap.LongLived():
        raise RuntimeError("input error while reading")
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0


def test_a_disabled_collector_stays_disabled() -> None:
    gc.disable()
    try:
        with heap.LongLived() as long_lived:
            long_lived.built()
            assert not gc.isenabled()
        assert not gc.isenabled()
        assert gc.get_freeze_count() == 0
    finally:
        gc.enable()
