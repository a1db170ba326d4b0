"""kube-controller-manager's disruption controller: the status of PodDisruptionBudgets.

What kube-scheduler's preemption (and dralloc's, issue 29) reads of a budget, `status.
disruptionsAllowed` and `status.disruptedPods`, is written by this controller, so the sandbox plays
it as upstream's pkg/controller/disruption/disruption.go does (trySync, getExpectedPodCount,
getExpectedScale, countHealthyPods, buildDisruptedPodMap, updatePdbStatus, failSafe), each write a
`/status` update of its own through the store:

- the budget's pods: the pods of its namespace its selector matches (no selector: none; `{}`: all);
- `minAvailable` as an integer: expectedPods = the number of those pods, desiredHealthy =
  minAvailable. `maxUnavailable` (integer or percentage) and a percentage `minAvailable` need the
  pods' controllers' scale: expectedPods = the sum of the `spec.replicas` of the distinct
  controllers (a pod's ownerReference with `controller: true`); pods without one are skipped
  (upstream only warns, in an Event the sandbox does not write), so budgets over bare pods count 0
  expected pods. desiredHealthy = the percentage of expectedPods rounded up, or expectedPods less
  maxUnavailable (the percentage rounded up), not below 0; with neither field both are 0;
- currentHealthy = the pods whose Ready condition is True, not being deleted and not in
  `disruptedPods` (for the 2 minutes an eviction's entry lasts); disruptionsAllowed =
  currentHealthy - desiredHealthy, 0 when that is negative or when expectedPods is 0;
  observedGeneration = the budget's generation; the condition `DisruptionAllowed` True with reason
  SufficientPods when disruptions are allowed, else False with InsufficientPods (message "");
  `disruptedPods` keeps the entries of pods that still exist, are not being deleted, and were
  evicted less than 2 minutes ago (expired entries are dropped at that time);
- when a controller's scale cannot be read the status is not computed (failSafe):
  disruptionsAllowed 0 and `DisruptionAllowed` False with reason SyncFailed and upstream's error as
  the message, the rest of the status as it was (observedGeneration too). Which scale a controller
  has follows a real 1.37 cluster: the sandbox serves no ReplicaSets, Deployments, StatefulSets or
  ReplicationControllers, so a pod controlled by one is controlled by one that does not exist
  (`found no controllers for pod "p"`); Jobs, DaemonSets, CronJobs and every kind the sandbox serves
  but custom resources with a scale subresource have none (`jobs.batch does not implement the scale
  subresource`, `configmaps does not ...`); another kind is unknown (`no matches for kind "Foo" in
  version "example.com/v1"`). A custom resource whose CRD has a scale subresource gives the integer
  at its `specReplicasPath` when it exists with the reference's uid (none there is upstream's
  `Internal error occurred: the spec replicas field ".spec.replicas" does not exist`, another type
  its accessor error).

And the controller's other duty: a pod with a True `DisruptionTarget` condition that is not being
deleted (nor Succeeded or Failed, nor marked by the kubelet: reason TerminationByKubelet) gets it
set to False (reason and message cleared, observedGeneration the pod's generation) 2 minutes after
its lastTransitionTime, as a preemption or eviction that did not go through leaves it.

Not played: the controller's Events (NoPods, UnmanagedPods, CalculateExpectedPodCountFailed,
NotDeleted, MultiplePodDisruptionBudgets) and its rate-limited retries (a conflicting write is
retried on the next pass). Pods are taken in name order, where upstream's lister order is
arbitrary (it decides which error a budget over several bad controllers reports). The controller
acts on every write to a pod or a budget, at once where upstream's informers lag a little; as
upstream, a change of a controller's scale alone does not make it look again. `ApiServer(disruption_controller=False)` turns it off, as kube-controller-manager's
`--controllers=-disruption` does.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import logging
from typing import Any

from dralloc.sandbox import disruptionbudgets as budgets
from dralloc.sandbox import errors, resources, watches
from dralloc.sandbox import store as store_

logger = logging.getLogger(__name__)
Obj = dict[str, Any]

PODS = "/pods"
DELETION_TIMEOUT = 120.0  # seconds an eviction's disruptedPods entry holds (DeletionTimeout)
STALE_DISRUPTION_TIMEOUT = 120.0  # seconds before a non-terminating pod's DisruptionTarget is reset
TERMINATION_BY_KUBELET = "TerminationByKubelet"
# Pod controllers of a real 1.37 cluster the sandbox does not serve: (group, version, kind) ->
# (group resource, whether it has a scale subresource). The first four are looked up by the
# controller's own finders, and never found here.
UNSERVED_CONTROLLERS = {
    ("", "v1", "ReplicationController"): ("replicationcontrollers", True),
    ("apps", "v1", "ReplicaSet"): ("replicasets.apps", True),
    ("apps", "v1", "Deployment"): ("deployments.apps", True),
    ("apps", "v1", "StatefulSet"): ("statefulsets.apps", True),
    ("apps", "v1", "DaemonSet"): ("daemonsets.apps", False),
    ("batch", "v1", "Job"): ("jobs.batch", False),
    ("batch", "v1", "CronJob"): ("cronjobs.batch", False),
}


class SyncFailed(Exception):
    """The expected pod count cannot be computed: the message is upstream's error."""


