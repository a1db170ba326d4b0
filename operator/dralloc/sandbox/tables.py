"""Server-side printing: the `meta.k8s.io/v1` Table that kubectl asks for.

kubectl sends `Accept: application/json;as=Table;v=v1;g=meta.k8s.io,...` and prints
whatever columns the server defines, hiding those with priority 1 unless `-o wide`.
The server always fills every column (kube-apiserver generates tables "wide"), so a
row has one cell per column definition. Columns and cell formats follow kube-apiserver
1.37's printers (`pkg/printers/internalversion`) for the kinds the sandbox serves:

    pods            NAME READY STATUS RESTARTS AGE | IP NODE NOMINATED-NODE READINESS-GATES
    nodes           NAME STATUS ROLES AGE VERSION | INTERNAL-IP EXTERNAL-IP OS-IMAGE
                    KERNEL-VERSION CONTAINER-RUNTIME
    events          LAST SEEN TYPE REASON OBJECT MESSAGE | SUBOBJECT SOURCE FIRST SEEN
                    COUNT NAME   (core v1 and events.k8s.io/v1 print the same)
    namespaces      NAME STATUS AGE
    configmaps      NAME DATA AGE
    leases          NAME HOLDER AGE
    resourceclaims  NAME STATE AGE ("pending", "allocated,reserved", "deleted,allocated")
    resourceclaimtemplates, deviceclasses   NAME AGE
    resourceslices  NAME NODE DRIVER POOL AGE
    persistentvolumeclaims  NAME STATUS VOLUME CAPACITY ACCESS-MODES STORAGECLASS
                    VOLUMEATTRIBUTESCLASS AGE | VOLUMEMODE
    persistentvolumes  NAME CAPACITY ACCESS-MODES RECLAIM-POLICY STATUS CLAIM STORAGECLASS
                    VOLUMEATTRIBUTESCLASS REASON AGE | VOLUMEMODE
    storageclasses  NAME PROVISIONER RECLAIMPOLICY VOLUMEBINDINGMODE ALLOWVOLUMEEXPANSION AGE
                    (a list marks the default class: `standard (default)`)
    csinodes        NAME DRIVERS AGE
    csidrivers      NAME ATTACHREQUIRED PODINFOONMOUNT STORAGECAPACITY TOKENREQUESTS
                    REQUIRESREPUBLISH MODES AGE
    priorityclasses NAME VALUE GLOBAL-DEFAULT AGE PREEMPTIONPOLICY
    poddisruptionbudgets  NAME MIN-AVAILABLE MAX-UNAVAILABLE ALLOWED-DISRUPTIONS AGE
                    (`N/A` for a field not set)

Kinds without a printer (DeviceTaintRules, CRDs) get the generic NAME / CREATED AT
table, and so do CSIStorageCapacities: upstream has printCSIStorageCapacity, but their
storage is built with the default table convertor, so the real server never uses it.
Custom resources get their CRD's `additionalPrinterColumns` (default: AGE).
Column descriptions are the API's field descriptions, read from the same 1.37 OpenAPI
definitions the rest of the sandbox uses.

Each row carries the object as `includeObject` asks: `Metadata` (the default) a
`PartialObjectMetadata`, `Object` the full object, `None` nothing (null).
"""

from __future__ import annotations

import datetime
import functools
import re
from collections.abc import Callable
from typing import Any

from dralloc.sandbox import errors, resources, schemas, volumes

Obj = dict[str, Any]
Column = tuple[str, str, str, str, int]  # name, type, format, description (a field path or text), priority
Printer = Callable[[Obj, datetime.datetime], tuple[list[Any], list[Obj]]]  # -> cells, row conditions

TABLE_VERSIONS = ("v1", "v1beta1")
INCLUDE = ("Metadata", "Object", "None")


