"""The resource types the sandbox serves, and how one stored object looks in each version.

A `ResourceType` is one (group, version, plural) the REST API serves. Several of them
may share one storage (`storage` key): DeviceTaintRule is served as resource.k8s.io v1,
v1beta2 and v1alpha3 as 1.37 does, and Events as core v1 and events.k8s.io/v1. Objects
are stored once, in the storage version's shape, and converted on the way in and out;
a version change is only an `apiVersion` rewrite except for Events, whose fields were
renamed. CustomResourceDefinitions add types at run time (`Registry.add_crd`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from typing import Any

Obj = dict[str, Any]
Converter = Callable[[Obj], Obj]

VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
META_FIELDS = {"metadata.name": "metadata.name", "metadata.namespace": "metadata.namespace"}


@dataclasses.dataclass(frozen=True)
class ResourceType:
    """One served (group, version, plural), with what discovery says about it."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    status: bool = False                      # has a /status subresource
    subresources: tuple[str, ...] = ()        # more POST-only subresources (binding, eviction)
    fields: tuple[tuple[str, str], ...] = ()  # field selector label -> dotted path
    storage_api: str = ""                     # apiVersion of stored objects; "" = this one
    strategic: bool = True                    # built-in: accepts strategic-merge-patch
    crd: bool = False
    # metadata.generation set on create and bumped on spec changes: most kinds' strategies do; some leave
    # it unset (PodGroup, Workload, CSIStorageCapacity in kube-apiserver 1.37).
    generation: bool = True
    to_storage: Converter | None = None
    from_storage: Converter | None = None
    schema: Obj | None = dataclasses.field(default=None, compare=False, hash=False)  # a CRD's openAPIV3Schema
    printer_columns: tuple[Obj, ...] = dataclasses.field(default=(), compare=False, hash=False)  # CRD's

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def storage(self) -> str:
        """The key of the storage shared by every version of this resource."""
        if self.plural == "events" and self.group in ("", "events.k8s.io"):
            return "/events"
        return f"{self.group}/{self.plural}"

    @property
    def stored_api_version(self) -> str:
        return self.storage_api or self.api_version

    @property
    def singular(self) -> str:
        return self.kind.lower()

    @property
    def qualified(self) -> str:
        """`pods` or `resourceclaims.resource.k8s.io`, as error messages name resources."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def field_paths(self) -> dict[str, str]:
        return {**META_FIELDS, **dict(self.fields)}

    def outward(self, obj: Obj) -> Obj:
        """The stored object as this version shows it (a new dict when it differs)."""
        if self.from_storage is not None:
            return self.from_storage(obj)
        if obj.get("apiVersion") != self.api_version:
            return {**obj, "apiVersion": self.api_version}
        return obj

    def inward(self, obj: Obj) -> Obj:
        """A written object in the storage version's shape."""
        if self.to_storage is not None:
            return self.to_storage(obj)
        if obj.get("apiVersion") != self.stored_api_version:
            return {**obj, "apiVersion": self.stored_api_version}
        return obj


_EVENT_RENAMES = (  # core/v1 field <-> events.k8s.io/v1 field
    ("involvedObject", "regarding"),
    ("message", "note"),
    ("source", "deprecatedSource"),
    ("firstTimestamp", "deprecatedFirstTimestamp"),
    ("lastTimestamp", "deprecatedLastTimestamp"),
    ("count", "deprecatedCount"),
    ("reportingComponent", "reportingController"),
)


def _events_out(obj: Obj) -> Obj:
    new = {k: v for k, v in obj.items() if k not in dict(_EVENT_RENAMES)}
    for core, modern in _EVENT_RENAMES:
        if core in obj:
            new[modern] = obj[core]
    new["apiVersion"] = "events.k8s.io/v1"
    return new


def _events_in(obj: Obj) -> Obj:
    modern_to_core = {m: c for c, m in _EVENT_RENAMES}
    new = {k: v for k, v in obj.items() if k not in modern_to_core}
    for modern, core in modern_to_core.items():
        if modern in obj:
            new[core] = obj[modern]
    new["apiVersion"] = "v1"
    return new


