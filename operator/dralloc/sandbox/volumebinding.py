"""kube-controller-manager's PV controller (persistentvolume-binder-controller), the binding part.

What a scheduler that binds WaitForFirstConsumer volumes (kube-scheduler's VolumeBinding,
dralloc's scheduler mode) waits for: once it has written a PersistentVolume's `claimRef`, the
controller binds the claim, and only then is the pod bound. The sandbox plays that part as
upstream's pkg/controller/volume/persistentvolume/pv_controller.go does (syncVolume,
syncUnboundClaim, syncBoundClaim, bind), with the same writes in the same order, each a
write of its own through the store (admission, a new resourceVersion, a watch event):

- a volume without a `claimRef`, or pre-bound to a claim by name only (no uid), becomes
  `Available`;
- a claim without `pv.kubernetes.io/bind-completed` is bound to the volume pre-bound to it
  (a `claimRef` naming it, as a scheduler or a user writes it), or to the volume its
  `spec.volumeName` names (when that volume is free and satisfies it: size, class, volume
  mode, access modes), or, for a claim of an Immediate class (or none), to the smallest
  `Available` volume that fits: access modes (the volumes with the fewest modes that hold the
  claim's are searched first, as upstream's index does), size, volume mode, class,
  VolumeAttributesClass, label selector; never one being deleted. A claim of a
  WaitForFirstConsumer class is only bound to a volume pre-bound to it;
- binding writes, in upstream's order: the volume's `claimRef` (the claim's kind, namespace,
  name, uid, apiVersion and resourceVersion, when it lacks the uid) and
  `pv.kubernetes.io/bound-by-controller: "yes"` (unless the volume was pre-bound to the
  claim); the volume's `status.phase: Bound`; the claim's `spec.volumeName`,
  `pv.kubernetes.io/bound-by-controller: "yes"` (when the controller chose the volume) and
  `pv.kubernetes.io/bind-completed: "yes"`; the claim's `status` (phase Bound, the volume's
  access modes, and its capacity when the claim becomes Bound);
- a claim without a volume and without a class gets the default StorageClass
  (RetroactiveDefaultStorageClass); a claim to provision (an Immediate class, or a
  WaitForFirstConsumer one once a scheduler annotated `volume.kubernetes.io/selected-node`)
  whose class names an external provisioner (not `kubernetes.io/...`) gets the
  `volume.kubernetes.io/storage-provisioner` and `volume.beta.kubernetes.io/storage-provisioner`
  annotations, and stays Pending: no provisioner runs in the sandbox;
- a bound claim whose volume is gone, or bound to another claim, is `Lost`; a volume whose
  claim is gone (or was replaced: another uid) is `Released`; a volume the controller bound to
  a claim that went to another volume loses its `claimRef` (a user's pre-binding only its uid)
  and is `Available` again.

Not played: provisioning, reclaiming (Delete, Recycle: a Released volume stays Released),
CSI migration annotations, the `Unused` claim condition, events. Upstream retries every 15 s;
the sandbox re-checks every claim and volume after any write to a claim, volume or
StorageClass, so it acts at once where upstream may wait for that resync. Ties, arbitrary
upstream, are broken by name: two volumes of one size by theirs, two access-mode sets of one
length by the modes'. `ApiServer(pv_binder=False)` turns it off, as kube-controller-manager's
`--controllers=-persistentvolume-binder-controller` does.
"""

from __future__ import annotations

import asyncio
import json
import logging
from fractions import Fraction
from typing import Any

from dralloc.sandbox import errors, quantities, volumes, watches
from dralloc.sandbox import store as store_

logger = logging.getLogger(__name__)
Obj = dict[str, Any]

BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
PROVISIONED_BY = "pv.kubernetes.io/provisioned-by"
SELECTED_NODE = "volume.kubernetes.io/selected-node"
STORAGE_PROVISIONER = "volume.kubernetes.io/storage-provisioner"
BETA_STORAGE_PROVISIONER = "volume.beta.kubernetes.io/storage-provisioner"
_ACCESS_MODES = ("ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod")  # GetAccessModesAsString's order
_TRIGGERS = (volumes.CLAIMS, volumes.VOLUMES, volumes.CLASSES)
_PASSES = 20  # each pass may unlock the next step; the bound only guards against bugs


