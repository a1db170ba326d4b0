"""Small builders for the core objects placement reads: Nodes and Pods (as API JSON, then models).

    node_("n1", labels={"zone": "a"}, cpu="4", taints=[node_taint("gpu", effect="NoSchedule")])
    pod_("p", cpu="1", node_selector={"zone": "a"}, tolerations=[{"key": "gpu", "operator": "Exists"}])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from dralloc.allocation.features import Features
from dralloc.allocation.snapshots import Snapshot
from dralloc.model import classes, conversion, devices, nodes, pods
from dralloc.scheduling import placement


def node_taint(key: str, value: str | None = None, effect: str = "NoSchedule") -> dict[str, Any]:
    return {"key": key, "effect": effect} | ({"value": value} if value is not None else {})


def node_raw(
    name: str,
    *,
    labels: Mapping[str, str] | None = None,
    cpu: str | None = None,
    memory: str | None = None,
    pods: str | None = None,
    extra: Mapping[str, str] | None = None,
    taints: Sequence[Mapping[str, Any]] = (),
    unschedulable: bool = False,
) -> dict[str, Any]:
    allocatable = {k: v for k, v in (("cpu", cpu), ("memory", memory), ("pods", pods)) if v is not None}
    allocatable |= dict(extra or {})
    spec: dict[str, Any] = {}
    if taints:
        spec["taints"] = [dict(t) for t in taints]
    if unschedulable:
        spec["unschedulable"] = True
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": dict(labels or {})},
        "spec": spec,
        "status": {"allocatable": allocatable},
    }


def node_(name: str, **fields: Any) -> nodes.Node:
    parsed: nodes.Node = conversion.parse_as(nodes.Node, node_raw(name, **fields))
    return parsed


def container(name: str = "main", **requests: str) -> dict[str, Any]:
    """A container requesting e.g. cpu="1", memory="1Gi" (ephemeral_storage= for ephemeral-storage)."""
    wanted = {k.replace("_", "-"): v for k, v in requests.items()}
    return {"name": name, "resources": {"requests": wanted}} if wanted else {"name": name}


def pod_raw(
    name: str,
    *,
    namespace: str = "default",
    cpu: str | None = None,
    memory: str | None = None,
    containers: Sequence[Mapping[str, Any]] | None = None,
    init_containers: Sequence[Mapping[str, Any]] = (),
    overhead: Mapping[str, str] | None = None,
    node_name: str | None = None,
    node_selector: Mapping[str, str] | None = None,
    affinity: Mapping[str, Any] | None = None,
    tolerations: Sequence[Mapping[str, Any]] = (),
    claims: Sequence[Mapping[str, Any]] = (),
    phase: str | None = None,
    labels: Mapping[str, str] | None = None,
    uid: str | None = None,
    spec_extra: Mapping[str, Any] | None = None,  # more pod spec fields, as the API writes them
) -> dict[str, Any]:
    if containers is None:
        requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
        containers = [container(**requests)]
    spec: dict[str, Any] = {"containers": [dict(c) for c in containers]}
    if init_containers:
        spec["initContainers"] = [dict(c) for c in init_containers]
    if overhead:
        spec["overhead"] = dict(overhead)
    if node_name is not None:
        spec["nodeName"] = node_name
    if node_selector:
        spec["nodeSelector"] = dict(node_selector)
    if affinity is not None:
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": dict(affinity)}}
    if tolerations:
        spec["tolerations"] = [dict(t) for t in tolerations]
    if claims:
        spec["resourceClaims"] = [dict(c) for c in claims]
    spec.update(spec_extra or {})
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "uid": uid or f"uid-{namespace}-{name}"}
    if labels:
        meta["labels"] = dict(labels)
    raw: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
    if phase is not None:
        raw["status"] = {"phase": phase}
    return raw


def pod_(name: str = "p", **fields: Any) -> pods.Pod:
    parsed: pods.Pod = conversion.parse_as(pods.Pod, pod_raw(name, **fields))
    return parsed


def placer_of(objects: Sequence[Mapping[str, Any]], policy: str, features: Features) -> placement.Placer:
    """A Placer over API objects as JSON (DeviceClasses, ResourceSlices and Nodes; others ignored)."""
    snapshot = Snapshot.build(
        device_classes=[conversion.parse_as(classes.DeviceClass, o) for o in objects if o["kind"] == "DeviceClass"],
        resource_slices=[conversion.parse_as(devices.ResourceSlice, o) for o in objects
                         if o["kind"] == "ResourceSlice"],
        features=features)
    node_list = [conversion.parse_as(nodes.Node, o) for o in objects if o["kind"] == "Node"]
    return placement.Placer(node_list=node_list, snapshot=snapshot, features=features, policy=policy)


def placed_nodes(p: placement.Placer, items: Sequence[placement.Item]) -> list[str | None]:
    """Each item placed in order and committed: its node (None: not placed)."""
    where: list[str | None] = []
    for it in items:
        decision = p.place(it)
        if isinstance(decision, placement.Placement):
            p.commit(it, decision)
            where.append(decision.node)
        else:
            where.append(None)
    return where


def place_all(p: placement.Placer, items: Sequence[placement.Item]) -> list[str | None]:
    """Each item placed in order and committed: "node/device,device..." for each (None: not placed)."""
    where: list[str | None] = []
    for it in items:
        decision = p.place(it)
        if isinstance(decision, placement.Placement):
            p.commit(it, decision)
            where.append(decision.node + "/" + ",".join(r.device for a in decision.results
                                                          for r in a.devices.results))
        else:
            where.append(None)
    return where
