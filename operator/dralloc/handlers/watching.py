"""kopf event handlers that keep the cluster view current and wake the control loops.

`@kopf.on.event` handlers neither patch nor store progress on the objects: they
only feed `Runtime.cluster`. When kopf pauses this replica (peering), they stop
with everything else; the active replica relists when it (re)starts its loops.

DeviceTaintRules are the exception: their served version differs between clusters
(resource.k8s.io v1 from Kubernetes 1.37, v1beta2/v1alpha3 before) and kopf needs a
concrete version when the decorator runs, at import, before we can ask the server.
So they are fed by `taint_rule_feed`, a list + watch task the control-loop daemon
starts (active replica only) after finding the served version through discovery.
Its first list happens before the loops start (`relist_taint_rules`), so no
placement is ever made without the rules; a cluster that serves no version of
the type simply has no rules.

PodGroups (scheduling.k8s.io, gang scheduling) are fed the same way, for the same reason
(v1beta1 in 1.37, v1alpha2 in 1.36, not served at all without GenericWorkload):
`relist_pod_groups` before the loops start, then `pod_group_feed`. A cluster that serves
no version has no PodGroups, and pods naming one are placed one by one (as kube-scheduler
does without the feature: the API server then drops `spec.schedulingGroup` anyway).

The top layers: calls the runtime (its cluster view and wake-ups) and the kube client;
`operating` starts the feeds.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any

import kopf

from dralloc import metrics
from dralloc.handlers import reclaiming
from dralloc.handlers.registry import REGISTRY
from dralloc.handlers.runtime import Runtime
from dralloc.kube import errors as kube_errors
from dralloc.kube import reading, resources

logger = logging.getLogger(__name__)

# (kind, group, version, plural): what the operator watches.
# Pods and ResourceClaims change several times per placement: they are fed by `object_feed`
# (a plain list+watch in the active replica's daemon) rather than by kopf's per-event machinery.
# So are ResourceSlices, the bulk of a big cluster: kopf would list them a second time and keep a
# worker (and the raw JSON) per slice; the view parses each as it is listed and keeps the model.
# DeviceClasses too: a claim's class must be in the view by the time the claim is (a class created
# just before a pod was seen after the pod's claim when kopf's machinery carried it). Nodes as well:
# kopf's per-event machinery cost about 0.3 ms a Node on the event loop, 1.5 s for the initial list
# of 5,000 (while the first pods were placed) and again for every status update. And what only
# the scheduler reads: namespaces' labels (pod affinity's namespaceSelector), what kube-scheduler's
# volume filters read (scheduling/volumes.py), and PodDisruptionBudgets (priority preemption).
FED_DIRECTLY = (("Pod", resources.PODS), ("Node", resources.NODES), ("ResourceClaim", resources.RESOURCE_CLAIMS),
                ("ResourceSlice", resources.RESOURCE_SLICES), ("DeviceClass", resources.DEVICE_CLASSES),
                ("Namespace", resources.NAMESPACES),
                ("PersistentVolumeClaim", resources.PERSISTENT_VOLUME_CLAIMS),
                ("PersistentVolume", resources.PERSISTENT_VOLUMES), ("StorageClass", resources.STORAGE_CLASSES),
                ("CSINode", resources.CSI_NODES), ("CSIDriver", resources.CSI_DRIVERS),
                ("CSIStorageCapacity", resources.CSI_STORAGE_CAPACITIES),
                ("PodDisruptionBudget", resources.POD_DISRUPTION_BUDGETS))
WATCHED = (
    ("ResourceClaimTemplate", "resource.k8s.io", "v1", "resourceclaimtemplates"),
    ("DeviceHealthPolicy", "dralloc.io", "v1alpha1", "devicehealthpolicies"),
)
NOT_SERVED_RETRY = 60.0  # seconds between looks at an OPTIONAL kind the cluster does not serve
TAINT_RULE_RETRY = 1.0  # seconds before re-watching after the API went away
# A watch the server ends within this many seconds without a single event is treated as a failure
# (client-go's reflector: "very short watch ... watch lasted less than a second and no items
# received"): relist after TAINT_RULE_RETRY instead of resuming at once from the same version. A
# server that keeps ending watches at once (overloaded, or dropping what it had not sent) would
# otherwise keep the view stale while the feed spins.
SHORT_WATCH = 1.0


def feed(rt: Runtime, kind: str, event_type: str | None, raw: dict[str, Any]) -> None:
    """Apply one event to the view and mark what the loops must look at."""
    if not rt.cluster.apply(kind, event_type, raw):
        return
    meta = raw.get("metadata") or {}
    key = (meta.get("namespace") or "", meta.get("name") or "")
    if kind == "Pod":
        rt.dirty_pods.add(key)
        reclaiming.record_pin(rt, raw)
        rt.lifecycle_wakeup.set()
    elif kind == "ResourceClaim":
        rt.dirty_claims.add(key)
        claim = rt.cluster.claims.get(*key)
        if claim is not None:
            rt.ledger.observed(claim)
        elif event_type == "DELETED":
            rt.ledger.forget_deleted(str(meta.get("uid") or ""))
        rt.lifecycle_wakeup.set()
    elif kind == "ResourceClaimTemplate":
        rt.dirty_pods.update(k for k in rt.cluster.pods.entries if k[0] == key[0])
        rt.dirty_pod_groups.update(k for k in rt.cluster.pod_groups.entries if k[0] == key[0])
        rt.lifecycle_wakeup.set()
    elif kind == "PodGroup":
        # Its template entries get claims, and its members wait for it (handlers/lifecycle.py).
        rt.dirty_pod_groups.add(key)
        rt.lifecycle_wakeup.set()
    elif kind == "DeviceTaintRule":
        # A rule changes what the allocator may use: the very next placement must see it.
        rt.lifecycle_wakeup.set()
    elif kind == "DeviceClass" and (raw.get("spec") or {}).get("extendedResourceName"):
        # A class that names an extended resource (added, changed or gone) decides which pods need
        # an extended-resource claim: the lifecycle must look at the pods again, not wait for a resync.
        rt.dirty_pods.update(rt.cluster.pods.entries)
        rt.lifecycle_wakeup.set()
    rt.scheduling_wakeup.set()
    rt.eviction_wakeup.set()
    rt.health_wakeup.set()


async def relist_taint_rules(rt: Runtime) -> str:
    """Find the served DeviceTaintRule version, list the rules into the view; the list's resourceVersion."""
    session = rt.require_session()
    version = await session.served_version(resources.RESOURCE, resources.DEVICE_TAINT_RULES.plural)
    if version is None:
        rt.taint_rule_resource = None
        rt.cluster.replace_all("DeviceTaintRule", [])
        logger.info("this cluster serves no DeviceTaintRule version: no rules to apply")
        return ""
    rt.taint_rule_resource = resources.DEVICE_TAINT_RULES.at_version(version)
    items, list_rv = await reading.list_objects(session, rt.taint_rule_resource)
    rt.cluster.replace_all("DeviceTaintRule", items)
    rt.wake()
    rt.eviction_wakeup.set()
    return list_rv


