"""bench/traces.py: Alibaba GPU trace rows as DRA objects, and what simulate makes of them.

Rows are copied from the trace files (openb, ../shared/traces/alibaba-gpu-v2023); the
converted objects are placed by `dralloc simulate` to check they mean what they say.
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
