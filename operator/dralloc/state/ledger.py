"""Decisions written but not yet observed: no device is given out twice.

Between "the allocator chose gpu-3 for claim A" and "the view shows claim A
allocated", the cluster view does not know gpu-3 is taken. The ledger records
the allocation under the claim's UID at the moment of the decision (without an
await in between), and the snapshot counts it as in use until the truth is
known:

- the view shows the claim allocated (our write, observed by its answer, a read
  or the watch): the claim itself now counts the devices;
- the view shows a version of the claim newer than the one our write was
  conditioned on, still without an allocation: our write can never apply (its
  resourceVersion precondition no longer holds), so the devices are free;
- the write was refused for certain (409, 422, 404, ...: nothing was written), or
  was never sent: `release`;
- the claim was deleted.

A write whose outcome is unknown (a timeout, a 5xx, a connection reset after
sending) releases nothing: the entry is marked `unknown` and stays until one of
the above says what happened. Better a device held back for a while than one
device in two claims.
"""

from __future__ import annotations

import dataclasses

from dralloc.model import claims


@dataclasses.dataclass
class Reservation:
    claim_uid: str
    claim_ref: str
    allocation: claims.AllocationResult
    pod_uid: str
    sent_version: int | None = None  # resourceVersion the status write is conditioned on; None: not sent
    unknown: bool = False  # the write was sent and its outcome is not known


def _version(claim: claims.ResourceClaim) -> int | None:
    try:
        return int(claim.metadata.resource_version or "")
    except ValueError:
        return None  # opaque resourceVersions cannot be ordered: only an allocation tells


class Ledger:
    def __init__(self) -> None:
        self._by_claim: dict[str, Reservation] = {}
        self.version = 0

    def reserve(self, reservation: Reservation) -> None:
        self._by_claim[reservation.claim_uid] = reservation
        self.version += 1

    def release(self, claim_uid: str) -> None:
        if self._by_claim.pop(claim_uid, None) is not None:
            self.version += 1

    def sending(self, claim_uid: str, resource_version: str | None) -> None:
        """The status write conditioned on `resource_version` is about to be sent."""
        entry = self._by_claim.get(claim_uid)
        if entry is not None:
            try:
                entry.sent_version = int(resource_version or "")
            except ValueError:
                entry.sent_version = None

    def outcome_unknown(self, claim_uid: str) -> None:
        entry = self._by_claim.get(claim_uid)
        if entry is not None:
            entry.unknown = True

    def observed(self, claim: claims.ResourceClaim) -> None:
        """The view holds this version of the claim: drop the entry if it says what happened."""
        uid = claim.metadata.uid or ""
        entry = self._by_claim.get(uid)
        if entry is None:
            return
        if claim.status.allocation is not None:
            self.release(uid)
            return
        seen = _version(claim)
        if entry.sent_version is not None and seen is not None and seen > entry.sent_version:
            self.release(uid)  # a newer version without allocation: our write cannot apply any more

    def forget_deleted(self, claim_uid: str) -> None:
        self.release(claim_uid)

    def get(self, claim_uid: str) -> Reservation | None:
        return self._by_claim.get(claim_uid)

    def pending(self) -> list[Reservation]:
        return list(self._by_claim.values())

    def unknown(self) -> list[Reservation]:
        return [r for r in self._by_claim.values() if r.unknown]

    def __contains__(self, claim_uid: str) -> bool:
        return claim_uid in self._by_claim

    def __len__(self) -> int:
        return len(self._by_claim)
