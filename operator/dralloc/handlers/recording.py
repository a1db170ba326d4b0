"""Events that repeat are counted on one Event (its `series`), as client-go's events library does.

A pending pod is told why it waits when its reason changes; a reason can come back (a pod
that fits nowhere, then waits for a claim, then fits nowhere again). client-go's event
recorder (k8s.io/client-go/tools/events) treats an Event like one it posted within the last
6 minutes (same object, reason, action, type and note) as the same Event seen again: the
first repetition patches the Event with `series: {count: 2, lastObservedTime}`, and later
ones are counted and written with the next repetition at least a minute later, instead of
creating new objects. `Recorder` does the same for the scheduler's Events, so what an
Event list shows grows with what changed, not with how often dralloc looked.

The lowest layer of handlers/: imports `clock` and the kube client; the runtime owns the
one `Recorder`, `reporting` posts through it.
"""

from __future__ import annotations

import collections
import dataclasses
import logging
import time
from typing import Any

from dralloc.handlers import clock
from dralloc.kube import errors as kube_errors
from dralloc.kube import resources, writing
from dralloc.kube.session import Session

logger = logging.getLogger(__name__)

Raw = dict[str, Any]
SERIES_WINDOW = 360.0  # seconds: client-go's 6 minutes in which an Event may recur as a series
SERIES_WRITE_EVERY = 60.0  # a series' count is written at most this often (repetitions in between are summed)
MAX_REMEMBERED = 4096  # Events remembered for their series (least recently seen forgotten first)


@dataclasses.dataclass
class _Seen:
    name: str
    namespace: str
    count: int
    last_seen: float
    written_at: float


class Recorder:
    """Posts Events, turning repetitions within SERIES_WINDOW into a series on the first one."""

    def __init__(self) -> None:
        self._seen: collections.OrderedDict[tuple[str, ...], _Seen] = collections.OrderedDict()

    def __len__(self) -> int:
        return len(self._seen)

    async def post(self, session: Session, *, regarding: Raw, reason: str, message: str, type_: str = "Normal",
                   action: str = "") -> None:
        """Like `writing.post_event`: best effort, raises only `TransportError`."""
        meta = regarding.get("metadata") or {}
        key = (str(meta.get("uid") or meta.get("name") or ""), reason, action, type_, message)
        now = time.monotonic()
        seen = self._seen.get(key)
        if seen is not None and now - seen.last_seen <= SERIES_WINDOW:
            seen.count += 1
            seen.last_seen = now
            self._seen.move_to_end(key)
            if seen.count == 2 or now - seen.written_at >= SERIES_WRITE_EVERY:
                await self._write_series(session, seen)
            return
        name = await writing.post_event(session, regarding=regarding, reason=reason, type_=type_, action=action,
                                        message=message)
        if name is None:
            return
        self._seen[key] = _Seen(name, str(meta.get("namespace") or "default"), 1, now, now)
        self._seen.move_to_end(key)
        while len(self._seen) > MAX_REMEMBERED:
            self._seen.popitem(last=False)

    async def _write_series(self, session: Session, seen: _Seen) -> None:
        patch = {"series": {"count": seen.count, "lastObservedTime": clock.micro_stamp()}}
        seen.written_at = time.monotonic()
        try:
            await writing.merge_patch(session, resources.EVENTS, seen.name, patch, seen.namespace)
        except kube_errors.TransportError:
            raise
        except kube_errors.KubeError as exc:
            logger.debug("event %s/%s: cannot update its series: %s", seen.namespace, seen.name, exc)
            if not kube_errors.outcome_unknown(exc):  # expired or deleted: the next one starts afresh
                seen.last_seen = float("-inf")
