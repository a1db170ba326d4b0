"""The Alibaba GPU trace (openb, ATC '23) as DRA objects: a snapshot and a workload.

Converts `openb_node_list_*.csv` (sn,cpu_milli,memory_mib,gpu,model) into Nodes,
ResourceSlices per GPU node and one DeviceClass, and `openb_pod_list_*.csv`
(name,cpu_milli,memory_mib,num_gpu,gpu_milli[,gpu_spec,...]) into Pods with one
ResourceClaimTemplate per distinct GPU request. GPU sharing, either of the two DRA
ways (`--sharing`):

capacity (the default): consumable capacity on shared devices.
- every GPU is a device with `allowMultipleAllocations: true` and a consumable
  capacity `compute` of 1000 (milli-GPUs); its model is the attribute `model`;
  one ResourceSlice per node;
- a share (`num_gpu == 1`, `gpu_milli < 1000`) asks for one device with
  `capacity.requests.compute: <gpu_milli>`; whole GPUs ask for `num_gpu` devices
  with all 1000 each (a whole GPU is a share that leaves nothing to others).

partitions: partitionable devices drawing on shared counters.
- every GPU is a counter set `gpu-<i>` in the pool's `sharedCounters` with one
  counter `slices` of 4 (quarters of a GPU); its partitions are devices
  `gpu-<i>-<k>q-<j>` of k = 1, 2, 3, 4 quarters, 4 // k of each size (8 per GPU),
  each consuming k `slices` of its GPU's set, with the attributes `model`, `index`
  (the GPU) and `slices` (k); exclusive, no consumable capacity. A slice with
  `sharedCounters` may not list devices: per node one slice of counter sets and
  one of devices (the same pool, `resourceSliceCount: 2`);
- a share asks for one device with the fewest quarters that hold it (a CEL
  selector `slices == k`, k the smallest with k * 250 >= gpu_milli); whole GPUs
  ask for `num_gpu` devices of 4 quarters. The rounding strands capacity: a 260
  share takes 500, a 760 share the whole GPU; what it leaves is allocated but
  unused, and no other task can have it.

Both ways:
- `gpu_spec` ("V100M16|V100M32") is a CEL selector on the model;
- CPU and memory are the pod's container requests, checked against the Node's
  `status.allocatable` (node fit), as kube-scheduler does.

The paper's "inflation": tasks drawn from the trace with replacement, seeded,
until the GPUs they request reach a multiple (1.3) of the cluster's GPUs.

The trace is public: the CSV files of github.com/alibaba/clusterdata, folder
cluster-trace-gpu-v2023/csv/; `--trace DIR` is the folder that holds them (a local copy of
that folder; without --trace, the default below is tried and a missing one is reported).

Usage (writes snapshot.yaml and workload.yaml into DIR):
  .venv/bin/python bench/traces.py --trace TRACE_DIR -o DIR [--inflation 1.3] [--seed 0]
  .venv/bin/python bench/traces.py --nodes NODES.csv --pods PODS.csv -o DIR   (your own rows, same columns)
  (add --sharing partitions for GPUs as partitions on shared counters)
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
SHARING = ("capacity", "partitions")
SLICES = 4  # partitions: a GPU's counter `slices`, quarters of a GPU
SLICE_MILLI = MILLI // SLICES
COUNTER_SETS_PER_SLICE = 8  # upstream's limits per ResourceSlice (counter sets; devices that consume counters)
COUNTER_DEVICES_PER_SLICE = 64
NAMESPACE = "trace"
# Where the authors keep the trace, next to the repository; anyone else passes --trace DIR.
DEFAULT_TRACE = pathlib.Path(__file__).resolve().parents[2] / "shared" / "traces" / "alibaba-gpu-v2023"
TRACE_SOURCE = "https://github.com/alibaba/clusterdata, folder cluster-trace-gpu-v2023/csv/"


def require_trace(parser: argparse.ArgumentParser, folder: pathlib.Path, otherwise: str = "") -> pathlib.Path:
    """`folder` if it exists; otherwise the command stops (exit status 2) saying where to get the trace
    and that --trace takes its folder (`otherwise`: another way out, such as a flag that skips it)."""
    if not folder.is_dir():
        parser.error(f"no Alibaba GPU trace at {folder}: download its CSV files ({TRACE_SOURCE}) "
                     f"and pass their folder with --trace DIR{otherwise}")
    return folder


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

    @property
    def partition_slices(self) -> int:
        """Partitions: the quarters of a GPU each of the task's devices has (the fewest that hold a share)."""
        if self.num_gpu == 1 and 0 < self.gpu_milli < MILLI:
            return -(-self.gpu_milli // SLICE_MILLI)
        return SLICES

    def taken_milli(self, sharing: str = "capacity") -> int:
        """The GPU capacity the task takes when placed: what it asks for, or its partitions' size."""
        if sharing == "partitions":
            return self.num_gpu * self.partition_slices * SLICE_MILLI
        return self.gpu_request_milli


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


def node_objects(node: TraceNode, sharing: str = "capacity") -> list[dict[str, Any]]:
    """The Node (allocatable cpu and memory; pods not limited, the trace has no such limit) and its slice(s)."""
    obj = {"apiVersion": "v1", "kind": "Node",
           "metadata": {"name": node.name, "labels": {"kubernetes.io/hostname": node.name,
                                                        "gpu.trace.dralloc.dev/model": node.model}},
           "status": {"allocatable": {"cpu": f"{node.cpu_milli}m", "memory": f"{node.memory_mib}Mi",
                                      "pods": "10000"}}}
    if sharing == "partitions":
        return [obj, *partition_slices(node)]
    devices = [{"name": f"gpu-{i}", "allowMultipleAllocations": True,
                "attributes": {"model": {"string": node.model}, "index": {"int": i}},
                "capacity": {"compute": {"value": str(MILLI)}}} for i in range(node.gpus)]
    slice_ = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{node.name}-gpus"},
              "spec": {"driver": DRIVER, "nodeName": node.name,
                       "pool": {"name": node.name, "generation": 1, "resourceSliceCount": 1}, "devices": devices}}
    return [obj, slice_]


