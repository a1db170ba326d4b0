"""DRANodeAllocatableResources: the node resources allocated devices map or cost count in node fit.

Semantics as kube-scheduler 1.37's DynamicResources plugin (nodeallocatabledynamicresources.go)
and component-helpers' pod requests: a CPU driver's cores map onto the node's cpu, a GPU's
host-memory overhead adds per pod and per referencing container; the pod's whole demand must
fit what the node has left; the status entries are what the scheduler writes on the pod.
"""

from __future__ import annotations

from typing import Any

from tests.scheduling.objects import node_

from dralloc.allocation.features import Features
from dralloc.allocation.snapshots import Snapshot
from dralloc.model import claims, classes, conversion, devices, pods
from dralloc.scheduling import nodeallocatable, nodefit, placement

ON = Features.from_gates({"DRANodeAllocatableResources": True})
OFF = Features()


def cpu_slice(node: str, cores: str = "16") -> dict[str, Any]:
    """A CPU driver's one device per node: its `cores` capacity is the node's cpu (2 per core)."""
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{node}-cpus"},
            "spec": {"driver": "cpu.example.com", "nodeName": node,
                     "pool": {"name": f"{node}-cpus", "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": "cpus", "allowMultipleAllocations": True,
                                  "capacity": {"cores": {"value": cores, "requestPolicy": {
                                      "default": "1", "validRange": {"min": "1", "step": "1"}}}},
                                  "nodeAllocatableResources": {"cpu": {"mapping": {
                                      "capacityKey": "cores", "capacityMultiplier": "2"}}}}]}}


def gpu_slice(node: str) -> dict[str, Any]:
    """Two GPUs that pin host memory: 1Gi per pod and 512Mi per container using them."""
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{node}-gpus"},
            "spec": {"driver": "gpu.example.com", "nodeName": node,
                     "pool": {"name": f"{node}-gpus", "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": f"gpu-{i}", "nodeAllocatableResources": {"memory": {"overhead": {
                         "perPod": "1Gi", "perContainer": "512Mi"}}}} for i in range(2)]}}


