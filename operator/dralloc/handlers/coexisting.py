"""Coexistence with kube-controller-manager: the loop that reads KCM's leader Lease.

Who does what is `Coexistence`'s (handlers/duties.py); this loop feeds it reads of KCM's
leader Lease (every 2 s, only while some duty is `auto`; the first read is done before the
control loops start) and wakes the loop of a duty that came back to dralloc: the claim
lifecycle then starts with a full pass over every pod and claim, as at start.

A loop of the wiring layer: calls the runtime and the kube client only.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

from dralloc import metrics
from dralloc.handlers.runtime import Runtime
from dralloc.kube import errors as kube_errors
from dralloc.kube import reading, resources
from dralloc.state import coexistence

logger = logging.getLogger(__name__)

READ_EVERY = 2.0  # seconds: KCM's --leader-elect-retry-period


async def refresh(rt: Runtime) -> None:
    """Read KCM's Lease once and act on what changed."""
    state = rt.coexistence
    session = rt.require_session()
    try:
        raw = await reading.get_object(session, resources.LEASES, state.name, state.namespace)
    except kube_errors.NotFoundError:
        raw = None
    except kube_errors.KubeError as exc:
        state.unreadable(exc)
        return
    record = coexistence.Record.from_lease(raw) if raw is not None else None
    for duty in state.observe(record, received_at=time.monotonic()):
        if duty == "claim-lifecycle":  # everything may have changed while KCM had it: a full pass
            rt.mark_all_dirty()
            rt.lifecycle_wakeup.set()
        else:
            rt.eviction_wakeup.set()


async def coexistence_loop(rt: Runtime, stopped: asyncio.Event) -> None:
    """Follow KCM's Lease while some duty is `auto` (the first read is done before the loops start)."""
    if not rt.coexistence.follows_lease:
        return
    while not stopped.is_set():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stopped.wait(), timeout=READ_EVERY)
        if stopped.is_set():
            return
        try:
            await refresh(rt)
        except Exception:  # one bad read must not end the loop
            logger.exception("reading kube-controller-manager's Lease failed")
            metrics.observe_pass_failure("coexistence")
            rt.coexistence.decide(time.monotonic())