def parse_time(text: Any) -> datetime.datetime | None:
    if not isinstance(text, str):
        return None
    try:
        moment = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=datetime.UTC)


def controller_ref(pod: Obj) -> Obj | None:
    """metav1.GetControllerOf: the first ownerReference with `controller: true`."""
    return next((r for r in pod["metadata"].get("ownerReferences") or [] if r.get("controller")), None)


def _go_type(value: Any) -> str:
    """Go's %T of a value decoded into unstructured JSON."""
    if value is None:
        return "<nil>"
    return {bool: "bool", int: "int64", float: "float64", str: "string", dict: "map[string]interface {}",
            list: "[]interface {}"}.get(type(value), "interface {}")


def _nested_int(obj: Obj, path: str) -> int | None:
    """unstructured.NestedInt64 at a `.a.b` path: None when absent, SyncFailed (the custom resource's
    scale subresource's 500) when the value is not an integer."""
    value: Any = obj
    for part in path.strip(".").split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    if isinstance(value, bool) or not isinstance(value, int):
        shown = {True: "true", False: "false", None: "<nil>"}.get(value, value) \
            if isinstance(value, bool) or value is None else value
        raise SyncFailed(f"Internal error occurred: {path} accessor error: {shown} is of the type {_go_type(value)}, "
                         "expected int64")
    return value


def _replicas(obj: Obj, scale: Obj) -> int:
    """The custom resource's scale (apiextensions' ScaleREST.Get): its spec replicas as an int32."""
    spec_path = str(scale.get("specReplicasPath", ""))
    replicas = _nested_int(obj, spec_path)
    _nested_int(obj, str(scale.get("statusReplicasPath", "")))  # read too: only its type can fail
    if replicas is None:
        raise SyncFailed(f"Internal error occurred: the spec replicas field {errors.go_quote(spec_path)} does not exist")
    return (replicas + 2**31) % 2**32 - 2**31


