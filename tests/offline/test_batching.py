"""FA-batch (issue 34): `dralloc simulate --batch N` decides single pods N at a time.

The pure part (`scheduling.batching`: the orders tried, the outcome kept) table-driven; then, on
generated clusters of whole GPUs, the properties: --batch 1 is today's one-by-one placement exactly,
and a burst's outcome is never worse than the same policy placing it in arrival order.
"""

from __future__ import annotations

import io
import pathlib
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.offline.conftest import Invoke
from tests.offline.files import GPU_CLASS, documents, gpus, node
from tests.scheduling.objects import pod_raw

from dralloc.offline import simulating
from dralloc.scheduling import batching

D = batching.Demand


@pytest.mark.parametrize(("demands", "limit", "expected"), [
    # arrival order always first
    ([D(1), D(2), D(4)], 1, [(0, 1, 2)]),
    # hardest first: most capacity, then the rarest shape, then the most CPU and memory
    ([D(1), D(2), D(4)], 4, [(0, 1, 2), (2, 1, 0)]),
    ([D(2, rarity=9), D(2, rarity=1)], 2, [(0, 1), (1, 0)]),
    ([D(1, 5, (1,)), D(1, 5, (3,)), D(2, 5, (0,))], 4, [(0, 1, 2), (2, 1, 0), (2, 0, 1), (1, 0, 2)]),
    # alike items: only arrival order (no repeats)
    ([D(1), D(1), D(1)], 4, [(0, 1, 2)]),
    ([D(Fraction(1, 2)), D(1)], 4, [(0, 1), (1, 0)]),
    ([], 4, [()]),
])
def test_orders(demands: list[batching.Demand], limit: int, expected: list[tuple[int, ...]]) -> None:
    assert batching.orders(demands, limit) == expected


def _s(allocated: object, fragmentation: object, *placed: int) -> batching.Score:
    return batching.Score(allocated, fragmentation, frozenset(placed))  # type: ignore[arg-type]


@pytest.mark.parametrize(("scores", "expected"), [
    ([_s(4, 0, 0, 1)], 0),
    # more capacity allocated wins, whatever the fragmentation
    ([_s(4, 0, 0, 1), _s(5, 9, 0, 1, 2)], 1),
    # then less fragmentation
    ([_s(4, 3, 0, 1), _s(4, 1, 0, 1), _s(4, 2, 0, 1)], 1),
    # then more items
    ([_s(4, 1, 0, 1), _s(4, 1, 0, 1, 2)], 1),
    # ties keep the first (arrival order)
    ([_s(4, 1, 0, 1), _s(4, 1, 1, 0)], 0),
    ([_s(Fraction(9, 2), 1, 0, 1), _s(4, 0, 0, 1)], 0),
    # no order is kept that loses an item arrival order places, however much more it allocates
    ([_s(4, 0, 0, 1), _s(8, 0, 2)], 0),
    ([_s(4, 0, 0, 1), _s(8, 0, 0, 2), _s(6, 0, 0, 1, 3)], 2),
    # arrival order placed nothing: any order may win
    ([_s(0, 0), _s(2, 0, 1)], 1),
])
def test_best(scores: list[batching.Score], expected: int) -> None:
    assert batching.best(scores) == expected


def test_best_of_nothing() -> None:
    with pytest.raises(ValueError, match="no score"):
        batching.best([])


# ---- simulate --------------------------------------------------------------------------------

def _template(count: int) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": f"gpus-{count}", "namespace": "default"},
            "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu",
                                                                                   "count": count}}]}}}}


def _files(directory: pathlib.Path, node_gpus: list[int], pod_gpus: list[int]) -> tuple[str, str]:
    directory.mkdir(parents=True, exist_ok=True)
    names = [f"node-{i}" for i in range(len(node_gpus))]
    snapshot = documents(directory / "snapshot.yaml", [
        GPU_CLASS, *[node(n) for n in names], *[gpus(n, c) for n, c in zip(names, node_gpus, strict=True)]])
    pods = [pod_raw(f"p{i}", cpu="1", claims=[{"name": "gpus", "resourceClaimTemplateName": f"gpus-{c}"}])
            for i, c in enumerate(pod_gpus)]
    workload = documents(directory / "workload.yaml", [*[_template(c) for c in sorted(set(pod_gpus))], *pods])
    return snapshot, workload


def _run(snapshot: str, workload: str, batch: int) -> dict[str, Any]:
    return simulating.simulate(simulating.Request(snapshot_files=[snapshot], workload_files=[workload],
                                                  policy="fragmentation-aware", progress=False, batch=batch),
                               io.StringIO())


def _gpus_placed(report: dict[str, Any]) -> int:
    return sum(len(line.split()) - 2 for line in report["placements"])


def _pods_placed(report: dict[str, Any]) -> set[str]:
    return {line.split()[0] for line in report["placements"]}


