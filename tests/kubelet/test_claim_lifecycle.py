"""A prepared claim's end on a real node (#33): the pod deleted, or evicted by a NoExecute device taint.

After the pod goes, the kubelet calls the driver's NodeUnprepareResources (the driver removes its
CDI specs) and the claim is released: a template's claim is deleted, a named claim deallocated.
Who releases it (kube-controller-manager's resourceclaim controller, or dralloc with
--claim-lifecycle dralloc) and who evicts (KCM's device-taint-eviction controller, or dralloc) is
`auto`: in `make e2e-kubelet`'s first pass kube-controller-manager runs both and dralloc defers to it,
in the second KCM's two controllers are off and dralloc does both.
"""

from __future__ import annotations

from tests.handlers.conftest import wait_for
from tests.kubelet.conftest import (
    Api,
    Node,
    Obj,
    allocated,
    cdi_specs,
    create_claim,
    create_pod,
    create_template,
    delete_pod,
    explain,
    pod_claim_name,
    printed,
)


def test_deleted_pod_unprepared_and_its_template_claim_deleted(cluster: Api, node: Node) -> None:
    """Deleting the pod: the driver unprepares the claim (its CDI specs go) and the claim made from
    the template is deleted."""
    create_template(cluster, "gone-dev")
    create_pod(cluster, "gone", template="gone-dev")
    printed(cluster, "gone")
    claim_name = pod_claim_name(cluster, "gone")
    claim = cluster.claim(claim_name)
    assert claim is not None
    uid = claim["metadata"]["uid"]
    assert cdi_specs(node, uid), f"no CDI spec for claim {claim_name} ({uid}) in {node.cdi}"
    delete_pod(cluster, "gone")
    wait_for(lambda: not cdi_specs(node, uid), timeout=60, interval=0.5,
             what=f"the driver removing the CDI specs of {claim_name}")
    driver_log = (node.logs / "dra-test-driver.log").read_text(errors="replace")
    assert any("NodeUnprepareResources" in line and uid in line for line in driver_log.splitlines()), \
        f"no NodeUnprepareResources for {uid} in {node.logs / 'dra-test-driver.log'}"
    wait_for(lambda: cluster.claim(claim_name) is None, timeout=60, interval=0.5,
             what=f"the template's claim {claim_name} deleted")


def test_deleted_pod_releases_its_named_claim(cluster: Api, node: Node) -> None:
    """Deleting the only pod of a named claim: unprepared, no longer reserved, deallocated; the claim stays."""
    create_claim(cluster, "kept")
    create_pod(cluster, "keeper", claim="kept")
    printed(cluster, "keeper")
    claim = cluster.claim("kept")
    assert claim is not None and claim["status"].get("allocation")
    uid = claim["metadata"]["uid"]
    delete_pod(cluster, "keeper")
    wait_for(lambda: not cdi_specs(node, uid), timeout=60, interval=0.5, what="the driver removing the CDI specs")

    def released() -> bool:
        status = (cluster.claim("kept") or {}).get("status") or {}
        return not status.get("reservedFor") and not status.get("allocation")
    wait_for(released, timeout=60, interval=0.5, what="claim kept unreserved and deallocated",
             extra=lambda: str(cluster.claim("kept")))


def test_noexecute_device_taint_evicts_the_running_pod(cluster: Api, node: Node) -> None:
    """A DeviceTaintRule with NoExecute on the device the pod's claim has: the running pod is evicted
    (deleted with a DisruptionTarget condition), the kubelet stops the container and the driver unprepares."""
    create_template(cluster, "tainted-dev")
    create_pod(cluster, "victim", template="tainted-dev")
    printed(cluster, "victim")
    claim = cluster.claim(pod_claim_name(cluster, "victim"))
    assert claim is not None
    ((_, driver, pool, device),) = allocated(claim)
    rule = f"evict-{device}"
    cluster.create("/apis/resource.k8s.io/v1/devicetaintrules", {
        "apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule", "metadata": {"name": rule},
        "spec": {"deviceSelector": {"driver": driver, "pool": pool, "device": device},
                 "taint": {"key": "example.com/broken", "value": "true", "effect": "NoExecute"}}})
    try:
        seen: list[Obj] = []

        def evicted() -> bool:
            pod = cluster.pod("victim")
            if pod is None:
                return True
            if pod["metadata"].get("deletionTimestamp"):
                seen[:] = [c for c in pod["status"].get("conditions") or [] if c["type"] == "DisruptionTarget"]
            return False
        wait_for(evicted, timeout=90, interval=0.5, what="pod victim evicted", extra=explain(cluster, "victim"))
        print(f"the eviction's condition: {seen}")
        wait_for(lambda: not cdi_specs(node, claim["metadata"]["uid"]), timeout=60, interval=0.5,
                 what="the driver removing the CDI specs")
    finally:
        cluster.request("DELETE", f"/apis/resource.k8s.io/v1/devicetaintrules/{rule}")