async def taint_rule_feed(rt: Runtime, stopped: asyncio.Event, resource_version: str) -> None:
    """Watch DeviceTaintRules from `resource_version`, resuming and relisting as needed, until stopped."""
    while not stopped.is_set():
        resource = rt.taint_rule_resource
        try:
            if resource is None or not resource_version:
                await asyncio.sleep(30.0 if resource is None else TAINT_RULE_RETRY)  # served later? look again
                resource_version = await relist_taint_rules(rt)
                continue
            started, received = time.monotonic(), 0
            async with contextlib.aclosing(reading.watch_objects(
                    rt.require_session(), resource, resource_version=resource_version)) as events:
                async for event_type, raw in events:
                    received += 1
                    resource_version = str((raw.get("metadata") or {}).get("resourceVersion") or resource_version)
                    if event_type != "BOOKMARK":
                        feed(rt, "DeviceTaintRule", event_type, raw)
            if _very_short(resource, started, received):
                resource_version = await _relist_later(rt, TAINT_RULE_RETRY)
        except kube_errors.GoneError:
            resource_version = await _relist_later(rt, 0.0)
        except (kube_errors.KubeError, OSError) as exc:
            logger.warning("watching DeviceTaintRules failed (%s); relisting in %.0fs", exc, TAINT_RULE_RETRY)
            resource_version = await _relist_later(rt, TAINT_RULE_RETRY)


