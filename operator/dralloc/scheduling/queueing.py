"""The pending pods' queue, as kube-scheduler keeps it: active, backoff, unschedulable.

kube-scheduler's scheduling queue (pkg/scheduler/backend/queue) holds a pod in one of
three places: *active* (to be tried), *backoff* (tried and failed; waits
`initial * 2^(attempts-1)` seconds, at most `maximum`, since its last attempt), and
*unschedulable* (found not to fit; stays there until a cluster event that can make it fit
arrives — the queueing hints — or `max_unschedulable` seconds passed, then goes to backoff
or straight to active if its backoff is already over). This module is that queue for
dralloc, pure: the caller passes `now` (monotonic seconds), so it is deterministic.

What makes a parked pod worth another try is a `Change` (what an event can free or fix)
matched against the pod's `Wants` (its claims, their classes, its templates, its gang):
devices freed (a claim deallocated or deleted), slices, nodes (not their heartbeats),
device taint rules and pods leaving or finishing can make any pod fit; a claim, a class, a
template or a PodGroup only the pods that use it. A pod of another tenant being placed
(devices taken, a pod bound) never makes anyone fit, so it wakes nobody: a flood of
unschedulable pods costs nothing while the rest of the cluster is scheduled.

A pod held by scheduling gates other than ours (Kueue's, say) is parked as kube-scheduler
keeps a gated pod: not tried, no attempt counted, and woken only by a change of its own
object (a gate removed) or the periodic flush; it is tried at once when that comes.

Fairness: `order` takes ready pods round-robin across namespaces (the namespace after the
one served first last time goes first, so none is always first), and within a namespace
by priority, then age, then name — so one namespace's thousand pods delay another
namespace's pod by at most one decision per namespace with pods ready.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Iterable, Iterator, Sequence

Key = tuple[str, str]  # (namespace, name)

DEFAULT_INITIAL_BACKOFF = 1.0  # kube-scheduler's podInitialBackoffSeconds
DEFAULT_MAX_BACKOFF = 10.0  # kube-scheduler's podMaxBackoffSeconds
DEFAULT_MAX_UNSCHEDULABLE = 300.0  # kube-scheduler's podMaxInUnschedulablePodsDuration (5 minutes)


@dataclasses.dataclass(frozen=True)
class Change:
    """What one cluster change can make fit: anything (`any_pod`), or what uses these objects."""

    any_pod: bool = False
    claims: frozenset[Key] = frozenset()
    classes: frozenset[str] = frozenset()
    templates: frozenset[Key] = frozenset()
    pod_groups: frozenset[Key] = frozenset()
    pods: frozenset[Key] = frozenset()  # the pod's own object changed (its claim statuses, gates)
    # A pod joined a node (or a namespace's labels changed): pods whose required pod affinity or
    # topology spread counts other pods may fit now.
    neighbours: bool = False
    volume_claims: frozenset[Key] = frozenset()  # PersistentVolumeClaims

    def keys(self) -> Iterator[tuple[str, object]]:
        """What changed, each as (what, which), as `Wants.keys` names it."""
        if self.neighbours:
            yield "neighbours", True
        yield from (("volume-claim", k) for k in self.volume_claims)
        yield from (("pod", k) for k in self.pods)
        yield from (("claim", k) for k in self.claims)
        yield from (("class", c) for c in self.classes)
        yield from (("template", t) for t in self.templates)
        yield from (("group", g) for g in self.pod_groups)


EVERYTHING = Change(any_pod=True)


@dataclasses.dataclass(frozen=True)
class Wants:
    """What a parked pod waits for: a change touching any of these may make it fit."""

    pod: Key
    claims: frozenset[Key] = frozenset()
    classes: frozenset[str] = frozenset()
    templates: frozenset[Key] = frozenset()
    pod_group: Key | None = None
    neighbours: bool = False  # it has required pod affinity or DoNotSchedule spread constraints
    volume_claims: frozenset[Key] = frozenset()  # the PersistentVolumeClaims of its volumes

    def keys(self) -> Iterator[tuple[str, object]]:
        """What the pod waits on, each as (what, which): the index `PodQueue.note` looks changes up in."""
        if self.neighbours:
            yield "neighbours", True
        yield from (("volume-claim", k) for k in self.volume_claims)
        yield "pod", self.pod
        yield from (("claim", k) for k in self.claims)
        yield from (("class", c) for c in self.classes)
        yield from (("template", t) for t in self.templates)
        if self.pod_group is not None:
            yield "group", self.pod_group

    def woken_by(self, change: Change) -> bool:
        return (change.any_pod or (self.neighbours and change.neighbours) or self.pod in change.pods
                or not self.volume_claims.isdisjoint(change.volume_claims)
                or not self.claims.isdisjoint(change.claims)
                or not self.classes.isdisjoint(change.classes) or not self.templates.isdisjoint(change.templates)
                or (self.pod_group is not None and self.pod_group in change.pod_groups))


class Place(enum.Enum):
    ACTIVE = "active"
    BACKOFF = "backoff"
    UNSCHEDULABLE = "unschedulable"


@dataclasses.dataclass
class Entry:
    uid: str
    key: Key
    priority: int
    created: str  # creationTimestamp (RFC 3339 sorts as text)
    place: Place = Place.ACTIVE
    attempts: int = 0
    last_attempt: float | None = None
    parked_at: float = 0.0
    wants: Wants | None = None
    gated: bool = False  # parked for scheduling gates not ours: only its own object wakes it


class PodQueue:
    """Pending pods by uid, each in one of kube-scheduler's three places."""

    def __init__(self, *, initial_backoff: float = DEFAULT_INITIAL_BACKOFF, max_backoff: float = DEFAULT_MAX_BACKOFF,
                 max_unschedulable: float = DEFAULT_MAX_UNSCHEDULABLE) -> None:
        if initial_backoff <= 0 or max_backoff < initial_backoff:
            raise ValueError(f"backoff: initial {initial_backoff} s must be positive and at most the maximum "
                             f"{max_backoff} s")
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self.max_unschedulable = max_unschedulable
        self.entries: dict[str, Entry] = {}
        self._first_namespace = ""  # the namespace served first by the last `order`
        # The unschedulable pods, and by what they wait on: a change touching one object looks its
        # pods up instead of asking every parked pod (a tenant's thousands, on every watch event).
        self._parked: dict[str, Entry] = {}
        self._waiting_on: dict[tuple[str, object], set[str]] = {}

    def __len__(self) -> int:
        return len(self.entries)

    def __contains__(self, uid: object) -> bool:
        return uid in self.entries

    # ---- membership -----------------------------------------------------------------------

    def add(self, uid: str, key: Key, *, priority: int = 0, created: str = "") -> Entry:
        """A pending pod we own; a new one goes to active, a known one keeps its place."""
        entry = self.entries.get(uid)
        if entry is None:
            entry = self.entries[uid] = Entry(uid, key, priority, created)
        else:
            entry.priority, entry.created = priority, created
        return entry

    def remove(self, uid: str) -> None:
        """Placed, deleted, or no longer ours: everything about it goes."""
        entry = self.entries.pop(uid, None)
        if entry is not None:
            self._unpark(entry)

    def keep_only(self, uids: Iterable[str]) -> int:
        """Drop every pod not in `uids` (the pending pods we own now); how many went."""
        keep = set(uids)
        gone = [uid for uid in self.entries if uid not in keep]
        for uid in gone:
            self.remove(uid)
        return len(gone)

    def _park(self, entry: Entry, wants: Wants, now: float) -> None:
        self._unpark(entry)
        entry.place, entry.parked_at, entry.wants = Place.UNSCHEDULABLE, now, wants
        self._parked[entry.uid] = entry
        for key in wants.keys():
            self._waiting_on.setdefault(key, set()).add(entry.uid)

    def _unpark(self, entry: Entry, place: Place | None = None) -> None:
        """Out of the unschedulable place (into `place`, when given), and out of the index."""
        if self._parked.pop(entry.uid, None) is not None and entry.wants is not None:
            for key in entry.wants.keys():
                waiting = self._waiting_on.get(key)
                if waiting is not None:
                    waiting.discard(entry.uid)
                    if not waiting:
                        del self._waiting_on[key]
        entry.wants, entry.gated = None, False
        if place is not None:
            entry.place = place

    # ---- outcomes of an attempt -------------------------------------------------------------

    def backoff_of(self, entry: Entry) -> float:
        if entry.attempts <= 0:
            return 0.0
        return min(self.initial_backoff * 2.0 ** (entry.attempts - 1), self.max_backoff)

    def unschedulable(self, uid: str, now: float, wants: Wants) -> float:
        """Tried and found not to fit: parked until a change it wants (or the periodic flush). Its backoff."""
        entry = self._attempted(uid, now)
        self._park(entry, wants, now)
        return self.backoff_of(entry)

    def gated(self, uid: str, now: float) -> None:
        """Held by scheduling gates not ours: parked without an attempt (its backoff does not grow) until
        its own object changes (a gate removed: it is tried at once) or the periodic flush."""
        entry = self.entries.get(uid)
        if entry is None:
            raise KeyError(f"pod {uid} is not in the queue")
        self._park(entry, Wants(pod=entry.key), now)
        entry.gated = True

    def back_off(self, uid: str, now: float) -> float:
        """Tried and failed for a reason a change does not fix (an error, a failed write): retried
        when its backoff is over. The backoff."""
        entry = self._attempted(uid, now)
        self._unpark(entry, Place.BACKOFF)
        return self.backoff_of(entry)

    def succeeded(self, uid: str) -> None:
        """Placed: its attempts are forgotten (it leaves the queue when it is no longer pending)."""
        entry = self.entries.get(uid)
        if entry is not None:
            self._unpark(entry, Place.ACTIVE)
            entry.attempts, entry.last_attempt = 0, None

    def activate(self, uid: str) -> None:
        """Try it on the next pass, whatever its backoff (its own state changed: not a retry)."""
        entry = self.entries.get(uid)
        if entry is not None:
            self._unpark(entry, Place.ACTIVE)

    def _attempted(self, uid: str, now: float) -> Entry:
        entry = self.entries.get(uid)
        if entry is None:
            raise KeyError(f"pod {uid} is not in the queue")
        entry.attempts += 1
        entry.last_attempt = now
        return entry

    # ---- events -----------------------------------------------------------------------------

    def note(self, change: Change) -> int:
        """A cluster change: every parked pod it may make fit moves to backoff (ready once its backoff
        is over). How many moved."""
        if change.any_pod:  # a gated pod waits for its gates whatever else frees up
            woken = [uid for uid, entry in self._parked.items()
                     if not entry.gated or entry.key in change.pods]
        else:
            woken = sorted({uid for key in change.keys() for uid in self._waiting_on.get(key, ())})
        for uid in woken:
            self._unpark(self._parked[uid], Place.BACKOFF)
        return len(woken)

    def flush(self, now: float) -> int:
        """Pods parked longer than `max_unschedulable` get another try (kube-scheduler's periodic flush)."""
        due = [entry for entry in self._parked.values() if now - entry.parked_at >= self.max_unschedulable]
        for entry in due:
            self._unpark(entry, Place.BACKOFF)
        return len(due)

    # ---- reading ----------------------------------------------------------------------------

    def due(self, entry: Entry) -> float:
        """When a pod in backoff may be tried (monotonic seconds)."""
        if entry.last_attempt is None:
            return 0.0
        return entry.last_attempt + self.backoff_of(entry)

    def ready(self, now: float) -> list[Entry]:
        """Pods to try now: active ones, and those whose backoff is over (they become active)."""
        found = []
        for entry in self.entries.values():
            if entry.place is Place.BACKOFF and self.due(entry) <= now:
                entry.place = Place.ACTIVE
            if entry.place is Place.ACTIVE:
                found.append(entry)
        return found

    def next_due(self, now: float) -> float | None:
        """Seconds until the next pod leaves backoff or the next flush; None when nothing waits on time."""
        waits = []
        for entry in self.entries.values():
            if entry.place is Place.BACKOFF:
                waits.append(self.due(entry) - now)
            elif entry.place is Place.UNSCHEDULABLE:
                waits.append(entry.parked_at + self.max_unschedulable - now)
        return max(0.0, min(waits)) if waits else None

    def counts(self) -> dict[Place, int]:
        counted = dict.fromkeys(Place, 0)
        for entry in self.entries.values():
            counted[entry.place] += 1
        return counted

    def order(self, entries: Sequence[Entry]) -> list[Entry]:
        """Round-robin across namespaces, starting after the namespace that went first last time;
        within one namespace by priority (highest first), then age, then name."""
        by_namespace: dict[str, list[Entry]] = {}
        for entry in entries:
            by_namespace.setdefault(entry.key[0], []).append(entry)
        if not by_namespace:
            return []
        for queue in by_namespace.values():
            queue.sort(key=lambda e: (-e.priority, e.created, e.key[1], e.uid))
        names = sorted(by_namespace)
        start = next((i for i, name in enumerate(names) if name > self._first_namespace), 0)
        names = names[start:] + names[:start]
        self._first_namespace = names[0]
        ordered: list[Entry] = []
        depth = 0
        while len(ordered) < len(entries):
            for name in names:
                queue = by_namespace[name]
                if depth < len(queue):
                    ordered.append(queue[depth])
            depth += 1
        return ordered


