"""`dralloc demo --once` (what `make run ARGS=--once` runs) places every pod in examples/demo.

Run as a subprocess, as a user runs it: the demo starts its own sandbox and operator
threads, installs signal handlers and configures logging for the whole process, none
of which belongs in the test process. This also keeps examples/demo honest: a YAML
change that makes a pod unplaceable on the demo cluster fails here.
"""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys

import yaml

REPO = pathlib.Path(__file__).resolve().parents[2]


def demo_pod_names() -> list[str]:
    return [doc["metadata"]["name"]
            for path in sorted((REPO / "examples" / "demo").glob("*.yaml"))
            for doc in yaml.safe_load_all(path.read_text())
            if isinstance(doc, dict) and doc.get("kind") == "Pod"]


def test_demo_once_places_every_pod(tmp_path: pathlib.Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO / "operator")}
    # --port 0: never collide with a demo (or anything else) already on 6443.
    done = subprocess.run(
        [sys.executable, "-m", "dralloc", "demo", "--once", "--metrics-port", "0", "--timeout", "60", "--port", "0"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=55, check=False)
    assert done.returncode == 0, f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    assert (tmp_path / "dralloc-demo.kubeconfig").is_file()
    pods = demo_pod_names()
    assert len(pods) >= 10
    for name in pods:
        assert re.search(rf"^{re.escape(name)}\s+node-\d\s+\S+: ", done.stdout, re.MULTILINE), (
            f"{name} is not in the table with a node and its claim:\n{done.stdout}")
    assert f"{len(pods)} of {len(pods)} demo pods placed" in done.stdout
    assert "NOT PLACED" not in done.stdout
    # The training workers are one PodGroup gang, placed as one in one zone.
    assert re.search(r"^  dralloc-demo/llm-finetune \(4 pods: trainer-0, trainer-1, trainer-2, trainer-3\)\n"
                     r"    GangPlaced: gang of 4 placed in domain zone-\d: ", done.stdout, re.MULTILINE), done.stdout


def test_demo_once_fails_and_explains_when_a_pod_does_not_fit(tmp_path: pathlib.Path) -> None:
    """Exit 1, and the pod is listed as not placed with its PodScheduled message."""
    examples = tmp_path / "examples"
    examples.mkdir()
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "too-big", "namespace": "default"},
           "spec": {"schedulerName": "dralloc", "resourceClaims": [{"name": "gpus", "resourceClaimName": "nine"}],
                    "containers": [{"name": "main", "image": "busybox:1.36", "command": ["sleep", "3600"],
                                    "resources": {"claims": [{"name": "gpus"}]}}]}}
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
             "metadata": {"name": "nine", "namespace": "default"},
             "spec": {"devices": {"requests": [{"name": "gpus", "exactly": {
                 "deviceClassName": "gpu", "allocationMode": "ExactCount", "count": 9}}]}}}
    (examples / "too-big.yaml").write_text(yaml.safe_dump_all([claim, pod]))
    env = {**os.environ, "PYTHONPATH": str(REPO / "operator")}
    done = subprocess.run(
        [sys.executable, "-m", "dralloc", "demo", "--once", "--metrics-port", "0", "--timeout", "3", "--port", "0",
         "--examples", str(examples)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=55, check=False)
    assert done.returncode == 1, f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    assert re.search(r"^too-big\s+-\s+nine: \(not allocated\)", done.stdout, re.MULTILINE), done.stdout
    (line,) = [x for x in done.stdout.splitlines() if x.startswith("  default/too-big: ")]
    assert "nine" in line and "gpus" in line, line  # the PodScheduled message names the claim and request
