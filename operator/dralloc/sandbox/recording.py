"""What clients asked: a bounded log of requests, for tests that assert on behaviour.

Operator tests often care less about the final state than about how it was reached:
"the claim status was written once, with a resourceVersion precondition", "nothing
was written at all". `Recorder` keeps the last `size` requests (method, path, query,
decoded body, answered status) in order; `matching()` filters them by method and path
glob.
"""

from __future__ import annotations

import collections
import dataclasses
import fnmatch
import json
import threading
from typing import Any


@dataclasses.dataclass(frozen=True)
class Request:
    method: str
    path: str
    query: dict[str, str]
    content_type: str
    raw: bytes | None
    status: int

    @property
    def body(self) -> Any:
        """The decoded JSON body (None without one; the text when it is not JSON)."""
        if not self.raw:
            return None
        try:
            return json.loads(self.raw)
        except ValueError:
            return self.raw.decode(errors="replace")


class Recorder:
    def __init__(self, size: int = 10_000) -> None:
        self._lock = threading.Lock()
        self._log: collections.deque[Request] = collections.deque(maxlen=size)

    def add(self, method: str, path: str, query: dict[str, str], content_type: str, raw: bytes | None,
            status: int) -> None:
        with self._lock:
            self._log.append(Request(method, path, query, content_type, raw, status))

    def all(self) -> list[Request]:
        with self._lock:
            return list(self._log)

    def matching(self, method: str = "*", path: str = "*") -> list[Request]:
        """Recorded requests whose method (or `*`) and path glob match, oldest first."""
        return [r for r in self.all()
                if method in ("*", r.method) and fnmatch.fnmatchcase(r.path, path)]

    def clear(self) -> None:
        with self._lock:
            self._log.clear()