# ---- which changes can make a pod fit (the queueing hints) ----------------------------------------

Raw = dict[str, object]


def _meta(raw: Raw | None) -> dict[str, object]:
    meta = (raw or {}).get("metadata")
    return meta if isinstance(meta, dict) else {}


def _part(raw: Raw | None, name: str) -> dict[str, object]:
    part = (raw or {}).get(name)
    return part if isinstance(part, dict) else {}


def _key(raw: Raw) -> Key:
    meta = _meta(raw)
    return (str(meta.get("namespace") or ""), str(meta.get("name") or ""))


def _pod_frees(before: Raw, after: Raw | None) -> bool:
    """A pod that held a node's resources (bound) lets go of them: deleted, finishing, terminating."""
    if not _part(before, "spec").get("nodeName"):
        return False
    if after is None:
        return True
    if _meta(after).get("deletionTimestamp") and not _meta(before).get("deletionTimestamp"):
        return True
    phase = _part(after, "status").get("phase")
    return phase in ("Succeeded", "Failed") and _part(before, "status").get("phase") != phase


def _node_facts(raw: Raw | None) -> tuple[object, ...]:
    """What of a Node decides where pods fit (not its heartbeats and conditions' timestamps)."""
    spec, status = _part(raw, "spec"), _part(raw, "status")
    return (_meta(raw).get("labels"), spec.get("taints"), spec.get("unschedulable"), status.get("allocatable"),
            status.get("capacity"))