def partition_slices(node: TraceNode) -> list[dict[str, Any]]:
    """Partitions: the node's pool as slices of counter sets (one per GPU) and slices of partitions.

    Two slices (counters, devices) for up to 8 GPUs, upstream's limit of counter sets per slice
    (and 8 x 8 partitions is its limit of 64 devices that consume counters); more GPUs, more pairs.
    """
    chunks = [range(start, min(start + COUNTER_SETS_PER_SLICE, node.gpus))
              for start in range(0, node.gpus, COUNTER_SETS_PER_SLICE)]
    counters, partitions = [], []
    for c, gpus in enumerate(chunks):
        suffix = f"-{c}" if c else ""
        counters.append({
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": f"{node.name}-gpu-counters{suffix}"},
            "spec": {"driver": DRIVER, "nodeName": node.name, "pool": _pool(node, len(chunks)),
                     "sharedCounters": [{"name": f"gpu-{i}", "counters": {"slices": {"value": str(SLICES)}}}
                                        for i in gpus]}})
        devices = [{"name": f"gpu-{i}-{k}q-{j}",
                    "attributes": {"model": {"string": node.model}, "index": {"int": i}, "slices": {"int": k}},
                    "consumesCounters": [{"counterSet": f"gpu-{i}", "counters": {"slices": {"value": str(k)}}}]}
                   for i in gpus for k in range(1, SLICES + 1) for j in range(SLICES // k)]
        assert len(devices) <= COUNTER_DEVICES_PER_SLICE
        partitions.append({
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": f"{node.name}-gpus{suffix}"},
            "spec": {"driver": DRIVER, "nodeName": node.name, "pool": _pool(node, len(chunks)),
                     "devices": devices}})
    return [*counters, *partitions]


def _pool(node: TraceNode, pairs: int) -> dict[str, Any]:
    # A new dict per slice: YAML would write a shared one as an anchor and aliases.
    return {"name": node.name, "generation": 1, "resourceSliceCount": 2 * pairs}


def gpu_index(device: str) -> int:
    """The GPU a device name is or is a partition of ("gpu-3", "gpu-3-2q-1": 3)."""
    return int(device.split("-")[1])


def template_name(task: TraceTask, sharing: str = "capacity") -> str | None:
    """One template per GPU request; None for a task without GPUs.

    Partitions: shares that round to the same partition size ask the same (`gpu-1x2q-any`)."""
    if task.num_gpu == 0:
        return None
    spec = "-".join(m.lower() for m in task.gpu_spec) or "any"
    if sharing == "partitions":
        return f"gpu-{task.num_gpu}x{task.partition_slices}q-{spec}"
    return f"gpu-{task.num_gpu}x{task.gpu_milli}-{spec}"


def template(task: TraceTask, sharing: str = "capacity") -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": GPU_CLASS, "allocationMode": "ExactCount", "count": task.num_gpu}
    selectors = []
    if sharing == "partitions":
        selectors.append({"cel": {"expression": f'device.attributes["{DRIVER}"].slices == {task.partition_slices}'}})
    else:
        exactly["capacity"] = {"requests": {"compute": str(task.gpu_milli)}}
    if task.gpu_spec:
        models = ", ".join(f'"{m}"' for m in task.gpu_spec)
        selectors.append({"cel": {"expression": f'device.attributes["{DRIVER}"].model in [{models}]'}})
    if selectors:
        exactly["selectors"] = selectors
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": template_name(task, sharing), "namespace": NAMESPACE},
            "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}}}


MOVABLE = "dralloc.io/movable"  # simulate --consolidate may move a pod carrying it set to "true"


def pod(task: TraceTask, sharing: str = "capacity", movable: bool = False) -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulerName": "dralloc", "containers": [{
        "name": "task", "image": "trace",
        "resources": {"requests": {"cpu": f"{task.cpu_milli}m", "memory": f"{task.memory_mib}Mi"}}}]}
    name = template_name(task, sharing)
    if name is not None:
        spec["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": name}]
    metadata: dict[str, Any] = {"name": task.name, "namespace": NAMESPACE}
    if movable:
        metadata["annotations"] = {MOVABLE: "true"}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def snapshot_objects(nodes: Sequence[TraceNode], sharing: str = "capacity") -> list[dict[str, Any]]:
    objects = [device_class()]
    for node in nodes:
        objects.extend(node_objects(node, sharing))
    return objects


