"""The manifests' RBAC is sufficient: the operator, logged in as their ServiceAccount, does its whole job.

Real cluster only (`--e2e-real`; `make e2e` runs it): the sandbox authorizes nothing.
The RBAC objects of `manifests/` (the dralloc-system Namespace, the ServiceAccount, the
ClusterRole and its binding, exactly as `kubectl apply -k manifests/` would create them)
are applied with the admin's credentials; the Deployment, Service and monitoring objects
are left out (no kubelet would run the pod, and the Prometheus operator's CRDs are not
installed). The operator then runs in-process with a token of that ServiceAccount
(TokenRequest), electing a leader on the Lease `dralloc` as deployed, and goes through
placement with a template and a shared claim, its Events, a finished pod's claim
deletion, a NoExecute eviction, gate mode (a pod of the default scheduler with the gate
`dralloc.io/allocate`: dralloc allocates, pins the node and ungates, kube-scheduler
binds) and a DeviceHealthPolicy (a driver's Ready=False condition held past
unhealthyAfterSeconds becomes a NoExecute DeviceTaintRule, and the pod using the device
is evicted). Any 403 in its log fails the test: with
tests/manifests/test_rbac_covers_operator_calls.py (the static check) this proves the
ClusterRole is exactly sufficient.

The outcomes are asserted, not who brought them about where kube-controller-manager may
share the work (claims from templates, NoExecute evictions): they hold whether its DRA
controllers run or dralloc does that work. Binding a gated pod is kube-scheduler's alone
(dralloc never binds it), so that is checked by its Event.
"""

from __future__ import annotations

import logging
import pathlib
import re
from typing import Any

import pytest
import yaml
from tests.handlers import helpers
from tests.handlers import test_health as health
from tests.handlers.conftest import Cluster, OperatorThread, operator_settings, wait_for

from dralloc.settings import LeaderElectionSettings
from dralloc.testing import cluster
from dralloc.testing.cluster import crds

pytestmark = pytest.mark.e2e

REPO = pathlib.Path(__file__).resolve().parents[2]
NAMESPACE = "dralloc-system"
ACCOUNT = "dralloc"
GATE = "dralloc.io/allocate"
HOSTNAME = "kubernetes.io/hostname"
Obj = dict[str, Any]


def rbac_objects() -> list[Obj]:
    docs = [d for name in ("namespace.yaml", "rbac.yaml") for d in yaml.safe_load_all((REPO / "manifests" / name).read_text())]
    return [d for d in docs if d]


def service_account_kubeconfig(apiserver: Cluster, path: pathlib.Path) -> pathlib.Path:
    """The admin kubeconfig's cluster, with a fresh token of dralloc-system/dralloc as the user."""
    request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
               "spec": {"expirationSeconds": 3600}}
    answer = apiserver.request("POST", f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/{ACCOUNT}/token", request,
                               content_type="application/json")
    token = answer["status"]["token"]
    assert apiserver.kubeconfig is not None
    admin = yaml.safe_load(apiserver.kubeconfig.read_text())
    context = next(c for c in admin["contexts"] if c["name"] == admin["current-context"])["context"]
    server = next(c for c in admin["clusters"] if c["name"] == context["cluster"])
    config = {"apiVersion": "v1", "kind": "Config", "current-context": "sa",
              "clusters": [server], "users": [{"name": "sa", "user": {"token": token}}],
              "contexts": [{"name": "sa", "context": {"cluster": server["name"], "user": "sa"}}]}
    path.write_text(yaml.safe_dump(config))
    return path


_REFUSED = re.compile(r"(?<![\w-])403(?![\w-])|forbidden", re.IGNORECASE)


def forbidden(records: list[logging.LogRecord]) -> list[str]:
    found = []
    for record in records:
        text = record.getMessage() + (str(record.exc_info[1]) if record.exc_info else "")
        # 403 as a number of its own: a pod's uid such as bf0f707b-4037-... also holds "403"
        if _REFUSED.search(text):
            found.append(f"{record.name}: {text[:300]}")
    return found


