"""`dralloc allocate` and `dralloc simulate` agree on inputs with nothing, no nodes or no slices in them.

The rule both follow (README, "Exit codes"): an input without a single object of the kinds read is an
input error naming the file; without Node objects the nodes the ResourceSlices name are used (with a
note on stderr), and without those either there is nowhere to allocate: input error; a claim that
needs devices on nodes without slices is unschedulable / unplaced (exit 1); nothing to allocate is
exit 0 for both.
"""

from __future__ import annotations

import pathlib
from collections.abc import Callable
from typing import Any

import pytest
from tests.builders import claim, class_, device, slice_
from tests.offline.conftest import Invoke
from tests.offline.files import GPU_CLASS, documents, gpus, in_use, node

CONFIG_MAP = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "default"}}
NEEDS_GPU = claim("c").request("gpu", "gpu")

# name -> (objects, allocate's (exit code, stdout/stderr fragment), simulate's (exit code, fragment))
# A fragment starting with "err:" must be in stderr, else in stdout.
Expect = tuple[int, str]
EDGES: dict[str, tuple[list[Any], Expect, Expect]] = {
    "empty-file": (
        [],
        (2, "err:no Node, DeviceClass, ResourceSlice, ResourceClaim or Pod in the input: is it the right file?"),
        (2, "err:no Node, DeviceClass, ResourceSlice, ResourceClaim or Pod in the input: is it the right file?"),
    ),
    "only-other-kinds": (
        [CONFIG_MAP],
        (2, "err:in the input (1 object(s) of other kinds): is it the right file?"),
        (2, "err:in the input (1 object(s) of other kinds): is it the right file?"),
    ),
    "no-nodes-no-slices-with-a-claim": (
        [GPU_CLASS, NEEDS_GPU],
        (2, "err:no Node objects in the input and no ResourceSlice names a node, so there is nowhere to "
            "allocate devices: pass --node NAME"),
        (2, "err:no Node objects in the input and no ResourceSlice names a node, so there is nowhere to "
            "allocate devices\n"),
    ),
    "no-nodes-no-slices-nothing-to-allocate": (
        [GPU_CLASS, in_use("old", "node-a", 0)],
        (2, "err:no Node objects in the input and no ResourceSlice names a node"),
        (2, "err:no Node objects in the input and no ResourceSlice names a node"),
    ),
    "no-nodes-slices-name-them": (
        [GPU_CLASS, gpus("node-b", 1), gpus("node-a", 1), NEEDS_GPU],
        (0, "err:note: no Node objects in the input; using the 2 node(s) the ResourceSlices name (node-a, node-b)"),
        (0, "err:note: no Node objects in the input; using the 2 node(s) the ResourceSlices name (node-a, node-b)"),
    ),
    "nodes-without-slices": (
        [GPU_CLASS, node("node-a"), NEEDS_GPU],
        (1, "claim default/c, request gpu: 0 of 0 devices of class gpu usable, 1 needed"),
        (1, "claim default/c, request gpu: 0 of 0 devices of class gpu usable, 1 needed"),
    ),
    "nodes-and-slices-of-another-class": (
        [GPU_CLASS, class_("nic", 'device.driver == "nic.example.com"'), node("node-a"),
         slice_("nics", driver="nic.example.com", pool="node-a", node="node-a", devices=[device("nic-0")]),
         NEEDS_GPU],
        (1, "claim default/c, request gpu: 0 of 0 devices of class gpu usable, 1 needed"),
        (1, "claim default/c, request gpu: 0 of 0 devices of class gpu usable, 1 needed"),
    ),
    "nothing-to-allocate": (
        [GPU_CLASS, node("node-a"), gpus("node-a", 1), in_use("old", "node-a", 0)],
        (0, "nothing to allocate: every ResourceClaim in the input has status.allocation"),
        (0, "placed 0 of 0 items"),
    ),
    "no-claims-at-all": (
        [GPU_CLASS, node("node-a"), gpus("node-a", 1)],
        (0, "nothing to allocate: no ResourceClaim in the input"),
        (0, "placed 0 of 0 items"),
    ),
}


