"""The chaos workload: a small GPU cluster, and pods that come, run, finish and go.

Nodes `node-0..N-1` with `GPUS` GPUs each (pool = node name); claim templates for one
and two GPUs; a few shared ResourceClaims that several pods use at once. Pods are
created at a seeded random pace: most from templates, some with a shared claim (alone
or next to a template claim); about half finish on their own (the sandbox's simulated
kubelet, `dralloc.io/sim-duration`) and are then deleted by the workload, some others
are deleted while running. Everything the workload deletes is remembered, so the
auditor can check nothing of theirs is left.
"""

from __future__ import annotations

import dataclasses
import random
import threading
import time
from typing import Any

from tests.chaos.processes import ApiError, Sandbox

from dralloc.testing import cluster

Obj = dict[str, Any]
NAMESPACE = "chaos"
GPUS = 4
TEMPLATES = {"one-gpu": 1, "two-gpu": 2}
SHARED = ("shared-0", "shared-1")
PODS = f"/api/v1/namespaces/{NAMESPACE}/pods"
CLAIMS = f"/apis/resource.k8s.io/v1/namespaces/{NAMESPACE}/resourceclaims"


def cluster_objects(nodes: int) -> list[Obj]:
    objects: list[Obj] = [cluster.namespace(NAMESPACE), cluster.gpu_class("gpu")]
    for i in range(nodes):
        objects += [cluster.node(f"node-{i}"), cluster.gpu_slice(f"node-{i}", GPUS)]
    for name, count in TEMPLATES.items():
        objects.append(cluster.template(name, count=count, namespace_=NAMESPACE))
    objects += [cluster.claim(name, namespace_=NAMESPACE) for name in SHARED]
    return objects


def pod_object(name: str, rng: random.Random) -> Obj:
    roll = rng.random()
    if roll < 0.12:
        obj = cluster.pod(name, claim_name=rng.choice(SHARED), namespace_=NAMESPACE)
    elif roll < 0.22:
        obj = cluster.pod(name, template_name="one-gpu", claim_name=rng.choice(SHARED), namespace_=NAMESPACE)
    else:
        obj = cluster.pod(name, template_name=rng.choices(list(TEMPLATES), weights=(3, 1))[0], namespace_=NAMESPACE)
    if rng.random() < 0.55:
        obj["metadata"]["annotations"] = {"dralloc.io/sim-duration": f"{rng.uniform(0.5, 4.0):.1f}s"}
    return obj


@dataclasses.dataclass
class Stats:
    created: int = 0
    finished_deleted: int = 0
    deleted_running: int = 0  # or pending
    errors: int = 0


class Workload:
    """Creates and completes pods in a thread until `stop()`; seeded."""

    def __init__(self, sandbox: Sandbox, seed: int, *, nodes: int, rate: float = 3.0) -> None:
        self.sandbox = sandbox
        self.rng = random.Random(seed)
        self.capacity = nodes * GPUS
        self.rate = rate  # pods created per second at most
        self.stats = Stats()
        self.deleted_uids: set[str] = set()  # pods the workload deleted (finished or not)
        self._stop = threading.Event()
        self._creating = threading.Event()
        self._creating.set()
        self._thread = threading.Thread(target=self._run, name="chaos-workload", daemon=True)
        self._next = 0
        self._finished_at: dict[str, float] = {}
        self.error: BaseException | None = None

    def start(self) -> Workload:
        self._thread.start()
        return self

    def stop_creating(self) -> None:
        self._creating.clear()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._tick()
            except (ApiError, OSError) as exc:  # the server is busy; try again next tick
                self.stats.errors += 1
                if self.stats.errors > 200:
                    self.error = exc
                    return
            self._stop.wait(1.0 / self.rate)

    def _tick(self) -> None:
        pods = self.sandbox.items(PODS)
        live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
        now = time.monotonic()
        for p in live:
            meta, phase = p["metadata"], (p.get("status") or {}).get("phase")
            if phase in ("Succeeded", "Failed"):
                # Deleted a moment after it finished, so the operator sees the finished pod first sometimes.
                first = self._finished_at.setdefault(meta["uid"], now)
                if now - first >= self.rng.uniform(0.0, 2.0):
                    self._delete(meta, finished=True)
            elif (p.get("spec") or {}).get("nodeName") and phase == "Running" and self.rng.random() < 0.01:
                self._delete(meta, finished=False)
            elif not (p.get("spec") or {}).get("nodeName") and self.rng.random() < 0.005:
                self._delete(meta, finished=False)  # given up on while pending (maybe mid-placement)
        if not self._creating.is_set():
            return
        demand = sum(1 for p in live if (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed"))
        if demand < self.capacity * 0.9:  # a little more than fits, so some wait for room
            name = f"w-{self._next:04d}"
            self._next += 1
            try:
                self.sandbox.create(PODS, pod_object(name, self.rng))
                self.stats.created += 1
            except ApiError as exc:
                if exc.status != 409:
                    raise

    def _delete(self, meta: Obj, *, finished: bool) -> None:
        self.sandbox.delete(f"{PODS}/{meta['name']}")
        self.deleted_uids.add(meta["uid"])
        if finished:
            self.stats.finished_deleted += 1
        else:
            self.stats.deleted_running += 1

    def finish(self, timeout: float) -> None:
        """After creation stopped: wait (at most `timeout` s) until every finishing pod finished and was
        deleted, or none of those left can start (no room: the auditor judges whether that is right)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pods = self.sandbox.items(PODS)
            finishing = [p for p in pods if "dralloc.io/sim-duration" in (p["metadata"].get("annotations") or {})]
            if not any((p.get("spec") or {}).get("nodeName") for p in finishing):
                time.sleep(3.0)  # placing the next one may take a moment
                pods = self.sandbox.items(PODS)
                if not any("dralloc.io/sim-duration" in (p["metadata"].get("annotations") or {})
                           and (p.get("spec") or {}).get("nodeName") for p in pods):
                    return
            time.sleep(0.5)