def classify(kind: str, before: Raw | None, after: Raw | None) -> Change | None:
    """What the change of one object (`before` None: created; `after` None: deleted) may make fit;
    None when it cannot make any pending pod fit."""
    raw = after if after is not None else before
    if raw is None:
        return None
    key = _key(raw)
    if kind == "Pod":
        # A gang's member appearing, changing or leaving may complete (or change) its gang.
        group = _part(_part(raw, "spec"), "schedulingGroup").get("podGroupName")
        groups = frozenset({(key[0], str(group))}) if group else frozenset()
        frees = before is not None and _pod_frees(before, after)
        # A bound pod's labels decide which affinity terms and spread selectors count it: a change
        # may free a node (anti-affinity) or fill a domain (affinity), so everyone looks again.
        relabelled = (before is not None and after is not None and bool(_part(after, "spec").get("nodeName"))
                      and _meta(before).get("labels") != _meta(after).get("labels"))
        joined = after is not None and bool(_part(after, "spec").get("nodeName")) and (
            before is None or not _part(before, "spec").get("nodeName"))
        return Change(any_pod=frees or relabelled, pods=frozenset({key}), pod_groups=groups, neighbours=joined)
    if kind == "ResourceClaim":
        freed = before is not None and bool(_part(before, "status").get("allocation")) and (
            after is None or not _part(after, "status").get("allocation"))
        return Change(any_pod=freed, claims=frozenset({key}))
    if kind in ("ResourceSlice", "DeviceTaintRule"):
        return EVERYTHING
    if kind == "Node":
        if before is None or after is None or _node_facts(before) != _node_facts(after):
            return EVERYTHING
        return None
    if kind == "DeviceClass":
        return Change(classes=frozenset({key[1]}))
    if kind == "ResourceClaimTemplate":
        return Change(templates=frozenset({key}))
    if kind == "PodGroup":
        return Change(pod_groups=frozenset({key}))
    if kind == "PersistentVolumeClaim":
        return Change(volume_claims=frozenset({key}))
    if kind in ("PersistentVolume", "StorageClass", "CSINode", "CSIDriver", "CSIStorageCapacity"):
        return EVERYTHING  # volumes a pod may bind or use, and the nodes' volume limits: rare changes
    if kind == "Namespace":
        # namespaceSelector of affinity terms: a namespace's labels decide whose pods count.
        if before is None or after is None or _meta(before).get("labels") != _meta(after).get("labels"):
            return Change(neighbours=True)
        return None
    return None
