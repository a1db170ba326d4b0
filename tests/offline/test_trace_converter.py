"""bench/traces.py: Alibaba GPU trace rows as DRA objects, and what simulate makes of them.

Rows are copied from the public trace files (openb; github.com/alibaba/clusterdata, folder
cluster-trace-gpu-v2023/csv/); the converted objects are placed by `dralloc simulate` to check
they mean what they say.
"""

from __future__ import annotations

import io
import json
import pathlib
import sys

import pytest
from bench import traces
from tests.offline.conftest import Invoke

from dralloc.offline import simulating

NODES = """sn,cpu_milli,memory_mib,gpu,model
openb-node-0000,64000,262144,2,P100
openb-node-0227,96000,393216,8,G2
openb-node-1400,32000,262144,0,
"""
PODS = """name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time
openb-pod-0000,12000,16384,1,1000,,LS,Running,0,12537496,0
openb-pod-0001,6000,12288,1,460,,LS,Running,427061,12902960,427061
openb-pod-0017,88000,327680,8,1000,G2,LS,Running,0,1,0
openb-pod-0030,4000,15258,0,0,,BE,Running,0,1,0
openb-pod-0044,6000,12288,1,460,P100|T4,LS,Running,0,1,0
"""


def _write(tmp_path: pathlib.Path, name: str, text: str) -> pathlib.Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_rows_become_nodes_slices_and_claims(tmp_path: pathlib.Path) -> None:
    """GPU nodes only; each GPU multi-allocatable with compute 1000 and its model; a share asks for
    its milli-GPUs, whole GPUs for 1000 each, gpu_spec becomes a selector on the model."""
    trace_nodes = traces.read_nodes(_write(tmp_path, "n.csv", NODES))
    assert [(n.name, n.gpus, n.model) for n in trace_nodes] == [("openb-node-0000", 2, "P100"),
                                                                ("openb-node-0227", 8, "G2")]
    objects = traces.snapshot_objects(trace_nodes)
    node = next(o for o in objects if o["kind"] == "Node")
    assert node["status"]["allocatable"]["cpu"] == "64000m" and node["status"]["allocatable"]["memory"] == "262144Mi"
    slice_ = next(o for o in objects if o["kind"] == "ResourceSlice")
    assert [d["name"] for d in slice_["spec"]["devices"]] == ["gpu-0", "gpu-1"]
    assert slice_["spec"]["devices"][0] == {"name": "gpu-0", "allowMultipleAllocations": True,
                                            "attributes": {"model": {"string": "P100"}, "index": {"int": 0}},
                                            "capacity": {"compute": {"value": "1000"}}}
    tasks = traces.read_tasks(_write(tmp_path, "p.csv", PODS))
    workload = traces.workload_objects(tasks)
    templates = {o["metadata"]["name"]: o for o in workload if o["kind"] == "ResourceClaimTemplate"}
    assert list(templates) == ["gpu-1x1000-any", "gpu-1x460-any", "gpu-8x1000-g2", "gpu-1x460-p100-t4"]
    exactly = templates["gpu-1x460-p100-t4"]["spec"]["spec"]["devices"]["requests"][0]["exactly"]
    assert exactly["count"] == 1 and exactly["capacity"] == {"requests": {"compute": "460"}}
    assert exactly["selectors"][0]["cel"]["expression"] == \
        'device.attributes["gpu.trace.dralloc.dev"].model in ["P100", "T4"]'
    pods = [o for o in workload if o["kind"] == "Pod"]
    assert "resourceClaims" not in pods[3]["spec"]  # no GPU: cpu and memory only
    assert pods[2]["spec"]["resourceClaims"] == [{"name": "gpu", "resourceClaimTemplateName": "gpu-8x1000-g2"}]

    (tmp_path / "out").mkdir()
    traces._dump(objects, tmp_path / "out" / "snapshot.yaml")
    traces._dump(workload, tmp_path / "out" / "workload.yaml")
    out = io.StringIO()
    code = simulating.run(simulating.Request(snapshot_files=[str(tmp_path / "out" / "snapshot.yaml")],
                                             workload_files=[str(tmp_path / "out" / "workload.yaml")],
                                             placements_out=str(tmp_path / "placed.txt")), out, io.StringIO())
    assert code == simulating.EXIT_ALL_PLACED, out.getvalue()
    placed = dict(line.split(" ", 1) for line in (tmp_path / "placed.txt").read_text().splitlines())
    # The two shares fit one P100 together (460 + 460 <= 1000); the 8-GPU task takes the G2 node.
    assert placed["openb-pod-0000"] == "openb-node-0000 gpu=gpu.trace.dralloc.dev/openb-node-0000/gpu-0"
    assert placed["openb-pod-0001"] == "openb-node-0000 gpu=gpu.trace.dralloc.dev/openb-node-0000/gpu-1"
    assert placed["openb-pod-0044"] == "openb-node-0000 gpu=gpu.trace.dralloc.dev/openb-node-0000/gpu-1"
    assert placed["openb-pod-0017"].startswith("openb-node-0227 ")


