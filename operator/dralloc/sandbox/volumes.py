"""PersistentVolumeClaims, PersistentVolumes, StorageClasses and CSINodes, admitted as kube-apiserver 1.37.2 does.

What kube-scheduler's volume filters read, served so that dralloc can learn them on the
sandbox. Each rule below was recorded from the real 1.37.2 server (tests/sandbox/test_volumes.py)
and follows upstream's code: core validation's ValidatePersistentVolume[Claim][Update],
pkg/apis/storage/validation, the strategies' PrepareForCreate/PrepareForUpdate, the v1
defaults, and three admission plugins of the default set.

Defaults (on every write, as Go decoding does): a claim's `volumeMode: Filesystem` and
`status.phase: Pending`; a volume's `persistentVolumeReclaimPolicy: Retain`, `volumeMode:
Filesystem` and `hostPath.type: ""`; a StorageClass's `reclaimPolicy: Delete` and
`volumeBindingMode: Immediate`; a CSINode's `drivers` and `topologyKeys` written back as
null when absent, and `status: {}`. On create a volume's status is `phase: Pending` with a
`lastPhaseTransitionTime`, moved on when `/status` changes the phase; a claim's `dataSource`
of another kind than a PersistentVolumeClaim or VolumeSnapshot is dropped, a `dataSourceRef`
into another namespace too (CrossNamespaceVolumeDataSource is off), and `dataSource` and
`dataSourceRef` mirror each other.

Admission plugins: StorageObjectInUseProtection adds the `kubernetes.io/pvc-protection` and
`kubernetes.io/pv-protection` finalizers on create (`collecting.py` plays the protection
controllers that remove them); DefaultStorageClass gives a claim without a class the newest
class annotated `storageclass.kubernetes.io/is-default-class: "true"`;
PersistentVolumeClaimResize refuses (403) growing a claim that is not Bound or whose class
does not `allowVolumeExpansion`.

Refusals (422, upstream's causes and texts): a claim's access modes (at least one, known
ones, ReadWriteOncePod alone), `resources.requests.storage` (required, > 0), label
selector, class name, volume mode, data sources; after creation its spec is immutable
(upstream's message with its diff of the internal Go struct) except `volumeName` once,
a class from none, and `resources.requests` of a Bound claim, which may not shrink below
`status.capacity`. A volume's access modes, `capacity` (only `storage`, > 0), reclaim
policy, exactly one volume source (hostPath, local, nfs and csi are checked inside;
others only counted), required node affinity (node selector rules) and local volumes
needing it; after creation its source, volume mode and node affinity (once set) are
immutable. A StorageClass's provisioner (required, a qualified name), parameters,
reclaim policy (Delete or Retain), binding mode and allowed topologies; provisioner,
parameters, reclaimPolicy and volumeBindingMode are immutable. A CSINode's drivers:
names (a CSI driver name, unique), node IDs (required, at most 256 characters),
allocatable counts (>= 0), topology keys (unique label keys); a driver's entry is
immutable but for `allocatable`.
"""

from __future__ import annotations

import difflib
import json
import math
import posixpath
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from dralloc.sandbox import errors, names, quantities, store

Obj = dict[str, Any]
Causes = list[tuple[str, str]]
Lookup = Callable[[str], list[Obj]]  # storage key -> the stored objects

STORAGE = "storage.k8s.io"
CLAIMS, VOLUMES = "/persistentvolumeclaims", "/persistentvolumes"
CLASSES, CSI_NODES = f"{STORAGE}/storageclasses", f"{STORAGE}/csinodes"
STORAGES = (CLAIMS, VOLUMES, CLASSES, CSI_NODES)
PVC_PROTECTION = "kubernetes.io/pvc-protection"
PV_PROTECTION = "kubernetes.io/pv-protection"
DEFAULT_CLASS = ("storageclass.kubernetes.io/is-default-class", "storageclass.beta.kubernetes.io/is-default-class")
BETA_CLASS = "volume.beta.kubernetes.io/storage-class"

ACCESS_MODES = ("ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod")  # sorted, as upstream lists
VOLUME_MODES = ("Block", "Filesystem")
VOLUME_RECLAIM = ("Delete", "Recycle", "Retain")
CLASS_RECLAIM = ("Delete", "Retain")
BINDING_MODES = ("Immediate", "WaitForFirstConsumer")
HOST_PATH_TYPES = ("", "BlockDevice", "CharDevice", "Directory", "DirectoryOrCreate", "File", "FileOrCreate", "Socket")
RESIZE_STATUSES = ("ControllerResizeInProgress", "ControllerResizeInfeasible", "NodeResizeInProgress",
                   "NodeResizeInfeasible", "NodeResizePending")
MAX_PARAMETERS = 512
MAX_PARAMETERS_SIZE = 256 * 1024
MAX_NODE_ID = 256
MAX_CSI_DRIVER_NAME = 63
IMMUTABLE = "field is immutable"
NOT_POSITIVE = "must be greater than zero"
ONE_SOURCE = "Forbidden: may not specify more than 1 volume type"
SPEC_IMMUTABLE = ("Forbidden: spec is immutable after creation except resources.requests and "
                  "volumeAttributesClassName for bound claims")

