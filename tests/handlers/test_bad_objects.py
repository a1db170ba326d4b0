"""One bad object fails only the pods that use it: the rest of the cluster keeps being placed.

A pod whose claim names a DeviceClass that does not exist, or whose class's CEL fails at
run time, gets `PodScheduled=False` (reason `SchedulerError`, a message naming the claim,
request and class) and a Warning Event; every other pod is placed as if it were not
there; and fixing the bad object places the pod without waiting out its backoff.
"""

from __future__ import annotations

from tests.handlers import cluster, helpers
from tests.handlers.conftest import Cluster, OperatorThread, wait_for

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
    found = wait_for(lambda: _scheduling_error(apiserver, "bad-pod"), what="the bad pod's SchedulerError")
    (bad_claim,) = [c["metadata"]["name"] for c in helpers.claims(apiserver) if c["metadata"]["name"].startswith("bad-pod")]
    assert bad_claim in found["message"] and "request gpu" in found["message"]
    assert f"class {broken}: selector #0: CEL runtime error" in found["message"]
    assert "no such overload" in found["message"]

    apiserver.request("PATCH", f"/apis/resource.k8s.io/v1/deviceclasses/{broken}",
                      {"spec": {"selectors": [{"cel": {"expression": f"{attribute} >= 1"}}]}})
    wait_for(lambda: helpers.node_of(apiserver, "bad-pod"), what="the pod placed once its class is fixed")
    (claim,) = [c for c in helpers.claims(apiserver) if c["metadata"]["name"].startswith("bad-pod")]
    assert [r["device"] for r in claim["status"]["allocation"]["devices"]["results"]] == ["gpu-1"]
