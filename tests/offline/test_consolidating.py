"""Consolidation (issue 34): `dralloc simulate --consolidate M` gives a pod that fits nowhere a node by moving
at most M pods annotated `dralloc.io/movable: "true"` elsewhere, each placed again by the policy; when one of
them finds no place, nothing moves."""

from __future__ import annotations

import io
import pathlib
from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.offline.conftest import Invoke
from tests.offline.files import GPU_CLASS, documents, gpus, node
from tests.scheduling.objects import pod_raw

from dralloc.offline import simulating
from dralloc.scheduling import consolidating


def _template(count: int) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": f"gpus-{count}", "namespace": "default"},
            "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu",
                                                                                   "count": count}}]}}}}


def _files(directory: pathlib.Path, nodes: list[tuple[int, str]], pods: list[tuple[int, str]],
           movable: bool = True) -> tuple[str, str]:
    """Nodes node-0... of (GPUs, CPU); pods p0... of (GPUs, CPU), in arrival order."""
    directory.mkdir(parents=True, exist_ok=True)
    names = [f"node-{i}" for i in range(len(nodes))]
    snapshot = documents(directory / "snapshot.yaml", [
        GPU_CLASS, *[node(n, cpu=cpu) for n, (_, cpu) in zip(names, nodes, strict=True)],
        *[gpus(n, count) for n, (count, _) in zip(names, nodes, strict=True)]])
    raws = []
    for i, (count, cpu) in enumerate(pods):
        raw = pod_raw(f"p{i}", cpu=cpu, claims=[{"name": "gpus", "resourceClaimTemplateName": f"gpus-{count}"}])
        if movable:
            raw["metadata"]["annotations"] = {consolidating.MOVABLE_ANNOTATION: "true"}
        raws.append(raw)
    workload = documents(directory / "workload.yaml", [*[_template(c) for c in sorted({c for c, _ in pods})], *raws])
    return snapshot, workload


def _run(snapshot: str, workload: str, consolidate: int) -> dict[str, Any]:
    return simulating.simulate(simulating.Request(snapshot_files=[snapshot], workload_files=[workload],
                                                  policy="fragmentation-aware", progress=False,
                                                  consolidate=consolidate), io.StringIO())


def _where(report: dict[str, Any]) -> dict[str, str]:
    return {line.split()[0]: line.split()[1] for line in report["placements"]}


# node-0: 4 GPUs and 8 CPUs, node-1: 1 GPU and 8 CPUs. p0 (3 CPUs) takes node-1's GPU; p1, p2 go to node-0;
# p3 (4 GPUs) fits nowhere, and nothing can make room for it; p4 (6 CPUs) fits nowhere either (node-0 has 3
# CPUs left), but moving p0 to node-0 (3 CPUs) frees node-1 for it.
NODES = [(4, "8"), (1, "8")]
PODS = [(1, "3"), (1, "2"), (1, "2"), (4, "1"), (1, "6")]


def test_a_pod_that_fits_nowhere_gets_a_node_by_moving_a_movable_pod(tmp_path: pathlib.Path) -> None:
    snapshot, workload = _files(tmp_path, NODES, PODS)
    before = _run(snapshot, workload, 0)
    assert _where(before) == {"p0": "node-1", "p1": "node-0", "p2": "node-0"}
    after = _run(snapshot, workload, 1)
    assert _where(after) == {"p0": "node-0", "p1": "node-0", "p2": "node-0", "p4": "node-1"}
    assert after["consolidation"] == {"tried": 2, "placed": 1, "moves": 1}
    assert [u["name"] for u in after["unplaced"]] == ["p3"]


def test_pods_not_marked_movable_stay(tmp_path: pathlib.Path) -> None:
    snapshot, workload = _files(tmp_path, NODES, PODS, movable=False)
    report = _run(snapshot, workload, 1)
    assert report["placements"] == _run(snapshot, workload, 0)["placements"]
    assert report["consolidation"] == {"tried": 2, "placed": 0, "moves": 0}


def _valid(report: dict[str, Any]) -> None:
    """No device in two pods."""
    held = Counter(device for line in report["placements"] for device in line.split()[2:])
    assert not [d for d, n in held.items() if n > 1]


CLUSTERS = st.lists(st.tuples(st.sampled_from([1, 2, 4]), st.sampled_from(["4", "8"])), min_size=2, max_size=3)
WORKLOADS = st.lists(st.tuples(st.sampled_from([1, 1, 2, 4]), st.sampled_from(["1", "2", "3", "6"])),
                     min_size=2, max_size=7)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(nodes=CLUSTERS, pods=WORKLOADS, moves=st.integers(1, 3))
def test_moves_keep_every_placement_valid_and_are_deterministic(
        tmp_path_factory: pytest.TempPathFactory, nodes: list[tuple[int, str]], pods: list[tuple[int, str]],
        moves: int) -> None:
    snapshot, workload = _files(tmp_path_factory.mktemp("consolidate"), nodes, pods)
    report = _run(snapshot, workload, moves)
    _valid(report)
    stats = report["consolidation"]
    assert stats["placed"] <= stats["tried"] and stats["moves"] <= moves * stats["placed"]
    # A pod placed at once is never unplaced by a move: what placed without consolidation up to the first
    # pod that fit nowhere is placed with it.
    base = _run(snapshot, workload, 0)
    first_unplaced = min((int(u["name"][1:]) for u in base["unplaced"]), default=len(pods))
    assert {f"p{i}" for i in range(first_unplaced)} <= set(_where(report))
    assert _run(snapshot, workload, moves)["placements"] == report["placements"]
    if stats["moves"] == 0:
        assert report["placements"] == base["placements"]


class TestCommand:
    def test_the_report_counts_the_moves(self, dralloc: Invoke, tmp_path: pathlib.Path) -> None:
        snapshot, workload = _files(tmp_path, NODES, PODS)
        run = dralloc("simulate", "-f", snapshot, "--workload", workload, "--policy", "fragmentation-aware",
                      "--consolidate", "1")
        assert run.code == 1  # p3 is still unplaced
        assert "consolidation: 1 item of the 2 that fit nowhere placed by moving 1 movable pod (--consolidate)" \
            in run.out

    @pytest.mark.parametrize(("extra", "message"), [
        ((), "--consolidate 1 needs --policy fragmentation-aware (its model ranks the nodes worth making room "
             "on), not --policy first-fit"),
        (("--compare-policies",), "--compare-policies runs every policy"),
    ])
    def test_consolidate_needs_fragmentation_aware(self, dralloc: Invoke, tmp_path: pathlib.Path,
                                                   extra: tuple[str, ...], message: str) -> None:
        snapshot, workload = _files(tmp_path, NODES, PODS)
        run = dralloc("simulate", "-f", snapshot, "--workload", workload, "--consolidate", "1", *extra)
        assert run.code == 2
        assert message in run.err
