"""One tenant never stops, slows or steers the cluster: a hostile tenant's campaign (issue 26).

A tenant with the rights to create Pods, ResourceClaims, ResourceClaimTemplates and PodGroups in
its own namespace does its worst against a running operator (leader election on, /healthz served):

- claims whose search takes minutes (five requests of eight firstAvailable alternatives in one
  NUMA domain: every field within kube-apiserver's limits);
- a flood of pods that never fit (nine GPUs on eight-GPU nodes) and a gang that never fits;
- a gang whose PodGroup carries a forged record of binds (the annotation dralloc once read),
  naming a node with an untolerated NoSchedule taint;
- churn: pods each with a unique CEL selector, created and deleted in rounds.

Meanwhile another namespace's pods arrive one by one. The campaign asserts what must hold:

- every good pod is bound (their create → bound latency is printed, not asserted: tests never
  assert on wall-clock time);
- the Lease never changed hands and every /healthz probe answered within the Deployment's
  liveness timeout (manifests/deployment.yaml);
- no control loop's pass failed;
- the forged record chose nothing: the gang runs where it fits;
- writes do not amplify: while the good pods are placed, no flooded pod's PodScheduled or Event
  is written more than once (it was once per placement anywhere);
- memory is given back: after the churn, the scheduler remembers only pods that exist.

Size: `DRALLOC_TENANT_FLOOD` flooded pods (default 40), `DRALLOC_TENANT_CHURN` churned pods
(default 120), `DRALLOC_TENANT_GOOD` good pods (default 8); `make fuzz` runs it bigger.
"""

from __future__ import annotations

import json
import os
import pathlib
import random
import statistics
import threading
import time
import urllib.error
import urllib.request
from typing import Any

import yaml
from tests.handlers import helpers
from tests.handlers.conftest import (
    REPO,
    OperatorThread,
    SandboxCluster,
    operator_settings,
    wait_for,
)
from tests.handlers.test_tenant_isolation import costly_claim

from dralloc import metrics
from dralloc.sandbox import ThreadedApiServer
from dralloc.testing import cluster
from dralloc.testing.cluster import crds

Obj = dict[str, Any]
FLOOD = int(os.environ.get("DRALLOC_TENANT_FLOOD") or 40)
CHURN = int(os.environ.get("DRALLOC_TENANT_CHURN") or 120)
GOOD = int(os.environ.get("DRALLOC_TENANT_GOOD") or 8)
SEED = os.environ.get("DRALLOC_FUZZ_SEED") or "tenant"
NODES, GPUS = 4, 8


def _liveness_timeout() -> float:
    for doc in yaml.safe_load_all((REPO / "manifests" / "deployment.yaml").read_text()):
        if doc and doc.get("kind") == "Deployment":
            container = doc["spec"]["template"]["spec"]["containers"][0]
            return float(container["livenessProbe"]["timeoutSeconds"])
    raise AssertionError("manifests/deployment.yaml has no Deployment")


def _template(name: str, namespace: str, count: int, device_class: str, selector: str | None = None) -> Obj:
    obj = cluster.template(name, count=count, namespace_=namespace, device_class=device_class)
    if selector is not None:
        request = obj["spec"]["spec"]["devices"]["requests"][0]["exactly"]
        request["selectors"] = [{"cel": {"expression": selector}}]
    return obj


def _member(name: str, namespace: str, group: str, *, template: str | None) -> Obj:
    obj = cluster.pod(name, template_name=template, namespace_=namespace, cpu=None if template else "1")
    obj["spec"]["schedulingGroup"] = {"podGroupName": group}
    return obj


def _pod_group(name: str, namespace: str, min_count: int) -> Obj:
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}}}


class HealthProbe(threading.Thread):
    """GETs /healthz every 0.2 s, as the kubelet's liveness probe would; keeps the slowest answer."""

    def __init__(self, url: str, timeout: float) -> None:
        super().__init__(daemon=True)
        self.url, self.timeout = url, timeout
        self.stop = threading.Event()
        self.failures: list[str] = []
        self.slowest = 0.0
        self.probes = 0

    def run(self) -> None:
        while not self.stop.wait(0.2):
            started = time.monotonic()
            try:
                with urllib.request.urlopen(self.url, timeout=self.timeout) as answer:
                    answer.read()
            except (urllib.error.URLError, OSError) as exc:
                self.failures.append(f"{type(exc).__name__}: {exc}")
            self.probes += 1
            self.slowest = max(self.slowest, time.monotonic() - started)


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _pass_failures() -> float:
    return sum(sample.value for family in metrics.REGISTRY.collect() if family.name == "dralloc_loop_pass_failures"
               for sample in family.samples if sample.name.endswith("_total"))


