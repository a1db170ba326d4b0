"""Read Kubernetes objects from YAML/JSON files into a `Cluster` of model objects.

Accepts multi-document YAML, JSON, and `kind: List` wrappers as `kubectl get -o
yaml` writes them. Kinds the allocator does not read are skipped. Every problem
raises `InputError` naming the file, the object and the field.
"""

from __future__ import annotations

import dataclasses
import pathlib
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from dralloc import documents
from dralloc.allocation import taintrules
from dralloc.allocation.features import Features
from dralloc.allocation.snapshots import Snapshot
from dralloc.model import claims, classes, conversion, devices, pods, taints
from dralloc.model import nodes as model_nodes
from dralloc.model import scheduling as model_scheduling
from dralloc.model.base import Object, ObjectMeta
from dralloc.offline import controllers as offline_controllers


class InputError(Exception):
    """Input that cannot be used: unreadable file, malformed YAML, malformed object."""


@dataclasses.dataclass
class Cluster:
    """The objects read, in file order per kind."""

    device_classes: list[classes.DeviceClass] = dataclasses.field(default_factory=list)
    resource_slices: list[devices.ResourceSlice] = dataclasses.field(default_factory=list)
    resource_claims: list[claims.ResourceClaim] = dataclasses.field(default_factory=list)
    claim_templates: list[claims.ResourceClaimTemplate] = dataclasses.field(default_factory=list)
    nodes: list[model_nodes.Node] = dataclasses.field(default_factory=list)
    namespaces: list[model_nodes.Namespace] = dataclasses.field(default_factory=list)
    taint_rules: list[taints.DeviceTaintRule] = dataclasses.field(default_factory=list)
    pods: list[pods.Pod] = dataclasses.field(default_factory=list)
    # scheduling.k8s.io PodGroups (v1beta1, 1.36's v1alpha2): gangs, read by `dralloc simulate`
    pod_groups: list[model_scheduling.PodGroup] = dataclasses.field(default_factory=list)
    ordered: list[Object] = dataclasses.field(default_factory=list)  # every object read, in input order
    skipped: int = 0
    skipped_kinds: dict[str, int] = dataclasses.field(default_factory=dict)
    controllers: int = 0  # workload controllers read as their Pods (load(..., controllers=True))

    def add(self, obj: Object) -> None:
        self.ordered.append(obj)
        if isinstance(obj, classes.DeviceClass):
            self.device_classes.append(obj)
        elif isinstance(obj, devices.ResourceSlice):
            self.resource_slices.append(obj)
        elif isinstance(obj, claims.ResourceClaim):
            self.resource_claims.append(obj)
        elif isinstance(obj, claims.ResourceClaimTemplate):
            self.claim_templates.append(obj)
        elif isinstance(obj, model_nodes.Node):
            self.nodes.append(obj)
        elif isinstance(obj, model_nodes.Namespace):
            self.namespaces.append(obj)
        elif isinstance(obj, taints.DeviceTaintRule):
            self.taint_rules.append(obj)
        elif isinstance(obj, pods.Pod):
            self.pods.append(obj)
        elif isinstance(obj, model_scheduling.PodGroup):
            self.pod_groups.append(obj)

    def check_unique(self) -> None:
        """Two objects of one kind with one name would make the answer depend on file order.

        ResourceSlices and ResourceClaims are exempt: the allocator handles any set of slices
        (names only order slices within a pool) and allocates the claims it is given in order;
        upstream's own test inputs reuse such names. `--claim` refuses an ambiguous name.
        """
        for kind, items in (("DeviceClass", self.device_classes), ("Node", self.nodes)):
            seen: set[str] = set()
            for item in items:
                key = item.ref()
                if key in seen:
                    raise InputError(f"{kind} {key}: metadata.name: duplicate object in the input")
                seen.add(key)


def _files(paths: Iterable[str]) -> str:
    return ", ".join("stdin" if path == "-" else path for path in paths)


def check_not_empty(cluster: Cluster, paths: Sequence[str]) -> None:
    """An input without a single object of the kinds read is a mistake (wrong file?), not an empty cluster."""
    if cluster.ordered:
        return
    others = f" ({cluster.skipped} object(s) of other kinds)" if cluster.skipped else ""
    raise InputError(f"{_files(paths)}: no Node, DeviceClass, ResourceSlice, ResourceClaim or Pod in the input"
                     f"{others}: is it the right file?")


