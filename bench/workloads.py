"""The five allocator workloads W1-W5 (shapes of kube-scheduler's scheduler_perf DRA tests).

As a script it is the generator of bench/vs_upstream.py and of the oracle's first-fit runs:

  .venv/bin/python bench/workloads.py OUTDIR [W ...]    (W: w1 w2 w3 w4 w5; default: all)

For each workload it writes OUTDIR/<name>/ with
  deviceclasses.yaml   resource.k8s.io/v1 DeviceClass documents
  nodes.yaml           v1 Node documents, in the order nodes are tried (name order)
  resourceslices.yaml  resource.k8s.io/v1 ResourceSlice documents
  resourceclaims.yaml  resource.k8s.io/v1 ResourceClaim documents, in the order they are
                       placed (name order); claims that already carry status.allocation are
                       pre-existing state, not work
  protocol.yaml        how a run proceeds, what to report, and the expected counts
All files are multi-document YAML ("---" separated). Output is deterministic.

As a module it gives bench/simulate.py the same objects in process: WORKLOADS[name]() is
(nodes, device classes, slices, allocated claims, claims to place) as API JSON.

Workloads (driver test-driver.cdi.k8s.io, pool name = node name, generation 1):
  w1-fill          500 nodes x 10 devices (gpu-0..gpu-9, numa 0 for 0-4 and 1 for 5-9),
                   class "gpu", 5,000 claims of one ExactCount/count 1 request "gpu"
  w2-cel           as w1, each request with a CEL selector on model and memory
  w3-match         same cluster, 2,500 claims with requests r0, r1 (count 1 each) and
                   matchAttribute test-driver.cdi.k8s.io/numa over both (2,000 fit)
  w4-partitionable 100 nodes x 8 GPUs; per node one counters slice (8 counter sets
                   gpu-N-counters, memory 80Gi) and one devices slice (per GPU one full
                   device + 7 partitions of 10Gi = 64 devices); 5,000 claims for one
                   "1g.10gb" partition via class "gpu-1g10gb"
  w5-pathological  1 node x 32 devices (numa alternates 0,1,...), gpu-0 in use by an
                   allocated claim, one claim for count 32 with matchAttribute numa: no solution

The fill protocol (w1-w4) and the single-call protocol (w5) are spelled out in each
protocol.yaml ("procedure"); tests/offline/test_workloads_generator.py checks its counts.
"""

from __future__ import annotations

import dataclasses
import pathlib
import sys
from collections.abc import Callable, Sequence
from typing import Any

import clusters
import yaml

Object = dict[str, Any]
Objects = list[Object]
# nodes, device classes, slices, claims (the allocated ones carry status.allocation)
Cluster = tuple[Objects, Objects, Objects, Objects]
InProcess = tuple[Objects, Objects, Objects, Objects, Objects]

DRIVER = clusters.DRIVER
GPU_CLASS = clusters.device_class("gpu", f'device.driver == "{DRIVER}"')

# Upstream's allocator (release-1.36, Go) on the authors' machines (2 cores), as measured
# on these workloads: placements per second at GOMAXPROCS=1 and =2 (w5: milliseconds for
# its single call). bench/simulate.py prints its ratios against them.
UPSTREAM = {
    "w1-fill": (399.0, 496.0),
    "w2-cel": (376.0, 493.0),
    "w3-match": (42.0, 56.0),
    "w4-partitionable": (6.8, 8.4),
    "w5-pathological": (386.0, 322.0),
}

# The feature gates protocol.yaml names: both sides run with exactly these on and off, so that
# neither is measured with a feature the other lacks.
GATES_ON = [
    "DRAAdminAccess", "DRAPrioritizedList", "DRAPartitionableDevices", "DRADeviceTaints",
    "DRAConsumableCapacity", "DRADeviceBindingConditions", "DRAResourceClaimDeviceStatus",
]
GATES_OFF = ["DRAListTypeAttributes"]

