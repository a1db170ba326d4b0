"""Plan steps: the writes a lifecycle decision asks for, as frozen values.

The lifecycle modules decide; the handlers execute. Keeping the decision a
value means it can be tested without an API server, logged, and compared, and
that the same observed state always gives the same plan.

Execution contract (for `dralloc.handlers` / `dralloc.kube`):

- Steps are ordered. Each step is valid assuming the ones before it succeeded.
- A plan is a function of observed state. Executing a prefix of it and planning
  again from what the watch shows afterwards is always correct (no step relies
  on memory of an earlier plan). So an executor may stop after any failed write
  (a 409 conflict, a 404) and simply wait for the next event.
- Writes that change a claim should carry the resourceVersion the plan was made
  from, so a plan made from a stale view fails instead of undoing a newer write.
- `DropReservations` immediately followed by `Deallocate` for the same claim is
  one transition ("the last consumer went away"); write both in one status
  update (`reservedFor` = keep, `allocation` and `devices` removed), as upstream
  does. Split in two, a crash between them leaves an allocated claim nobody
  reserves; `claims.claim_plan(..., now=...)` repairs that, but only after a
  grace period.
- `CreateClaim` carries `generateName`, so its final name is known only from the
  create response. Recording it in `pod.status.resourceClaimStatuses` happens
  by planning again (`templates.pod_claim_plan`) with the created claim among the
  pod's claims: the generated claim is found by owner and annotation, never
  created twice.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal, TypeAlias

EventType: TypeAlias = Literal["Normal", "Warning"]


@dataclasses.dataclass(frozen=True)
class CreateClaim:
    """Create this ResourceClaim (full API JSON; `metadata.generateName` set, no name)."""

    raw: dict[str, Any]

    @property
    def namespace(self) -> str:
        return str(self.raw.get("metadata", {}).get("namespace", ""))


@dataclasses.dataclass(frozen=True)
class SetPodClaimStatuses:
    """Merge these entries into `pod.status.resourceClaimStatuses`, keyed by `name`.

    Each entry is `{"name": <pod claim entry>, "resourceClaimName": <claim>}`.
    Entries not listed are left as they are.
    """

    pod_namespace: str
    pod_name: str
    statuses: tuple[dict[str, Any], ...]


@dataclasses.dataclass(frozen=True)
class SetPodGroupClaimStatuses:
    """Merge these entries into a PodGroup's `status.resourceClaimStatuses`, keyed by `name`
    (`{"name": <PodGroup claim entry>, "resourceClaimName": <claim>}`; others left as they are)."""

    namespace: str
    name: str
    statuses: tuple[dict[str, Any], ...]


@dataclasses.dataclass(frozen=True)
class DropReservations:
    """Replace `status.reservedFor` with `keep` (the entries still valid, in their order)."""

    claim_namespace: str
    claim_name: str
    keep: tuple[dict[str, Any], ...]


@dataclasses.dataclass(frozen=True)
class Deallocate:
    """Remove `status.allocation` and `status.devices`; only ever planned when nobody reserves the claim."""

    claim_namespace: str
    claim_name: str


@dataclasses.dataclass(frozen=True)
class DeleteClaim:
    """Delete a generated claim; `uid` is the delete precondition (never delete a same-named successor)."""

    namespace: str
    name: str
    uid: str


@dataclasses.dataclass(frozen=True)
class RemoveFinalizer:
    """Remove `finalizer` from the object's `metadata.finalizers` (ResourceClaims here)."""

    namespace: str
    name: str
    finalizer: str


@dataclasses.dataclass(frozen=True)
class EmitEvent:
    """Post an Event about the object `regarding_kind` `namespace`/`name`."""

    regarding_kind: str
    namespace: str
    name: str
    reason: str
    message: str
    type_: EventType = "Normal"
    regarding_uid: str = ""  # lets the Event point at one incarnation of the object; empty when unknown


PlanStep: TypeAlias = (
    CreateClaim | SetPodClaimStatuses | SetPodGroupClaimStatuses | DropReservations | Deallocate | DeleteClaim
    | RemoveFinalizer | EmitEvent
)
Plan: TypeAlias = tuple[PlanStep, ...]
