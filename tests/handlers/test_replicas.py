"""Two replicas with kopf peering: only the active one places pods; the other takes over when it stops."""

from __future__ import annotations

from tests.handlers import cluster, helpers
from tests.handlers.conftest import (
    Cluster,
    OperatorThread,
    crds,
    operator_settings,
    peering_objects,
    wait_for,
)


def test_only_the_active_replica_places_and_the_standby_takes_over(apiserver: Cluster) -> None:
    """Higher priority places every pod; after it stops, the standby places the next one."""
    peering, node_0, gpu = apiserver.name("peering"), apiserver.name("node-0"), apiserver.name("gpu")
    apiserver.seed([*crds(), *peering_objects(apiserver, peering)])
    apiserver.seed([cluster.gpu_class(gpu), cluster.template("one-gpu", device_class=gpu), cluster.node(node_0),
                    cluster.gpu_slice(node_0, 4)])
    active = OperatorThread(operator_settings(apiserver, peering=200, peering_name=peering),
                            identity="replica-a").start()
    standby = OperatorThread(operator_settings(apiserver, peering=100, peering_name=peering),
                             identity="replica-b").start()
    try:
        apiserver.seed([cluster.pod(f"p-{i}", template_name="one-gpu") for i in range(3)])
        wait_for(lambda: all(helpers.node_of(apiserver, f"p-{i}") for i in range(3)), timeout=60,
                 what="three pods bound")
        assert (active.runtime.placements, standby.runtime.placements) == (3, 0)
        active.stop()
        apiserver.seed([cluster.pod("p-3", template_name="one-gpu")])
        wait_for(lambda: helpers.node_of(apiserver, "p-3"), timeout=90, what="standby binds the next pod")
        assert standby.runtime.placements == 1
    finally:
        for replica in (active, standby):
            if replica.thread.is_alive():
                replica.stop()
    assert set(helpers.allocated_devices(apiserver).values()) == {1}