def device_class(name: str, driver: str) -> classes.DeviceClass:
    return conversion.parse_as(classes.DeviceClass, {
        "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]}})


def claim(name: str, device_class_name: str, *, capacity: dict[str, str] | None = None) -> claims.ResourceClaim:
    exactly: dict[str, Any] = {"deviceClassName": device_class_name, "allocationMode": "ExactCount", "count": 1}
    if capacity:
        exactly["capacity"] = {"requests": capacity}
    return conversion.parse_as(claims.ResourceClaim, {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {"devices": {"requests": [{"name": "r", "exactly": exactly}]}}})


def pod(name: str, entries: dict[str, str], *, cpu: str = "1", containers: int = 1,
        status: list[dict[str, Any]] | None = None, node_name: str | None = None) -> pods.Pod:
    raw: dict[str, Any] = {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {"containers": [{"name": f"c{i}", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"},
                                                                 "claims": [{"name": e} for e in entries]}}
                                for i in range(containers)],
                 "resourceClaims": [{"name": e, "resourceClaimName": c} for e, c in entries.items()]}}
    if node_name:
        raw["spec"]["nodeName"] = node_name
    if status:
        raw["status"] = {"nodeAllocatableResourceClaimStatuses": status}
    return conversion.parse_as(pods.Pod, raw)


def placer(features: Features, node_list: list[Any], *, bound: tuple[pods.Pod, ...] = ()) -> placement.Placer:
    names = [n.metadata.name for n in node_list]
    snapshot = Snapshot.build(
        device_classes=[device_class("cpu", "cpu.example.com"), device_class("gpu", "gpu.example.com")],
        resource_slices=[conversion.parse_as(devices.ResourceSlice, s)
                         for n in names for s in (cpu_slice(n), gpu_slice(n))],
        features=features)
    return placement.Placer(node_list=node_list, snapshot=snapshot, features=features, bound_pods=bound)


def test_mapped_cores_count_as_the_nodes_cpu() -> None:
    """6 cores x 2 = 12 cpu from the claim plus the pod's own 4 do not fit 8 cpu: node-a is refused
    with kube-scheduler's words; node-b (32 cpu) takes the pod, and the status entry says why."""
    cpus = claim("cpus", "cpu", capacity={"cores": "6"})
    item = placement.Item("p", claims=(cpus,), pod=pod("p", {"cpus": "cpus"}, cpu="4"))
    nodes_ = [node_("node-a", cpu="8", memory="64Gi"), node_("node-b", cpu="32", memory="64Gi")]
    placed = placer(ON, nodes_).place(item)
    assert isinstance(placed, placement.Placement) and placed.node == "node-b"
    assert placed.node_allocatable == ({"resourceClaimName": "cpus", "containers": ["c0"],
                                         "mapping": [{"name": "cpu", "quantity": "12"}]},)
    refused = placer(ON, nodes_[:1]).place(item)
    assert isinstance(refused, placement.NoPlacement)
    assert refused.reasons == (("Insufficient cpu (the pod's requests plus its devices' nodeAllocatableResources)",
                                ("node-a",)),)


def test_with_the_gate_off_device_node_resources_are_ignored() -> None:
    cpus = claim("cpus", "cpu", capacity={"cores": "6"})
    item = placement.Item("p", claims=(cpus,), pod=pod("p", {"cpus": "cpus"}, cpu="4"))
    placed = placer(OFF, [node_("node-a", cpu="8", memory="64Gi")]).place(item)
    assert isinstance(placed, placement.Placement) and placed.node_allocatable == ()


def test_overhead_adds_per_pod_and_per_referencing_container() -> None:
    """One GPU pins 1Gi for the pod and 512Mi for each of the 3 containers naming its claim:
    2.5Gi on top of the containers' 3 x 1Gi."""
    gpu = claim("gpu", "gpu")
    item = placement.Item("p", claims=(gpu,), pod=pod("p", {"gpu": "gpu"}, containers=3))
    placed = placer(ON, [node_("node-a", cpu="8", memory="64Gi")]).place(item)
    assert isinstance(placed, placement.Placement)
    (status,) = placed.node_allocatable
    assert status == {"resourceClaimName": "gpu", "containers": ["c0", "c1", "c2"],
                      "overhead": [{"name": "memory", "perPod": "1Gi", "perContainer": "512Mi"}]}
    assert nodeallocatable.status_demand(placed.node_allocatable) == {"memory": (1024 + 3 * 512) * 2**20 * 10**9}
    # 5.5Gi is exactly what a 5.5Gi node has: it fits; 5Gi does not.
    assert isinstance(placer(ON, [node_("n", cpu="8", memory="5632Mi")]).place(item), placement.Placement)
    tight = placer(ON, [node_("n", cpu="8", memory="5Gi")]).place(item)
    assert isinstance(tight, placement.NoPlacement) and tight.reasons[0][0].startswith("Insufficient memory")


def test_bound_pods_count_with_their_status_entries() -> None:
    """A bound pod's recorded mapping (12 cpu) fills node-a for the next pod asking 4 cpu with no devices."""
    running = pod("running", {}, cpu="1", node_name="node-a",
                  status=[{"resourceClaimName": "old", "mapping": [{"name": "cpu", "quantity": "12"}]}])
    assert nodefit.bound_pod_requests(running)["cpu"] == 13 * 10**9
    nodes_ = [node_("node-a", cpu="16", memory="64Gi"), node_("node-b", cpu="16", memory="64Gi")]
    item = placement.Item("next", pod=pod("next", {}, cpu="4"))
    placed = placer(ON, nodes_, bound=(running,)).place(item)
    assert isinstance(placed, placement.Placement) and placed.node == "node-b"


def test_commit_counts_the_mapping_on_the_node() -> None:
    """After one pod took 12 cpu through its claim (plus 1 of its own), a second pod asking 2 cores
    (4 cpu, plus 1) no longer fits the node's 16; one asking 1 core (2 + 1) still does."""
    nodes_ = [node_("node-a", cpu="16", memory="64Gi")]
    view = placer(ON, nodes_)
    first = placement.Item("p1", claims=(claim("c1", "cpu", capacity={"cores": "6"}),),
                           pod=pod("p1", {"cpus": "c1"}))
    decided = view.place(first)
    assert isinstance(decided, placement.Placement)
    view.commit(first, decided)
    second = placement.Item("p2", claims=(claim("c2", "cpu", capacity={"cores": "2"}),),
                            pod=pod("p2", {"cpus": "c2"}))
    assert isinstance(view.place(second), placement.NoPlacement)
    third = placement.Item("p3", claims=(claim("c3", "cpu", capacity={"cores": "1"}),),
                           pod=pod("p3", {"cpus": "c3"}))
    assert isinstance(view.place(third), placement.Placement)


def test_a_claim_with_a_mapped_device_is_not_shared_across_pods() -> None:
    """An allocated claim whose device maps cpu, reserved for another pod, refuses a second pod."""
    shared = conversion.parse_as(claims.ResourceClaim, {
        **conversion.to_raw(claim("cpus", "cpu", capacity={"cores": "2"})),
        "status": {"allocation": {"devices": {"results": [{
            "request": "r", "driver": "cpu.example.com", "pool": "node-a-cpus", "device": "cpus",
            "consumedCapacity": {"cores": "2"}}]}},
            "reservedFor": [{"resource": "pods", "name": "owner", "uid": "uid-owner"}]}})
    item = placement.Item("p", pod=pod("p", {"cpus": "cpus"}), allocated=(shared,))
    view = placer(ON, [node_("node-a", cpu="16", memory="64Gi")])
    statuses, refused = view.node_allocatable(item, 0, ())
    assert statuses == ()
    assert refused == "node allocatable resource claim cpus has a mapped device and cannot be shared across pods"


def test_a_mapping_on_a_capacity_the_allocation_did_not_consume_is_an_error() -> None:
    """capacityKey set, no consumedCapacity in the result: upstream's message, naming claim and device."""
    result = conversion.parse_as(claims.DeviceRequestAllocationResult, {
        "request": "r", "driver": "cpu.example.com", "pool": "p", "device": "cpus"})
    device = conversion.parse_as(devices.Device, cpu_slice("n")["spec"]["devices"][0])
    try:
        nodeallocatable.claim_footprint("default/c", [result], lambda *_: device)
    except nodeallocatable.NodeAllocatableError as exc:
        assert str(exc) == ("claim default/c, device cpus: ConsumedCapacity is nil, but Capacity key 'cores' is set "
                            "in NodeAllocatableResources for resource cpu")
    else:
        raise AssertionError("no error")