def _size(text: Any) -> Fraction:
    parsed = quantities.parse(text) if isinstance(text, str | int | float) else None
    return parsed.value if parsed is not None else Fraction(0)


def _notes(obj: Obj) -> dict[str, str]:
    return obj["metadata"].get("annotations") or {}


def bound_to(volume: Obj, claim: Obj) -> bool:
    """IsVolumeBoundToClaim: the claimRef names the claim, and its uid when it has one."""
    ref = (volume.get("spec") or {}).get("claimRef")
    if ref is None or (ref.get("namespace", ""), ref.get("name", "")) != (
            claim["metadata"].get("namespace", ""), claim["metadata"]["name"]):
        return False
    return not ref.get("uid") or ref["uid"] == claim["metadata"]["uid"]


def _selector_matches(selector: Obj, labels: dict[str, str]) -> bool:
    """A metav1 LabelSelector (matchLabels and matchExpressions, all ANDed)."""
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for req in selector.get("matchExpressions") or []:
        key, op, values = req.get("key", ""), req.get("operator", ""), req.get("values") or []
        matched = {"In": key in labels and labels[key] in values,
                   "NotIn": key not in labels or labels[key] not in values,
                   "Exists": key in labels, "DoesNotExist": key not in labels}.get(op, False)
        if not matched:
            return False
    return True


def _mode_mismatch(claim: Obj, volume: Obj) -> bool:
    """CheckVolumeModeMismatches (an absent mode is Filesystem)."""
    wanted = str((claim.get("spec") or {}).get("volumeMode", "Filesystem"))
    return wanted != str((volume.get("spec") or {}).get("volumeMode", "Filesystem"))


def _matching(claim: Obj, candidates: list[Obj], delay_binding: bool) -> Obj | None:
    """FindMatchingVolume on the controller's path (no node): the volume pre-bound to the claim,
    else (unless binding waits for the first consumer) the smallest Available one that fits."""
    spec = claim.get("spec") or {}
    requested = _size(((spec.get("resources") or {}).get("requests") or {}).get("storage"))
    selector = spec.get("selector")
    smallest: Obj | None = None
    for volume in candidates:
        vspec = volume.get("spec") or {}
        if vspec.get("claimRef") is not None and not bound_to(volume, claim):
            continue
        size = _size((vspec.get("capacity") or {}).get("storage"))
        if size < requested or _mode_mismatch(claim, volume):
            continue
        if (spec.get("volumeAttributesClassName") or "") != (vspec.get("volumeAttributesClassName") or ""):
            continue
        if volume["metadata"].get("deletionTimestamp"):
            continue
        if bound_to(volume, claim):
            return volume
        if delay_binding or (volume.get("status") or {}).get("phase") != "Available":
            continue
        if selector is not None and not _selector_matches(selector, volume["metadata"].get("labels") or {}):
            continue
        if volumes.volume_class(volume) != volumes.claim_class(claim):
            continue
        if smallest is None or _size(smallest["spec"]["capacity"].get("storage")) > size:
            smallest = volume
    return smallest


def best_match(claim: Obj, all_volumes: list[Obj], delay_binding: bool) -> Obj | None:
    """findBestMatchForClaim: the volumes grouped by their set of access modes; the sets that hold
    all the claim's modes are searched fewest modes first, each with FindMatchingVolume."""
    wanted = set((claim.get("spec") or {}).get("accessModes") or [])
    groups: dict[tuple[str, ...], list[Obj]] = {}
    for volume in sorted(all_volumes, key=lambda v: v["metadata"]["name"]):
        held = set((volume.get("spec") or {}).get("accessModes") or [])
        groups.setdefault(tuple(m for m in _ACCESS_MODES if m in held), []).append(volume)
    for modes in sorted(groups, key=lambda m: (len(m), m)):
        if wanted <= set(modes):
            found = _matching(claim, groups[modes], delay_binding)
            if found is not None:
                return found
    return None


