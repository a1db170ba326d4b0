"""What explaining an unschedulable claim costs (issue 31), next to the search it explains.

Part 1, bounded-search cases: claims the search proves unsatisfiable in a few hundred steps
(the counting bound, or a constraint that prunes early) but whose explanation has to search
again with things relaxed. Per case, CPU milliseconds of `allocation.allocate` on one node:

  plain      explain=False: the search alone (the baseline, measured in the same run)
  explained  explain=True: the search and its explanation
  extra      explained - plain: what the explanation costs (goal: <= 50 ms on every case)
  before     the extra cost with the explanation as it was before issue 31 (each extra search
             up to 20,000 steps of its own, unguided), run here with that behaviour switched
             back on, in the same process
and whether the explanation's note is the same with and without the old behaviour (it may
only go from a named culprit to "cannot tell which" where the budget is too small, never
to another culprit).

Part 2, the Alibaba trace workloads (bench/traces.py, inflation 1.3, seed 0, first-fit):
`dralloc simulate`'s loop, in which the unplaced tasks are explained at the end; the seconds
spent inside the explanations against the placement loop's other seconds (goal: <= 10 %).

Part 3, one pod that fits nowhere on --nodes copies of an 8-GPU node (three requests of 3 GPUs in one
NUMA domain of 4): CPU seconds of the operator's decision for it (`Placer.place`, the search on every
node then the explanation), the first one (the nodes not yet compared) and one after a change of
the cluster, with nodes compared (allocation.equivalence) and without (signatures switched off).

Times are the minimum of --repeat runs of CPU time (process_time); prints, asserts nothing.
Usage: .venv/bin/python bench/explanations.py [--repeat 5] [--skip-traces | --trace DIR] [--files default,...] [--nodes 5000]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import pathlib
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from typing import Any

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "operator"))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from tests.builders import (
    DRIVER,
    claim,
    class_,
    device,
    node,
    result,
    slice_,
    snapshot,
    subrequest,
)

from dralloc import allocation
from dralloc.allocation import explaining, outcomes
from dralloc.allocation.features import Features
from dralloc.allocation.snapshots import Snapshot
from dralloc.model import claims as model_claims

GPU = class_("gpu", f'device.driver == "{DRIVER}"')
Case = tuple[Snapshot, list[model_claims.ResourceClaim], Features]


def _models(*names: str) -> list[str]:
    listed = ", ".join(f'"{n}"' for n in names)
    return [f'device.attributes["{DRIVER}"].model in [{listed}]']


def tight_competition() -> Case:
    """31 GPUs, 8 in use; four requests (8 any, 8 of models a/b, 7 of a, 8 of a/b/c) need 31 of
    the 23 usable. Leaving one request out leaves a tight fit that first-fit searching hunts for."""
    models = ["a"] * 7 + ["b"] * 8 + ["c"] * 8 + ["d"] * 8
    devices = [device(f"gpu-{i}").attr("model", m) for i, m in enumerate(models)]
    held = [claim(f"old-{i}").request("r", "gpu").allocated(result("r", f"gpu-{23 + i}")) for i in range(8)]
    wanted = (claim("c").request("r0", "gpu", count=8).request("r1", "gpu", count=8, selectors=_models("a", "b"))
              .request("r2", "gpu", count=7, selectors=_models("a")).request("r3", "gpu", count=8,
                                                                            selectors=_models("a", "b", "c")))
    return snapshot(classes=[GPU], slices=[slice_("s1", devices=devices)], allocated=held), [wanted.build()], \
        Features()


def tight_claims() -> Case:
    """The same 31 devices needed of 23 as eight claims of one request each (a gang member's claims)."""
    models = ["a"] * 7 + ["b"] * 8 + ["c"] * 8 + ["d"] * 8
    devices = [device(f"gpu-{i}").attr("model", m) for i, m in enumerate(models)]
    held = [claim(f"old-{i}").request("r", "gpu").allocated(result("r", f"gpu-{23 + i}")) for i in range(8)]
    shapes = [(4, ()), (4, ("a", "b")), (4, ("a",)), (3, ("a",)), (4, ("a", "b", "c")), (4, ("b",)),
              (4, ("a", "b")), (4, ())]
    wanted = [claim(f"c{i}").request("r", "gpu", count=n, selectors=_models(*ms) if ms else ()).build()
              for i, (n, ms) in enumerate(shapes)]
    return snapshot(classes=[GPU], slices=[slice_("s1", devices=devices)], allocated=held), wanted, Features()


def shares_in_one_numa() -> Case:
    """31 shareable GPUs (memory 10Gi; 8 hold a 6Gi share), four requests of 8, 8, 8, 7 shares of 6Gi in one
    NUMA node: the constraint prunes the search, the explanation's relaxed search cannot use the bound."""
    devices = [device(f"gpu-{i}").attr("numa", i % 4).capacity("memory", "10Gi").shared() for i in range(31)]
    held = [claim(f"old-{i}").request("r", "gpu", capacity={"memory": "6Gi"}).allocated(
        result("r", f"gpu-{i}", share_id=f"0000000{i}", consumed={"memory": "6Gi"})) for i in range(8)]
    wanted = claim("c")
    for k, count in enumerate((8, 8, 8, 7)):
        wanted = wanted.request(f"r{k}", "gpu", count=count, capacity={"memory": "6Gi"})
    wanted = wanted.constraint_match(f"{DRIVER}/numa")
    return snapshot(classes=[GPU], slices=[slice_("s1", devices=devices)], allocated=held), [wanted.build()], \
        Features(consumable_capacity=True)


def first_available_in_one_numa() -> Case:
    """Five requests of eight firstAvailable alternatives in one NUMA domain of two GPUs (the costly claim of
    issue 26, cut to a size the search finishes): 8 GPUs, 4 NUMA domains."""
    devices = [device(f"gpu-{i}").attr("numa", i // 2) for i in range(8)]
    wanted = claim("c")
    for r in range(3):
        wanted = wanted.first_available(f"r{r}", *(subrequest(f"a{a}", "gpu", 1) for a in range(8)))
    wanted = wanted.constraint_match(f"{DRIVER}/numa")
    return snapshot(classes=[GPU], slices=[slice_("s1", devices=devices)]), [wanted.build()], Features()


def distinct_and_match() -> Case:
    """Two constraints that each rule out every combination (one request pair must share a NUMA node, the
    other pair must not share a model) over 16 GPUs where both hold for no pick."""
    devices = [device(f"gpu-{i}").attr("numa", i // 8).attr("model", "x") for i in range(16)]
    wanted = (claim("c").request("a", "gpu", count=4).request("b", "gpu", count=4).request("c", "gpu", count=4)
              .constraint_match(f"{DRIVER}/numa", "a", "b", "c").constraint_distinct(f"{DRIVER}/model", "a", "b"))
    return snapshot(classes=[GPU], slices=[slice_("s1", devices=devices)]), [wanted.build()], Features()


CASES: dict[str, Callable[[], Case]] = {
    "tight-competition": tight_competition,
    "tight-claims": tight_claims,
    "shares-in-one-numa": shares_in_one_numa,
    "first-available-in-one-numa": first_available_in_one_numa,
    "distinct-and-match": distinct_and_match,
}


@contextlib.contextmanager
def before_issue_31() -> Iterator[None]:
    """The explanation as it was: no shared step budget, no matching-guided order."""
    total, guided = explaining.EXPLAIN_TOTAL_STEPS, explaining._guided
    explaining.EXPLAIN_TOTAL_STEPS = 10**12
    explaining._guided = lambda variant, scope, picks: (variant, scope)  # type: ignore[assignment]
    try:
        yield
    finally:
        explaining.EXPLAIN_TOTAL_STEPS, explaining._guided = total, guided


def _cpu(run: Callable[[], outcomes.Outcome], repeat: int) -> tuple[float, outcomes.Outcome]:
    best, outcome = float("inf"), None
    for _ in range(repeat):
        start = time.process_time()
        outcome = run()
        best = min(best, time.process_time() - start)
    assert outcome is not None
    return best, outcome


def _allocator(snap: Snapshot, wanted: list[model_claims.ResourceClaim],
               features: Features) -> Callable[[bool], Callable[[], outcomes.Outcome]]:
    def with_explain(explain: bool) -> Callable[[], outcomes.Outcome]:
        return lambda: allocation.allocate(snap, wanted, node(), features=features, explain=explain)
    return with_explain


def _notes(outcome: outcomes.Outcome) -> tuple[str, ...]:
    return tuple(r.message() for r in outcome.reasons) if isinstance(outcome, outcomes.Unsatisfiable) else ()


def bounded_search(repeat: int) -> None:
    print("Part 1: bounded-search cases, CPU ms per allocate call on one node (min of "
          f"{repeat}); goal: extra <= 50 ms")
    print(f"  {'case':30} {'outcome':14} {'steps':>6} {'plain':>8} {'explained':>10} {'extra':>8} "
          f"{'before':>8}  note")
    for name, build in CASES.items():
        snap, wanted, features = build()
        allocate = _allocator(snap, wanted, features)
        allocate(True)()  # compile the CEL once: not what either side is about
        plain, outcome = _cpu(allocate(False), repeat)
        explained, now = _cpu(allocate(True), repeat)
        with before_issue_31():
            old_explained, old = _cpu(allocate(True), repeat)
        notes_now, notes_old = _notes(now), _notes(old)
        if notes_now == notes_old:
            same = "same note as before"
        elif all("cannot tell which" in n for n in notes_now):
            same = "now 'cannot tell which' (budget)"
        else:
            same = "DIFFERENT note"
        print(f"  {name:30} {type(outcome).__name__:14} {getattr(outcome, 'steps', 0):>6} {plain * 1e3:8.1f} "
              f"{explained * 1e3:10.1f} {(explained - plain) * 1e3:8.1f} {(old_explained - plain) * 1e3:8.1f}  {same}")
        for note in notes_now[:1]:
            print(f"      {note}")


class _Timed:
    """Placer.explanation, with the CPU seconds spent in it counted."""

    def __init__(self, explanation: Callable[..., Any]) -> None:
        self.explanation, self.seconds, self.calls = explanation, 0.0, 0

    def __call__(self, item: Any, *, budget_exhausted: bool = False) -> Any:
        start = time.process_time()
        try:
            return self.explanation(item, budget_exhausted=budget_exhausted)
        finally:
            self.seconds += time.process_time() - start
            self.calls += 1


def traces_part(trace: pathlib.Path, files: list[str]) -> None:
    import traces

    from dralloc.offline import simulating

    print("\nPart 2: the Alibaba trace workloads (inflation 1.3, seed 0, first-fit): seconds in explanations "
          "against the rest of simulate's loop; goal: <= 10 %")
    nodes = traces.read_nodes(trace / "openb_node_list_gpu_node.csv")
    total = sum(n.gpus for n in nodes)
    with tempfile.TemporaryDirectory() as tmp:
        for name in files:
            tasks = traces.inflate(traces.read_tasks(trace / f"openb_pod_list_{name}.csv"), total,
                                   factor=1.3, seed=0)
            directory = pathlib.Path(tmp) / name
            directory.mkdir()
            traces._dump(traces.snapshot_objects(nodes, "capacity"), directory / "snapshot.yaml")
            traces._dump(traces.workload_objects(tasks, "capacity"), directory / "workload.yaml")
            request = simulating.Request(snapshot_files=[str(directory / "snapshot.yaml")],
                                         workload_files=[str(directory / "workload.yaml")], policy="first-fit",
                                         progress=False)
            placer, items, templates, claims = simulating.prepare(request, io.StringIO())
            timed = _Timed(placer.explanation)
            placer.explanation = timed  # type: ignore[method-assign]
            start = time.process_time()
            results = simulating.place_workload(placer, items, templates, claims, request, io.StringIO())
            loop = time.process_time() - start - timed.seconds
            unplaced = sum(r.placement is None for r in results)
            print(f"  {name:12} {len(results):>5} tasks, {unplaced:>4} unplaced: placement {loop:6.2f} s, "
                  f"explanations {timed.seconds:6.2f} s ({timed.calls} items) = {100 * timed.seconds / loop:5.1f} %")


def copies_part(count: int) -> None:
    from unittest import mock

    from dralloc.allocation import equivalence
    from dralloc.model import classes, conversion, devices, nodes
    from dralloc.scheduling import placement
    from dralloc.testing import cluster

    print(f"\nPart 3: one pod that fits nowhere on {count} copies of an 8-GPU node: CPU s of its decision "
          "(search on every node, then the explanation)")
    features = Features()
    node_list = [conversion.parse_as(nodes.Node, cluster.node(f"n{i:05d}")) for i in range(count)]
    slices = [conversion.parse_as(devices.ResourceSlice, cluster.gpu_slice(f"n{i:05d}", 8, numa_split=4))
              for i in range(count)]
    gpu = conversion.parse_as(classes.DeviceClass, cluster.gpu_class())
    requests = [{"name": f"r{k}", "exactly": {"deviceClassName": "gpu", "allocationMode": "ExactCount", "count": 3}}
                for k in range(3)]

    def item(name: str, spec: dict[str, Any]) -> placement.Item:
        raw = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name, "namespace": "t"},
               "spec": {"devices": spec}}
        return placement.Item(name, claims=(conversion.parse_as(model_claims.ResourceClaim, raw),))

    def hard(name: str) -> placement.Item:
        return item(name, {"requests": requests, "constraints": [{"matchAttribute": f"{DRIVER}/numa"}]})

    def another_tenant_placed(placer: placement.Placer, name: str) -> None:
        """A one-GPU claim placed and committed: the cluster changed, nothing remembered per change holds."""
        one = item(name, {"requests": [{"name": "r", "exactly": {"deviceClassName": "gpu"}}]})
        placed = placer.place(one, explain=False)
        assert isinstance(placed, placement.Placement)
        placer.commit(one, placed)

    for label in ("nodes compared", "not compared"):
        with contextlib.ExitStack() as stack:
            if label == "not compared":
                stack.enter_context(mock.patch.object(equivalence, "signature", return_value=None))
            snap = Snapshot.build(device_classes=[gpu], resource_slices=slices, allocated_claims=[], features=features)
            table = placement.NodeTable.of(node_list)  # kept across passes, as the operator's Views keeps it
            placer = placement.Placer(node_list=table, snapshot=snap, features=features)
            times = []
            for attempt in range(2):
                start = time.process_time()
                decision = placer.place(hard(f"hard-{attempt}"))
                times.append(time.process_time() - start)
                another_tenant_placed(placer, f"one-{attempt}")
            calls = placer.allocator_calls - 2  # less the two one-GPU placements
            # The operator's next pass: a new Placer over the same slices and nodes.
            placer = placement.Placer(node_list=table, snapshot=snap, features=features)
            start = time.process_time()
            decision = placer.place(hard("hard-next"))
            times.append(time.process_time() - start)
            print(f"  {label:15} first {times[0]:6.2f} s, after a change {times[1]:6.2f} s, next pass {times[2]:6.2f} s;"
                  f" {calls} + {placer.allocator_calls} allocator calls; {type(decision).__name__}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--skip-traces", action="store_true")
    parser.add_argument("--trace", type=pathlib.Path, metavar="DIR",
                        help="the folder of the Alibaba GPU trace's CSV files, for part 2 (see bench/traces.py)")
    parser.add_argument("--files", default="default,gpushare100,gpuspec33,multigpu50")
    parser.add_argument("--nodes", type=int, default=5000, help="Part 3's copies (0: skip it)")
    args = parser.parse_args()
    trace = None
    if not args.skip_traces:
        import traces

        trace = traces.require_trace(parser, args.trace or traces.DEFAULT_TRACE, ", or --skip-traces")
    bounded_search(args.repeat)
    if trace is not None:
        traces_part(trace, args.files.split(","))
    if args.nodes:
        copies_part(args.nodes)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
