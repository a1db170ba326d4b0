"""Who does the work kube-controller-manager's DRA controllers also do: dralloc or KCM.

Two duties of dralloc have a twin in kube-controller-manager (KCM), on by default in
every real cluster:

- `claim-lifecycle`: KCM's `resourceclaim-controller` creates ResourceClaims from
  templates (recording them in `pod.status.resourceClaimStatuses`), drops reservations
  of pods that are gone or done, deallocates claims nobody reserves, releases the
  `resource.kubernetes.io/delete-protection` finalizer and deletes generated claims of
  finished pods;
- `taint-eviction`: KCM's `device-taint-eviction-controller` evicts pods from devices
  with NoExecute taints and writes the DeviceTaintRules' `EvictionInProgress` condition.

Run side by side, the two would race to create a claim for the same pod entry (KCM with
a random name, dralloc with a deterministic one: two claims) and overwrite each other's
rule conditions. So exactly one of them does each duty. Each duty is set to `dralloc`,
`kube-controller-manager`, or `auto` (the default): KCM's while KCM is running, dralloc's
otherwise. Allocation, reservation, binding and health policies stay dralloc's in every
case: they are the scheduler's part, which KCM does not do.

"KCM is running" is read from its leader Lease (`kube-system/kube-controller-manager`),
judged as a leader-election candidate judges another holder: held, and changed within
its lease duration as measured on our own clock, so that clock skew between machines
does not matter. A KCM started with `--leader-elect=false` has no Lease, and
which controllers a KCM runs (`--controllers`) cannot be seen from outside: with those,
set the duties explicitly. Until the first read, and when the Lease cannot be read, the
last answer stands (at start: dralloc's own, as before this choice existed).

Handing a duty over is safe either way, because each side adopts the other's claims:
both find a pod entry's claim by its controller owner (the pod) and its annotation
`resource.kubernetes.io/pod-claim-name`, before creating one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Literal

from dralloc.state.leadership import Record

__all__ = ["CHOICES", "DUTIES", "OWNERS", "ControllerManagerLease", "Duty", "Owner", "Record", "check_choice",
           "owners"]

Duty = Literal["claim-lifecycle", "taint-eviction"]
Owner = Literal["dralloc", "kube-controller-manager"]
DUTIES: tuple[Duty, ...] = ("claim-lifecycle", "taint-eviction")
OWNERS: tuple[Owner, ...] = ("dralloc", "kube-controller-manager")
CHOICES = ("auto", *OWNERS)
KCM = "kube-controller-manager"
KCM_LEASE = "kube-system/kube-controller-manager"
# What a missing leaseDurationSeconds means: KCM's default --leader-elect-lease-duration.
KCM_LEASE_DURATION = 15.0


def check_choice(value: str, flag: str) -> str:
    """The choice as given, or a ValueError naming the flag and the values it takes."""
    if value not in CHOICES:
        raise ValueError(f"{flag}: {value!r} is not one of {', '.join(CHOICES)}")
    return value


@dataclasses.dataclass
class ControllerManagerLease:
    """Whether KCM runs, from reads of its leader Lease (times: our monotonic clock).

    As client-go's leader election judges another holder: a record counts from when this
    process first saw it, and the holder is gone when the record has not changed for its
    lease duration since. Unsure means running: taking a duty over wrongly makes a second
    claim, deferring wrongly only waits. So a Lease abandoned long ago still counts as
    running for one lease duration after our first read."""

    record: Record | None = None
    changed_at: float = 0.0
    read: bool = False

    def observed(self, record: Record | None, *, received_at: float) -> None:
        """A read of the Lease (None: it does not exist), answered at `received_at`."""
        if record is None or self.record is None or record.key() != self.record.key():
            self.changed_at = received_at
        self.record = record
        self.read = True

    def running(self, now: float) -> bool | None:
        """True: held and renewed lately; False: none, released, or not renewed for its lease
        duration; None: never read."""
        if not self.read:
            return None
        if self.record is None or not self.record.holder:
            return False
        return now < self.changed_at + (self.record.lease_duration or KCM_LEASE_DURATION)


def owners(choices: Mapping[Duty, str], kcm_running: bool | None,
           previous: Mapping[Duty, Owner] | None = None) -> dict[Duty, Owner]:
    """Who does each duty now. `auto` follows `kcm_running`; unknown (None) keeps `previous`,
    or dralloc's own when there is none."""
    out: dict[Duty, Owner] = {}
    for duty in DUTIES:
        choice = choices.get(duty, "auto")
        if choice == "dralloc" or choice == KCM:
            out[duty] = "dralloc" if choice == "dralloc" else "kube-controller-manager"
        elif kcm_running is None:
            out[duty] = (previous or {}).get(duty, "dralloc")
        else:
            out[duty] = "kube-controller-manager" if kcm_running else "dralloc"
    return out