# A volume's sources in the order upstream checks them: (JSON field, path of the "more than 1"
# refusal, Go field of the internal PersistentVolumeSource). FlexVolume is counted, never refused.
SOURCES = (
    ("hostPath", "hostPath", "HostPath"), ("gcePersistentDisk", "gcePersistentDisk", "GCEPersistentDisk"),
    ("awsElasticBlockStore", "awsElasticBlockStore", "AWSElasticBlockStore"),
    ("glusterfs", "glusterfs", "Glusterfs"), ("flocker", "flocker", "Flocker"), ("nfs", "nfs", "NFS"),
    ("rbd", "rbd", "RBD"), ("quobyte", "quobyte", "Quobyte"), ("cephfs", "cephFS", "CephFS"),
    ("iscsi", "iscsi", "ISCSI"), ("cinder", "cinder", "Cinder"), ("fc", "fc", "FC"),
    ("flexVolume", "", "FlexVolume"), ("azureFile", "azureFile", "AzureFile"),
    ("vsphereVolume", "vsphereVolume", "VsphereVolume"),
    ("photonPersistentDisk", "photonPersistentDisk", "PhotonPersistentDisk"),
    ("portworxVolume", "portworxVolume", "PortworxVolume"), ("azureDisk", "azureDisk", "AzureDisk"),
    ("scaleIO", "scaleIO", "ScaleIO"), ("local", "local", "Local"), ("storageos", "storageos", "StorageOS"),
    ("csi", "csi", "CSI"),
)
# The internal PersistentVolumeSource's field order (what an immutable-source diff shows).
_SOURCE_ORDER = ("GCEPersistentDisk", "AWSElasticBlockStore", "HostPath", "Glusterfs", "NFS", "RBD", "ISCSI",
                 "Cinder", "CephFS", "FC", "Flocker", "FlexVolume", "AzureFile", "VsphereVolume", "Quobyte",
                 "AzureDisk", "PhotonPersistentDisk", "PortworxVolume", "ScaleIO", "Local", "StorageOS", "CSI")
# beta node label -> its GA name: a volume's node affinity may move from one to the other
_BETA_TO_GA = {"failure-domain.beta.kubernetes.io/zone": "topology.kubernetes.io/zone",
               "failure-domain.beta.kubernetes.io/region": "topology.kubernetes.io/region",
               "beta.kubernetes.io/os": "kubernetes.io/os", "beta.kubernetes.io/arch": "kubernetes.io/arch",
               "beta.kubernetes.io/instance-type": "node.kubernetes.io/instance-type"}


def _invalid(path: str, value: Any, details: list[str], causes: Causes) -> None:
    causes.extend((path, f"Invalid value: {errors.go_value(value)}: {detail}") for detail in details)


def _supported(path: str, value: Any, allowed: tuple[str, ...], causes: Causes) -> None:
    listed = ", ".join(errors.go_quote(a) for a in allowed)
    causes.append((path, f"Unsupported value: {errors.go_value(value)}: supported values: {listed}"))


def semantic(value: Any) -> Any:
    """A value as apimachinery's semantic equality compares it: empty lists and maps are nil."""
    if isinstance(value, dict):
        return {k: semantic(v) for k, v in value.items() if v not in (None, [], {})} or None
    if isinstance(value, list):
        return [semantic(v) for v in value] or None
    return value


def label_key(value: str) -> list[str]:
    """apimachinery's IsQualifiedName (a label key), 1.37's wording."""
    return names.qualified_name(value)


def label_selector_causes(selector: Obj, path: str) -> Causes:
    """metav1 ValidateLabelSelector."""
    causes: Causes = []
    for key, value in sorted((selector.get("matchLabels") or {}).items()):
        _invalid(f"{path}.matchLabels", key, label_key(key), causes)
        _invalid(f"{path}.matchLabels", value, names.label_value(str(value)), causes)
    for i, req in enumerate(selector.get("matchExpressions") or []):
        where = f"{path}.matchExpressions[{i}]"
        operator, values = req.get("operator", ""), req.get("values") or []
        if operator in ("In", "NotIn"):
            if not values:
                causes.append((f"{where}.values", "Required value: must be specified when `operator` is 'In' or 'NotIn'"))
        elif operator in ("Exists", "DoesNotExist"):
            if values:
                causes.append((f"{where}.values", "Forbidden: may not be specified when `operator` is 'Exists' or "
                                                  "'DoesNotExist'"))
        else:
            _invalid(f"{where}.operator", operator, ["not a valid selector operator"], causes)
        _invalid(f"{where}.key", req.get("key", ""), label_key(req.get("key", "")), causes)
        for j, value in enumerate(values):
            _invalid(f"{where}.values[{j}]", value, names.label_value(str(value)), causes)
    return causes


def node_selector_causes(selector: Obj, path: str) -> Causes:
    """core ValidateNodeSelector: at least one term; each requirement's operator, values and key."""
    causes: Causes = []
    terms = selector.get("nodeSelectorTerms") or []
    if not terms:
        return [(f"{path}.nodeSelectorTerms", "Required value: must have at least one node selector term")]
    for t, term in enumerate(terms):
        for i, req in enumerate(term.get("matchExpressions") or []):
            where = f"{path}.nodeSelectorTerms[{t}].matchExpressions[{i}]"
            operator, values = req.get("operator", ""), req.get("values") or []
            if operator in ("In", "NotIn") and not values:
                causes.append((f"{where}.values", "Required value: must be specified when `operator` is 'In' or "
                                                  "'NotIn'"))
            elif operator in ("Exists", "DoesNotExist") and values:
                causes.append((f"{where}.values", "Forbidden: may not be specified when `operator` is 'Exists' or "
                                                  "'DoesNotExist'"))
            elif operator in ("Gt", "Lt") and len(values) != 1:
                causes.append((f"{where}.values", "Required value: must be specified single value when `operator` "
                                                  "is 'Lt' or 'Gt'"))
            elif operator not in ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"):
                _invalid(f"{where}.operator", operator, ["not a valid selector operator"], causes)
            _invalid(f"{where}.key", req.get("key", ""), label_key(req.get("key", "")), causes)
            for j, value in enumerate(values):
                _invalid(f"{where}.values[{j}]", value, names.label_value(str(value)), causes)
        for i, req in enumerate(term.get("matchFields") or []):
            where = f"{path}.nodeSelectorTerms[{t}].matchFields[{i}]"
            values = req.get("values") or []
            if req.get("operator") in ("In", "NotIn"):
                if len(values) != 1:
                    causes.append((f"{where}.values", "Required value: must be only one value when `operator` is "
                                                      "'In' or 'NotIn' for node field selector"))
            else:
                _invalid(f"{where}.operator", req.get("operator", ""), ["not a valid selector operator"], causes)
            if req.get("key") != "metadata.name":
                _invalid(f"{where}.key", req.get("key", ""), ["not a valid field selector key"], causes)
            else:
                for j, value in enumerate(values):
                    _invalid(f"{where}.values[{j}]", value, names.dns1123_subdomain(value), causes)
    return causes


