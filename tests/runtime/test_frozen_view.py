"""A big cluster view is frozen out of the cyclic garbage collector once listed; a small one is not."""

from __future__ import annotations

import gc

from dralloc.handlers import operating
from dralloc.handlers.runtime import Runtime
from dralloc.settings import Settings
from dralloc.testing import cluster


def _runtime(nodes: int) -> Runtime:
    rt = Runtime(Settings())
    rt.cluster.replace_all("Node", [cluster.node(f"node-{i:04d}") for i in range(nodes)])
    rt.cluster.replace_all("ResourceSlice", [cluster.gpu_slice(f"node-{i:04d}", 2) for i in range(nodes)])
    return rt


def test_a_big_view_is_frozen_and_a_small_one_is_not() -> None:
    gc.unfreeze()
    try:
        operating._freeze_the_view(_runtime(10))
        assert gc.get_freeze_count() == 0
        big = _runtime(operating.FREEZE_AT // 2)
        operating._freeze_the_view(big)
        assert gc.get_freeze_count() > 0
        # The view reads as before.
        assert len(list(big.cluster.slices.all())) == operating.FREEZE_AT // 2
    finally:
        gc.unfreeze()