def negotiate(accept: str) -> str | None:
    """The Table apiVersion the Accept header asks for first, or None for plain objects."""
    for part in accept.split(","):
        media, *params = [p.strip() for p in part.split(";")]
        opts = dict(p.split("=", 1) for p in params if "=" in p)
        if opts.get("as") == "Table":
            if media in ("application/json", "*/*", "application/*") and opts.get("g") == "meta.k8s.io" \
                    and opts.get("v") in TABLE_VERSIONS:
                return f"meta.k8s.io/{opts['v']}"
            continue  # a Table we cannot make (protobuf, another group): the next choice decides
        if media in ("application/json", "*/*", "application/*", "application/yaml", ""):
            return None
    return None


def include_option(value: str | None) -> str:
    include = value or "Metadata"
    if include not in INCLUDE:
        raise errors.ApiError(400, f'unrecognized includeObject value: "{include}"')
    return include


# ---- time ----------------------------------------------------------------------------------


def parse_time(text: Any) -> datetime.datetime | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        value = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return value if value.tzinfo else value.replace(tzinfo=datetime.UTC)


def human_duration(seconds_float: float) -> str:
    """apimachinery's duration.HumanDuration: 2-3 significant figures ("5m30s", "3d4h")."""
    seconds = int(seconds_float)  # truncates toward zero, as Go's int(d.Seconds())
    if seconds < -1:
        return "<invalid>"
    if seconds < 0:
        return "0s"
    if seconds < 120:
        return f"{seconds}s"
    minutes = seconds // 60
    if minutes < 10:
        rest = seconds % 60
        return f"{minutes}m" if rest == 0 else f"{minutes}m{rest}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = seconds // 3600
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h" if rest == 0 else f"{hours}h{rest}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{hours // 24}d" if rest == 0 else f"{hours // 24}d{rest}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if days == 0 else f"{hours // 24 // 365}y{days}d"
    return f"{hours // 24 // 365}y"


def since(text: Any, now: datetime.datetime) -> str:
    """translateTimestampSince: "<unknown>" for a missing time."""
    then = parse_time(text)
    if then is None:
        return "<unknown>"
    return human_duration((now - then).total_seconds())


# ---- column descriptions ---------------------------------------------------------------------


@functools.cache
def _description(ref: str) -> str:
    """`Definition.field` -> the API's description of that field (plain text passes through)."""
    if not ref.startswith("io.k8s."):
        return ref
    definition, _, field = ref.rpartition(".")
    schema = schemas.definitions().get(definition) or {}
    text = str(((schema.get("properties") or {}).get(field) or {}).get("description", ""))
    return text.split("\n\nPossible enum values:")[0]


_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
_CORE = "io.k8s.api.core.v1"
_RES = "io.k8s.api.resource.v1"
NAME: Column = ("Name", "string", "name", f"{_META}.name", 0)
AGE: Column = ("Age", "string", "", f"{_META}.creationTimestamp", 0)


def _column(col: Column) -> Obj:
    name, typ, fmt, description, priority = col
    return {"name": name, "type": typ, "format": fmt, "description": _description(description),
            "priority": priority}


# ---- printers --------------------------------------------------------------------------------


def _restartable(container: Obj | None) -> bool:
    return bool(container) and (container or {}).get("restartPolicy") == "Always"


def _later(current: datetime.datetime | None, state: Obj | None) -> datetime.datetime | None:
    finished = parse_time(((state or {}).get("terminated") or {}).get("finishedAt"))
    if finished is not None and (current is None or current < finished):
        return finished
    return current


def _condition(obj: Obj, ctype: str) -> Obj | None:
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") == ctype:
            return dict(cond)
    return None


def _pod(pod: Obj, now: datetime.datetime) -> tuple[list[Any], list[Obj]]:
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    meta = pod.get("metadata") or {}
    phase = status.get("phase") or ""
    reason = status.get("reason") or phase
    for cond in status.get("conditions") or []:
        if cond.get("type") == "PodScheduled" and cond.get("reason") == "SchedulingGated":
            reason = "SchedulingGated"
    conditions: list[Obj] = []
    if phase == "Succeeded":
        conditions = [{"type": "Completed", "status": "True", "reason": "Succeeded",
                       "message": "The pod has completed successfully."}]
    elif phase == "Failed":
        conditions = [{"type": "Completed", "status": "True", "reason": "Failed", "message": "The pod failed."}]

    init_specs = {c.get("name"): c for c in spec.get("initContainers") or []}
    total = len(spec.get("containers") or []) + sum(1 for c in init_specs.values() if _restartable(c))
    ready = restarts = sidecar_restarts = 0
    last_restart: datetime.datetime | None = None
    last_sidecar_restart: datetime.datetime | None = None
    initializing = False
    init_count = len(spec.get("initContainers") or [])
    for i, cs in enumerate(status.get("initContainerStatuses") or []):
        restarts += int(cs.get("restartCount") or 0)
        last_restart = _later(last_restart, cs.get("lastState"))
        sidecar = _restartable(init_specs.get(cs.get("name")))
        if sidecar:
            sidecar_restarts += int(cs.get("restartCount") or 0)
            last_sidecar_restart = _later(last_sidecar_restart, cs.get("lastState"))
        state = cs.get("state") or {}
        terminated, waiting = state.get("terminated"), state.get("waiting")
        if terminated is not None and int(terminated.get("exitCode") or 0) == 0:
            continue
        if sidecar and cs.get("started"):
            ready += 1 if cs.get("ready") else 0
            continue
        if terminated is not None:
            if terminated.get("reason"):
                reason = "Init:" + terminated["reason"]
            elif terminated.get("signal"):
                reason = f"Init:Signal:{terminated['signal']}"
            else:
                reason = f"Init:ExitCode:{int(terminated.get('exitCode') or 0)}"
        elif waiting is not None and waiting.get("reason") and waiting["reason"] != "PodInitializing":
            reason = "Init:" + waiting["reason"]
        else:
            reason = f"Init:{i}/{init_count}"
        initializing = True
        break

    initialized = (_condition(pod, "Initialized") or {}).get("status") == "True"
    if not initializing or initialized:
        restarts, last_restart = sidecar_restarts, last_sidecar_restart
        running = False
        for cs in reversed(status.get("containerStatuses") or []):
            restarts += int(cs.get("restartCount") or 0)
            last_restart = _later(last_restart, cs.get("lastState"))
            state = cs.get("state") or {}
            terminated, waiting = state.get("terminated"), state.get("waiting")
            if waiting is not None and waiting.get("reason"):
                reason = waiting["reason"]
            elif terminated is not None and terminated.get("reason"):
                reason = terminated["reason"]
            elif terminated is not None:
                reason = (f"Signal:{terminated['signal']}" if terminated.get("signal")
                          else f"ExitCode:{int(terminated.get('exitCode') or 0)}")
            elif cs.get("ready") and state.get("running") is not None:
                running = True
                ready += 1
        if reason == "Completed" and running:
            reason = "Running" if (_condition(pod, "Ready") or {}).get("status") == "True" else "NotReady"

    if meta.get("deletionTimestamp") and status.get("reason") == "NodeLost":
        reason = "Unknown"
    elif meta.get("deletionTimestamp") and phase not in ("Succeeded", "Failed"):
        reason = "Terminating"

    restarts_cell = str(restarts)
    if restarts and last_restart is not None:
        restarts_cell = f"{restarts} ({human_duration((now - last_restart).total_seconds())} ago)"

    ips = status.get("podIPs") or []
    pod_ip = (ips[0] or {}).get("ip") if ips else ""
    gates = spec.get("readinessGates") or []
    gates_cell = "<none>"
    if gates:
        true = sum(1 for g in gates if (_condition(pod, g.get("conditionType", "")) or {}).get("status") == "True")
        gates_cell = f"{true}/{len(gates)}"
    cells = [meta.get("name", ""), f"{ready}/{total}", reason, restarts_cell,
             since(meta.get("creationTimestamp"), now),
             pod_ip or "<none>", spec.get("nodeName") or "<none>", status.get("nominatedNodeName") or "<none>",
             gates_cell]
    return cells, conditions


def _node(node: Obj, now: datetime.datetime) -> tuple[list[Any], list[Obj]]:
    meta, spec, status = node.get("metadata") or {}, node.get("spec") or {}, node.get("status") or {}
    states = []
    ready = _condition(node, "Ready")
    if ready is not None:
        states.append("Ready" if ready.get("status") == "True" else "NotReady")
    if not states:
        states.append("Unknown")
    if spec.get("unschedulable"):
        states.append("SchedulingDisabled")
    roles = set()
    for key, value in (meta.get("labels") or {}).items():
        if key.startswith("node-role.kubernetes.io/") and key[len("node-role.kubernetes.io/"):]:
            roles.add(key[len("node-role.kubernetes.io/"):])
        elif key == "kubernetes.io/role" and value:
            roles.add(value)
    info = status.get("nodeInfo") or {}

    def address(kind: str) -> str:
        for addr in status.get("addresses") or []:
            if addr.get("type") == kind:
                return str(addr.get("address", ""))
        return "<none>"

    cells = [meta.get("name", ""), ",".join(states), ",".join(sorted(roles)) or "<none>",
             since(meta.get("creationTimestamp"), now), info.get("kubeletVersion", ""),
             address("InternalIP"), address("ExternalIP"), info.get("osImage") or "<unknown>",
             info.get("kernelVersion") or "<unknown>", info.get("containerRuntimeVersion") or "<unknown>"]
    return cells, []


def _event(event: Obj, now: datetime.datetime) -> tuple[list[Any], list[Obj]]:
    """Cells of a core/v1-shaped Event (events.k8s.io objects are stored in that shape)."""
    meta = event.get("metadata") or {}
    first = since(event.get("firstTimestamp"), now) if event.get("firstTimestamp") \
        else since(event.get("eventTime"), now)
    last = since(event.get("lastTimestamp"), now) if event.get("lastTimestamp") else first
    count = int(event.get("count") or 0)
    series = event.get("series")
    if series is not None:
        last = since(series.get("lastObservedTime"), now)
        count = int(series.get("count") or 0)
    elif count == 0:
        count = 1
    involved = event.get("involvedObject") or {}
    kind = str(involved.get("kind", "")).lower()
    target = f"{kind}/{involved['name']}" if involved.get("name") else kind
    source = event.get("source") or {}
    component = source.get("component") or event.get("reportingComponent") or ""
    instance = source.get("host") or event.get("reportingInstance") or ""
    cells = [last, event.get("type", ""), event.get("reason", ""), target, involved.get("fieldPath", ""),
             f"{component}, {instance}" if instance else component, str(event.get("message", "")).strip(),
             first, count, meta.get("name", "")]
    return cells, []


def _claim_state(claim: Obj) -> str:
    states = []
    deleted = bool((claim.get("metadata") or {}).get("deletionTimestamp"))
    status = claim.get("status") or {}
    if deleted:
        states.append("deleted")
    if status.get("allocation") is None:
        if not deleted:
            states.append("pending")
    else:
        states.append("allocated")
        if status.get("reservedFor"):
            states.append("reserved")
    return ",".join(states)


def _simple(*cells: Callable[[Obj], Any]) -> Printer:
    def printer(obj: Obj, now: datetime.datetime) -> tuple[list[Any], list[Obj]]:
        meta = obj.get("metadata") or {}
        return [meta.get("name", ""), *(cell(obj) for cell in cells), since(meta.get("creationTimestamp"), now)], []
    return printer


def _field(*path: str) -> Callable[[Obj], Any]:
    def get(obj: Obj) -> Any:
        value: Any = obj
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        return "" if value is None else value
    return get


def _access_modes(modes: list[str] | None) -> str:
    """GetAccessModesAsString: RWO, ROX, RWX, RWOP in that order, each once."""
    short = (("ReadWriteOnce", "RWO"), ("ReadOnlyMany", "ROX"), ("ReadWriteMany", "RWX"), ("ReadWriteOncePod", "RWOP"))
    return ",".join(abbreviation for mode, abbreviation in short if mode in (modes or []))


def _phase(obj: Obj) -> str:
    return "Terminating" if (obj.get("metadata") or {}).get("deletionTimestamp") else \
        str((obj.get("status") or {}).get("phase") or "")


def _claim(claim: Obj, now: datetime.datetime) -> tuple[list[Any], list[Obj]]:
    spec, status = claim.get("spec") or {}, claim.get("status") or {}
    capacity = modes = ""
    if spec.get("volumeName"):
        modes = _access_modes(status.get("accessModes"))
        capacity = str((status.get("capacity") or {}).get("storage") or "0")
    meta = claim.get("metadata") or {}
    return [meta.get("name", ""), _phase(claim), spec.get("volumeName", ""), capacity, modes,
            volumes.claim_class(claim), spec.get("volumeAttributesClassName", "<unset>"),
            since(meta.get("creationTimestamp"), now), spec.get("volumeMode", "<unset>")], []


def _volume(volume: Obj, now: datetime.datetime) -> tuple[list[Any], list[Obj]]:
    spec, status = volume.get("spec") or {}, volume.get("status") or {}
    ref = spec.get("claimRef")
    meta = volume.get("metadata") or {}
    return [meta.get("name", ""), str((spec.get("capacity") or {}).get("storage") or "0"),
            _access_modes(spec.get("accessModes")), spec.get("persistentVolumeReclaimPolicy", ""), _phase(volume),
            f"{ref.get('namespace', '')}/{ref.get('name', '')}" if ref is not None else "", volumes.volume_class(volume),
            spec.get("volumeAttributesClassName", "<unset>"), status.get("reason", ""),
            since(meta.get("creationTimestamp"), now), spec.get("volumeMode", "<unset>")], []


def _storage_class(sc: Obj, now: datetime.datetime) -> tuple[list[Any], list[Obj]]:
    meta = sc.get("metadata") or {}
    return [meta.get("name", ""), sc.get("provisioner", ""), sc.get("reclaimPolicy") or "Delete",
            sc.get("volumeBindingMode") or "Immediate", bool(sc.get("allowVolumeExpansion")),
            since(meta.get("creationTimestamp"), now)], []


def _csi_driver(driver: Obj, now: datetime.datetime) -> tuple[list[Any], list[Obj]]:
    """printCSIDriver: the token requests' audiences (or <unset>), the lifecycle modes (or <none>)."""
    spec, meta = driver.get("spec") or {}, driver.get("metadata") or {}
    requests = spec.get("tokenRequests") or []
    audiences = ",".join(str(r.get("audience", "")) for r in requests) if requests else "<unset>"
    return [meta.get("name", ""), spec.get("attachRequired", True) is not False, bool(spec.get("podInfoOnMount")),
            bool(spec.get("storageCapacity")), audiences, bool(spec.get("requiresRepublish")),
            ",".join(spec.get("volumeLifecycleModes") or []) or "<none>",
            since(meta.get("creationTimestamp"), now)], []


def _disruption_budget(pdb: Obj, now: datetime.datetime) -> tuple[list[Any], list[Obj]]:
    """printPodDisruptionBudget: an int-or-string as its text, `N/A` when unset."""
    spec, meta = pdb.get("spec") or {}, pdb.get("metadata") or {}
    shown = ["N/A" if spec.get(f) is None else str(spec[f]) for f in ("minAvailable", "maxUnavailable")]
    return [meta.get("name", ""), *shown, (pdb.get("status") or {}).get("disruptionsAllowed", 0),
            since(meta.get("creationTimestamp"), now)], []


_EV = f"{_CORE}.Event"
_PVC = f"{_CORE}.PersistentVolumeClaim"
_PV = f"{_CORE}.PersistentVolume"
_SC = "io.k8s.api.storage.v1.StorageClass"
_CSI = "io.k8s.api.storage.v1.CSIDriverSpec"
_PC = "io.k8s.api.scheduling.v1.PriorityClass"
PRINTERS: dict[tuple[str, str], tuple[list[Column], Printer]] = {
    ("", "pods"): ([
        NAME,
        ("Ready", "string", "", "The aggregate readiness state of this pod for accepting traffic.", 0),
        ("Status", "string", "", "The aggregate status of the containers in this pod.", 0),
        ("Restarts", "string", "", "The number of times the containers in this pod have been restarted and "
                                   "when the last container in this pod has restarted.", 0),
        AGE,
        ("IP", "string", "", f"{_CORE}.PodStatus.podIP", 1),
        ("Node", "string", "", f"{_CORE}.PodSpec.nodeName", 1),
        ("Nominated Node", "string", "", f"{_CORE}.PodStatus.nominatedNodeName", 1),
        ("Readiness Gates", "string", "", f"{_CORE}.PodSpec.readinessGates", 1),
    ], _pod),
    ("", "nodes"): ([
        NAME,
        ("Status", "string", "", "The status of the node", 0),
        ("Roles", "string", "", "The roles of the node", 0),
        AGE,
        ("Version", "string", "", f"{_CORE}.NodeSystemInfo.kubeletVersion", 0),
        ("Internal-IP", "string", "", f"{_CORE}.NodeStatus.addresses", 1),
        ("External-IP", "string", "", f"{_CORE}.NodeStatus.addresses", 1),
        ("OS-Image", "string", "", f"{_CORE}.NodeSystemInfo.osImage", 1),
        ("Kernel-Version", "string", "", f"{_CORE}.NodeSystemInfo.kernelVersion", 1),
        ("Container-Runtime", "string", "", f"{_CORE}.NodeSystemInfo.containerRuntimeVersion", 1),
    ], _node),
    ("", "events"): ([
        ("Last Seen", "string", "", f"{_EV}.lastTimestamp", 0),
        ("Type", "string", "", f"{_EV}.type", 0),
        ("Reason", "string", "", f"{_EV}.reason", 0),
        ("Object", "string", "", f"{_EV}.involvedObject", 0),
        ("Subobject", "string", "", f"{_CORE}.ObjectReference.fieldPath", 1),
        ("Source", "string", "", f"{_EV}.source", 1),
        ("Message", "string", "", f"{_EV}.message", 0),
        ("First Seen", "string", "", f"{_EV}.firstTimestamp", 1),
        ("Count", "string", "", f"{_EV}.count", 1),
        ("Name", "string", "name", f"{_META}.name", 1),
    ], _event),
    ("", "namespaces"): ([NAME, ("Status", "string", "", "The status of the namespace", 0), AGE],
                         _simple(_field("status", "phase"))),
    ("", "configmaps"): ([NAME, ("Data", "string", "", f"{_CORE}.ConfigMap.data", 0), AGE],
                         _simple(lambda o: len(o.get("data") or {}) + len(o.get("binaryData") or {}))),
    ("coordination.k8s.io", "leases"): (
        [NAME, ("Holder", "string", "", "io.k8s.api.coordination.v1.LeaseSpec.holderIdentity", 0), AGE],
        _simple(_field("spec", "holderIdentity"))),
    ("resource.k8s.io", "deviceclasses"): ([NAME, AGE], _simple()),
    ("resource.k8s.io", "resourceclaimtemplates"): ([NAME, AGE], _simple()),
    ("resource.k8s.io", "resourceclaims"): (
        [NAME, ("State", "string", "", "A summary of the current state (allocated, pending, reserved, etc.).", 0),
         AGE],
        _simple(_claim_state)),
    ("resource.k8s.io", "resourceslices"): (
        [NAME, ("Node", "string", "", f"{_RES}.ResourceSliceSpec.nodeName", 0),
         ("Driver", "string", "", f"{_RES}.ResourceSliceSpec.driver", 0),
         ("Pool", "string", "", f"{_RES}.ResourcePool.name", 0), AGE],
        _simple(_field("spec", "nodeName"), _field("spec", "driver"), _field("spec", "pool", "name"))),
    ("", "persistentvolumeclaims"): ([
        NAME,
        ("Status", "string", "", f"{_PVC}Status.phase", 0),
        ("Volume", "string", "", f"{_PVC}Spec.volumeName", 0),
        ("Capacity", "string", "", f"{_PVC}Status.capacity", 0),
        ("Access Modes", "string", "", f"{_PVC}Status.accessModes", 0),
        ("StorageClass", "string", "", "StorageClass of the pvc", 0),
        ("VolumeAttributesClass", "string", "", "VolumeAttributesClass of the pvc", 0),
        AGE,
        ("VolumeMode", "string", "", f"{_PVC}Spec.volumeMode", 1),
    ], _claim),
    ("", "persistentvolumes"): ([
        NAME,
        ("Capacity", "string", "", f"{_PV}Spec.capacity", 0),
        ("Access Modes", "string", "", f"{_PV}Spec.accessModes", 0),
        ("Reclaim Policy", "string", "", f"{_PV}Spec.persistentVolumeReclaimPolicy", 0),
        ("Status", "string", "", f"{_PV}Status.phase", 0),
        ("Claim", "string", "", f"{_PV}Spec.claimRef", 0),
        ("StorageClass", "string", "", "StorageClass of the pv", 0),
        ("VolumeAttributesClass", "string", "", "VolumeAttributesClass of the pv", 0),
        ("Reason", "string", "", f"{_PV}Status.reason", 0),
        AGE,
        ("VolumeMode", "string", "", f"{_PV}Spec.volumeMode", 1),
    ], _volume),
    ("storage.k8s.io", "storageclasses"): ([
        NAME,
        ("Provisioner", "string", "", f"{_SC}.provisioner", 0),
        ("ReclaimPolicy", "string", "", f"{_SC}.reclaimPolicy", 0),
        ("VolumeBindingMode", "string", "", f"{_SC}.volumeBindingMode", 0),
        ("AllowVolumeExpansion", "string", "", f"{_SC}.allowVolumeExpansion", 0),
        AGE,
    ], _storage_class),
    ("storage.k8s.io", "csidrivers"): ([
        NAME,
        ("AttachRequired", "boolean", "", f"{_CSI}.attachRequired", 0),
        ("PodInfoOnMount", "boolean", "", f"{_CSI}.podInfoOnMount", 0),
        ("StorageCapacity", "boolean", "", f"{_CSI}.storageCapacity", 0),
        ("TokenRequests", "string", "", f"{_CSI}.tokenRequests", 0),
        ("RequiresRepublish", "boolean", "", f"{_CSI}.requiresRepublish", 0),
        ("Modes", "string", "", f"{_CSI}.volumeLifecycleModes", 0),
        AGE,
    ], _csi_driver),
    ("storage.k8s.io", "csinodes"): (
        [NAME, ("Drivers", "integer", "", "Drivers indicates the number of CSI drivers registered on the node", 0),
         AGE],
        _simple(lambda o: len(((o.get("spec") or {}).get("drivers")) or []))),
    ("scheduling.k8s.io", "priorityclasses"): ([
        NAME,
        ("Value", "integer", "", f"{_PC}.value", 0),
        ("Global-Default", "boolean", "", f"{_PC}.globalDefault", 0),
        AGE,
        ("PreemptionPolicy", "string", "", f"{_PC}.preemptionPolicy", 0),
    ], lambda o, now: ([(o.get("metadata") or {}).get("name", ""), o.get("value", 0), bool(o.get("globalDefault")),
                        since((o.get("metadata") or {}).get("creationTimestamp"), now),
                        o.get("preemptionPolicy") or ""], [])),
}
PRINTERS[("policy", "poddisruptionbudgets")] = ([
    NAME,
    ("Min Available", "string", "", "The minimum number of pods that must be available.", 0),
    ("Max Unavailable", "string", "", "The maximum number of pods that may be unavailable.", 0),
    ("Allowed Disruptions", "integer", "", "Calculated number of pods that may be disrupted at this time.", 0),
    AGE,
], _disruption_budget)
PRINTERS[("events.k8s.io", "events")] = PRINTERS[("", "events")]


def _generic(obj: Obj, now: datetime.datetime) -> tuple[list[Any], list[Obj]]:
    """The default table convertor's cells: name and the creation time in RFC 3339."""
    meta = obj.get("metadata") or {}
    created = parse_time(meta.get("creationTimestamp"))
    return [meta.get("name", ""), created.strftime("%Y-%m-%dT%H:%M:%SZ") if created else ""], []


_GENERIC: tuple[list[Column], Printer] = (
    [NAME, ("Created At", "date", "", f"{_META}.creationTimestamp", 0)], _generic)
_JSONPATH_STEP = re.compile(
    r"""\.([^.\[\]]+)|\[(\d+)\]|\[\?\(@\.([^=!<>\s)]+)\s*==\s*(?:"([^"]*)"|'([^']*)')\)\]""")


def _jsonpath(obj: Obj, path: str) -> Any:
    """The JSONPaths of additionalPrinterColumns: `.a.b`, `.a[0].b` and filters such as
    `.status.conditions[?(@.type=="Ready")].status`; the first result, as kube-apiserver's table
    convertor prints it (None when there is none)."""
    values: list[Any] = [obj]
    for key, index, field, double, single in _JSONPATH_STEP.findall(path.strip().strip("{}")):
        if key:
            values = [v[key] for v in values if isinstance(v, dict) and v.get(key) is not None]
        elif index:
            values = [v[int(index)] for v in values if isinstance(v, list) and int(index) < len(v)]
        else:
            wanted = double or single
            values = [item for v in values if isinstance(v, list) for item in v
                      if isinstance(item, dict) and str(item.get(field)) == wanted]
        if not values:
            return None
    return values[0]


def _custom(rt: resources.ResourceType) -> tuple[list[Column], Printer]:
    columns = list(rt.printer_columns) or [
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp",
         "description": f"{_META}.creationTimestamp"}]
    defs: list[Column] = [NAME] + [
        (str(c.get("name", "")), str(c.get("type", "string")), str(c.get("format", "")),
         str(c.get("description", "")), int(c.get("priority") or 0)) for c in columns]

    def printer(obj: Obj, now: datetime.datetime) -> tuple[list[Any], list[Obj]]:
        cells: list[Any] = [(obj.get("metadata") or {}).get("name", "")]
        for c in columns:
            value = _jsonpath(obj, str(c.get("jsonPath", "")))
            if c.get("type") == "date" and value is not None:
                value = since(value, now)
            cells.append(value)
        return cells, []
    return defs, printer


