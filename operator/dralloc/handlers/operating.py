"""Operator lifecycle in kopf: startup, login, probes, and the active replica's loops.

kopf runs on every replica (standalone: no kopf peering) and keeps each replica's
cluster view current through its watches. The control loops (scheduling, claim
lifecycle, DeviceTaintRule feed, eviction, health, and the Pod/ResourceClaim feeds)
run only on the replica that holds the leader Lease (handlers/leading.py), or always
with `--standalone`. They start after a relist of everything (objects deleted while
this replica was not acting must not linger in its view) and stop when the Lease is
lost. The `default` AllocationPolicy is only read by kopf's event handler; the active
replica creates it when missing and writes its status. A cluster without dralloc's CRDs
still gets its pods placed, under the default policy; the policy loop says which CRD is
missing and creates `default` once its CRD is installed (watching.look_for_crds).

The top layer of handlers/: `ControlLoops` starts every loop of the layers below
(scheduling, lifecycle, evicting, health, coexisting, watching's feeds) and `leading`'s
election starts and stops it; nothing in handlers/ imports this module but the package.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
from typing import Any

import kopf

from dralloc import metrics
from dralloc.allocation import selectors
from dralloc.handlers import (
    clock,
    coexisting,
    evicting,
    health,
    items,
    leading,
    lifecycle,
    moving,
    scheduling,
    watching,
)
from dralloc.handlers.registry import REGISTRY
from dralloc.handlers.runtime import Runtime
from dralloc.kube import errors as kube_errors
from dralloc.kube import resources, writing
from dralloc.kube.session import Session
from dralloc.scheduling import queueing
from dralloc.state import capacity

logger = logging.getLogger(__name__)

POLICY_NAME = "default"
TLS_CLOSE_GRACE = 0.25  # seconds the loop keeps running for closing TLS connections (cleanup)
STRATEGIES = {"FirstFit": "first-fit", "BinPack": "binpack", "Spread": "spread",
              "FragmentationAware": "fragmentation-aware"}
RELISTED = (
    ("ResourceClaimTemplate", resources.RESOURCE_CLAIM_TEMPLATES),
    ("DeviceHealthPolicy", resources.DEVICE_HEALTH_POLICIES),
)  # Pods, nodes, claims, slices, classes, namespaces and storage are listed by their own feeds (watching.FED_DIRECTLY)


@kopf.on.login(registry=REGISTRY)
def login(**kwargs: Any) -> kopf.ConnectionInfo | None:
    if os.environ.get("KUBERNETES_SERVICE_HOST") and not os.environ.get("KUBECONFIG"):
        return kopf.login_with_service_account(**kwargs)
    return kopf.login_with_kubeconfig(**kwargs)


@kopf.on.startup(registry=REGISTRY)
async def startup(settings: kopf.OperatorSettings, memo: Runtime, **_: Any) -> None:
    runtime = memo.settings.runtime
    settings.posting.enabled = False  # Events are written by the active replica's loops only
    settings.persistence.finalizer = "dralloc.io/kopf-finalizer"
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix="dralloc.io")
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(prefix="dralloc.io")
    settings.watching.server_timeout = 300
    connection = memo.settings.connection
    memo.session = await Session.connect(kubeconfig=connection.kubeconfig, context=connection.context,
                                         in_cluster=connection.in_cluster)
    if memo.metrics_port:
        metrics.serve(memo.metrics_port, runtime.metrics_address)
    metrics.set_cluster_source(_on_loop(asyncio.get_running_loop(), memo))
    memo.control = ControlLoops(memo)
    if runtime.standalone:
        await memo.control.start()
    else:
        memo.leadership = leading.Leadership(runtime.leader_election, memo.identity, memo.session,
                                             start_loops=memo.control.start, stop_loops=memo.control.stop)
        memo.session.write_guard = memo.leadership.guard
        memo.background.append(asyncio.create_task(memo.leadership.run(memo.stopping), name="dralloc-leader"))


@kopf.on.cleanup(registry=REGISTRY)
async def cleanup(memo: Runtime, **_: Any) -> None:
    await stop_everything(memo)
    metrics.set_cluster_source(None)
    if memo.session is not None:
        tls = memo.session.server.startswith("https:")
        await memo.session.close()
        memo.session = None
        if tls:
            # A TLS connection ends with a close_notify exchange before its socket closes: the watch
            # streams kopf has just cancelled and our session's pool need the loop a moment longer, or
            # the loop's end strands their sockets (ResourceWarning: unclosed transport; seen on a real
            # kube-apiserver by `make e2e`, never on the plain-HTTP sandbox).
            await asyncio.sleep(TLS_CLOSE_GRACE)


async def stop_everything(rt: Runtime) -> None:
    """Stop the election (giving the Lease up) and the loops; idempotent."""
    rt.stopping.set()
    for task in rt.background:
        with contextlib.suppress(asyncio.CancelledError):
            await task
    rt.background.clear()
    if rt.control is not None:
        await rt.control.stop()


@kopf.on.probe(id="synced", registry=REGISTRY)
async def synced(memo: Runtime, **_: Any) -> bool:
    return memo.synced.is_set()


@kopf.on.probe(id="crds", registry=REGISTRY)
async def crds(memo: Runtime, **_: Any) -> str:
    """Whether dralloc's CRDs are installed, as the active replica last looked (in /healthz)."""
    if memo.missing_crds is None:
        return "not looked for (the active replica looks)"
    if not memo.missing_crds:
        return "installed"
    return f"missing: {', '.join(memo.missing_crds)} (install: {watching.INSTALL_CRDS})"


