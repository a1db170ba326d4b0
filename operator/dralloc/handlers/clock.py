"""Wall-clock time for the handlers (the pure packages get it as an argument).

The lowest layer of handlers/: imports nothing of dralloc.
"""

from __future__ import annotations

import datetime as dt


def now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def stamp(when: dt.datetime | None = None) -> str:
    """An RFC 3339 timestamp with second precision, as Kubernetes writes condition times."""
    return (when or now()).strftime("%Y-%m-%dT%H:%M:%SZ")


def micro_stamp(when: dt.datetime | None = None) -> str:
    """An RFC 3339 timestamp with microseconds (metav1.MicroTime: Events' eventTime, series times)."""
    return (when or now()).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def age_seconds(timestamp: str) -> float:
    """Seconds since an API timestamp; 0 when it cannot be read."""
    try:
        then = dt.datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    except ValueError:
        return 0.0
    return (now() - then).total_seconds()
