"""Coexistence with kube-controller-manager (handlers/coexisting.py): with `--claim-lifecycle auto`,
dralloc leaves the claims of template entries to KCM while KCM's leader Lease is renewed, says so
on a pod that waits too long, and takes the duty over when the Lease lapses.

The operator here follows a Lease of the test's own (`--controller-manager-lease`), which the test
renews and then abandons, as a KCM that stops would. On a real cluster whose KCM runs its own
resourceclaim-controller (`make e2e`'s first pass), that controller creates the claim meanwhile;
the test then shows the two never make a second claim for the entry.
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Iterator

import pytest
from tests.handlers import helpers
from tests.handlers.conftest import Cluster, OperatorThread, duty_owner, operator_settings, wait_for

from dralloc.handlers import items
from dralloc.settings import CoexistenceSettings
from dralloc.testing import cluster
from dralloc.testing.cluster import crds

LEASE_SECONDS = 2


def _stamp() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class RenewedLease:
    """A Lease held by "fake-kcm", renewed every half second until `lapse()`."""

    def __init__(self, server: Cluster, name: str) -> None:
        self.server, self.name = server, name
        self.path = f"/apis/coordination.k8s.io/v1/namespaces/{server.namespace}/leases/{name}"
        self.stopped = threading.Event()
        server.seed([{"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                      "metadata": {"name": name, "namespace": server.namespace},
                      "spec": {"holderIdentity": "fake-kcm", "leaseDurationSeconds": LEASE_SECONDS,
                               "renewTime": _stamp()}}])
        self.thread = threading.Thread(target=self._renew, daemon=True)
        self.thread.start()

    def _renew(self) -> None:
        while not self.stopped.wait(0.5):
            self.server.request("PATCH", self.path, {"spec": {"renewTime": _stamp()}})

    def lapse(self) -> None:
        self.stopped.set()
        self.thread.join(5)


@pytest.fixture
def kcm_lease(apiserver: Cluster) -> Iterator[RenewedLease]:
    lease = RenewedLease(apiserver, "fake-kcm")
    try:
        yield lease
    finally:
        lease.lapse()


def _entry_claims(server: Cluster, pod: str) -> list[str]:
    return [c["metadata"]["name"] for c in helpers.claims(server)
            if (c["metadata"].get("annotations") or {}).get("resource.kubernetes.io/pod-claim-name") == "gpus"
            and any(o.get("name") == pod for o in c["metadata"].get("ownerReferences") or [])]


def test_dralloc_waits_for_a_running_controller_manager_then_takes_over_when_it_stops(
        apiserver: Cluster, kcm_lease: RenewedLease, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(items, "CLAIM_CREATION_PATIENCE", 1.0)
    real_kcm_creates_claims = duty_owner(apiserver, "claim-lifecycle") == "kube-controller-manager"
    node, gpu = apiserver.name("node-a"), apiserver.name("gpu")
    apiserver.seed([*crds(), cluster.node(node), cluster.gpu_slice(node, 2), cluster.gpu_class(gpu),
                    cluster.template("one", device_class=gpu)])
    settings = operator_settings(apiserver).model_copy(update={"coexistence": CoexistenceSettings(
        claim_lifecycle="auto", taint_eviction="auto", controller_manager_lease=f"{apiserver.namespace}/fake-kcm")})
    running = OperatorThread(settings).start()
    try:
        apiserver.seed([cluster.pod("job", template_name="one")])
        if real_kcm_creates_claims:
            # The cluster's own KCM makes the claim; dralloc allocates it and binds the pod.
            wait_for(lambda: helpers.node_of(apiserver, "job"), what="the pod bound with KCM's claim")
        else:
            scheduled = wait_for(lambda: (c := helpers.condition(helpers.pod(apiserver, "job"), "PodScheduled"))
                                 and "waiting for kube-controller-manager" in c.get("message", "") and c,
                                 what="the pod saying it waits for kube-controller-manager")
            assert "ResourceClaimTemplate" in scheduled["message"] and "--claim-lifecycle=dralloc" in \
                scheduled["message"]
            assert _entry_claims(apiserver, "job") == []  # dralloc made none while the Lease was renewed
        kcm_lease.lapse()
        wait_for(lambda: running.runtime.coexistence.does("claim-lifecycle"),
                 what="dralloc taking the claim lifecycle over once the Lease lapsed")
        wait_for(lambda: helpers.node_of(apiserver, "job"), what="the pod bound once dralloc has the duty")
        assert len(_entry_claims(apiserver, "job")) == 1
    finally:
        running.stop()
