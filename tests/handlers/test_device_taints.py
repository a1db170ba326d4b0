"""Device taints end to end: DeviceTaintRules reach placement, and NoExecute taints evict.

The operator runs against the API server (sandbox or real cluster); rules are created
and deleted over HTTP as a user would. Pods carry a test finalizer where the test must
see what the eviction wrote on them before they disappear (the sandbox deletes
unfinalized pods at once; on a real cluster the fake node agent finishes deletions).
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Iterator
from typing import Any

import pytest
from tests.handlers import helpers
from tests.handlers.conftest import Cluster, OperatorThread, operator_settings, wait_for

from dralloc import metrics
from dralloc.lifecycle import eviction
from dralloc.testing import cluster
from dralloc.testing.cluster import crds

RULES = "/apis/resource.k8s.io/v1/devicetaintrules"
KEEP = "test.dralloc.io/keep"
Obj = dict[str, Any]


def start(server: Cluster, limits: eviction.Limits) -> OperatorThread:
    if not server.serves("resource.k8s.io/v1", "DeviceTaintRule"):
        pytest.skip("the cluster does not serve resource.k8s.io/v1 DeviceTaintRule (Kubernetes >= 1.37)")
    server.seed(crds())
    running = OperatorThread(operator_settings(server))
    running.runtime.eviction_limits = limits
    return running.start()


@pytest.fixture
def evictor(apiserver: Cluster) -> Iterator[OperatorThread]:
    running = start(apiserver, eviction.Limits(per_minute=0, max_percent=100))
    try:
        yield running
    finally:
        running.stop()


def gpu_node(server: Cluster, gpus: int, template: Obj | None = None, *, pods: str = "110") -> str:
    """node-a with `gpus` GPUs, the class and a template (`one-gpu` by default); returns the node's name."""
    node_a, gpu = server.name("node-a"), server.name("gpu")
    template = template or cluster.template("one-gpu")
    template["spec"]["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] = gpu
    server.seed([cluster.node(node_a, pods=pods), cluster.gpu_slice(node_a, gpus), cluster.gpu_class(gpu), template])
    return node_a


def rule(server: Cluster, name: str, *, effect: str, device: str | None = None) -> Obj:
    """The DeviceTaintRule `server.name(name)` over the GPUs of the test's node-a (or one of them)."""
    selector: Obj = {"driver": cluster.DRIVER, "pool": server.name("node-a")}
    if device:
        selector["device"] = device
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule", "metadata": {"name": server.name(name)},
            "spec": {"deviceSelector": selector, "taint": {"key": "example.com/broken", "value": "true",
                                                             "effect": effect}}}


def stored_rule(server: Cluster, name: str) -> Obj:
    return server.get("resource.k8s.io/v1", "DeviceTaintRule", server.name(name)) or {}