CLUSTERS = st.lists(st.sampled_from([1, 2, 4, 8]), min_size=1, max_size=4)
PODS = st.lists(st.sampled_from([1, 2, 4]), min_size=1, max_size=12)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(node_gpus=CLUSTERS, pod_gpus=PODS)
def test_batch_one_is_one_by_one(tmp_path_factory: pytest.TempPathFactory, node_gpus: list[int],
                                 pod_gpus: list[int]) -> None:
    snapshot, workload = _files(tmp_path_factory.mktemp("batch1"), node_gpus, pod_gpus)
    today = _run(snapshot, workload, 1)
    default = simulating.simulate(simulating.Request(snapshot_files=[snapshot], workload_files=[workload],
                                                     policy="fragmentation-aware", progress=False), io.StringIO())
    assert today["placements"] == default["placements"]
    assert today["unplaced"] == default["unplaced"]


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(node_gpus=CLUSTERS, pod_gpus=PODS)
def test_a_burst_is_never_worse_than_arrival_order(tmp_path_factory: pytest.TempPathFactory, node_gpus: list[int],
                                                   pod_gpus: list[int]) -> None:
    """One burst holding the whole workload: at least the GPUs arrival order places, and when as many,
    the same placements or another order that places at least as many pods."""
    snapshot, workload = _files(tmp_path_factory.mktemp("burst"), node_gpus, pod_gpus)
    arrival = _run(snapshot, workload, 1)
    burst = _run(snapshot, workload, len(pod_gpus) + 1)
    assert _gpus_placed(burst) >= _gpus_placed(arrival)
    assert _pods_placed(burst) >= _pods_placed(arrival)  # no pod loses the placement it gets in its turn
    if _gpus_placed(burst) == _gpus_placed(arrival):
        assert burst["placed"] >= arrival["placed"] or burst["placements"] == arrival["placements"]
    again = _run(snapshot, workload, len(pod_gpus) + 1)
    assert again["placements"] == burst["placements"]  # deterministic


def test_a_full_burst_fits(tmp_path: pathlib.Path) -> None:
    """Two 4-GPU nodes, four 1-GPU pods then a 4-GPU pod, in one burst: every pod fits."""
    snapshot, workload = _files(tmp_path, [4, 4], [1, 1, 1, 1, 4])
    burst = _run(snapshot, workload, 5)
    assert burst["placed"] == 5
    assert _gpus_placed(burst) == 8


def test_results_keep_arrival_order(tmp_path: pathlib.Path) -> None:
    snapshot, workload = _files(tmp_path, [4, 2], [1, 2, 4, 1])
    report = _run(snapshot, workload, 4)
    assert [line.split()[0] for line in report["placements"]] == sorted(
        (line.split()[0] for line in report["placements"]), key=lambda n: int(n[1:]))


class TestCommand:
    def test_batch_needs_fragmentation_aware(self, dralloc: Invoke, tmp_path: pathlib.Path) -> None:
        snapshot, workload = _files(tmp_path, [4], [1])
        run = dralloc("simulate", "-f", snapshot, "--workload", workload, "--batch", "8")
        assert run.code == 2
        assert "--batch 8 needs --policy fragmentation-aware" in run.err

    def test_batch_and_compare_policies_refused(self, dralloc: Invoke, tmp_path: pathlib.Path) -> None:
        snapshot, workload = _files(tmp_path, [4], [1])
        run = dralloc("simulate", "-f", snapshot, "--workload", workload, "--batch", "8", "--compare-policies")
        assert run.code == 2
        assert "--batch and --compare-policies cannot be combined" in run.err

    def test_batch_at_least_one(self, dralloc: Invoke, tmp_path: pathlib.Path) -> None:
        snapshot, workload = _files(tmp_path, [4], [1])
        with pytest.raises(SystemExit):
            dralloc("simulate", "-f", snapshot, "--workload", workload, "--batch", "0")

    def test_batch_with_add_nodes(self, dralloc: Invoke, tmp_path: pathlib.Path) -> None:
        snapshot, workload = _files(tmp_path, [4], [4, 4, 1])
        extra = documents(tmp_path / "extra.yaml", [node("extra"), gpus("extra", 4)])
        run = dralloc("simulate", "-f", snapshot, "--workload", workload, "--policy", "fragmentation-aware",
                      "--batch", "3", "--add-nodes", extra, "-o", "json")
        assert run.code == 1
        report = run.json()
        assert report["placed"] == 1
        assert report["addNodes"]["nodes"] == 2  # a 4-GPU pod and a 1-GPU pod left


def test_gangs_are_kept_out_of_bursts(tmp_path: pathlib.Path) -> None:
    """A gang is decided at its minCount-th member as without --batch; the single pods around it are
    batched, the burst before a member decided first."""
    from tests.offline.test_simulate_gangs import TWO_GPUS, member, pod_group

    snapshot = documents(tmp_path / "snapshot.yaml", [GPU_CLASS, node("node-a"), node("node-b"),
                                                      gpus("node-a", 4), gpus("node-b", 4)])
    singles = [pod_raw(f"s{i}", cpu="1", claims=[{"name": "gpus", "resourceClaimTemplateName": "gpus-1"}])
               for i in range(3)]
    workload = documents(tmp_path / "workload.yaml", [
        TWO_GPUS, _template(1), pod_group("train", 2), singles[0], member("m0"), singles[1], member("m1"),
        singles[2]])
    one = _run(snapshot, workload, 1)
    burst = _run(snapshot, workload, 4)
    assert [g["placed"] for g in burst["gangs"]] == [g["placed"] for g in one["gangs"]] == [2]
    assert burst["placed"] == one["placed"] == 5
