"""Operator lifecycle in kopf: startup, login, probes, and the active replica's loops.

The scheduling and claim-lifecycle loops run inside a kopf *daemon* on the
`AllocationPolicy` named `default`. kopf stops daemons when peering pauses this
replica and starts them again when it is resumed, so with two replicas only the
active one ever writes. The daemon relists everything before its loops start:
objects deleted while this replica was paused must not linger in its view.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from typing import Any

import kopf

from dralloc import metrics
from dralloc.allocation import selectors
from dralloc.handlers import clock, evicting, health, lifecycle, scheduling, watching
from dralloc.handlers.registry import REGISTRY
from dralloc.handlers.runtime import Runtime
from dralloc.kube import errors as kube_errors
from dralloc.kube import resources, writing
from dralloc.kube.session import Session

logger = logging.getLogger(__name__)

POLICY_NAME = "default"
STRATEGIES = {"FirstFit": "first-fit", "BinPack": "binpack", "Spread": "spread"}
RELISTED = (
    ("Node", resources.NODES), ("DeviceClass", resources.DEVICE_CLASSES),
    ("ResourceSlice", resources.RESOURCE_SLICES), ("ResourceClaimTemplate", resources.RESOURCE_CLAIM_TEMPLATES),
    ("DeviceHealthPolicy", resources.DEVICE_HEALTH_POLICIES),
)  # Pods and ResourceClaims are listed by their own feeds (watching.FED_DIRECTLY)


@kopf.on.login(registry=REGISTRY)
def login(**kwargs: Any) -> kopf.ConnectionInfo | None:
    if os.environ.get("KUBERNETES_SERVICE_HOST") and not os.environ.get("KUBECONFIG"):
        return kopf.login_with_service_account(**kwargs)
    return kopf.login_with_kubeconfig(**kwargs)


@kopf.on.startup(registry=REGISTRY)
async def startup(settings: kopf.OperatorSettings, memo: Runtime, **_: Any) -> None:
    runtime = memo.settings.runtime
    settings.posting.level = logging.WARNING  # kopf posts our warnings as Events; info goes to logs only
    settings.persistence.finalizer = "dralloc.io/kopf-finalizer"
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix="dralloc.io")
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(prefix="dralloc.io")
    settings.watching.server_timeout = 300
    settings.peering.stealth = True
    connection = memo.settings.connection
    memo.session = await Session.connect(kubeconfig=connection.kubeconfig, context=connection.context,
                                         in_cluster=connection.in_cluster)
    if runtime.metrics_port:
        metrics.serve(runtime.metrics_port, runtime.metrics_address)
    metrics.set_cluster_source(lambda: cluster_metrics(memo))
    await ensure_default_policy(memo)


@kopf.on.cleanup(registry=REGISTRY)
async def cleanup(memo: Runtime, **_: Any) -> None:
    metrics.set_cluster_source(None)
    if memo.session is not None:
        await memo.session.close()
        memo.session = None


@kopf.on.probe(id="synced", registry=REGISTRY)
async def synced(memo: Runtime, **_: Any) -> bool:
    return memo.synced.is_set()


async def ensure_default_policy(rt: Runtime) -> None:
    """The loops run as a daemon of the `default` AllocationPolicy: make sure it exists."""
    session = rt.require_session()
    body = {"apiVersion": "dralloc.io/v1alpha1", "kind": "AllocationPolicy", "metadata": {"name": POLICY_NAME},
            "spec": {"strategy": "FirstFit"}}
    try:
        await writing.create_object(session, resources.ALLOCATION_POLICIES, body)
        logger.info("created AllocationPolicy %s (FirstFit)", POLICY_NAME)
    except kube_errors.ConflictError:
        pass  # exists already
    except kube_errors.NotFoundError:
        logger.error("the AllocationPolicy CRD is not installed (kubectl apply -k manifests/): dralloc stays idle")


def _strategy(spec: dict[str, Any]) -> tuple[str, str | None]:
    strategy = spec.get("strategy", "FirstFit")
    if strategy not in STRATEGIES:
        return "first-fit", f"spec.strategy: unknown strategy {strategy!r}; using FirstFit"
    return STRATEGIES[strategy], None


@kopf.on.resume("dralloc.io", "v1alpha1", "allocationpolicies", when=lambda name, **_: name == POLICY_NAME,
                registry=REGISTRY)
@kopf.on.create("dralloc.io", "v1alpha1", "allocationpolicies", when=lambda name, **_: name == POLICY_NAME,
                registry=REGISTRY)
@kopf.on.update("dralloc.io", "v1alpha1", "allocationpolicies", when=lambda name, **_: name == POLICY_NAME,
                registry=REGISTRY)
async def policy_changed(**kwargs: Any) -> None:
    spec, meta, patch, memo = kwargs["spec"], kwargs["meta"], kwargs["patch"], kwargs["memo"]
    policy, problem = _strategy(dict(spec))
    memo.policy = policy
    memo.wake()
    patch.status["conditions"] = [{
        "type": "Accepted",
        "status": "False" if problem else "True",
        "reason": "InvalidStrategy" if problem else "Valid",
        "message": problem or f"placing with {policy}",
        "lastTransitionTime": clock.stamp(),
    }]
    patch.status["observedGeneration"] = meta.get("generation")


@kopf.daemon("dralloc.io", "v1alpha1", "allocationpolicies", when=lambda name, **_: name == POLICY_NAME,
             registry=REGISTRY,
             cancellation_timeout=10.0)
async def control_loops(**kwargs: Any) -> None:
    spec, stopped, memo = kwargs["spec"], kwargs["stopped"], kwargs["memo"]
    memo.policy, _problem = _strategy(dict(spec))
    for kind, resource in RELISTED:  # objects deleted while this replica was paused must go
        await watching.relist(memo, kind, resource)
    fed_versions = {kind: await watching.relist(memo, kind, resource) for kind, resource in watching.FED_DIRECTLY}
    rules_version = await watching.relist_taint_rules(memo)  # before any placement: rules are in effect
    memo.synced.set()
    memo.wake()
    stop = asyncio.Event()
    tasks = [
        asyncio.create_task(scheduling.scheduling_loop(memo, stop), name="dralloc-scheduling"),
        asyncio.create_task(lifecycle.lifecycle_loop(memo, stop), name="dralloc-lifecycle"),
        asyncio.create_task(watching.taint_rule_feed(memo, stop, rules_version), name="dralloc-taint-rules"),
        asyncio.create_task(evicting.eviction_loop(memo, stop), name="dralloc-eviction"),
        asyncio.create_task(health.health_loop(memo, stop), name="dralloc-health"),
        *(asyncio.create_task(watching.object_feed(memo, stop, kind, resource, fed_versions[kind]),
                              name=f"dralloc-feed-{resource.plural}")
          for kind, resource in watching.FED_DIRECTLY),
    ]
    try:
        await stopped.wait()
    finally:
        stop.set()
        memo.wake()
        memo.eviction_wakeup.set()
        memo.health_wakeup.set()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        memo.synced.clear()


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
    devices: dict[tuple[str, ...], float] = {}
    snapshot = rt.views.snapshot()
    busy = set(snapshot.allocated.exclusive) | snapshot.allocated.shared
    for s in snapshot.slices.slices:
        for info in snapshot.slices.device_infos(s):
            classes = [name for name, c in snapshot.classes.items() if selectors.in_class(info, c)] or ["none"]
            tainted = bool(info.taints) or info.id in snapshot.extra_taints
            for class_name in classes:
                for state, counted in (("total", True), ("allocated", info.id in busy), ("tainted", tainted)):
                    if counted:
                        key = (info.driver, class_name, state)
                        devices[key] = devices.get(key, 0) + 1
    now_changes = rt.cluster.relevant_changes
    queue = {"pending": 0.0, "backoff": 0.0, "unschedulable": 0.0, "error": 0.0}
    settings = rt.settings.scheduling
    now = time.monotonic()
    for pod in rt.cluster.pods.all():
        if not scheduling.owned(pod, scheduler_name=settings.scheduler_name, gate=settings.gate):
            continue
        memory = rt.pods.get(pod.metadata.uid or "")
        if memory is not None and memory.error_at is not None:
            queue["error"] += 1  # until a decision for it succeeds or finds it unschedulable
        elif memory is not None and memory.retry_at > now:
            queue["backoff"] += 1
        elif memory is not None and memory.unschedulable_at == now_changes:
            queue["unschedulable"] += 1
        else:
            queue["pending"] += 1
    stats = selectors.STATS
    return {
        "resource_claims": list(claims.items()),
        "devices": list(devices.items()),
        "queue": [((k,), v) for k, v in queue.items()],
        "cel": [(("cached",), float(stats.cached)), (("evaluated",), float(stats.evaluated)),
                (("error",), float(stats.errors))],
    }

