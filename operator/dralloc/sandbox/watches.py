"""Watch fan-out with a bounded history, the way etcd and the watch cache behave.

Every committed write becomes exactly one `Event` carrying the resourceVersion the write
returned (kopf waits for exactly that). The `Hub` keeps the last `history` events so a
watch can resume from an older resourceVersion and replay what it missed, in order;
anything older was "compacted" and the watch gets a single ERROR event with a 410
Expired Status, after which a client must relist. A forced `compact()` drops the
history, which is how tests provoke 410.

Events are encoded once (JSON bytes shared by every watcher of the same version), and
each watcher has an unbounded queue of ready-to-send lines, so a write never waits for
a slow reader. A watcher may be told to hold lines back (`lag`, the faults' watch-lag
rules): held lines wait in order and are released when due; closing a watcher drops
them, as a real server drops what it had not sent. Selectors are applied per watcher; an object that starts or stops
matching a selector is sent as ADDED or DELETED, as the real watch cache does.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import json
from collections.abc import Callable, Iterable
from typing import Any

from dralloc.sandbox import errors, resources, selectors

Obj = dict[str, Any]
CLOSE = b""  # sentinel line: the watcher is closed
MAX_BACKLOG = 200_000  # lines a reader may lag behind before we drop it like a slow watcher


@dataclasses.dataclass(frozen=True)
class Event:
    rv: int
    type: str  # ADDED, MODIFIED, DELETED
    storage: str
    namespace: str
    obj: Obj  # stored shape, never mutated
    raw: bytes  # JSON of obj
    prev: Obj | None  # the object before this write, to follow selector transitions


def encode(etype: str, raw: bytes) -> bytes:
    return b'{"type":"' + etype.encode() + b'","object":' + raw + b"}\n"


class Watcher:
    """One open watch: what it wants to see, and the lines waiting to be sent."""

    def __init__(
        self,
        view: resources.ResourceType,
        namespace: str | None,
        matcher: selectors.Matcher | None,
    ) -> None:
        self.view = view
        self.storage = view.storage
        self.namespace = namespace
        self.matcher = matcher
        self.queue: asyncio.Queue[bytes] = asyncio.Queue()
        self.last_rv = 0
        self.closed = False
        # (stored object, object as the view shows it) -> the JSON sent; None = the object itself
        self.render: Callable[[Obj, Obj], bytes] | None = None
        self.agent = ""  # the client's User-Agent and bearer token, for fault rules aimed at one client
        self.token: str | None = None
        self.lag: Callable[[], float] | None = None  # seconds to hold the next line back
        self._held: collections.deque[tuple[float, bytes]] = collections.deque()
        self._timer: asyncio.TimerHandle | None = None

    def _shape(self, obj: Obj) -> Obj:
        return self.view.outward(obj)

    def offer(self, event: Event) -> None:
        if self.closed or event.storage != self.storage:
            return
        if self.namespace is not None and event.namespace != self.namespace:
            return
        etype = event.type
        converted = self.view.from_storage is not None or event.obj.get("apiVersion") != self.view.api_version
        shaped = self._shape(event.obj) if converted or self.matcher else event.obj
        if self.matcher is not None:
            now = self.matcher(shaped)
            before = event.prev is not None and self.matcher(self._shape(event.prev))
            if etype == "MODIFIED":
                if now and not before:
                    etype = "ADDED"
                elif before and not now:
                    etype = "DELETED"
                elif not now:
                    return
            elif not now:
                return
        if self.render is not None:
            raw = self.render(event.obj, shaped)
        else:
            raw = json.dumps(shaped, separators=(",", ":")).encode() if converted else event.raw
        self.push(encode(etype, raw), event.rv)

    def push(self, line: bytes, rv: int) -> None:
        if self.closed:
            return
        if self.queue.qsize() > MAX_BACKLOG:
            self.close()
            return
        self.last_rv = max(self.last_rv, rv)
        delay = self.lag() if self.lag is not None else 0.0
        if delay > 0 or self._held:
            self._hold(line, delay)
        else:
            self.queue.put_nowait(line)

    def _hold(self, line: bytes, delay: float) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # not on a loop (nothing can wait): deliver now
            self.queue.put_nowait(line)
            return
        due = loop.time() + delay
        if self._held:
            due = max(due, self._held[-1][0])  # never overtake a line held longer
        self._held.append((due, line))
        if self._timer is None:
            self._timer = loop.call_at(self._held[0][0], self._release)

    def _release(self) -> None:
        self._timer = None
        if self.closed:
            self._held.clear()
            return
        loop = asyncio.get_running_loop()
        now = loop.time()
        while self._held and self._held[0][0] <= now:
            self.queue.put_nowait(self._held.popleft()[1])
        if self._held:
            self._timer = loop.call_at(self._held[0][0], self._release)

    @property
    def held(self) -> int:
        """Lines waiting for their lag to pass."""
        return len(self._held)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._held.clear()
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            self.queue.put_nowait(CLOSE)


class Hub:
    """The event history and the set of open watchers."""

    def __init__(self, history: int = 20_000) -> None:
        self.history: collections.deque[Event] = collections.deque(maxlen=history)
        self.compacted_rv = 0  # events at or below this RV are gone
        self.watchers: set[Watcher] = set()

    def publish(self, event: Event) -> None:
        if len(self.history) == self.history.maxlen and self.history:
            self.compacted_rv = self.history[0].rv
        self.history.append(event)
        for w in list(self.watchers):
            w.offer(event)

    def compact(self, current_rv: int) -> None:
        """Forget every event so far: any resume from an older version gets 410."""
        self.history.clear()
        self.compacted_rv = current_rv

    def subscribe(self, watcher: Watcher, since: int | None, current: Iterable[Event]) -> None:
        """Start `watcher` after `since` (replaying history), or with `current` as ADDED."""
        if since is None:
            for event in current:
                watcher.offer(event)
        elif since < self.compacted_rv:
            status = errors.status_body(
                410, f"too old resource version: {since} ({self.compacted_rv + 1})", reason="Expired")
            # Straight to the queue: watch lag must not hold the answer back until close() drops it.
            watcher.queue.put_nowait(encode("ERROR", json.dumps(status).encode()))
            watcher.close()
            return
        else:
            for event in self.history:
                if event.rv > since:
                    watcher.offer(event)
        self.watchers.add(watcher)

    def unsubscribe(self, watcher: Watcher) -> None:
        self.watchers.discard(watcher)

    def bookmark(self, watcher: Watcher, rv: int, *, initial_end: bool = False) -> None:
        meta: Obj = {"resourceVersion": str(rv)}
        if initial_end:
            meta["annotations"] = {"k8s.io/initial-events-end": "true"}
        obj = {"kind": watcher.view.kind, "apiVersion": watcher.view.api_version, "metadata": meta}
        watcher.push(encode("BOOKMARK", json.dumps(obj).encode()), rv)

    def close_all(self) -> None:
        for w in list(self.watchers):
            w.close()
        self.watchers.clear()

    def close_matching(self, predicate: Callable[[Watcher], bool]) -> int:
        """Close the watchers `predicate` selects; returns how many."""
        chosen = [w for w in self.watchers if predicate(w)]
        for w in chosen:
            w.close()
            self.watchers.discard(w)
        return len(chosen)
