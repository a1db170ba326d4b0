"""Write Kubernetes objects (builders, models or dicts) to YAML files for the offline commands."""

from __future__ import annotations

import pathlib
from collections.abc import Sequence
from typing import Any

import yaml
from tests.builders import SliceBuilder, claim, class_, device, result, slice_

from dralloc.model import conversion

DATA = pathlib.Path(__file__).parent / "data"


def raw(obj: Any) -> dict[str, Any]:
    if hasattr(obj, "raw"):
        out: dict[str, Any] = obj.raw()
        return out
    if hasattr(obj, "model_dump"):
        return conversion.to_raw(obj)
    return dict(obj)


def documents(path: pathlib.Path, objects: Sequence[Any]) -> str:
    """Multi-document YAML."""
    path.write_text(yaml.safe_dump_all([raw(o) for o in objects], sort_keys=False))
    return str(path)


def as_list(path: pathlib.Path, objects: Sequence[Any]) -> str:
    """One `kind: List`, as `kubectl get -o yaml` writes."""
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""},
                                    "items": [raw(o) for o in objects]}, sort_keys=False))
    return str(path)


def node(name: str, *, labels: dict[str, str] | None = None, cpu: str = "8", memory: str = "32Gi",
         pods: str = "110") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels or {}},
            "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": pods}}}


def gpus(node_name: str, count: int) -> SliceBuilder:
    """A node-local slice (pool named after the node) of `count` GPUs gpu-0..."""
    return slice_(f"{node_name}-gpus", pool=node_name, node=node_name,
                  devices=[device(f"gpu-{i}") for i in range(count)])


def in_use(name: str, node_name: str, *devices: int) -> Any:
    """A claim allocated on `node_name`'s GPUs with these indexes."""
    return claim(name).request("gpu", "gpu", count=len(devices)).allocated(
        *[result("gpu", f"gpu-{i}", pool=node_name) for i in devices])


GPU_CLASS = class_("gpu", 'device.driver == "gpu.example.com"')
