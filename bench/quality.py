"""Placement quality on the Alibaba GPU trace: the paper's inflation experiment, and an exact judge.

Inflation (Weng et al., ATC '23): tasks drawn from a trace file (seeded, with
replacement) until they ask for 1.3x the cluster's GPUs, placed one at a time in
arrival order by `dralloc simulate`'s own loop (explanations of unplaced items
included, as simulate reports them). Per trace file and policy: the share of GPU
capacity allocated when the first task fails and at the end, the GPUs left
unallocated, the tasks placed and decisions per second (every item decided, placed
or not, over the loop's seconds). All policies run in the same process one after
the other: compare ratios, not absolute speeds, on a shared machine.

`--seeds` (default 0-9): one arrival order per seed; with more than one, a line per seed
and policy, then per file and policy the mean and the worst (most) unallocated GPUs over
the seeds, the best, and the means of the other columns. One seed gives the table alone
(a quick run: `--seeds 0`). The paper's FGD, run by its authors' simulator on the same
arrivals (issue 34: the default file, 286.3 mean over the paper's seeds 42-51, 284.1 on
seed 0), is printed under the default file's summary for comparison.

`--policies` also takes `fragmentation-aware+batchN`: `dralloc simulate --batch N` (issue 34's
FA-batch: arrivals decided N at a time, the burst's order chosen among arrival order and a few
hardest-first orders; `scheduling.batching`). The arrivals are the same; only the decisions differ.

`--sharing partitions` converts the trace with GPUs as partitions on shared counters
(bench/traces.py): a placed task then takes its partitions' size (a share the smallest
partition of quarters that holds it, a whole GPU 1000), which is what "allocated" and
"unallocated GPUs" count; what rounding strands is allocated but unused, and a line after
the table gives what the placed tasks asked for against what their partitions took. The
judge then solves the tasks rounded to their partitions (the same problem: any quarters
that add up to at most 4 are partitions of one GPU).

The judge (OR-Tools CP-SAT, `pip install ortools`; not a runtime dependency):
small clusters drawn from the trace's nodes with a seeded inflated workload, solved
exactly for "place as many of these tasks as possible" (each task on one node of an
allowed model, shares on one GPU, whole GPUs exclusive, CPU and memory per node),
next to what each policy places in arrival order. Solved to optimality within the
time limit, or reported with the solver's bound. A second, fair reference: the same problem
with the rule every arrival-order policy obeys (a task that fits some node when it arrives is
placed, nothing moves): the best any such policy could do, whatever its choice of node and
GPUs. The offline optimum may skip a task that fits to keep room for later ones; the gap to
it includes what no arrival-order policy can recover.

Prints numbers, asserts nothing. Usage:
  .venv/bin/python bench/quality.py [--files default,gpushare100,...] [--policies ...] [--seeds 0-9]
      [--judge 10] [--sharing capacity|partitions]
"""

from __future__ import annotations

import argparse
import dataclasses
import pathlib
import random
import sys
import tempfile
import time
from collections.abc import Sequence

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "operator"))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import traces

from dralloc.offline import simulating
from dralloc.scheduling import placement

POLICIES = ("first-fit", "binpack", "spread", "fragmentation-aware")


@dataclasses.dataclass
class Outcome:
    policy: str
    at_first_failure: float  # percent of GPU capacity allocated when the first task failed
    at_end: float
    unallocated_gpus: float
    placed: int
    items: int
    decisions_per_second: float
    allocated_milli: int = 0  # GPU capacity the placed tasks took
    # Per task in arrival order: (node name, device names), or None when not placed.
    where: list[tuple[str, tuple[str, ...]] | None] = dataclasses.field(default_factory=list, repr=False)
    asked_milli: int = 0  # GPU capacity the placed tasks asked for (less than taken: partitions' rounding)


