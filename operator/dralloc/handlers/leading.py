"""Leader election on a Lease: exactly one replica acts, fenced (see state/leadership.py).

Every replica runs kopf (its watches keep each replica's cluster view warm) and this
loop. Only the replica holding the Lease runs the control loops (scheduling, claim
lifecycle, eviction, health) and writes: the API session refuses every write but the
Lease's own with `NotLeaderError` whenever `Elector.may_act` says no, so a replica
that cannot renew in time stops writing before its Lease can expire, whatever its
loops are doing. Losing the Lease stops the loops; gaining it (re)starts them, after a
relist. On a clean stop the holder gives the Lease up, so a rolling update hands over
at once instead of after `lease_duration`.

`--standalone` turns election off: the process always acts (one replica, tests, demos).

Below the runtime: `Leadership` is given the API session, its settings and the loops'
start and stop; it imports only state/leadership.py, the kube client and metrics.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import math
import os
import socket
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from dralloc import metrics
from dralloc.kube import errors as kube_errors
from dralloc.kube import reading, resources, writing
from dralloc.kube.session import Session
from dralloc.settings import LeaderElectionSettings
from dralloc.state.leadership import Elector, Record, Timing

logger = logging.getLogger(__name__)

Raw = dict[str, Any]
DEFAULT_NAMESPACE = "dralloc-system"
RELEASE_ATTEMPTS = 3  # tries to give the Lease up on a clean stop
RELEASE_RETRY = 0.2  # seconds before the second try, doubling


def default_identity() -> str:
    """`<pod or host name>_<random>`: distinct for every process, as kube-scheduler's."""
    name = os.environ.get("POD_NAME") or socket.gethostname() or "dralloc"
    return f"{name}_{uuid.uuid4()}"


def lease_namespace(configured: str | None) -> str:
    return configured or os.environ.get("POD_NAMESPACE") or DEFAULT_NAMESPACE


