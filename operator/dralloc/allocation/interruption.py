"""Stopping a decision that costs too much, without a clock in the core.

The operator decides for one pod at a time in a worker thread under a CPU-time budget
(handlers/deciding.py). The core cannot read a clock, so the caller hands it a check —
a callable saying "stop now" — for the duration of a decision (`interrupt_when`), and the
places where the core spends unbounded time (each search step, each CEL evaluation not
answered from the cache, each node tried) consult it every so often (`checkpoint`, or
`current()` once and then the check itself in a hot loop). When it says stop,
`Interrupted` unwinds the decision: the caller reports the pod as too costly to decide.

Interrupting is safe wherever a checkpoint sits: checkpoints are placed before a result
is memoized, never between two updates that must go together, so the caches a decision
fills stay true. Without a check (the CLI, tests, simulate) nothing changes: the core
stays deterministic. The check lives in a context variable, so a check set in one worker
thread is not seen by another thread or by the event loop.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

Check = Callable[[], bool]
T = TypeVar("T")

_CHECK: contextvars.ContextVar[Check | None] = contextvars.ContextVar("dralloc_interrupt_check", default=None)

# Search steps between two consultations of the check: a step is about a microsecond, a
# check (a thread CPU clock read) about as much.
STEPS_BETWEEN_CHECKS = 1024


class Interrupted(Exception):
    """The caller's check said stop: the decision was abandoned, not answered."""


@contextlib.contextmanager
def interrupt_when(check: Check) -> Iterator[None]:
    """Within this block (in this thread or task), `check()` returning True stops the core."""
    token = _CHECK.set(check)
    try:
        yield
    finally:
        _CHECK.reset(token)


def current() -> Check | None:
    """The check in force, for a hot loop that consults it itself."""
    return _CHECK.get()


def checkpoint() -> None:
    """Raise `Interrupted` when the check in force says stop."""
    check = _CHECK.get()
    if check is not None and check():
        raise Interrupted


# Items of a long scan (the nodes of a cluster, their pods) between two consultations of the check.
ITEMS_BETWEEN_CHECKS = 256


def every(items: Iterable[T], between: int = ITEMS_BETWEEN_CHECKS) -> Iterator[T]:
    """`items`, consulting the check in force every `between` of them: for a scan over the whole cluster
    (a pod's inter-pod affinity or spread gathers every placed pod) that must stop with the decision."""
    check = _CHECK.get()
    if check is None:
        yield from items
        return
    for index, item in enumerate(items):
        if index % between == 0 and check():
            raise Interrupted
        yield item
