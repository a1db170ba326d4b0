"""The object store: the single place where writes happen and resourceVersions are born.

Everything here is synchronous and runs on the server's event loop, so a write (read
the current object, check the precondition, admit, commit, publish one watch event) is
atomic without locks: two PUTs with the same resourceVersion cannot both win, because
the second one runs after the first has committed. That is the property the operator's
"no double allocation" relies on, and it is why nothing in this module awaits.

Objects are stored once, in their storage version's shape, as a dict that is never
mutated after commit plus its JSON bytes (reused for GET, LIST and watch events, which
keeps a list of 10,000 ResourceSlices cheap). Writes copy by decoding those bytes.

What the store decides, as the API server does: uid, creationTimestamp, generation
(bumped when anything outside metadata and status changes), generateName suffixes, one
global resourceVersion counter, 409 on a stale resourceVersion, the status subresource
split, finalizers and deletionTimestamp, and that a no-op write changes nothing and
sends no event. What happens after a deletion (garbage collection, namespace cleanup)
is `collecting.py`'s job; admission rules are `admission.py`'s.
"""

from __future__ import annotations

import datetime
import json
import random
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple, Protocol

from dralloc.sandbox import errors, priorities, resources, watches

Obj = dict[str, Any]
Key = tuple[str, str, str]  # storage, namespace ("" when cluster-scoped), name
_SUFFIX_CHARS = "bcdfghjklmnpqrstvwxz2456789"
_NOT_SPEC = ("metadata", "status", "apiVersion", "kind")
INITIAL_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


class Admission(Protocol):
    def admit(self, rt: resources.ResourceType, new: Obj, old: Obj | None, subresource: str) -> None:
        """Default fields of `new` in place, or raise `ApiError` (422 Invalid)."""


class Entry(NamedTuple):
    obj: Obj
    raw: bytes


def now(offset: float = 0.0) -> str:
    moment = datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=offset)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def dumps(obj: Obj) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def released(obj: Obj) -> bool:
    """Being deleted and held by nothing any more (a namespace also by its spec.finalizers)."""
    meta = obj["metadata"]
    if not meta.get("deletionTimestamp") or meta.get("finalizers"):
        return False
    if (meta.get("deletionGracePeriodSeconds") or 0) > 0:
        return False  # a graceful pod deletion: the (simulated) kubelet finishes it
    return not (obj.get("kind") == "Namespace" and (obj.get("spec") or {}).get("finalizers"))


def spec_of(obj: Obj) -> Obj:
    return {k: v for k, v in obj.items() if k not in _NOT_SPEC}


