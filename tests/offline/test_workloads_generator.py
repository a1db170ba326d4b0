"""bench/workloads.py, the generator of bench/vs_upstream.py's w1-w5 (issue #32): run as a user runs it.

Each workload's protocol.yaml promises counts (nodes, slices, devices, claims to place,
pre-allocated claims) that the oracle and vs_upstream.py rely on; they must be what the YAML
files hold, and what the workload table of the generator's docstring says. The fill numbers
expected for w1-w4 are pinned to the Allocate calls upstream's allocator made on them.
"""

from __future__ import annotations

import functools
import pathlib
import subprocess
import sys
from typing import Any

import pytest
import yaml
from tests.offline.conftest import Invoke

REPO = pathlib.Path(__file__).resolve().parents[2]
GENERATOR = REPO / "bench" / "workloads.py"
DRIVER = "test-driver.cdi.k8s.io"
FILES = ("deviceclasses.yaml", "nodes.yaml", "resourceslices.yaml", "resourceclaims.yaml", "protocol.yaml")

# From the workload table: nodes, slices, devices, claims to place, pre-allocated claims.
COUNTS = {
    "w1-fill": (500, 500, 5000, 5000, 0),
    "w2-cel": (500, 500, 5000, 5000, 0),
    "w3-match": (500, 500, 5000, 2500, 0),
    "w4-partitionable": (100, 200, 6400, 5000, 0),
    "w5-pathological": (1, 1, 32, 1, 1),
}
# Placed, unplaced, and Allocate calls of first fit (upstream's, in its measurements).
FILLS = {
    "w1-fill": (5000, 0, 1_252_500),
    "w2-cel": (5000, 0, 1_252_500),
    "w3-match": (2000, 500, 751_000),
    "w4-partitionable": (5000, 0, 225_720),
}


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    out = tmp_path_factory.mktemp("workloads")
    subprocess.run([sys.executable, str(GENERATOR), str(out)], check=True, capture_output=True, cwd=REPO)
    return out


@functools.cache  # the same large files serve several tests; none changes what it reads
def _load(folder: pathlib.Path, name: str) -> list[dict[str, Any]]:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return list(yaml.load_all((folder / name).read_text(), Loader=loader))


def test_every_workload_gets_its_folder_and_files(generated: pathlib.Path) -> None:
    assert sorted(p.name for p in generated.iterdir()) == sorted(COUNTS)
    for name in COUNTS:
        assert sorted(p.name for p in (generated / name).iterdir()) == sorted(FILES)


@pytest.mark.parametrize("name", sorted(COUNTS))
def test_protocol_counts_are_what_the_files_hold(generated: pathlib.Path, name: str) -> None:
    folder = generated / name
    nodes, slices, claims = (_load(folder, f) for f in ("nodes.yaml", "resourceslices.yaml", "resourceclaims.yaml"))
    [protocol] = _load(folder, "protocol.yaml")
    assert protocol["workload"] == name
    assert {d["kind"] for d in nodes} == {"Node"} and {d["kind"] for d in slices} == {"ResourceSlice"}
    assert {d["kind"] for d in claims} == {"ResourceClaim"}
    allocated = [c for c in claims if "allocation" in c.get("status", {})]
    held = {
        "nodes": len(nodes),
        "resourceSlices": len(slices),
        "devices": sum(len(s["spec"].get("devices", [])) for s in slices),
        "claimsToPlace": len(claims) - len(allocated),
        "claimsPreAllocated": len(allocated),
    }
    assert protocol["counts"] == held
    assert tuple(held.values()) == COUNTS[name]


@pytest.mark.parametrize("name", sorted(COUNTS))
def test_order_and_pools_follow_the_protocol(generated: pathlib.Path, name: str) -> None:
    """Nodes are tried, and claims placed, in file order, which the protocol says is name order;
    every pool is its node's, generation 1, with as many slices as resourceSliceCount says."""
    folder = generated / name
    node_names = [n["metadata"]["name"] for n in _load(folder, "nodes.yaml")]
    assert node_names == sorted(node_names) and len(set(node_names)) == len(node_names)
    to_place = [c["metadata"]["name"] for c in _load(folder, "resourceclaims.yaml") if "status" not in c]
    assert to_place == sorted(to_place)
    slices = _load(folder, "resourceslices.yaml")
    for s in slices:
        spec = s["spec"]
        assert spec["driver"] == DRIVER and spec["pool"]["name"] == spec["nodeName"] in node_names
        assert spec["pool"]["generation"] == 1
        assert spec["pool"]["resourceSliceCount"] == sum(t["spec"]["nodeName"] == spec["nodeName"] for t in slices)


@pytest.mark.parametrize("name", sorted(FILLS))
def test_fill_expectations(generated: pathlib.Path, name: str) -> None:
    [protocol] = _load(generated / name, "protocol.yaml")
    expected = protocol["expected"]
    placed, unplaced, calls = FILLS[name]
    assert protocol["mode"] == "fill" and protocol["capSeconds"] is None
    assert (expected["claimsPlaced"], expected["claimsUnplaced"], expected["allocateCalls"]) == FILLS[name]
    assert expected["successfulCalls"] == placed and expected["failedCalls"] == calls - placed
    assert placed + unplaced == protocol["counts"]["claimsToPlace"]


def test_w5_has_no_solution_in_dralloc_simulate(generated: pathlib.Path, dralloc: Invoke) -> None:
    """The one w5 file set end to end: the pre-allocated claim holds gpu-0, so 31 devices are
    left for a claim of 32, as protocol.yaml expects."""
    folder = generated / "w5-pathological"
    [protocol] = _load(folder, "protocol.yaml")
    assert protocol["mode"] == "single" and protocol["expected"] == {"outcome": "no solution"}
    files = [arg for f in FILES[:4] for arg in ("-f", str(folder / f))]
    run = dralloc("simulate", *files, "--policy", "first-fit", "-o", "json", "--no-progress")
    report = run.json()
    assert run.code == 1, run.err  # 1: some claims are left unplaced
    assert (report["items"], report["placed"]) == (1, 0)
    assert [u["name"] for u in report["unplaced"]] == ["claim-0000"]
    assert "1 in use" in report["unplaced"][0]["reason"]


def test_a_chosen_workload_alone_and_an_unknown_one(tmp_path: pathlib.Path) -> None:
    subprocess.run([sys.executable, str(GENERATOR), str(tmp_path), "w5"], check=True, capture_output=True)
    assert [p.name for p in tmp_path.iterdir()] == ["w5-pathological"]
    bad = subprocess.run([sys.executable, str(GENERATOR), str(tmp_path), "w9"], capture_output=True, text=True)
    assert bad.returncode == 1 and "unknown workload w9" in bad.stderr
