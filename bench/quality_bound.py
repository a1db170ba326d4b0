"""Upper bounds on the GPU capacity the inflation experiment can allocate, and the share residues.

1. Offline bound (no arrival order, any subset of the tasks): tasks grouped by shape (CPU,
   memory, GPUs, share, allowed models), nodes by type (CPU, memory, GPUs, model); how many
   tasks of each shape go to each node type, as an integer program (OR-Tools CP-SAT), with
   per node type: CPU, memory and GPU capacity summed over its nodes, a task only on a type
   one node of which could hold it alone, each share above 500 milli and each whole GPU on a
   GPU of its own (at most the type's GPUs of them). Every placement of the tasks satisfies
   these constraints, so the optimum (or the solver's bound) bounds the GPU capacity any
   placement allocates; the LP relaxation (GLOP) too, as a cross-check.

2. Share residues (what no placement in arrival order escapes once it places the shares):
   a GPU holding a share of s > 500 milli keeps 1000 - s that only shares of at most
   1000 - s can use. For the 810-milli shares (most of the trace's large shares), the 190
   left on each is usable by the 50/110/160 shares only, whose total is small: a policy that
   places N of them leaves at least 0.19 N - (milli of the shares <= 190) / 1000 GPUs
   unallocated. Printed for N = every 810 share of the workload and N = those arriving before
   task --before (a policy's first failed 810 share, bench/quality_waste.py: every one before
   it was placed); bench/quality_waste.py prints N and this bound for each policy's run.
   The same for every share size at once (`share_residue_bound`, a cutting-stock LP): the
   least free capacity the GPUs holding shares can be left with when every share arriving
   before task --before is placed (and later shares at most as many as the workload has).
   A policy that places every task until its first failure at --before or later leaves at
   least that much unallocated, however it places them. --asked states the first failure as
   the share of the cluster's GPUs the tasks before it asked for (all of them placed: the
   "alloc@1st-fail" column of bench/quality.py).

3. The floor of a whole run (`--runs POLICY,...`, per seed of `--seeds`): the policy's run of
   the inflation experiment (bench/quality.py's), and the same cutting-stock LP with every
   share the run placed counted, before its first failure and after it (shares keep fitting
   once a larger task has failed; counting only those before the first failure understates
   the floor). What it proves: any placement that places at least those shares (per size)
   leaves at least that much GPU capacity free on the GPUs that hold them, so the run's
   unallocated GPUs are at least the floor, and the gap is what a better arrangement of the
   same shares, or fewer whole GPUs left free, could recover at most. What it does not: it
   is no floor for a policy that places fewer shares (one that lets more of them fail keeps
   more GPUs whole), it counts no waste on GPUs without shares (whole GPUs stranded by CPU or
   memory, a node's GPUs too few for the multi-GPU tasks that failed), and it ignores models,
   CPU and memory, so it is not the least any policy can leave.

Prints numbers, asserts nothing. Usage:
  .venv/bin/python bench/quality_bound.py [--files default,...] [--time-limit 60] [--before 7654]
      [--runs fragmentation-aware,first-fit --seeds 0-9] [--skip-offline]
"""

from __future__ import annotations

import argparse
import collections
import pathlib
import sys
import tempfile
from collections.abc import Iterable, Sequence

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import quality
import traces

MILLI = traces.MILLI

NodeType = tuple[int, int, int, str]  # cpu milli, memory MiB, GPUs, model
TaskShape = tuple[int, int, int, int, tuple[str, ...]]  # cpu milli, memory MiB, GPUs, milli per GPU, models


def gpu_milli(shape: TaskShape) -> int:
    _, _, num_gpu, milli, _ = shape
    return milli if num_gpu == 1 else num_gpu * MILLI


def fits(shape: TaskShape, node: NodeType) -> bool:
    cpu, memory, num_gpu, _, models = shape
    return cpu <= node[0] and memory <= node[1] and num_gpu <= node[2] and (not models or node[3] in models)


def own_gpus(shape: TaskShape) -> int:
    """GPUs the task holds alone: whole GPUs, or one for a share above half a GPU."""
    _, _, num_gpu, milli, _ = shape
    if num_gpu == 1 and milli < MILLI:
        return 1 if 2 * milli > MILLI else 0
    return num_gpu