def run_policy(policy: str, snapshot: pathlib.Path, workload: pathlib.Path, tasks: Sequence[traces.TraceTask],
               total_milli: int, sharing: str = "capacity") -> Outcome:
    """simulate's loop on the files, with the GPU capacity each placed task takes counted
    (`sharing` as the files were converted: partitions take their size, see TraceTask.taken_milli)."""
    base, _, consolidate = policy.partition("+consolidate")
    base, _, batch = base.partition("+batch")
    request = simulating.Request(snapshot_files=[str(snapshot)], workload_files=[str(workload)], policy=base,
                                 progress=False, batch=int(batch) if batch else 1,
                                 consolidate=int(consolidate) if consolidate else 0)
    sink = open("/dev/null", "w")
    placer, items, templates, claims = simulating.prepare(request, sink)
    start = time.perf_counter()
    results = simulating.place_workload(placer, items, templates, claims, request, sink)
    elapsed = time.perf_counter() - start
    sink.close()
    by_name = {t.name: t for t in tasks}
    allocated, asked, first_failure = 0, 0, None
    for result in results:
        task = by_name[result.item.name]
        if result.placement is not None:
            allocated += task.taken_milli(sharing)
            asked += task.gpu_request_milli
        elif first_failure is None:
            first_failure = allocated
    first_failure = allocated if first_failure is None else first_failure
    where = [(r.placement.node, tuple(d.device for a in r.placement.results for d in a.devices.results))
             if r.placement is not None else None for r in results]
    return Outcome(policy, 100 * first_failure / total_milli, 100 * allocated / total_milli,
                   (total_milli - allocated) / traces.MILLI, sum(r.placement is not None for r in results),
                   len(results), len(results) / elapsed if elapsed > 0 else 0.0, allocated, where, asked)


def write(nodes: Sequence[traces.TraceNode], tasks: Sequence[traces.TraceTask], directory: pathlib.Path,
          sharing: str = "capacity") -> tuple[pathlib.Path, pathlib.Path]:
    directory.mkdir(parents=True, exist_ok=True)
    traces._dump(traces.snapshot_objects(nodes, sharing), directory / "snapshot.yaml")
    # Every task marked movable: only --consolidate reads the mark, so the other policies place the same pods.
    traces._dump(traces.workload_objects(tasks, sharing, movable=True), directory / "workload.yaml")
    return directory / "snapshot.yaml", directory / "workload.yaml"


def table(outcomes: Sequence[Outcome], out: object = sys.stdout) -> None:
    write_ = out.write  # type: ignore[attr-defined]
    width = max([27, *(len(o.policy) for o in outcomes)])
    write_(f"  {'policy':{width}} {'alloc@1st-fail':>14} {'alloc@end':>9} {'unalloc GPUs':>12} {'tasks placed':>14} "
           f"{'decisions/s':>11}\n")
    for o in outcomes:
        write_(f"  {o.policy:{width}} {o.at_first_failure:13.1f}% {o.at_end:8.1f}% {o.unallocated_gpus:12.1f} "
               f"{o.placed:>6}/{o.items:<7} {o.decisions_per_second:11.0f}\n")


# The paper's FGD in its authors' simulator on the same arrivals (issue 34): file -> (what, GPUs).
FGD = {"default": (("over the paper's seeds 42-51 (--seeds 42-51 here), mean", 286.3), ("seed 0", 284.1))}


def known_policy(name: str) -> bool:
    """A placement policy, or fragmentation-aware with `+batchN` (simulate's --batch N, issue 34's FA-batch)
    and/or `+consolidateM` (simulate's --consolidate M: every trace task is marked movable), N, M >= 1."""
    rest, plus_c, moves = name.partition("+consolidate")
    if plus_c and not (moves.isdigit() and int(moves) >= 1):
        return False
    base, plus_b, batch = rest.partition("+batch")
    if not plus_b and not plus_c:
        return base in placement.POLICIES
    return base == "fragmentation-aware" and (not plus_b or (batch.isdigit() and int(batch) >= 1))


def seed_list(text: str) -> list[int]:
    """"0-9", "0,3,5-7": the seeds, in the order given."""
    seeds: list[int] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        low, dash, high = part.partition("-")
        try:
            seeds.extend(range(int(low), int(high) + 1) if dash else [int(low)])
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a seed or a range of seeds: {part!r}") from None
    if not seeds:
        raise argparse.ArgumentTypeError("no seed")
    return seeds


def versus_baselines(outcomes: Sequence[Outcome], out: object = sys.stdout) -> None:
    baselines = [o for o in outcomes if o.policy in ("first-fit", "binpack", "spread")]
    mine = [o for o in outcomes if o.policy.startswith("fragmentation-aware")]
    if baselines and mine:
        best = min(o.unallocated_gpus for o in baselines)
        out.write(f"  fragmentation-aware vs the best baseline: {mine[0].unallocated_gpus:.1f} vs "  # type: ignore[attr-defined]
                  f"{best:.1f} unallocated GPUs ({100 * (best - mine[0].unallocated_gpus) / best:+.1f}% fewer)\n")