def test_bad_rows_name_file_line_and_column(tmp_path: pathlib.Path) -> None:
    bad = _write(tmp_path, "p.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\nx,1000,10,2,500\n")
    with pytest.raises(traces.TraceError, match=r"p.csv line 2: column gpu_milli: 500 with num_gpu 2"):
        traces.read_tasks(bad)
    missing = _write(tmp_path, "n.csv", "sn,cpu_milli,gpu,model\n")
    with pytest.raises(traces.TraceError, match=r"n.csv: header: missing column\(s\) memory_mib"):
        traces.read_nodes(missing)
    word = _write(tmp_path, "q.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\nx,lots,10,1,500\n")
    with pytest.raises(traces.TraceError, match=r"q.csv line 2: column cpu_milli: 'lots' is not a number"):
        traces.read_tasks(word)


def test_inflation_is_seeded_and_reaches_the_multiple(tmp_path: pathlib.Path) -> None:
    tasks = traces.read_tasks(_write(tmp_path, "p.csv", PODS))
    drawn = traces.inflate(tasks, 10, factor=1.3, seed=7)
    assert drawn == traces.inflate(tasks, 10, factor=1.3, seed=7)
    asked = sum(t.gpu_request_milli for t in drawn)
    assert asked >= 13_000 and asked - drawn[-1].gpu_request_milli < 13_000  # stops at the first that reaches it
    assert len({t.name for t in drawn}) == len(drawn)


CLUSTER = """sn,cpu_milli,memory_mib,gpu,model
node-a,32000,65536,2,T4
"""
# Two T4s: 300 + 700 fill one, a whole GPU takes the other, the last 300 finds no room.
SHARES = """name,cpu_milli,memory_mib,num_gpu,gpu_milli
s300,1000,1024,1,300
s700,1000,1024,1,700
w0,1000,1024,1,1000
s300b,1000,1024,1,300
"""


def _trace_files(tmp_path: pathlib.Path) -> tuple[str, str]:
    nodes_ = traces.read_nodes(_write(tmp_path, "n.csv", CLUSTER))
    tasks = traces.read_tasks(_write(tmp_path, "p.csv", SHARES))
    traces._dump(traces.snapshot_objects(nodes_), tmp_path / "s.yaml")
    traces._dump(traces.workload_objects(tasks), tmp_path / "w.yaml")
    return str(tmp_path / "s.yaml"), str(tmp_path / "w.yaml")


def test_simulate_policy_fragmentation_aware(dralloc: Invoke, tmp_path: pathlib.Path) -> None:
    """`--policy fragmentation-aware` through the command line: the 700 completes gpu-0 (not gpu-1, which
    would leave two partly used GPUs and no room for the whole one)."""
    snapshot, workload = _trace_files(tmp_path)
    out = tmp_path / "placed.txt"
    run = dralloc("simulate", "-f", snapshot, "--workload", workload, "--policy", "fragmentation-aware",
                  "--placements-out", str(out))
    assert run.code == 1, run.err
    assert out.read_text().splitlines() == [
        "s300 node-a gpu=gpu.trace.dralloc.dev/node-a/gpu-0",
        "s700 node-a gpu=gpu.trace.dralloc.dev/node-a/gpu-0",
        "w0 node-a gpu=gpu.trace.dralloc.dev/node-a/gpu-1",
    ]


