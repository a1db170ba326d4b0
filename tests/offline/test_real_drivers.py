"""`dralloc simulate` and `allocate` on objects real DRA drivers publish (issue 17).

Inputs in `data/real-drivers/`, each file's header naming the driver's public repository it comes from:
`gb200-oke.yaml` (an OCI GB200 node: 4 GPUs of gpu.nvidia.com and 2 NICs of dra.net, both drivers'
pools named 10.140.65.248), `nvidia-deviceclasses.yaml` (the NVIDIA chart's classes: gpu.nvidia.com
with extendedResourceName nvidia.com/gpu, compute-domain-default-channel.nvidia.com),
`example-driver-partitions-2x4.yaml` (dra-example-driver, 2 GPUs each with a full device and 4
partitions on shared counters; extendedResourceName example.com/gpu), `example-driver-shared-2.yaml`
(2 GPUs with consumable capacity) and `oke-1nic-aligned.yaml` (DRANET's GPU + NIC claim). Workloads
are written inline, after the demos in the same repositories (e.g. dra-driver-nvidia-gpu's demo/specs/).
"""

from __future__ import annotations

import pathlib
from typing import Any

import pytest
from tests.builders import claim, class_, device, slice_
from tests.builders import snapshot as build_snapshot
from tests.offline.conftest import Invoke
from tests.offline.files import DATA, documents

from dralloc import allocation
from dralloc.allocation.features import Features
from dralloc.allocation.pools import NodeView
from dralloc.model import conversion
from dralloc.scheduling import placement

REAL = DATA / "real-drivers"
GB200 = str(REAL / "gb200-oke.yaml")
NVIDIA_CLASSES = str(REAL / "nvidia-deviceclasses.yaml")
PARTITIONS = str(REAL / "example-driver-partitions-2x4.yaml")
SHARED = str(REAL / "example-driver-shared-2.yaml")
NIC_CLAIM = str(REAL / "oke-1nic-aligned.yaml")
GB200_NODE = "10.140.65.248"
EXAMPLE_NODE = "dra-example-driver-cluster-worker"
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


def pod(name: str, *, limits: dict[str, Any] | None = None, requests: dict[str, Any] | None = None,
        namespace: str = "demo", claims: list[dict[str, str]] | None = None) -> dict[str, Any]:
    """A demo Pod as the drivers write them (workloads/nvidia-extended-gpu-full.yaml: limits only)."""
    resources: dict[str, Any] = {}
    if limits:
        resources["limits"] = limits
    if requests:
        resources["requests"] = requests
    spec: dict[str, Any] = {"containers": [{"name": "ctr", "image": "ubuntu:22.04", "resources": resources}],
                            "tolerations": [GPU_TOLERATION]}
    if claims:
        spec["resourceClaims"] = claims
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace}, "spec": spec}