# The protocols are prose on purpose: the oracle (Go) and dralloc each implement them, and a
# reader of protocol.yaml needs no code to know what a number in a report means.
FILL_PROCEDURE = [
    "Load all objects. Build the allocated state from claims that have status.allocation "
    "(same rule as kube-scheduler: for each result skip adminAccess: true; if shareID is set "
    "the device is shared (its consumedCapacity is added up per device); otherwise the device "
    "driver/pool/device is exclusively in use). In w1-w4 no claim is pre-allocated.",
    "Start the clock. For each claim without status.allocation, in file (= name) order:",
    "  a) create a new allocator for this claim from the current allocated state, all "
    "DeviceClasses and ALL ResourceSlices (upstream: structured.NewAllocator once per claim, "
    "like kube-scheduler once per scheduling cycle; one CEL cache shared by the whole run);",
    "  b) for each node in nodes.yaml order (node name order) call Allocate(node, [claim]); "
    "each call counts as one Allocate call;",
    "  c) the first call that returns a result wins: add every device of that result to the "
    "allocated state (exclusive devices: driver/pool/device becomes in use; counters of "
    "partitionable devices are then consumed implicitly because the allocator derives them "
    "from in-use devices); move on to the next claim;",
    "  d) if no node succeeds the claim stays unplaced (this costs one failing call per node).",
    "Stop the clock after the last claim. Nothing else (YAML parsing, object conversion "
    "before the first claim) is timed.",
    "Report: claims placed, claims unplaced, Allocate calls (total / successful / failed), "
    "elapsed seconds, claims placed per second, Allocate calls per second.",
]
SINGLE_PROCEDURE = [
    "Load all objects. Build the allocated state from claims that have status.allocation "
    "(rule as in the fill protocol): here gpu-0 of node-000 is exclusively in use.",
    "Create the allocator (not timed separately from setup; report it apart if measured).",
    "Time exactly one call Allocate(node-000, [claim-0000]) with a 60 s cap (cancel the "
    "search at 60 s). Report: milliseconds, the outcome (no solution / result / error), "
    "whether the cap was hit, and, if available, how many search steps were taken "
    "(upstream: allocateOne invocations).",
]
SINGLE_CAP_SECONDS = 60


def _claim(name: str, requests: Objects, constraints: Objects | None = None,
           allocation: Object | None = None) -> Object:
    """A claim as a user writes it: the API server assigns the uid, so the files carry none."""
    obj = clusters.claim(name, requests, constraints, allocation)
    del obj["metadata"]["uid"]
    return obj


def _claims(count: int, requests: Callable[[], Objects], constraints: Objects | None = None) -> Objects:
    """claim-0000, claim-0001, ...: four digits, so that name order is placement order."""
    return [_claim(f"claim-{c:04d}", requests(), constraints) for c in range(count)]


def _numa_cluster() -> tuple[Objects, Objects]:
    """w1-w3's cluster: 500 nodes with one slice of 10 GPUs each, gpu-0..4 on numa 0, 5..9 on 1."""
    return clusters.plain(500, 10)


def w1(selector: str | None = None) -> Cluster:
    nodes, slices = _numa_cluster()
    return nodes, [GPU_CLASS], slices, _claims(5000, lambda: [clusters.request("gpu", "gpu", 1, selector)])


def w2() -> Cluster:
    # Every device passes the selector: w2 costs what evaluating CEL adds to w1, nothing else.
    return w1(clusters.CEL_SELECTOR)


def w3() -> Cluster:
    nodes, slices = _numa_cluster()
    same_numa = [{"requests": ["r0", "r1"], "matchAttribute": f"{DRIVER}/numa"}]
    claims = _claims(2500, lambda: [clusters.request("r0", "gpu"), clusters.request("r1", "gpu")], same_numa)
    return nodes, [GPU_CLASS], slices, claims