@kopf.on.probe(id="leader", registry=REGISTRY)
async def leader(memo: Runtime, **_: Any) -> dict[str, Any]:
    """Whether this replica acts, who it is, and who holds the Lease (in /healthz)."""
    election = memo.leadership
    duties = memo.coexistence.describe()
    if election is None:
        return {"active": True, "identity": memo.identity, "election": "off (--standalone)", "duties": duties}
    record = election.elector.record
    return {"active": election.acting, "identity": memo.identity,
            "lease": f"{election.namespace}/{election.name}", "holder": record.holder if record else None,
            "duties": duties}


async def ensure_default_policy(rt: Runtime) -> bool:
    """Make sure the `default` AllocationPolicy exists; False when it cannot be created (its CRD is not
    installed, which the policy loop has said: watching.look_for_crds); pods are placed under the default
    policy meanwhile."""
    session = rt.require_session()
    body = {"apiVersion": "dralloc.io/v1alpha1", "kind": "AllocationPolicy", "metadata": {"name": POLICY_NAME},
            "spec": {"strategy": "FirstFit"}}
    try:
        await writing.create_object(session, resources.ALLOCATION_POLICIES, body)
        logger.info("created AllocationPolicy %s (FirstFit)", POLICY_NAME)
    except kube_errors.ConflictError:
        pass  # exists already
    except kube_errors.NotFoundError:
        return False  # the CRD went away between discovery and the create: looked for again
    except kube_errors.KubeError as exc:  # tried again on the policy loop's next pass (a minute at most)
        logger.warning("AllocationPolicy %s: cannot create it: %s", POLICY_NAME, exc)
        metrics.observe_object_error("policy")
        return False
    return True


def _strategy(spec: dict[str, Any]) -> tuple[str, str | None]:
    strategy = spec.get("strategy", "FirstFit")
    if strategy not in STRATEGIES:
        return "first-fit", f"spec.strategy: unknown strategy {strategy!r}; using FirstFit"
    return STRATEGIES[strategy], None


def _preemption(spec: dict[str, Any]) -> tuple[bool, str | None]:
    value = spec.get("preemption", "Enabled")
    if value not in ("Enabled", "Disabled"):
        return True, f"spec.preemption: unknown value {value!r}; preemption stays Enabled"
    return value == "Enabled", None


MAX_BATCH_ORDERS = 8  # the CRD's maximum for spec.batchOrders


def _batch_orders(spec: dict[str, Any], policy: str) -> tuple[int, str | None]:
    """spec.batchOrders: the orders tried for each batch of single pods (1: one by one). Only the
    fragmentation-aware policy measures what an order leaves, so under another one it is refused."""
    return _fragmentation_aware_count(spec, policy, "batchOrders", 1, MAX_BATCH_ORDERS, "placing one by one")


def _consolidation_moves(spec: dict[str, Any], policy: str) -> tuple[int, str | None]:
    """spec.consolidationMoves: movable pods moved at most to make room for one pod (0: none). Only the
    fragmentation-aware policy's model tells which nodes are worth it, so under another one it is refused."""
    return _fragmentation_aware_count(spec, policy, "consolidationMoves", 0, moving.MAX_MOVES, "moving no pod")