def _quantity(text: Any) -> Fraction:
    parsed = quantities.parse(text) if text is not None else None
    return parsed.value if parsed is not None else Fraction(0)


def _integer_value(text: Any) -> int:
    """Quantity.Value(): rounded up, away from zero."""
    value = _quantity(text)
    return math.ceil(value) if value >= 0 else -math.ceil(-value)


def _access_modes(modes: list[str], path: str, causes: Causes) -> None:
    once_pod = other = False
    for mode in modes:
        if mode not in ACCESS_MODES:
            _supported(path, mode, ACCESS_MODES, causes)
        elif mode == "ReadWriteOncePod":
            once_pod = True
        else:
            other = True
    if once_pod and other:
        causes.append((path, "Forbidden: may not use ReadWriteOncePod with other access modes"))


def _class_name(value: Any, path: str, causes: Causes) -> None:
    if value:
        _invalid(path, value, names.dns1123_subdomain(value), causes)


def csi_driver_name(value: str, path: str, causes: Causes) -> None:
    """core ValidateCSIDriverName: required, at most 63 bytes, a DNS subdomain in any case."""
    if not value:
        causes.append((path, "Required value"))
        return
    if len(value) > MAX_CSI_DRIVER_NAME:
        causes.append((path, f"Too long: may not be more than {MAX_CSI_DRIVER_NAME} bytes"))
    _invalid(path, value, names.dns1123_subdomain(value.lower()), causes)


def _no_backsteps(value: str, path: str, causes: Causes) -> None:
    if ".." in value.split("/"):
        _invalid(path, value, ["must not contain '..'"], causes)


# ---- PersistentVolumeClaim ---------------------------------------------------------------------

def _data_source(ref: Obj, path: str, causes: Causes, *, with_namespace: bool) -> None:
    if not ref.get("name"):
        causes.append((f"{path}.name", "Required value"))
    if not ref.get("kind"):
        causes.append((f"{path}.kind", "Required value"))
    group = ref.get("apiGroup") or ""
    if not group and ref.get("kind") != "PersistentVolumeClaim":
        _invalid(path, ref.get("kind", ""), ["must be 'PersistentVolumeClaim' when referencing the default apiGroup"],
                 causes)
    if group:
        _invalid(f"{path}.apiGroup", group, names.dns1123_subdomain(group), causes)
    if with_namespace and ref.get("namespace"):
        _invalid(f"{path}.namespace", ref["namespace"], names.namespace_name(ref["namespace"]), causes)


def claim_spec_causes(spec: Obj, path: str = "spec") -> Causes:
    """core ValidatePersistentVolumeClaimSpec."""
    causes: Causes = []
    modes = spec.get("accessModes") or []
    if not modes:
        causes.append((f"{path}.accessModes", "Required value: at least 1 access mode is required"))
    if spec.get("selector") is not None:
        causes += label_selector_causes(spec["selector"], f"{path}.selector")
    _access_modes(modes, f"{path}.accessModes", causes)
    requests = (spec.get("resources") or {}).get("requests") or {}
    where = f"{path}.resources[storage]"  # sic: upstream keys `resources`, not `requests`
    if "storage" not in requests:
        causes.append((where, "Required value"))
    elif _quantity(requests["storage"]) <= 0:
        _invalid(where, str(requests["storage"]), [NOT_POSITIVE], causes)
    _class_name(spec.get("storageClassName"), f"{path}.storageClassName", causes)
    if spec.get("volumeMode") is not None and spec["volumeMode"] not in VOLUME_MODES:
        _supported(f"{path}.volumeMode", spec["volumeMode"], VOLUME_MODES, causes)
    source, ref = spec.get("dataSource"), spec.get("dataSourceRef")
    if source is not None:
        _data_source(source, f"{path}.dataSource", causes, with_namespace=False)
    if ref is not None:
        _data_source(ref, f"{path}.dataSourceRef", causes, with_namespace=True)
    # sic: upstream passes a *field.Path as the bad value, which prints as {}
    if ref is not None and ref.get("namespace"):
        if source is not None:
            causes.append((path, "Invalid value: {}: may not be specified when dataSourceRef.namespace is specified"))
    elif source is not None and ref is not None and (
            (source.get("apiGroup"), source.get("kind"), source.get("name"))
            != (ref.get("apiGroup"), ref.get("kind"), ref.get("name"))):
        causes.append((path, "Invalid value: {}: must match dataSourceRef"))
    _class_name(spec.get("volumeAttributesClassName"), f"{path}.volumeAttributesClassName", causes)
    return causes


def _go_selector(selector: Obj | None) -> Obj | None:
    if selector is None:
        return None
    out: Obj = {}
    if selector.get("matchLabels"):
        out["matchLabels"] = dict(sorted(selector["matchLabels"].items()))
    if selector.get("matchExpressions"):
        out["matchExpressions"] = [{k: r[k] for k in ("key", "operator", "values") if r.get(k) not in (None, [])}
                                   for r in selector["matchExpressions"]]
    return out


def _go_resources(resources: Obj | None) -> Obj | None:
    return dict(sorted(resources.items())) if resources is not None else None


def _go_claim_spec(spec: Obj) -> Obj:
    """A claim's spec as the internal Go struct marshals (what upstream's immutability diff shows)."""
    resources = spec.get("resources") or {}
    source, ref = spec.get("dataSource"), spec.get("dataSourceRef")
    return {
        "AccessModes": spec.get("accessModes"),
        "Selector": _go_selector(spec.get("selector")),
        "Resources": {"Limits": _go_resources(resources.get("limits")),
                      "Requests": _go_resources(resources.get("requests"))},
        "VolumeName": spec.get("volumeName", ""),
        "StorageClassName": spec.get("storageClassName"),
        "VolumeMode": spec.get("volumeMode"),
        "DataSource": None if source is None else {"APIGroup": source.get("apiGroup"), "Kind": source.get("kind", ""),
                                                   "Name": source.get("name", "")},
        "DataSourceRef": None if ref is None else {"APIGroup": ref.get("apiGroup"), "Kind": ref.get("kind", ""),
                                                   "Name": ref.get("name", ""), "Namespace": ref.get("namespace")},
        "VolumeAttributesClassName": spec.get("volumeAttributesClassName"),
    }


