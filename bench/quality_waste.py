"""Where the unallocated GPUs of the inflation experiment are, and which task shapes failed.

Runs the inflation experiment of bench/quality.py (same tasks, same seed, `dralloc simulate`'s
Placer, place and commit in arrival order, no explanations) and then breaks the GPU capacity
left unallocated down, per policy:

- per device: capacity no failed task could use even with CPU and memory to spare (a residue
  smaller than every failed share; whole GPUs too few on their node for the failed multi-GPU
  tasks), capacity some failed task could use GPU-wise but not with the CPU or memory left on
  its node ("stranded"), and the rest;
- by device: whole free GPUs vs residues of partly used GPUs (and the residue sizes);
- the CPU that CPU-only tasks took on nodes that still have free GPUs;
- the failed tasks by shape class (CPU-only, share, 1/2/4/8 whole GPUs) and by CPU size,
  with the first failure of each class.

Prints numbers, asserts nothing. Usage:
  .venv/bin/python bench/quality_waste.py [--files default] [--policies first-fit,fragmentation-aware]
"""

from __future__ import annotations

import argparse
import collections
import os
import pathlib
import sys
import tempfile
from collections.abc import Sequence

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "operator"))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import quality
import traces

from dralloc.offline import simulating

MILLI = traces.MILLI


def shape_class(task: traces.TraceTask) -> str:
    if task.num_gpu == 0:
        return "cpu-only"
    if task.num_gpu == 1 and task.gpu_milli < MILLI:
        return "share"
    return f"{task.num_gpu}-gpu"


def run(policy: str, snapshot: pathlib.Path, workload: pathlib.Path
        ) -> list[tuple[str, str | None, tuple[str, ...]]]:
    """(task name, node or None, devices) per task, in arrival order: `dralloc simulate`'s loop."""
    request = simulating.Request(snapshot_files=[str(snapshot)], workload_files=[str(workload)], policy=policy,
                                 progress=False)
    with open(os.devnull, "w") as sink:
        placer, items, templates, claims = simulating.prepare(request, sink)
        results = simulating.place_workload(placer, items, templates, claims, request, sink)
    return [(r.item.name, r.placement.node if r.placement is not None else None,
             tuple(d.device for a in r.placement.results for d in a.devices.results) if r.placement is not None else ())
            for r in results]


