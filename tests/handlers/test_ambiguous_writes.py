"""Writes the server applied but answered with an error: never one device in two claims, never two claims.

kube-apiserver answers 504 when etcd's reply comes too late, possibly after it committed.
The sandbox's `applied-then` rule does exactly that, and `watch-lag` keeps the operator's
watch from telling it what happened, so only a read can. One node with one device makes
any double allocation visible at once.
"""

from __future__ import annotations

import time

from tests.handlers import helpers
from tests.handlers.conftest import Cluster, OperatorThread, wait_for

from dralloc.sandbox import Faults
from dralloc.testing import cluster

STATUS = "/apis/resource.k8s.io/v1/namespaces/*/resourceclaims/*/status"
CLAIMS = "/apis/resource.k8s.io/v1/namespaces/*/resourceclaims"


def _fired(faults: Faults, rule_id: int) -> int:
    counters = faults.counters()
    return int(counters["rules"].get(str(rule_id), 0))


def _unschedulable(server: Cluster, pod: str) -> bool:
    found = helpers.condition(helpers.pod(server, pod), "PodScheduled")
    return bool(found and found.get("reason") == "Unschedulable")


def test_a_claim_status_write_applied_but_answered_504_is_not_given_out_again(
        apiserver: Cluster, faults: Faults, operator: OperatorThread) -> None:
    node, gpu = apiserver.name("node-a"), apiserver.name("gpu")
    apiserver.seed([cluster.node(node), cluster.gpu_slice(node, 1), cluster.gpu_class(gpu),
                    cluster.template("one", device_class=gpu)])
    faults.watch_lag(3.0, path="*resourceclaims*")  # the pods are seen at once, the claims late
    rule = faults.applied_then("PUT", STATUS, 504, times=1)
    apiserver.seed([cluster.pod("first", template_name="one")])
    wait_for(lambda: _fired(faults, rule.id) == 1, what="the allocation write answered 504 after applying")
    apiserver.seed([cluster.pod("second", template_name="one")])
    wait_for(lambda: helpers.node_of(apiserver, "first"), timeout=30, what="the first pod bound all the same")
    wait_for(lambda: _unschedulable(apiserver, "second"), timeout=30, what="the second pod finds no free device")
    assert helpers.node_of(apiserver, "second") is None
    assert set(helpers.allocated_devices(apiserver).values()) == {1}
    (allocated,) = [c for c in helpers.claims(apiserver) if (c.get("status") or {}).get("allocation")]
    assert allocated["metadata"]["name"].startswith("first-")


def test_a_claim_create_applied_but_answered_504_makes_one_claim(
        apiserver: Cluster, faults: Faults, operator: OperatorThread) -> None:
    node, gpu = apiserver.name("node-a"), apiserver.name("gpu")
    apiserver.seed([cluster.node(node), cluster.gpu_slice(node, 2), cluster.gpu_class(gpu),
                    cluster.template("one", device_class=gpu)])
    faults.watch_lag(3.0, path="*resourceclaims*")  # the pods are seen at once, the claims late
    rule = faults.applied_then("POST", CLAIMS, 504, times=1)
    apiserver.seed([cluster.pod("trainer", template_name="one")])
    wait_for(lambda: _fired(faults, rule.id) == 1, what="the create answered 504 after applying")
    wait_for(lambda: helpers.node_of(apiserver, "trainer"), timeout=30, what="the pod bound")
    (claim,) = helpers.claims(apiserver)
    assert claim["metadata"]["annotations"]["resource.kubernetes.io/pod-claim-name"] == "gpus"
    statuses = helpers.pod(apiserver, "trainer")["status"]["resourceClaimStatuses"]
    assert statuses == [{"name": "gpus", "resourceClaimName": claim["metadata"]["name"]}]


def test_a_bind_applied_but_answered_504_is_not_sent_again_as_new(
        apiserver: Cluster, faults: Faults, operator: OperatorThread) -> None:
    node, gpu = apiserver.name("node-a"), apiserver.name("gpu")
    apiserver.seed([cluster.node(node), cluster.gpu_slice(node, 1), cluster.gpu_class(gpu),
                    cluster.template("one", device_class=gpu)])
    faults.watch_lag(2.0)
    rule = faults.applied_then("POST", "/api/v1/namespaces/*/pods/*/binding", 504, times=1)
    apiserver.seed([cluster.pod("trainer", template_name="one")])
    wait_for(lambda: _fired(faults, rule.id) == 1, what="the bind answered 504 after applying")
    wait_for(lambda: helpers.node_of(apiserver, "trainer"), what="the pod bound")
    wait_for(lambda: helpers.events(apiserver, "Allocated"), what="the placement reported")
    (claim,) = helpers.claims(apiserver)
    pod = helpers.pod(apiserver, "trainer")
    assert [r["uid"] for r in claim["status"]["reservedFor"]] == [pod["metadata"]["uid"]]
    assert len(helpers.events(apiserver, "Allocated")) == 1


def test_a_pod_bound_while_its_watch_lags_is_bound_once(
        apiserver: Cluster, faults: Faults, operator: OperatorThread) -> None:
    """The demo's old '409 ... already assigned to node': a later pass must not bind the pod again."""
    node, gpu = apiserver.name("node-a"), apiserver.name("gpu")
    apiserver.seed([cluster.node(node), cluster.gpu_slice(node, 4), cluster.gpu_class(gpu),
                    cluster.template("one", device_class=gpu)])
    faults.watch_lag(2.0, path="*pods*")  # the operator sees its own bindings late
    server = getattr(apiserver, "server")  # noqa: B009
    apiserver.seed([cluster.pod("first", template_name="one")])
    wait_for(lambda: helpers.node_of(apiserver, "first"), what="the first pod bound")
    for i in range(3):  # relevant changes the operator sees at once: passes while the binding is not seen yet
        other = apiserver.name(f"node-{i}")
        apiserver.seed([cluster.node(other), cluster.gpu_slice(other, 1)])
        time.sleep(0.2)
    apiserver.seed([cluster.pod("second", template_name="one")])
    wait_for(lambda: helpers.node_of(apiserver, "second"), what="a later pod bound (the lag is over)")
    binds = [r for r in server.requests.matching("POST", "/api/v1/namespaces/*/pods/first/binding")]
    assert [r.status for r in binds] == [201]
