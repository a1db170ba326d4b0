"""The Alibaba GPU trace (openb, ATC '23) as DRA objects: a snapshot and a workload.

Converts `openb_node_list_*.csv` (sn,cpu_milli,memory_mib,gpu,model) into Nodes,
one ResourceSlice per GPU node and one DeviceClass, and `openb_pod_list_*.csv`
(name,cpu_milli,memory_mib,num_gpu,gpu_milli[,gpu_spec,...]) into Pods with one
ResourceClaimTemplate per distinct GPU request shape. GPU sharing the DRA way:

- every GPU is a device with `allowMultipleAllocations: true` and a consumable
  capacity `compute` of 1000 (milli-GPUs); its model is the attribute `model`;
- a share (`num_gpu == 1`, `gpu_milli < 1000`) asks for one device with
  `capacity.requests.compute: <gpu_milli>`; whole GPUs ask for `num_gpu` devices
  with all 1000 each (a whole GPU is a share that leaves nothing to others);
- `gpu_spec` ("V100M16|V100M32") is a CEL selector on the model;
- CPU and memory are the pod's container requests, checked against the Node's
  `status.allocatable` (node fit), as kube-scheduler does.

The paper's "inflation": tasks drawn from the trace with replacement, seeded,
until the GPUs they request reach a multiple (1.3) of the cluster's GPUs.

Usage (writes snapshot.yaml and workload.yaml into DIR):
  .venv/bin/python bench/traces.py --nodes NODES.csv --pods PODS.csv -o DIR [--inflation 1.3] [--seed 0]
  then: .venv/bin/dralloc simulate -f DIR/snapshot.yaml --workload DIR/workload.yaml --compare-policies
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import pathlib
import random
import sys
from collections.abc import Iterable, Sequence
from typing import Any

import yaml

DRIVER = "gpu.trace.dralloc.dev"
GPU_CLASS = "gpu"
MILLI = 1000  # a whole GPU's compute capacity
NAMESPACE = "trace"
DEFAULT_TRACE = pathlib.Path(__file__).resolve().parents[2] / "shared" / "traces" / "alibaba-gpu-v2023"


class TraceError(ValueError):
    """A malformed trace row; the message names the file, the row and the column."""


@dataclasses.dataclass(frozen=True)
class TraceNode:
    name: str
    cpu_milli: int
    memory_mib: int
    gpus: int
    model: str


@dataclasses.dataclass(frozen=True)
class TraceTask:
    name: str
    cpu_milli: int
    memory_mib: int
    num_gpu: int
    gpu_milli: int  # per GPU; < 1000 only for a share of one GPU
    gpu_spec: tuple[str, ...]  # allowed models; empty: any

    @property
    def gpu_request_milli(self) -> int:
        """The GPU capacity the task asks for, in milli-GPUs (what inflation counts)."""
        if self.num_gpu == 1 and 0 < self.gpu_milli < MILLI:
            return self.gpu_milli
        return self.num_gpu * MILLI


def _int(row: dict[str, str], column: str, where: str) -> int:
    value = row.get(column)
    if value is None or value.strip() == "":
        raise TraceError(f"{where}: column {column}: missing")
    try:
        number = int(float(value))
    except ValueError:
        raise TraceError(f"{where}: column {column}: {value!r} is not a number") from None
    if number < 0:
        raise TraceError(f"{where}: column {column}: {value!r} is negative")
    return number


def _rows(path: pathlib.Path, required: Sequence[str]) -> Iterable[tuple[str, dict[str, str]]]:
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        missing = [c for c in required if c not in (reader.fieldnames or ())]
        if missing:
            raise TraceError(f"{path.name}: header: missing column(s) {', '.join(missing)}")
        for number, row in enumerate(reader, start=2):  # line 1 is the header
            yield f"{path.name} line {number}", row


def read_nodes(path: pathlib.Path) -> list[TraceNode]:
    """GPU nodes only: a node without GPUs has nothing to allocate (it only dilutes the numbers)."""
    result = []
    for where, row in _rows(path, ("sn", "cpu_milli", "memory_mib", "gpu", "model")):
        gpus = _int(row, "gpu", where)
        if gpus == 0:
            continue
        model = (row.get("model") or "").strip()
        if not model:
            raise TraceError(f"{where}: column model: missing for a node with {gpus} GPUs")
        result.append(TraceNode(row["sn"], _int(row, "cpu_milli", where), _int(row, "memory_mib", where), gpus,
                                model))
    return result


def read_tasks(path: pathlib.Path) -> list[TraceTask]:
    result = []
    for where, row in _rows(path, ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")):
        num_gpu, gpu_milli = _int(row, "num_gpu", where), _int(row, "gpu_milli", where)
        if gpu_milli > MILLI:
            raise TraceError(f"{where}: column gpu_milli: {gpu_milli} is more than one GPU ({MILLI})")
        if num_gpu > 1 and gpu_milli != MILLI:
            raise TraceError(f"{where}: column gpu_milli: {gpu_milli} with num_gpu {num_gpu} (shares are of one GPU)")
        if num_gpu >= 1 and gpu_milli == 0:
            raise TraceError(f"{where}: column gpu_milli: 0 with num_gpu {num_gpu}")
        spec = tuple(sorted(m for m in (row.get("gpu_spec") or "").split("|") if m))
        result.append(TraceTask(row["name"], _int(row, "cpu_milli", where), _int(row, "memory_mib", where), num_gpu,
                                gpu_milli, spec))
    return result


def inflate(tasks: Sequence[TraceTask], total_gpus: int, *, factor: float = 1.3, seed: int = 0) -> list[TraceTask]:
    """Tasks drawn with replacement (seeded) until they ask for `factor` x the cluster's GPUs.

    Each drawn task gets a new name (`<name>-<i>`): a task can be drawn more than once.
    """
    if not tasks:
        return []
    rng = random.Random(seed)
    goal = factor * total_gpus * MILLI
    asked, drawn = 0, []
    while asked < goal:
        task = tasks[rng.randrange(len(tasks))]
        drawn.append(dataclasses.replace(task, name=f"{task.name}-{len(drawn)}"))
        asked += task.gpu_request_milli
    return drawn


# ---- DRA objects -------------------------------------------------------------------------

def device_class() -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": GPU_CLASS},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}}


def node_objects(node: TraceNode) -> list[dict[str, Any]]:
    """The Node (allocatable cpu and memory; pods not limited, the trace has no such limit) and its slice."""
    obj = {"apiVersion": "v1", "kind": "Node",
           "metadata": {"name": node.name, "labels": {"kubernetes.io/hostname": node.name,
                                                        "gpu.trace.dralloc.dev/model": node.model}},
           "status": {"allocatable": {"cpu": f"{node.cpu_milli}m", "memory": f"{node.memory_mib}Mi",
                                      "pods": "10000"}}}
    devices = [{"name": f"gpu-{i}", "allowMultipleAllocations": True,
                "attributes": {"model": {"string": node.model}, "index": {"int": i}},
                "capacity": {"compute": {"value": str(MILLI)}}} for i in range(node.gpus)]
    slice_ = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{node.name}-gpus"},
              "spec": {"driver": DRIVER, "nodeName": node.name,
                       "pool": {"name": node.name, "generation": 1, "resourceSliceCount": 1}, "devices": devices}}
    return [obj, slice_]


def template_name(task: TraceTask) -> str | None:
    """One template per GPU request shape; None for a task without GPUs."""
    if task.num_gpu == 0:
        return None
    spec = "-".join(m.lower() for m in task.gpu_spec) or "any"
    return f"gpu-{task.num_gpu}x{task.gpu_milli}-{spec}"


def template(task: TraceTask) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": GPU_CLASS, "allocationMode": "ExactCount", "count": task.num_gpu,
                               "capacity": {"requests": {"compute": str(task.gpu_milli)}}}
    if task.gpu_spec:
        models = ", ".join(f'"{m}"' for m in task.gpu_spec)
        exactly["selectors"] = [{"cel": {"expression": f'device.attributes["{DRIVER}"].model in [{models}]'}}]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": template_name(task), "namespace": NAMESPACE},
            "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}}}


def pod(task: TraceTask) -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulerName": "dralloc", "containers": [{
        "name": "task", "image": "trace",
        "resources": {"requests": {"cpu": f"{task.cpu_milli}m", "memory": f"{task.memory_mib}Mi"}}}]}
    name = template_name(task)
    if name is not None:
        spec["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": name}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": task.name, "namespace": NAMESPACE}, "spec": spec}


def snapshot_objects(nodes: Sequence[TraceNode]) -> list[dict[str, Any]]:
    objects = [device_class()]
    for node in nodes:
        objects.extend(node_objects(node))
    return objects


def workload_objects(tasks: Sequence[TraceTask]) -> list[dict[str, Any]]:
    """The templates (each once, first use first), then the pods in arrival order."""
    templates: dict[str, dict[str, Any]] = {}
    for task in tasks:
        name = template_name(task)
        if name is not None and name not in templates:
            templates[name] = template(task)
    return [*templates.values(), *(pod(t) for t in tasks)]


def _dump(objects: Sequence[dict[str, Any]], path: pathlib.Path) -> None:
    with path.open("w", encoding="utf-8") as handle:
        yaml.dump_all(objects, handle, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper), sort_keys=False)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=pathlib.Path, default=DEFAULT_TRACE / "openb_node_list_gpu_node.csv")
    parser.add_argument("--pods", type=pathlib.Path, default=DEFAULT_TRACE / "openb_pod_list_default.csv")
    parser.add_argument("-o", "--output-dir", type=pathlib.Path, required=True)
    parser.add_argument("--inflation", type=float, default=1.3,
                        help="draw tasks until they ask for this multiple of the cluster's GPUs (0: the trace as is)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    try:
        nodes = read_nodes(args.nodes)
        tasks = read_tasks(args.pods)
    except (OSError, TraceError) as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    if args.inflation > 0:
        tasks = inflate(tasks, sum(n.gpus for n in nodes), factor=args.inflation, seed=args.seed)
    args.output_dir.mkdir(parents=True, exist_ok=True)
    _dump(snapshot_objects(nodes), args.output_dir / "snapshot.yaml")
    _dump(workload_objects(tasks), args.output_dir / "workload.yaml")
    sys.stdout.write(f"{len(nodes)} nodes ({sum(n.gpus for n in nodes)} GPUs), {len(tasks)} pods -> "
                     f"{args.output_dir}/snapshot.yaml, workload.yaml\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