def offline_bound(node_types: dict[NodeType, int], shapes: dict[TaskShape, int], time_limit: float, *,
                  relax: bool) -> tuple[float, float, str]:
    """(best found, bound, status) in milli-GPUs allocated."""
    pairs = [(s, k) for s in shapes for k in node_types if fits(s, k) and gpu_milli(s) > 0]
    if relax:
        from ortools.linear_solver import pywraplp
        solver = pywraplp.Solver.CreateSolver("GLOP")
        x = {p: solver.NumVar(0, shapes[p[0]], "") for p in pairs}
        add = solver.Add
    else:
        from ortools.sat.python import cp_model
        model = cp_model.CpModel()
        x = {p: model.new_int_var(0, shapes[p[0]], "") for p in pairs}
        add = model.add
    by_shape: dict[TaskShape, list[object]] = collections.defaultdict(list)
    by_type: dict[NodeType, list[tuple[TaskShape, object]]] = collections.defaultdict(list)
    for (s, k), var in x.items():
        by_shape[s].append(var)
        by_type[k].append((s, var))
    for s, vars_ in by_shape.items():
        add(sum(vars_) <= shapes[s])
    for k, members in by_type.items():
        count = node_types[k]
        add(sum(s[0] * v for s, v in members) <= count * k[0])
        add(sum(s[1] * v for s, v in members) <= count * k[1])
        add(sum(gpu_milli(s) * v for s, v in members) <= count * k[2] * MILLI)
        add(sum(own_gpus(s) * v for s, v in members) <= count * k[2])
    objective = sum(gpu_milli(s) * v for (s, _), v in x.items())
    if relax:
        solver.Maximize(objective)
        solver.Solve()
        value = solver.Objective().Value()
        return value, value, "LP optimum"
    model.maximize(objective)
    solver_ = cp_model.CpSolver()
    solver_.parameters.max_time_in_seconds = time_limit
    solver_.parameters.num_workers = 1
    solver_.parameters.random_seed = 0
    status = solver_.solve(model)
    return solver_.objective_value, solver_.best_objective_bound, solver_.status_name(status)