# workloads/nvidia-gpu-test1.yaml's template and pod spec (namespace gpu-test1)
SINGLE_GPU = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
              "metadata": {"namespace": "gpu-test1", "name": "single-gpu"},
              "spec": {"spec": {"devices": {"requests": [{"name": "gpu",
                                                          "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}}}}
POD_TEMPLATE = {"metadata": {"labels": {"app": "pod"}},
                "spec": {"containers": [{"name": "ctr", "image": "ubuntu:22.04",
                                         "resources": {"claims": [{"name": "gpu"}]}}],
                         "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "single-gpu"}],
                         "tolerations": [GPU_TOLERATION]}}


def controller(kind: str, name: str, spec: dict[str, Any], api_version: str = "apps/v1") -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind, "metadata": {"namespace": "gpu-test1", "name": name},
            "spec": spec}


def simulate(dralloc: Invoke, tmp_path: pathlib.Path, snapshot: list[str], workload: list[Any],
             *argv: str) -> tuple[int, dict[str, Any], list[str], str]:
    """Exit code, JSON report, placements-out lines and stderr."""
    out = tmp_path / "placed.txt"
    files = [arg for path in snapshot for arg in ("-f", path)]
    work = documents(tmp_path / "workload.yaml", workload)
    run = dralloc("simulate", *files, "--workload", work, "--placements-out", str(out), "-o", "json", *argv)
    lines = out.read_text().splitlines() if out.exists() else []
    return run.code, run.json() if run.out else {}, lines, run.err


class TestExtendedResources:
    def test_nvidia_gpu_limit_is_served_by_the_class_that_names_it(self, dralloc: Invoke,
                                                                   tmp_path: pathlib.Path) -> None:
        """`nvidia.com/gpu: 1` in limits (the NVIDIA demo, no resourceClaims) gets one GB200 through
        gpu.nvidia.com's extendedResourceName, as the operator's extended-resource claim would."""
        code, report, lines, _ = simulate(dralloc, tmp_path, [GB200, NVIDIA_CLASSES],
                                          [pod("gpu-full-pod", limits={"nvidia.com/gpu": 1})])
        assert code == 0
        assert lines == [f"gpu-full-pod {GB200_NODE} container-0-request-0=gpu.nvidia.com/{GB200_NODE}/gpu-0"]
        assert report["utilization"]["classes"]["gpu.nvidia.com"]["inUse"] == 1

    def test_implicit_class_resource_name_and_count(self, dralloc: Invoke, tmp_path: pathlib.Path) -> None:
        """`deviceclass.resource.kubernetes.io/<class>` (dra-example-driver's pod0) and a count of 2 in requests."""
        code, _, lines, _ = simulate(dralloc, tmp_path, [PARTITIONS], [
            pod("pod0", limits={"deviceclass.resource.kubernetes.io/gpu.example.com": 1}),
            pod("pod1", requests={"example.com/gpu": 2}),
        ])
        assert code == 0
        assert lines == [
            f"pod0 {EXAMPLE_NODE} container-0-request-0=gpu.example.com/{EXAMPLE_NODE}/gpu-0-partition-0",
            f"pod1 {EXAMPLE_NODE} container-0-request-0=gpu.example.com/{EXAMPLE_NODE}/gpu-0-partition-1 "
            f"container-0-request-0=gpu.example.com/{EXAMPLE_NODE}/gpu-0-partition-2",
        ]

    def test_more_than_the_node_has_is_unplaced(self, dralloc: Invoke, tmp_path: pathlib.Path) -> None:
        """Five GB200s on a 4-GPU node do not fit, and the reason names the extended-resource claim."""
        code, report, lines, _ = simulate(dralloc, tmp_path, [GB200, NVIDIA_CLASSES],
                                          [pod("big", limits={"nvidia.com/gpu": 5})])
        assert (code, lines) == (1, [])
        assert "claim demo/big-extended-resources, request container-0-request-0" in report["unplaced"][0]["reason"]

    def test_resource_no_class_names_is_insufficient(self, dralloc: Invoke, tmp_path: pathlib.Path) -> None:
        """A resource no DeviceClass names and the node does not advertise is refused, as kube-scheduler's
        NodeResourcesFit does, never placed without devices."""
        code, report, lines, _ = simulate(dralloc, tmp_path, [GB200, NVIDIA_CLASSES],
                                          [pod("typo", limits={"nvidia.com/gpus": 1})])
        assert (code, lines) == (1, [])
        assert report["unplaced"] == [{"name": "typo", "reason": (
            f"{GB200_NODE}: Insufficient nvidia.com/gpus (the node does not advertise it in status.allocatable "
            "and no DeviceClass names it in spec.extendedResourceName)")}]

    def test_resource_the_node_advertises_is_checked_against_allocatable(self, dralloc: Invoke,
                                                                         tmp_path: pathlib.Path) -> None:
        """A device-plugin resource in the Node's status.allocatable fits up to that amount, without devices."""
        node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "fpga-node"},
                "status": {"allocatable": {"example.com/fpga": "1", "pods": "110"}}}
        snapshot = documents(tmp_path / "s.yaml", [node])
        code, report, lines, _ = simulate(dralloc, tmp_path, [snapshot],
                                          [pod("a", limits={"example.com/fpga": 1}),
                                           pod("b", limits={"example.com/fpga": 1})])
        assert (code, lines) == (1, ["a fpga-node"])
        assert report["unplaced"][0]["reason"] == "fpga-node: Insufficient example.com/fpga"

    def test_the_operator_placer_refuses_the_same(self) -> None:
        """The refusal is the operator's: its Placer (shared with simulate) rejects the node alike."""
        node = conversion.parse({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}})
        placer = placement.Placer(node_list=[node], snapshot=build_snapshot(), features=Features())
        item = placement.Item(name="p", pod=conversion.parse(pod("p", requests={"nvidia.com/gpus": 1})))
        assert placer.misfit(item, 0) == ("Insufficient nvidia.com/gpus (the node does not advertise it in "
                                          "status.allocatable and no DeviceClass names it in "
                                          "spec.extendedResourceName)")


class TestWorkloadControllers:
    def test_deployment_replicas_get_their_own_template_claims(self, dralloc: Invoke,
                                                               tmp_path: pathlib.Path) -> None:
        """A Deployment of 3 with nvidia-gpu-test1's template: pods <name>-0..2, one GB200 each."""
        code, report, lines, _ = simulate(dralloc, tmp_path, [GB200, NVIDIA_CLASSES], [
            SINGLE_GPU, controller("Deployment", "pod", {"replicas": 3, "template": POD_TEMPLATE})])
        assert (code, report["items"], report["placed"]) == (0, 3, 3)
        assert lines == [f"pod-{i} {GB200_NODE} gpu=gpu.nvidia.com/{GB200_NODE}/gpu-{i}" for i in range(3)]

    @pytest.mark.parametrize(("kind", "spec", "names"), [
        ("StatefulSet", {"replicas": 2}, ["ss-0", "ss-1"]),
        ("ReplicaSet", {}, ["rs-0"]),
        ("Job", {"parallelism": 3, "completions": 2}, ["job-0", "job-1"]),
        ("Job", {"parallelism": 2}, ["job-0", "job-1"]),
    ], ids=["statefulset-replicas", "replicaset-default-one", "job-min-of-parallelism-and-completions",
            "job-parallelism-without-completions"])
    def test_controller_pod_count_and_names(self, dralloc: Invoke, tmp_path: pathlib.Path, kind: str,
                                            spec: dict[str, Any], names: list[str]) -> None:
        name = {"StatefulSet": "ss", "ReplicaSet": "rs", "Job": "job"}[kind]
        api = "batch/v1" if kind == "Job" else "apps/v1"
        code, _, lines, _ = simulate(dralloc, tmp_path, [GB200, NVIDIA_CLASSES], [
            SINGLE_GPU, controller(kind, name, {**spec, "template": POD_TEMPLATE}, api)])
        assert code == 0
        assert [line.split()[0] for line in lines] == names

    def test_jobset_expands_replicated_jobs(self, dralloc: Invoke, tmp_path: pathlib.Path) -> None:
        """A JobSet: replicas Jobs of each replicatedJob, each with its pods: <jobset>-<job>-<j>-<i>."""
        jobset = controller("JobSet", "train", {"replicatedJobs": [
            {"name": "workers", "replicas": 2, "template": {"spec": {"parallelism": 2, "template": POD_TEMPLATE}}},
        ]}, "jobset.x-k8s.io/v1alpha2")
        code, report, lines, _ = simulate(dralloc, tmp_path, [GB200, NVIDIA_CLASSES], [SINGLE_GPU, jobset])
        assert (code, report["placed"]) == (0, 4)
        assert [line.split()[0] for line in lines] == [
            "train-workers-0-0", "train-workers-0-1", "train-workers-1-0", "train-workers-1-1"]

    def test_too_many_replicas_are_reported_unplaced(self, dralloc: Invoke, tmp_path: pathlib.Path) -> None:
        """Five replicas on four GPUs: the fifth is unplaced with the allocator's reason."""
        code, report, _, _ = simulate(dralloc, tmp_path, [GB200, NVIDIA_CLASSES], [
            SINGLE_GPU, controller("Deployment", "pod", {"replicas": 5, "template": POD_TEMPLATE})])
        assert (code, report["placed"], [u["name"] for u in report["unplaced"]]) == (1, 4, ["pod-4"])

    def test_owned_replicaset_is_left_to_its_deployment(self, dralloc: Invoke, tmp_path: pathlib.Path) -> None:
        """`kubectl get deploy,rs -o yaml` lists both: the ReplicaSet is not placed again, and stderr says so."""
        owned = controller("ReplicaSet", "pod-7d9f", {"replicas": 2, "template": POD_TEMPLATE})
        owned["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "pod",
                                                 "uid": "u1", "controller": True}]
        code, report, _, err = simulate(dralloc, tmp_path, [GB200, NVIDIA_CLASSES], [
            SINGLE_GPU, controller("Deployment", "pod", {"replicas": 2, "template": POD_TEMPLATE}), owned])
        assert (code, report["items"]) == (0, 2)
        assert "not placed, of kinds simulate does not read: 1 ReplicaSet (owned by a controller)" in err

    @pytest.mark.parametrize(("obj", "message"), [
        (controller("DaemonSet", "agent", {"template": POD_TEMPLATE}),
         "DaemonSet gpu-test1/agent: kind: not supported by simulate --workload: a DaemonSet runs one Pod per "
         "eligible node"),
        (controller("CronJob", "nightly", {}, "batch/v1"),
         "CronJob gpu-test1/nightly: kind: not supported by simulate --workload: a CronJob makes Jobs on a "
         "schedule; put its spec.jobTemplate in the file as a Job"),
        (controller("Deployment", "pod", {"replicas": "3", "template": POD_TEMPLATE}),
         "Deployment gpu-test1/pod: spec.replicas: expected a non-negative integer, got '3'"),
        (controller("Deployment", "pod", {"replicas": 1}),
         "Deployment gpu-test1/pod: spec.template: required for simulate to make its Pods"),
        (controller("Job", "job", {"template": {"spec": {"containers": "ctr"}}}, "batch/v1"),
         "Job gpu-test1/job: spec.template.spec.containers:"),
    ], ids=["daemonset-refused", "cronjob-refused", "replicas-not-an-integer", "no-template",
            "malformed-template-at-its-field"])
    def test_refused_and_malformed_controllers_name_object_and_field(
            self, dralloc: Invoke, tmp_path: pathlib.Path, obj: dict[str, Any], message: str) -> None:
        code, report, _, err = simulate(dralloc, tmp_path, [GB200, NVIDIA_CLASSES], [SINGLE_GPU, obj])
        assert (code, report) == (2, {})
        assert err.startswith("error: ") and message in err, err

    def test_zero_replicas_is_nothing_to_place(self, dralloc: Invoke, tmp_path: pathlib.Path) -> None:
        """A Deployment scaled to 0 makes no Pods; with nothing else the workload is an input error."""
        code, _, _, err = simulate(dralloc, tmp_path, [GB200, NVIDIA_CLASSES], [
            controller("Deployment", "pod", {"replicas": 0, "template": POD_TEMPLATE})])
        assert code == 2 and "nothing to place" in err