def analyze(name: str, policy: str, nodes: Sequence[traces.TraceNode], tasks: Sequence[traces.TraceTask],
            placed: Sequence[tuple[str, str | None, tuple[str, ...]]]) -> None:
    by_name = {t.name: t for t in tasks}
    gpu_used: dict[str, dict[str, int]] = collections.defaultdict(lambda: collections.defaultdict(int))
    cpu_used: dict[str, int] = collections.defaultdict(int)
    mem_used: dict[str, int] = collections.defaultdict(int)
    cpu_only_cpu: dict[str, int] = collections.defaultdict(int)
    failed: list[traces.TraceTask] = []
    first_fail: dict[str, int] = {}
    for index, (task_name, node, devices) in enumerate(placed):
        task = by_name[task_name]
        if node is None:
            failed.append(task)
            first_fail.setdefault(shape_class(task), index)
            continue
        cpu_used[node] += task.cpu_milli
        mem_used[node] += task.memory_mib
        if task.num_gpu == 0:
            cpu_only_cpu[node] += task.cpu_milli
        for device in devices:
            gpu_used[node][device] += task.gpu_milli if task.num_gpu == 1 else MILLI
    failed_gpu = [t for t in failed if t.num_gpu > 0]
    totals: collections.Counter[str] = collections.Counter()
    residues: collections.Counter[int] = collections.Counter()
    cpu_only_on_free = 0
    for node in nodes:
        used = gpu_used[node.name]
        frees = [MILLI - used.get(f"gpu-{i}", 0) for i in range(node.gpus)]
        free = sum(frees)
        if free <= 0:
            continue
        cpu_left, mem_left = node.cpu_milli - cpu_used[node.name], node.memory_mib - mem_used[node.name]
        model_ok = [t for t in failed_gpu if not t.gpu_spec or node.model in t.gpu_spec]
        whole_free = sum(f == MILLI for f in frees)
        for f in frees:
            if f <= 0:
                continue
            # Which failed tasks could use this device, GPU-wise (ignoring CPU and memory)?
            users = [t for t in model_ok if (t.num_gpu == 1 and t.gpu_milli <= f)
                     or (f == MILLI and t.num_gpu <= whole_free)]
            if not users:
                key = "residue: no failed task fits its GPU" if f < MILLI else "whole, too few on the node"
            elif not any(t.cpu_milli <= cpu_left for t in users):
                key = "stranded: CPU"
            elif not any(t.cpu_milli <= cpu_left and t.memory_mib <= mem_left for t in users):
                key = "stranded: memory"
            else:
                key = "usable by a failed task (?)"
            totals[key] += f
            if key.startswith("stranded") and cpu_only_cpu[node.name]:
                cpu_only_on_free += f
            totals["  whole free GPUs" if f == MILLI else "  partial residues"] += f
            if f < MILLI:
                residues[(f // 100) * 100] += 1
    sys.stdout.write(f"\n{name} / {policy}: {sum(t.gpu_request_milli for t in tasks if True) / MILLI:.0f} GPUs asked, "
                     f"{len(failed)} tasks failed ({len(failed_gpu)} with GPUs)\n")
    for key in ("residue: no failed task fits its GPU", "whole, too few on the node", "stranded: CPU",
                "stranded: memory", "usable by a failed task (?)", "  whole free GPUs", "  partial residues"):
        sys.stdout.write(f"  {key:38} {totals[key] / MILLI:8.1f} GPUs\n")
    placed_by_milli = collections.Counter(by_name[n].gpu_milli for n, node, _ in placed
                                          if node is not None and by_name[n].num_gpu == 1)
    sys.stdout.write("  placed single-GPU tasks by milli: " + ", ".join(f"{k}: {v}" for k, v in sorted(placed_by_milli.items()))
                     + "\n")
    first_810 = next((i for i, (n, node, _) in enumerate(placed)
                      if node is None and by_name[n].num_gpu == 1 and by_name[n].gpu_milli == 810), None)
    small = sum(t.gpu_milli for t in tasks if t.num_gpu == 1 and t.gpu_milli <= MILLI - 810)
    placed_810 = placed_by_milli.get(810, 0)
    sys.stdout.write(f"  810-milli shares placed: {placed_810} (first one failed: #{first_810}); their GPUs keep "
                     f"190 each that only shares <= 190 use ({small / MILLI:.1f} GPUs of them in the workload): "
                     f">= {max(0, placed_810 * (MILLI - 810) - small) / MILLI:.1f} GPUs unallocated for that alone\n")
    sys.stdout.write(f"  stranded on nodes that hold CPU-only tasks: {cpu_only_on_free / MILLI:.1f} GPUs; CPU-only tasks "
                     f"took {sum(cpu_only_cpu.values()) / 1000:.0f} cores "
                     f"(of {sum(n.cpu_milli for n in nodes) / 1000:.0f})\n")
    sys.stdout.write("  partial residues by size (milli, count): "
                     + ", ".join(f"{k}-{k + 99}: {v}" for k, v in sorted(residues.items())) + "\n")
    classes: dict[str, list[traces.TraceTask]] = collections.defaultdict(list)
    for t in failed:
        classes[shape_class(t)].append(t)
    for cls, members in sorted(classes.items()):
        cpus = collections.Counter(t.cpu_milli // 1000 for t in members)
        top = ", ".join(f"{c}c x{n}" for c, n in sorted(cpus.items(), key=lambda kv: -kv[1])[:6])
        gpus = sum(t.gpu_request_milli for t in members) / MILLI
        sys.stdout.write(f"  failed {cls:9} {len(members):5} tasks {gpus:7.1f} GPUs asked, first at #{first_fail[cls]}; "
                         f"CPU: {top}\n")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trace", type=pathlib.Path, default=traces.DEFAULT_TRACE, metavar="DIR",
                        help="the folder of the Alibaba GPU trace's CSV files (see bench/traces.py)")
    parser.add_argument("--files", default="default")
    parser.add_argument("--policies", default="first-fit,fragmentation-aware")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--inflation", type=float, default=1.3)
    args = parser.parse_args(argv)
    nodes = traces.read_nodes(traces.require_trace(parser, args.trace) / "openb_node_list_gpu_node.csv")
    total = sum(n.gpus for n in nodes)
    with tempfile.TemporaryDirectory(prefix="dralloc-waste-") as tmp:
        for name in [f for f in args.files.split(",") if f]:
            tasks = traces.inflate(traces.read_tasks(args.trace / f"openb_pod_list_{name}.csv"), total,
                                   factor=args.inflation, seed=args.seed)
            snapshot, workload = quality.write(nodes, tasks, pathlib.Path(tmp) / name)
            for policy in [p for p in args.policies.split(",") if p]:
                analyze(name, policy, nodes, tasks, run(policy, snapshot, workload))
                sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
