"""`dralloc ... | head` and `kubectl dralloc ... | head`: a reader that closes the pipe early ends the command quietly, as it ends Unix tools (#32)."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

from tests.builders import claim
from tests.offline.conftest import REPO
from tests.offline.files import GPU_CLASS, documents, gpus, node

from dralloc import cli, pipes
from dralloc.sandbox import ThreadedApiServer
from dralloc.testing import cluster


def test_reader_closing_the_pipe_early_ends_the_command_quietly(tmp_path: pathlib.Path) -> None:
    """`dralloc allocate --explain` writes one line per rejected node: 1,500 nodes make some 150 KB, far more
    than a pipe holds, so the command is still writing when the reader stops after one line. It then ends
    with EXIT_BROKEN_PIPE (141, what a shell reports for a tool SIGPIPE ended) and nothing on stderr: no
    BrokenPipeError traceback, no "Exception ignored" at exit."""
    nodes = [f"node-{i:04d}" for i in range(1500)]
    cluster = documents(tmp_path / "cluster.yaml", [
        GPU_CLASS, *(obj for name in nodes for obj in (node(name), gpus(name, 1))),
        claim("two").request("gpu", "gpu", count=2)])  # fits nowhere: one GPU per node
    with subprocess.Popen([sys.executable, "-m", "dralloc", "allocate", "-f", cluster, "--explain"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO,
                          env=os.environ | {"PYTHONPATH": str(REPO / "operator")}) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        assert proc.stdout.readline() == b"STATUS: unschedulable\n"
        proc.stdout.close()
        err = proc.stderr.read().decode()
        code = proc.wait(60)
    assert "Traceback" not in err and err == ""
    assert code == cli.EXIT_BROKEN_PIPE == 141


def test_kubectl_plugin_reader_gone_before_it_writes_ends_it_quietly(tmp_path: pathlib.Path) -> None:
    """`kubectl dralloc status | true`: the reader has gone before the plugin writes (it is still reading the
    cluster). The plugin ends as `dralloc` does: EXIT_BROKEN_PIPE, nothing on stderr. (A reader leaving in the
    middle of one large write is not seen by the writer at all: Linux returns a short write, not an error.)"""
    server = ThreadedApiServer().start()
    try:
        kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig")
        server.seed([cluster.gpu_class("gpu"), cluster.node("node-a"), cluster.gpu_slice("node-a", 1)])
        with subprocess.Popen([str(pathlib.Path(sys.executable).parent / "kubectl-dralloc"), "status"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              env=os.environ | {"KUBECONFIG": str(kubeconfig)}) as proc:
            assert proc.stdout is not None and proc.stderr is not None
            proc.stdout.close()  # before the plugin has imported itself, let alone listed the cluster
            err = proc.stderr.read().decode()
            code = proc.wait(120)
    finally:
        server.stop()
    assert "Traceback" not in err and err == ""
    assert code == pipes.EXIT_BROKEN_PIPE == 141
