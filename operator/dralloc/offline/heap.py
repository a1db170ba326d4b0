"""Keeping CPython's cyclic garbage collector off the large object graphs offline commands build.

Reading a snapshot allocates millions of long-lived objects (parsed YAML, model objects,
indexes). Every few hundred allocations the collector runs, and each older-generation pass
traverses all of them although none is garbage: on bench w1 that was a quarter of `dralloc
simulate`'s run time, while reading and again while placing. Reference counting still frees
everything as usual; only cycles wait for the collector.
"""

from __future__ import annotations

import gc
from types import TracebackType


class LongLived:
    """`with LongLived() as heap:` build the long-lived objects, `heap.built()`, then use them.

    Until `built()` the collector is off (nothing it could find is garbage yet); `built()`
    freezes every object alive then (gc.freeze: left out of all later collections) and turns
    the collector back on for what comes after (placement's short-lived objects). Leaving
    the block unfreezes them, so they are collectable as before.
    """

    def __enter__(self) -> LongLived:
        self._enabled = gc.isenabled()
        self._frozen = False
        gc.disable()
        return self

    def built(self) -> None:
        if not self._frozen:
            # Freeze first: turning the collector on with millions of objects in its youngest
            # generation would make the next allocation traverse them all.
            gc.freeze()
            self._frozen = True
            if self._enabled:
                gc.enable()

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        if self._frozen:
            gc.unfreeze()
        elif self._enabled:
            gc.enable()
