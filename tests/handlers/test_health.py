"""DeviceHealthPolicy end to end: a held signal taints (and evicts), recovery untaints, flaps do not."""

from __future__ import annotations

import dataclasses
import datetime as dt
import time
from collections.abc import Iterator
from typing import Any

import pytest
from tests.handlers import helpers
from tests.handlers.conftest import Cluster, OperatorThread, operator_settings, wait_for

from dralloc import metrics
from dralloc.allocation.pools import DeviceID
from dralloc.handlers import health as health_loop
from dralloc.lifecycle import eviction, health
from dralloc.testing import cluster
from dralloc.testing.cluster import crds

Obj = dict[str, Any]


@pytest.fixture
def healer(apiserver: Cluster) -> Iterator[OperatorThread]:
    if not apiserver.serves("resource.k8s.io/v1", "DeviceTaintRule"):
        pytest.skip("the cluster does not serve resource.k8s.io/v1 DeviceTaintRule (Kubernetes >= 1.37)")
    apiserver.seed(crds())
    running = OperatorThread(operator_settings(apiserver))
    running.runtime.eviction_limits = eviction.Limits(per_minute=0, max_percent=100)
    running.start()
    try:
        yield running
    finally:
        running.stop()


def policy_name(server: Cluster) -> str:
    return server.name("gpu-health")


def policy(server: Cluster, *, unhealthy_after: int, healthy_after: int, effect: str = "NoExecute",
           **signals: Any) -> Obj:
    """The test's policy, watching the devices of its node-a only."""
    return {"apiVersion": "dralloc.io/v1alpha1", "kind": "DeviceHealthPolicy",
            "metadata": {"name": policy_name(server)},
            "spec": {"selector": {"driver": cluster.DRIVER, "pool": server.name("node-a")},
                     "signals": signals or {"claimConditions": [{"type": "Ready", "status": "False"}]},
                     "taint": {"key": "dralloc.io/unhealthy", "value": "true", "effect": effect},
                     "unhealthyAfterSeconds": unhealthy_after, "healthyAfterSeconds": healthy_after}}


def one_gpu_node(server: Cluster, gpus: int, *extra: Obj, slice_: Obj | None = None) -> str:
    """node-a with `gpus` GPUs (or `slice_`), the class, the template `one-gpu`, and `extra`; the node's name."""
    node_a, gpu = server.name("node-a"), server.name("gpu")
    server.seed([cluster.node(node_a), slice_ or cluster.gpu_slice(node_a, gpus), cluster.gpu_class(gpu),
                 cluster.template("one-gpu", device_class=gpu), *extra])
    return node_a


def rules(server: Cluster) -> list[Obj]:
    """The DeviceTaintRules of the test's policy (the cluster may hold others)."""
    found = server.list_objects("resource.k8s.io/v1", "DeviceTaintRule")
    return [r for r in found if (r["metadata"].get("labels") or {}).get("dralloc.io/health-policy")
            == policy_name(server)]


def claim_of(server: Cluster, pod_name: str) -> Obj:
    (status,) = helpers.pod(server, pod_name)["status"]["resourceClaimStatuses"]
    return helpers.claim(server, status["resourceClaimName"])


def set_ready(server: Cluster, claim: Obj, ready: str) -> None:
    """What a DRA driver does: report the allocated device's condition in the claim's status."""
    (result,) = claim["status"]["allocation"]["devices"]["results"]
    entry = {"driver": result["driver"], "pool": result["pool"], "device": result["device"],
             "conditions": [{"type": "Ready", "status": ready, "reason": "Probe", "message": "driver probe",
                             "lastTransitionTime": "2030-01-01T00:00:00Z"}]}
    helpers.patch_claim_status(server, claim["metadata"]["name"], {"devices": [entry]})