def _partitioned_gpu(g: int) -> Objects:
    """GPU g as its full device (7g.80gb) and 7 partitions (1g.10gb), all drawing on gpu-g-counters.

    The full device and its partitions share one counter set of 80Gi, so a GPU holds either the
    full device or up to 7 partitions (7 x 10Gi): the allocator has to account for counters.
    """
    attributes = clusters.gpu(g, g // 4)["attributes"]  # index, model, numa (4 GPUs per numa), version

    def device(name: str, memory: str, **extra: Object) -> Object:
        return {"name": name, "attributes": {**attributes, **extra}, "capacity": {"memory": {"value": memory}},
                "consumesCounters": [{"counterSet": f"gpu-{g}-counters", "counters": {"memory": {"value": memory}}}]}

    full = device(f"gpu-{g}", "80Gi", profile={"string": "7g.80gb"})
    return [full] + [device(f"gpu-{g}-part-{p}", "10Gi", profile={"string": "1g.10gb"}, partition={"int": p})
                     for p in range(7)]


def _partitionable_slices(node_name: str, gpus: int) -> Objects:
    counters = [{"name": f"gpu-{g}-counters", "counters": {"memory": {"value": "80Gi"}}} for g in range(gpus)]
    devices = [d for g in range(gpus) for d in _partitioned_gpu(g)]
    # API rule (1.36): a slice has either sharedCounters or devices, so each pool is 2 slices.
    return [clusters.resource_slice(f"{node_name}-counters", node_name, counters=counters, count=2),
            clusters.resource_slice(f"{node_name}-devices", node_name, devices=devices, count=2)]


def w4() -> Cluster:
    names = [f"node-{i:03d}" for i in range(100)]
    slices = [s for n in names for s in _partitionable_slices(n, 8)]
    # Only partitions match the class: the full devices are there to share counters with them.
    partition_class = clusters.device_class(
        "gpu-1g10gb", f'device.driver == "{DRIVER}" && device.attributes["{DRIVER}"].profile == "1g.10gb"')
    claims = _claims(5000, lambda: [clusters.request("gpu", "gpu-1g10gb")])
    return [clusters.node(n) for n in names], [partition_class], slices, claims


def w5() -> Cluster:
    node = "node-000"
    # numa alternates, so any 32 devices span both numa nodes: matchAttribute can never hold,
    # and a search that does not see it enumerates same-numa subsets before giving up.
    slices = [clusters.resource_slice(f"{node}-slice", node, [clusters.gpu(i, i % 2) for i in range(32)])]
    on_node = {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]}
    in_use = {"devices": {"results": [{"request": "gpu", "driver": DRIVER, "pool": node, "device": "gpu-0"}]},
              "nodeSelector": on_node}
    claims = [_claim("claim-in-use", [clusters.request("gpu", "gpu")], allocation=in_use),
              _claim("claim-0000", [clusters.request("gpu", "gpu", 32)],
                     [{"requests": ["gpu"], "matchAttribute": f"{DRIVER}/numa"}])]
    return [clusters.node(node)], [GPU_CLASS], slices, claims