def _fragmentation_aware_count(spec: dict[str, Any], policy: str, field: str, off: int, most: int,
                               instead: str) -> tuple[int, str | None]:
    """A whole number from `off` to `most` that only the fragmentation-aware policy uses: the value in effect
    (`off` when it is invalid or the policy is another) and the problem to report, naming the field."""
    value = spec.get(field, off)
    if isinstance(value, bool) or not isinstance(value, int) or not off <= value <= most:
        return off, f"spec.{field}: {value!r} is not a whole number from {off} to {most}; {instead}"
    if value != off and policy != "fragmentation-aware":
        return off, f"spec.{field}: {value} needs strategy FragmentationAware; {instead}"
    return value, None


@kopf.on.event("dralloc.io", "v1alpha1", "allocationpolicies", when=lambda name, **_: name == POLICY_NAME,
               registry=REGISTRY)
async def policy_event(**kwargs: Any) -> None:
    """Read the strategy; the active replica writes the status (kopf's event handlers write nothing)."""
    event, body, memo = kwargs["event"], kwargs["body"], kwargs["memo"]
    if event.get("type") == "DELETED":
        memo.policy, memo.policy_body, memo.preemption, memo.batch_orders = "first-fit", None, True, 1
        memo.consolidation_moves = 0
    else:
        memo.policy, _ = _strategy(dict(body.get("spec") or {}))
        memo.preemption = _preemption(dict(body.get("spec") or {}))[0]
        memo.batch_orders = _batch_orders(dict(body.get("spec") or {}), memo.policy)[0]
        memo.consolidation_moves = _consolidation_moves(dict(body.get("spec") or {}), memo.policy)[0]
        memo.policy_body = dict(body)
    memo.wake()
    memo.policy_wakeup.set()


async def _policy_status(rt: Runtime) -> None:
    """Write the `default` AllocationPolicy's `Accepted` condition when it differs from what it says."""
    body = rt.policy_body
    if body is None:
        return
    meta, status = body.get("metadata") or {}, body.get("status") or {}
    policy, problem = _strategy(dict(body.get("spec") or {}))
    preempting, preemption_problem = _preemption(dict(body.get("spec") or {}))
    orders, batch_problem = _batch_orders(dict(body.get("spec") or {}), policy)
    moves, moves_problem = _consolidation_moves(dict(body.get("spec") or {}), policy)
    if not rt.settings.scheduling.preemption:
        said = "preemption off (--no-preemption)"
    else:
        said = f"preemption {'on' if preempting else 'off'}"
    if moves > 0:
        said = f"{said}; moving up to {moves} movable pod(s) to make room"
    if orders > 1:
        said = f"batches of up to {scheduling.BATCH} pods, {orders} orders tried; {said}"
    reason = ("InvalidStrategy" if problem else "InvalidPreemption" if preemption_problem
              else "InvalidBatchOrders" if batch_problem else "InvalidConsolidationMoves" if moves_problem
              else "Valid")
    problems = [p for p in (problem, preemption_problem, batch_problem, moves_problem) if p]
    wanted = {"type": "Accepted", "status": "False" if problems else "True", "reason": reason,
              "message": "; ".join(problems) or f"placing with {policy}; {said}"}
    current: dict[str, Any] = next((c for c in status.get("conditions") or [] if c.get("type") == "Accepted"), {})
    if all(current.get(k) == v for k, v in wanted.items()) and status.get("observedGeneration") == meta.get("generation"):
        return
    patch = {"status": {"conditions": [{**wanted, "lastTransitionTime": clock.stamp()}],
                        "observedGeneration": meta.get("generation")}}
    stored = await writing.merge_patch(rt.require_session(), resources.ALLOCATION_POLICIES, POLICY_NAME, patch,
                                       subresource="status")
    rt.policy_body = stored


async def policy_loop(rt: Runtime, stopped: asyncio.Event) -> None:
    """The active replica's AllocationPolicy duties: make sure `default` exists, keep its status true.

    Each pass first looks for dralloc's CRDs (watching.look_for_crds: logged once per change): at the
    start, on every policy event, and every NOT_SERVED_RETRY seconds while one is missing. Without the
    AllocationPolicy CRD pods are placed under the default policy; once it is installed, `default` is
    created (kopf, which watches the CRDs, has started watching the policies by itself: no restart)."""
    ensured = False
    while not stopped.is_set():
        rt.policy_wakeup.clear()
        try:
            missing = await watching.look_for_crds(rt)
            if not ensured and watching.crd_name(resources.ALLOCATION_POLICIES) not in missing:
                ensured = await ensure_default_policy(rt)
            await _policy_status(rt)
        except kube_errors.KubeError as exc:
            logger.warning("AllocationPolicy %s: cannot write status: %s", POLICY_NAME, exc)
            metrics.observe_object_error("policy")
            await asyncio.sleep(1.0)
            rt.policy_wakeup.set()
        except Exception:
            logger.exception("AllocationPolicy %s: status pass failed", POLICY_NAME)
            metrics.observe_pass_failure("policy")
            await asyncio.sleep(1.0)
            rt.policy_wakeup.set()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(rt.policy_wakeup.wait(),
                                   timeout=watching.NOT_SERVED_RETRY if rt.missing_crds else 60.0)