def summary(name: str, seeds: Sequence[int], runs: Sequence[Sequence[Outcome]], out: object = sys.stdout) -> None:
    """Per policy over the seeds: unallocated GPUs (mean, worst, best) and the means of the rest."""
    write_ = out.write  # type: ignore[attr-defined]
    shown = f"{seeds[0]}-{seeds[-1]}" if list(seeds) == list(range(seeds[0], seeds[-1] + 1)) else \
        ",".join(map(str, seeds))
    write_(f"\n{name}, {len(seeds)} seeds ({shown}): unallocated GPUs at the end of inflation\n")
    write_(f"  {'policy':27} {'mean':>7} {'worst':>7} {'best':>7} {'alloc@1st-fail':>14} {'tasks placed':>12} "
           f"{'decisions/s':>11}\n")
    for column, first in enumerate(runs[0]):
        rows = [run[column] for run in runs]
        unallocated = [o.unallocated_gpus for o in rows]
        write_(f"  {first.policy:27} {sum(unallocated) / len(rows):7.1f} {max(unallocated):7.1f} "
               f"{min(unallocated):7.1f} {sum(o.at_first_failure for o in rows) / len(rows):13.1f}% "
               f"{sum(o.placed for o in rows) / len(rows):12.1f} "
               f"{sum(o.decisions_per_second for o in rows) / len(rows):11.0f}\n")
    for what, gpus in FGD.get(name, ()):
        write_(f"  the paper's FGD (its authors' simulator, issue 34), {what}: {gpus:.1f}\n")


def rounding_line(outcomes: Sequence[Outcome], out: object = sys.stdout) -> None:
    """Partitions: per policy, the GPUs the placed tasks asked for against those their partitions took."""
    parts = [f"{o.policy} {o.asked_milli / traces.MILLI:.1f} vs {o.allocated_milli / traces.MILLI:.1f} "
             f"({(o.allocated_milli - o.asked_milli) / traces.MILLI:.1f} stranded by rounding)" for o in outcomes]
    out.write(f"  GPUs the placed tasks asked for vs their partitions took: {'; '.join(parts)}\n")  # type: ignore[attr-defined]


def rounded(task: traces.TraceTask) -> traces.TraceTask:
    """The task asking for what its partitions take (a share rounded up to whole quarters)."""
    if task.num_gpu != 1:
        return task
    return dataclasses.replace(task, gpu_milli=task.partition_slices * traces.SLICE_MILLI)


# ---- the exact judge ------------------------------------------------------------------------