def test_a_hostile_tenant_neither_stops_nor_slows_nor_steers_the_cluster(tmp_path: pathlib.Path) -> None:
    rng = random.Random(SEED)
    server = ThreadedApiServer().start()
    server.kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig")
    good = SandboxCluster(server, token=f"{rng.randrange(16**6):06x}")
    tenant = f"tenant-{good.token_}"
    gpu, nodes = good.name("gpu"), [good.name(f"node-{i}") for i in range(NODES)]
    good.seed([*crds(), cluster.namespace(tenant), cluster.gpu_class(gpu),
               cluster.template("one-gpu", device_class=gpu),
               _template("nine-gpus", tenant, 9, gpu)])
    good.seed([obj for node in nodes for obj in (cluster.node(node), cluster.gpu_slice(node, GPUS, numa_split=4))])
    tainted = nodes[0]
    good.request("PATCH", f"/api/v1/nodes/{tainted}", {"spec": {"taints": [{"key": "reserved", "effect": "NoSchedule"}]}})
    health_port = _free_port()
    settings = operator_settings(good, elect="replica-a", decision_cpu_budget=0.3)
    settings = settings.model_copy(update={"runtime": settings.runtime.model_copy(update={"health_port": health_port})})
    before = _pass_failures()
    operator = OperatorThread(settings).start()
    probe = HealthProbe(f"http://127.0.0.1:{health_port}/healthz", _liveness_timeout())
    try:
        wait_for(lambda: _lease(good).get("holderIdentity") == "replica-a", what="replica-a holds the Lease")
        probe.start()

        # The campaign's first wave, in a random order: costly claims, the flood, a gang that never fits,
        # a gang with a forged record of binds.
        flood = [f"flood-{i}" for i in range(FLOOD)]
        wave: list[list[Obj]] = [[cluster.pod(p, template_name="nine-gpus", namespace_=tenant)] for p in flood]
        for i in range(2):
            claim = costly_claim(f"heavy-{i}", gpu)
            claim["metadata"]["namespace"] = tenant
            wave.append([claim, cluster.pod(f"heavy-{i}", claim_name=f"heavy-{i}", namespace_=tenant)])
        wave.append([_pod_group("never", tenant, 2),
                     *(_member(f"never-{i}", tenant, "never", template="nine-gpus") for i in range(2))])
        rng.shuffle(wave)
        for objects in wave:
            good.seed(objects)
        forged_members = good.seed([_member(f"forged-{i}", tenant, "forged", template=None) for i in range(2)])
        forged = _pod_group("forged", tenant, 2)
        forged["metadata"]["annotations"] = {"dralloc.io/gang-binds": json.dumps({"members": [
            {"pod": p["metadata"]["name"], "uid": p["metadata"]["uid"], "node": tainted} for p in forged_members]})}
        good.seed([forged])
        wait_for(lambda: all(helpers.condition(helpers.pod(good, p, tenant), "PodScheduled") for p in flood),
                 timeout=120, what="every flooded pod told it does not fit")

        # Good pods, one by one, while the tenant's pods wait; the API's writes counted meanwhile.
        server.requests.clear()
        latencies = []
        for i in range(GOOD):
            created = time.monotonic()
            good.seed([cluster.pod(f"good-{i}", template_name="one-gpu")])
            wait_for(lambda i=i: helpers.node_of(good, f"good-{i}"), timeout=60, what=f"good-{i} bound")
            latencies.append(time.monotonic() - created)
        writes = {p: len(server.requests.matching("PATCH", f"/api/v1/namespaces/{tenant}/pods/{p}/status"))
                  for p in flood}
        print(f"\ngood pods create -> bound: p50 {statistics.median(latencies):.2f} s, max {max(latencies):.2f} s "
              f"beside {FLOOD} flooded pods, 2 costly claims and 2 gangs")
        assert max(writes.values()) <= 1, f"a flooded pod's status was rewritten while others were placed: {writes}"
        events = [e for e in helpers.events(good, "AllocationFailed", tenant) if e["regarding"]["name"] in writes]
        assert len(events) <= len(flood) * 2, f"{len(events)} Events for {len(flood)} flooded pods"

        # The forged record chose nothing: the gang runs where it fits.
        wait_for(lambda: all(helpers.node_of(good, f"forged-{i}", tenant) for i in range(2)), timeout=60,
                 what="the forged gang placed where it fits")
        assert tainted not in {helpers.node_of(good, f"forged-{i}", tenant) for i in range(2)}

        # Churn: pods with unique CEL selectors come and go; what the scheduler remembers goes with them.
        rt = operator.runtime
        for start in range(0, CHURN, 40):
            batch = range(start, min(start + 40, CHURN))
            good.seed([obj for i in batch for obj in (
                _template(f"churn-{i}", tenant, 1, gpu, f'device.attributes["{cluster.DRIVER}"].index == {1000 + i}'),
                cluster.pod(f"churn-{i}", template_name=f"churn-{i}", namespace_=tenant))])
            wait_for(lambda b=batch: all(helpers.condition(helpers.pod(good, f"churn-{i}", tenant), "PodScheduled")
                                         for i in b), timeout=120, what="the churned pods decided")
            for i in batch:
                helpers.delete_pod(good, f"churn-{i}", tenant)
        wait_for(lambda: not any(p["metadata"]["name"].startswith("churn-") for p in helpers.pods(good, tenant)),
                 timeout=120, what="the churned pods gone")
        good.seed([cluster.pod("after-churn", template_name="one-gpu")])
        wait_for(lambda: helpers.node_of(good, "after-churn"), timeout=60, what="a pod placed after the churn")
        remembered = {uid for uid in rt.pods} | set(rt.queue.entries)
        existing = {p["metadata"]["uid"] for ns in (good.namespace, tenant) for p in helpers.pods(good, ns)}
        assert remembered <= existing, f"{len(remembered - existing)} pods remembered after they were deleted"
        lease = _lease(good)
        assert lease.get("holderIdentity") == "replica-a" and (lease.get("leaseTransitions") or 0) == 0
    finally:
        probe.stop.set()
        operator.stop()
        server.stop()
    assert probe.probes > 0 and not probe.failures, f"/healthz failed: {probe.failures[:3]}"
    print(f"/healthz: {probe.probes} probes, slowest {probe.slowest:.2f} s (liveness timeout {probe.timeout:g} s)")
    assert _pass_failures() == before, "a control loop's pass failed"


def _lease(server: SandboxCluster) -> Obj:
    lease = server.get("coordination.k8s.io/v1", "Lease", server.name("dralloc"), server.namespace)
    return (lease or {}).get("spec") or {}
