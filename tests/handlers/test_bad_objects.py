"""One bad object fails only the pods that use it: the rest of the cluster keeps being placed.

A pod whose claim names a DeviceClass that does not exist, or whose class's CEL fails at
run time, gets `PodScheduled=False` (reason `SchedulerError`, a message naming the claim,
request and class) and a Warning Event; every other pod is placed as if it were not
there; and fixing the bad object places the pod without waiting out its backoff.
"""

from __future__ import annotations

import pytest
from tests.handlers import helpers
from tests.handlers.conftest import Cluster, OperatorThread, wait_for

from dralloc.lifecycle import templates
from dralloc.model import pods
from dralloc.sandbox import Faults
from dralloc.scheduling import placement
from dralloc.testing import cluster

Obj = dict[str, object]


def _scheduling_error(server: Cluster, pod: str) -> dict[str, str] | None:
    found = helpers.condition(helpers.pod(server, pod), "PodScheduled")
    if found and found.get("status") == "False" and found.get("reason") == "SchedulerError":
        return found
    return None


def _class_with(name: str, expression: str) -> Obj:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name},
            "spec": {"selectors": [{"cel": {"expression": expression}}]}}


def test_unknown_class_fails_only_its_pod(apiserver: Cluster, operator: OperatorThread) -> None:
    node, gpu, missing = apiserver.name("node-a"), apiserver.name("gpu"), apiserver.name("no-such-class")
    apiserver.seed([cluster.node(node), cluster.gpu_slice(node, 2), cluster.gpu_class(gpu),
                    cluster.template("good", device_class=gpu), cluster.template("bad", device_class=missing)])
    # The bad pod is older and of higher priority: it comes first in every pass.
    apiserver.seed([cluster.pod("bad-pod", template_name="bad")])
    apiserver.seed([cluster.pod("good-pod", template_name="good")])
    wait_for(lambda: helpers.node_of(apiserver, "good-pod"), what="the good pod bound")
    found = wait_for(lambda: _scheduling_error(apiserver, "bad-pod"), what="the bad pod's SchedulerError")
    (bad_claim,) = [c["metadata"]["name"] for c in helpers.claims(apiserver) if c["metadata"]["name"].startswith("bad-pod")]
    message = found["message"]
    assert bad_claim in message and "request gpu" in message and missing in message and "not found" in message
    warning = wait_for(lambda: [e for e in helpers.events(apiserver, "AllocationError")
                                if e["regarding"]["name"] == "bad-pod"], what="a Warning Event")
    assert warning[0]["type"] == "Warning" and missing in warning[0]["note"]
    assert helpers.node_of(apiserver, "bad-pod") is None

    # Creating the class it names is a relevant change: the pod is placed at once.
    apiserver.seed([cluster.gpu_class(missing)])
    wait_for(lambda: helpers.node_of(apiserver, "bad-pod"), what="the bad pod placed once its class exists")


def test_class_failing_at_run_time_fails_only_its_pods(apiserver: Cluster, operator: OperatorThread) -> None:
    node, gpu, broken = apiserver.name("node-a"), apiserver.name("gpu"), apiserver.name("broken")
    attribute = f'device.attributes["{cluster.DRIVER}"].index'
    apiserver.seed([cluster.node(node), cluster.gpu_slice(node, 2), cluster.gpu_class(gpu),
                    _class_with(broken, f'{attribute} > "five"'),
                    cluster.template("good", device_class=gpu), cluster.template("bad", device_class=broken)])
    apiserver.seed([cluster.pod("bad-pod", template_name="bad")])
    apiserver.seed([cluster.pod("good-pod", template_name="good")])
    wait_for(lambda: helpers.node_of(apiserver, "good-pod"), what="the good pod bound")
    # Watches of different kinds deliver in no common order: when another controller (KCM) creates
    # the claim, the claim may be seen before its class, and the first error says "not found".
    found = wait_for(lambda: (e := _scheduling_error(apiserver, "bad-pod")) and "CEL runtime error" in e["message"]
                     and e, what="the bad pod's SchedulerError naming the CEL error")
    (bad_claim,) = [c["metadata"]["name"] for c in helpers.claims(apiserver) if c["metadata"]["name"].startswith("bad-pod")]
    assert bad_claim in found["message"] and "request gpu" in found["message"]
    # 1.37's wording (the operator follows the server's release): the device that failed is named.
    assert f"class {broken}: selector #0 on device {cluster.DRIVER}/" in found["message"]
    assert "no such overload" in found["message"]

    apiserver.request("PATCH", f"/apis/resource.k8s.io/v1/deviceclasses/{broken}",
                      {"spec": {"selectors": [{"cel": {"expression": f"{attribute} >= 1"}}]}})
    wait_for(lambda: helpers.node_of(apiserver, "bad-pod"), what="the pod placed once its class is fixed")
    (claim,) = [c for c in helpers.claims(apiserver) if c["metadata"]["name"].startswith("bad-pod")]
    assert [r["device"] for r in claim["status"]["allocation"]["devices"]["results"]] == ["gpu-1"]