def optimum(nodes: Sequence[traces.TraceNode], tasks: Sequence[traces.TraceTask], time_limit: float, *,
            arrival_order: bool = False, hint: Sequence[tuple[str, tuple[str, ...]] | None] | None = None,
            objective: str = "tasks") -> tuple[int, int, bool]:
    """(best found, bound, proven) for "place as many tasks as possible" (`objective` "gpus":
    as much GPU capacity as possible, in milli-GPUs: the inflation experiment's measure).

    `arrival_order`: with the constraint every policy of the inflation experiment obeys (tasks
    placed one at a time in arrival order, none moved, each placed if it fits some node then):
    a task left out must not fit any node given the tasks before it that were placed. This is
    the best any arrival-order policy can do (its choice of node and GPUs free), a fair
    reference; the unconstrained optimum is free to skip a task that fits, to keep room for
    later ones, which no such policy may do.

    `hint`: a policy's placement (per task: node and device names, or None), a solution of
    both problems, given to the solver as its first one (the solver still proves the rest).
    """
    from ortools.sat.python import cp_model

    model = cp_model.CpModel()
    placed = []
    node_vars: list[list[tuple[int, object]]] = [[] for _ in nodes]
    gpu_use: list[list[list[tuple[int, object]]]] = [[[] for _ in range(n.gpus)] for n in nodes]
    options_of: list[dict[int, object]] = []
    gpu_vars: list[dict[int, list[object]]] = []
    for t, task in enumerate(tasks):
        options = []
        by_node: dict[int, object] = {}
        gpus_of: dict[int, list[object]] = {}
        for n, node in enumerate(nodes):
            if task.gpu_spec and node.model not in task.gpu_spec:
                continue
            if task.num_gpu > node.gpus or task.cpu_milli > node.cpu_milli or task.memory_mib > node.memory_mib:
                continue
            x = model.new_bool_var(f"x{t}_{n}")
            options.append(x)
            by_node[n] = x
            node_vars[n].append((t, x))
            if task.num_gpu == 0:
                continue
            gpus = [model.new_bool_var(f"g{t}_{n}_{g}") for g in range(node.gpus)]
            gpus_of[n] = gpus
            model.add(sum(gpus) == task.num_gpu * x)
            milli = task.gpu_milli if task.num_gpu == 1 else traces.MILLI
            for g, var in enumerate(gpus):
                gpu_use[n][g].append((milli, var))
        if options:
            is_placed = model.new_bool_var(f"p{t}")
            model.add(sum(options) == is_placed)
            placed.append(is_placed)
        else:
            placed.append(0)
        options_of.append(by_node)
        gpu_vars.append(gpus_of)
    for n, node in enumerate(nodes):
        model.add(sum(tasks[t].cpu_milli * x for t, x in node_vars[n]) <= node.cpu_milli)
        model.add(sum(tasks[t].memory_mib * x for t, x in node_vars[n]) <= node.memory_mib)
        for uses in gpu_use[n]:
            if uses:
                model.add(sum(m * v for m, v in uses) <= traces.MILLI)
    reason_vars: dict[tuple[int, int], list[object]] = {}  # (task, node) -> [cpu, memory(, gpu)] fail
    short_vars: dict[tuple[int, int], list[object]] = {}  # (task, node) -> per GPU: too little free
    if arrival_order:
        for t, task in enumerate(tasks):
            if not options_of[t]:
                continue  # fits no node even empty: never placed, by any policy
            for n, node in enumerate(nodes):
                if n not in options_of[t]:
                    continue
                earlier = [(u, x) for u, x in node_vars[n] if u < t]
                reasons = []
                cpu_fail = model.new_bool_var(f"cpu{t}_{n}")
                reason_vars[(t, n)] = reasons
                model.add(sum(tasks[u].cpu_milli * x for u, x in earlier) >= node.cpu_milli - task.cpu_milli + 1
                          ).only_enforce_if(cpu_fail)
                mem_fail = model.new_bool_var(f"mem{t}_{n}")
                model.add(sum(tasks[u].memory_mib * x for u, x in earlier) >= node.memory_mib - task.memory_mib + 1
                          ).only_enforce_if(mem_fail)
                reasons.extend([cpu_fail, mem_fail])
                if task.num_gpu:
                    used = [sum((tasks[u].gpu_milli if tasks[u].num_gpu == 1 else traces.MILLI) * gpu_vars[u][n][g]
                                for u, _ in earlier if tasks[u].num_gpu) for g in range(node.gpus)]
                    gpu_fail = model.new_bool_var(f"gpu{t}_{n}")
                    need = task.gpu_milli if task.num_gpu == 1 else traces.MILLI
                    # Fits iff at least num_gpu GPUs have `need` free: fails iff more than
                    # gpus - num_gpu of them have less.
                    short = []
                    for g in range(node.gpus):
                        b = model.new_bool_var(f"short{t}_{n}_{g}")
                        model.add(used[g] >= traces.MILLI - need + 1).only_enforce_if(b)
                        short.append(b)
                    model.add(sum(short) >= node.gpus - task.num_gpu + 1).only_enforce_if(gpu_fail)
                    reasons.append(gpu_fail)
                    short_vars[(t, n)] = short
                model.add_bool_or([placed[t], *reasons])
    if hint is not None:
        _hint(model, nodes, tasks, hint, options_of, gpu_vars, reason_vars, short_vars)
    if objective == "gpus":
        model.maximize(sum(t.gpu_request_milli * p for t, p in zip(tasks, placed, strict=True)))
    else:
        model.maximize(sum(placed))
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = time_limit
    solver.parameters.num_workers = 1  # a shared machine; and deterministic
    solver.parameters.random_seed = 0
    status = solver.solve(model)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return 0, len(tasks), False
    return int(solver.objective_value), int(solver.best_objective_bound), status == cp_model.OPTIMAL


