"""Every conformance vector, run through `dralloc allocate` as a subprocess.

The vector becomes one multi-document YAML file (classes, slices, allocated
claims, the claims to allocate, and the Node); gates are passed explicitly
(every gate not listed off), `--kubernetes-version` is the newest release the vector
lists (`vectors.releases`) whose kube-scheduler accepts those gates (1.38 locks six gates on:
a vector turning one off runs at the release before, and is skipped when it lists only 1.38)
and `--node` names the vector's node. The JSON
output is compared with the same rules as the library test; errors must exit 2
with the distinctive phrase on stderr, unschedulable must exit 1.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import pathlib
import subprocess
import sys
from typing import Any

import pytest
import yaml
from tests.conformance import vectors

from dralloc.allocation import errors
from dralloc.allocation.features import DEFAULTS, Features

CASES = vectors.load_all()


def _write_input(case: dict[str, Any], directory: pathlib.Path) -> pathlib.Path:
    objects = case["objects"]
    docs = [obj for kind in ("deviceClasses", "resourceSlices", "allocatedClaims", "claims")
            for obj in objects.get(kind) or []]
    docs.append({"apiVersion": "v1", "kind": "Node",
                 "metadata": {"name": case["node"]["name"], "labels": case["node"].get("labels") or {}},
                 "status": {"declaredFeatures": case["node"].get("declaredFeatures") or []}})
    path = directory / f"{case['name']}.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    return path


def _release(case: dict[str, Any]) -> str | None:
    """The newest listed release whose kube-scheduler accepts the vector's gates (None: none does):
    not one it locks turned off, not one on while a gate it depends on is off."""
    enabled = set(case.get("features") or [])
    for release in reversed(vectors.releases(case)):
        try:
            Features.from_gates({g: g in enabled for g in DEFAULTS[release]}, release=release)
        except errors.UnknownFeatureGateError:
            continue
        return release
    return None


def _run(case: dict[str, Any], directory: pathlib.Path) -> subprocess.CompletedProcess[str]:
    enabled = set(case.get("features") or [])
    release = _release(case)
    assert release is not None
    gates = ",".join(f"{g}={'true' if g in enabled else 'false'}" for g in DEFAULTS[release])
    path = _write_input(case, directory)
    return subprocess.run(
        [sys.executable, "-m", "dralloc", "allocate", "-f", str(path), "--node", case["node"]["name"],
         "--features", gates, "--kubernetes-version", release, "-o", "json"],
        capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": str(pathlib.Path(__file__).parents[2] / "operator")},
    )


@pytest.fixture(scope="module")
def cli_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, subprocess.CompletedProcess[str]]:
    """All vectors at once, two at a time: one subprocess each is most of this file's cost."""
    directory = tmp_path_factory.mktemp("vectors")
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        futures = {c["name"]: pool.submit(_run, c, directory) for c in CASES if _release(c) is not None}
        return {name: f.result() for name, f in futures.items()}


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_vector_through_cli(case: dict[str, Any], cli_runs: dict[str, subprocess.CompletedProcess[str]]) -> None:
    if _release(case) is None:
        pytest.skip("no listed release's kube-scheduler takes the vector's gates (one it locks is off, or one "
                    "is on without a gate it depends on): the CLI refuses them as kube-scheduler does "
                    "(test_vectors_library runs it)")
    done = cli_runs[case["name"]]
    expect = case["expect"]
    if "error" in expect:
        assert done.returncode == 2, done.stdout + done.stderr
        assert expect["error"] in done.stderr
        assert json.loads(done.stdout)["status"] == "error"
        return
    output = json.loads(done.stdout)
    if expect.get("unschedulable"):
        assert done.returncode == 1, done.stderr
        assert output["status"] == "unschedulable"
        assert output["reasons"], "an unschedulable answer must say why"
        return
    assert done.returncode == 0, done.stderr
    assert output["status"] == "allocated"
    assert [(c["namespace"], c["name"]) for c in output["claims"]] == [
        (c["metadata"].get("namespace", "default"), c["metadata"]["name"]) for c in case["objects"]["claims"]
    ]
    for actual, wanted in zip(output["claims"], expect["results"], strict=True):
        if expect.get("exact", True):
            problem = vectors.same_allocation(actual["allocation"], wanted["allocation"])
        else:
            problem = vectors.same_shape(actual["allocation"], wanted["allocation"])
        assert problem is None, problem