def tolerating_template(name: str, seconds: int) -> Obj:
    obj = cluster.template(name)
    obj["spec"]["spec"]["devices"]["requests"][0]["exactly"]["tolerations"] = [
        {"key": "example.com/broken", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": seconds}]
    return obj


def _seconds(stamp: str) -> float:
    return dt.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def _observations(histogram: Any) -> float:
    """How many values a prometheus histogram has observed."""
    return next(s.value for m in histogram.collect() for s in m.samples if s.name.endswith("_count"))


def kept(pod: Obj) -> Obj:
    pod["metadata"]["finalizers"] = [KEEP]
    return pod


def device_of(server: Cluster, pod_name: str) -> str:
    pod = helpers.pod(server, pod_name)
    (status,) = pod["status"]["resourceClaimStatuses"]
    claim = helpers.claim(server, status["resourceClaimName"])
    (result,) = claim["status"]["allocation"]["devices"]["results"]
    return str(result["device"])


def placed(server: Cluster, *names: str) -> None:
    wait_for(lambda: all(helpers.node_of(server, n) for n in names), timeout=15, what=f"{names} placed")


def test_no_schedule_rule_blocks_new_placements(apiserver: Cluster, evictor: OperatorThread) -> None:
    """A NoSchedule rule on one device keeps new pods off it, leaves running pods alone, and lifts when deleted."""
    gpu_node(apiserver, 2)
    apiserver.seed([rule(apiserver, "gpu-0-broken", effect="NoSchedule", device="gpu-0")])
    apiserver.seed([cluster.pod("first", template_name="one-gpu")])
    placed(apiserver, "first")
    assert device_of(apiserver, "first") == "gpu-1"
    apiserver.seed([cluster.pod("second", template_name="one-gpu")])
    wait_for(lambda: helpers.condition(helpers.pod(apiserver, "second"), "PodScheduled"), timeout=10,
             what="second reported unschedulable")
    assert helpers.node_of(apiserver, "second") is None
    message = helpers.condition(helpers.pod(apiserver, "second"), "PodScheduled") or {}
    assert "taint" in message.get("message", "")
    helpers.delete(apiserver, f"{RULES}/{apiserver.name('gpu-0-broken')}")
    placed(apiserver, "second")
    assert device_of(apiserver, "second") == "gpu-0"
    assert not helpers.gone_or_deleting(apiserver, "first")


@pytest.mark.dralloc_duty("taint-eviction")
def test_no_execute_evicts_an_intolerant_pod_at_once(apiserver: Cluster, evictor: OperatorThread) -> None:
    """DisruptionTarget condition, deletion, an Event naming device and taint, and the rule's status."""
    node_a = gpu_node(apiserver, 2)
    apiserver.seed([kept(cluster.pod("victim", template_name="one-gpu")),
                    cluster.pod("bystander", template_name="one-gpu")])
    placed(apiserver, "victim", "bystander")
    device = device_of(apiserver, "victim")
    deleted_before = metrics.eviction_outcomes.labels("deleted")._value.get()
    latencies_before = _observations(metrics.eviction_latency)
    apiserver.seed([rule(apiserver, "broken", effect="NoExecute", device=device)])
    wait_for(lambda: helpers.gone_or_deleting(apiserver, "victim"), timeout=5, what="victim evicted")
    target = helpers.condition(helpers.pod(apiserver, "victim"), "DisruptionTarget") or {}
    assert target.get("status") == "True" and target.get("reason") == "DeviceTaintEvictionByDralloc"
    (event,) = wait_for(lambda: helpers.events(apiserver, "DeviceTaintEviction"), timeout=5, what="event")
    assert f"{node_a}/{device}" in event["note"] and "example.com/broken=true:NoExecute" in event["note"]
    assert event["regarding"]["name"] == "victim"
    assert not helpers.gone_or_deleting(apiserver, "bystander")
    assert metrics.eviction_outcomes.labels("deleted")._value.get() == deleted_before + 1
    assert _observations(metrics.eviction_latency) == latencies_before + 1
    assert metrics.devices_tainted.labels("NoExecute", "rule")._value.get() == 1

    def finished() -> Obj | None:
        found = helpers.condition(stored_rule(apiserver, "broken"), "EvictionInProgress")
        return found if found and found.get("reason") == "Completed" else None

    condition = wait_for(finished, timeout=5, what="rule status Completed")
    assert condition["status"] == "False" and "1 evicted" in condition["message"]


def test_tolerating_pod_is_evicted_after_toleration_seconds(apiserver: Cluster, evictor: OperatorThread) -> None:
    """tolerationSeconds from the claim's allocation result delays the eviction by that long."""
    gpu_node(apiserver, 1, tolerating_template("patient", 2))
    apiserver.seed([kept(cluster.pod("patient", template_name="patient"))])
    placed(apiserver, "patient")
    (created,) = apiserver.seed([rule(apiserver, "broken", effect="NoExecute")])

    def in_progress() -> bool:
        return (helpers.condition(stored_rule(apiserver, "broken"), "EvictionInProgress") or {}).get("status") == "True"

    wait_for(in_progress, timeout=2, what="rule reports a pending eviction")
    assert not helpers.gone_or_deleting(apiserver, "patient")
    wait_for(lambda: helpers.gone_or_deleting(apiserver, "patient"), timeout=6, what="patient evicted")
    # Evicted no sooner than tolerationSeconds (2 s) after the taint existed, by the times the
    # server and the operator recorded (second precision: whole seconds never round below it).
    evicted = helpers.condition(helpers.pod(apiserver, "patient"), "DisruptionTarget") or {}
    assert _seconds(evicted["lastTransitionTime"]) - _seconds(created["metadata"]["creationTimestamp"]) >= 2


@pytest.mark.dralloc_duty("taint-eviction")
def test_removing_the_rule_first_cancels_the_eviction(apiserver: Cluster, evictor: OperatorThread) -> None:
    """The taint goes away before tolerationSeconds ran out: the pod stays, with a cancellation Event."""
    gpu_node(apiserver, 1, tolerating_template("patient", 3))
    apiserver.seed([cluster.pod("patient", template_name="patient")])
    placed(apiserver, "patient")
    apiserver.seed([rule(apiserver, "broken", effect="NoExecute")])
    time.sleep(1.0)
    helpers.delete(apiserver, f"{RULES}/{apiserver.name('broken')}")
    wait_for(lambda: helpers.events(apiserver, "DeviceTaintEvictionCancelled"), timeout=5, what="cancel event")
    time.sleep(3.0)
    assert not helpers.gone_or_deleting(apiserver, "patient")
    assert helpers.events(apiserver, "DeviceTaintEviction") == []


@pytest.mark.dralloc_duty("taint-eviction")
@pytest.mark.parametrize("count, per_minute", [(50, 10)])
def test_rate_limit_holds_with_many_pods(apiserver: Cluster, count: int, per_minute: int) -> None:
    """50 affected pods, 10 evictions per minute: 10 go, 40 wait, and the rule says so."""
    running = start(apiserver, eviction.Limits(per_minute=per_minute, max_percent=100))
    try:
        gpu_node(apiserver, count, pods="200")
        names = [f"worker-{i}" for i in range(count)]
        apiserver.seed([cluster.pod(n, template_name="one-gpu") for n in names])
        wait_for(lambda: all(helpers.node_of(apiserver, n) for n in names), timeout=15, what="all placed")
        apiserver.seed([rule(apiserver, "broken", effect="NoExecute")])

        def progress() -> Obj | None:
            found = helpers.condition(stored_rule(apiserver, "broken"), "EvictionInProgress")
            return found if found and f"{per_minute} evicted" in found.get("message", "") else None

        condition = wait_for(progress, timeout=5, what="rule status with the first evictions")
        time.sleep(1.0)
        remaining = [n for n in names if not helpers.gone_or_deleting(apiserver, n)]
        assert len(remaining) == count - per_minute
        assert condition["status"] == "True"
        assert condition["message"].startswith(f"{count - per_minute} pod(s) pending eviction")
    finally:
        running.stop()


@pytest.mark.dralloc_duty("taint-eviction")
def test_dry_run_only_reports(apiserver: Cluster) -> None:
    """In dry-run mode the pod stays; an Event says what would have happened."""
    running = start(apiserver, eviction.Limits(per_minute=0, max_percent=100, dry_run=True))
    try:
        gpu_node(apiserver, 1)
        apiserver.seed([cluster.pod("spared", template_name="one-gpu")])
        placed(apiserver, "spared")
        apiserver.seed([rule(apiserver, "broken", effect="NoExecute")])
        (event,) = wait_for(lambda: helpers.events(apiserver, "DeviceTaintEvictionDryRun"), timeout=5,
                            what="dry-run event")
        assert "Would evict (dry run)" in event["note"]
        time.sleep(0.5)
        assert not helpers.gone_or_deleting(apiserver, "spared")
    finally:
        running.stop()