def _hint(model: object, nodes: Sequence[traces.TraceNode], tasks: Sequence[traces.TraceTask],
          where: Sequence[tuple[str, tuple[str, ...]] | None], options_of: list[dict[int, object]],
          gpu_vars: list[dict[int, list[object]]], reason_vars: dict[tuple[int, int], list[object]],
          short_vars: dict[tuple[int, int], list[object]]) -> None:
    """The placement as the solver's first solution, with the why-not literals it implies."""
    index = {n.name: i for i, n in enumerate(nodes)}
    cpu = [0] * len(nodes)
    memory = [0] * len(nodes)
    used = [[0] * n.gpus for n in nodes]
    add = model.add_hint  # type: ignore[attr-defined]
    for t, task in enumerate(tasks):
        at = where[t]
        chosen = index[at[0]] if at is not None else None
        need = task.gpu_milli if task.num_gpu == 1 else traces.MILLI
        for n, x in options_of[t].items():
            add(x, n == chosen)
            picked = {traces.gpu_index(d) for d in at[1]} if n == chosen and at is not None else set()
            for g, var in enumerate(gpu_vars[t].get(n, ())):
                add(var, g in picked)
            reasons = reason_vars.get((t, n))
            if reasons is not None:
                node = nodes[n]
                add(reasons[0], cpu[n] > node.cpu_milli - task.cpu_milli)
                add(reasons[1], memory[n] > node.memory_mib - task.memory_mib)
                if len(reasons) > 2:
                    short = [used[n][g] > traces.MILLI - need for g in range(node.gpus)]
                    for var, value in zip(short_vars[(t, n)], short, strict=True):
                        add(var, value)
                    add(reasons[2], sum(short) >= node.gpus - task.num_gpu + 1)
        if chosen is not None and at is not None:
            cpu[chosen] += task.cpu_milli
            memory[chosen] += task.memory_mib
            for d in at[1]:
                used[chosen][traces.gpu_index(d)] += need


