"""The controllers of the control plane that the sandbox must imitate: garbage collection,
namespace cleanup and CRD registration.

Upstream these run in kube-controller-manager and the apiextensions server, apart
from the write that triggers them, and so here: a deletion commits first (its watch
event goes out), and the `Collector` task then deletes dependents, one write per
object, each with its own resourceVersion and event. Rules kept from upstream:

- an ownerReference is resolved as kube's garbage collector does: the owner with that uid,
  in the dependent's own namespace unless the owner is cluster-scoped. A namespaced owner
  in another namespace owns nothing there ("cross-namespace owner references are
  disallowed by design"): the reference counts as absent. A cluster-scoped object naming
  a namespaced owner has an unresolvable reference and is never collected. So a deletion
  in one namespace never collects anything in another;
- an object whose owners are all absent is deleted in the background; one with some
  owners left only loses the absent ownerReferences. Both are checked when an owner is
  deleted and when an object is written with an absent owner (one that never existed,
  or in another namespace), as upstream's graph builder does;
- Foreground deletion: the owner carries the `foregroundDeletion` finalizer until its
  dependents are gone;
- a deleted Namespace turns `Terminating`, refuses new objects, has its objects deleted
  (their finalizers are honoured) and disappears when it is empty;
- a CRD serves its resources as soon as it is created (its status says Established)
  and takes its objects with it when it is deleted (finalizers on those objects are
  not waited for; documented);
- the pvc-protection and pv-protection controllers: a PersistentVolumeClaim being deleted
  loses its `kubernetes.io/pvc-protection` finalizer once no pod uses it (a pod on a node
  naming it in a `persistentVolumeClaim` volume, or owning it through an `ephemeral` volume
  and not yet shut down: deletion timestamp and a 0 s grace period); a PersistentVolume
  its `kubernetes.io/pv-protection` finalizer once its phase is not Bound. Both are checked
  again on every write of a pod in the claim's namespace, and of the volume.

The PV controller's binding runs beside it, the same way (its own task, woken by the store's
writes, writing through the store): `volumebinding.py`.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from dralloc.sandbox import store as store_
from dralloc.sandbox import volumes, watches

logger = logging.getLogger(__name__)

ALIVE, ABSENT, INVALID = "alive", "absent", "invalid"  # what an ownerReference resolves to


class Collector:
    def __init__(self, store: store_.Store) -> None:
        self.store = store
        self.pending: list[str] = []  # owner uids whose dependents need a look
        self.checks: list[store_.Key] = []  # objects written with an absent owner
        self.foreground: set[str] = set()  # uids of owners waiting for their dependents
        self.terminating: set[str] = set()  # namespaces being emptied
        self.protected: set[store_.Key] = set()  # claims and volumes being deleted, held by a protection finalizer
        self.wake: asyncio.Event | None = None
        store.listeners.append(self._on_event)

    def _poke(self) -> None:
        if self.wake is not None:
            self.wake.set()

    def _on_event(self, event: watches.Event) -> None:
        meta = event.obj["metadata"]
        if event.storage == "apiextensions.k8s.io/customresourcedefinitions":
            self._on_crd(event)
        finalizer = _PROTECTIONS.get(event.storage)
        if finalizer is not None and event.type != "DELETED" and meta.get("deletionTimestamp") \
                and finalizer in (meta.get("finalizers") or ()):
            self.protected.add((event.storage, event.namespace, meta["name"]))
            self._poke()
        elif event.storage == "/pods" and any(key[1] == event.namespace for key in self.protected):
            self._poke()
        if event.type == "DELETED":
            self.pending.append(meta["uid"])
            self.foreground.discard(meta["uid"])
            self._poke()
            return
        if meta.get("deletionTimestamp"):
            if "foregroundDeletion" in (meta.get("finalizers") or ()):
                self.foreground.add(meta["uid"])
            if event.storage == "/namespaces":
                self.terminating.add(meta["name"])
            self._poke()
        refs = meta.get("ownerReferences") or []
        before = ((event.prev or {}).get("metadata") or {}).get("ownerReferences") or []
        if refs and (event.type == "ADDED" or refs != before) and \
                any(self.owner_state(r, event.namespace) == ABSENT for r in refs):
            self.checks.append((event.storage, event.namespace, meta["name"]))
            self._poke()

    def owner_state(self, ref: dict[str, str], namespace: str) -> str:
        """What an ownerReference of an object in `namespace` ("": cluster-scoped) resolves to, as
        kube's GC resolves it (`isDangling`: the owner looked up in the dependent's namespace
        unless its kind is cluster-scoped, then its uid compared): ALIVE, ABSENT, or INVALID for a
        cluster-scoped object naming a namespaced owner (upstream then leaves the object alone)."""
        key = self.store.uids.get(ref.get("uid", ""))
        if key is None:
            rt = self.store.registry.by_kind(ref.get("apiVersion", ""), ref.get("kind", ""))
            return INVALID if not namespace and rt is not None and rt.namespaced else ABSENT
        owner_namespace = key[1]
        if owner_namespace and not namespace:
            return INVALID
        return ALIVE if owner_namespace in ("", namespace) else ABSENT

    def _on_crd(self, event: watches.Event) -> None:
        registry = self.store.registry
        if event.type == "DELETED":
            spec = event.obj.get("spec") or {}
            storage = f"{spec.get('group', '')}/{(spec.get('names') or {}).get('plural', '')}"
            for key, entry in list(self.store.scan(storage)):
                gone = json.loads(entry.raw)
                self.store._commit((storage, *key), gone, entry.obj, "DELETED")
            registry.remove_crd(event.obj)
        else:
            registry.add_crd(event.obj)

    async def run(self) -> None:
        self.wake = asyncio.Event()
        self.wake.set()
        while True:
            await self.wake.wait()
            self.wake.clear()
            try:
                self.collect()
            except Exception:  # a bug here must not stop collection for the whole session
                logger.exception("garbage collection failed")
            await asyncio.sleep(0)

    def collect(self) -> None:
        for _ in range(100):  # each round may free more; the bound only guards against bugs
            if not self._round():
                return

    def _round(self) -> bool:
        worked = False
        pending, self.pending = self.pending, []
        for uid in dict.fromkeys(pending):
            if self.store.by_uid(uid) is None:
                worked |= self._release_dependents(uid)
        checks, self.checks = self.checks, []
        for key in dict.fromkeys(checks):
            worked |= self._check(key)
        for uid in list(self.foreground):
            worked |= self._foreground(uid)
        for ns in list(self.terminating):
            worked |= self._empty_namespace(ns)
        for key in sorted(self.protected):
            worked |= self._unprotect(key)
        return worked or bool(self.pending) or bool(self.checks)

    def _release_dependents(self, owner_uid: str) -> bool:
        worked = False
        for key in list(self.store.dependents.get(owner_uid, ())):
            worked |= self._check(key)
        return worked

    def _check(self, key: store_.Key) -> bool:
        """Collect an object whose owners are all absent, or drop its absent ownerReferences when
        some owner is alive; an unresolvable reference (INVALID) leaves the object as it is."""
        entry = self.store.objects[key[0]].get(key[1:])
        if entry is None:
            return False
        refs = entry.obj["metadata"].get("ownerReferences") or []
        states = [self.owner_state(r, key[1]) for r in refs]
        if INVALID in states or ABSENT not in states:
            return False
        alive = [r for r, state in zip(refs, states, strict=True) if state == ALIVE]
        if alive:
            new = json.loads(entry.raw)
            new["metadata"]["ownerReferences"] = alive
            self.store.put_internal(key, new, entry.obj)
        elif not entry.obj["metadata"].get("deletionTimestamp"):
            self.store.remove(key, "Background")
        else:
            return False
        return True

    def _owned(self, key: store_.Key, owner_uid: str) -> bool:
        """Whether the stored object `key` has a live owner reference to `owner_uid`."""
        entry = self.store.objects[key[0]].get(key[1:])
        return entry is not None and any(
            r.get("uid") == owner_uid and self.owner_state(r, key[1]) == ALIVE
            for r in entry.obj["metadata"].get("ownerReferences") or ())

    def _foreground(self, uid: str) -> bool:
        key = self.store.uids.get(uid)
        if key is None:
            self.foreground.discard(uid)
            return False
        deps = [d for d in self.store.dependents.get(uid, ()) if self._owned(d, uid)]
        for dep in deps:
            if not self.store.objects[dep[0]][dep[1:]].obj["metadata"].get("deletionTimestamp"):
                self.store.remove(dep, "Background")
        if deps:
            return False
        entry = self.store.objects[key[0]][key[1:]]
        new = json.loads(entry.raw)
        new["metadata"]["finalizers"] = [
            f for f in new["metadata"].get("finalizers") or () if f != "foregroundDeletion"]
        self.foreground.discard(uid)
        self.store.put_internal(key, new, entry.obj)
        return True

    def _empty_namespace(self, ns: str) -> bool:
        left = 0
        for storage, bucket in list(self.store.objects.items()):
            for key in [k for k in bucket if k[0] == ns]:
                left += 1
                if not bucket[key].obj["metadata"].get("deletionTimestamp"):
                    self.store.remove((storage, *key), "Background")
        if left:
            return False
        self.terminating.discard(ns)
        entry = self.store.objects["/namespaces"].get(("", ns))
        if entry is None:
            return False
        new = json.loads(entry.raw)
        spec = new.setdefault("spec", {})
        spec["finalizers"] = [f for f in spec.get("finalizers") or () if f != "kubernetes"]
        if not spec["finalizers"]:
            del spec["finalizers"]
        self.store.put_internal(("/namespaces", "", ns), new, entry.obj)
        return True

    def _unprotect(self, key: store_.Key) -> bool:
        """Drop a claim's or volume's protection finalizer once nothing uses it any more."""
        entry = self.store.objects[key[0]].get(key[1:])
        finalizer = _PROTECTIONS[key[0]]
        if entry is None or finalizer not in (entry.obj["metadata"].get("finalizers") or ()):
            self.protected.discard(key)
            return False
        if key[0] == volumes.VOLUMES:
            in_use = (entry.obj.get("status") or {}).get("phase") == "Bound"
        else:
            in_use = any(_uses_claim(pod.obj, entry.obj) for _, pod in self.store.scan("/pods", key[1]))
        if in_use:
            return False
        new = json.loads(entry.raw)
        new["metadata"]["finalizers"] = [f for f in new["metadata"]["finalizers"] if f != finalizer]
        if not new["metadata"]["finalizers"]:
            del new["metadata"]["finalizers"]
        self.protected.discard(key)
        self.store.put_internal(key, new, entry.obj)
        return True


_PROTECTIONS = {volumes.CLAIMS: volumes.PVC_PROTECTION, volumes.VOLUMES: volumes.PV_PROTECTION}


def _uses_claim(pod: dict[str, Any], claim: dict[str, Any]) -> bool:
    """The pvc-protection controller's podUsesPVCForDeletion."""
    spec, meta = pod.get("spec") or {}, pod["metadata"]
    if not spec.get("nodeName"):
        return False
    name = claim["metadata"]["name"]
    shut_down = bool(meta.get("deletionTimestamp")) and meta.get("deletionGracePeriodSeconds") == 0
    owned = any(ref.get("uid") == meta.get("uid") and ref.get("controller")
                for ref in claim["metadata"].get("ownerReferences") or ())
    for volume in spec.get("volumes") or []:
        if (volume.get("persistentVolumeClaim") or {}).get("claimName") == name:
            return True
        if volume.get("ephemeral") is not None and not shut_down and owned \
                and f"{meta['name']}-{volume.get('name', '')}" == name:
            return True
    return False