def _check(run: Any, expect: Expect, path: str) -> None:
    code, fragment = expect
    assert run.code == code, run
    if fragment.startswith("err:"):
        assert fragment[4:] in run.err, run.err
    else:
        assert fragment in run.out, run.out
    if code == 2:
        assert run.err.startswith(f"error: {path}: "), run.err  # names the file


@pytest.fixture
def write(tmp_path: pathlib.Path) -> Callable[[list[Any]], str]:
    def make(objects: list[Any]) -> str:
        path = tmp_path / "input.yaml"
        if objects:
            return documents(path, objects)
        path.write_text("")
        return str(path)

    return make


@pytest.mark.parametrize("name", list(EDGES))
def test_allocate(name: str, dralloc: Invoke, write: Callable[[list[Any]], str]) -> None:
    objects, expect, _ = EDGES[name]
    path = write(objects)
    _check(dralloc("allocate", "-f", path), expect, path)


@pytest.mark.parametrize("name", list(EDGES))
def test_simulate(name: str, dralloc: Invoke, write: Callable[[list[Any]], str]) -> None:
    objects, _, expect = EDGES[name]
    path = write(objects)
    _check(dralloc("simulate", "-f", path, "--no-progress"), expect, path)


def test_both_place_on_the_same_slice_named_node(dralloc: Invoke, write: Callable[[list[Any]], str]) -> None:
    """Without Node objects both commands use the slices' nodes, and first-fit picks the same one."""
    path = write([GPU_CLASS, gpus("node-b", 2), gpus("node-a", 1), claim("c").request("gpu", "gpu", count=2)])
    allocated = dralloc("allocate", "-f", path, "-o", "json").json()
    simulated = dralloc("simulate", "-f", path, "-o", "json").json()
    assert allocated["node"] == "node-b"
    assert simulated["placements"] == ["c node-b gpu=gpu.example.com/node-b/gpu-0 gpu=gpu.example.com/node-b/gpu-1"]


def test_empty_stdin_is_named(dralloc: Invoke, monkeypatch: pytest.MonkeyPatch) -> None:
    """`-f -` with nothing on stdin: the error says stdin."""
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    run = dralloc("allocate", "-f", "-")
    assert (run.code, run.err.split(":")[0:2]) == (2, ["error", " stdin"])


def test_allocate_with_node_flag_and_no_slices_is_unschedulable(dralloc: Invoke,
                                                                 write: Callable[[list[Any]], str]) -> None:
    """--node names a node the input does not describe at all: a claim needing a device does not fit there."""
    path = write([GPU_CLASS, NEEDS_GPU])
    run = dralloc("allocate", "-f", path, "--node", "node-x")
    assert run.code == 1
    assert "node node-x: claim default/c, request gpu: 0 of 0 devices of class gpu usable, 1 needed" in run.out


def test_workload_without_anything_to_place_is_an_input_error(dralloc: Invoke, write: Callable[[list[Any]], str],
                                                              tmp_path: pathlib.Path) -> None:
    """--workload files with nothing to place (here a Namespace and a template) are named in the error;
    a file of other kinds only is named as such; a Namespace next to a claim is fine."""
    snapshot = write([GPU_CLASS, node("node-a"), gpus("node-a", 1)])
    namespace = documents(tmp_path / "ns.yaml", [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}}])
    template = documents(tmp_path / "t.yaml", [{
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
        "metadata": {"name": "one", "namespace": "default"},
        "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}}}])
    run = dralloc("simulate", "-f", snapshot, "--workload", namespace, "--workload", template)
    assert (run.code, run.out) == (2, "")
    assert run.err == (f"error: --workload {namespace}, {template}: no Pod, no workload controller with replicas "
                       "and no unallocated ResourceClaim: nothing to place\n")
    other = documents(tmp_path / "cm.yaml", [CONFIG_MAP])
    run = dralloc("simulate", "-f", snapshot, "--workload", other)
    assert (run.code, run.err) == (2, f"error: {other}: no Node, DeviceClass, ResourceSlice, ResourceClaim or Pod "
                                      "in the input (1 object(s) of other kinds): is it the right file?\n")
    claims = documents(tmp_path / "c.yaml", [NEEDS_GPU])
    run = dralloc("simulate", "-f", snapshot, "--workload", namespace, "--workload", claims)
    assert (run.code, run.err) == (0, "")