def judge(all_nodes: Sequence[traces.TraceNode], all_tasks: Sequence[traces.TraceTask], *, instances: int,
          node_count: int, policies: Sequence[str], time_limit: float, workdir: pathlib.Path,
          inflation: float = 1.3, objective: str = "tasks", sharing: str = "capacity") -> None:
    what = "tasks placed" if objective == "tasks" else "milli-GPUs allocated"
    sys.stdout.write(f"\nexact judge: {instances} instances of {node_count} nodes drawn from the trace, tasks "
                     f"inflated to {inflation}x their GPUs; {what}, gap to the offline optimum (free to skip "
                     f"a task that fits) / to the best arrival-order placement (every task that fits placed)\n")
    gaps: dict[str, list[float]] = {p: [] for p in policies}
    arrival_gaps: dict[str, list[float]] = {p: [] for p in policies}
    for seed in range(instances):
        rng = random.Random(seed)
        nodes = sorted(rng.sample(list(all_nodes), node_count), key=lambda n: n.name)
        tasks = traces.inflate(all_tasks, sum(n.gpus for n in nodes), factor=inflation, seed=seed)
        snapshot, workload = write(nodes, tasks, workdir / f"judge-{seed}", sharing)
        total = sum(n.gpus for n in nodes) * traces.MILLI
        outcomes = [run_policy(policy, snapshot, workload, tasks, total, sharing) for policy in policies]
        if sharing == "partitions":
            tasks = [rounded(t) for t in tasks]  # the solver's problem: what the partitions take
        # The best policy's placement starts both solvers: a solution of both problems.
        def value(o: Outcome) -> int:
            return o.placed if objective == "tasks" else o.allocated_milli

        start = max(outcomes, key=value).where if outcomes else None
        best, bound, proven = optimum(nodes, tasks, time_limit, hint=start, objective=objective)
        a_best, a_bound, a_proven = optimum(nodes, tasks, time_limit, arrival_order=True, hint=start,
                                            objective=objective)
        a_bound = min(a_bound, bound)  # a restriction of the offline problem: its bound holds too
        line = f"  #{seed:<2} {sum(n.gpus for n in nodes):3} GPUs {len(tasks):3} tasks  optimum " + (
            f"{best}" if proven else f"{best}..{bound} (not proven in {time_limit:.0f} s)") + "  arrival-order " + (
            f"{a_best}" if a_proven else f"{a_best}..{a_bound} (not proven)")
        for policy, outcome in zip(policies, outcomes, strict=True):
            reference = best if proven else bound
            gap = 100 * (reference - value(outcome)) / reference if reference else 0.0
            a_reference = a_best if a_proven else a_bound
            a_gap = 100 * (a_reference - value(outcome)) / a_reference if a_reference else 0.0
            if proven:
                gaps[policy].append(gap)
            if a_proven:
                arrival_gaps[policy].append(a_gap)
            line += f"  {policy} {value(outcome)} ({gap:.1f}% / {a_gap:.1f}%)"
        sys.stdout.write(line + "\n")
        sys.stdout.flush()
    for policy in policies:
        for label, values in (("offline optimum", gaps[policy]), ("best arrival-order", arrival_gaps[policy])):
            if values:
                sys.stdout.write(f"  {policy}: gap to the {label} on {len(values)} proven instances: mean "
                                 f"{sum(values) / len(values):.2f}% max {max(values):.2f}%\n")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trace", type=pathlib.Path, default=traces.DEFAULT_TRACE, metavar="DIR",
                        help="the folder of the Alibaba GPU trace's CSV files (see bench/traces.py)")
    parser.add_argument("--files", default="default,gpushare100,multigpu50,gpuspec33",
                        help="pod lists openb_pod_list_<name>.csv, comma-separated")
    parser.add_argument("--policies", default=",".join(POLICIES))
    parser.add_argument("--seeds", type=seed_list, default=list(range(10)), metavar="LIST",
                        help="arrival orders: seeds as a comma-separated list of numbers and ranges "
                             "(default 0-9; one seed for a quick run)")
    parser.add_argument("--seed", type=int, dest="single_seed", default=None, help="the same as --seeds N")
    parser.add_argument("--inflation", type=float, default=1.3)
    parser.add_argument("--judge", type=int, default=10, metavar="N", help="exact-judge instances (0: none)")
    parser.add_argument("--judge-nodes", type=int, default=4)
    parser.add_argument("--judge-objective", choices=("tasks", "gpus"), default="tasks",
                        help="what the judge maximizes: tasks placed, or GPU capacity allocated (what the "
                             "inflation experiment counts; a task count rewards failing one large task for "
                             "several small ones)")
    parser.add_argument("--judge-inflation", type=float, default=1.3,
                        help="the judge's tasks ask for this multiple of its cluster's GPUs")
    parser.add_argument("--time-limit", type=float, default=20.0, help="CP-SAT seconds per instance")
    parser.add_argument("--skip-inflation", action="store_true")
    parser.add_argument("--sharing", choices=traces.SHARING, default="capacity",
                        help="how the converter shares GPUs: capacity (consumable capacity, a share takes its "
                             "milli-GPUs) or partitions (shared counters, a share takes the smallest partition of "
                             "quarters that holds it; allocated counts the partitions); default capacity")
    args = parser.parse_args(argv)
    policies = [p for p in args.policies.split(",") if p]
    unknown = [p for p in policies if not known_policy(p)]
    if unknown:
        sys.stderr.write(f"error: --policies: unknown {', '.join(unknown)}; known: {', '.join(placement.POLICIES)}, "
                         f"and fragmentation-aware+batchN (simulate --batch N), +consolidateM (--consolidate M)\n")
        return 2
    nodes = traces.read_nodes(traces.require_trace(parser, args.trace) / "openb_node_list_gpu_node.csv")
    total = sum(n.gpus for n in nodes)
    with tempfile.TemporaryDirectory(prefix="dralloc-quality-") as tmp:
        workdir = pathlib.Path(tmp)
        seeds = [args.single_seed] if args.single_seed is not None else args.seeds
        for name in [f for f in args.files.split(",") if f]:
            tasks_all = traces.read_tasks(args.trace / f"openb_pod_list_{name}.csv")
            if not args.skip_inflation:
                runs: list[list[Outcome]] = []
                for seed in seeds:
                    tasks = traces.inflate(tasks_all, total, factor=args.inflation, seed=seed)
                    snapshot, workload = write(nodes, tasks, workdir / name, args.sharing)
                    shown = "" if args.sharing == "capacity" else f", sharing {args.sharing}"
                    sys.stdout.write(f"\n{name}: {len(nodes)} nodes, {total} GPUs, {len(tasks)} tasks "
                                     f"(inflation {args.inflation}, seed {seed}{shown})\n")
                    outcomes = []
                    for policy in policies:
                        outcomes.append(run_policy(policy, snapshot, workload, tasks, total * traces.MILLI,
                                                   args.sharing))
                        sys.stdout.flush()
                    table(outcomes)
                    if args.sharing == "partitions":
                        rounding_line(outcomes)
                    versus_baselines(outcomes)
                    runs.append(outcomes)
                    sys.stdout.flush()
                if len(seeds) > 1:
                    summary(name, seeds, runs)
            if args.judge and name == "default":
                judge(nodes, tasks_all, instances=args.judge, node_count=args.judge_nodes, policies=policies,
                      time_limit=args.time_limit, workdir=workdir, inflation=args.judge_inflation,
                      objective=args.judge_objective, sharing=args.sharing)
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