async def relist_pod_groups(rt: Runtime) -> str:
    """Find the served PodGroup version and list the PodGroups into the view; the list's resourceVersion.

    A server that forbids it (a ClusterRole from before gangs) counts as serving none, logged:
    the operator goes on placing pods one by one rather than not at all.
    """
    session = rt.require_session()
    version = await session.served_version(resources.SCHEDULING, resources.POD_GROUPS.plural)
    if version is None:
        rt.pod_group_resource = None
        rt.cluster.replace_all("PodGroup", [])
        logger.info("this cluster serves no PodGroup version: pods are placed one by one")
        return ""
    resource = resources.POD_GROUPS.at_version(version)
    try:
        items, list_rv = await reading.list_objects(session, resource)
    except kube_errors.ForbiddenError as exc:
        logger.error("listing PodGroups is forbidden (%s): gangs are placed one by one until it is allowed "
                     "(manifests/rbac.yaml grants it)", exc)
        rt.pod_group_resource = None
        rt.cluster.replace_all("PodGroup", [])
        return ""
    rt.pod_group_resource = resource
    rt.cluster.replace_all("PodGroup", items)
    rt.wake()
    return list_rv


async def pod_group_feed(rt: Runtime, stopped: asyncio.Event, resource_version: str) -> None:
    """Watch PodGroups from `resource_version` (see `object_feed`); look again every 30 s while none is served."""
    while not stopped.is_set():
        resource = rt.pod_group_resource
        if resource is None:
            await asyncio.sleep(30.0)
            try:
                resource_version = await relist_pod_groups(rt)
            except (kube_errors.KubeError, OSError) as exc:
                logger.warning("listing PodGroups failed: %s", exc)
            continue
        await object_feed(rt, stopped, "PodGroup", resource, resource_version)


# Kinds a cluster may not serve (a trimmed API server, an older sandbox): listed as none then. So is
# dralloc's own DeviceHealthPolicy, whose CRD may not be installed yet (CRDS below).
OPTIONAL = frozenset({"PersistentVolumeClaim", "PersistentVolume", "StorageClass", "CSINode", "CSIDriver",
                      "CSIStorageCapacity", "PodDisruptionBudget", "DeviceHealthPolicy"})

# dralloc's own kinds (crds/). Without their CRDs the operator still places pods: under the default
# policy (FirstFit, preemption Enabled) without the AllocationPolicy, with no DeviceHealthPolicy without
# the other (an OPTIONAL kind, relisted as none). kopf watches both kinds and starts on its own once a
# CRD is there (it watches the CRDs themselves; manifests/rbac.yaml lets it). The policy loop
# (handlers/operating.py) calls `look_for_crds`: at its start, on every policy event, then every
# NOT_SERVED_RETRY seconds while one is missing (to create the `default` policy once it can); what it
# finds is logged once per change, and exported (dralloc_crd_missing, /healthz probe `crds`).
CRDS = (("AllocationPolicy", resources.ALLOCATION_POLICIES), ("DeviceHealthPolicy", resources.DEVICE_HEALTH_POLICIES))
WITHOUT_CRD = {"AllocationPolicy": "pods are placed with the default policy (FirstFit, preemption Enabled)",
               "DeviceHealthPolicy": "no DeviceHealthPolicy taints devices"}
INSTALL_CRDS = "`kubectl apply -f crds/` (the CRDs only) or `kubectl apply -k manifests/` (dralloc's whole deployment)"


def crd_name(resource: resources.Resource) -> str:
    """The name of the CRD that serves `resource` (`allocationpolicies.dralloc.io`)."""
    return f"{resource.plural}.{resource.group}"


async def look_for_crds(rt: Runtime) -> tuple[str, ...]:
    """The names of dralloc's CRDs this cluster does not serve (at the version dralloc uses), through
    discovery; logged and exported when that changes. When the server cannot be asked: as last seen."""
    session = rt.require_session()
    try:
        missing = tuple([crd_name(r) for _, r in CRDS if not await session.serves(r.group, r.version, r.plural)])
    except (kube_errors.KubeError, OSError) as exc:
        logger.warning("looking for dralloc's CRDs failed (%s); looking again in %.0fs", exc, NOT_SERVED_RETRY)
        return rt.missing_crds or ()
    before, rt.missing_crds = rt.missing_crds, missing
    metrics.set_crds_missing(missing)
    if missing != before:
        if missing:
            logger.warning("%s", missing_crds_message(missing))
        installed = [name for name in before or () if name not in missing]
        if installed:
            logger.info("CRD %s installed now: watching %s (no restart needed)", " and ".join(installed),
                        "it" if len(installed) == 1 else "them")
    return missing


def missing_crds_message(missing: tuple[str, ...]) -> str:
    """The log line for dralloc's CRDs that are not installed: which, what it means, how to install them."""
    kinds = [(kind, crd_name(r)) for kind, r in CRDS if crd_name(r) in missing]
    one = len(kinds) == 1
    names = " and ".join(f"{name} ({kind})" for kind, name in kinds)
    effects = " and ".join(WITHOUT_CRD[kind] for kind, _ in kinds)
    it = "it" if one else "them"
    return (f"dralloc's CRD{'' if one else 's'} {names} {'is' if one else 'are'} not installed: {effects} "
            f"until {'it is' if one else 'they are'}. Install {it} with {INSTALL_CRDS}; dralloc starts "
            f"watching {it} without a restart")