def test_a_bug_met_on_one_pod_fails_only_that_pod(apiserver: Cluster, operator: OperatorThread,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """An unexpected exception while placing one pod: SchedulerError on it, the others placed."""
    node, gpu = apiserver.name("node-a"), apiserver.name("gpu")
    real_place = placement.Placer.place

    def place(self: placement.Placer, item: placement.Item, **kwargs: bool) -> object:
        if item.pod is not None and item.pod.metadata.name == "cursed":
            raise RuntimeError("boom")
        return real_place(self, item, **kwargs)

    monkeypatch.setattr(placement.Placer, "place", place)
    apiserver.seed([cluster.node(node), cluster.gpu_slice(node, 2), cluster.gpu_class(gpu),
                    cluster.template("one", device_class=gpu)])
    apiserver.seed([cluster.pod("cursed", template_name="one")])
    apiserver.seed([cluster.pod("fine", template_name="one")])
    wait_for(lambda: helpers.node_of(apiserver, "fine"), what="the other pod bound")
    found = wait_for(lambda: _scheduling_error(apiserver, "cursed"), what="SchedulerError on the cursed pod")
    assert "internal error in dralloc (RuntimeError: boom)" in found["message"]
    monkeypatch.setattr(placement.Placer, "place", real_place)
    wait_for(lambda: helpers.node_of(apiserver, "cursed"), what="the pod placed once the bug is gone (backoff)")


@pytest.mark.dralloc_duty("claim-lifecycle")
def test_a_bug_met_in_one_pods_lifecycle_leaves_the_others_alone(apiserver: Cluster, operator: OperatorThread,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    node, gpu = apiserver.name("node-a"), apiserver.name("gpu")
    real_plan = templates.pod_claim_plan

    def plan(pod: pods.Pod, *args: object, **kwargs: object) -> object:
        if pod.metadata.name == "cursed":
            raise KeyError("no such thing")
        return real_plan(pod, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(templates, "pod_claim_plan", plan)
    apiserver.seed([cluster.node(node), cluster.gpu_slice(node, 2), cluster.gpu_class(gpu),
                    cluster.template("one", device_class=gpu)])
    apiserver.seed([cluster.pod("cursed", template_name="one"), cluster.pod("fine", template_name="one")])
    wait_for(lambda: helpers.node_of(apiserver, "fine"), what="the other pod's claim created and the pod bound")
    event = wait_for(lambda: [e for e in helpers.events(apiserver, "ClaimLifecycleError")
                              if e["regarding"]["name"] == "cursed"], what="ClaimLifecycleError on the pod")
    assert event[0]["type"] == "Warning" and "KeyError" in event[0]["note"]
    assert not [c for c in helpers.claims(apiserver) if c["metadata"]["name"].startswith("cursed")]
    monkeypatch.setattr(templates, "pod_claim_plan", real_plan)
    wait_for(lambda: helpers.node_of(apiserver, "cursed"), what="the pod handled once the bug is gone (backoff)")


def test_a_template_without_requests_gives_an_empty_allocation(apiserver: Cluster, operator: OperatorThread) -> None:
    """`requests: null` is accepted by the API: the claim allocates with no devices, as upstream's."""
    node, gpu = apiserver.name("node-a"), apiserver.name("gpu")
    template = cluster.template("empty", device_class=gpu)
    template["spec"]["spec"]["devices"]["requests"] = None
    apiserver.seed([cluster.node(node), cluster.gpu_slice(node, 1), cluster.gpu_class(gpu), template])
    apiserver.seed([cluster.pod("p", template_name="empty")])
    assert wait_for(lambda: helpers.node_of(apiserver, "p"), what="the pod bound") == node
    (claim,) = helpers.claims(apiserver)
    assert claim["status"]["allocation"].get("devices", {}).get("results", []) == []


def test_a_write_the_server_rejects_is_reported_on_the_pod(apiserver: Cluster, faults: Faults,
                                                           operator: OperatorThread) -> None:
    node, gpu = apiserver.name("node-a"), apiserver.name("gpu")
    apiserver.seed([cluster.node(node), cluster.gpu_slice(node, 1), cluster.gpu_class(gpu),
                    cluster.template("one", device_class=gpu)])
    faults.next("PUT", "/apis/resource.k8s.io/v1/namespaces/*/resourceclaims/*/status", 422,
                message="status.allocation: Invalid value: refused for the test")
    apiserver.seed([cluster.pod("p", template_name="one")])
    found = wait_for(lambda: _scheduling_error(apiserver, "p"), what="SchedulerError naming the refusal")
    assert "the API server refused the claim-status write" in found["message"]
    assert "refused for the test" in found["message"]
    wait_for(lambda: helpers.node_of(apiserver, "p"), what="placed on the retry")


def test_a_change_that_arrives_while_another_pods_error_is_written_is_not_lost(
        apiserver: Cluster, operator: OperatorThread, faults: Faults) -> None:
    """A pass decides every pod on the view it started with and awaits writes in between: a change
    that arrives during one pod's write (here the node's taint removed while the bad pod's error is
    written) must bring the later pods of that pass back, not be counted as already seen by them.
    Found on the real control plane: a new Node carries `node.kubernetes.io/not-ready` until
    kube-controller-manager removes it, and the good pod stayed Unschedulable."""
    node, gpu, missing = apiserver.name("node-a"), apiserver.name("gpu"), apiserver.name("no-such-class")
    tainted = {**cluster.node(node), "spec": {"taints": [{"key": "example.com/not-yet", "effect": "NoSchedule"}]}}
    apiserver.seed([tainted, cluster.gpu_slice(node, 2), cluster.gpu_class(gpu),
                    cluster.template("good", device_class=gpu), cluster.claim("bad", device_class=missing)])
    apiserver.seed([cluster.pod("good-pod", template_name="good")])
    wait_for(lambda: (helpers.condition(helpers.pod(apiserver, "good-pod"), "PodScheduled") or {}).get("reason")
             == "Unschedulable", what="the good pod unschedulable while the node is tainted")
    # The bad pod comes first in the next pass (higher priority); writing its error takes a while
    # (its claim exists already: that write is the only one to its status).
    slow = faults.latency("PATCH", f"/api/v1/namespaces/{apiserver.namespace}/pods/bad-pod/status", 2.0, times=1)
    # A priority comes from a PriorityClass: kube-apiserver's Priority admission refuses a pod that sets one.
    high = apiserver.name("high")
    apiserver.seed([{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": high},
                     "value": 10}])
    bad = cluster.pod("bad-pod", claim_name="bad")
    bad["spec"]["priorityClassName"] = high
    apiserver.seed([bad])
    wait_for(lambda: faults.counters()["rules"].get(str(slow.id)), what="the bad pod's error being written")
    apiserver.request("PATCH", f"/api/v1/nodes/{node}", {"spec": {"taints": None}})  # gone while that write waits
    wait_for(lambda: helpers.node_of(apiserver, "good-pod"), what="the good pod bound once the taint is gone")
