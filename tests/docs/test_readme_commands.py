"""README.md's shell commands, replayed as a user would paste them (issue 32: "make every command copy-paste
true from a fresh clone").

Every ```sh block of the README is either run here, word for word, with bash from a folder that looks like
the repository root (`examples/` and `.venv/` linked in, so what the commands write stays out of the
checkout), or listed in NOT_RUN with the reason and the test that covers it instead. A new block that is
in neither fails `test_every_shell_block_is_replayed_or_says_why_not`.

The clusters they run against are the ones the README names: the demo (`dralloc demo`, as `make run`
starts it, on free ports) for the blocks that say "With `make run` running" or use
`./dralloc-demo.kubeconfig`, and for "your cluster" a sandbox holding `examples/snapshot.yaml`, the
snapshot the README's transcripts read, so that the export-then-allocate path must print exactly the
transcript. The `$ .venv/bin/dralloc ...` transcripts themselves are tests/offline/test_readme_examples.py's.
"""

from __future__ import annotations

import os
import pathlib
import re
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator

import pytest
import yaml

REPO = pathlib.Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text()
KUBECTL = shutil.which("kubectl")
VENV_BIN = REPO / ".venv" / "bin"

# The first line of each block not replayed here, and why.
NOT_RUN = {
    "make run     # the demo": "the make targets are CI itself (.ci/run runs make test, make lint, make e2e; "
                                 "tests/demo runs the demo make run starts)",
    "docker build -t registry.example.com/dralloc:0.1.0 .": "needs docker and a registry; "
                                                           "tests/manifests/test_dockerfile.py checks the Dockerfile",
    "kubectl apply -k manifests/": "needs a cluster whose nodes run the image; tests/manifests applies the "
                                   "rendered manifests to the sandbox and make e2e runs the operator under their RBAC",
    "kubectl -n dralloc-system rollout status deployment/dralloc": "the same: a Deployment's pods need a kubelet",
}


def _blocks() -> list[str]:
    return re.findall(r"```sh\n(.*?)```", README, flags=re.S)


def _block(first: str) -> str:
    (block,) = [b for b in _blocks() if b.lstrip().startswith(first)]
    return block


def _unindent(block: str) -> str:
    """A block inside a numbered list is indented; the shell does not care, but here-documents would."""
    lines = block.splitlines()
    indent = min(len(line) - len(line.lstrip()) for line in lines if line.strip())
    return "\n".join(line[indent:] for line in lines) + "\n"


