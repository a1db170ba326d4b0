"""Decisions written but not yet observed: no device is given out twice.

Between "the allocator chose gpu-3 for claim A" and "the watch shows claim A
allocated", the cluster view does not know gpu-3 is taken. The ledger records
the allocation under the claim's UID at the moment of the decision (without an
await in between), the snapshot counts it as in use, and the entry is dropped
when the watch shows the claim allocated (or deleted), or when the write
failed (`release`).
"""

from __future__ import annotations

import dataclasses

from dralloc.model import claims


@dataclasses.dataclass(frozen=True)
class Reservation:
    claim_uid: str
    claim_ref: str
    allocation: claims.AllocationResult
    pod_uid: str


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

    def observed(self, claim: claims.ResourceClaim) -> None:
        """The watch delivered this claim: its allocation (or its absence) is now the truth."""
        uid = claim.metadata.uid or ""
        entry = self._by_claim.get(uid)
        if entry is not None and claim.status.allocation is not None:
            self.release(uid)

    def forget_deleted(self, claim_uid: str) -> None:
        self.release(claim_uid)

    def pending(self) -> list[Reservation]:
        return list(self._by_claim.values())

    def __contains__(self, claim_uid: str) -> bool:
        return claim_uid in self._by_claim

    def __len__(self) -> int:
        return len(self._by_claim)
