"""Who may act: leader election on a `coordination.k8s.io` Lease, as kube-scheduler does it.

Pure and clock-free: every method takes the monotonic time it is about. The loop
that reads and writes the Lease is handlers/leading.py.

The rules (client-go's leaderelection, with the same three durations):

- The holder renews the Lease every `retry_period`. It **may act** only until
  `renew_deadline` after the moment it *sent* its last successful renewal; past
  that it stops writing (every write checks `may_act`) and steps down. Because
  `renew_deadline < lease_duration`, it has stopped before anyone can take over.
- A candidate takes the Lease when the record has not changed for
  `lease_duration`, measured on its own clock from when it first could have seen
  that record: the send time of the previous read, but no earlier than
  `retry_period` before the read that showed it (reads can be slow). The holder
  renewed no earlier than that, so it has stopped acting `lease_duration -
  renew_deadline - retry_period` (3 s with the defaults) before the candidate
  starts. The candidate moves `early` (a tenth of a second at most, a quarter of that
  margin) before the lease duration is up, so that with the round trips of its own
  read and write a dead holder is replaced within `lease_duration` of its last
  renewal.
- A holder that stops cleanly gives the Lease up (empty holder): the next
  candidate takes it at once.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any


@dataclasses.dataclass(frozen=True)
class Timing:
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    @property
    def margin(self) -> float:
        """How long before a candidate may start the holder has stopped, at the least."""
        return self.lease_duration - self.renew_deadline - self.retry_period

    @property
    def early(self) -> float:
        return max(0.0, min(0.1, self.margin / 4))

    def problems(self) -> list[str]:
        found = []
        if not self.lease_duration > self.renew_deadline:
            found.append("--leader-elect-lease-duration must be greater than --leader-elect-renew-deadline")
        if not self.renew_deadline > self.retry_period:
            found.append("--leader-elect-renew-deadline must be greater than --leader-elect-retry-period")
        if self.retry_period <= 0:
            found.append("--leader-elect-retry-period must be positive")
        if not found and self.margin <= 0:
            found.append("--leader-elect-lease-duration must be greater than --leader-elect-renew-deadline plus "
                         "--leader-elect-retry-period: a candidate measures the lease from its last read, up to a "
                         "retry period after the holder's renewal")
        return found


@dataclasses.dataclass(frozen=True)
class Record:
    """The Lease as read (None fields: unset)."""

    holder: str
    lease_duration: float | None
    renew_time: str | None
    acquire_time: str | None
    transitions: int
    resource_version: str

    @classmethod
    def from_lease(cls, raw: Mapping[str, Any]) -> Record:
        """The record of a `coordination.k8s.io/v1` Lease as the API returns it."""
        spec = raw.get("spec") or {}
        duration = spec.get("leaseDurationSeconds")
        return cls(holder=str(spec.get("holderIdentity") or ""),
                   lease_duration=float(duration) if isinstance(duration, (int, float)) else None,
                   renew_time=spec.get("renewTime"), acquire_time=spec.get("acquireTime"),
                   transitions=int(spec.get("leaseTransitions") or 0),
                   resource_version=str((raw.get("metadata") or {}).get("resourceVersion") or ""))

    def key(self) -> tuple[str, str | None, float | None]:
        """What changes when the holder renews or someone takes over."""
        return (self.holder, self.renew_time, self.lease_duration)


@dataclasses.dataclass
class Elector:
    identity: str
    timing: Timing = dataclasses.field(default_factory=Timing)
    leading: bool = False
    renewed_at: float | None = None  # send time of our last successful renewal or acquisition
    record: Record | None = None
    _changed_at: float | None = None  # earliest time the current record could have been written
    _last_read_sent: float | None = None

    def observed(self, record: Record | None, *, sent_at: float, received_at: float) -> None:
        """A read of the Lease, sent at `sent_at` and answered at `received_at`."""
        if record is None or self.record is None or record.key() != self.record.key():
            earliest = received_at - self.timing.retry_period
            if self._last_read_sent is not None:
                earliest = max(earliest, self._last_read_sent)
            self._changed_at = min(earliest, received_at)
        self.record = record
        self._last_read_sent = sent_at
        if record is not None and record.holder != self.identity:
            self.leading = False

    def expires_at(self) -> float | None:
        """When a record held by someone else may be taken over; None when nobody holds it."""
        if self.record is None or not self.record.holder:
            return None
        duration = self.record.lease_duration if self.record.lease_duration else self.timing.lease_duration
        return (self._changed_at or 0.0) + duration - self.timing.early

    def wants(self, now: float) -> str:
        """What to do now: "create", "renew", "acquire" or "wait"."""
        if self.record is None:
            return "create"
        if self.record.holder == self.identity:
            return "renew"
        expiry = self.expires_at()
        if expiry is None or now >= expiry:
            return "acquire"
        return "wait"

    def succeeded(self, record: Record, *, sent_at: float) -> None:
        """Our create, renewal or acquisition was written (sent at `sent_at`)."""
        self.record = record
        self._changed_at = sent_at
        self.renewed_at = sent_at
        self.leading = True

    def may_act(self, now: float) -> bool:
        return self.leading and self.renewed_at is not None and now < self.renewed_at + self.timing.renew_deadline

    def lost(self) -> None:
        self.leading = False  # renewed_at stays: when our last term could have lasted until

    def next_check(self, now: float) -> float:
        """Seconds until the next read or renewal is due."""
        if self.leading:
            return self.timing.retry_period
        expiry = self.expires_at()
        if expiry is not None and expiry > now:
            return max(0.0, min(self.timing.retry_period, expiry - now))
        return self.timing.retry_period
