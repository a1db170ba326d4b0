"""What the operator's handlers share while it runs: settings, the API session,
the cluster view, the ledger, the pod queue, and the signals that wake the control loops.

One `Runtime` per operator process, passed to kopf as its `memo`, so every
handler receives it as `memo` (kopf's per-object copies are this very object).

The second layer of handlers/ (see its package docstring): it imports only the parts
below it (`deciding`, `duties`, `failures`, `leading`, `recording`) and the packages
under handlers/ (state, scheduling's queue, settings). What the wiring above puts into
it (the control loops) it knows only by the `Loops` protocol.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import time
from typing import TYPE_CHECKING, Any, Protocol

from dralloc.handlers.deciding import Decider
from dralloc.handlers.duties import Coexistence
from dralloc.handlers.failures import Failures
from dralloc.handlers.leading import Leadership, default_identity
from dralloc.handlers.recording import Recorder
from dralloc.lifecycle import eviction
from dralloc.model import pods
from dralloc.scheduling import consolidating, placement, queueing
from dralloc.settings import Settings
from dralloc.state.cluster import ClusterState
from dralloc.state.ledger import Ledger
from dralloc.state.views import Views

if TYPE_CHECKING:
    from dralloc.kube.resources import Resource
    from dralloc.kube.session import Session


@dataclasses.dataclass
class PodMemory:
    """What the scheduler remembers about one pod between passes, besides its place in the queue
    (`Runtime.queue`); it goes when the pod leaves the cluster."""

    # The node we bound it to (or, in gate mode, pinned it to and ungated it), until the watch shows
    # the binding: counted there by every placer (Runtime.placer).
    bound_to: str | None = None
    claims_awaited_since: float | None = None  # monotonic; since when it waits for KCM to create a claim
    # What its PodScheduled condition says now (written by us): the condition and the Event are
    # written again only when the message changes.
    last_message: str = ""
    failure: str = ""  # how its last attempt ended: "", "unschedulable", "too-costly", "error", "waiting"


class Loops(Protocol):
    """The active replica's control loops (handlers/operating.py's `ControlLoops`): started when it may
    act, stopped when it may not or when the operator stops."""

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


class Runtime:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.cluster = ClusterState()
        self.ledger = Ledger()
        self.views = Views(self.cluster, self.ledger, settings.scheduling.features, settings.scheduling.budget)
        self.session: Session | None = None
        self.policy = "first-fit"
        self.preemption = True  # the `default` AllocationPolicy's spec.preemption (Enabled)
        self.batch_orders = 1  # its spec.batchOrders: orders tried per batch of single pods (1: one by one)
        self.consolidation_moves = 0  # its spec.consolidationMoves: movable pods moved per pod that fits nowhere
        # Pods annotated dralloc.io/movable (namespace, name), kept as the view changes (handlers/moving.py
        # reads them when a pod fits nowhere: a scan of every pod per pass would cost the loop).
        self._movable: set[tuple[str, str]] = set()
        self._movable_known = True
        self.scheduling_wakeup = asyncio.Event()
        self.lifecycle_wakeup = asyncio.Event()
        self.dirty_pods: set[tuple[str, str]] = set()
        self.dirty_claims: set[tuple[str, str]] = set()
        self.dirty_pod_groups: set[tuple[str, str]] = set()  # PodGroups whose template claims to look at
        self.unknown_checked: dict[str, float] = {}  # claim uid -> when its unknown write was last read back
        self.lifecycle_failures = Failures()  # pods and claims whose lifecycle failed: backed off
        self.pods: dict[str, PodMemory] = {}  # by pod uid
        # Pods the watch showed with dralloc's pinned-node annotation, unbound: pinned by this or an earlier
        # process, for handlers/reclaiming.py to adopt (by pod uid).
        self.pin_records: set[str] = set()
        scheduling = settings.scheduling
        # The pending pods we own, as kube-scheduler queues them (active, backoff, unschedulable).
        self.queue = queueing.PodQueue(initial_backoff=scheduling.backoff_initial,
                                       max_backoff=scheduling.backoff_max,
                                       max_unschedulable=scheduling.max_unschedulable_seconds)
        self.cluster.listeners.append(self._changed)
        # Decisions run in a worker thread, each under a CPU budget (handlers/deciding.py).
        self.decider = Decider(scheduling.decision_cpu_budget)
        self.events = Recorder()  # the scheduler's Warning Events, repetitions as series
        self.synced = asyncio.Event()  # set once the first full list is in
        self.started = time.monotonic()
        # Who this process is in logs, Events and the leader Lease: distinct for every process.
        self.identity = settings.runtime.leader_election.identity or default_identity()
        self.metrics_port = settings.runtime.metrics_port  # where /metrics listens (running.usable_port)
        self.leadership: Leadership | None = None  # set when leader election runs (not --standalone)
        self.control: Loops | None = None  # the active replica's loops (handlers/operating.py)
        self.stopping = asyncio.Event()  # set when the operator shuts down
        self.background: list[asyncio.Task[None]] = []  # the election loop
        self.background_loops: set[asyncio.Task[None]] = set()
        # The `default` AllocationPolicy as kopf last delivered it (None: none), and its status writer's wake-up.
        self.policy_body: dict[str, Any] | None = None
        self.policy_wakeup = asyncio.Event()
        # dralloc's CRDs (their names) the cluster does not serve, as the active replica last looked
        # (None: not looked yet; handlers/watching.py `look_for_crds`).
        self.missing_crds: tuple[str, ...] | None = None
        self.placements = 0  # pods this process placed (bound or ungated)
        # Device health (handlers/evicting.py, handlers/health.py): the DeviceTaintRule version
        # this cluster serves (None: none), the loops' wake-ups, and the eviction limits
        # (flags, else DRALLOC_EVICTION_* environment variables; tests replace them before starting).
        self.taint_rule_resource: Resource | None = None
        # Gangs (handlers/ganging.py): the PodGroup version this cluster serves (None: none), and the
        # last message reported on each PodGroup (namespace, name), so it is posted once.
        self.pod_group_resource: Resource | None = None
        self.gang_messages: dict[tuple[str, str], str] = {}
        self.gangs_committing: set[tuple[str, str]] = set()  # gangs whose writes are in flight: not decided again
        self.eviction_wakeup = asyncio.Event()
        self.health_wakeup = asyncio.Event()
        # Who does the claim lifecycle and taint eviction: dralloc or kube-controller-manager.
        self.coexistence = Coexistence(settings.coexistence, os.environ)
        limits = eviction.Limits.from_environment(os.environ)
        flags = settings.eviction
        self.eviction_limits = eviction.Limits(
            per_minute=limits.per_minute if flags.per_minute is None else max(0, flags.per_minute),
            max_percent=limits.max_percent if flags.max_percent is None else min(100, max(0, flags.max_percent)),
            dry_run=limits.dry_run if flags.dry_run is None else flags.dry_run,
        )

    def __copy__(self) -> Runtime:
        # kopf gives every object's handlers a shallow copy of the memo; the operator's state must
        # be one and the same for all of them, or a handler's assignment would go unseen.
        return self

    def _changed(self, kind: str, before: dict[str, Any] | None, after: dict[str, Any] | None) -> None:
        """A change applied to the view: parked pods it may make fit go back to the queue."""
        change = queueing.EVERYTHING if before is None and after is None else queueing.classify(kind, before, after)
        if change is not None:
            self.queue.note(change)
        if kind == "Pod":
            self._note_movable(before, after)

    def _note_movable(self, before: dict[str, Any] | None, after: dict[str, Any] | None) -> None:
        if before is None and after is None:
            self._movable_known = False  # a full list: looked for again when next asked
            return
        meta = (after if after is not None else before or {}).get("metadata") or {}
        key = (meta.get("namespace") or "", meta.get("name") or "")
        if after is not None and (meta.get("annotations") or {}).get(consolidating.MOVABLE_ANNOTATION) == "true":
            self._movable.add(key)
        else:
            self._movable.discard(key)

    def movable_pods(self) -> list[pods.Pod]:
        """The pods of the view annotated `dralloc.io/movable: "true"`, by namespace and name."""
        if not self._movable_known:
            self._movable = {(p.metadata.namespace or "", p.metadata.name) for p in self.cluster.pods.all()
                             if consolidating.movable(p)}
            self._movable_known = True
        found = (self.cluster.pods.get(*key) for key in sorted(self._movable))
        return [pod for pod in found if pod is not None]

    def require_session(self) -> Session:
        if self.session is None:
            raise RuntimeError("the API session is not connected yet")
        return self.session

    def wake(self) -> None:
        self.scheduling_wakeup.set()
        self.lifecycle_wakeup.set()

    def mark_all_dirty(self) -> None:
        """Every pod, claim and PodGroup of the view is for the claim lifecycle's next pass to look at."""
        self.dirty_pods.update((p.metadata.namespace or "", p.metadata.name) for p in self.cluster.pods.all())
        self.dirty_claims.update((c.metadata.namespace or "", c.metadata.name) for c in self.cluster.claims.all())
        self.dirty_pod_groups.update(self.cluster.pod_groups.entries)

    def placer(self) -> placement.Placer:
        """A placer for a pass under the current policy: the view, plus the pods this process bound (or
        pinned and ungated) whose binding the watch has not shown yet, counted where they go, and the
        nodes held for nominated pods (`Placer.hold`)."""
        placer = self.views.placer(self.policy)
        for uid, memory in self.pods.items():
            if memory.bound_to is None:
                continue
            key = self.cluster.pod_keys.get(uid)
            pod = self.cluster.pods.get(*key) if key is not None else None
            if pod is not None and not pod.spec.node_name and not pod.metadata.deletion_timestamp:
                placer.assume(pod, memory.bound_to)
        for key in self.cluster.unplaced_pods:
            pod = self.cluster.pods.get(*key)
            if (pod is not None and pod.status.nominated_node_name and not pod.spec.node_name
                    and not pod.metadata.deletion_timestamp):
                placer.hold(pod.status.nominated_node_name, pod)  # preemption is making room there for it
        return placer

    def memory(self, pod_uid: str) -> PodMemory:
        return self.pods.setdefault(pod_uid, PodMemory())

    def watches_namespace(self, namespace: str | None) -> bool:
        allowed = self.settings.scheduling.namespaces
        return not allowed or not namespace or namespace in allowed