def _seconds(stamp: str) -> float:
    return dt.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def test_held_signal_taints_evicts_and_recovery_untaints(apiserver: Cluster, healer: OperatorThread) -> None:
    """Ready=False past unhealthyAfterSeconds: a rule named after the device, the pod evicted; then back in service."""
    name = policy_name(apiserver)
    node_a = one_gpu_node(apiserver, 1, policy(apiserver, unhealthy_after=1, healthy_after=1))
    apiserver.seed([cluster.pod("worker", template_name="one-gpu")])
    wait_for(lambda: helpers.node_of(apiserver, "worker"), timeout=10, what="worker placed")
    set_ready(apiserver, claim_of(apiserver, "worker"), "False")
    (rule,) = wait_for(lambda: rules(apiserver), timeout=5, what="the policy's DeviceTaintRule")
    assert rule["metadata"]["name"] == f"{name}.{node_a}.gpu-0"
    assert rule["metadata"]["labels"] == {"dralloc.io/health-policy": name}
    assert rule["metadata"]["ownerReferences"][0]["kind"] == "DeviceHealthPolicy"
    assert rule["spec"]["deviceSelector"] == {"driver": cluster.DRIVER, "pool": node_a, "device": "gpu-0"}
    assert rule["spec"]["taint"]["effect"] == "NoExecute"
    wait_for(lambda: helpers.gone_or_deleting(apiserver, "worker"), timeout=5, what="worker evicted")
    assert helpers.cluster_events(apiserver, "DeviceTainted", name)
    # The evicted pod's claim goes with it, and so does the signal: recovery starts.
    wait_for(lambda: not rules(apiserver), timeout=8, what="rule removed after recovery")
    # The Event follows the rule's deletion: on a real API server it can show up a moment later.
    wait_for(lambda: helpers.cluster_events(apiserver, "DeviceUntainted", name), timeout=5, what="DeviceUntainted")

    def recovered() -> Obj | None:  # the status is written after the rule's deletion, too
        stored = apiserver.get("dralloc.io/v1alpha1", "DeviceHealthPolicy", name) or {}
        return stored if ((stored.get("status") or {}).get("lastTransitions") or [{}])[-1].get("to") == "healthy" else None

    stored = wait_for(recovered, timeout=5, what="the policy's status back to healthy")
    transitions = [(t["from"], t["to"]) for t in stored["status"]["lastTransitions"]]
    assert transitions == [("healthy", "suspect"), ("suspect", "unhealthy"), ("unhealthy", "recovering"),
                           ("recovering", "healthy")]
    # The signal was held for unhealthyAfterSeconds (1 s) before the device counted as unhealthy,
    # by the times the operator recorded (second precision: whole seconds never round below it).
    recorded = [_seconds(t["time"]) for t in stored["status"]["lastTransitions"]]
    assert recorded[1] - recorded[0] >= 1
    assert stored["status"]["taintedDevices"] == 0
    assert (helpers.condition(stored, "Ready") or {}).get("status") == "True"
    apiserver.seed([cluster.pod("next", template_name="one-gpu")])
    wait_for(lambda: helpers.node_of(apiserver, "next"), timeout=10, what="device back in service")


def test_short_signal_does_not_taint(apiserver: Cluster, healer: OperatorThread) -> None:
    """A signal that clears within unhealthyAfterSeconds leaves the device alone."""
    one_gpu_node(apiserver, 1, policy(apiserver, unhealthy_after=3, healthy_after=0))
    apiserver.seed([cluster.pod("worker", template_name="one-gpu")])
    wait_for(lambda: helpers.node_of(apiserver, "worker"), timeout=10, what="worker placed")
    set_ready(apiserver, claim_of(apiserver, "worker"), "False")

    def suspect() -> bool:
        stored = apiserver.get("dralloc.io/v1alpha1", "DeviceHealthPolicy", policy_name(apiserver)) or {}
        return [d["state"] for d in (stored.get("status") or {}).get("devices") or []] == ["suspect"]

    wait_for(suspect, timeout=3, what="device suspect in the policy status")
    set_ready(apiserver, claim_of(apiserver, "worker"), "True")
    time.sleep(3.5)
    assert rules(apiserver) == []
    assert not helpers.gone_or_deleting(apiserver, "worker")


def test_device_selector_signal_with_no_schedule(apiserver: Cluster, healer: OperatorThread) -> None:
    """A CEL signal over the device's attributes taints it NoSchedule: new pods go elsewhere."""
    slice_ = cluster.gpu_slice(apiserver.name("node-a"), 2)
    slice_["spec"]["devices"][0]["attributes"]["healthy"] = {"bool": False}
    expression = f'has(device.attributes["{cluster.DRIVER}"].healthy) && !device.attributes["{cluster.DRIVER}"].healthy'
    one_gpu_node(apiserver, 2, policy(apiserver, unhealthy_after=0, healthy_after=0, effect="NoSchedule",
                                      deviceSelectors=[{"cel": {"expression": expression}}]), slice_=slice_)
    (rule,) = wait_for(lambda: rules(apiserver), timeout=5, what="rule for the unhealthy device")
    assert rule["spec"]["deviceSelector"]["device"] == "gpu-0"
    apiserver.seed([cluster.pod("a", template_name="one-gpu"), cluster.pod("b", template_name="one-gpu")])
    wait_for(lambda: helpers.node_of(apiserver, "a") or helpers.node_of(apiserver, "b"), timeout=10, what="one placed")
    time.sleep(1.0)
    assert sum(1 for n in ("a", "b") if helpers.node_of(apiserver, n)) == 1


def allocated_device(server: Cluster, pod_name: str) -> Obj:
    (result,) = claim_of(server, pod_name)["status"]["allocation"]["devices"]["results"]
    return dict(result)