def test_compare_policies(dralloc: Invoke, tmp_path: pathlib.Path) -> None:
    """One row per policy, from the same inputs; JSON has the counts; exit 1 when some policy left items."""
    snapshot, workload = _trace_files(tmp_path)
    run = dralloc("simulate", "-f", snapshot, "--workload", workload, "--compare-policies")
    assert run.code == 1, run.err
    lines = run.out.splitlines()
    assert [line.split()[0] for line in lines[1:]] == ["first-fit", "binpack", "spread", "fragmentation-aware"]
    run = dralloc("simulate", "-f", snapshot, "--workload", workload, "--compare-policies", "-o", "json")
    rows = {r["policy"]: r for r in json.loads(run.out)["policies"]}
    assert {p: (r["placed"], r["items"], r["placedBeforeFirstFailure"]) for p, r in rows.items()} == {
        p: (3, 4, 3) for p in ("first-fit", "binpack", "spread", "fragmentation-aware")}
    assert rows["first-fit"]["classes"]["gpu"]["capacity"]["compute"]["percent"] == 100.0


GREEDY_LOSES = """name,cpu_milli,memory_mib,num_gpu,gpu_milli
whole,1000,1024,1,1000
half-a,1000,1024,1,500
half-b,1000,1024,1,500
"""


def _one_gpu(tmp_path: pathlib.Path) -> tuple[str, str]:
    nodes_ = traces.read_nodes(_write(tmp_path, "n1.csv", "sn,cpu_milli,memory_mib,gpu,model\nnode-a,32000,65536,1,T4\n"))
    tasks = traces.read_tasks(_write(tmp_path, "p1.csv", GREEDY_LOSES))
    traces._dump(traces.snapshot_objects(nodes_), tmp_path / "s1.yaml")
    traces._dump(traces.workload_objects(tasks), tmp_path / "w1.yaml")
    return str(tmp_path / "s1.yaml"), str(tmp_path / "w1.yaml")


def test_optimal_places_more_than_arrival_order(dralloc: Invoke, tmp_path: pathlib.Path) -> None:
    """One GPU: the whole-GPU task arrives first and takes it; the two halves would have placed 2."""
    pytest.importorskip("ortools")
    snapshot, workload = _one_gpu(tmp_path)
    run = dralloc("simulate", "-f", snapshot, "--workload", workload, "--optimal", "10", "-o", "json")
    assert run.code == 1, run.err
    report = json.loads(run.out)
    assert report["placed"] == 1
    assert {k: report["optimal"][k] for k in ("items", "left_out", "best", "bound", "proven")} == {
        "items": 3, "left_out": 0, "best": 2, "bound": 2, "proven": True}
    run = dralloc("simulate", "-f", snapshot, "--workload", workload, "--optimal", "10")
    assert "an exact solver places 2 (optimal) of the 3 modelled items together" in run.out