class TestUtilization:
    FULL = {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com", "selectors": [
        {"cel": {"expression": "has(device.attributes['gpu.example.com'].full)"}}]}}  # claims/d/full-gpus-x8-...

    def full_gpu_claims(self, count: int) -> list[dict[str, Any]]:
        return [{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                 "metadata": {"namespace": "parts", "name": f"full-{i}"},
                 "spec": {"devices": {"requests": [self.FULL]}}} for i in range(count)]

    def test_full_gpus_use_every_counter(self, dralloc: Invoke, tmp_path: pathlib.Path) -> None:
        """Both full GPUs in use: 2 of 10 devices (20 %), but all of the shared counters (100 %)."""
        code, report, _, _ = simulate(dralloc, tmp_path, [PARTITIONS], self.full_gpu_claims(2))
        assert code == 0
        use = {"devices": 10, "inUse": 2, "percent": 20.0,
               "counters": {"compute": {"total": "200", "inUse": "200", "percent": 100.0},
                            "memory": {"total": "160Gi", "inUse": "160Gi", "percent": 100.0}},
               "capacity": {}}
        assert report["utilization"] == {"classes": {"gpu.example.com": use},
                                         "pools": {f"gpu.example.com/{EXAMPLE_NODE}": use}}

    def test_table_shows_counters_next_to_devices(self, dralloc: Invoke, tmp_path: pathlib.Path) -> None:
        work = documents(tmp_path / "w.yaml", self.full_gpu_claims(1))
        run = dralloc("simulate", "-f", PARTITIONS, "--workload", work)
        assert ("  gpu.example.com   1 / 10 devices in use  (10%); counters compute 100/200 (50%), "
                "memory 80Gi/160Gi (50%)") in run.out.splitlines()

    def test_consumable_capacity_shares(self, dralloc: Invoke, tmp_path: pathlib.Path) -> None:
        """Shares of allowMultipleAllocations GPUs (claims/d/gpu-allow-multiple-allocations-x11.yaml: 20
        compute and 16Gi each): 6 shares use 120 of 200 compute and 96Gi of 160Gi; both devices in use."""
        claims = [{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                   "metadata": {"namespace": "shared", "name": f"shared-gpu-pod{i}"},
                   "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                       "deviceClassName": "gpu.example.com",
                       "capacity": {"requests": {"compute": "20", "memory": "16Gi"}}}}]}}} for i in range(6)]
        code, report, _, _ = simulate(dralloc, tmp_path, [SHARED], claims)
        assert code == 0
        assert report["utilization"]["classes"]["gpu.example.com"] == {
            "devices": 2, "inUse": 2, "percent": 100.0, "counters": {},
            "capacity": {"compute": {"total": "200", "inUse": "120", "percent": 60.0},
                         "memory": {"total": "160Gi", "inUse": "96Gi", "percent": 60.0}}}


