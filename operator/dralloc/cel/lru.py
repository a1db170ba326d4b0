"""A least-recently-used map bounded by its number of entries and by a total weight.

The caches keyed by expression text use it, so that tenants writing ever new selectors
cannot make the operator's memory grow without end: compiled selectors and compile errors
(`selectors`, weighed by their text), compiled derived attributes (`derived`), and the
selector results per device (`dralloc.allocation.selectors`, weighed by how many results
an expression holds). Whatever is evicted is computed again when next asked for.

Safe for several threads without a lock on the read path: `get` (and a caller reading
`data` directly, then calling `touch`) uses only operations that are atomic under the GIL
(a dict lookup, `OrderedDict.move_to_end`). Every change takes the lock, held only for the
map's own updates, never while a value is computed: two threads missing one key may both
compute it, and `setdefault` keeps whichever was stored first.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class LRU(Generic[K, V]):
    """At most `entries` keys and `weight` total weight; the least recently used go first.

    Values are never None (`get` answers None for a missing key).
    """

    __slots__ = ("_lock", "_weights", "data", "entries_limit", "weight", "weight_limit")

    def __init__(self, entries: int, weight: int) -> None:
        # key -> value, least recently used first. Readable without the lock (see the module
        # docstring); written only under it; never replaced (a caller may keep a reference).
        self.data: OrderedDict[K, V] = OrderedDict()
        self._weights: dict[K, int] = {}  # key -> its weight; under the lock only
        self._lock = threading.Lock()
        self.entries_limit = entries
        self.weight_limit = weight
        self.weight = 0

    def __len__(self) -> int:
        return len(self.data)

    def get(self, key: K) -> V | None:
        """The value under `key`, now the most recently used; None when absent."""
        data = self.data
        value = data.get(key)
        if value is not None:
            try:
                data.move_to_end(key)
            except KeyError:  # evicted by another thread since
                pass
        return value

    def touch(self, key: K) -> None:
        """Mark `key` most recently used (nothing when another thread has just evicted it)."""
        try:
            self.data.move_to_end(key)
        except KeyError:
            pass

    def setdefault(self, key: K, value: V, weight: int = 1) -> V:
        """Store `value` unless the key is present; return what is stored (or was just evicted)."""
        with self._lock:
            stored = self.data.get(key)
            if stored is not None:
                return stored
            self.data[key] = value
            self._weights[key] = weight
            self.weight += weight
            self._evict()
        return value

    def reweigh(self, key: K, value: V, weight: int) -> None:
        """`value`, still stored under `key`, now weighs `weight` (nothing if it was evicted);
        evicts what no longer fits, possibly `value` itself."""
        with self._lock:
            if self.data.get(key) is not value:
                return
            self.weight += weight - self._weights[key]
            self._weights[key] = weight
            self._evict()

    def resize(self, entries: int, weight: int) -> None:
        """New limits; evicts at once what no longer fits."""
        if entries < 1 or weight < 1:
            raise ValueError(f"cache limits must be positive: {entries} entries, weight {weight}")
        with self._lock:
            self.entries_limit = entries
            self.weight_limit = weight
            self._evict()

    def clear(self) -> None:
        with self._lock:
            self.data.clear()
            self._weights.clear()
            self.weight = 0

    def _evict(self) -> None:
        # Under the lock. popitem is atomic: a reader touching the key meanwhile gets KeyError.
        data = self.data
        while data and (len(data) > self.entries_limit or self.weight > self.weight_limit):
            key, _ = data.popitem(last=False)
            self.weight -= self._weights.pop(key)
