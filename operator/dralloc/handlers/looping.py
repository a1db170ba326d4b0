"""The shape the device-health loops share: a pass, then wait for a change or a deadline.

The lowest layer of handlers/: imports only metrics (a failed pass is counted).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from dralloc import metrics

logger = logging.getLogger(__name__)


async def pass_loop(name: str, one_pass: Callable[[], Awaitable[float]], wakeup: asyncio.Event,
                    stopped: asyncio.Event, *, batch_delay: float) -> None:
    """Run `one_pass` (which returns how long nothing needs doing) until stopped.

    A pass runs after every wake-up or when its own deadline comes; a burst of watch
    events within `batch_delay` makes one pass, not one per event.
    """
    while not stopped.is_set():
        wakeup.clear()
        try:
            timeout = await one_pass()
        except Exception:  # per-object errors never get here: a bug of ours, or the API is gone
            logger.exception("%s pass failed; retrying", name)
            metrics.observe_pass_failure(name)
            timeout = 1.0
        try:
            await asyncio.wait_for(wakeup.wait(), timeout=timeout)
        except TimeoutError:
            pass
        await asyncio.sleep(batch_delay)