def _bash(script: str, cwd: pathlib.Path, kubeconfig: pathlib.Path | None = None, timeout: float = 180,
          errexit: bool = True) -> subprocess.CompletedProcess[str]:
    """`script` run by bash as pasted into a shell; `errexit`: stop at the first command that fails."""
    env = {**os.environ, "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}"}  # kubectl finds the plugin
    if kubeconfig is not None:
        env["KUBECONFIG"] = str(kubeconfig)
    return subprocess.run(["bash", *(["-e"] if errexit else []), "-o", "pipefail", "-c", script], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


def _checkout_like(path: pathlib.Path) -> pathlib.Path:
    path.mkdir()
    for name in ("examples", ".venv"):
        (path / name).symlink_to(REPO / name)
    return path


def _wait_for(what: str, done: Callable[[], bool], process: subprocess.Popen[str], log: pathlib.Path,
              timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise AssertionError(f"{what}: not ready; its output:\n{log.read_text()[-3000:]}")
        time.sleep(0.2)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[pathlib.Path]:
    """`make run` as the README's blocks expect it: the demo running, ./dralloc-demo.kubeconfig written."""
    root = _checkout_like(tmp_path_factory.mktemp("readme") / "demo")
    log = root / "demo.log"
    with log.open("w") as out, subprocess.Popen([str(VENV_BIN / "dralloc"), "demo", "--port", "0",
                                                 "--metrics-port", "0"], cwd=root, stdout=out,
                                                stderr=subprocess.STDOUT, text=True) as process:
        try:
            _wait_for("the demo", lambda: "Press Ctrl-C to stop." in log.read_text(), process, log)
            yield root
        finally:
            process.terminate()
            process.wait(60)


@pytest.fixture(scope="module")
def your_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[pathlib.Path, pathlib.Path]]:
    """"Your cluster": a sandbox API server holding examples/snapshot.yaml. Its folder and kubeconfig."""
    root = _checkout_like(tmp_path_factory.mktemp("readme") / "yours")
    kubeconfig, log = root / "kubeconfig", root / "sandbox.log"
    with log.open("w") as out, subprocess.Popen([str(VENV_BIN / "dralloc"), "sandbox", "--port", "0", "--seed",
                                                 str(REPO / "examples" / "snapshot.yaml"), "--kubeconfig",
                                                 str(kubeconfig)], cwd=root, stdout=out,
                                                stderr=subprocess.STDOUT, text=True) as process:
        try:
            _wait_for("the sandbox", lambda: kubeconfig.exists() and _bash(
                "kubectl get nodes", root, kubeconfig, timeout=30).returncode == 0, process, log)
            yield root, kubeconfig
        finally:
            process.terminate()
            process.wait(60)


def _transcript(command: str) -> list[str]:
    """What README's transcript shows after `$ COMMAND`, up to the next `$ `."""
    lines = README.split(f"$ {command}\n", 1)[1].split("```", 1)[0].splitlines()
    return lines[:next((i for i, line in enumerate(lines) if line.startswith("$ ")), len(lines))]


needs_kubectl = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed on this machine")

REPLAYED = [
    "KUBECONFIG=./dralloc-demo.kubeconfig kubectl get pods,resourceclaims -A",
    ".venv/bin/python -c 'import sys, yaml; from dralloc.sandbox import demo_objects;",
    "kubectl dralloc status",
    "kubectl get nodes,deviceclasses,resourceslices,resourceclaims,pods -A -o yaml > cluster.yaml",
    "kubectl get nodes,deviceclasses,resourceslices,resourceclaims -A -o yaml > snapshot.yaml",
    "export KUBECONFIG=./dralloc-demo.kubeconfig",
]


def test_every_shell_block_is_replayed_or_says_why_not() -> None:
    firsts = [block.lstrip().splitlines()[0] for block in _blocks()]
    unknown = [first for first in firsts
               if not any(first.startswith(known) for known in [*REPLAYED, *NOT_RUN])]
    assert not unknown, f"README ```sh blocks neither replayed here nor in NOT_RUN: {unknown}"
    for known in [*REPLAYED, *NOT_RUN]:
        assert sum(first.startswith(known) for first in firsts) == 1, f"README has no (or several) block {known!r}"


@needs_kubectl
def test_kubectl_on_the_running_demo(demo: pathlib.Path) -> None:
    done = _bash(_block(REPLAYED[0]), demo)
    assert done.returncode == 0, done.stderr
    assert "trainer-0" in done.stdout and "shared-gpu" in done.stdout


def test_the_offline_check_of_the_demo_files(demo: pathlib.Path) -> None:
    done = _bash(_block(REPLAYED[1]), demo)
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.match(r"placed (\d+) of \1 items", done.stdout), done.stdout
    # The PodGroup is read and its gang placed whole, in one zone (issue 32: it used to be skipped).
    assert "not placed" not in done.stderr, done.stderr
    assert "dralloc-demo/llm-finetune (minCount 4): 4 of 4 members placed in topology.kubernetes.io/zone=" \
        in done.stdout, done.stdout


@needs_kubectl
def test_the_kubectl_plugin_on_the_running_demo(demo: pathlib.Path) -> None:
    done = _bash(_block(REPLAYED[2]), demo, demo / "dralloc-demo.kubeconfig")
    assert done.returncode == 0, done.stderr
    assert "utilization per class" in done.stdout
    assert "pod dralloc-demo/trainer-0 is bound to node" in done.stdout
    assert '"fragmentation"' in done.stdout  # the JSON of the last line


@needs_kubectl
def test_capacity_planning_from_your_clusters_export(your_cluster: tuple[pathlib.Path, pathlib.Path]) -> None:
    """`jobs.yaml` is "your workload": here two pods of a one-GPU template in a namespace of their own."""
    root, kubeconfig = your_cluster
    template = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                "metadata": {"name": "one-gpu", "namespace": "jobs"},
                "spec": {"spec": {"devices": {"requests": [
                    {"name": "gpu", "exactly": {"deviceClassName": "gpu", "count": 1}}]}}}}
    pods = [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"job-{i}", "namespace": "jobs"},
             "spec": {"schedulerName": "dralloc", "resourceClaims": [{"name": "gpu",
                                                                      "resourceClaimTemplateName": "one-gpu"}],
                      "containers": [{"name": "main", "image": "busybox",
                                      "resources": {"claims": [{"name": "gpu"}]}}]}} for i in range(2)]
    (root / "jobs.yaml").write_text(yaml.safe_dump_all([template, *pods]))
    done = _bash(_block(REPLAYED[3]), root, kubeconfig)
    assert done.returncode == 0, done.stdout + done.stderr
    placed = (root / "placed.txt").read_text()
    assert {line.split()[0] for line in placed.splitlines()} == {"job-0", "job-1"}, placed


@needs_kubectl
def test_allocate_on_your_clusters_export_prints_the_readme_transcript(
        your_cluster: tuple[pathlib.Path, pathlib.Path]) -> None:
    """Exported by kubectl from a cluster holding examples/snapshot.yaml, the claim's reasons are the README's
    transcript for examples/snapshot.yaml itself, and so is the exit code."""
    root, kubeconfig = your_cluster
    done = _bash(_block(REPLAYED[4]), root, kubeconfig, errexit=False)
    shown = _transcript(".venv/bin/dralloc allocate -f examples/snapshot.yaml --claim ml/big-trainer-gpus")
    assert (done.stdout.splitlines(), done.stderr) == (shown, "")
    assert done.returncode == int(README.split(shown[-1] + "\n$ echo $?\n", 1)[1].split("\n", 1)[0])


@needs_kubectl
def test_break_a_gpu_in_the_demo(demo: pathlib.Path) -> None:
    """The script as printed: the shared claim's pods are evicted, come back, and get another GPU."""
    block = _unindent(_block(REPLAYED[5]))
    before = _bash("kubectl get resourceclaim -n dralloc-demo shared-gpu -o jsonpath="
                   "'{.status.allocation.devices.results[0].pool}/{.status.allocation.devices.results[0].device}'",
                   demo, demo / "dralloc-demo.kubeconfig").stdout
    done = _bash(block, demo, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"breaking {before}", lines
    assert "DeviceTaintEviction" in done.stdout and "0 pod(s) pending eviction, 2 evicted" in done.stdout
    (after,) = [line for line in lines if re.fullmatch(r"node-\d+/gpu-\d+", line)]
    assert after != before, done.stdout
