"""Two replicas with leader election on a Lease: only the holder acts; the other takes over.

Short durations (lease 3 s, renew deadline 2 s, retry 0.5 s) so the tests see failovers
quickly; the rules are the same as with kube-scheduler's defaults (15 s / 10 s / 2 s).
"""

from __future__ import annotations

from typing import Any

from tests.handlers import helpers
from tests.handlers.conftest import Cluster, OperatorThread, operator_settings, wait_for

from dralloc.handlers.runtime import Runtime
from dralloc.testing import cluster
from dralloc.testing.cluster import crds


def _lease(apiserver: Cluster) -> dict[str, Any]:
    lease = apiserver.get("coordination.k8s.io/v1", "Lease", apiserver.name("dralloc"), apiserver.namespace)
    return (lease or {}).get("spec") or {}


def _acting(*replicas: OperatorThread) -> list[str]:
    return [r.runtime.identity for r in replicas if _acts(r.runtime)]


def _acts(rt: Runtime) -> bool:
    return rt.leadership is not None and rt.leadership.acting


def test_only_the_holder_places_and_the_other_takes_over_when_it_stops(apiserver: Cluster) -> None:
    node_0, gpu = apiserver.name("node-0"), apiserver.name("gpu")
    apiserver.seed([*crds(), cluster.gpu_class(gpu), cluster.template("one-gpu", device_class=gpu),
                    cluster.node(node_0), cluster.gpu_slice(node_0, 4)])
    first = OperatorThread(operator_settings(apiserver, elect="replica-a")).start()
    wait_for(lambda: _lease(apiserver).get("holderIdentity") == "replica-a", what="replica-a holds the Lease")
    second = OperatorThread(operator_settings(apiserver, elect="replica-b")).start()
    try:
        apiserver.seed([cluster.pod(f"p-{i}", template_name="one-gpu") for i in range(3)])
        wait_for(lambda: all(helpers.node_of(apiserver, f"p-{i}") for i in range(3)), timeout=60,
                 what="three pods bound")
        # A replica counts a placement once the bind's answer is back: the test may see the binding first.
        wait_for(lambda: first.runtime.placements == 3, timeout=5, what="replica-a counted its three placements")
        assert second.runtime.placements == 0
        assert _acting(first, second) == ["replica-a"]
        first.stop()  # a clean stop gives the Lease up: the other takes it at once
        wait_for(lambda: _lease(apiserver).get("holderIdentity") == "replica-b", what="replica-b holds the Lease")
        apiserver.seed([cluster.pod("p-3", template_name="one-gpu")])
        wait_for(lambda: helpers.node_of(apiserver, "p-3"), timeout=30, what="replica-b binds the next pod")
        wait_for(lambda: second.runtime.placements == 1, timeout=5, what="replica-b counted its placement")
        assert first.runtime.placements == 3
        assert _lease(apiserver)["leaseTransitions"] == 1
    finally:
        for replica in (first, second):
            if replica.thread.is_alive():
                replica.stop()
    assert set(helpers.allocated_devices(apiserver).values()) == {1}


def test_a_standby_never_writes(apiserver: Cluster) -> None:
    """The standby's session refuses writes: its view is warm, its hands are tied."""
    apiserver.seed([*crds(), cluster.namespace(apiserver.namespace)])
    first = OperatorThread(operator_settings(apiserver, elect="replica-a")).start()
    wait_for(lambda: _lease(apiserver).get("holderIdentity") == "replica-a", what="replica-a holds the Lease")
    second = OperatorThread(operator_settings(apiserver, elect="replica-b")).start()
    try:
        leadership = second.runtime.leadership
        assert leadership is not None
        wait_for(lambda: leadership.elector.record is not None, what="replica-b read the Lease")
        try:
            leadership.guard("PUT", "/apis/resource.k8s.io/v1/namespaces/x/resourceclaims/c/status")
        except Exception as exc:
            assert "does not hold the Lease" in str(exc)
        else:
            raise AssertionError("the standby's guard let a write through")
        assert _acting(first, second) == ["replica-a"]
    finally:
        second.stop()
        first.stop()