@dataclasses.dataclass(frozen=True)
class Nodes:
    """The nodes to allocate on, and whether they were made up from slices (no Node objects read)."""

    nodes: list[model_nodes.Node]
    from_slices: bool = False

    def note(self) -> str:
        """What to tell the user about nodes made up from slices ('' for real Node objects)."""
        if not self.from_slices:
            return ""
        names = ", ".join(n.metadata.name for n in self.nodes[:5]) + (", ..." if len(self.nodes) > 5 else "")
        return (f"note: no Node objects in the input; using the {len(self.nodes)} node(s) the ResourceSlices "
                f"name ({names}), without labels or allocatable resources\n")


def nodes_of(cluster: Cluster, paths: Sequence[str], *, flag_hint: str = "") -> Nodes:
    """The input's Node objects, by name; without any, the nodes its ResourceSlices name.

    With neither there is nothing to allocate on: InputError naming the files (`flag_hint`
    says how else to name a node, e.g. "pass --node NAME").
    """
    if cluster.nodes:
        return Nodes(sorted(cluster.nodes, key=lambda n: n.metadata.name))
    names = {s.spec.node_name for s in cluster.resource_slices if s.spec.node_name}
    names |= {d.node_name for s in cluster.resource_slices for d in s.spec.devices if d.node_name}
    if not names:
        hint = f": {flag_hint}" if flag_hint else ""
        raise InputError(f"{_files(paths)}: no Node objects in the input and no ResourceSlice names a node, "
                         f"so there is nowhere to allocate devices{hint}")
    return Nodes([model_nodes.Node(metadata=ObjectMeta(name=name)) for name in sorted(names)], from_slices=True)


def snapshot_of(cluster: Cluster, features: Features) -> Snapshot:
    """The allocator's view of the objects read: claims with an allocation are in use."""
    snapshot = Snapshot.build(
        device_classes=cluster.device_classes,
        resource_slices=cluster.resource_slices,
        allocated_claims=[c for c in cluster.resource_claims if c.status.allocation is not None],
        features=features,
    )
    if cluster.taint_rules:
        snapshot = dataclasses.replace(snapshot, extra_taints=taintrules.rule_taints(cluster.taint_rules,
                                                                                    snapshot.slices))
    return snapshot


def read_documents(path: str) -> list[object]:
    try:
        text = sys.stdin.read() if path == "-" else pathlib.Path(path).read_text()
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    try:
        return documents.parse(text)
    except documents.Error as exc:
        raise InputError(f"{path}: malformed YAML/JSON: {exc}") from exc


def _pod_group(raw: Mapping[str, Any]) -> model_scheduling.PodGroup | None:
    """A scheduling.k8s.io PodGroup, read with the operator's model (both served versions); None for another
    group's PodGroup (scheduler-plugins' scheduling.x-k8s.io, which pods join by a label, not read)."""
    group = str(raw.get("apiVersion") or "").partition("/")[0]
    if group != model_scheduling.GROUP:
        return None
    parsed: model_scheduling.PodGroup = conversion.parse_as(model_scheduling.PodGroup, raw)
    return parsed


def load(paths: Iterable[str], *, controllers: bool = False) -> Cluster:
    """The objects of the files; with `controllers`, workload controllers (Deployments, Jobs, ...)
    become the Pods they would create (`offline.controllers`), and the kinds it refuses are errors."""
    cluster = Cluster()
    for path in paths:
        try:
            for raw in conversion.flatten(read_documents(path)):
                if controllers and offline_controllers.is_controller(raw):
                    if offline_controllers.has_controller(raw):
                        # A ReplicaSet of a Deployment, a Job of a CronJob: its owner stands for its Pods.
                        kind = f"{raw.get('kind')} (owned by a controller)"
                        cluster.skipped_kinds[kind] = cluster.skipped_kinds.get(kind, 0) + 1
                        continue
                    for pod in offline_controllers.parse_pods(raw):
                        cluster.add(pod)
                    cluster.controllers += 1
                    continue
                parsed = _pod_group(raw) if raw.get("kind") == "PodGroup" else conversion.parse(raw)
                if parsed is None:
                    cluster.skipped += 1
                    kind = str(raw.get("kind") or "object")
                    if kind == "PodGroup":
                        kind = f"PodGroup ({raw.get('apiVersion')})"
                    cluster.skipped_kinds[kind] = cluster.skipped_kinds.get(kind, 0) + 1
                else:
                    cluster.add(parsed)
        except conversion.ObjectError as exc:
            raise InputError(f"{path}: {exc}") from exc
    cluster.check_unique()
    return cluster