class DisruptionController:
    """The disruption controller, on the server's loop: woken by writes to pods, budgets and custom
    resources, it syncs the budgets of the namespaces written to until a pass writes nothing."""

    def __init__(self, store: store_.Store) -> None:
        self.store = store
        self.wake: asyncio.Event | None = None
        self.dirty: set[str] = set()  # namespaces whose budgets need a sync
        self.stale: set[tuple[str, str]] = set()  # pods whose DisruptionTarget may need a reset
        self.deletion_timeout = DELETION_TIMEOUT
        self.stale_timeout = STALE_DISRUPTION_TIMEOUT
        self._timers: dict[tuple[str, str | None], asyncio.TimerHandle] = {}  # (namespace, pod) -> the next look
        store.listeners.append(self._on_event)

    # ---- triggers ------------------------------------------------------------------------------

    def _on_event(self, event: watches.Event) -> None:
        if event.storage == PODS:
            self.dirty.add(event.namespace)
            if event.type != "DELETED":
                self.stale.add((event.namespace, event.obj["metadata"]["name"]))
        elif event.storage == budgets.STORAGE:
            self.dirty.add(event.namespace)
        else:
            return  # a controller's scale is read at a sync: a change to it alone triggers none
        if self.wake is not None:
            self.wake.set()

    def _later(self, delay: float, namespace: str, pod: str | None = None) -> None:
        """Look again at a namespace's budgets (or at a pod's condition) after `delay` seconds, unless
        a look is due sooner."""
        loop = asyncio.get_running_loop()
        key = (namespace, pod)
        when = loop.time() + max(delay, 0.0)
        pending = self._timers.get(key)
        if pending is not None and not pending.cancelled() and loop.time() <= pending.when() <= when:
            return

        def again() -> None:
            self._timers.pop(key, None)
            self.dirty.add(namespace)
            if pod is not None:
                self.stale.add((namespace, pod))
            if self.wake is not None:
                self.wake.set()
        if pending is not None:
            pending.cancel()
        self._timers[key] = loop.call_at(when, again)

    def stop(self) -> None:
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()

    async def run(self) -> None:
        self.wake = asyncio.Event()
        self.dirty.update(key[0] for key, _ in self.store.scan(budgets.STORAGE))
        self.stale.update(key for key, _ in self.store.scan(PODS))
        self.wake.set()
        try:
            while True:
                await self.wake.wait()
                self.wake.clear()
                try:
                    self.sync()
                except Exception:  # a bug here must not stop the controller for the whole session
                    logger.exception("disruption controller failed")
                await asyncio.sleep(0)
        finally:
            self.stop()

    def sync(self) -> None:
        """Sync every budget of the dirty namespaces and look at the pods that changed; the writes
        made here mark their namespaces again, and the next pass finds nothing to write."""
        stale, self.stale = self.stale, set()
        for key in sorted(stale):
            self._sync_stale_pod(*key)
        namespaces, self.dirty = self.dirty, set()
        for namespace in sorted(namespaces):
            names = [key[1] for key, _ in self.store.scan(budgets.STORAGE, namespace)]
            if not names:
                continue
            in_namespace = [e.obj for _, e in self.store.scan(PODS, namespace)]
            for name in names:
                self._sync_budget(namespace, name, in_namespace)

    # ---- a budget ------------------------------------------------------------------------------

    def _rt(self) -> resources.ResourceType:
        rt = self.store.registry.get(budgets.GROUP, "v1", "poddisruptionbudgets")
        assert rt is not None
        return rt

    def _sync_budget(self, namespace: str, name: str, in_namespace: list[Obj]) -> None:
        """trySync of one budget, given the pods of its namespace (as the pass read them)."""
        entry = self.store.objects[budgets.STORAGE].get((namespace, name))
        if entry is None:
            return
        pdb = entry.obj
        selector = (pdb.get("spec") or {}).get("selector")
        pods = [pod for pod in in_namespace if budgets.selects(selector, pod["metadata"].get("labels") or {})]
        try:
            expected, desired = self.expected_count(pdb, pods)
        except SyncFailed as exc:
            self._fail_safe(pdb, str(exc))
            return
        now = datetime.datetime.now(datetime.UTC)
        disrupted, recheck = self._disrupted(pdb, pods, now)
        healthy = self._healthy(pods, disrupted, now)
        self._update_status(pdb, healthy, desired, expected, disrupted)
        if recheck is not None:
            self._later((recheck - now).total_seconds(), namespace)

    def expected_count(self, pdb: Obj, pods: list[Obj]) -> tuple[int, int]:
        """getExpectedPodCount: (expectedPods, desiredHealthy)."""
        spec = pdb.get("spec") or {}
        if spec.get("maxUnavailable") is not None:
            expected = self.expected_scale(pods)
            return expected, max(0, expected - budgets.scaled(spec["maxUnavailable"], expected))
        minimum = spec.get("minAvailable")
        if isinstance(minimum, int):
            return len(pods), minimum
        if isinstance(minimum, str):
            expected = self.expected_scale(pods)
            return expected, budgets.scaled(minimum, expected)
        return 0, 0

    def expected_scale(self, pods: list[Obj]) -> int:
        """getExpectedScale: the sum of the scales of the pods' distinct controllers (pods without
        one skipped), or SyncFailed."""
        scales: dict[str, int] = {}
        for pod in pods:
            ref = controller_ref(pod)
            if ref is None or ref.get("uid", "") in scales:
                continue
            found = self.controller_scale(ref, pod["metadata"].get("namespace", ""))
            if found is None:
                raise SyncFailed(f'found no controllers for pod {errors.go_quote(pod["metadata"]["name"])}')
            scales[found[0]] = found[1]
        return sum(scales.values())

    def controller_scale(self, ref: Obj, namespace: str) -> tuple[str, int] | None:
        """The finders, the scale finder last: (uid, replicas) of the controller `ref` names, None when
        there is no such controller, or SyncFailed with the finder's error."""
        api_version, kind = str(ref.get("apiVersion", "")), str(ref.get("kind", ""))
        if api_version.count("/") > 1:
            raise SyncFailed(f"unexpected GroupVersion string: {api_version}")
        group, _, version = api_version.rpartition("/")
        unserved = UNSERVED_CONTROLLERS.get((group, version, kind))
        if unserved is not None:  # the object cannot exist here
            if unserved[1]:
                return None
            raise SyncFailed(f"{unserved[0]} does not implement the scale subresource")
        rt = self.store.registry.by_kind(api_version, kind)
        if rt is None:
            raise SyncFailed(f"no matches for kind {errors.go_quote(kind)} in version {errors.go_quote(api_version)}")
        scale = self._scale_subresource(rt)
        if scale is None:
            raise SyncFailed(f"{rt.qualified} does not implement the scale subresource")
        entry = self.store.objects[rt.storage].get((namespace if rt.namespaced else "", str(ref.get("name", ""))))
        if entry is None:
            return None
        replicas = _replicas(entry.obj, scale)
        if entry.obj["metadata"].get("uid") != ref.get("uid"):
            return None
        return entry.obj["metadata"]["uid"], replicas

    def _scale_subresource(self, rt: resources.ResourceType) -> Obj | None:
        """A custom resource's scale subresource (from its CRD); built-in kinds served here have none."""
        if not rt.crd:
            return None
        for _, entry in self.store.scan("apiextensions.k8s.io/customresourcedefinitions"):
            spec = entry.obj.get("spec") or {}
            if spec.get("group") != rt.group or (spec.get("names") or {}).get("plural") != rt.plural:
                continue
            for version in spec.get("versions") or []:
                if version.get("name") == rt.version:
                    scale = (version.get("subresources") or {}).get("scale")
                    return scale if isinstance(scale, dict) else None
        return None

    def _disrupted(self, pdb: Obj, pods: list[Obj],
                   now: datetime.datetime) -> tuple[dict[str, str], datetime.datetime | None]:
        """buildDisruptedPodMap: the entries still expected to be deleted, and when to look again."""
        recorded = (pdb.get("status") or {}).get("disruptedPods") or {}
        kept: dict[str, str] = {}
        recheck: datetime.datetime | None = None
        for pod in pods:
            meta = pod["metadata"]
            if meta.get("deletionTimestamp") or meta["name"] not in recorded:
                continue
            at = parse_time(recorded[meta["name"]])
            if at is None:
                continue
            expected = at + datetime.timedelta(seconds=self.deletion_timeout)
            if expected >= now:
                kept[meta["name"]] = recorded[meta["name"]]
                recheck = expected if recheck is None or expected < recheck else recheck
        return kept, recheck

    def _healthy(self, pods: list[Obj], disrupted: dict[str, str], now: datetime.datetime) -> int:
        """countHealthyPods: Ready, not being deleted, not just evicted."""
        count = 0
        for pod in pods:
            meta = pod["metadata"]
            if meta.get("deletionTimestamp"):
                continue
            at = parse_time(disrupted.get(meta["name"]))
            if at is not None and at + datetime.timedelta(seconds=self.deletion_timeout) > now:
                continue
            count += budgets.pod_ready(pod)
        return count

    def _update_status(self, pdb: Obj, healthy: int, desired: int, expected: int, disrupted: dict[str, str]) -> None:
        """updatePdbStatus: nothing when the status already says all this."""
        allowed = healthy - desired
        if expected <= 0 or allowed <= 0:
            allowed = 0
        status = pdb.get("status") or {}
        generation = pdb["metadata"].get("generation", 0)
        if (status.get("currentHealthy", 0), status.get("desiredHealthy", 0), status.get("expectedPods", 0),
                status.get("disruptionsAllowed", 0)) == (healthy, desired, expected, allowed) \
                and (status.get("disruptedPods") or {}) == disrupted \
                and status.get("observedGeneration", 0) == generation and budgets.conditions_up_to_date(pdb):
            return
        new: Obj = {"observedGeneration": generation, "disruptedPods": disrupted, "disruptionsAllowed": allowed,
                    "currentHealthy": healthy, "desiredHealthy": desired, "expectedPods": expected,
                    "conditions": json.loads(json.dumps(status.get("conditions") or []))}
        budgets.update_allowed_condition(new)
        self._write(pdb, new)

    def _fail_safe(self, pdb: Obj, message: str) -> None:
        """failSafe: no disruptions allowed, and why, the rest of the status as it was."""
        new: Obj = json.loads(json.dumps(pdb.get("status") or {}))
        new["disruptionsAllowed"] = 0
        budgets.set_condition(new, budgets.SYNC_FAILED, message)
        self._write(pdb, new)

    def _write(self, pdb: Obj, status: Obj) -> None:
        """UpdateStatus conditioned on the version read; a conflict or refusal is retried next pass."""
        meta = pdb["metadata"]
        changed = {**pdb, "status": budgets.go_status(status)}
        try:
            self.store.update(self._rt(), meta["namespace"], meta["name"], changed, subresource="status",
                              precondition=meta["resourceVersion"])
        except errors.ApiError as exc:
            logger.debug("disruption controller: budget %s/%s not written: %s", meta["namespace"], meta["name"],
                         exc.message)
            self.dirty.add(meta["namespace"])

    # ---- a pod's stale DisruptionTarget -----------------------------------------------------------

    def _sync_stale_pod(self, namespace: str, name: str) -> None:
        """syncStalePodDisruption: a DisruptionTarget condition nothing acted on is set to False."""
        entry = self.store.objects[PODS].get((namespace, name))
        if entry is None:
            return
        pod = entry.obj
        status = pod.get("status") or {}
        conditions = status.get("conditions") or []
        at = next((i for i, c in enumerate(conditions) if c.get("type") == "DisruptionTarget"), None)
        if at is None or pod["metadata"].get("deletionTimestamp") or status.get("phase") in ("Succeeded", "Failed"):
            return
        condition = conditions[at]
        if condition.get("status") != "True" or condition.get("reason") == TERMINATION_BY_KUBELET:
            return
        since = parse_time(condition.get("lastTransitionTime"))
        wait = 0.0 if since is None else \
            self.stale_timeout - (datetime.datetime.now(datetime.UTC) - since).total_seconds()
        if wait > 0:
            self._later(wait, namespace, name)
            return
        changed: Obj = json.loads(entry.raw)
        changed["status"]["conditions"][at] = {
            "type": "DisruptionTarget", "observedGeneration": pod["metadata"].get("generation", 0), "status": "False",
            "lastProbeTime": None, "lastTransitionTime": store_.now()}
        rt = self.store.registry.get("", "v1", "pods")
        assert rt is not None
        try:
            self.store.update(rt, namespace, name, changed, subresource="status",
                              precondition=pod["metadata"]["resourceVersion"])
        except errors.ApiError as exc:
            logger.debug("disruption controller: pod %s/%s not written: %s", namespace, name, exc.message)
            self.stale.add((namespace, name))