_POD_FIELDS = tuple((f, f) for f in (
    "spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
    "spec.hostNetwork", "status.phase", "status.podIP", "status.nominatedNodeName"))
_EVENT_FIELDS = (
    *((f, f) for f in (
        "involvedObject.kind", "involvedObject.namespace", "involvedObject.name", "involvedObject.uid",
        "involvedObject.apiVersion", "involvedObject.resourceVersion", "involvedObject.fieldPath",
        "reason", "reportingComponent", "type")),
    ("source", "source.component"),
)
_MODERN_EVENT_FIELDS = tuple((f, f) for f in (
    "regarding.kind", "regarding.namespace", "regarding.name", "regarding.uid",
    "regarding.apiVersion", "reason", "reportingController", "type"))
_RES = "resource.k8s.io"


RELEASES = ("1.36", "1.37", "1.38")  # what a sandbox can run as (`ApiServer(kubernetes_version=...)`)


def builtin_types(release: str = "1.37") -> list[ResourceType]:
    """Every built-in type of the release, in the order discovery lists them."""
    if release not in RELEASES:
        raise ValueError(f"kubernetes_version {release!r}: the sandbox runs as one of {', '.join(RELEASES)}")
    # GenericWorkload's gang API: v1beta1 from 1.37, v1alpha2 in 1.36 (another shape; sandbox/workloads.py).
    scheduling = "v1alpha2" if release == "1.36" else "v1beta1"
    rt = ResourceType
    types = [
        rt("", "v1", "namespaces", "Namespace", False, ("ns",), status=True,
           subresources=("finalize",), fields=(("status.phase", "status.phase"),)),
        rt("", "v1", "nodes", "Node", False, ("no",), status=True,
           fields=(("spec.unschedulable", "spec.unschedulable"),)),
        rt("", "v1", "pods", "Pod", True, ("po",), ("all",), status=True,
           subresources=("binding", "eviction"), fields=_POD_FIELDS),
        rt("", "v1", "events", "Event", True, ("ev",), fields=_EVENT_FIELDS),
        rt("", "v1", "configmaps", "ConfigMap", True, ("cm",)),
        # Volumes (sandbox/volumes.py): what kube-scheduler's volume filters read.
        rt("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", True, ("pvc",), status=True),
        rt("", "v1", "persistentvolumes", "PersistentVolume", False, ("pv",), status=True),
        rt("events.k8s.io", "v1", "events", "Event", True, ("ev",), fields=_MODERN_EVENT_FIELDS,
           storage_api="v1", to_storage=_events_in, from_storage=_events_out),
        rt("coordination.k8s.io", "v1", "leases", "Lease", True),
        rt(_RES, "v1", "deviceclasses", "DeviceClass", False),
        rt(_RES, "v1", "resourceclaims", "ResourceClaim", True, status=True),
        rt(_RES, "v1", "resourceclaimtemplates", "ResourceClaimTemplate", True),
        rt(_RES, "v1", "resourceslices", "ResourceSlice", False,
           fields=(("spec.nodeName", "spec.nodeName"), ("spec.driver", "spec.driver"),
                   ("spec.pool.name", "spec.pool.name"))),
        rt(_RES, "v1", "devicetaintrules", "DeviceTaintRule", False, status=True),
        rt(_RES, "v1beta2", "devicetaintrules", "DeviceTaintRule", False, status=True,
           storage_api=f"{_RES}/v1"),
        rt(_RES, "v1alpha3", "devicetaintrules", "DeviceTaintRule", False, status=True,
           storage_api=f"{_RES}/v1"),
        # ReplicaSets, stored only: no controller makes their pods (a test makes them, as it would).
        rt("apps", "v1", "replicasets", "ReplicaSet", True, ("rs",), ("all",), status=True),
        # PodDisruptionBudgets (sandbox/disruptionbudgets.py; their status: sandbox/disruption.py).
        rt("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True, ("pdb",), status=True),
        rt("storage.k8s.io", "v1", "csidrivers", "CSIDriver", False),  # sandbox/csidrivers.py
        rt("storage.k8s.io", "v1", "csinodes", "CSINode", False, status=True),
        rt("storage.k8s.io", "v1", "csistoragecapacities", "CSIStorageCapacity", True,  # sandbox/storagecapacities.py
           generation=False),
        rt("storage.k8s.io", "v1", "storageclasses", "StorageClass", False, ("sc",)),
        # Gang scheduling (GenericWorkload, beta in 1.37; sandbox/workloads.py).
        rt("scheduling.k8s.io", scheduling, "workloads", "Workload", True, generation=False),
        rt("scheduling.k8s.io", scheduling, "podgroups", "PodGroup", True, status=True, generation=False),
        # PriorityClasses (sandbox/priorities.py); listed after the gang API so that v1 is the
        # group's preferred version, as upstream's.
        rt("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", False, ("pc",)),
        rt("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", False,
           ("crd", "crds"), ("api-extensions",), status=True),
    ]
    return types


class Registry:
    """The served types by (group, version, plural), growing and shrinking with CRDs."""

    def __init__(self, release: str = "1.37") -> None:
        self.release = release
        self._types: dict[tuple[str, str, str], ResourceType] = {}
        for t in builtin_types(release):
            self._types[(t.group, t.version, t.plural)] = t

    def get(self, group: str, version: str, plural: str) -> ResourceType | None:
        return self._types.get((group, version, plural))

    def by_kind(self, api_version: str, kind: str) -> ResourceType | None:
        group, _, version = api_version.rpartition("/")
        for t in self._types.values():
            if t.group == group and t.version == version and t.kind == kind:
                return t
        return None

    def storage_type(self, storage: str) -> ResourceType | None:
        """The type whose version is the storage version of `storage`."""
        for t in self._types.values():
            if t.storage == storage and not t.storage_api:
                return t
        return None

    def __iter__(self) -> Iterator[ResourceType]:
        return iter(list(self._types.values()))

    def groups(self) -> dict[str, list[str]]:
        """Group -> served versions, preferred (storage) version first."""
        out: dict[str, list[str]] = {}
        for t in self._types.values():
            versions = out.setdefault(t.group, [])
            if t.version in versions:
                continue
            if t.storage_api:
                versions.append(t.version)
            else:
                versions.insert(0, t.version)
        return out

    def add_crd(self, crd: Obj) -> list[ResourceType]:
        """Serve a CRD's served versions; returns the new types (replacing earlier ones)."""
        self.remove_crd(crd)
        spec = crd.get("spec", {})
        names = spec.get("names", {})
        group = spec.get("group", "")
        versions = spec.get("versions") or []
        served = [v for v in versions if v.get("served", True)]
        storage = next((v["name"] for v in versions if v.get("storage")),
                       served[0]["name"] if served else "v1")
        added = []
        for v in served:
            subs = v.get("subresources") or {}
            t = ResourceType(
                group, v["name"], names.get("plural", ""), names.get("kind", ""),
                spec.get("scope", "Namespaced") == "Namespaced",
                tuple(names.get("shortNames") or ()), tuple(names.get("categories") or ()),
                status="status" in subs,
                storage_api="" if v["name"] == storage else f"{group}/{storage}",
                strategic=False, crd=True,
                schema=(v.get("schema") or {}).get("openAPIV3Schema"),
                printer_columns=tuple(v.get("additionalPrinterColumns") or ()),
            )
            self._types[(t.group, t.version, t.plural)] = t
            added.append(t)
        return added

    def remove_crd(self, crd: Obj) -> None:
        spec = crd.get("spec", {})
        group, plural = spec.get("group", ""), spec.get("names", {}).get("plural", "")
        for key in [k for k, t in self._types.items() if t.crd and k[0] == group and k[2] == plural]:
            del self._types[key]