def go_diff(old: Any, new: Any) -> str:
    """apimachinery's diff.Diff: both values as indented JSON, a unified diff with 3 lines of context."""
    def lines(value: Any) -> list[str]:
        text = json.dumps(value, indent=1, ensure_ascii=False)
        text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
        split = text.splitlines(keepends=True)
        split[-1] += "\n"
        return split
    diff = difflib.unified_diff(lines(old), lines(new), n=3)
    return "".join(line for line in diff if not line.startswith(("--- ", "+++ ")))


def _claim_update_causes(new: Obj, old: Obj) -> Causes:
    """core ValidatePersistentVolumeClaimUpdate (after the create rules, which it repeats)."""
    causes = claim_spec_causes(new.get("spec") or {})
    spec, before = new.get("spec") or {}, old.get("spec") or {}
    new_clone, old_clone = json.loads(json.dumps(spec)), json.loads(json.dumps(before))
    if not before.get("volumeName"):
        if "volumeName" in new_clone:
            old_clone["volumeName"] = new_clone["volumeName"]  # the PV controller binds it once
        else:
            old_clone.pop("volumeName", None)
    old_notes = (old.get("metadata") or {}).get("annotations") or {}
    new_notes = (new.get("metadata") or {}).get("annotations") or {}
    old_class, new_class = before.get("storageClassName"), spec.get("storageClassName")
    if (BETA_CLASS in old_notes and old_class is None and new_class is not None and new_class == old_notes[BETA_CLASS]
            and new_notes.get(BETA_CLASS, old_notes[BETA_CLASS]) == old_notes[BETA_CLASS]):
        new_clone.pop("storageClassName", None)  # from the beta annotation to the field
    else:
        if new_notes.get(BETA_CLASS, "") != old_notes.get(BETA_CLASS, ""):
            causes.append((f"metadata.annotations.{BETA_CLASS}",
                           f"Invalid value: {errors.go_quote(new_notes.get(BETA_CLASS, ''))}: {IMMUTABLE}"))
        if new_class is not None and old_class is None and (BETA_CLASS not in old_notes
                                                              or new_class == old_notes[BETA_CLASS]):
            new_clone.pop("storageClassName", None)  # a class may be set once on a claim without one
    bound = ((old.get("status") or {}).get("phase")) == "Bound"
    if bound and (new_clone.get("resources") or {}).get("requests") is not None:
        old_storage = ((before.get("resources") or {}).get("requests") or {}).get("storage")
        if old_storage is None:
            new_clone["resources"]["requests"].pop("storage", None)
        else:
            new_clone["resources"]["requests"]["storage"] = old_storage
    if bound and new_clone.get("volumeAttributesClassName") is not None:
        if "volumeAttributesClassName" in old_clone:
            new_clone["volumeAttributesClassName"] = old_clone["volumeAttributesClassName"]
        else:
            new_clone.pop("volumeAttributesClassName")
    if semantic(new_clone) != semantic(old_clone):
        causes.append(("spec", f"{SPEC_IMMUTABLE}\n{go_diff(_go_claim_spec(old_clone), _go_claim_spec(new_clone))}"))
    new_size = _quantity(((spec.get("resources") or {}).get("requests") or {}).get("storage"))
    old_size = _quantity(((before.get("resources") or {}).get("requests") or {}).get("storage"))
    status_size = _quantity(((old.get("status") or {}).get("capacity") or {}).get("storage"))
    if new_size < old_size and new_size <= status_size:  # RecoverVolumeExpansionFailure is GA
        causes.append(("spec.resources.requests.storage", "Forbidden: field can not be less than status.capacity"))
    if spec.get("volumeMode") != before.get("volumeMode"):
        causes.append(("volumeMode", f"Invalid value: {errors.go_value(spec.get('volumeMode'))}: {IMMUTABLE}"))
    old_vac, new_vac = before.get("volumeAttributesClassName"), spec.get("volumeAttributesClassName")
    if old_vac is not None and new_vac != old_vac:
        if new_vac is None:
            causes.append(("spec.volumeAttributesClassName", "Forbidden: update from non-nil value to nil is forbidden"))
        elif new_vac == "":
            causes.append(("spec.volumeAttributesClassName", "Forbidden: update from non-nil value to an empty string "
                                                             "is forbidden"))
    return causes


def _claim_resource_key(key: str, path: str, causes: Causes) -> bool:
    found: Causes = []
    _invalid(path, key, label_key(key), found)
    if not found and ("/" not in key or key.startswith("kubernetes.io/")) and key != "storage":
        _supported(path, key, ("storage",), found)
    causes += found
    return not found


def _claim_status_causes(claim: Obj) -> Causes:
    """core ValidatePersistentVolumeClaimStatusUpdate (RecoverVolumeExpansionFailure on)."""
    causes: Causes = []
    if not (claim.get("spec") or {}).get("accessModes"):
        causes.append(("Spec.accessModes", "Required value"))  # sic
    status = claim.get("status") or {}
    for key, value in sorted((status.get("capacity") or {}).items()):
        if _integer_value(value) < 0:
            causes.append((f"status.capacity[{key}]", f"Invalid value: {_integer_value(value)}: must be a valid "
                                                      "resource quantity"))
    for key, value in sorted((status.get("allocatedResourceStatuses") or {}).items()):
        if _claim_resource_key(key, "status.allocatedResourceStatuses", causes) and value not in RESIZE_STATUSES:
            _supported("status.allocatedResourceStatuses", key, RESIZE_STATUSES, causes)
    for key, value in sorted((status.get("allocatedResources") or {}).items()):
        if not _claim_resource_key(key, "status.allocatedResources", causes):
            continue
        where = f"status.allocatedResources[{key}]"
        if _integer_value(value) < 0:
            causes.append((where, f"Invalid value: {_integer_value(value)}: must be a valid resource quantity"))
        elif _quantity(value) < 0:
            _invalid(where, str(value), ["must be greater than or equal to 0"], causes)
    return causes