# A cluster view this big (objects listed) is left out of the collector's later passes.
FREEZE_AT = 500


def _freeze_the_view(rt: Runtime) -> None:
    """Once the initial lists are in: on a big cluster, the view's objects (hundreds of thousands
    of models, device infos, indexes) are frozen out of CPython's cyclic collector, whose full
    passes otherwise traverse all of them while a decision waits (tens of ms at 5,000 nodes).
    Reference counting still frees them when they are replaced; collecting first keeps garbage
    cycles that exist now out of the frozen set."""
    cluster = rt.cluster
    if len(cluster.slices) + len(cluster.nodes) + len(cluster.pods) + len(cluster.claims) < FREEZE_AT:
        return
    gc.collect()
    gc.freeze()
    logger.info("cluster view listed: %d objects frozen out of the garbage collector", gc.get_freeze_count())

class ControlLoops:
    """The active replica's loops: started when it may act, stopped when it may not."""

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt
        self.stop_event = asyncio.Event()
        self.tasks: list[asyncio.Task[None]] = []
        self.feeds: list[asyncio.Task[None]] = []
        self.starting: asyncio.Task[None] | None = None

    async def start(self) -> None:
        if self.tasks or self.starting is not None:
            return
        self.stop_event = asyncio.Event()
        # Relisting takes a while on a big cluster: the election loop must not wait for it.
        self.starting = asyncio.create_task(self._start(), name="dralloc-loops-start")
        self.rt.background_loops.add(self.starting)  # a reference until it is done
        self.starting.add_done_callback(self.rt.background_loops.discard)

    async def _start(self) -> None:
        rt, stop = self.rt, self.stop_event
        try:
            for kind, resource in RELISTED:  # objects deleted while this replica was not acting must go
                await watching.relist_or_none(rt, kind, resource)  # no DeviceHealthPolicy CRD: none
            fed_versions = {kind: await watching.relist_or_none(rt, kind, resource)
                            for kind, resource in watching.FED_DIRECTLY}
            rules_version = await watching.relist_taint_rules(rt)  # before any placement: rules are in effect
            groups_version = await watching.relist_pod_groups(rt)  # before any placement: gangs are known
            if rt.coexistence.follows_lease:  # who does the claim lifecycle, before its first pass
                await coexisting.refresh(rt)
        except Exception:
            logger.exception("relisting before the control loops start failed; retrying")
            metrics.observe_pass_failure("scheduling")
            self.starting = None
            await asyncio.sleep(1.0)
            if not stop.is_set():
                await self.start()
            return
        if stop.is_set():
            self.starting = None
            return
        _freeze_the_view(rt)
        rt.synced.set()
        rt.wake()
        self.feeds = [
            asyncio.create_task(watching.taint_rule_feed(rt, stop, rules_version), name="dralloc-taint-rules"),
            asyncio.create_task(watching.pod_group_feed(rt, stop, groups_version), name="dralloc-pod-groups"),
            *(asyncio.create_task(watching.object_feed(rt, stop, kind, resource, fed_versions[kind]),
                                  name=f"dralloc-feed-{resource.plural}")
              for kind, resource in watching.FED_DIRECTLY),
        ]
        self.tasks = [
            asyncio.create_task(scheduling.scheduling_loop(rt, stop), name="dralloc-scheduling"),
            asyncio.create_task(lifecycle.lifecycle_loop(rt, stop), name="dralloc-lifecycle"),
            asyncio.create_task(evicting.eviction_loop(rt, stop), name="dralloc-eviction"),
            asyncio.create_task(health.health_loop(rt, stop), name="dralloc-health"),
            asyncio.create_task(policy_loop(rt, stop), name="dralloc-policy"),
            asyncio.create_task(coexisting.coexistence_loop(rt, stop), name="dralloc-coexistence"),
            *self.feeds,
        ]
        self.starting = None
        logger.info("control loops running (replica %s)", rt.identity)

    async def stop(self) -> None:
        rt = self.rt
        self.stop_event.set()
        starting, self.starting = self.starting, None
        if starting is not None:
            starting.cancel()
            await asyncio.gather(starting, return_exceptions=True)
        if not self.tasks:
            return
        rt.wake()
        rt.eviction_wakeup.set()
        rt.health_wakeup.set()
        rt.policy_wakeup.set()
        tasks, self.tasks = self.tasks, []
        # Feeds only read: cancelled at once. Loops finish their current step and return.
        for feed in self.feeds:
            feed.cancel()
        _, pending = await asyncio.wait(tasks, timeout=5.0)
        for task in pending:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        rt.synced.clear()
        rt.missing_crds = None  # looked for again by the next active replica; a standby exports 0
        metrics.set_crds_missing(())
        logger.info("control loops stopped (replica %s)", rt.identity)