def test_optimal_without_ortools_names_the_package(dralloc: Invoke, tmp_path: pathlib.Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    snapshot, workload = _one_gpu(tmp_path)
    monkeypatch.setitem(sys.modules, "ortools.sat.python", None)  # import fails as if not installed
    run = dralloc("simulate", "-f", snapshot, "--workload", workload, "--optimal")
    assert run.code == 2
    assert run.err == "error: --optimal needs OR-Tools' CP-SAT solver, which is not installed: pip install ortools\n"


def test_add_nodes_counts_the_fewest_copies(dralloc: Invoke, tmp_path: pathlib.Path) -> None:
    """One 1-GPU node, four whole-GPU tasks and an 8-GPU one: three more 1-GPU nodes place the three
    left over; two 2-GPU nodes do too; the 8-GPU task fits no copy and is named."""
    nodes_ = traces.read_nodes(_write(tmp_path, "n.csv", "sn,cpu_milli,memory_mib,gpu,model\nnode-a,32000,65536,1,T4\n"))
    tasks = [task_ for task_ in traces.read_tasks(_write(tmp_path, "p.csv", (
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n" + "".join(f"w{i},1000,1024,1,1000\n" for i in range(4))
        + "big,1000,1024,8,1000\n")))]
    traces._dump(traces.snapshot_objects(nodes_), tmp_path / "s.yaml")
    traces._dump(traces.workload_objects(tasks), tmp_path / "w.yaml")
    for gpus, expected in ((1, 3), (2, 2)):
        traces._dump(traces.node_objects(traces.TraceNode("spare", 32000, 65536, gpus, "T4")), tmp_path / "t.yaml")
        run = dralloc("simulate", "-f", str(tmp_path / "s.yaml"), "--workload", str(tmp_path / "w.yaml"),
                      "--add-nodes", str(tmp_path / "t.yaml"), "-o", "json")
        assert run.code == 1, run.err
        assert json.loads(run.out)["addNodes"] == {"template": "spare", "items": 3, "unfit": ["big"],
                                                   "nodes": expected}, gpus


def test_add_nodes_template_errors_name_the_file(dralloc: Invoke, tmp_path: pathlib.Path) -> None:
    snapshot, workload = _one_gpu(tmp_path)
    objects = traces.node_objects(traces.TraceNode("x", 1000, 1024, 1, "T4")) + \
        traces.node_objects(traces.TraceNode("y", 1000, 1024, 1, "T4"))
    traces._dump(objects, tmp_path / "two.yaml")
    run = dralloc("simulate", "-f", snapshot, "--workload", workload, "--add-nodes", str(tmp_path / "two.yaml"))
    assert run.code == 2
    assert run.err == f"error: --add-nodes {tmp_path / 'two.yaml'}: expected exactly one Node, found 2\n"


# ---- partitions: GPUs as counter sets, shares as partitions of quarters -----------------------

def test_partitions_snapshot_is_a_counter_slice_and_a_partition_slice_per_node(tmp_path: pathlib.Path) -> None:
    """Per GPU a counter set of 4 quarters, in a slice of its own (a slice with sharedCounters lists no
    devices); per GPU 8 partitions (4 x 1q, 2 x 2q, 1 x 3q, 1 x 4q) consuming their quarters, exclusive."""
    objects = traces.snapshot_objects(traces.read_nodes(_write(tmp_path, "n.csv", NODES)), "partitions")
    assert [(o["kind"], o["metadata"]["name"]) for o in objects] == [
        ("DeviceClass", "gpu"), ("Node", "openb-node-0000"), ("ResourceSlice", "openb-node-0000-gpu-counters"),
        ("ResourceSlice", "openb-node-0000-gpus"), ("Node", "openb-node-0227"),
        ("ResourceSlice", "openb-node-0227-gpu-counters"), ("ResourceSlice", "openb-node-0227-gpus")]
    counters, partitions = objects[2]["spec"], objects[3]["spec"]
    pool = {"name": "openb-node-0000", "generation": 1, "resourceSliceCount": 2}
    assert counters == {"driver": "gpu.trace.dralloc.dev", "nodeName": "openb-node-0000", "pool": pool,
                        "sharedCounters": [{"name": "gpu-0", "counters": {"slices": {"value": "4"}}},
                                           {"name": "gpu-1", "counters": {"slices": {"value": "4"}}}]}
    assert partitions["pool"] == pool and partitions["nodeName"] == "openb-node-0000"
    assert "sharedCounters" not in partitions
    assert [d["name"] for d in partitions["devices"]] == [
        f"gpu-{i}-{name}" for i in (0, 1)
        for name in ("1q-0", "1q-1", "1q-2", "1q-3", "2q-0", "2q-1", "3q-0", "4q-0")]
    assert partitions["devices"][13] == {
        "name": "gpu-1-2q-1", "attributes": {"model": {"string": "P100"}, "index": {"int": 1}, "slices": {"int": 2}},
        "consumesCounters": [{"counterSet": "gpu-1", "counters": {"slices": {"value": "2"}}}]}
    assert len(objects[6]["spec"]["devices"]) == 64 and len(objects[5]["spec"]["sharedCounters"]) == 8
    # Two slices, one dict each: YAML writes no anchors or aliases.
    traces._dump(objects, tmp_path / "s.yaml")
    assert "&id" not in (tmp_path / "s.yaml").read_text()


ROUNDING = """name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec
s250,1000,1024,1,250,
s251,1000,1024,1,251,
s500,1000,1024,1,500,
s750,1000,1024,1,750,
s751,1000,1024,1,751,
w1,1000,1024,1,1000,
w2,1000,1024,2,1000,
s251t4,1000,1024,1,251,T4|P100
cpu,1000,1024,0,0,
"""


def test_partitions_share_asks_for_the_smallest_partition_that_holds_it(tmp_path: pathlib.Path) -> None:
    """k quarters with k * 250 >= gpu_milli (250: 1, 251 and 500: 2, 751: 4, as a whole GPU does);
    whole GPUs ask for n 4-quarter partitions; one template per distinct request, named with its k."""
    tasks = traces.read_tasks(_write(tmp_path, "p.csv", ROUNDING))
    assert [t.partition_slices for t in tasks[:8]] == [1, 2, 2, 3, 4, 4, 4, 2]
    assert [t.taken_milli("partitions") for t in tasks] == [250, 500, 500, 750, 1000, 1000, 2000, 500, 0]
    assert [t.taken_milli() for t in tasks] == [250, 251, 500, 750, 751, 1000, 2000, 251, 0]
    workload = traces.workload_objects(tasks, "partitions")
    templates = {o["metadata"]["name"]: o["spec"]["spec"]["devices"]["requests"][0]["exactly"]
                 for o in workload if o["kind"] == "ResourceClaimTemplate"}
    assert list(templates) == ["gpu-1x1q-any", "gpu-1x2q-any", "gpu-1x3q-any", "gpu-1x4q-any", "gpu-2x4q-any",
                               "gpu-1x2q-p100-t4"]
    assert templates["gpu-1x2q-any"] == {
        "deviceClassName": "gpu", "allocationMode": "ExactCount", "count": 1,
        "selectors": [{"cel": {"expression": 'device.attributes["gpu.trace.dralloc.dev"].slices == 2'}}]}
    assert templates["gpu-2x4q-any"]["count"] == 2
    assert templates["gpu-1x2q-p100-t4"]["selectors"] == [
        {"cel": {"expression": 'device.attributes["gpu.trace.dralloc.dev"].slices == 2'}},
        {"cel": {"expression": 'device.attributes["gpu.trace.dralloc.dev"].model in ["P100", "T4"]'}}]
    claims = {o["metadata"]["name"]: o["spec"].get("resourceClaims") for o in workload if o["kind"] == "Pod"}
    assert claims["s751"] == claims["w1"] == [{"name": "gpu", "resourceClaimTemplateName": "gpu-1x4q-any"}]
    assert claims["cpu"] is None
    # Capacity mode's names differ where the request does.
    assert {traces.template_name(t) for t in tasks[:8]}.isdisjoint(templates)


def _partition_files(tmp_path: pathlib.Path, nodes_csv: str, pods_csv: str) -> tuple[str, str]:
    nodes_ = traces.read_nodes(_write(tmp_path, "n.csv", nodes_csv))
    tasks = traces.read_tasks(_write(tmp_path, "p.csv", pods_csv))
    traces._dump(traces.snapshot_objects(nodes_, "partitions"), tmp_path / "s.yaml")
    traces._dump(traces.workload_objects(tasks, "partitions"), tmp_path / "w.yaml")
    return str(tmp_path / "s.yaml"), str(tmp_path / "w.yaml")


# One T4 and two P100s: whatever GPU each policy picks, the whole T4 is taken, three quarters of one P100,
# two halves fill the other, and the last quarter completes the first: every task placed, all 12 quarters used.
MIXED = """name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec
whole,1000,1024,1,1000,T4
three,1000,1024,1,700,P100
half,1000,1024,1,460,
half-b,1000,1024,1,500,
quarter,1000,1024,1,250,
"""


@pytest.mark.parametrize("policy", ["first-fit", "fragmentation-aware"])
def test_simulate_places_partitions(dralloc: Invoke, tmp_path: pathlib.Path, policy: str) -> None:
    """The partitions snapshot is a valid pool to simulate (no invalid-pool reasons); shares take
    partitions of their GPU's quarters, and every task fits."""
    snapshot, workload = _partition_files(tmp_path, "sn,cpu_milli,memory_mib,gpu,model\n"
                                          "node-t4,32000,65536,1,T4\nnode-p100,32000,65536,2,P100\n", MIXED)
    out = tmp_path / "placed.txt"
    run = dralloc("simulate", "-f", snapshot, "--workload", workload, "--policy", policy,
                  "--placements-out", str(out))
    assert run.code == 0, run.out + run.err
    assert "invalid" not in run.out + run.err
    assert "counters slices 12/12 (100%)" in run.out
    placed = {}
    for line in out.read_text().splitlines():
        task, node, device = line.split(" ")
        assert device.startswith(f"gpu=gpu.trace.dralloc.dev/{node}/"), line
        placed[task] = (node, device.rsplit("/", 1)[1])
    assert placed["whole"] == ("node-t4", "gpu-0-4q-0")
    three = placed["three"][1].removesuffix("-3q-0")
    other = {"gpu-0": "gpu-1", "gpu-1": "gpu-0"}[three]
    assert {placed[t][1] for t in ("half", "half-b")} == {f"{other}-2q-0", f"{other}-2q-1"}
    assert placed["quarter"][1].startswith(f"{three}-1q-")
    assert {placed[t][0] for t in ("three", "half", "half-b", "quarter")} == {"node-p100"}


def test_four_quarters_fill_a_gpu_and_a_fifth_does_not_fit(dralloc: Invoke, tmp_path: pathlib.Path) -> None:
    """Four 1-quarter shares use up the GPU's counters (the other partitions, 2q to 4q, are then
    unusable too); a fifth quarter finds no room on the 1-GPU node."""
    snapshot, workload = _partition_files(tmp_path, "sn,cpu_milli,memory_mib,gpu,model\nnode-a,32000,65536,1,T4\n",
                                          "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"
                                          + "".join(f"q{i},1000,1024,1,{200 + i}\n" for i in range(5)))
    out = tmp_path / "placed.txt"
    run = dralloc("simulate", "-f", snapshot, "--workload", workload, "--placements-out", str(out))
    assert run.code == 1, run.err
    assert out.read_text().splitlines() == [f"q{i} node-a gpu=gpu.trace.dralloc.dev/node-a/gpu-0-1q-{i}"
                                            for i in range(4)]
    assert "counters slices 4/4 (100%)" in run.out
    assert "invalid" not in run.out + run.err


def test_partitions_of_more_than_8_gpus_take_more_slice_pairs(dralloc: Invoke, tmp_path: pathlib.Path) -> None:
    """A slice holds at most 8 counter sets and 64 devices that consume counters: 9 GPUs are two pairs
    of slices of one pool (resourceSliceCount 4), and a 9-GPU task still fits."""
    nodes_ = [traces.TraceNode("big", 96000, 393216, 9, "G2")]
    slices = [o for o in traces.snapshot_objects(nodes_, "partitions") if o["kind"] == "ResourceSlice"]
    assert [(o["metadata"]["name"], o["spec"]["pool"]["resourceSliceCount"]) for o in slices] == [
        ("big-gpu-counters", 4), ("big-gpu-counters-1", 4), ("big-gpus", 4), ("big-gpus-1", 4)]
    assert [len(o["spec"].get("sharedCounters", o["spec"].get("devices"))) for o in slices] == [8, 1, 64, 8]
    traces._dump(traces.snapshot_objects(nodes_, "partitions"), tmp_path / "s.yaml")
    tasks = traces.read_tasks(_write(tmp_path, "p.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"
                                                        "nine,1000,1024,9,1000\n"))
    traces._dump(traces.workload_objects(tasks, "partitions"), tmp_path / "w.yaml")
    run = dralloc("simulate", "-f", str(tmp_path / "s.yaml"), "--workload", str(tmp_path / "w.yaml"))
    assert run.code == 0, run.out + run.err


def test_capacity_sharing_is_unchanged(tmp_path: pathlib.Path) -> None:
    """The default, and `--sharing capacity`, write what the converter wrote before partitions existed."""
    _write(tmp_path, "n.csv", "sn,cpu_milli,memory_mib,gpu,model\nnode-a,32000,65536,1,T4\n")
    _write(tmp_path, "p.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\ns,1000,1024,1,460,T4\n")
    for name, flags in (("default", []), ("capacity", ["--sharing", "capacity"])):
        assert traces.main(["--nodes", str(tmp_path / "n.csv"), "--pods", str(tmp_path / "p.csv"), "--inflation", "0",
                            "-o", str(tmp_path / name), *flags]) == 0
    for name in ("default", "capacity"):
        assert (tmp_path / name / "snapshot.yaml").read_text().split("---\n")[2:] == [CAPACITY_SLICE]
        assert (tmp_path / name / "workload.yaml").read_text().split("---\n")[0] == CAPACITY_TEMPLATE


CAPACITY_SLICE = """apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata:
  name: node-a-gpus
spec:
  driver: gpu.trace.dralloc.dev
  nodeName: node-a
  pool:
    name: node-a
    generation: 1
    resourceSliceCount: 1
  devices:
  - name: gpu-0
    allowMultipleAllocations: true
    attributes:
      model:
        string: T4
      index:
        int: 0
    capacity:
      compute:
        value: '1000'
"""
CAPACITY_TEMPLATE = """apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata:
  name: gpu-1x460-t4
  namespace: trace
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly:
          deviceClassName: gpu
          allocationMode: ExactCount
          count: 1
          capacity:
            requests:
              compute: '460'
          selectors:
          - cel:
              expression: device.attributes["gpu.trace.dralloc.dev"].model in ["T4"]
"""