def _default_claim(claim: Obj, old: Obj | None, subresource: str) -> None:
    spec = claim.get("spec")
    if not isinstance(spec, dict):
        spec = claim["spec"] = {}
    spec.setdefault("volumeMode", "Filesystem")
    status = claim.get("status")
    if not isinstance(status, dict):
        status = claim["status"] = {}
    status.setdefault("phase", "Pending")
    if subresource == "status":
        return
    before = (old or {}).get("spec") or {}
    if (spec.get("dataSourceRef") or {}).get("namespace") and before.get("dataSourceRef") is None:
        del spec["dataSourceRef"]  # CrossNamespaceVolumeDataSource is off
    if before.get("dataSource") is None and before.get("dataSourceRef") is None and spec.get("dataSourceRef") is None:
        source = spec.get("dataSource")
        if source is not None and (source.get("kind"), source.get("apiGroup") or "") not in (
                ("PersistentVolumeClaim", ""), ("VolumeSnapshot", "snapshot.storage.k8s.io")):
            del spec["dataSource"]  # EnforceDataSourceBackwardsCompatibility
    source, ref = spec.get("dataSource"), spec.get("dataSourceRef")
    if source is not None and ref is None:  # NormalizeDataSources
        spec["dataSourceRef"] = ref = {k: source.get(k) for k in ("apiGroup", "kind", "name")}
    elif ref is not None and source is None and not ref.get("namespace"):
        spec["dataSource"] = source = {k: ref.get(k) for k in ("apiGroup", "kind", "name")}
    for reference in (source, ref):
        if reference is not None:
            reference.setdefault("apiGroup", None)  # no omitempty on its JSON tag


# ---- PersistentVolume --------------------------------------------------------------------------

def _source_causes(field: str, source: Obj, path: str) -> Causes:
    causes: Causes = []
    if field in ("hostPath", "local"):
        if not source.get("path"):
            return [(f"{path}.path", "Required value")]
        _no_backsteps(source["path"], f"{path}.path", causes)
        if field == "hostPath" and source.get("type") not in HOST_PATH_TYPES:
            _supported(f"{path}.type", source.get("type"), HOST_PATH_TYPES, causes)
    elif field == "nfs":
        if not source.get("server"):
            causes.append((f"{path}.server", "Required value"))
        if not source.get("path"):
            causes.append((f"{path}.path", "Required value"))
        if not posixpath.isabs(source.get("path", "")):
            _invalid(f"{path}.path", source.get("path", ""), ["must be an absolute path"], causes)
    elif field == "csi":
        csi_driver_name(source.get("driver", ""), f"{path}.driver", causes)
        if not source.get("volumeHandle"):
            causes.append((f"{path}.volumeHandle", "Required value"))
        for ref in ("controllerPublishSecretRef", "nodeStageSecretRef", "nodePublishSecretRef",
                    "controllerExpandSecretRef", "nodeExpandSecretRef"):
            secret = source.get(ref)
            if secret is None:
                continue
            for key, rule in (("name", names.dns1123_subdomain), ("namespace", names.dns1123_label)):
                if not secret.get(key):
                    causes.append((f"{path}.{ref}.{key}", "Required value"))
                else:
                    _invalid(f"{path}.{ref}.{key}", secret[key], rule(secret[key]), causes)
    return causes


def volume_spec_causes(spec: Obj) -> Causes:
    """core ValidatePersistentVolumeSpec (not inline)."""
    causes: Causes = []
    modes = spec.get("accessModes") or []
    if not modes:
        causes.append(("spec.accessModes", "Required value"))
    _access_modes(modes, "spec.accessModes", causes)
    capacity = spec.get("capacity")
    if not capacity:
        causes.append(("spec.capacity", "Required value"))
    if "storage" not in (capacity or {}) or len(capacity or {}) > 1:
        shown = "null" if capacity is None else errors.go_json(dict(sorted(capacity.items())))
        causes.append(("spec.capacity", f'Unsupported value: {shown}: supported values: "storage"'))
    for key, value in sorted((capacity or {}).items()):
        if _integer_value(value) < 0:
            causes.append((f"spec.capacity[{key}]", f"Invalid value: {_integer_value(value)}: must be a valid "
                                                    "resource quantity"))
        if _quantity(value) <= 0:
            _invalid(f"spec.capacity[{key}]", str(value), [NOT_POSITIVE], causes)
    reclaim = spec.get("persistentVolumeReclaimPolicy")
    if reclaim and reclaim not in VOLUME_RECLAIM:
        _supported("spec.persistentVolumeReclaimPolicy", reclaim, VOLUME_RECLAIM, causes)
    affinity = spec.get("nodeAffinity")
    if affinity is not None:
        if affinity.get("required") is not None:
            causes += node_selector_causes(affinity["required"], "spec.nodeAffinity.required")
        else:
            causes.append(("spec.nodeAffinity.required", "Required value: must specify required node constraints"))
    count = 0
    for field, refused_at, _ in SOURCES:
        source = spec.get(field)
        if source is None:
            continue
        if count and refused_at:
            causes.append((f"spec.{refused_at}", ONE_SOURCE))
            continue
        count += 1
        causes += _source_causes(field, source, f"spec.{field}")
        if field == "local" and affinity is None:
            causes.append(("spec.nodeAffinity", "Required value: Local volume requires node affinity"))
    if not count:
        causes.append(("spec", "Required value: must specify a volume type"))
    host_path = (spec.get("hostPath") or {}).get("path")
    if host_path is not None and posixpath.normpath(host_path) == "/" and reclaim == "Recycle":
        causes.append(("spec.persistentVolumeReclaimPolicy", "Forbidden: may not be 'recycle' for a hostPath mount "
                                                             "of '/'"))
    _class_name(spec.get("storageClassName"), "spec.storageClassName", causes)
    if spec.get("volumeMode") is not None and spec["volumeMode"] not in VOLUME_MODES:
        _supported("spec.volumeMode", spec["volumeMode"], VOLUME_MODES, causes)
    vac = spec.get("volumeAttributesClassName")
    if vac is not None:
        if vac == "":
            causes.append(("spec.volumeAttributesClassName", "Required value: an empty string is disallowed"))
        else:
            _class_name(vac, "spec.volumeAttributesClassName", causes)
        if spec.get("csi") is None:
            causes.append(("spec.csi", "Required value: has to be specified when using volumeAttributesClassName"))
    return causes