def workload_objects(tasks: Sequence[TraceTask], sharing: str = "capacity", movable: bool = False
                     ) -> list[dict[str, Any]]:
    """The templates (each once, first use first), then the pods in arrival order (marked movable for
    `dralloc simulate --consolidate` when `movable`)."""
    templates: dict[str, dict[str, Any]] = {}
    for task in tasks:
        name = template_name(task, sharing)
        if name is not None and name not in templates:
            templates[name] = template(task, sharing)
    return [*templates.values(), *(pod(t, sharing, movable) for t in tasks)]


def _dump(objects: Sequence[dict[str, Any]], path: pathlib.Path) -> None:
    with path.open("w", encoding="utf-8") as handle:
        yaml.dump_all(objects, handle, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper), sort_keys=False)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trace", type=pathlib.Path, default=DEFAULT_TRACE, metavar="DIR",
                        help="the folder of the Alibaba GPU trace's CSV files (cluster-trace-gpu-v2023/csv/ of "
                             f"github.com/alibaba/clusterdata); default {DEFAULT_TRACE}")
    parser.add_argument("--nodes", type=pathlib.Path,
                        help="node list CSV (default: openb_node_list_gpu_node.csv in --trace)")
    parser.add_argument("--pods", type=pathlib.Path, help="pod list CSV (default: openb_pod_list_default.csv in --trace)")
    parser.add_argument("-o", "--output-dir", type=pathlib.Path, required=True)
    parser.add_argument("--inflation", type=float, default=1.3,
                        help="draw tasks until they ask for this multiple of the cluster's GPUs (0: the trace as is)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sharing", choices=SHARING, default="capacity",
                        help="how GPUs are shared: capacity (each GPU one device with a consumable compute "
                             "capacity of 1000, a share asks for its milli-GPUs) or partitions (each GPU a counter "
                             "set of 4 quarters with partitions of 1-4 quarters, a share takes the smallest "
                             "partition that holds it); default capacity")
    parser.add_argument("--movable", action="store_true",
                        help=f"annotate every pod {MOVABLE}: \"true\" (tasks simulate --consolidate may move)")
    args = parser.parse_args(argv)
    if args.nodes is None or args.pods is None:
        require_trace(parser, args.trace)
    args.nodes = args.nodes or args.trace / "openb_node_list_gpu_node.csv"
    args.pods = args.pods or args.trace / "openb_pod_list_default.csv"
    try:
        nodes = read_nodes(args.nodes)
        tasks = read_tasks(args.pods)
    except (OSError, TraceError) as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    if args.inflation > 0:
        tasks = inflate(tasks, sum(n.gpus for n in nodes), factor=args.inflation, seed=args.seed)
    args.output_dir.mkdir(parents=True, exist_ok=True)
    _dump(snapshot_objects(nodes, args.sharing), args.output_dir / "snapshot.yaml")
    _dump(workload_objects(tasks, args.sharing, args.movable), args.output_dir / "workload.yaml")
    sys.stdout.write(f"{len(nodes)} nodes ({sum(n.gpus for n in nodes)} GPUs), {len(tasks)} pods -> "
                     f"{args.output_dir}/snapshot.yaml, workload.yaml\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