def test_the_manifests_service_account_can_do_everything(apiserver: Cluster, tmp_path: pathlib.Path,
                                                         caplog: pytest.LogCaptureFixture) -> None:
    if not apiserver.real:
        pytest.skip("the sandbox does no authorization, so RBAC can only be proven on a real kube-apiserver "
                    "(make e2e runs this); here tests/manifests/test_rbac_covers_operator_calls.py checks "
                    "the ClusterRole against the code and a running operator")
    apiserver.seed([*crds(), *rbac_objects()])
    wait_for(lambda: apiserver.get("v1", "ServiceAccount", ACCOUNT, NAMESPACE), what="the ServiceAccount")
    kubeconfig = service_account_kubeconfig(apiserver, tmp_path / "sa.kubeconfig")

    node_a, gpu = apiserver.name("node-a"), apiserver.name("gpu")
    apiserver.seed([cluster.node(node_a), cluster.gpu_slice(node_a, 6), cluster.gpu_class(gpu),
                    cluster.template("one-gpu", device_class=gpu), cluster.claim("shared", device_class=gpu)])
    settings = operator_settings(apiserver, elect="rbac-test")
    settings = settings.model_copy(update={
        "connection": settings.connection.model_copy(update={"kubeconfig": str(kubeconfig)}),
        "runtime": settings.runtime.model_copy(update={"leader_election": LeaderElectionSettings(
            lease_duration=3, renew_deadline=2, retry_period=0.5, identity="rbac-test",
            resource_name="dralloc", resource_namespace=apiserver.namespace)})})
    caplog.set_level(logging.INFO)
    running = OperatorThread(settings).start()
    try:
        apiserver.seed([cluster.pod("job", template_name="one-gpu"),
                        cluster.pod("reader-0", claim_name="shared"), cluster.pod("reader-1", claim_name="shared")])
        for pod in ("job", "reader-0", "reader-1"):
            wait_for(lambda pod=pod: helpers.node_of(apiserver, pod), timeout=60, what=f"{pod} bound")
        shared = helpers.claim(apiserver, "shared")
        assert len(shared["status"]["reservedFor"]) == 2
        wait_for(lambda: helpers.events(apiserver, "Allocated"), what="an Allocated Event")

        # A finished pod: its claim from the template is deallocated and deleted.
        (job_claim,) = [c["metadata"]["name"] for c in helpers.claims(apiserver) if c["metadata"]["name"] != "shared"]
        helpers.set_pod_phase(apiserver, "job", "Succeeded")
        wait_for(lambda: not helpers.claim(apiserver, job_claim), timeout=30, what="the finished pod's claim deleted")

        # A NoExecute taint on the shared device: both readers are evicted.
        (result,) = shared["status"]["allocation"]["devices"]["results"]
        apiserver.seed([{"apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule",
                         "metadata": {"name": apiserver.name("broken")},
                         "spec": {"deviceSelector": {"driver": cluster.DRIVER, "pool": node_a,
                                                     "device": result["device"]},
                                  "taint": {"key": "example.com/broken", "effect": "NoExecute"}}}])
        for pod in ("reader-0", "reader-1"):
            wait_for(lambda pod=pod: helpers.gone_or_deleting(apiserver, pod), timeout=30, what=f"{pod} evicted")

        gate_mode(apiserver, node_a)
        health_policy_evicts(apiserver, node_a)
    except AssertionError as exc:  # a refused call usually shows as a wait that times out: name it
        refused = forbidden(caplog.records)
        if refused:
            raise AssertionError(f"{exc}; the operator was refused: {refused}") from exc
        raise
    finally:
        running.stop()
    assert forbidden(caplog.records) == []


def gate_mode(apiserver: Cluster, node_a: str) -> None:
    """A gated pod of the default scheduler: dralloc allocates its claim, pins node_a and ungates; kube-scheduler binds."""
    apiserver.seed([cluster.pod("gated", template_name="one-gpu", scheduler=None, gate=GATE)])
    wait_for(lambda: helpers.node_of(apiserver, "gated"), timeout=60, what="the gated pod bound by kube-scheduler")
    gated = helpers.pod(apiserver, "gated")
    assert gated["spec"]["schedulerName"] == "default-scheduler"
    assert not gated["spec"].get("schedulingGates")
    assert gated["spec"]["nodeSelector"] == {HOSTNAME: node_a}
    assert gated["spec"]["nodeName"] == node_a
    assert (helpers.condition(gated, "PodScheduled") or {}).get("status") == "True"
    (status,) = gated["status"]["resourceClaimStatuses"]
    claim = helpers.claim(apiserver, status["resourceClaimName"])
    assert claim["status"]["allocation"]["devices"]["results"][0]["pool"] == node_a
    assert [r["uid"] for r in claim["status"]["reservedFor"]] == [gated["metadata"]["uid"]]

    def scheduled() -> list[Obj]:
        return [e for e in helpers.events(apiserver, "Scheduled") if e["regarding"]["name"] == "gated"]

    (event,) = wait_for(scheduled, timeout=30, what="kube-scheduler's Scheduled Event for the gated pod")
    assert event["reportingController"] == "default-scheduler", event
    assert node_a in event["note"]


def health_policy_evicts(apiserver: Cluster, node_a: str) -> None:
    """A DeviceHealthPolicy turns a held Ready=False into a NoExecute DeviceTaintRule; the pod on it is evicted."""
    assert node_a == apiserver.name("node-a")  # the policy watches the pool of the test's node-a
    name = health.policy_name(apiserver)
    apiserver.seed([health.policy(apiserver, unhealthy_after=1, healthy_after=1),
                    cluster.pod("worker", template_name="one-gpu")])
    wait_for(lambda: helpers.node_of(apiserver, "worker"), timeout=60, what="worker placed")
    claim = health.claim_of(apiserver, "worker")  # bound by dralloc: allocated and reserved first
    (result,) = claim["status"]["allocation"]["devices"]["results"]
    health.set_ready(apiserver, claim, "False")
    (rule,) = wait_for(lambda: health.rules(apiserver), timeout=30, what="the policy's DeviceTaintRule")
    assert rule["metadata"]["name"] == f"{name}.{node_a}.{result['device']}"
    assert rule["spec"]["deviceSelector"] == {"driver": cluster.DRIVER, "pool": node_a, "device": result["device"]}
    assert rule["spec"]["taint"]["effect"] == "NoExecute"
    assert rule["metadata"]["ownerReferences"][0]["name"] == name
    wait_for(lambda: helpers.gone_or_deleting(apiserver, "worker"), timeout=30, what="worker evicted")
    assert not helpers.gone_or_deleting(apiserver, "gated")  # on node_a too, but not on the tainted device
    wait_for(lambda: helpers.cluster_events(apiserver, "DeviceTainted", name), timeout=30,
             what="the DeviceTainted Event")

    def unhealthy() -> list[str]:
        stored = apiserver.get("dralloc.io/v1alpha1", "DeviceHealthPolicy", name) or {}
        found = [t["to"] for t in (stored.get("status") or {}).get("lastTransitions") or []]
        return found if "unhealthy" in found else []

    assert wait_for(unhealthy, timeout=30, what="the policy's status: the device unhealthy")[:2] == ["suspect", "unhealthy"]
