"""What an allocation call returns when the input is valid.

- `Allocated`: one AllocationResult per claim, in claim order.
- `Unsatisfiable`: nothing fits on this node right now, with reasons per claim
  and request: how many candidate devices the node offers and how many each
  cause removed. Reasons are data; the operator turns them into Events and
  conditions, the CLI prints them.
- `BudgetExhausted`: the search ran out of steps before deciding. Retryable,
  and distinct from "does not fit": another attempt (or more budget) may succeed.

Invalid input is not an outcome but an exception (see errors.py).
"""

from __future__ import annotations

import dataclasses
import enum

from dralloc.model import claims


class Cause(enum.Enum):
    """Why a device of the request's class was not a candidate, in the order the checks run.

    Devices the class's selectors reject, or that cannot be used from the node, are not the
    request's devices at all: they are left out of the counts instead of being "removed".
    """

    INCOMPLETE_POOL = "incomplete pool"
    INVALID_POOL = "invalid pool"
    BINDING_CONDITIONS = "has binding conditions (feature off)"
    REQUEST_SELECTOR = "request selector"
    SELECTOR_ERROR = "selector error"  # the request's CEL fails on the device (the note quotes it)
    IN_USE = "in use"
    # Read after a count of devices ("removed: 2 consuming counters ..."), never "2 counters" (issue 32).
    COUNTERS = "consuming counters (DRAPartitionableDevices off)"
    CAPACITY = "capacity"
    COUNTERS_USED_UP = "counters used up"  # its counter sets lack what it consumes (allocated devices hold it)
    TAINT = "taint not tolerated"


@dataclasses.dataclass(frozen=True)
class Culprit:
    """What rules out every combination when each request has enough candidates on its own.

    Found by searching again with something relaxed: `constraint` (claim, index) and
    `counter-set` (pool, set) mean the claims fit without that one constraint or with that
    one counter set unlimited; `counters` that they fit only with every counter set unlimited;
    `requests` that these requests cannot all be satisfied together even without constraints
    and counters (and without any one of them, they can).
    """

    kind: str  # constraint | counter-set | counters | requests
    text: str
    claim: str = ""  # constraint: the claim
    index: int = -1  # constraint: its index in the claim
    names: tuple[str, ...] = ()  # counter-set: (pool, set); requests: "claim request" pairs as "ns/name/request"


@dataclasses.dataclass(frozen=True)
class RequestReason:
    """Why one request (or subrequest) of one claim could not be satisfied."""

    claim: str  # namespace/name
    request: str  # request or request/subrequest
    needed: int  # devices needed (0 for allocationMode All with nothing matching)
    devices: int  # devices of the request's class usable from the node (its class selectors pass)
    candidates: int  # devices that passed every per-device check
    removed: tuple[tuple[Cause, int], ...]  # cause -> how many devices it removed (first failing check)
    note: str = ""
    device_class: str = ""
    culprits: tuple[Culprit, ...] = ()
    # The first CEL error of the request's selectors on one of the devices (Cause.SELECTOR_ERROR):
    # named rather than counted as a mismatch, since the claim fails with it wherever it meets one.
    selector_error: str = ""

    def message(self, *, usage: bool = True) -> str:
        """`usage=False`: without what depends on other claims' use of the devices (how many are usable
        now, how many each cause removed): the form a tenant's pod is told, which must not reveal other
        tenants' use of a node, nor change each time they allocate there."""
        of = f"devices of class {self.device_class}" if self.device_class else "devices"
        if usage:
            removed = ", ".join(f"{count} {cause.value}" for cause, count in self.removed if count)
            text = (f"claim {self.claim}, request {self.request}: {self.candidates} of {self.devices} {of} "
                    f"usable, {self.needed} needed")
        else:
            removed = ", ".join(cause.value for cause, count in self.removed if count)
            enough = "enough are usable" if self.candidates >= self.needed else "too few are usable"
            text = f"claim {self.claim}, request {self.request}: {self.needed} needed of the {self.devices} {of}, {enough}"
        if removed:
            text += f" (removed: {removed})" if usage else f" (ruled out: {removed})"
        if self.note:
            text += f"; {self.note}"
        if self.selector_error:
            text += f"; a selector fails on some devices: {self.selector_error}"
        return text


@dataclasses.dataclass(frozen=True)
class Allocated:
    results: tuple[claims.AllocationResult, ...]
    steps: int

    @property
    def status(self) -> str:
        return "allocated"


@dataclasses.dataclass(frozen=True)
class Unsatisfiable:
    reasons: tuple[RequestReason, ...]
    steps: int

    @property
    def status(self) -> str:
        return "unschedulable"

    def message(self, *, usage: bool = True) -> str:
        """`usage`: see `RequestReason.message`."""
        if not self.reasons:
            return "cannot allocate all claims together"
        return "; ".join(r.message(usage=usage) for r in self.reasons)


@dataclasses.dataclass(frozen=True)
class BudgetExhausted:
    steps: int

    @property
    def status(self) -> str:
        return "budget-exhausted"

    def message(self, *, usage: bool = True) -> str:
        del usage  # nothing here depends on others' use
        return f"search stopped after {self.steps} steps without a decision; retry later or raise the budget"


Outcome = Allocated | Unsatisfiable | BudgetExhausted
