"""A pretend kubelet for `--simulate-pods`: just enough pod lifecycle to demo scheduling.

A pod bound to a node (spec.nodeName set) while Pending becomes Running, with Ready
conditions and container statuses, `start_delay` seconds later. A pod annotated
`dralloc.io/sim-duration: 30s` (units ms, s, m, h) then Succeeds after that long.
With the simulator on, deleting a running bound pod is graceful as upstream: it gets a
deletionTimestamp and stays (Terminating) until the "kubelet" finishes it after
min(grace period, `stop_delay`); `gracePeriodSeconds: 0` forces it at once. That is
all: no images, no probes, no restarts, no resource accounting, no node status.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

from dralloc.sandbox import pods, watches
from dralloc.sandbox import store as store_

DURATION_ANNOTATION = "dralloc.io/sim-duration"
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(text: str) -> float | None:
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*", text or "")
    if not m:
        return None
    return float(m.group(1)) * _UNITS[m.group(2) or "s"]


class PodSimulator:
    def __init__(self, store: store_.Store, *, start_delay: float = 0.5, stop_delay: float | None = None) -> None:
        self.store = store
        self.start_delay = start_delay
        self.stop_delay = start_delay if stop_delay is None else stop_delay
        store.grace_period = pods.grace_period
        self._timers: dict[str, asyncio.TimerHandle] = {}
        store.listeners.append(self._on_event)

    def stop(self) -> None:
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()

    def _on_event(self, event: watches.Event) -> None:
        if event.storage != "/pods":
            return
        meta = event.obj["metadata"]
        uid = meta["uid"]
        if event.type == "DELETED" or meta.get("deletionTimestamp"):
            timer = self._timers.pop(uid, None)
            if timer is not None:
                timer.cancel()
            grace = meta.get("deletionGracePeriodSeconds") or 0
            if event.type != "DELETED" and grace > 0:
                self._timers[uid] = asyncio.get_running_loop().call_later(
                    min(grace, self.stop_delay), self._terminate, event.namespace, meta["name"], uid)
            return
        if uid in self._timers:
            return
        phase = (event.obj.get("status") or {}).get("phase")
        node = (event.obj.get("spec") or {}).get("nodeName")
        loop = asyncio.get_running_loop()
        if phase == "Pending" and node:
            self._timers[uid] = loop.call_later(self.start_delay, self._advance, event.namespace,
                                                event.obj["metadata"]["name"], uid, "Running")
        elif phase == "Running":
            annotations = event.obj["metadata"].get("annotations") or {}
            duration = parse_duration(annotations.get(DURATION_ANNOTATION, ""))
            if duration is not None:
                self._timers[uid] = loop.call_later(duration, self._advance, event.namespace,
                                                    event.obj["metadata"]["name"], uid, "Succeeded")

    def _terminate(self, namespace: str, name: str, uid: str) -> None:
        """The kubelet has stopped the containers: finish the deletion (finalizers still hold it)."""
        self._timers.pop(uid, None)
        entry = self.store.objects["/pods"].get((namespace, name))
        if entry is None or entry.obj["metadata"]["uid"] != uid:
            return
        pod: dict[str, Any] = json.loads(entry.raw)
        pod["metadata"]["deletionGracePeriodSeconds"] = 0
        self.store.put_internal(("/pods", namespace, name), pod, entry.obj)

    def _advance(self, namespace: str, name: str, uid: str, phase: str) -> None:
        self._timers.pop(uid, None)
        entry = self.store.objects["/pods"].get((namespace, name))
        if entry is None or entry.obj["metadata"]["uid"] != uid:
            return
        pod: dict[str, Any] = json.loads(entry.raw)
        status = pod.setdefault("status", {})
        now = store_.now()
        ready = "True" if phase == "Running" else "False"
        status["phase"] = phase
        status.setdefault("startTime", now)
        kept = [c for c in status.get("conditions") or []
                if c.get("type") not in ("Initialized", "Ready", "ContainersReady")]
        status["conditions"] = kept + [
            {"type": t, "status": s, "lastProbeTime": None, "lastTransitionTime": now}
            for t, s in (("Initialized", "True"), ("Ready", ready), ("ContainersReady", ready))]
        state: dict[str, Any] = ({"running": {"startedAt": now}} if phase == "Running" else
                                 {"terminated": {"exitCode": 0, "reason": "Completed", "finishedAt": now}})
        status["containerStatuses"] = [
            {"name": c.get("name", ""), "image": c.get("image", ""), "ready": phase == "Running",
             "restartCount": 0, "started": phase == "Running", "state": state}
            for c in (pod.get("spec") or {}).get("containers") or []]
        self.store.put_internal(("/pods", namespace, name), pod, entry.obj)
