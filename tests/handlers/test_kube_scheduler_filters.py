"""What kube-scheduler enforces besides devices, enforced by dralloc too, on the sandbox and a real cluster.

Replicas with a required pod anti-affinity on the hostname land on different nodes, in one
pass or across passes, in scheduler mode and gate mode (where a pinned node kube-scheduler
would refuse is a deadlock holding a GPU); replicas asking for one host port likewise; a
replica that fits nowhere says why in kube-scheduler's words.
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.handlers import helpers
from tests.handlers.conftest import Cluster, OperatorThread, operator_settings, real_mode, wait_for

from dralloc.scheduling import volumes
from dralloc.testing import cluster
from dralloc.testing.cluster import crds

GATE = "dralloc.io/allocate"
HOSTNAME = "kubernetes.io/hostname"


def replica(name: str, app: str, *, gate: bool = False, **spec: Any) -> dict[str, Any]:
    """A pod of app `app` with one GPU from the `one-gpu` template, `spec` merged into its spec."""
    pod = cluster.pod(name, template_name="one-gpu", scheduler=None if gate else "dralloc", gate=GATE if gate else None)
    pod["metadata"]["labels"] = {"app": app}
    pod["spec"].update(spec)
    return pod


def without_devices(pod: dict[str, Any]) -> None:
    """Drop the pod's claim (and its containers' use of it)."""
    pod["spec"].pop("resourceClaims", None)
    for container in pod["spec"]["containers"]:
        container.pop("resources", None)


def apart(app: str) -> dict[str, Any]:
    """Required anti-affinity: no two pods of `app` on one node."""
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": HOSTNAME}]}}


def seed_two_nodes(apiserver: Cluster) -> tuple[str, str]:
    node_a, node_b, gpu = apiserver.name("node-a"), apiserver.name("node-b"), apiserver.name("gpu")
    apiserver.seed([cluster.node(node_a), cluster.node(node_b), cluster.gpu_slice(node_a, 4),
                    cluster.gpu_slice(node_b, 4), cluster.gpu_class(gpu), cluster.template("one-gpu", device_class=gpu)])
    return node_a, node_b


def unschedulable_message(apiserver: Cluster, name: str) -> str | None:
    condition = helpers.condition(helpers.pod(apiserver, name), "PodScheduled")
    if condition is None or condition.get("reason") != "Unschedulable":
        return None
    return str(condition.get("message") or "")


def test_replicas_with_required_anti_affinity_land_on_different_nodes(apiserver: Cluster,
                                                                     operator: OperatorThread) -> None:
    """Three replicas, two nodes with room for all: two run apart, the third says why it waits."""
    node_a, node_b = seed_two_nodes(apiserver)
    apiserver.seed([replica(f"web-{i}", "web", affinity=apart("web")) for i in range(3)])
    wait_for(lambda: sum(1 for i in range(3) if helpers.node_of(apiserver, f"web-{i}")) == 2, what="two bound")
    placed = {helpers.node_of(apiserver, f"web-{i}") for i in range(3)} - {None}
    assert placed == {node_a, node_b}
    (waiting,) = [f"web-{i}" for i in range(3) if helpers.node_of(apiserver, f"web-{i}") is None]
    # Until the node lifecycle controller sees new nodes Ready, their not-ready taint is the first reason
    # (a real API server's TaintNodesByCondition): the message is rewritten when the pod is tried again.
    wait_for(lambda: "didn't match pod anti-affinity rules" in (unschedulable_message(apiserver, waiting) or ""),
             what="the third told why")


def test_a_replica_placed_in_an_earlier_pass_keeps_the_next_one_off_its_node(apiserver: Cluster,
                                                                             operator: OperatorThread) -> None:
    node_a, node_b = seed_two_nodes(apiserver)
    apiserver.seed([replica("web-0", "web", affinity=apart("web"))])
    first = wait_for(lambda: helpers.node_of(apiserver, "web-0"), what="first bound")
    apiserver.seed([replica("web-1", "web", affinity=apart("web"))])
    second = wait_for(lambda: helpers.node_of(apiserver, "web-1"), what="second bound")
    assert {first, second} == {node_a, node_b}


def test_replicas_asking_for_one_host_port_never_share_a_node(apiserver: Cluster, operator: OperatorThread) -> None:
    node_a, node_b = seed_two_nodes(apiserver)
    ports = [{"name": "main", "image": "busybox", "ports": [{"containerPort": 8080, "hostPort": 8080}]}]
    pods = []
    for i in range(3):
        pod = replica(f"proxy-{i}", "proxy")
        pod["spec"]["containers"] = [{**ports[0], "resources": pod["spec"]["containers"][0]["resources"]}]
        pods.append(pod)
    apiserver.seed(pods)
    wait_for(lambda: sum(1 for i in range(3) if helpers.node_of(apiserver, f"proxy-{i}")) == 2, what="two bound")
    assert {helpers.node_of(apiserver, f"proxy-{i}") for i in range(3)} - {None} == {node_a, node_b}
    (waiting,) = [f"proxy-{i}" for i in range(3) if helpers.node_of(apiserver, f"proxy-{i}") is None]
    # Until the node lifecycle controller sees new nodes Ready, their not-ready taint is the first reason
    # (a real API server's TaintNodesByCondition): the message is rewritten when the pod is tried again.
    wait_for(lambda: "didn't have free ports for the requested pod ports" in (unschedulable_message(apiserver, waiting) or ""),
             what="the third told why")


def pinned_node(apiserver: Cluster, name: str) -> str | None:
    """Where a gate-mode pod went: its node, or the hostname dralloc pinned it to once ungated."""
    pod = helpers.pod(apiserver, name)
    spec = pod.get("spec") or {}
    if spec.get("nodeName"):
        return str(spec["nodeName"])
    if any(g.get("name") == GATE for g in spec.get("schedulingGates") or []):
        return None
    return (spec.get("nodeSelector") or {}).get(HOSTNAME)


def test_gate_mode_never_pins_two_anti_affine_replicas_to_one_node(apiserver: Cluster,
                                                                    operator: OperatorThread) -> None:
    """Pinning both to one node would leave kube-scheduler refusing one forever, its GPU held."""
    node_a, node_b = seed_two_nodes(apiserver)
    apiserver.seed([replica(f"gated-{i}", "gated", gate=True, affinity=apart("gated")) for i in range(2)])
    wait_for(lambda: all(pinned_node(apiserver, f"gated-{i}") for i in range(2)), what="both pinned")
    assert {pinned_node(apiserver, f"gated-{i}") for i in range(2)} == {node_a, node_b}


def test_a_claim_dralloc_allocated_can_be_shared_by_a_pod_kube_scheduler_places(
        apiserver: Cluster, operator: OperatorThread, request: pytest.FixtureRequest) -> None:
    """dralloc writes `allocationTimestamp` as kube-scheduler does (1.37): kube-scheduler, reserving the
    claim for its own pod, would otherwise add it, and the API server refuses any change to a written
    allocation (that pod stayed in a SchedulerError loop). Binding the second pod needs kube-scheduler:
    on the real control plane only."""
    node_a, _ = seed_two_nodes(apiserver)
    gpu = apiserver.name("gpu")
    apiserver.seed([cluster.claim("shared", device_class=gpu), cluster.pod("first", claim_name="shared")])
    assert wait_for(lambda: helpers.node_of(apiserver, "first"), what="dralloc's pod bound") == node_a
    allocation = helpers.claim(apiserver, "shared")["status"]["allocation"]
    assert allocation.get("allocationTimestamp")
    if not real_mode(request.config):
        return
    apiserver.seed([cluster.pod("second", claim_name="shared", scheduler=None)])
    assert wait_for(lambda: helpers.node_of(apiserver, "second"), what="kube-scheduler's pod bound") == node_a


def test_a_pinned_pod_kube_scheduler_keeps_refusing_gives_its_devices_back(
        apiserver: Cluster, operator: OperatorThread) -> None:
    """Gate mode's safety net: the pod's scheduler refusing the pinned node (a plugin dralloc does not know, a
    race) must not hold a GPU for a pod that can never run there. The pod names a scheduler that does not
    run, so that nothing binds it on either cluster, and the test writes the refusal as kube-scheduler
    writes it."""
    seed_two_nodes(apiserver)
    apiserver.seed([replica("stuck", "stuck", gate=True, schedulerName="example.com/not-running")])
    node = wait_for(lambda: pinned_node(apiserver, "stuck"), what="pinned and ungated")
    (claim,) = helpers.claims(apiserver)
    assert claim["status"]["allocation"]
    long_ago = "2026-01-01T00:00:00Z"
    helpers.patch_pod_status(apiserver, "stuck", {"conditions": [{
        "type": "PodScheduled", "status": "False", "reason": "Unschedulable", "lastTransitionTime": long_ago,
        "message": "0/2 nodes are available: 1 node(s) had untolerated taint {example.com/custom: }."}]})
    name = claim["metadata"]["name"]
    wait_for(lambda: not (helpers.claim(apiserver, name).get("status") or {}).get("allocation"),
             what="the claim given back")
    (event,) = wait_for(lambda: helpers.events(apiserver, "GateRefused"), what="the GateRefused Event")
    assert f"kube-scheduler refuses node {node}" in event["note"]
    assert "delete the pod so its controller recreates it" in event["note"]


def test_a_pod_pinned_before_a_restart_is_still_given_back_when_refused(apiserver: Cluster) -> None:
    """The pin is written on the pod (dralloc.io/pinned-node): a dralloc process that starts after the pin
    (a restart, a new leader) adopts the pinned pod, and gives its devices back when its scheduler refuses
    it, as the process that pinned it would have."""
    apiserver.seed(crds())
    seed_two_nodes(apiserver)
    first = OperatorThread(operator_settings(apiserver)).start()
    try:
        apiserver.seed([replica("stuck", "stuck", gate=True, schedulerName="example.com/not-running")])
        node = wait_for(lambda: pinned_node(apiserver, "stuck"), what="pinned and ungated")
    finally:
        first.stop()
    assert helpers.pod(apiserver, "stuck")["metadata"]["annotations"]["dralloc.io/pinned-node"] == node
    (claim,) = helpers.claims(apiserver)
    helpers.patch_pod_status(apiserver, "stuck", {"conditions": [{
        "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
        "lastTransitionTime": "2026-01-01T00:00:00Z", "message": "0/2 nodes are available: 2 Insufficient cpu."}]})
    second = OperatorThread(operator_settings(apiserver)).start()
    try:
        name = claim["metadata"]["name"]
        wait_for(lambda: not (helpers.claim(apiserver, name).get("status") or {}).get("allocation"),
                 what="the claim given back by the new process")
        (event,) = wait_for(lambda: helpers.events(apiserver, "GateRefused"), what="the GateRefused Event")
        assert f"kube-scheduler refuses node {node}" in event["note"]
    finally:
        second.stop()


def test_a_tenants_own_pinned_node_annotation_adopts_nothing(apiserver: Cluster, operator: OperatorThread) -> None:
    """The annotation alone does nothing: an ungated pod of another scheduler, with no claim allocated for it,
    is not counted on the node it names (a replica that keeps apart from it still goes there)."""
    first, _ = seed_two_nodes(apiserver)
    forged = replica("forged", "web", schedulerName="example.com/not-running", nodeSelector={
        "kubernetes.io/hostname": first}, affinity=apart("web"))
    forged["metadata"]["annotations"] = {"dralloc.io/pinned-node": first}
    without_devices(forged)
    apiserver.seed([forged])
    apiserver.seed([replica("web-0", "web", nodeSelector={"kubernetes.io/hostname": first}, affinity=apart("web"))])
    assert wait_for(lambda: helpers.node_of(apiserver, "web-0"), what="web-0 bound") == first


def test_scheduler_mode_binds_a_waiting_volume_as_kube_scheduler_does(apiserver: Cluster,
                                                                      operator: OperatorThread) -> None:
    """A WaitForFirstConsumer claim whose only volume lives on node-b: dralloc picks node-b, gives the volume
    the claim (its claimRef, as kube-scheduler's VolumeBinding writes it), and binds the pod once the PV
    controller has bound the claim (kube-controller-manager's on the real control plane, the sandbox's
    emulation of it otherwise)."""
    _, node_b = seed_two_nodes(apiserver)
    local = apiserver.name("local")
    volume_name = apiserver.name("disk-b")
    apiserver.seed([
        {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": local},
         "provisioner": "kubernetes.io/no-provisioner", "volumeBindingMode": "WaitForFirstConsumer"},
        {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": volume_name},
         "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": local,
                  "local": {"path": "/mnt/disk"}, "nodeAffinity": {"required": {"nodeSelectorTerms": [
                      {"matchExpressions": [{"key": HOSTNAME, "operator": "In", "values": [node_b]}]}]}}}},
        {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"},
         "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": local,
                  "resources": {"requests": {"storage": "1Gi"}}}},
    ])
    apiserver.seed([replica("db", "db", volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}])])

    def claim_ref() -> dict[str, Any] | None:
        found = apiserver.get("v1", "PersistentVolume", volume_name) or {}
        return (found.get("spec") or {}).get("claimRef")

    ref = wait_for(claim_ref, what="the volume given the claim")
    assert (ref["namespace"], ref["name"]) == (apiserver.namespace, "data")
    assert wait_for(lambda: helpers.node_of(apiserver, "db"), what="the pod bound") == node_b


ZONE = "topology.kubernetes.io/zone"


def seed_two_zones(apiserver: Cluster) -> tuple[str, str]:
    """Two nodes with 4 GPUs each, in zones z1 and z2 (their names, the zone of each: its suffix)."""
    node_a, node_b, gpu = apiserver.name("node-a"), apiserver.name("node-b"), apiserver.name("gpu")
    apiserver.seed([cluster.node(node_a, labels={ZONE: apiserver.name("z1")}),
                    cluster.node(node_b, labels={ZONE: apiserver.name("z2")}),
                    cluster.gpu_slice(node_a, 4), cluster.gpu_slice(node_b, 4), cluster.gpu_class(gpu),
                    cluster.template("one-gpu", device_class=gpu)])
    return node_a, node_b


def test_replicas_spread_over_zones_as_their_constraint_asks(apiserver: Cluster, operator: OperatorThread) -> None:
    """PodTopologySpread, DoNotSchedule over zones with maxSkew 1: two replicas that would fit on one node
    (and would, under bin packing) take one zone each."""
    node_a, node_b = seed_two_zones(apiserver)
    spread = [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
               "labelSelector": {"matchLabels": {"app": "web"}}}]
    for i in range(2):
        apiserver.seed([replica(f"web-{i}", "web", topologySpreadConstraints=spread)])
        wait_for(lambda i=i: helpers.node_of(apiserver, f"web-{i}"), what=f"web-{i} bound")
    assert {helpers.node_of(apiserver, f"web-{i}") for i in range(2)} == {node_a, node_b}


def test_a_pod_goes_next_to_the_pod_its_required_affinity_names(apiserver: Cluster,
                                                                  operator: OperatorThread) -> None:
    """InterPodAffinity, required: with no pod to be near, the pod waits with kube-scheduler's reason; once
    one runs on node-b, the pod goes there, though node-a comes first by name."""
    _, node_b = seed_two_nodes(apiserver)
    near = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "cache"}}, "topologyKey": HOSTNAME}]}}
    apiserver.seed([replica("web", "web", affinity=near)])
    # Until the node lifecycle controller sees new nodes Ready, their not-ready taint is the first reason.
    wait_for(lambda: "node(s) didn't match pod affinity rules" in (unschedulable_message(apiserver, "web") or ""),
             what="web told why it waits")
    cache = replica("cache", "cache", nodeSelector={HOSTNAME: node_b})
    without_devices(cache)  # so that node-b holds no more devices than node-a: bin packing cannot tell them apart
    apiserver.seed([cache])
    wait_for(lambda: helpers.node_of(apiserver, "cache"), what="cache bound")
    assert wait_for(lambda: helpers.node_of(apiserver, "web"), what="web bound") == node_b


def _volume(name: str, claim: tuple[str, str], *, storage_class: str, modes: list[str],
            node: str | None = None, csi_driver: str | None = None) -> dict[str, Any]:
    """A pre-bound PersistentVolume: on `node` (a local volume), or a CSI volume of `csi_driver`."""
    spec: dict[str, Any] = {"capacity": {"storage": "1Gi"}, "accessModes": modes, "storageClassName": storage_class,
                            "claimRef": {"namespace": claim[0], "name": claim[1]}}
    if csi_driver is not None:
        spec["csi"] = {"driver": csi_driver, "volumeHandle": name}
    else:
        spec["local"] = {"path": "/mnt/disk"}
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": HOSTNAME, "operator": "In", "values": [node]}]}]}}
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name}, "spec": spec}


def _claim(name: str, volume: str, *, storage_class: str, modes: list[str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name},
            "spec": {"accessModes": modes, "storageClassName": storage_class, "volumeName": volume,
                     "resources": {"requests": {"storage": "1Gi"}}}}


def _uses(claim: str) -> dict[str, Any]:
    return {"volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]}


def _claim_bound(apiserver: Cluster, name: str) -> bool:
    found = apiserver.get("v1", "PersistentVolumeClaim", name, namespace=apiserver.namespace) or {}
    return (found.get("status") or {}).get("phase") == "Bound"


def test_a_pod_goes_where_its_bound_volume_lives(apiserver: Cluster, operator: OperatorThread) -> None:
    """VolumeBinding on a bound claim: the PV's node affinity names node-b, so the pod runs there."""
    _, node_b = seed_two_nodes(apiserver)
    volume, storage_class = apiserver.name("disk-b"), apiserver.name("manual")
    apiserver.seed([_volume(volume, (apiserver.namespace, "data"), storage_class=storage_class,
                            modes=["ReadWriteOnce"], node=node_b),
                    _claim("data", volume, storage_class=storage_class, modes=["ReadWriteOnce"])])
    wait_for(lambda: _claim_bound(apiserver, "data"), what="the claim bound to its volume")
    apiserver.seed([replica("db", "db", **_uses("data"))])
    assert wait_for(lambda: helpers.node_of(apiserver, "db"), what="db bound") == node_b


def test_a_read_write_once_pod_claim_admits_one_pod(apiserver: Cluster, operator: OperatorThread) -> None:
    """VolumeRestrictions: a second pod using a ReadWriteOncePod claim in use waits, with kube-scheduler's
    reason, and no device is allocated for it."""
    node_a, _ = seed_two_nodes(apiserver)
    volume, storage_class = apiserver.name("solo"), apiserver.name("manual")
    apiserver.seed([_volume(volume, (apiserver.namespace, "solo"), storage_class=storage_class,
                            modes=["ReadWriteOncePod"], node=node_a),
                    _claim("solo", volume, storage_class=storage_class, modes=["ReadWriteOncePod"])])
    wait_for(lambda: _claim_bound(apiserver, "solo"), what="the claim bound to its volume")
    apiserver.seed([replica("first", "db", **_uses("solo"))])
    assert wait_for(lambda: helpers.node_of(apiserver, "first"), what="the first pod bound") == node_a
    apiserver.seed([replica("second", "db", **_uses("solo"))])
    wait_for(lambda: volumes.READ_WRITE_ONCE_POD_CONFLICT in (unschedulable_message(apiserver, "second") or ""),
             what="the second told why")
    assert len([c for c in helpers.claims(apiserver) if (c.get("status") or {}).get("allocation")]) == 1


def test_a_node_at_its_csi_volume_limit_takes_no_more_volumes(apiserver: Cluster, operator: OperatorThread) -> None:
    """NodeVolumeLimits: node-a's CSINode allows no volume of the driver, so the pod with one goes to node-b,
    though node-a comes first by name."""
    node_a, node_b = seed_two_nodes(apiserver)
    driver, volume, storage_class = "csi.example.com", apiserver.name("vol"), apiserver.name("csi")
    apiserver.seed([
        {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": node_a},
         "spec": {"drivers": [{"name": driver, "nodeID": node_a, "allocatable": {"count": 0}}]}},
        {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": node_b},
         "spec": {"drivers": [{"name": driver, "nodeID": node_b, "allocatable": {"count": 4}}]}},
        _volume(volume, (apiserver.namespace, "data"), storage_class=storage_class, modes=["ReadWriteOnce"],
                csi_driver=driver),
        _claim("data", volume, storage_class=storage_class, modes=["ReadWriteOnce"])])
    wait_for(lambda: _claim_bound(apiserver, "data"), what="the claim bound to its volume")
    apiserver.seed([replica("db", "db", **_uses("data"))])
    assert wait_for(lambda: helpers.node_of(apiserver, "db"), what="db bound") == node_b


def test_a_claim_to_provision_goes_where_its_driver_has_room(apiserver: Cluster, operator: OperatorThread) -> None:
    """VolumeBinding's storage capacity: the claim's CSI driver publishes capacity, and only node-b's
    CSIStorageCapacity holds the claim's 5Gi, so dralloc gives the claim node-b for provisioning
    (`volume.kubernetes.io/selected-node`, as kube-scheduler writes it), though node-a comes first by name."""
    node_a, node_b = seed_two_nodes(apiserver)
    driver, storage_class = apiserver.name("csi.example.com"), apiserver.name("tracked")

    def room(node: str, size: str) -> dict[str, Any]:
        return {"apiVersion": "storage.k8s.io/v1", "kind": "CSIStorageCapacity",
                "metadata": {"name": apiserver.name(f"room-{size.lower()}")}, "storageClassName": storage_class,
                "nodeTopology": {"matchLabels": {HOSTNAME: node}}, "capacity": size}

    apiserver.seed([
        {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": driver},
         "spec": {"storageCapacity": True}},
        {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": storage_class},
         "provisioner": driver, "volumeBindingMode": "WaitForFirstConsumer"},
        room(node_a, "1Gi"), room(node_b, "10Gi"),
        {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"},
         "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": storage_class,
                  "resources": {"requests": {"storage": "5Gi"}}}},
    ])
    apiserver.seed([replica("db", "db", **_uses("data"))])

    def selected() -> str | None:
        found = apiserver.get("v1", "PersistentVolumeClaim", "data", namespace=apiserver.namespace) or {}
        return ((found.get("metadata") or {}).get("annotations") or {}).get("volume.kubernetes.io/selected-node")

    assert wait_for(selected, what="the claim given a node to be provisioned on") == node_b