def fill_expected(per_node: int, nodes: int, claims: int) -> dict[str, int]:
    """What the fill protocol reports when first fit puts exactly per_node claims on every node.

    Claim c (0-based) lands on node c // per_node after one failed call on each full node before
    it; a claim that fits nowhere fails once on every node.
    """
    placed = min(claims, per_node * nodes)
    unplaced = claims - placed
    calls = sum(c // per_node + 1 for c in range(placed)) + unplaced * nodes
    return {"claimsPlaced": placed, "claimsUnplaced": unplaced, "allocateCalls": calls,
            "successfulCalls": placed, "failedCalls": calls - placed}


@dataclasses.dataclass(frozen=True)
class Workload:
    name: str  # the folder it is written to
    build: Callable[[], Cluster]
    mode: str  # "fill" (w1-w4: every claim by first fit) or "single" (w5: one timed call)
    expected: dict[str, Any]
    note: str  # why the expected numbers are what they are


BY_KEY = {
    "w1": Workload("w1-fill", w1, "fill", fill_expected(10, 500, 5000),
                   "each node takes 10 claims: claim-N gets node-(N//10) gpu-(N%10)"),
    "w2": Workload("w2-cel", w2, "fill", fill_expected(10, 500, 5000),
                   "as w1 (every device passes the selector)"),
    "w3": Workload("w3-match", w3, "fill", fill_expected(4, 500, 2500),
                   "first fit leaves gpu-4 (numa 0) and gpu-9 (numa 1) free on every node, so each node "
                   "takes only 4 claims: claim-N gets node-(N//4); claims 2000-2499 fail on all 500 nodes"),
    "w4": Workload("w4-partitionable", w4, "fill", fill_expected(56, 100, 5000),
                   "each GPU takes 7 partitions (7 x 10Gi of 80Gi), each node 56 claims: claim-N gets "
                   "node-(N//56); the full devices never match the class"),
    "w5": Workload("w5-pathological", w5, "single", {"outcome": "no solution"},
                   "31 free devices for count 32 and numa alternates: no solution; the search "
                   "enumerates same-numa subsets in device order before giving up"),
}


def _in_process(build: Callable[[], Cluster]) -> Callable[[], InProcess]:
    def split() -> InProcess:
        nodes, classes, slices, claims = build()
        allocated = [c for c in claims if "status" in c]
        return nodes, classes, slices, allocated, [c for c in claims if "status" not in c]
    return split


# bench/simulate.py's view: by folder name, the allocated claims apart from the work.
WORKLOADS = {w.name: _in_process(w.build) for w in BY_KEY.values()}


def protocol(workload: Workload, cluster: Cluster) -> Object:
    """protocol.yaml: the counts let a runner check it read the files whole before it times anything."""
    nodes, _, slices, claims = cluster
    single = workload.mode == "single"
    return {
        "workload": workload.name, "mode": workload.mode,
        "featureGatesOn": GATES_ON, "featureGatesOff": GATES_OFF,
        "counts": {"nodes": len(nodes), "resourceSlices": len(slices),
                   "devices": sum(len(s["spec"].get("devices", [])) for s in slices),
                   "claimsToPlace": sum("status" not in c for c in claims),
                   "claimsPreAllocated": sum("status" in c for c in claims)},
        "procedure": SINGLE_PROCEDURE if single else FILL_PROCEDURE,
        "capSeconds": SINGLE_CAP_SECONDS if single else None,
        "expected": workload.expected, "expectedNote": workload.note,
    }


def _dump(path: pathlib.Path, docs: Objects) -> None:
    # libyaml's dumper when PyYAML has it: w2 and w4 are several MB of YAML.
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    with path.open("w") as f:
        yaml.dump_all(docs, f, Dumper=dumper, sort_keys=False, default_flow_style=False, explicit_start=True)


def write(out: pathlib.Path, key: str) -> pathlib.Path:
    """Write workload `key` (w1 ... w5) into out/<name>/ and answer that folder."""
    workload = BY_KEY[key]
    cluster = workload.build()
    nodes, classes, slices, claims = cluster
    folder = out / workload.name
    folder.mkdir(parents=True, exist_ok=True)
    _dump(folder / "deviceclasses.yaml", classes)
    _dump(folder / "nodes.yaml", nodes)
    _dump(folder / "resourceslices.yaml", slices)
    _dump(folder / "resourceclaims.yaml", claims)
    _dump(folder / "protocol.yaml", [protocol(workload, cluster)])
    print(f"{folder}: {len(nodes)} nodes, {len(slices)} slices, {len(claims)} claims")
    return folder


def main(argv: Sequence[str]) -> int:
    if len(argv) < 2:
        sys.exit(__doc__)
    keys = list(argv[2:]) or list(BY_KEY)
    unknown = [k for k in keys if k not in BY_KEY]
    if unknown:
        sys.exit(f"unknown workload {', '.join(unknown)}: choose from {' '.join(BY_KEY)}")
    for key in keys:
        write(pathlib.Path(argv[1]), key)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
