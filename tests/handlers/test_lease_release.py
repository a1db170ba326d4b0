"""A clean stop gives the Lease up even when the API fails the first tries.

Found by the chaos run (tests/chaos): a surge handover took a whole lease duration
because the stopping holder's one release write met a 500, so the next replica had to
wait the Lease out (15 s with the default timing) instead of taking it at once. The
release is now tried a few times. Two failures are injected on Lease writes right
before the stop (one may be met by a last renewal instead: harmless, the release meets
the other); when `stop()` returns the Lease must no longer name the stopped replica.
"""

from __future__ import annotations

from typing import Any

from tests.handlers.conftest import Cluster, OperatorThread, operator_settings, wait_for

from dralloc.sandbox import Faults
from dralloc.testing import cluster
from dralloc.testing.cluster import crds


def _lease(apiserver: Cluster) -> dict[str, Any]:
    lease = apiserver.get("coordination.k8s.io/v1", "Lease", apiserver.name("dralloc"), apiserver.namespace)
    return (lease or {}).get("spec") or {}


def test_a_clean_stop_releases_the_lease_through_failed_writes(apiserver: Cluster, faults: Faults) -> None:
    apiserver.seed([*crds(), cluster.namespace(apiserver.namespace)])
    first = OperatorThread(operator_settings(apiserver, elect="replica-a")).start()
    try:
        wait_for(lambda: _lease(apiserver).get("holderIdentity") == "replica-a", what="replica-a holds the Lease")
        rule = faults.next("PUT", f"/apis/coordination.k8s.io/v1/namespaces/{apiserver.namespace}/leases/*",
                           status=500, times=2)
    finally:
        first.stop()
    assert rule.fired == 2
    assert _lease(apiserver).get("holderIdentity") == "", _lease(apiserver)