class Store:
    def __init__(
        self,
        registry: resources.Registry,
        hub: watches.Hub,
        admission: Admission | None = None,
    ) -> None:
        self.registry = registry
        self.hub = hub
        self.admission = admission
        self.rv = 0
        self.objects: dict[str, dict[tuple[str, str], Entry]] = defaultdict(dict)
        self.uids: dict[str, Key] = {}
        self.dependents: dict[str, set[Key]] = defaultdict(set)  # owner uid -> dependents
        self.listeners: list[Callable[[watches.Event], None]] = []
        # seconds an object gets to terminate on DELETE; set by the pod simulator (a kubelet's job)
        self.grace_period: Callable[[Obj, Obj], int] | None = None
        for name in INITIAL_NAMESPACES:
            self.create(self._rt("", "v1", "namespaces"), "", {"metadata": {"name": name}})
        for priority_class in priorities.system_objects():  # kube-apiserver's post-start hook makes these
            self.create(self._rt("scheduling.k8s.io", "v1", "priorityclasses"), "", priority_class)

    def _rt(self, group: str, version: str, plural: str) -> resources.ResourceType:
        rt = self.registry.get(group, version, plural)
        assert rt is not None
        return rt

    # ---- reads ------------------------------------------------------------------------------

    def entry(self, rt: resources.ResourceType, namespace: str, name: str) -> Entry:
        found = self.objects[rt.storage].get((namespace if rt.namespaced else "", name))
        if found is None:
            raise errors.not_found(rt.plural, name, rt.group)
        return found

    def get(self, rt: resources.ResourceType, namespace: str, name: str) -> Obj:
        return rt.outward(self.entry(rt, namespace, name).obj)

    def by_uid(self, uid: str) -> Entry | None:
        key = self.uids.get(uid)
        return self.objects[key[0]].get(key[1:]) if key else None

    def scan(self, storage: str, namespace: str | None = None) -> Iterator[tuple[tuple[str, str], Entry]]:
        """Objects of one storage in key order (namespace, name), as etcd lists them."""
        bucket = self.objects.get(storage, {})
        for key in sorted(bucket):
            if namespace is None or key[0] == namespace:
                yield key, bucket[key]

    def current_events(self, storage: str) -> Iterator[watches.Event]:
        """The present state as synthetic ADDED events (a watch without resourceVersion)."""
        for (ns, _), entry in self.scan(storage):
            rv = int(entry.obj["metadata"]["resourceVersion"])
            yield watches.Event(rv, "ADDED", storage, ns, entry.obj, entry.raw, None)

    # ---- commit -----------------------------------------------------------------------------

    def _commit(self, key: Key, obj: Obj, prev: Obj | None, etype: str) -> Obj:
        self.rv += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)
        raw = dumps(obj)
        storage, ns, name = key
        if prev is not None:
            self._unindex(key, prev)
        if etype == "DELETED":
            self.objects[storage].pop((ns, name), None)
        else:
            self.objects[storage][(ns, name)] = Entry(obj, raw)
            self._index(key, obj)
        event = watches.Event(self.rv, etype, storage, ns, obj, raw, prev)
        self.hub.publish(event)
        for listener in list(self.listeners):
            listener(event)
        return obj

    def _index(self, key: Key, obj: Obj) -> None:
        meta = obj["metadata"]
        self.uids[meta["uid"]] = key
        for ref in meta.get("ownerReferences") or ():
            self.dependents[ref.get("uid", "")].add(key)

    def _unindex(self, key: Key, obj: Obj) -> None:
        meta = obj["metadata"]
        self.uids.pop(meta["uid"], None)
        for ref in meta.get("ownerReferences") or ():
            deps = self.dependents.get(ref.get("uid", ""))
            if deps is not None:
                deps.discard(key)
                if not deps:
                    del self.dependents[ref.get("uid", "")]

    def _admit(self, rt: resources.ResourceType, new: Obj, old: Obj | None, sub: str = "") -> None:
        if self.admission is not None:
            self.admission.admit(rt, new, old, sub)

    # ---- create -----------------------------------------------------------------------------

    def create(
        self,
        rt: resources.ResourceType,
        namespace: str,
        body: Obj,
        *,
        dry_run: bool = False,
        keep_status: bool = False,  # seeding and restoring keep what they were given
        owned: bool = False,  # the caller hands `body` over (a freshly decoded request): no copy
    ) -> Obj:
        if not isinstance(body, dict):
            raise errors.ApiError(400, "the body of the request must be an object")
        if body.get("kind") not in (None, rt.kind):
            raise errors.ApiError(400, f"the kind of the object ({body.get('kind')}) does not match {rt.kind}")
        if body.get("apiVersion") not in (None, rt.api_version):
            raise errors.ApiError(400, f"the API version in the data ({body.get('apiVersion')}) does "
                                       f"not match the expected API version ({rt.api_version})")
        obj = rt.inward({**body, "apiVersion": rt.api_version, "kind": rt.kind})
        if not owned:
            obj = json.loads(dumps(obj))
        meta = obj.setdefault("metadata", {}) or {}
        obj["metadata"] = meta
        if rt.namespaced:
            if meta.get("namespace") not in (None, "", namespace):
                raise errors.ApiError(400, "the namespace of the provided object does not match "
                                           "the namespace sent on the request")
            meta["namespace"] = namespace
            self._check_namespace(rt, namespace)
        else:
            meta.pop("namespace", None)
        if not meta.get("name"):
            if not meta.get("generateName"):
                raise errors.invalid(rt.kind, rt.group, "", [("metadata.name", "Required value: name or "
                                                                                "generateName is required")])
            meta["name"] = self._generate(rt, namespace, meta["generateName"])
        if meta.get("resourceVersion") and not keep_status:
            raise errors.ApiError(400, "resourceVersion should not be set on objects to be created")
        key = (rt.storage, namespace if rt.namespaced else "", meta["name"])
        if not keep_status:
            meta["uid"] = str(uuid.uuid4())
            meta["creationTimestamp"] = now()
            meta.pop("generation", None)
            if rt.generation:
                meta["generation"] = 1
            for field in ("deletionTimestamp", "deletionGracePeriodSeconds", "resourceVersion"):
                meta.pop(field, None)
            if rt.status and rt.plural not in ("nodes", "namespaces"):
                obj.pop("status", None)
        else:
            meta.setdefault("uid", str(uuid.uuid4()))
            meta.setdefault("creationTimestamp", now())
            if rt.generation:
                meta.setdefault("generation", 1)
        self._admit(rt, obj, None)
        if key[1:] in self.objects[rt.storage]:  # after admission: kube-apiserver validates first, etcd refuses last
            raise errors.already_exists(rt.plural, meta["name"], rt.group)
        if dry_run:
            return rt.outward(obj)
        committed = self._commit(key, obj, None, "ADDED")
        return rt.outward(committed)

    def _check_namespace(self, rt: resources.ResourceType, namespace: str) -> None:
        found = self.objects["/namespaces"].get(("", namespace))
        if found is None:
            raise errors.not_found("namespaces", namespace)
        if found.obj["metadata"].get("deletionTimestamp") and rt.storage != "/events":
            raise errors.ApiError(403, f"unable to create new content in namespace {namespace} because "
                                       "it is being terminated", reason="Forbidden")

    def _generate(self, rt: resources.ResourceType, namespace: str, prefix: str) -> str:
        for _ in range(64):
            name = prefix[:58] + "".join(random.choices(_SUFFIX_CHARS, k=5))
            if (namespace if rt.namespaced else "", name) not in self.objects[rt.storage]:
                return name
        raise errors.ApiError(409, f"could not generate a unique name from {prefix!r}", reason="AlreadyExists")

    # ---- update -----------------------------------------------------------------------------

    def update(
        self,
        rt: resources.ResourceType,
        namespace: str,
        name: str,
        body: Obj,
        *,
        subresource: str = "",
        dry_run: bool = False,
        precondition: str | None = None,  # a resourceVersion a patch carried
        owned: bool = False,  # the caller hands `body` over (a freshly decoded request): no copy
    ) -> Obj:
        if not isinstance(body, dict):
            raise errors.ApiError(400, "the body of the request must be an object")
        entry = self.entry(rt, namespace, name)
        old = entry.obj
        new = rt.inward(body)
        if not owned or new is not body:
            new = json.loads(dumps(new))
        meta = new.get("metadata")
        if not isinstance(meta, dict):
            meta = new["metadata"] = {}
        old_meta = old["metadata"]
        wanted = precondition if precondition is not None else meta.get("resourceVersion")
        if wanted and str(wanted) != old_meta["resourceVersion"]:
            raise errors.conflict(rt.plural, name, rt.group)
        if meta.get("name") not in (None, name):
            raise errors.ApiError(400, f"the name of the object ({meta.get('name')}) does not match the "
                                       f"name on the URL ({name})")
        new["apiVersion"], new["kind"] = old["apiVersion"], old["kind"]
        if subresource == "status":
            status = new.get("status")
            new = json.loads(entry.raw)
            if status is None:
                new.pop("status", None)
            else:
                new["status"] = status
        else:
            for field in ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
                          "generation", "name", "namespace"):
                if field in old_meta:
                    meta[field] = old_meta[field]
                else:
                    meta.pop(field, None)
            if rt.status:
                if "status" in old:
                    new["status"] = old["status"]
                else:
                    new.pop("status", None)
        new["metadata"]["resourceVersion"] = old_meta["resourceVersion"]
        if new == old:
            return rt.outward(old)  # a no-op write: no new resourceVersion, no event
        self._check_finalizers(rt, new, old)
        self._admit(rt, new, old, subresource)
        if subresource != "status" and spec_of(new) != spec_of(old) and rt.generation:  # after defaulting
            new["metadata"]["generation"] = old_meta.get("generation", 1) + 1
        if new == old:
            return rt.outward(old)
        if dry_run:
            return rt.outward(new)
        key = (rt.storage, old_meta.get("namespace", ""), name)
        if released(new):
            return rt.outward(self._commit(key, new, old, "DELETED"))
        return rt.outward(self._commit(key, new, old, "MODIFIED"))

    def _check_finalizers(self, rt: resources.ResourceType, new: Obj, old: Obj) -> None:
        if not old["metadata"].get("deletionTimestamp"):
            return
        added = set(new["metadata"].get("finalizers") or ()) - set(old["metadata"].get("finalizers") or ())
        if added:
            raise errors.invalid(rt.kind, rt.group, old["metadata"]["name"], [(
                "metadata.finalizers",
                f"Forbidden: no new finalizers can be added if the object is being deleted, found new "
                f"finalizers {sorted(added)}")])

    def put_internal(self, key: Key, new: Obj, old: Obj) -> Obj:
        """A controller-side write (GC, namespace cleanup, simulator): no admission."""
        new["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
        if new == old:
            return old
        if released(new):
            return self._commit(key, new, old, "DELETED")
        return self._commit(key, new, old, "MODIFIED")

    # ---- delete -----------------------------------------------------------------------------

    def delete(
        self,
        rt: resources.ResourceType,
        namespace: str,
        name: str,
        options: Obj | None = None,
        *,
        dry_run: bool = False,
    ) -> Obj:
        options = options or {}
        entry = self.entry(rt, namespace, name)
        old = entry.obj
        meta = old["metadata"]
        pre = options.get("preconditions") or {}
        if pre.get("uid") and pre["uid"] != meta["uid"]:
            raise errors.conflict(rt.plural, name, rt.group,
                                  f"Precondition failed: UID in precondition: {pre['uid']}, "
                                  f"UID in object meta: {meta['uid']}")
        if pre.get("resourceVersion") and pre["resourceVersion"] != meta["resourceVersion"]:
            raise errors.conflict(rt.plural, name, rt.group)
        if rt.storage == "/namespaces" and name in ("default", "kube-system", "kube-public"):
            raise errors.ApiError(403, f'namespaces "{name}" is forbidden: this namespace may not be deleted',
                                  reason="Forbidden")
        if rt.storage == priorities.STORAGE and name in priorities.SYSTEM_PRIORITIES:
            raise priorities.forbidden(rt.plural, rt.group, name, "this is a system priority class and cannot be deleted")
        policy = options.get("propagationPolicy")
        if policy is None and options.get("orphanDependents") is True:
            policy = "Orphan"
        if dry_run:
            return rt.outward(old)
        key = (rt.storage, meta.get("namespace", ""), name)
        grace = self.grace_period(old, options) if self.grace_period is not None else 0
        return rt.outward(self.remove(key, policy or "Background", grace))

    def remove(self, key: Key, policy: str = "Background", grace: int = 0) -> Obj:
        """Delete now, or start a graceful deletion when finalizers, Foreground or a grace period hold it."""
        entry = self.objects[key[0]][key[1:]]
        old = entry.obj
        new = json.loads(entry.raw)
        meta = new["metadata"]
        if meta.get("deletionTimestamp") and policy != "Foreground":
            if grace < (meta.get("deletionGracePeriodSeconds") or 0):  # shortening, or forcing with 0
                meta["deletionGracePeriodSeconds"] = grace
                return self.put_internal(key, new, old)
            return old
        finalizers = list(meta.get("finalizers") or ())
        if policy == "Orphan":
            self.orphan(meta["uid"])
        elif policy == "Foreground" and self.dependents.get(meta["uid"]):
            if "foregroundDeletion" not in finalizers:
                finalizers.append("foregroundDeletion")
        if key[0] == "/namespaces":  # the namespace controller (collecting.py) finishes it
            new.setdefault("status", {})["phase"] = "Terminating"
        elif not finalizers and not grace:
            return self._commit(key, new, old, "DELETED")
        if finalizers:
            meta["finalizers"] = finalizers
        if not meta.get("deletionTimestamp"):
            meta["deletionTimestamp"] = now(grace)
            meta["deletionGracePeriodSeconds"] = grace
            if "generation" in meta:
                meta["generation"] += 1
        return self.put_internal(key, new, old)

    def orphan(self, owner_uid: str) -> None:
        for key in list(self.dependents.get(owner_uid, ())):
            entry = self.objects[key[0]].get(key[1:])
            if entry is None:
                continue
            new = json.loads(entry.raw)
            refs = [r for r in new["metadata"].get("ownerReferences") or () if r.get("uid") != owner_uid]
            if refs:
                new["metadata"]["ownerReferences"] = refs
            else:
                new["metadata"].pop("ownerReferences", None)
            self.put_internal(key, new, entry.obj)

    def insert(self, key: Key, obj: Obj) -> None:
        """Put a stored object back as it was (restoring state): no version, no event."""
        prev = self.objects[key[0]].get(key[1:])
        if prev is not None:
            self._unindex(key, prev.obj)
        self.objects[key[0]][key[1:]] = Entry(obj, dumps(obj))
        self._index(key, obj)