def report_unhealthy(server: Cluster, pod_name: str, *results: Obj) -> None:
    """What a kubelet does: these devices Unhealthy in the pod's allocatedResourcesStatus (any pod may write its own)."""
    resources = [{"resourceID": f"{r['driver']}/{r['pool']}/{r['device']}", "health": "Unhealthy"} for r in results]
    status = {"containerStatuses": [{"name": "main", "ready": True, "restartCount": 0, "image": "busybox",
                                     "imageID": "", "state": {"running": {}},
                                     "allocatedResourcesStatus": [{
                                         # `claim:<the container's claim entry>` (the pod's name for it,
                                         # not the ResourceClaim's), `/<request>` only when the entry
                                         # names one: kube-apiserver refuses anything else
                                         "name": "claim:gpus", "resources": resources}]}]}
    helpers._request(server, "PATCH", f"/api/v1/namespaces/{server.namespace}/pods/{pod_name}/status",
                     {"status": status})


def test_pod_reported_unhealthy_resource_taints_its_device(apiserver: Cluster, healer: OperatorThread) -> None:
    """A kubelet reporting allocatedResourcesStatus health Unhealthy marks the device (here NoSchedule)."""
    one_gpu_node(apiserver, 2, policy(apiserver, unhealthy_after=0, healthy_after=0, effect="NoSchedule",
                                      podResourceHealth=True))
    apiserver.seed([cluster.pod("worker", template_name="one-gpu")])
    wait_for(lambda: helpers.node_of(apiserver, "worker"), timeout=10, what="worker placed")
    result = allocated_device(apiserver, "worker")
    report_unhealthy(apiserver, "worker", result)
    (rule,) = wait_for(lambda: rules(apiserver), timeout=5, what="rule for the device the pod reports")
    assert rule["spec"]["deviceSelector"]["device"] == result["device"]
    assert rule["spec"]["taint"]["effect"] == "NoSchedule"
    assert not helpers.gone_or_deleting(apiserver, "worker")  # NoSchedule evicts nobody


def _ignored(reason: str) -> float:
    return metrics.REGISTRY.get_sample_value("dralloc_health_reports_ignored_total", {"reason": reason}) or 0.0


def test_pod_report_for_another_tenants_device_is_ignored(apiserver: Cluster, healer: OperatorThread) -> None:
    """Issue 26: pod `a` reports the GPU of pod `b` unhealthy: no taint, `b` stays; `a`'s own GPU is tainted."""
    one_gpu_node(apiserver, 2, policy(apiserver, unhealthy_after=0, healthy_after=0, podResourceHealth=True))
    apiserver.seed([cluster.pod("b", template_name="one-gpu")])
    wait_for(lambda: helpers.node_of(apiserver, "b"), timeout=10, what="b placed")
    apiserver.seed([cluster.pod("a", template_name="one-gpu")])
    wait_for(lambda: helpers.node_of(apiserver, "a"), timeout=10, what="a placed")
    theirs, mine = allocated_device(apiserver, "b"), allocated_device(apiserver, "a")
    assert theirs["device"] != mine["device"]
    before = _ignored(health.DEVICE_NOT_ALLOCATED)
    report_unhealthy(apiserver, "a", theirs)
    wait_for(lambda: _ignored(health.DEVICE_NOT_ALLOCATED) > before, timeout=5, what="the foreign report ignored")
    time.sleep(0.5)
    assert rules(apiserver) == []
    assert not helpers.gone_or_deleting(apiserver, "b")
    # The same report again with a's own device: only a's device is tainted (and a evicted: NoExecute).
    report_unhealthy(apiserver, "a", theirs, mine)
    (rule,) = wait_for(lambda: rules(apiserver), timeout=5, what="rule for a's own device")
    assert rule["spec"]["deviceSelector"]["device"] == mine["device"]
    wait_for(lambda: helpers.gone_or_deleting(apiserver, "a"), timeout=5, what="a evicted")
    assert not helpers.gone_or_deleting(apiserver, "b")
    assert _ignored(health.DEVICE_NOT_ALLOCATED) == before + 1  # each report counted once, however many passes


def test_ignored_reports_are_counted_and_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    """Every pass sees the report again: the metric and the warning count it once per pod."""
    report = health.Report(DeviceID(cluster.DRIVER, "node-0", "gpu-0"), "Pod ns/a", "uid-a",
                           "claim:gpus health Unhealthy", health.DEVICE_NOT_ALLOCATED)
    other = dataclasses.replace(report, device=DeviceID(cluster.DRIVER, "node-0", "gpu-1"))
    ignored = health_loop.IgnoredReports()
    before = _ignored(health.DEVICE_NOT_ALLOCATED)
    with caplog.at_level("DEBUG", logger=health_loop.__name__):
        for _ in range(3):
            ignored.note([report])
        ignored.note([report, other])
    assert _ignored(health.DEVICE_NOT_ALLOCATED) == before + 2
    assert [r.levelname for r in caplog.records] == ["WARNING", "DEBUG"]
    assert "Pod ns/a" in caplog.records[0].getMessage() and "not allocated" in caplog.records[0].getMessage()
    ignored.keep(set())
    assert ignored.seen == {}