def _on_loop(loop: asyncio.AbstractEventLoop, rt: Runtime) -> metrics.ClusterSource:
    """The scrape-time gauges, computed on the operator's event loop.

    Prometheus scrapes in a thread of its own, while the loop changes the cluster view:
    reading the view from that thread could meet a dict changing size mid-iteration.
    """
    async def compute() -> dict[str, list[tuple[tuple[str, ...], float]]]:
        # Classifying every device (after a DeviceClass change) is seconds of CEL at 5,000 nodes: done in
        # steps, the loop's other work running in between.
        steps = rt.views.inventory_steps()
        if steps is not None:
            for _ in steps:
                await asyncio.sleep(0)
        return cluster_metrics(rt)

    def source() -> dict[str, list[tuple[tuple[str, ...], float]]]:
        if not loop.is_running():
            return cluster_metrics(rt)  # no loop to ask (stopping)
        try:
            if asyncio.get_running_loop() is loop:
                return cluster_metrics(rt)  # already on the loop (a scrape from a handler or a test)
        except RuntimeError:
            pass
        return asyncio.run_coroutine_threadsafe(compute(), loop).result(timeout=10)

    return source


def cluster_metrics(rt: Runtime) -> dict[str, list[tuple[tuple[str, ...], float]]]:
    """Scrape-time gauges from the cluster view (closed label sets only)."""
    claims: dict[tuple[str, ...], float] = {}
    for claim in rt.cluster.claims.all():
        allocation = claim.status.allocation
        admin = any(r.admin_access for r in allocation.devices.results) if allocation else False
        source = "resource_claim_template" if any(o.kind == "Pod" and o.controller
                                                  for o in claim.metadata.owner_references) else "resource_claim"
        key = ("true" if allocation else "false", "true" if admin else "false", source)
        claims[key] = claims.get(key, 0) + 1
    # Which class each device is in is computed once per slice, class or taint-rule change; a scrape
    # only looks the devices up in the allocated state.
    capacities = capacity.device_gauges(rt.views.inventory(), rt.views.snapshot().allocated)
    queue = dict.fromkeys(metrics.QUEUE_STATES, 0.0)
    settings = rt.settings.scheduling
    for pod in rt.cluster.pods.all():
        if not items.owned(pod, scheduler_name=settings.scheduler_name, gate=settings.gate):
            continue
        uid = pod.metadata.uid or ""
        memory = rt.pods.get(uid)
        entry = rt.queue.entries.get(uid)
        failure = memory.failure if memory is not None and entry is not None else ""
        # How its last attempt ended counts until the next one ends otherwise: a change that sends an
        # unschedulable pod back to the queue does not make it schedulable (nor reset the alert's clock).
        if items.held_by(pod, gate=settings.gate):
            queue["gated"] += 1  # not tried at all until its other scheduling gates are gone
        elif failure == "error":
            queue["error"] += 1
        elif failure in ("unschedulable", "too-costly"):
            queue["unschedulable"] += 1
        elif entry is not None and entry.place is queueing.Place.BACKOFF:
            queue["backoff"] += 1
        elif failure == "waiting" or capacity.claims_missing(pod, rt.cluster.claims.entries.keys()):
            queue["waiting-for-claim"] += 1  # a claim to be created from its template, or named and absent
        else:
            queue["pending"] += 1
    stats = selectors.STATS
    return {
        "resource_claims": list(claims.items()),
        **capacities,
        "claim_states": capacity.claim_gauges(rt.cluster.claims.all()),
        "queue": [((k,), v) for k, v in queue.items()],
        "cel": [(("cached",), float(stats.cached)), (("evaluated",), float(stats.evaluated)),
                (("error",), float(stats.errors))],
    }

