"""Who does the claim lifecycle and taint eviction in this process: dralloc or kube-controller-manager.

The decision itself is pure (state/coexistence.py); `Coexistence` holds this process's
choices (flags, else environment variables, else `auto`), the last reads of KCM's leader
Lease, and each duty's owner now, which it logs and sets in the `dralloc_duty_owner` gauge
when it changes. The claim lifecycle (handlers/lifecycle.py), the eviction loop
(handlers/evicting.py) and the pod pass (handlers/items.py) ask `does(duty)`.
`handlers/coexisting.py` feeds it the Lease.

Knows nothing of the runtime: imports only state/, settings, kube errors and metrics.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from dralloc import metrics
from dralloc.kube import errors as kube_errors
from dralloc.settings import CoexistenceSettings
from dralloc.state import coexistence
from dralloc.state.coexistence import Duty, Owner

logger = logging.getLogger(__name__)

ENVIRONMENT: dict[Duty, tuple[str, str]] = {  # duty -> (flag, environment variable)
    "claim-lifecycle": ("--claim-lifecycle", "DRALLOC_CLAIM_LIFECYCLE"),
    "taint-eviction": ("--taint-eviction", "DRALLOC_TAINT_EVICTION"),
}


def choices(settings: CoexistenceSettings, environ: Mapping[str, str]) -> dict[Duty, str]:
    """Each duty's choice: the flag, else its environment variable, else auto (ValueError when invalid)."""
    given: dict[Duty, str | None] = {"claim-lifecycle": settings.claim_lifecycle,
                                     "taint-eviction": settings.taint_eviction}
    out: dict[Duty, str] = {}
    for duty, value in given.items():
        flag, variable = ENVIRONMENT[duty]
        if value is not None:
            out[duty] = coexistence.check_choice(value, flag)
        else:
            out[duty] = coexistence.check_choice(environ.get(variable) or "auto", f"${variable}")
    return out


class Coexistence:
    """This process's answer to "who does it", kept current from KCM's Lease."""

    def __init__(self, settings: CoexistenceSettings, environ: Mapping[str, str]) -> None:
        self.choices = choices(settings, environ)
        self.namespace, _, self.name = settings.controller_manager_lease.partition("/")
        self.lease = coexistence.ControllerManagerLease()
        self.owners: dict[Duty, Owner] = coexistence.owners(self.choices, None)
        self._unreadable: str | None = None  # the last read error reported (reported once per kind)
        for duty in coexistence.DUTIES:
            metrics.set_duty_owner(duty, self.owners[duty])

    def does(self, duty: Duty) -> bool:
        """Whether dralloc does this duty now."""
        return self.owners[duty] == "dralloc"

    @property
    def follows_lease(self) -> bool:
        return "auto" in self.choices.values()

    def describe(self) -> dict[str, str]:
        """For /healthz: each duty's owner and why."""
        return {duty: self.owners[duty] + ("" if self.choices[duty] != "auto" else " (auto)")
                for duty in coexistence.DUTIES}

    def observe(self, record: coexistence.Record | None, *, received_at: float) -> list[Duty]:
        """A read of KCM's Lease; returns the duties that came back to dralloc."""
        self.lease.observed(record, received_at=received_at)
        return self.decide(received_at)

    def decide(self, now: float) -> list[Duty]:
        before = self.owners
        self.owners = coexistence.owners(self.choices, self.lease.running(now), before)
        returned: list[Duty] = []
        for duty in coexistence.DUTIES:
            if self.owners[duty] == before[duty]:
                continue
            metrics.set_duty_owner(duty, self.owners[duty])
            if self.owners[duty] == "dralloc":
                returned.append(duty)
                logger.warning("%s: kube-controller-manager's Lease %s/%s is no longer renewed: dralloc takes "
                               "the duty over", duty, self.namespace, self.name)
            else:
                logger.info("%s: kube-controller-manager runs (Lease %s/%s is held): its controller does this, "
                            "dralloc does not (%s=dralloc to change that)", duty, self.namespace, self.name,
                            ENVIRONMENT[duty][0])
        return returned

    def unreadable(self, exc: kube_errors.KubeError) -> None:
        kind = type(exc).__name__
        if kind != self._unreadable:
            self._unreadable = kind
            who = ", ".join(f"{d}: {o}" for d, o in self.owners.items())
            logger.error("cannot read kube-controller-manager's Lease %s/%s (%s); keeping %s. Set --claim-lifecycle "
                         "and --taint-eviction to stop reading it", self.namespace, self.name, exc, who)
        metrics.observe_object_error("coexistence")