def _stamp(at: dt.datetime | None = None) -> str:
    return (at or dt.datetime.now(dt.UTC)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Leadership:
    """The election loop of one process, and the write fence it gives the session."""

    def __init__(self, election: LeaderElectionSettings, identity: str, session: Session, *,
                 start_loops: Callable[[], Awaitable[None]], stop_loops: Callable[[], Awaitable[None]]) -> None:
        self.session = session
        self.name = election.resource_name
        self.namespace = lease_namespace(election.resource_namespace)
        self.elector = Elector(election.identity or identity,
                               Timing(election.lease_duration, election.renew_deadline, election.retry_period))
        self._start_loops, self._stop_loops = start_loops, stop_loops
        self.acting = False
        self.acting_since: float | None = None  # monotonic time the loops last started
        self.lease_path = resources.LEASES.object_path(self.name, self.namespace)

    # ---- the fence ------------------------------------------------------------------------

    def guard(self, method: str, path: str) -> None:
        """Called by the session before every write: refuse it unless we may act."""
        if path == self.lease_path or path == resources.LEASES.collection_path(self.namespace):
            return
        if not self.elector.may_act(time.monotonic()):
            raise kube_errors.NotLeaderError(f"{method} {path}: not sent, this replica "
                                             f"({self.elector.identity}) does not hold the Lease "
                                             f"{self.namespace}/{self.name}")

    # ---- the loop ---------------------------------------------------------------------------

    async def run(self, stopped: asyncio.Event) -> None:
        logger.info("leader election: candidate %s for Lease %s/%s", self.elector.identity, self.namespace, self.name)
        try:
            while not stopped.is_set():
                try:
                    await self._step()
                except Exception:  # the election must go on whatever one round meets
                    logger.exception("leader election round failed")
                    metrics.observe_pass_failure("leader-election")
                await self._follow()
                delay = self.elector.next_check(time.monotonic())
                if self.elector.renewed_at is not None and self.elector.leading:
                    # Wake up at the renew deadline at the latest: the loops must stop then.
                    delay = min(delay, max(0.0, self.elector.renewed_at + self.elector.timing.renew_deadline
                                           - time.monotonic()))
                try:
                    await asyncio.wait_for(stopped.wait(), timeout=max(0.01, delay))
                except TimeoutError:
                    pass
        finally:
            await self._shutdown()

    async def _step(self) -> None:
        session = self.session
        sent = time.monotonic()
        try:
            raw: Raw | None = await reading.get_object(session, resources.LEASES, self.name, self.namespace)
        except kube_errors.NotFoundError:
            raw = None
        except kube_errors.KubeError as exc:
            logger.warning("leader election: cannot read Lease %s/%s: %s", self.namespace, self.name, exc)
            return
        self.elector.observed(Record.from_lease(raw) if raw is not None else None, sent_at=sent, received_at=time.monotonic())
        action = self.elector.wants(time.monotonic())
        if action == "wait":
            return
        now = dt.datetime.now(dt.UTC)
        timing = self.elector.timing
        spec: Raw = {"holderIdentity": self.elector.identity, "leaseDurationSeconds": max(1, math.ceil(timing.lease_duration)),
                     "renewTime": _stamp(now)}
        sent = time.monotonic()
        try:
            if action == "create":
                spec.update(acquireTime=_stamp(now), leaseTransitions=0)
                stored = await writing.create_object(session, resources.LEASES, {
                    "metadata": {"name": self.name, "namespace": self.namespace}, "spec": spec})
            else:
                assert raw is not None
                old = raw.get("spec") or {}
                if action == "acquire":
                    spec.update(acquireTime=_stamp(now), leaseTransitions=int(old.get("leaseTransitions") or 0) + 1)
                else:
                    spec.update(acquireTime=old.get("acquireTime") or _stamp(now),
                                leaseTransitions=int(old.get("leaseTransitions") or 0))
                stored = await writing.replace_object(session, resources.LEASES, {**raw, "spec": {**old, **spec}})
        except kube_errors.KubeError as exc:
            # A conflict: someone else wrote it first. Unknown outcome: the next read tells.
            # Either way we did not renew, and may_act runs out at the renew deadline.
            level = logging.INFO if isinstance(exc, kube_errors.ConflictError) else logging.WARNING
            logger.log(level, "leader election: %s of Lease %s/%s failed: %s", action, self.namespace, self.name,
                       exc)
            return
        was_leading = self.elector.leading
        self.elector.succeeded(Record.from_lease(stored), sent_at=sent)
        if not was_leading:
            logger.info("leader election: %s acquired Lease %s/%s", self.elector.identity, self.namespace,
                        self.name)

    async def _follow(self) -> None:
        """Start or stop the control loops to match `may_act`."""
        may_act = self.elector.may_act(time.monotonic())
        metrics.set_leader(self.name, may_act)
        if may_act and not self.acting:
            self.acting, self.acting_since = True, time.monotonic()
            logger.info("leader election: %s is the active replica", self.elector.identity)
            await self._start_loops()
        elif not may_act and self.acting:
            self.acting = False
            if self.elector.leading:
                self.elector.lost()
                logger.warning("leader election: %s could not renew Lease %s/%s in %.0fs; stepping down",
                               self.elector.identity, self.namespace, self.name, self.elector.timing.renew_deadline)
            else:
                logger.warning("leader election: %s lost Lease %s/%s to %s", self.elector.identity, self.namespace,
                               self.name, self.elector.record.holder if self.elector.record else "?")
            await self._stop_loops()

    async def _shutdown(self) -> None:
        if self.acting:
            self.acting = False
            await self._stop_loops()
        metrics.set_leader(self.name, False)
        if not self.elector.leading:
            return
        self.elector.lost()
        session = self.session
        # Give the Lease up: the next candidate takes it at once instead of after lease_duration.
        # A failed attempt (a 5xx, a timeout, a conflict with our own renewal) is retried a few
        # times: a rolling update should not wait out the Lease because of one bad answer.
        for attempt in range(RELEASE_ATTEMPTS):
            try:
                raw = await reading.get_object(session, resources.LEASES, self.name, self.namespace)
                spec = raw.get("spec") or {}
                if spec.get("holderIdentity") != self.elector.identity:
                    return
                await writing.replace_object(session, resources.LEASES, {**raw, "spec": {
                    **spec, "holderIdentity": "", "leaseDurationSeconds": 1, "renewTime": _stamp()}})
                logger.info("leader election: %s released Lease %s/%s", self.elector.identity, self.namespace,
                            self.name)
                return
            except kube_errors.NotFoundError:
                return
            except kube_errors.KubeError as exc:
                last = attempt + 1 == RELEASE_ATTEMPTS
                logger.warning("leader election: cannot release Lease %s/%s: %s%s", self.namespace, self.name, exc,
                               "" if last else "; trying again")
                if not last:
                    await asyncio.sleep(RELEASE_RETRY * 2 ** attempt)