def _mount_options_causes(volume: Obj) -> Causes:
    """pkg/volume/validation: the mount-options annotation only on volume types that mount."""
    spec = volume.get("spec") or {}
    if any(spec.get(f) is not None for f in ("gcePersistentDisk", "awsElasticBlockStore", "glusterfs", "nfs", "rbd",
                                            "quobyte", "iscsi", "cinder", "cephfs", "azureFile", "vsphereVolume",
                                            "azureDisk", "photonPersistentDisk")):
        return []
    key = "volume.beta.kubernetes.io/mount-options"
    if key in ((volume.get("metadata") or {}).get("annotations") or {}):
        return [(f"metadata.annotations.{key}", "Forbidden: may not specify mount options for this volume type")]
    return []


def _go_struct(value: Any) -> Any:
    """A versioned object as its internal Go struct marshals, approximately: field names capitalized."""
    if isinstance(value, dict):
        return {k[:1].upper() + k[1:]: _go_struct(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_go_struct(v) for v in value]
    return value


def _go_secret(ref: Obj | None) -> Obj | None:
    return None if ref is None else {"Name": ref.get("name", ""), "Namespace": ref.get("namespace", "")}


def _go_source(spec: Obj) -> Obj:
    """The internal PersistentVolumeSource (exact for hostPath, local, nfs and csi)."""
    out: Obj = dict.fromkeys(_SOURCE_ORDER)
    for field, _, go_name in SOURCES:
        source = spec.get(field)
        if source is None:
            continue
        if field == "hostPath":
            out[go_name] = {"Path": source.get("path", ""), "Type": source.get("type")}
        elif field == "local":
            out[go_name] = {"Path": source.get("path", ""), "FSType": source.get("fsType")}
        elif field == "nfs":
            out[go_name] = {"Server": source.get("server", ""), "Path": source.get("path", ""),
                            "ReadOnly": bool(source.get("readOnly"))}
        elif field == "csi":
            attributes = source.get("volumeAttributes")
            out[go_name] = {"Driver": source.get("driver", ""), "VolumeHandle": source.get("volumeHandle", ""),
                            "ReadOnly": bool(source.get("readOnly")), "FSType": source.get("fsType", ""),
                            "VolumeAttributes": dict(sorted(attributes.items())) if attributes is not None else None,
                            **{ref[:1].upper() + ref[1:]: _go_secret(source.get(ref)) for ref in (
                                "controllerPublishSecretRef", "nodeStageSecretRef", "nodePublishSecretRef",
                                "controllerExpandSecretRef", "nodeExpandSecretRef")}}
        else:
            out[go_name] = _go_struct(source)
    return out


def _go_node_affinity(affinity: Obj | None) -> Obj | None:
    if affinity is None:
        return None
    required = affinity.get("required")
    if required is None:
        return {"Required": None}

    def requirement(req: Obj) -> Obj:
        return {"Key": req.get("key", ""), "Operator": req.get("operator", ""), "Values": req.get("values")}
    return {"Required": {"NodeSelectorTerms": [
        {"MatchExpressions": [requirement(r) for r in t["matchExpressions"]] if t.get("matchExpressions") is not None
         else None,
         "MatchFields": [requirement(r) for r in t["matchFields"]] if t.get("matchFields") is not None else None}
        for t in required.get("nodeSelectorTerms") or []]}}


def _ga_keys(new: Any, old: Any) -> Any:
    """`old` node affinity with each beta label key the new one moved to GA renamed (upstream allows that)."""
    if isinstance(new, dict) and isinstance(old, dict):
        if "key" in old and _BETA_TO_GA.get(old["key"]) == new.get("key"):
            old = {**old, "key": new["key"]}
        return {k: _ga_keys(new.get(k), v) for k, v in old.items()}
    if isinstance(new, list) and isinstance(old, list):
        return [_ga_keys(new[i] if i < len(new) else None, v) for i, v in enumerate(old)]
    return old


def _volume_update_causes(new: Obj, old: Obj) -> Causes:
    """core ValidatePersistentVolumeUpdate."""
    causes: Causes = []
    spec, before = new.get("spec") or {}, old.get("spec") or {}
    compared = spec
    if (before.get("csi") or {}).get("controllerExpandSecretRef") is None and \
            (spec.get("csi") or {}).get("controllerExpandSecretRef") is not None:
        compared = {**spec, "csi": {k: v for k, v in spec["csi"].items() if k != "controllerExpandSecretRef"}}
    fields = [f for f, _, _ in SOURCES]
    if semantic({f: compared.get(f) for f in fields}) != semantic({f: before.get(f) for f in fields}):
        causes.append(("spec.persistentvolumesource", "Forbidden: spec.persistentvolumesource is immutable after "
                                                      f"creation\n{go_diff(_go_source(before), _go_source(compared))}"))
    if spec.get("volumeMode") != before.get("volumeMode"):
        causes.append(("volumeMode", f"Invalid value: {errors.go_value(spec.get('volumeMode'))}: {IMMUTABLE}"))
    old_affinity = before.get("nodeAffinity")
    if old_affinity is not None and semantic(spec.get("nodeAffinity")) != semantic(
            _ga_keys(spec.get("nodeAffinity"), old_affinity)):
        shown = errors.go_json(_go_node_affinity(spec.get("nodeAffinity")))
        causes.append(("nodeAffinity", f"Invalid value: {shown}: {IMMUTABLE}, except for updating from beta label "
                                       "to GA"))
    old_vac, new_vac = before.get("volumeAttributesClassName"), spec.get("volumeAttributesClassName")
    if old_vac is not None and new_vac is None:
        causes.append(("spec.volumeAttributesClassName", "Forbidden: update from non-nil value to nil is forbidden"))
    return causes


def _default_volume(volume: Obj, old: Obj | None, subresource: str) -> None:
    spec = volume.get("spec")
    if not isinstance(spec, dict):
        spec = volume["spec"] = {}
    spec.setdefault("persistentVolumeReclaimPolicy", "Retain")
    spec.setdefault("volumeMode", "Filesystem")
    if isinstance(spec.get("hostPath"), dict):
        spec["hostPath"].setdefault("type", "")
    status = volume.get("status")
    if not isinstance(status, dict):
        status = volume["status"] = {}
    if old is None and not status:
        status.update({"phase": "Pending", "lastPhaseTransitionTime": store.now()})
    status.setdefault("phase", "Pending")
    if subresource == "status" and old is not None:
        before = old.get("status") or {}
        if status["phase"] == before.get("phase"):
            if status.get("lastPhaseTransitionTime") is None and before.get("lastPhaseTransitionTime") is not None:
                status["lastPhaseTransitionTime"] = before["lastPhaseTransitionTime"]
        elif status.get("lastPhaseTransitionTime") in (None, before.get("lastPhaseTransitionTime")):
            status["lastPhaseTransitionTime"] = store.now()


# ---- StorageClass and CSINode ----------------------------------------------------------------

def _topologies(terms: list[Obj]) -> Causes:
    causes: Causes = []
    seen: list[dict[str, frozenset[str]]] = []
    for i, term in enumerate(terms):
        path = f"allowedTopologies[{i}].matchLabelExpressions"
        expressions: dict[str, frozenset[str]] = {}
        for j, req in enumerate(term.get("matchLabelExpressions") or []):
            values = req.get("values") or []
            if not values:
                causes.append((f"{path}[{j}].values", "Required value"))
            for k, value in enumerate(values):
                if value in values[:k]:
                    causes.append((f"{path}[{j}].values[{k}]", f"Duplicate value: {errors.go_quote(value)}"))
            _invalid(f"{path}[{j}].key", req.get("key", ""), label_key(req.get("key", "")), causes)
            if req.get("key", "") in expressions:
                causes.append((f"{path}[{j}].key", f"Duplicate value: {errors.go_quote(req.get('key', ''))}"))
            expressions[req.get("key", "")] = frozenset(values)
        # Upstream compares each term with the earlier ones and with as many nil terms as there are
        # terms (its list is pre-filled): a term without expressions is always a duplicate.
        if not expressions or expressions in seen:
            causes.append((path, 'Duplicate value: ""'))
        seen.append(expressions)
    return causes


def _class_causes(sc: Obj, old: Obj | None) -> Causes:
    """storage ValidateStorageClass (also on update, as the strategy calls it), then the declarative rules:
    provisioner required, four fields immutable (`Invalid value: null`, as 1.37 words them)."""
    causes: Causes = []
    declared: Causes = []
    provisioner = sc.get("provisioner", "")
    if not provisioner:
        if old is None or provisioner != old.get("provisioner", ""):  # declarative: unchanged data is not re-checked
            declared.append(("provisioner", "Required value"))
    else:
        _invalid("provisioner", provisioner.lower(), label_key(provisioner.lower()), causes)
    parameters = sc.get("parameters") or {}
    if len(parameters) > MAX_PARAMETERS:
        causes.append(("parameters", f"Too long: may not be more than {MAX_PARAMETERS} bytes"))
    else:
        if "" in parameters:
            _invalid("parameters", "", ["field can not be empty."], causes)
        if sum(len(k) + len(str(v)) for k, v in parameters.items()) > MAX_PARAMETERS_SIZE:
            causes.append(("parameters", f"Too long: may not be more than {MAX_PARAMETERS_SIZE} bytes"))
    if sc.get("reclaimPolicy") and sc["reclaimPolicy"] not in CLASS_RECLAIM:
        _supported("reclaimPolicy", sc["reclaimPolicy"], CLASS_RECLAIM, causes)
    if sc.get("volumeBindingMode") not in BINDING_MODES:
        _supported("volumeBindingMode", sc.get("volumeBindingMode"), BINDING_MODES, causes)
    causes += _topologies(sc.get("allowedTopologies") or [])
    if old is not None:
        for field in ("provisioner", "parameters", "reclaimPolicy", "volumeBindingMode"):
            if semantic(sc.get(field)) != semantic(old.get(field)):
                declared.append((field, f"Invalid value: null: {IMMUTABLE}"))
    return causes + declared


def _csi_node_causes(node: Obj, old: Obj | None) -> Causes:
    """storage ValidateCSINode / ValidateCSINodeUpdate (MutableCSINodeAllocatableCount on)."""
    causes: Causes = []
    drivers = (node.get("spec") or {}).get("drivers") or []
    seen: set[str] = set()
    for i, driver in enumerate(drivers):
        path = f"spec.drivers[{i}]"
        name = driver.get("name", "")
        csi_driver_name(name, f"{path}.name", causes)
        node_id = driver.get("nodeID", "")
        if not node_id:
            causes.append((f"{path}.nodeID", "Required value"))
        if len(node_id) > MAX_NODE_ID:
            _invalid(f"{path}.nodeID", node_id, [f"must be {MAX_NODE_ID} characters or less"], causes)
        count = (driver.get("allocatable") or {}).get("count")
        if count is not None and count < 0:
            causes.append((f"{path}.allocatable.count", f"Invalid value: {count}: must be greater than or equal to 0"))
        if name in seen:
            causes.append((f"{path}.name", f"Duplicate value: {errors.go_quote(name)}"))
        seen.add(name)
        keys: set[str] = set()
        for key in driver.get("topologyKeys") or []:
            if not key:
                causes.append((path, "Required value"))
            if key in keys:
                causes.append((path, f"Duplicate value: {errors.go_quote(key)}"))
            keys.add(key)
            _invalid(path, key, label_key(key), causes)
    if old is None:
        return causes
    for before in (old.get("spec") or {}).get("drivers") or []:
        for driver in drivers:
            if driver.get("name") != before.get("name"):
                continue
            kept = {k: v for k, v in driver.items() if k != "allocatable"}
            if semantic(kept) != semantic({k: v for k, v in before.items() if k != "allocatable"}):
                shown = {"Name": driver.get("name", ""), "NodeID": driver.get("nodeID", ""),
                         "TopologyKeys": driver.get("topologyKeys"), "Allocatable": None}
                causes.append(("spec.drivers", f"Invalid value: {errors.go_json(shown)}: {IMMUTABLE}"))
    return causes


# ---- entry points (admission.py) --------------------------------------------------------------

def default(storage: str, obj: Obj, old: Obj | None, subresource: str, lookup: Lookup | None) -> None:
    """Defaults and the mutating admission plugins (StorageObjectInUseProtection, DefaultStorageClass)."""
    if storage == CLAIMS:
        _default_claim(obj, old, subresource)
    elif storage == VOLUMES:
        _default_volume(obj, old, subresource)
    elif storage == CLASSES:
        obj.setdefault("reclaimPolicy", "Delete")
        obj.setdefault("volumeBindingMode", "Immediate")
    elif storage == CSI_NODES:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            spec = obj["spec"] = {}
        if not spec.get("drivers"):
            spec["drivers"] = None  # no omitempty on these two JSON tags; empty lists come back as null
        for driver in spec.get("drivers") or []:
            if not driver.get("topologyKeys"):
                driver["topologyKeys"] = None
        if old is None or not isinstance(obj.get("status"), dict):
            obj["status"] = {}  # always written back, cleared on create
        if not ((old or {}).get("status") or {}).get("storageHealth"):
            obj["status"].pop("storageHealth", None)  # CSIVolumeHealth is off
    if old is not None or subresource:
        return
    meta = obj.setdefault("metadata", {})
    if storage in (CLAIMS, VOLUMES):
        finalizer = PVC_PROTECTION if storage == CLAIMS else PV_PROTECTION
        if finalizer not in (meta.get("finalizers") or []):
            meta["finalizers"] = [*(meta.get("finalizers") or []), finalizer]
    if storage == CLAIMS and lookup is not None and "storageClassName" not in obj["spec"] \
            and BETA_CLASS not in (meta.get("annotations") or {}):
        chosen = default_class(lookup(CLASSES))
        if chosen is not None:
            obj["spec"]["storageClassName"] = chosen["metadata"]["name"]


def default_class(classes: list[Obj]) -> Obj | None:
    """The default StorageClass: the newest annotated one (then by name), as GetDefaultClass picks it."""
    marked = [c for c in classes
              if any(((c.get("metadata") or {}).get("annotations") or {}).get(a) == "true" for a in DEFAULT_CLASS)]
    marked.sort(key=lambda c: c["metadata"]["name"])
    marked.sort(key=lambda c: c["metadata"].get("creationTimestamp", ""), reverse=True)
    return marked[0] if marked else None


def validate(storage: str, obj: Obj, old: Obj | None, subresource: str) -> Causes:
    """The 422 causes for one decoded object (empty when it is fine)."""
    if storage == CLAIMS:
        if subresource == "status":
            return _claim_status_causes(obj)
        return claim_spec_causes(obj.get("spec") or {}) if old is None else _claim_update_causes(obj, old)
    if storage == VOLUMES:
        if subresource == "status":
            return []
        causes = volume_spec_causes(obj.get("spec") or {}) + _mount_options_causes(obj)
        return causes if old is None else causes + _volume_update_causes(obj, old)
    if storage == CLASSES:
        return _class_causes(obj, old)
    if storage == CSI_NODES and subresource != "status":
        return _csi_node_causes(obj, old)
    return []


def schema_causes(storage: str, causes: Causes) -> Causes:
    """The schema walk's causes, without the list-map duplicates CSINode validation reports in its own order."""
    if storage != CSI_NODES:
        return causes
    return [(path, message) for path, message in causes if not message.startswith("Duplicate value")]


def resize_refusal(claim: Obj, old: Obj, lookup: Lookup | None) -> str:
    """The PersistentVolumeClaimResize admission plugin: '' when the update may grow the claim."""
    new_size = _quantity(((claim.get("spec") or {}).get("resources") or {}).get("requests", {}).get("storage"))
    old_size = _quantity(((old.get("spec") or {}).get("resources") or {}).get("requests", {}).get("storage"))
    if new_size <= old_size:
        return ""
    if (old.get("status") or {}).get("phase") != "Bound":
        return "Only bound persistent volume claims can be expanded"
    name, old_name = claim_class(claim), claim_class(old)
    classes = {c["metadata"]["name"]: c for c in (lookup(CLASSES) if lookup is not None else [])}
    if not name or name != old_name or not (classes.get(name) or {}).get("allowVolumeExpansion"):
        return "only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must " \
               "support resize"
    return ""


def claim_class(claim: Obj) -> str:
    """GetPersistentVolumeClaimClass: the beta annotation first, then spec.storageClassName."""
    notes = (claim.get("metadata") or {}).get("annotations") or {}
    return str(notes[BETA_CLASS]) if BETA_CLASS in notes else str((claim.get("spec") or {}).get("storageClassName") or "")


def volume_class(volume: Obj) -> str:
    notes = (volume.get("metadata") or {}).get("annotations") or {}
    return str(notes[BETA_CLASS]) if BETA_CLASS in notes else str((volume.get("spec") or {}).get("storageClassName") or "")