def printer_for(rt: resources.ResourceType) -> tuple[list[Column], Printer]:
    if rt.crd:
        return _custom(rt)
    return PRINTERS.get((rt.group, rt.plural), _GENERIC)


def _row_object(shown: Obj, include: str, api_version: str) -> Obj | None:
    if include == "None":
        return None
    if include == "Object":
        return shown
    return {"kind": "PartialObjectMetadata", "apiVersion": api_version, "metadata": shown.get("metadata") or {}}


def table(rt: resources.ResourceType, items: list[tuple[Obj, Obj]], *, api_version: str = "meta.k8s.io/v1",
          include: str = "Metadata", metadata: Obj | None = None, headers: bool = True,
          now: datetime.datetime | None = None, listing: bool = False) -> Obj:
    """A Table of `items`: (object as stored, used for the cells; object as `rt` shows it);
    `listing`: a list's table (StorageClass lists mark the default class)."""
    now = now or datetime.datetime.now(datetime.UTC)
    columns, printer = printer_for(rt)
    default = None
    if listing and rt.storage == volumes.CLASSES:
        found = volumes.default_class([stored for stored, _ in items])
        default = found["metadata"]["name"] if found is not None else None
    rows = []
    for stored, shown in items:
        cells, conditions = printer(stored, now)
        if default is not None and cells and cells[0] == default:
            cells[0] = f"{default} (default)"
        row: Obj = {"cells": cells}
        if conditions:
            row["conditions"] = conditions
        row["object"] = _row_object(shown, include, api_version)
        rows.append(row)
    return {"kind": "Table", "apiVersion": api_version, "metadata": metadata or {},
            "columnDefinitions": [_column(c) for c in columns] if headers else None, "rows": rows}
