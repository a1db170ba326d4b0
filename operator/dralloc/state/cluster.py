"""The operator's in-memory view of the cluster, fed by watch events.

Objects are kept as raw API JSON (what the watch delivered) and parsed into
models lazily, once per resourceVersion. Every change bumps a per-kind
version, so derived structures (the allocator's slice index, the placement
view) are rebuilt only when their inputs changed. `relevant_changes` counts
only changes that can turn an unschedulable pod schedulable (slices, classes,
nodes, claims, pods appearing/finishing/leaving), not our own status writes.

Plain Python, no kopf, no awaits: handlers call `apply()` from the event loop.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Generic, TypeVar

from dralloc.lifecycle import health
from dralloc.model import (
    claims,
    classes,
    conversion,
    devices,
    nodes,
    pods,
    policy,
    scheduling,
    storage,
    taints,
)
from dralloc.model.base import Object

Raw = dict[str, Any]
Key = tuple[str, str]  # (namespace or "", name)
M = TypeVar("M", bound=Object)

KINDS = ("Pod", "Node", "ResourceClaim", "ResourceClaimTemplate", "ResourceSlice", "DeviceClass",
         "DeviceTaintRule", "DeviceHealthPolicy", "PodGroup")


@dataclasses.dataclass
class _Entry(Generic[M]):
    raw: Raw
    parsed: M | None = None


class Store(Generic[M]):
    """Objects of one kind, by (namespace, name), parsed on demand."""

    def __init__(self, model: type[M], *, slim: bool = False) -> None:
        """`slim`: once an object parsed, keep of its raw JSON only what `put` compares (name,
        uid, resourceVersion). For kinds nothing writes back or reads raw (ResourceSlices: at
        5,000 nodes x 8 devices their raw JSON alone is ~140 MiB)."""
        self.model = model
        self.slim = slim
        self.entries: dict[Key, _Entry[M]] = {}
        self.version = 0
        self.problems: dict[Key, str] = {}  # objects that do not parse: kept out, reported

    @staticmethod
    def key_of(raw: Raw) -> Key:
        meta = raw.get("metadata") or {}
        return (meta.get("namespace") or "", meta.get("name") or "")

    def put(self, raw: Raw) -> bool:
        """Store a new state of an object; False when it is not newer than what we have."""
        key = self.key_of(raw)
        old = self.entries.get(key)
        if old is not None and _rv(old.raw) >= _rv(raw) and _uid(old.raw) == _uid(raw):
            return False
        self.entries[key] = _Entry(raw)
        self.problems.pop(key, None)
        self.version += 1
        if self.slim:
            self._parsed(key, self.entries[key])  # now, so the raw JSON goes now
        return True

    def remove(self, raw: Raw) -> bool:
        key = self.key_of(raw)
        old = self.entries.get(key)
        if old is None or (_uid(raw) and _uid(old.raw) and _uid(raw) != _uid(old.raw)):
            return False
        del self.entries[key]
        self.problems.pop(key, None)
        self.version += 1
        return True

    def replace_all(self, items: list[Raw]) -> None:
        """A full list from the API: anything not in it is gone.

        A slim store empties `items` as it reads them: each object is parsed and its raw JSON
        dropped at once, so the process never holds every slice twice (raw and parsed).
        """
        self.problems.clear()
        self.version += 1
        if not self.slim:
            self.entries = {self.key_of(raw): _Entry(raw) for raw in items}
            return
        self.entries = {}
        items.reverse()
        while items:
            raw = items.pop()
            key = self.key_of(raw)
            entry = self.entries[key] = _Entry(raw)
            del raw
            self._parsed(key, entry)

    def get(self, namespace: str, name: str) -> M | None:
        entry = self.entries.get((namespace, name))
        return self._parsed((namespace, name), entry) if entry is not None else None

    def raw(self, namespace: str, name: str) -> Raw | None:
        entry = self.entries.get((namespace, name))
        return entry.raw if entry is not None else None

    def _parsed(self, key: Key, entry: _Entry[M]) -> M | None:
        if entry.parsed is None and key not in self.problems:
            try:
                entry.parsed = conversion.parse_as(self.model, entry.raw)
            except conversion.ObjectError as exc:
                self.problems[key] = str(exc)
            else:
                if self.slim:
                    entry.raw = _slimmed(entry.raw)
        return entry.parsed

    def all(self) -> Iterator[M]:
        for key, entry in list(self.entries.items()):
            parsed = self._parsed(key, entry)
            if parsed is not None:
                yield parsed

    def __len__(self) -> int:
        return len(self.entries)


def _slimmed(raw: Raw) -> Raw:
    meta = raw.get("metadata") or {}
    kept = {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion") if k in meta}
    return {"apiVersion": raw.get("apiVersion"), "kind": raw.get("kind"), "metadata": kept}


def _rv(raw: Raw) -> int:
    try:
        return int((raw.get("metadata") or {}).get("resourceVersion") or 0)
    except ValueError:
        return 0  # opaque resourceVersions (not ours to compare): always accept


def _uid(raw: Raw) -> str:
    return str((raw.get("metadata") or {}).get("uid") or "")


class ClusterState:
    """Everything the scheduler and the claim lifecycle read."""

    def __init__(self) -> None:
        self.pods: Store[pods.Pod] = Store(pods.Pod)
        self.nodes: Store[nodes.Node] = Store(nodes.Node)
        self.claims: Store[claims.ResourceClaim] = Store(claims.ResourceClaim)
        self.templates: Store[claims.ResourceClaimTemplate] = Store(claims.ResourceClaimTemplate)
        self.slices: Store[devices.ResourceSlice] = Store(devices.ResourceSlice, slim=True)
        self.classes: Store[classes.DeviceClass] = Store(classes.DeviceClass)
        self.taint_rules: Store[taints.DeviceTaintRule] = Store(taints.DeviceTaintRule)
        self.health_policies: Store[health.DeviceHealthPolicy] = Store(health.DeviceHealthPolicy)
        # scheduling.k8s.io PodGroups (gangs), when the cluster serves them (handlers/watching.py).
        self.pod_groups: Store[scheduling.PodGroup] = Store(scheduling.PodGroup)
        # Namespaces' labels: pod affinity terms' namespaceSelector.
        self.namespaces: Store[nodes.Namespace] = Store(nodes.Namespace)
        # What kube-scheduler's volume filters read (scheduling/volumes.py).
        self.volume_claims: Store[storage.PersistentVolumeClaim] = Store(storage.PersistentVolumeClaim)
        self.volumes: Store[storage.PersistentVolume] = Store(storage.PersistentVolume)
        self.storage_classes: Store[storage.StorageClass] = Store(storage.StorageClass)
        self.csi_nodes: Store[storage.CSINode] = Store(storage.CSINode)
        self.csi_drivers: Store[storage.CSIDriver] = Store(storage.CSIDriver)
        self.storage_capacities: Store[storage.CSIStorageCapacity] = Store(storage.CSIStorageCapacity)
        # PodDisruptionBudgets: which pods priority preemption should rather spare.
        self.disruption_budgets: Store[policy.PodDisruptionBudget] = Store(policy.PodDisruptionBudget)
        self.relevant_changes = 0
        # Called with (kind, the object before, after) for every change applied (None, None: a relist):
        # the scheduling queue's hints (scheduling/queueing.py) listen here.
        self.listeners: list[Callable[[str, Raw | None, Raw | None], None]] = []
        # Indexes the claim lifecycle needs on every pass, kept current on every apply:
        # pod uid -> pod key, and consumer uid (owner or reservedFor) -> claim keys (of any namespace:
        # a claim's references name objects of its own namespace only, see `claims_naming`).
        self.pod_keys: dict[str, Key] = {}
        # Pods without a node or with scheduling gates: the only ones a scheduler may have to place.
        self.unplaced_pods: set[Key] = set()
        self.claims_of: dict[str, set[Key]] = {}
        self._claim_uids: dict[Key, set[str]] = {}

    def store(self, kind: str) -> Store[Any]:
        stores: Mapping[str, Store[Any]] = {
            "Pod": self.pods, "Node": self.nodes, "ResourceClaim": self.claims,
            "ResourceClaimTemplate": self.templates, "ResourceSlice": self.slices,
            "DeviceClass": self.classes, "DeviceTaintRule": self.taint_rules,
            "DeviceHealthPolicy": self.health_policies, "PodGroup": self.pod_groups,
            "Namespace": self.namespaces, "PersistentVolumeClaim": self.volume_claims,
            "PersistentVolume": self.volumes, "StorageClass": self.storage_classes, "CSINode": self.csi_nodes,
            "CSIDriver": self.csi_drivers, "CSIStorageCapacity": self.storage_capacities,
            "PodDisruptionBudget": self.disruption_budgets,
        }
        return stores[kind]

    def apply(self, kind: str, event_type: str | None, raw: Raw) -> bool:
        """Apply one watch event (None: an object seen while listing). True when something changed."""
        store = self.store(kind)
        key = Store.key_of(raw)
        before = store.raw(*key) if kind == "Pod" or self.listeners else None
        changed = store.remove(raw) if event_type == "DELETED" else store.put(raw)
        if changed:
            for listener in self.listeners:
                listener(kind, before, None if event_type == "DELETED" else raw)
            if kind == "Pod":
                self._index_pod(key, before, None if event_type == "DELETED" else raw)
            elif kind == "ResourceClaim":
                self._index_claim(key, None if event_type == "DELETED" else raw)
        if changed and kind != "DeviceHealthPolicy" and (kind != "Pod" or _pod_change_matters(before, raw, event_type)):
            self.relevant_changes += 1
        return changed

    def replace_all(self, kind: str, items: list[Raw]) -> None:
        """A full list from the API for one kind: anything not in it is gone (the slices' list is
        consumed: see `Store.replace_all`)."""
        self.store(kind).replace_all(items)
        for listener in self.listeners:
            listener(kind, None, None)  # anything may have changed
        if kind == "Pod":
            self.pod_keys = {}
            self.unplaced_pods = set()
            for raw in items:
                self._index_pod(Store.key_of(raw), None, raw)
        elif kind == "ResourceClaim":
            self.claims_of.clear()
            self._claim_uids.clear()
            for raw in items:
                self._index_claim(Store.key_of(raw), raw)
        self.relevant_changes += 1

    def _index_pod(self, key: Key, before: Raw | None, after: Raw | None) -> None:
        if before is not None and self.pod_keys.get(_uid(before)) == key:
            del self.pod_keys[_uid(before)]
        self.unplaced_pods.discard(key)
        if after is not None:
            self.pod_keys[_uid(after)] = key
            spec = after.get("spec") or {}
            if not spec.get("nodeName") or spec.get("schedulingGates"):
                self.unplaced_pods.add(key)

    def _index_claim(self, key: Key, raw: Raw | None) -> None:
        for uid in self._claim_uids.pop(key, set()):
            keys = self.claims_of.get(uid)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del self.claims_of[uid]
        if raw is None:
            return
        meta, status = raw.get("metadata") or {}, raw.get("status") or {}
        uids = {str(ref.get("uid") or "") for ref in meta.get("ownerReferences") or []}
        uids |= {str(ref.get("uid") or "") for ref in status.get("reservedFor") or []}
        uids.discard("")
        self._claim_uids[key] = uids
        for uid in uids:
            self.claims_of.setdefault(uid, set()).add(key)

    def pod_by_uid(self, uid: str) -> pods.Pod | None:
        """The pod of that UID in any namespace: for a reference read from an object, use `pod_in`."""
        key = self.pod_keys.get(uid)
        return self.pods.get(*key) if key is not None else None

    def pod_key_in(self, namespace: str, uid: str) -> Key | None:
        """The key of the pod of that UID if it is in `namespace`: what an owner reference or a
        reservation of an object in `namespace` can name (a UID of another namespace's pod names nothing)."""
        key = self.pod_keys.get(uid)
        return key if key is not None and key[0] == namespace else None

    def pod_in(self, namespace: str, uid: str) -> pods.Pod | None:
        """The pod of that UID if it is in `namespace` (see `pod_key_in`)."""
        key = self.pod_key_in(namespace, uid)
        return self.pods.get(*key) if key is not None else None

    def claims_naming(self, namespace: str, uid: str) -> list[Key]:
        """The claims in `namespace` whose owner references or reservations carry `uid`, sorted.

        `claims_of` is keyed by UID alone and any tenant can write any UID into its own claims:
        the claims of an object are only those in the object's namespace."""
        return sorted(key for key in self.claims_of.get(uid, ()) if key[0] == namespace)


class PodsByUid(Mapping[str, pods.Pod]):
    """A read-only uid -> Pod view over the cluster state (parses only the pods looked up)."""

    def __init__(self, cluster: ClusterState) -> None:
        self.cluster = cluster

    def __getitem__(self, uid: str) -> pods.Pod:
        pod = self.cluster.pod_by_uid(uid)
        if pod is None:
            raise KeyError(uid)
        return pod

    def __iter__(self) -> Iterator[str]:
        return iter(list(self.cluster.pod_keys))

    def __len__(self) -> int:
        return len(self.cluster.pod_keys)


def _pod_change_matters(before: Raw | None, after: Raw, event_type: str | None) -> bool:
    """Pods free or take node resources only by appearing, binding, finishing or leaving; their labels
    decide which pod affinity terms and spread constraints count them."""
    if before is None or event_type == "DELETED":
        return True
    def facts(raw: Raw) -> tuple[Any, ...]:
        spec, status, meta = raw.get("spec") or {}, raw.get("status") or {}, raw.get("metadata") or {}
        return (spec.get("nodeName"), status.get("phase"), meta.get("deletionTimestamp"), meta.get("labels"),
                tuple(g.get("name") for g in spec.get("schedulingGates") or []),
                tuple(sorted((c.get("name"), c.get("resourceClaimName")) for c in
                             status.get("resourceClaimStatuses") or [])))
    return facts(before) != facts(after)