class TestPlacementsOut:
    def test_driver_tells_pools_of_one_name_apart(self, dralloc: Invoke, tmp_path: pathlib.Path) -> None:
        """DRANET's GPU + NIC claim on GB200: both pools are named after the node; the line names the drivers."""
        out = tmp_path / "placed.txt"
        run = dralloc("simulate", "-f", GB200, "-f", NVIDIA_CLASSES, "-f", NIC_CLAIM, "--placements-out", str(out))
        assert run.code == 0, run.err
        assert out.read_text() == (f"1nic-aligned {GB200_NODE} gpu=gpu.nvidia.com/{GB200_NODE}/gpu-0 "
                                   f"nic=dra.net/{GB200_NODE}/pci-0000-03-00-0\n")


def _distinct_claim(tmp_path: pathlib.Path) -> tuple[str, int]:
    """16 GPUs on 4 NUMA nodes, 5 with distinct NUMA: impossible, and a long search; the file and the
    steps the allocator takes with a budget of 500."""
    devices = [device(f"gpu-{i}").attr("numa", i % 4) for i in range(16)]
    gpu = class_("gpu", 'device.driver == "gpu.example.com"')
    slices = slice_("s", pool="node-a", node="node-a", devices=devices)
    wanted = claim("five").request("gpu", "gpu", count=5).constraint_distinct("gpu.example.com/numa")
    outcome = allocation.allocate(build_snapshot(classes=[gpu], slices=[slices]), [wanted.build()],
                                  NodeView("node-a", {}), features=Features(), budget=500, explain=False)
    assert outcome.status == "budget-exhausted"
    return documents(tmp_path / "c.yaml", [gpu, slices, wanted]), outcome.steps  # type: ignore[union-attr]