async def relist(rt: Runtime, kind: str, resource: resources.Resource) -> str:
    """List one kind into the view (anything not listed is gone); the list's resourceVersion. A kind of
    OPTIONAL the server does not serve (404) is listed as none."""
    try:
        items, list_rv = await reading.list_objects(rt.require_session(), resource)
    except kube_errors.NotFoundError:
        if kind not in OPTIONAL:
            raise
        logger.info("%s: not served by this cluster; taken as none", resource.plural)
        rt.cluster.replace_all(kind, [])
        raise
    rt.cluster.replace_all(kind, items)
    if kind == "Pod":
        rt.dirty_pods.update(rt.cluster.pods.entries)
        for item in items:
            reclaiming.record_pin(rt, item)
    elif kind == "ResourceClaim":
        rt.dirty_claims.update(rt.cluster.claims.entries)
    rt.wake()
    return list_rv


async def relist_or_none(rt: Runtime, kind: str, resource: resources.Resource) -> str:
    """`relist`; an OPTIONAL kind the cluster does not serve is none ("": its feed looks again later)."""
    try:
        return await relist(rt, kind, resource)
    except kube_errors.NotFoundError:
        if kind not in OPTIONAL:
            raise
        return ""


async def object_feed(rt: Runtime, stopped: asyncio.Event, kind: str, resource: resources.Resource,
                      resource_version: str) -> None:
    """Watch one kind from `resource_version` and feed the view; relist after 410 or an API outage."""
    while not stopped.is_set():
        try:
            if not resource_version:
                resource_version = await relist(rt, kind, resource)
            started, received = time.monotonic(), 0
            async with contextlib.aclosing(reading.watch_objects(
                    rt.require_session(), resource, resource_version=resource_version)) as events:
                async for event_type, raw in events:
                    received += 1
                    resource_version = str((raw.get("metadata") or {}).get("resourceVersion") or resource_version)
                    if event_type != "BOOKMARK":
                        feed(rt, kind, event_type, raw)
            if _very_short(resource, started, received):
                await asyncio.sleep(TAINT_RULE_RETRY)
                resource_version = ""
        except kube_errors.GoneError:
            resource_version = ""
        except kube_errors.NotFoundError as exc:
            if kind not in OPTIONAL:
                raise
            logger.info("%s: not served by this cluster (%s); looking again in %.0fs", resource.plural, exc,
                        NOT_SERVED_RETRY)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stopped.wait(), timeout=NOT_SERVED_RETRY)
            resource_version = ""
        except (kube_errors.KubeError, OSError) as exc:
            logger.warning("watching %s failed (%s); relisting in %.0fs", resource.plural, exc, TAINT_RULE_RETRY)
            await asyncio.sleep(TAINT_RULE_RETRY)
            resource_version = ""


def _very_short(resource: resources.Resource, started: float, received: int) -> bool:
    """The server ended the watch at once with nothing in it: relist rather than resume."""
    if received or time.monotonic() - started >= SHORT_WATCH:
        return False
    logger.warning("watching %s: the server ended the watch within %.0fs without any event; relisting in %.0fs",
                   resource.plural, SHORT_WATCH, TAINT_RULE_RETRY)
    return True


async def _relist_later(rt: Runtime, delay: float) -> str:
    if delay:
        await asyncio.sleep(delay)
    try:
        return await relist_taint_rules(rt)
    except (kube_errors.KubeError, OSError) as exc:
        logger.warning("listing DeviceTaintRules failed: %s", exc)
        return ""


def _register(kind: str, group: str, version: str, plural: str) -> None:
    @kopf.on.event(group=group, version=version, plural=plural, id=f"watch-{plural}", registry=REGISTRY)
    async def on_event(**kwargs: Any) -> None:
        # async on purpose: kopf runs sync handlers in a thread pool, and the cluster view and the
        # loops' wake-up events belong to the event loop's thread.
        event, memo = kwargs["event"], kwargs["memo"]
        raw = event.get("object")
        if isinstance(raw, dict) and isinstance(memo, Runtime):
            feed(memo, kind, event.get("type"), raw)


for _kind, _group, _version, _plural in WATCHED:
    _register(_kind, _group, _version, _plural)
