"""Decisions off the event loop, each under a CPU-time budget.

The allocator's search for one pod (or one gang) is pure Python and, for a claim a tenant
can legally write (five requests of eight `firstAvailable` alternatives with a
`matchAttribute`), can take minutes. Run on the operator's asyncio loop it would stop
everything else: watches, the leader Lease's renewal, /healthz, /metrics, shutdown. So a
decision runs in one worker thread, against the pass's `Placer` (its snapshot is immutable;
the placer is touched by one decision at a time, the loop awaiting it), and the loop keeps
running: CPython hands the GIL to the loop's thread whenever it waits for it longer than the
switch interval (5 ms), so the loop's work is delayed by milliseconds, never by a decision.

Each decision gets a CPU-time budget, measured with the worker thread's own CPU clock
(`time.thread_time`), so a loaded machine does not make a cheap decision look costly. The
pure core consults the budget through `allocation.interruption` at its checkpoints (search
steps, CEL evaluations, nodes tried); when it is spent the decision is abandoned and the
caller gets `TooCostly`: the pod is told so and backs off. Shutting down stops a decision
in flight at its next checkpoint too.

Only deciding runs here. Reading the cluster view (building items), recording decisions in
the ledger and every API write stay on the loop, which owns that state.

The lowest layer of handlers/: imports only `allocation.interruption`; the runtime owns
the one `Decider`, the decision passes (scheduling, ganging) hand it their work.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import threading
import time
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

from dralloc.allocation import interruption

T = TypeVar("T")

DEFAULT_CPU_BUDGET = 0.5  # seconds of CPU per decision (a pod, or a whole gang)


@dataclasses.dataclass(frozen=True)
class Decided(Generic[T]):
    """The decision's answer and the CPU seconds it took."""

    value: T
    cpu_seconds: float


@dataclasses.dataclass(frozen=True)
class TooCostly:
    """The decision used up its CPU budget (or the operator is stopping) before it was made."""

    cpu_seconds: float
    budget: float
    stopping: bool = False


@dataclasses.dataclass(frozen=True)
class Failed:
    """The decision raised (not an interruption): the caller reports it on the pod."""

    error: Exception


class Decider:
    """One worker thread that runs decisions one at a time, each under `cpu_budget` seconds of CPU."""

    def __init__(self, cpu_budget: float = DEFAULT_CPU_BUDGET) -> None:
        if cpu_budget <= 0:
            raise ValueError(f"the decision CPU budget must be positive, not {cpu_budget}")
        self.cpu_budget = cpu_budget
        self._stopping = threading.Event()
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None

    def _pool(self) -> concurrent.futures.ThreadPoolExecutor:
        if self._executor is None:
            self._executor = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="dralloc-decide")
        return self._executor

    async def run(self, decide: Callable[[], T], after: Callable[[T], None] | None = None) -> Decided[T] | TooCostly:
        """`decide()` in the worker thread; the loop stays free while it runs. `after(value)` runs next in
        the same thread, outside the budget: what must not be cut in the middle (recording the decision
        in the placer). Exceptions other than an interruption propagate (the caller reports them)."""
        (answer,) = await self.run_each([decide], after)
        if isinstance(answer, Failed):
            raise answer.error
        return answer

    async def run_each(self, decisions: Sequence[Callable[[], T]], after: Callable[[T], None] | None = None, *,
                       slice_cpu: float = 0.05, budgets: Sequence[float] | None = None,
                       ) -> list[Decided[T] | TooCostly | Failed]:
        """Several decisions, in order, in one trip to the worker thread (each under its own budget, each
        followed by `after`): the answers of the first ones, stopping once the trip has used `slice_cpu`
        seconds of CPU after a decision, so the loop gets to what arrived meanwhile. An exception of one
        decision is its answer (`Failed`); the others go on. `budgets`: each decision's CPU budget when
        not `cpu_budget` (a batch of pods decided as one gets one per pod)."""
        if budgets is not None and len(budgets) != len(decisions):
            raise ValueError("one budget per decision")
        self._stopping.clear()
        loop = asyncio.get_running_loop()
        planned = [(decide, budgets[i] if budgets is not None else self.cpu_budget)
                   for i, decide in enumerate(decisions)]
        future = loop.run_in_executor(self._pool(), self._each, planned, after, slice_cpu)
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            self._stopping.set()
            raise

    def _each(self, decisions: list[tuple[Callable[[], T], float]], after: Callable[[T], None] | None,
              slice_cpu: float) -> list[Decided[T] | TooCostly | Failed]:
        started = time.thread_time()
        answers: list[Decided[T] | TooCostly | Failed] = []
        for decide, budget in decisions:
            try:
                answers.append(self._timed(decide, after, budget))
            except Exception as exc:
                answers.append(Failed(exc))
            if self._stopping.is_set() or time.thread_time() - started > slice_cpu:
                break
        return answers

    def _timed(self, decide: Callable[[], T], after: Callable[[T], None] | None,
               budget: float) -> Decided[T] | TooCostly:
        started = time.thread_time()
        limit = started + budget
        stopping = self._stopping

        def spent() -> bool:
            return stopping.is_set() or time.thread_time() > limit

        with interruption.interrupt_when(spent):
            try:
                value = decide()
            except interruption.Interrupted:
                return TooCostly(time.thread_time() - started, budget, stopping.is_set())
        if after is not None:
            after(value)
        return Decided(value, time.thread_time() - started)

    def close(self) -> None:
        """Stop a decision in flight at its next checkpoint and let the thread end."""
        self._stopping.set()
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None