def satisfies(volume: Obj, claim: Obj) -> bool:
    """checkVolumeSatisfyClaim: a volume a claim names by `volumeName` and may be bound to."""
    spec, vspec = claim.get("spec") or {}, volume.get("spec") or {}
    requested = _size(((spec.get("resources") or {}).get("requests") or {}).get("storage"))
    modes = set(vspec.get("accessModes") or [])
    return not volume["metadata"].get("deletionTimestamp") \
        and _size((vspec.get("capacity") or {}).get("storage")) >= requested \
        and volumes.volume_class(volume) == volumes.claim_class(claim) \
        and not _mode_mismatch(claim, volume) and all(m in modes for m in spec.get("accessModes") or [])


class VolumeBinder:
    """The PV controller's binding, on the server's loop: woken by writes to claims, volumes and
    StorageClasses, it syncs every volume, then every claim, until a pass writes nothing."""

    def __init__(self, store: store_.Store) -> None:
        self.store = store
        self.wake: asyncio.Event | None = None
        store.listeners.append(self._on_event)

    def _on_event(self, event: watches.Event) -> None:
        if event.storage in _TRIGGERS and self.wake is not None:
            self.wake.set()

    async def run(self) -> None:
        self.wake = asyncio.Event()
        self.wake.set()
        while True:
            await self.wake.wait()
            try:
                self.sync()
            except Exception:  # a bug here must not stop binding for the whole session
                logger.exception("volume binding failed")
            self.wake.clear()  # the passes saw every write so far, their own included
            await asyncio.sleep(0)

    def sync(self) -> None:
        for _ in range(_PASSES):
            start = self.store.rv
            for key in [k for k, _ in self.store.scan(volumes.VOLUMES)]:
                self._sync_volume(key)
            for key in [k for k, _ in self.store.scan(volumes.CLAIMS)]:
                self._sync_claim(key)
            if self.store.rv == start:
                return

    # ---- reads and writes ---------------------------------------------------------------------

    def _get(self, storage: str, namespace: str, name: str) -> Obj | None:
        entry = self.store.objects[storage].get((namespace, name))
        return entry.obj if entry is not None else None

    def _write(self, storage: str, obj: Obj, changed: Obj, subresource: str = "") -> Obj | None:
        """An update (or UpdateStatus) of `obj` to `changed`, conditioned on `obj`'s version, as the
        controller's client sends it: the object written, or None when the server refused it."""
        meta = obj["metadata"]
        rt = self.store.registry.get("", "v1", storage.lstrip("/"))
        assert rt is not None
        try:
            self.store.update(rt, meta.get("namespace", ""), meta["name"], changed, subresource=subresource,
                              precondition=meta["resourceVersion"], owned=True)
        except errors.ApiError as exc:  # a conflict or a refusal: the next pass looks again
            logger.debug("PV controller: %s %s not written: %s", storage, meta["name"], exc.message)
            return None
        return self._get(storage, meta.get("namespace", ""), meta["name"])

    @staticmethod
    def _copy(obj: Obj) -> Obj:
        copied: Obj = json.loads(json.dumps(obj))
        return copied

    def _volume_phase(self, volume: Obj, phase: str) -> Obj | None:
        """updateVolumePhase: the phase (and an empty message) through /status, when it differs."""
        if (volume.get("status") or {}).get("phase") == phase:
            return volume
        changed = self._copy(volume)
        status = changed.setdefault("status", {})
        status["phase"] = phase
        status.pop("message", None)
        return self._write(volumes.VOLUMES, volume, changed, "status")

    def _claim_status(self, claim: Obj, phase: str, volume: Obj | None) -> Obj | None:
        """updateClaimStatus: the phase; the volume's access modes, and its capacity when the phase
        changes (or neither, without a volume)."""
        status = claim.get("status") or {}
        changed = self._copy(claim)
        new = changed.setdefault("status", {})
        new["phase"] = phase
        if volume is None:
            new.pop("accessModes", None)
            new.pop("capacity", None)
        else:
            vspec = volume.get("spec") or {}
            new["accessModes"] = vspec.get("accessModes")
            if status.get("phase") != phase:
                capacity = vspec.get("capacity") or {}
                if "storage" not in capacity:
                    return None  # upstream: the volume is without a storage capacity
                if _size(capacity["storage"]) != _size((status.get("capacity") or {}).get("storage")) \
                        or "storage" not in (status.get("capacity") or {}):
                    new["capacity"] = dict(capacity)
        if new == status:
            return claim
        return self._write(volumes.CLAIMS, claim, changed, "status")

    # ---- syncVolume ---------------------------------------------------------------------------

    def _sync_volume(self, key: tuple[str, str]) -> None:
        volume = self._get(volumes.VOLUMES, *key)
        if volume is None:
            return
        spec, phase = volume.get("spec") or {}, (volume.get("status") or {}).get("phase")
        ref = spec.get("claimRef")
        if ref is None or not ref.get("uid"):  # unused, or pre-bound by name: the claim's sync binds it
            self._volume_phase(volume, "Available")
            return
        claim = self._get(volumes.CLAIMS, ref.get("namespace", ""), ref.get("name", ""))
        if claim is not None and claim["metadata"]["uid"] != ref["uid"]:
            claim = None  # deleted, and another made with its name
        if claim is None:
            if phase not in ("Released", "Failed"):
                self._volume_phase(volume, "Released")  # reclaiming (Delete, Recycle) is not played
            return
        volume_name = (claim.get("spec") or {}).get("volumeName", "")
        if not volume_name:
            return  # bound, the claim not yet: the claim's sync finishes it
        if volume_name == volume["metadata"]["name"]:
            self._volume_phase(volume, "Bound")
            return
        # bound to a claim that is bound to another volume
        if PROVISIONED_BY in _notes(volume) and spec.get("persistentVolumeReclaimPolicy") == "Delete":
            if phase not in ("Released", "Failed"):
                self._volume_phase(volume, "Released")
            return
        self._unbind(volume)

    def _unbind(self, volume: Obj) -> None:
        """unbindVolume: the controller's binding undone (a user's pre-binding keeps its name), Available."""
        changed = self._copy(volume)
        notes = changed["metadata"].get("annotations") or {}
        if BOUND_BY_CONTROLLER in notes:
            changed["spec"].pop("claimRef", None)
            del notes[BOUND_BY_CONTROLLER]
            if not notes:
                changed["metadata"].pop("annotations", None)
        else:
            changed["spec"]["claimRef"].pop("uid", None)
        written = self._write(volumes.VOLUMES, volume, changed)
        if written is not None:
            self._volume_phase(written, "Available")

    # ---- syncClaim ----------------------------------------------------------------------------

    def _sync_claim(self, key: tuple[str, str]) -> None:
        claim = self._get(volumes.CLAIMS, *key)
        if claim is None:
            return
        if BIND_COMPLETED in _notes(claim):
            self._sync_bound_claim(claim)
        else:
            self._sync_unbound_claim(claim)

    def _delay_binding(self, claim: Obj) -> bool:
        """IsDelayBindingMode: the claim's class waits for the first consumer."""
        name = volumes.claim_class(claim)
        found = self._get(volumes.CLASSES, "", name) if name else None
        return found is not None and found.get("volumeBindingMode") == "WaitForFirstConsumer"

    def _sync_unbound_claim(self, claim: Obj) -> None:
        name = (claim.get("spec") or {}).get("volumeName", "")
        if not name:
            delay_binding = self._delay_binding(claim)
            all_volumes = [entry.obj for _, entry in self.store.scan(volumes.VOLUMES)]
            volume = best_match(claim, all_volumes, delay_binding)
            if volume is not None:
                self._bind(volume, claim)
            elif not self._assign_default_class(claim):
                if delay_binding and SELECTED_NODE not in _notes(claim):
                    self._claim_status(claim, "Pending", None)
                elif volumes.claim_class(claim):
                    self._provision(claim)
                else:
                    self._claim_status(claim, "Pending", None)
            return
        volume = self._get(volumes.VOLUMES, "", name)
        if volume is None:
            self._claim_status(claim, "Pending", None)  # the volume asked for does not exist (yet)
        elif (volume.get("spec") or {}).get("claimRef") is None:
            if satisfies(volume, claim):
                self._bind(volume, claim)
            else:
                self._claim_status(claim, "Pending", None)
        elif bound_to(volume, claim):
            self._bind(volume, claim)
        elif BOUND_BY_CONTROLLER not in _notes(claim):
            self._claim_status(claim, "Pending", None)  # the volume is another claim's

    def _sync_bound_claim(self, claim: Obj) -> None:
        name = (claim.get("spec") or {}).get("volumeName", "")
        volume = self._get(volumes.VOLUMES, "", name) if name else None
        ref = (volume.get("spec") or {}).get("claimRef") if volume is not None else None
        if volume is not None and (ref is None or ref.get("uid") == claim["metadata"]["uid"]):
            self._bind(volume, claim)
        elif (claim.get("status") or {}).get("phase") != "Lost":
            self._claim_status(claim, "Lost", None)

    def _assign_default_class(self, claim: Obj) -> bool:
        """assignDefaultStorageClass: a claim with no class at all gets the default one."""
        if volumes.BETA_CLASS in _notes(claim) or (claim.get("spec") or {}).get("storageClassName") is not None:
            return False
        chosen = volumes.default_class([entry.obj for _, entry in self.store.scan(volumes.CLASSES)])
        if chosen is None:
            return False
        changed = self._copy(claim)
        changed["spec"]["storageClassName"] = chosen["metadata"]["name"]
        return self._write(volumes.CLAIMS, claim, changed) is not None

    def _provision(self, claim: Obj) -> None:
        """provisionClaim for an external provisioner: only setClaimProvisioner's annotations."""
        found = self._get(volumes.CLASSES, "", volumes.claim_class(claim))
        provisioner = str((found or {}).get("provisioner") or "")
        if not provisioner or provisioner.startswith("kubernetes.io/"):
            return  # no class, or an in-tree plugin the sandbox does not have (no-provisioner among them)
        if _notes(claim).get(BETA_STORAGE_PROVISIONER) == provisioner:
            return
        changed = self._copy(claim)
        notes = changed["metadata"].setdefault("annotations", {})
        notes[BETA_STORAGE_PROVISIONER] = notes[STORAGE_PROVISIONER] = provisioner
        self._write(volumes.CLAIMS, claim, changed)

    # ---- bind ---------------------------------------------------------------------------------

    def _bind(self, volume: Obj, claim: Obj) -> None:
        """bind: the volume's claimRef, its phase, the claim's volumeName, the claim's status; the
        first write that fails stops it (the next pass retries)."""
        written = self._bind_volume(volume, claim)
        if written is not None:
            written = self._volume_phase(written, "Bound")
        bound = self._bind_claim(claim, written) if written is not None else None
        if written is not None and bound is not None:
            self._claim_status(bound, "Bound", written)

    def _bind_volume(self, volume: Obj, claim: Obj) -> Obj | None:
        """GetBindVolumeToClaim: the claim's full reference (when the uid differs), bound-by-controller
        when the volume was not pre-bound to the claim."""
        mark = not bound_to(volume, claim)
        ref = (volume.get("spec") or {}).get("claimRef") or {}
        meta = claim["metadata"]
        changed = self._copy(volume)
        dirty = False
        if (ref.get("namespace"), ref.get("name"), ref.get("uid", "")) != (meta.get("namespace"), meta["name"],
                                                                          meta["uid"]):
            changed["spec"]["claimRef"] = {"kind": "PersistentVolumeClaim", "namespace": meta.get("namespace", ""),
                                           "name": meta["name"], "uid": meta["uid"], "apiVersion": "v1",
                                           "resourceVersion": meta["resourceVersion"]}
            dirty = True
        if mark and BOUND_BY_CONTROLLER not in _notes(volume):
            changed["metadata"].setdefault("annotations", {})[BOUND_BY_CONTROLLER] = "yes"
            dirty = True
        return self._write(volumes.VOLUMES, volume, changed) if dirty else volume

    def _bind_claim(self, claim: Obj, volume: Obj) -> Obj | None:
        """bindClaimToVolume: volumeName (and bound-by-controller) unless set, bind-completed."""
        changed = self._copy(claim)
        notes = changed["metadata"].setdefault("annotations", {})
        dirty = False
        if (claim.get("spec") or {}).get("volumeName", "") != volume["metadata"]["name"]:
            changed["spec"]["volumeName"] = volume["metadata"]["name"]
            notes.setdefault(BOUND_BY_CONTROLLER, "yes")
            dirty = True
        if BIND_COMPLETED not in notes:
            notes[BIND_COMPLETED] = "yes"
            dirty = True
        return self._write(volumes.CLAIMS, claim, changed) if dirty else claim