def share_configurations(sizes: Sequence[int], available: dict[int, int]) -> list[tuple[int, ...]]:
    """Every multiset of share sizes (a count per size) that fits one GPU, at least one share."""
    out: list[tuple[int, ...]] = []
    counts = [0] * len(sizes)

    def extend(i: int, room: int) -> None:
        if i == len(sizes):
            if any(counts):
                out.append(tuple(counts))
            return
        most = min(room // sizes[i], available[sizes[i]])
        for c in range(most + 1):
            counts[i] = c
            extend(i + 1, room - c * sizes[i])
        counts[i] = 0

    extend(0, MILLI)
    return out


def run_floor(tasks: Sequence[traces.TraceTask], placed: Iterable[int]) -> tuple[float, int]:
    """(GPUs, configurations): `share_residue_bound` with the shares at the indexes `placed`
    counted, wherever they arrived (a run's placed tasks: before its first failure and after)."""
    return share_residue_bound(tasks, 0, forced_indexes=placed)


def share_residue_bound(tasks: Sequence[traces.TraceTask], before: int,
                        forced_indexes: Iterable[int] = ()) -> tuple[float, int]:
    """(GPUs, configurations): a lower bound on the free capacity left on the GPUs that hold
    shares, in any placement that places at least the shares arriving before task `before`.

    A GPU that holds a share never takes a whole-GPU task: what its shares leave of it stays
    unallocated unless later shares fill it. Cutting-stock LP: how many GPUs hold each
    configuration (a multiset of share sizes fitting one GPU); every share arriving before
    `before` placed, no more shares of a size than the workload has; minimize the capacity the
    configurations leave free. Models, CPU and memory are left out (fewer constraints: still a
    lower bound). `forced_indexes`: more tasks whose shares count (placed after `before`)."""
    from ortools.linear_solver import pywraplp

    shares = [t for t in tasks if t.num_gpu == 1 and t.gpu_milli < MILLI]
    available = collections.Counter(t.gpu_milli for t in shares)
    counted = set(range(before)) | set(forced_indexes)
    forced = collections.Counter(tasks[i].gpu_milli for i in sorted(counted)
                                 if tasks[i].num_gpu == 1 and tasks[i].gpu_milli < MILLI)
    sizes = sorted(available, reverse=True)
    configurations = share_configurations(sizes, available)
    solver = pywraplp.Solver.CreateSolver("GLOP")
    y = [solver.NumVar(0, solver.infinity(), "") for _ in configurations]
    for i, size in enumerate(sizes):
        used = sum(c[i] * v for c, v in zip(configurations, y, strict=True) if c[i])
        solver.Add(used >= forced.get(size, 0))
        solver.Add(used <= available[size])
    solver.Minimize(sum((MILLI - sum(n * s for n, s in zip(c, sizes, strict=True))) * v
                        for c, v in zip(configurations, y, strict=True)))
    solver.Solve()
    return solver.Objective().Value() / MILLI, len(configurations)


def whole_runs(nodes: Sequence[traces.TraceNode], pod_list: pathlib.Path, policies: Sequence[str],
               seeds: Sequence[int], inflation: float) -> None:
    """Per policy and seed: the run's unallocated GPUs, the floor at its first failure and the
    floor of the whole run (`run_floor`), then per policy the means over the seeds."""
    total = sum(n.gpus for n in nodes)
    all_tasks = traces.read_tasks(pod_list)
    rows: dict[str, list[tuple[float, float, float]]] = {p: [] for p in policies}
    sys.stdout.write("  whole runs: unallocated GPUs, the share floor counting the shares placed before the first "
                     "failure, and counting every share placed (before it and after)\n")
    with tempfile.TemporaryDirectory(prefix="dralloc-bound-") as tmp:
        for seed in seeds:
            tasks = traces.inflate(all_tasks, total, factor=inflation, seed=seed)
            snapshot, workload = quality.write(nodes, tasks, pathlib.Path(tmp) / f"seed-{seed}")
            for policy in policies:
                outcome = quality.run_policy(policy, snapshot, workload, tasks, total * MILLI)
                placed = [i for i, where in enumerate(outcome.where) if where is not None]
                first = next((i for i, where in enumerate(outcome.where) if where is None), len(tasks))
                shares = [i for i in placed if tasks[i].num_gpu == 1 and tasks[i].gpu_milli < MILLI]
                at_first, _ = share_residue_bound(tasks, first)
                whole, _ = run_floor(tasks, placed)
                rows[policy].append((outcome.unallocated_gpus, at_first, whole))
                sys.stdout.write(f"    seed {seed:<2} {policy:20} unallocated {outcome.unallocated_gpus:6.1f}; "
                                 f"{sum(1 for i in shares if i < first)} shares before the first failure (task "
                                 f"#{first}), {sum(1 for i in shares if i > first)} after: floor {at_first:.1f} "
                                 f"-> {whole:.1f}, gap {outcome.unallocated_gpus - whole:.1f}\n")
                sys.stdout.flush()
    for policy, values in rows.items():
        if len(values) > 1:
            count = len(values)
            sys.stdout.write(f"    {policy}, {count} seeds: mean unallocated {sum(v[0] for v in values) / count:.1f}, "
                             f"floor at the first failure {sum(v[1] for v in values) / count:.1f}, of the whole run "
                             f"{sum(v[2] for v in values) / count:.1f} (gap {sum(v[0] - v[2] for v in values) / count:.1f}"
                             f", least {min(v[0] - v[2] for v in values):.1f})\n")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trace", type=pathlib.Path, default=traces.DEFAULT_TRACE, metavar="DIR",
                        help="the folder of the Alibaba GPU trace's CSV files (see bench/traces.py)")
    parser.add_argument("--files", default="default,gpushare100,multigpu50,gpuspec33")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--inflation", type=float, default=1.3)
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--before", type=int, default=0,
                        help="also count the 810 shares arriving before this task index")
    parser.add_argument("--asked", default="50,70,80,90,95",
                        help="share residue bounds for a policy whose first failure comes once the tasks "
                             "before it asked for these percents of the cluster's GPUs (comma-separated)")
    parser.add_argument("--runs", default="", metavar="POLICIES",
                        help="the floor of each of these policies' whole runs (comma-separated; every share "
                             "the run placed counted, before its first failure and after)")
    parser.add_argument("--seeds", type=quality.seed_list, default=[0], metavar="LIST",
                        help="--runs: the arrival orders (numbers and ranges, e.g. 0-9); the rest uses --seed")
    parser.add_argument("--skip-offline", action="store_true",
                        help="without the offline integer program and the 810 and --asked lines")
    args = parser.parse_args(argv)
    nodes = traces.read_nodes(traces.require_trace(parser, args.trace) / "openb_node_list_gpu_node.csv")
    total = sum(n.gpus for n in nodes)
    node_types = collections.Counter((n.cpu_milli, n.memory_mib, n.gpus, n.model) for n in nodes)
    sys.stdout.write(f"{len(nodes)} nodes of {len(node_types)} types, {total} GPUs, "
                     f"{sum(n.cpu_milli for n in nodes) / 1000:.0f} cores\n")
    for name in [f for f in args.files.split(",") if f]:
        tasks = traces.inflate(traces.read_tasks(args.trace / f"openb_pod_list_{name}.csv"), total,
                               factor=args.inflation, seed=args.seed)
        shapes = collections.Counter((t.cpu_milli, t.memory_mib, t.num_gpu, t.gpu_milli, t.gpu_spec) for t in tasks)
        asked = sum(t.gpu_request_milli for t in tasks)
        cpu_only = sum(t.cpu_milli for t in tasks if t.num_gpu == 0)
        sys.stdout.write(f"\n{name}: {len(tasks)} tasks of {len(shapes)} shapes asking for {asked / MILLI:.1f} GPUs, "
                         f"{sum(t.cpu_milli for t in tasks) / 1000:.0f} cores ({cpu_only / 1000:.0f} by CPU-only "
                         f"tasks)\n")
        if args.runs:
            whole_runs(nodes, args.trace / f"openb_pod_list_{name}.csv", [p for p in args.runs.split(",") if p],
                       args.seeds, args.inflation)
        if args.skip_offline:
            continue
        lp, _, _ = offline_bound(node_types, shapes, args.time_limit, relax=True)
        best, bound, status = offline_bound(node_types, shapes, args.time_limit, relax=False)
        sys.stdout.write(f"  offline, LP relaxation: at most {lp / MILLI:.1f} GPUs allocated "
                         f"(>= {total - lp / MILLI:.1f} unallocated)\n")
        sys.stdout.write(f"  offline, integer ({status}): found {best / MILLI:.1f}, bound {bound / MILLI:.1f} GPUs "
                         f"(>= {total - bound / MILLI:.1f} unallocated)\n")
        big = [t for t in tasks if t.num_gpu == 1 and t.gpu_milli == 810]
        small = sum(t.gpu_milli for t in tasks if t.num_gpu == 1 and t.gpu_milli <= MILLI - 810)
        line = (f"  810-milli shares: {len(big)}; shares of <= 190 milli: {small / MILLI:.1f} GPUs in all; "
                f"every 810 placed leaves >= {(len(big) * (MILLI - 810) - small) / MILLI:.1f} GPUs unallocated")
        if args.before:
            early = sum(1 for t in tasks[:args.before] if t.num_gpu == 1 and t.gpu_milli == 810)
            line += (f"; the {early} arriving before task #{args.before}: >= "
                     f"{max(0, early * (MILLI - 810) - small) / MILLI:.1f}")
        sys.stdout.write(line + "\n")
        asked_so_far, marks = 0, []
        for percent in [float(p) for p in args.asked.split(",") if p]:
            index = 0
            asked_so_far = 0
            while index < len(tasks) and asked_so_far < percent / 100 * total * MILLI:
                asked_so_far += tasks[index].gpu_request_milli
                index += 1
            residue, count = share_residue_bound(tasks, index)
            marks.append(f"{percent:g}% (task #{index}): >= {residue:.1f}")
        sys.stdout.write("  share residues, every task placed until the first failure, which comes once the tasks "
                         "before it asked for " + "; ".join(marks) + " GPUs unallocated\n")
        if args.before:
            residue, count = share_residue_bound(tasks, args.before)
            sys.stdout.write(f"  all shares arriving before task #{args.before} placed (cutting-stock LP over {count} "
                             f"GPU configurations): >= {residue:.1f} GPUs left free on the GPUs holding shares\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
