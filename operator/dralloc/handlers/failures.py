"""What a control loop remembers about objects it could not handle: backoff, and what was said.

A loop that meets an error on one object (a bug of ours, an object of a shape we did
not foresee) reports it on that object once per distinct message, retries it with
exponential backoff, and goes on with the others. Keys are `(kind, (namespace, name))`.

The lowest layer of handlers/: plain data, imports nothing of dralloc; the claim lifecycle
and the health loop keep one each.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

Key = tuple[str, tuple[str, str]]


def internal_error(exc: BaseException, *, where: str = "dralloc") -> str:
    """What an object's condition or Event says about a bug of ours met while handling it."""
    return f"internal error in {where} ({type(exc).__name__}: {exc}); the operator log has the details"


@dataclasses.dataclass
class _Failure:
    count: int
    retry_at: float
    message: str


class Failures:
    def __init__(self, *, initial: float = 0.5, maximum: float = 60.0) -> None:
        self.initial = initial
        self.maximum = maximum
        self._by_key: dict[Key, _Failure] = {}

    def failed(self, kind: str, key: tuple[str, str], message: str, *, now: float) -> tuple[float, bool]:
        """Record a failure; (the backoff delay, whether the message is new for this object)."""
        old = self._by_key.get((kind, key))
        count = old.count + 1 if old is not None else 1
        delay = min(self.initial * 2 ** (count - 1), self.maximum)
        self._by_key[(kind, key)] = _Failure(count, now + delay, message)
        return delay, old is None or old.message != message

    def succeeded(self, kind: str, key: tuple[str, str]) -> None:
        self._by_key.pop((kind, key), None)

    def due(self, now: float) -> list[Key]:
        """Objects whose backoff is over; each is handed out once per failure."""
        found = [k for k, f in self._by_key.items() if f.retry_at <= now]
        for k in found:
            self._by_key[k].retry_at = math.inf  # until it fails again or succeeds
        return found

    def next_due(self) -> float | None:
        waiting = [f.retry_at for f in self._by_key.values() if f.retry_at != math.inf]
        return min(waiting) if waiting else None

    def __contains__(self, item: Key) -> bool:
        return item in self._by_key

    def __len__(self) -> int:
        return len(self._by_key)

    def forget_unless(self, exists: Callable[[str, tuple[str, str]], bool]) -> int:
        """Drop the failures of objects that no longer exist (`exists(kind, key)` False): what a loop
        remembers goes with its object. How many went."""
        gone = [k for k in self._by_key if not exists(*k)]
        for k in gone:
            del self._by_key[k]
        return len(gone)