class TestBudget:
    def test_allocate_states_the_budget_and_the_steps(self, dralloc: Invoke, tmp_path: pathlib.Path) -> None:
        path, steps = _distinct_claim(tmp_path)
        run = dralloc("allocate", "-f", path, "--budget", "500", "-o", "json")
        assert run.code == 1
        assert run.json()["reasons"] == [{"node": "node-a", "message": (
            f"no decision within the search budget (500 steps per node, --budget): the search stopped after "
            f"{steps:,} steps; the claims may fit with a larger --budget")}]

    def test_simulate_says_it_alike(self, dralloc: Invoke, tmp_path: pathlib.Path) -> None:
        path, steps = _distinct_claim(tmp_path)
        run = dralloc("simulate", "-f", path, "--budget", "500", "-o", "json")
        assert run.code == 1
        reason = run.json()["unplaced"][0]["reason"]
        assert reason == (f"node-a: no decision within the search budget (500 steps per node, --budget): the "
                          f"search stopped after {steps:,} steps; the claims may fit with a larger --budget")
        assert "retry" not in reason


class TestTableColumns:
    def test_long_class_names_keep_columns_aligned(self, dralloc: Invoke) -> None:
        """compute-domain-default-channel.nvidia.com is wider than any fixed column: every row's numbers
        start where the header's do."""
        run = dralloc("simulate", "-f", GB200, "-f", NVIDIA_CLASSES, "-f", NIC_CLAIM)
        lines = run.out.splitlines()
        start = lines.index("nodes that can still take N devices of a class:") + 1
        rows = lines[start:]
        assert rows[0].split()[0] == "class" and any("compute-domain-default-channel" in r for r in rows)
        assert len({len(r) for r in rows}) == 1, rows  # numbers right-aligned under N=1 ... N=8
        utilization = lines[lines.index("utilization per class:") + 1:lines.index("utilization per pool:") - 1]
        assert len({r.index(" / ") for r in utilization}) == 1, utilization

    def test_allocate_table_sized_to_claim_and_request(self, dralloc: Invoke) -> None:
        run = dralloc("allocate", "-f", GB200, "-f", NVIDIA_CLASSES, "-f", NIC_CLAIM)
        assert run.out.splitlines() == [
            f"STATUS: allocated  NODE: {GB200_NODE}",
            f"  oke/1nic-aligned  gpu  gpu.nvidia.com/{GB200_NODE}/gpu-0",
            f"  oke/1nic-aligned  nic  dra.net/{GB200_NODE}/pci-0000-03-00-0",
        ]
