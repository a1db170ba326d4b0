"""Place one item (a pod with its claims, or a bare claim) on a node.

`Placer` holds the cluster view a placement loop needs (nodes, the allocator
snapshot, what pods already use on each node) and keeps it current as
placements are committed or released. Deciding never mutates anything:
`place(item)` returns a `Placement` or a `NoPlacement`; `commit` records it.

Nodes are tried in policy order (FirstFit: node name; BinPack: most devices in
use first; Spread: fewest first; ties by name); the first node that passes the
pod's node constraints and on which the allocator finds devices for every claim
wins. Under FirstFit this is exactly "the first node by name on which upstream's
allocator succeeds", for a pod without preferences.

A pod's preferences (preferred node affinity, preferred pod affinity and anti-affinity,
ScheduleAnyway spread, PreferNoSchedule taints) are kube-scheduler's scores (`preferences`),
and they break the policy's ties: BinPack and Spread among nodes of equal device use,
FragmentationAware among nodes of equal model score, before the name. FirstFit's only order is
the name, so there the preference comes first and the name breaks its ties: such a pod goes to
the most preferred node that fits, as kube-scheduler's scores would send it (over the nodes
upstream scores, see `preferences`). A pod that prefers no node over another (`prepare` None)
is placed exactly as without this.

An allocator error met on one node's device (`errors.DeviceError`: CEL failing on that
device's attributes, its slice's node selector, an `All` request that must take it)
does not stop the search: another node may fit, and then the pod goes there. Only
when no node fits is the error raised (the first met, in the order tried). This is a
deliberate difference: kube-scheduler runs the allocator on every feasible node it
examines and fails the attempt on any error, so there the same pod is bound or fails
depending on which nodes it examined; here the answer depends only on whether some
node fits. Errors that hold on every node (an unknown class, CEL that does not
compile) are raised at once, as upstream.

Besides its own constraints (nodefit), a pod is checked against the pods around it:
host ports (nodeports), pod affinity and anti-affinity (podaffinity), topology spread
(topologyspread), each prepared once per pod and asked per node. The pods they count are
`placedpods.PlacedPods`: the bound ones, and every pod this placer placed (`commit`), so a
pass that places replica 1 counts it when it decides replica 2.

Indexes keep this cheap without giving up exactness. Adding allocations or pods
never makes an item fit where its claims and own constraints did not fit before
(the free set only shrinks), so such a failure of an item *shape* (its claims'
specs and its scheduling constraints) on a node stays true until something on that
node is released. The checks against other pods are not remembered this way: a pod
placed can make a node fit (required affinity, spread), so they are asked afresh.
`Placer` remembers such failures and, per shape, the first node not yet known
to fail, so a fill-up run calls the allocator on a full node once per shape, not
once per item. That start assumes name order: a pod with preferences walks every node in
its own order and skips the known failures one by one. Its scores are computed for each
decision, never kept: each pod placed changes them.
"""

from __future__ import annotations

import bisect
import copy
import dataclasses
import itertools
import json
import re
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from fractions import Fraction
from typing import Protocol

from dralloc import allocation
from dralloc.allocation import (
    equivalence,
    errors,
    fragmentation,
    interruption,
    nodeaffinity,
    outcomes,
    scoring,
)
from dralloc.allocation.features import Features
from dralloc.allocation.pools import DeviceID, NodeView
from dralloc.allocation.snapshots import Snapshot
from dralloc.lifecycle import extended
from dralloc.model import claims as model_claims
from dralloc.model import devices, nodes, pods
from dralloc.scheduling import (
    fragmenting,
    nodeallocatable,
    nodefit,
    nodeports,
    placedpods,
    podaffinity,
    preferences,
    topologyspread,
    volumes,
)

POLICIES = scoring.POLICIES


class InvalidPodSpec(errors.AllocationInputError):
    """A pod's scheduling constraints cannot be applied as written (an invalid label selector in an
    affinity term or a spread constraint): an input error of that pod, named in the message."""


class NeighbourCheck(Protocol):
    """One filter of the pod against the pods around a node, prepared once per pod."""

    def reject(self, node: nodes.Node) -> str | None: ...


# The filters that read other pods (and, for volumes, the cluster's storage), in kube-scheduler's
# order: NodePorts, then the volume filters (`volumes.prepare`, asked between these two), then
# PodTopologySpread and InterPodAffinity. Each `prepare(pod, placed)` returns None when it cannot
# refuse any node.
NEIGHBOUR_FILTERS_BEFORE_VOLUMES: tuple[Callable[[pods.Pod, placedpods.PlacedPods], NeighbourCheck | None], ...] = (
    nodeports.prepare,
)
NEIGHBOUR_FILTERS_AFTER_VOLUMES: tuple[Callable[[pods.Pod, placedpods.PlacedPods], NeighbourCheck | None], ...] = (
    topologyspread.prepare,
    podaffinity.prepare,
)


HELD_FOR_NOMINATED = "node(s) held for a nominated pod of equal or higher priority"


def _group_of(pod: pods.Pod) -> tuple[str, str] | None:
    """The pod's PodGroup (namespace, name), None when it names none."""
    group = pod.spec.scheduling_group.pod_group_name if pod.spec.scheduling_group is not None else None
    return (pod.namespace, group) if group else None

# A gang's members on different nodes (`Placer.members_apart`): (member index, node name, the members placed
# before it with their node names) -> may it go there.
MembersApart = Callable[[int, str, Sequence[tuple[int, str]]], bool]


@dataclasses.dataclass(frozen=True)
class Everywhere:
    """A reason that keeps the pod off every node until the cluster changes (a PreFilter's verdict)."""

    reason: str

    def reject(self, node: nodes.Node) -> str | None:
        return self.reason


# Nodes tried between two consultations of a caller's interruption check (allocation.interruption).
NODES_BETWEEN_CHECKS = 32


@dataclasses.dataclass(frozen=True)
class Item:
    """Something to place: a pod (with the claims it needs allocated), or claims alone."""

    name: str
    claims: tuple[model_claims.ResourceClaim, ...] = ()  # to allocate together, in this order
    pod: pods.Pod | None = None
    allocated: tuple[model_claims.ResourceClaim, ...] = ()  # claims the pod shares, already allocated


@dataclasses.dataclass(frozen=True)
class Placement:
    node: str
    results: tuple[model_claims.AllocationResult, ...]  # one per item claim
    steps: int = 0
    # DRANodeAllocatableResources: the pod's status.nodeAllocatableResourceClaimStatuses (API JSON),
    # written before the bind; empty when no allocated device declares node resources.
    node_allocatable: tuple[dict[str, object], ...] = ()
    # The pod's WaitForFirstConsumer volumes on that node (kube-scheduler's VolumeBinding): PVs to bind
    # to its claims and claims to provision there; None when it has none to bind.
    volumes: volumes.VolumePlan | None = None


@dataclasses.dataclass(frozen=True)
class NoPlacement:
    """Nowhere to go; `reasons` maps a reason to the nodes it applies to (sorted)."""

    reasons: tuple[tuple[str, tuple[str, ...]], ...]
    budget_exhausted: bool = False
    explained: bool = True  # False: `place(..., explain=False)` left the reasons out

    def message(self, limit: int = 5) -> str:
        parts = []
        for reason, where in self.reasons[:limit]:
            nodes_text = where[0] if len(where) == 1 else f"{len(where)} nodes ({', '.join(where[:3])}"
            if len(where) > 1:
                nodes_text += ", ..." if len(where) > 3 else ""
                nodes_text += ")"
            parts.append(f"{nodes_text}: {reason}")
        more = len(self.reasons) - limit
        if more > 0:
            parts.append(f"... and {more} more reasons")
        return "; ".join(parts) if parts else "no nodes"


def _shape(item: Item) -> str:
    """What determines whether an item fits a node, independent of its name."""
    parts: list[object] = [
        [c.spec.devices.model_dump(mode="json", by_alias=True, exclude_defaults=True) for c in item.claims],
        [c.metadata.uid or c.ref() for c in item.allocated],
    ]
    if item.pod is not None:
        spec = item.pod.spec
        parts.append(spec.model_dump(
            mode="json", by_alias=True, exclude_defaults=True,
            # Pod-level `resources` (an unknown field of the model) and the priority (a node held for a
            # nominated pod refuses the pods below it) decide the fit as much as the containers do.
            include={"node_name", "node_selector", "affinity", "tolerations", "containers", "init_containers",
                     "overhead", "resources", "priority"},
        ))
    return json.dumps(parts, sort_keys=True, separators=(",", ":"))


class _Shapes:
    """Shapes of claim-only items, memoized by their claims' device specs.

    `_shape` dumps every claim spec to JSON (tens of microseconds an item); most items of a
    workload share a few specs. The specs are frozen models, so equal specs (pydantic's
    equality: fields and unknown fields alike) dump to the same shape, and a dict lookup
    finds it. Specs holding a dict (capacity requests, derived attributes) are unhashable
    and pods' specs hold dicts too: those items are dumped every time, as before.
    """

    def __init__(self, capacity_monotone: Callable[[], bool] = lambda: False) -> None:
        self._known: dict[object, str] = {}
        self.family: dict[str, tuple[str, int | Fraction]] = {}  # shape -> (family, size): see `_family`
        # Whether a larger capacity request can only fit where a smaller one does (no device
        # declares a request policy): asked once, when the first such family appears.
        self._capacity_monotone = capacity_monotone
        self._monotone: bool | None = None
        # Unhashable specs by the identity of their objects: the claims a workload makes from
        # one template share its spec object. The objects are kept, so an id stays theirs.
        self._identical: dict[tuple[object, ...], tuple[tuple[object, ...], str]] = {}
        # Unplaced pod items' shapes by identity, the item kept (frozen: its shape cannot change).
        self._pods: dict[int, tuple[Item, str]] = {}

    def _by_identity(self, item: Item, key: tuple[tuple[object, ...], tuple[str, ...]]) -> str:
        specs = key[0]
        ident = (tuple(id(spec) for spec in specs), key[1])
        known = self._identical.get(ident)
        if known is not None and all(a is b for a, b in zip(known[0], specs, strict=True)):
            return known[1]
        shape = _shape(item)
        self._identical[ident] = (specs, shape)
        self._remember_family(item, shape)
        return shape

    def unplaced(self, item: Item, shape: str) -> None:
        """Keep a pod item's shape: it will be explained (simulate explains them at the end)."""
        if item.pod is not None:
            if len(self._pods) >= 1 << 16:
                self._pods.clear()
            self._pods[id(item)] = (item, shape)

    def _remember_family(self, item: Item, shape: str) -> None:
        if shape in self.family:
            return
        family = _family(item, capacity=self._capacity_families)
        if family is not None:
            self.family[shape] = family

    def _capacity_families(self) -> bool:
        if self._monotone is None:
            self._monotone = self._capacity_monotone()
        return self._monotone

    def of(self, item: Item, *, remembered: bool = False) -> str:
        """`remembered`: a pod's shape as `unplaced` kept it for this very item, if it did."""
        if item.pod is not None:
            if remembered:
                known = self._pods.get(id(item))
                if known is not None and known[0] is item:
                    return known[1]
            return _shape(item)
        key = (tuple(c.spec.devices for c in item.claims), tuple(c.metadata.uid or c.ref() for c in item.allocated))
        try:
            shape = self._known.get(key)
        except TypeError:  # unhashable: a dict inside a spec (capacity requests, ...)
            return self._by_identity(item, key)
        if shape is None:
            shape = self._known[key] = _shape(item)
            self._remember_family(item, shape)
        return shape


def _family(item: Item, *, capacity: Callable[[], bool] = lambda: False) -> tuple[str, int | Fraction] | None:
    """(the shape without its size, the size) for one claim asking for N devices of one kind.

    Such a claim that cannot get N devices on a node cannot get more than N there either: any
    allocation of more devices holds one of N (drop the extra devices; what they consumed of
    counters and capacity is freed, selectors and taints are per device). So a proven failure
    at N rules out every larger count of the same family on that node until it changes.
    Only the plainest case: one claim, one `exactly` request, ExactCount, no constraints
    (matchAttribute and distinctAttribute would hold as well, but need no shortcut here).

    A request for an amount of one capacity (a share of a GPU) is sized by that amount
    instead, its count kept in the family, when `capacity()` says that no device declares a
    request policy: then a device consumes exactly what is asked, and one that cannot give
    X (too little left, in use by others, a selector, a taint) cannot give more than X
    either. A policy rounds amounts (up to a step, a valid value, a minimum) and refuses
    some: the rule is kept to plain arithmetic, so with a policy anywhere there is no such family.
    """
    if item.pod is not None or item.allocated or len(item.claims) != 1:
        return None
    devices = item.claims[0].spec.devices
    if len(devices.requests) != 1 or devices.constraints:
        return None
    exactly = devices.requests[0].exactly
    if exactly is None or exactly.allocation_mode not in (None, model_claims.ALLOCATION_MODE_EXACT_COUNT):
        return None
    count = exactly.count if exactly.count is not None else 1  # the API's default
    if count < 1:
        return None
    spec = devices.model_dump(mode="json", by_alias=True, exclude_defaults=True)
    wanted = exactly.capacity.requests if exactly.capacity is not None else {}
    if wanted:
        if len(wanted) != 1 or not capacity():
            return None
        ((name, amount),) = wanted.items()
        # The amount leaves the key (its name stays, marked): the count is part of the family.
        spec["requests"][0]["exactly"]["capacity"]["requests"] = {name: None}
        return json.dumps(spec, sort_keys=True, separators=(",", ":")), amount.value
    spec["requests"][0]["exactly"].pop("count", None)
    return json.dumps(spec, sort_keys=True, separators=(",", ":")), count


def _renamer(explained: Item, item: Item) -> Callable[[str], str] | None:
    """Rewrites a reason written for `explained` (same claims' specs) with `item`'s claim names;
    None when the names are the same."""
    pairs = [(f"claim {a.ref()}", f"claim {b.ref()}") for a, b in zip(explained.claims, item.claims, strict=True)
             if a.ref() != b.ref()]
    if not pairs:
        return None
    pattern = re.compile("|".join(re.escape(old) + r"(?=[,:; ]|$)" for old, _ in pairs))
    mapping = dict(pairs)
    return lambda reason: pattern.sub(lambda m: mapping[m.group(0)], reason)


def _renamed(explanation: NoPlacement, explained: Item, item: Item) -> NoPlacement:
    """An explanation computed for another item of the same shape, with this item's claim names."""
    rename = _renamer(explained, item)
    if rename is None:
        return explanation
    reasons = tuple((rename(reason), where) for reason, where in explanation.reasons)
    return dataclasses.replace(explanation, reasons=reasons)


def _by_preference(indexes: Iterable[int], total: Sequence[int]) -> list[int]:
    """The indexes by preference (highest first), keeping their order among equal scores (stable)."""
    return sorted(indexes, key=lambda index: -total[index])


def node_usage(node_list: Sequence[nodes.Node], bound_pods: Iterable[pods.Pod]) -> dict[str, nodefit.NodeUsage]:
    """What the running pods already request on each node (finished pods free their share)."""
    usage = {n.metadata.name: nodefit.NodeUsage() for n in node_list}
    for pod in bound_pods:
        where = usage.get(pod.spec.node_name or "")
        if where is not None and not pod.finished():
            where.add(nodefit.bound_pod_requests(pod))
    return usage


def used_nodes(names: Mapping[str, object], bound_pods: Iterable[pods.Pod]) -> dict[str, nodefit.NodeUsage]:
    """`node_usage` of the nodes some running pod is on only (the others use nothing): what the operator
    rebuilds after every change of the pods, without a step per node (`names`: the nodes there are)."""
    usage: dict[str, nodefit.NodeUsage] = {}
    for pod in bound_pods:
        name = pod.spec.node_name or ""
        if name in names and not pod.finished():
            where = usage.get(name)
            if where is None:
                where = usage[name] = nodefit.NodeUsage()
            where.add(nodefit.bound_pod_requests(pod))
    return usage


_UNUSED = nodefit.NodeUsage()  # shared by every node no pod uses; copied before a write (_writable_usage)


def neighbour_checks_of(pod: pods.Pod, placed: placedpods.PlacedPods,
                        storage: volumes.Storage) -> tuple[NeighbourCheck, ...]:
    """The pod's filters against the pods around a node (NodePorts, the volume filters, PodTopologySpread,
    InterPodAffinity, in kube-scheduler's order), prepared over `placed`. Raises ValueError on a selector
    that cannot be parsed."""
    checks: list[NeighbourCheck] = [c for c in (prepare(pod, placed) for prepare in NEIGHBOUR_FILTERS_BEFORE_VOLUMES)
                                    if c]
    volume = volumes.prepare(pod, storage, placed)
    if isinstance(volume, str):
        checks.append(Everywhere(volume))
    elif volume is not None:
        checks.append(volume)
    checks += [c for c in (prepare(pod, placed) for prepare in NEIGHBOUR_FILTERS_AFTER_VOLUMES) if c]
    return tuple(checks)


_Node = nodes.Node  # the field `nodes` below hides the module inside the class


@dataclasses.dataclass(frozen=True)
class NodeTable:
    """The nodes in name order, the allocator's view of each and each name's index: what every Placer over
    the same Nodes starts from. Built once per change of the Nodes and shared (never written to): the
    operator makes a Placer per pass, and at 5,000 nodes building these took most of it (issue 31)."""

    nodes: list[_Node]
    views: list[NodeView]
    index: dict[str, int]
    by_name: dict[str, _Node]

    @classmethod
    def of(cls, node_list: Iterable[_Node]) -> NodeTable:
        ordered = sorted(node_list, key=lambda n: n.metadata.name)
        return cls(ordered, [NodeView.of(n) for n in ordered], {n.metadata.name: i for i, n in enumerate(ordered)},
                   {n.metadata.name: n for n in ordered})


# A walk that proved this many nodes unfit compares the nodes (allocation.equivalence.with_copies, once per
# slices and nodes: about half a second at 5,000 nodes) so that the rest of it, and every later walk, can
# skip the copies of nodes known not to fit; only once the allocator has failed on a quarter as many nodes
# as there are (`Placer.place`). Fitting pods, which try a node or two, never pay for it.
LONG_WALK = 16


class _SignatureAnswers:
    """What is known of the claims' shapes on nodes by signature (allocation.equivalence): the signatures
    they proved not to fit, and the reason found on a node of each signature. Kept on the slice index for
    one set of DeviceClass objects and features: true for any cluster state, as a signature holds the
    devices' state. At most MAX_SIGNATURE_ANSWERS entries: past that, all are forgotten."""

    def __init__(self, classes: tuple[object, ...]) -> None:
        self.classes = classes
        self.unfit: dict[str, set[int]] = {}
        self.reasons: dict[tuple[str, int, bool], tuple[Item, str]] = {}
        self.entries = 0
        self.failures = 0  # proven failures of the allocator on nodes: when comparing the nodes pays
        # Signatures are large nested tuples (every device's content and state) and a tuple does not keep
        # its hash: a number per signature, given once, is what the answers are keyed by. A number is
        # never given to another signature, even after a reset, so a placer holding an old one only misses.
        self._ids: dict[Hashable, int] = {}
        self._next_id = itertools.count()

    def id_of(self, signature: Hashable) -> int:
        """The signature's number (the same for equal signatures while they are remembered)."""
        found = self._ids.get(signature)
        if found is None:
            if len(self._ids) >= MAX_SIGNATURE_ANSWERS:
                self._ids.clear()
            found = self._ids[signature] = next(self._next_id)
        return found

    @classmethod
    def of(cls, snapshot: Snapshot, features: Features) -> _SignatureAnswers:
        classes = tuple(snapshot.classes.values())
        memo = snapshot.slices.memo
        known = memo.get(("answers", features))
        if (not isinstance(known, _SignatureAnswers) or len(known.classes) != len(classes)
                or any(a is not b for a, b in zip(known.classes, classes, strict=True))):
            known = memo[("answers", features)] = cls(classes)  # the classes are kept: compared by identity
        return known

    def added(self) -> None:
        self.entries += 1
        if self.entries > MAX_SIGNATURE_ANSWERS:
            self.unfit.clear()
            self.reasons.clear()
            self.entries = 0


MAX_SIGNATURE_ANSWERS = 50_000


class Placer:
    """A cluster view for placing items one after another. Pure, deterministic, not thread-safe."""

    def __init__(
        self,
        *,
        node_list: Sequence[nodes.Node] | NodeTable,  # a NodeTable is shared, not copied
        snapshot: Snapshot,
        features: Features,
        policy: str = "first-fit",
        bound_pods: Iterable[pods.Pod] = (),
        usage: Mapping[str, nodefit.NodeUsage] | None = None,  # precomputed per node name (copied), else from bound_pods
        budget: int | None = allocation.DEFAULT_BUDGET,
        placed: placedpods.PlacedPods | None = None,  # the pods on each node (forked), else from bound_pods
        storage: volumes.Storage | None = None,  # PVCs, PVs, StorageClasses, CSINodes (None: no volume exists)
    ) -> None:
        if policy not in POLICIES:
            raise ValueError(f"unknown policy {policy!r}; known: {', '.join(POLICIES)}")
        table = node_list if isinstance(node_list, NodeTable) else NodeTable.of(node_list)
        self.nodes, self.views, self.index = table.nodes, table.views, table.index
        self.snapshot = snapshot
        # Extended resources DeviceClasses serve (the classes do not change while a Placer lives).
        self.dra_backed = frozenset(extended.class_mapping(snapshot.classes.values()))
        self.features = features
        self.policy = policy
        self.budget = budget
        bound_list = list(bound_pods) if usage is None or placed is None else []
        if usage is not None:
            # Shared with the caller's cache: copied on the first write to a node (commit/release).
            self.usage = [usage.get(name, _UNUSED) for name in self.index]
            self._own_usage: set[int] = set()
        else:
            self.usage = list(node_usage(self.nodes, bound_list).values())
            self._own_usage = set(range(len(self.nodes)))
        # The pods around each node, for the filters that read them (a fork: the caller's stays as it is).
        self.placed = placed.fork() if placed is not None else placedpods.PlacedPods(table.by_name, bound_list)
        self._neighbour_checks: dict[int, tuple[int, Item, tuple[NeighbourCheck, ...]]] = {}
        self.storage = storage if storage is not None else volumes.EMPTY
        # Device use per node orders nodes for BinPack/Spread; the others never look at it.
        self.devices = ([scoring.node_use(snapshot, v, features) for v in self.views]
                        if policy in ("binpack", "spread") else [scoring.NodeUse(0, 0)] * len(self.views))
        self.model = (fragmenting.ClusterModel(snapshot=snapshot, views=self.views, node_list=self.nodes,
                                               usage=self.usage, features=features)
                      if policy == "fragmentation-aware" else None)
        # Without `expect`, the fragmentation-aware policy learns the shapes from the items it is
        # asked to place (recent arrivals), all of them weighing the same.
        self._expected = False
        self._pool_nodes: dict[tuple[str, str], list[int]] | None = None
        self._ranked: list[tuple[Fraction, int, int]] | None = None  # BinPack/Spread order, kept sorted
        self._arrivals: dict[tuple[object, ...], list[object]] = {}
        self._arrivals_since = 0
        self.release_epoch = [0] * len(self.nodes)
        self._trials = 0  # `begin_trial` calls: each stamps its failures apart
        self._failed: dict[str, dict[int, int]] = {}  # shape -> node index -> epoch of the failure
        # family -> node index -> (epoch, smallest size proven not to fit then); see `_family`.
        self._family_failed: dict[str, dict[int, tuple[int, int | Fraction]]] = {}
        self._first_unknown: dict[str, int] = {}
        # shape -> node index -> (epoch, the DeviceError met there): raised again when nothing fits.
        self._device_errors: dict[str, dict[int, tuple[int, errors.DeviceError]]] = {}
        # Nodes held for nominated pods (`hold`): node index -> (priority, uid, PodGroup) of each.
        self._held: dict[int, list[tuple[int, str, tuple[str, str] | None]]] = {}
        self._free: nodefit.FreeResources | None = None  # CPU/memory left per node, built on first use
        self._allocatable: list[nodefit.Allocatable | None] = [None] * len(self.nodes)
        self.allocator_calls = 0
        # Explanations are costly (the allocator on every node, with reasons); the cluster only
        # changes on commit/release, so an explanation stays true until the next one.
        self._changes = 0
        self._devices_by_id: dict[tuple[str, str, str], devices.Device] | None = None  # see _device_of
        self._preference_nodes: preferences.NodeSet | None = None  # built on the first pod's scores
        self._explained: dict[str, tuple[int, Item, NoPlacement]] = {}
        self._node_reasons: dict[tuple[str, int], tuple[int, Item, str]] = {}
        # Nodes the allocator cannot tell apart (allocation.equivalence): their signatures, per node
        # and change; claims' shapes proven not to fit a signature (true while it is unchanged: the
        # signature holds the devices' state); reasons found on a node whose text names none of its names.
        # These two hold whatever the signature holds, so they stay true while the slices, classes and
        # features do: shared by every Placer over them (the operator makes one per pass), bounded.
        self._signatures: dict[int, tuple[int, int | None]] = {}
        answers = _SignatureAnswers.of(snapshot, features)
        self._unfit_signatures: dict[str, set[int]] = answers.unfit
        self._signature_reasons: dict[tuple[str, int, bool], tuple[Item, str]] = answers.reasons
        self._answers = answers
        self._shapes = _Shapes(capacity_monotone=self._no_request_policies)
        # Whether reasons count the devices others use (the CLI's and simulate's detail); the operator
        # turns it off: a pod is told why its claims do not fit, not how busy each node is.
        self.usage_in_reasons = True

    def _no_request_policies(self) -> bool:
        """Whether no published device declares a capacity request policy (see `_family`)."""
        return all(c.request_policy is None for s in self.snapshot.slices.slices for d in s.spec.devices
                   for c in d.capacity.values())

    # ---- deciding ---------------------------------------------------------------------

    def shape(self, item: Item) -> str:
        """What decides whether the item fits a node (claims' specs, shared claims, the pod's
        scheduling constraints), without names: items of one shape are interchangeable."""
        return self._shapes.of(item)

    def expect(self, items: Iterable[Item]) -> None:
        """The fragmentation-aware policy's distribution of request shapes: these items (a queue,
        a whole workload), each counting once. No effect under the other policies."""
        if self.model is None:
            return
        counts: dict[tuple[object, ...], list[object]] = {}
        for item in items:
            shape = self._model_shape(item)
            if shape is not None:
                entry = counts.setdefault(shape.key(), [shape, 0])
                entry[1] = int(entry[1]) + 1  # type: ignore[call-overload]
        self.model.expect((s, w) for s, w in counts.values())  # type: ignore[misc]
        self._expected = True

    def expect_as(self, other: Placer) -> None:
        """What `other` was told to expect (`expect`), for a placer that replaces it within a scheduling pass
        (after a preemption or an error): without it, the rest of the pass would weigh choices by the
        arrivals alone."""
        if self.model is None or other.model is None or not other._expected:
            return
        self.model.expect_as(other.model)
        self._expected = True

    def _model_shape(self, item: Item) -> fragmentation.Shape | None:
        assert self.model is not None
        if item.allocated:
            return None  # a shared claim pins nodes: not a shape the measure describes
        requests = nodefit.pod_requests(item.pod) if item.pod is not None else None
        return self.model.shape(item.claims, requests)

    def _learn(self, shape: fragmentation.Shape) -> None:
        """An arrival joins the distribution; the measure is rebuilt for a new shape, and every
        256 arrivals for the weights (each rebuild forgets the memoized choices)."""
        assert self.model is not None
        key = shape.key()
        entry = self._arrivals.get(key)
        self._arrivals_since += 1
        if entry is None:
            self._arrivals[key] = [shape, 1]
        else:
            entry[1] = int(entry[1]) + 1  # type: ignore[call-overload]
        if entry is None or self._arrivals_since >= 256:
            self._arrivals_since = 0
            self.model.expect((s, w) for s, w in self._arrivals.values())  # type: ignore[misc]

    def _candidates(self, item: Item, shape: str) -> Iterable[tuple[int, tuple[DeviceID, ...]]]:
        """Node indexes in the order to try them, each with devices to try first."""
        scores = self.preference_scores(item)
        if self.model is None:
            order = self._order(shape) if scores is None else self._preferred_order(scores.total)
            return ((index, ()) for index in order)
        model_shape = self._model_shape(item)
        if model_shape is None:
            # No model order: by preference, then name, as FirstFit.
            order = range(len(self.nodes)) if scores is None else _by_preference(range(len(self.nodes)), scores.total)
            return ((index, ()) for index in order)
        if not self._expected:
            self._learn(model_shape)
        return self.model.order(model_shape, preference=None if scores is None else scores.total)

    def preference_scores(self, item: Item) -> preferences.Scores | None:
        """The item's pod's preference per node (kube-scheduler's scores of preferred affinity, ScheduleAnyway
        spread, PreferNoSchedule taints); None when it prefers no node over another. Computed afresh on
        every call, never kept: the pods placed change it. Raises InvalidPodSpec."""
        if item.pod is None:
            return None
        if self._preference_nodes is None:
            self._preference_nodes = preferences.NodeSet(self.nodes)
        try:
            return preferences.prepare(item.pod, self.placed, self._preference_nodes)
        except ValueError as exc:  # the message names the pod and the field
            raise InvalidPodSpec(str(exc)) from exc

    def _preferred_order(self, total: Sequence[int]) -> list[int]:
        """Every node, for a pod with preferences: BinPack/Spread by device use first and the preference
        among equal use; FirstFit, whose only order is the name, by preference, then name. Not from
        `_first_unknown` (it assumes name order): the caller skips known failures node by node."""
        if self.policy in ("binpack", "spread"):
            if self._ranked is None:
                self._ranked = sorted(self._rank_key(i) for i in range(len(self.nodes)))
            # Stable: among equal use and equal preference, name order stays.
            return [entry[2] for entry in sorted(self._ranked, key=lambda entry: (entry[0], -total[entry[2]]))]
        return _by_preference(range(len(self.nodes)), total)

    def _allocatable_of(self, index: int) -> nodefit.Allocatable:
        """Node `index`'s allocatable in nano-units, converted once (node fit asks it per item)."""
        known = self._allocatable[index]
        if known is None:
            known = self._allocatable[index] = nodefit.allocatable_amounts(self.nodes[index])
        return known

    def _room_check(self, requests: Mapping[str, int] | None) -> tuple[nodefit.FreeResources, int, int] | None:
        """What the quick CPU/memory check needs for a pod that asks for either, else None."""
        if not requests:
            return None
        cpu, memory = requests.get("cpu", 0), requests.get("memory", 0)
        if cpu <= 0 and memory <= 0:
            return None
        if self._free is None:
            self._free = nodefit.FreeResources([self._allocatable_of(i) for i in range(len(self.nodes))],
                                               self.usage)
        return self._free, cpu if cpu > 0 else nodefit.NO_NEED, memory if memory > 0 else nodefit.NO_NEED

    def _order(self, shape: str) -> Iterable[int]:
        if self.policy in ("first-fit", "fragmentation-aware"):
            return range(self._first_unknown.get(shape, 0), len(self.nodes))
        if self._ranked is None:
            self._ranked = sorted(self._rank_key(i) for i in range(len(self.nodes)))
        return [entry[2] for entry in self._ranked]

    def _rank_key(self, index: int) -> tuple[Fraction, int, int]:
        """BinPack/Spread order: use (most or least first), then name (index order is name order)."""
        sign = -1 if self.policy == "binpack" else 1
        return sign * self.devices[index].fraction, index, index

    def _known_failure(self, shape: str, index: int) -> bool:
        epoch = self._failed.get(shape, {}).get(index)
        if epoch is not None and epoch == self.release_epoch[index]:
            return True
        family = self._shapes.family.get(shape)
        if family is None:
            return False
        smaller = self._family_failed.get(family[0], {}).get(index)
        return smaller is not None and smaller[0] == self.release_epoch[index] and family[1] >= smaller[1]

    def _record_failure(self, shape: str, index: int, *, proven: bool = False) -> None:
        """Remember that the shape does not fit node `index` (`proven`: the allocator said so)."""
        epoch = self.release_epoch[index]
        self._failed.setdefault(shape, {})[index] = epoch
        family = self._shapes.family.get(shape)
        if proven and family is not None:
            known = self._family_failed.setdefault(family[0], {})
            smaller = known.get(index)
            if smaller is None or smaller[0] != epoch or family[1] < smaller[1]:
                known[index] = (epoch, family[1])
        self._advance(shape)

    def _signature(self, index: int, *, build: bool = True) -> int | None:
        """Node `index` as the allocator sees it, without names (allocation.equivalence), for this change, as
        the number `_SignatureAnswers.id_of` gives it; None for a node without copies, and (`build` False)
        before the nodes were compared at all."""
        known = self._signatures.get(index)
        if known is not None and known[0] == self._changes:
            return known[1]
        copies = equivalence.with_copies(self.snapshot, self.views, self.features, build=build)
        if copies is None or not copies[index]:
            return None  # no other node like it: nothing to share
        found = equivalence.signature(self.snapshot, self.views[index], self.features)
        number = None if found is None else self._answers.id_of(found)
        self._signatures[index] = (self._changes, number)
        return number

    def _advance(self, shape: str) -> None:
        first = self._first_unknown.get(shape, 0)
        while first < len(self.nodes) and self._known_failure(shape, first):
            first += 1
        self._first_unknown[shape] = first

    def _node_allows_shared(self, item: Item, index: int) -> bool:
        view = self.views[index]
        for claim in item.allocated:
            allocation_ = claim.status.allocation
            if allocation_ is None or allocation_.node_selector is None:
                continue
            try:
                if not nodeaffinity.selector_matches(allocation_.node_selector, view.name, view.labels):
                    return False
            except ValueError:
                return False
        return True

    def _writable_usage(self, index: int) -> nodefit.NodeUsage:
        if index not in self._own_usage:
            shared = self.usage[index]
            self.usage[index] = nodefit.NodeUsage(dict(shared.requests), shared.pods)
            self._own_usage.add(index)
        return self.usage[index]

    def misfit(self, item: Item, index: int, requests: Mapping[str, int] | None = None, *,
               binding: bool = False) -> str | None:
        """Why the item cannot go to node `index` regardless of devices; None if it can. `binding`: see
        `nodefit.misfit` (completing a bind decided earlier: the pods around the node are not asked
        again, as kube-scheduler's binding cycle does not filter again)."""
        reason = self._own_misfit(item, index, requests, binding=binding)
        if binding:
            return reason
        if reason is None:
            return self.neighbour_misfit(item, index)
        if nodefit.is_resources_reason(reason):
            # kube-scheduler's NodePorts runs before NodeResourcesFit: a node short of both says ports.
            for check in self.neighbour_checks(item):
                if isinstance(check, nodeports.Check):
                    return check.reject(self.nodes[index]) or reason
        return reason

    def neighbour_checks(self, item: Item) -> tuple[NeighbourCheck, ...]:
        """The item's pod's filters against the pods around a node, prepared once per pod and per change
        of the placer (a commit or release changes what they count). Raises InvalidPodSpec."""
        if item.pod is None:
            return ()
        known = self._neighbour_checks.get(id(item))
        if known is not None and known[0] == self._changes and known[1] is item:
            return known[2]
        try:
            checks = neighbour_checks_of(item.pod, self.placed, self.storage)
        except ValueError as exc:  # the filters' messages name the pod and the field
            raise InvalidPodSpec(str(exc)) from exc
        if len(self._neighbour_checks) >= 1024:
            self._neighbour_checks.clear()
        self._neighbour_checks[id(item)] = (self._changes, item, checks)
        return checks

    def _volume_plan(self, checks: Sequence[NeighbourCheck], index: int) -> volumes.VolumePlan | None:
        """What placing the pod on node `index` asks of the volume writer (None: nothing to bind)."""
        for check in checks:
            if isinstance(check, volumes.Check) and check.binds:
                plan = check.plan(self.nodes[index])
                if plan is not None and (plan.static or plan.provision):
                    return plan
        return None

    def neighbour_misfit(self, item: Item, index: int) -> str | None:
        """Why the pods around node `index` keep the item's pod off it (kube-scheduler's reason); None
        when they do not."""
        node = self.nodes[index]
        for check in self.neighbour_checks(item):
            reason = check.reject(node)
            if reason is not None:
                return reason
        return None

    def _own_misfit(self, item: Item, index: int, requests: Mapping[str, int] | None = None, *,
                    binding: bool = False) -> str | None:
        """The item's own constraints and the node's resources (remembered per shape when they fail)."""
        if item.pod is not None and not binding and self.held_against(item.pod, index):
            return HELD_FOR_NOMINATED
        if item.pod is not None:
            wanted = requests if requests is not None else nodefit.pod_requests(item.pod)
            reason = nodefit.misfit(item.pod, self.nodes[index], self.usage[index], wanted,
                                    allocatable=self._allocatable_of(index),
                                    dra_backed=self.dra_backed, binding=binding)
            if reason is not None:
                return reason
        if not self._node_allows_shared(item, index):
            return "a shared claim is allocated for other nodes"
        return None

    def node_allocatable(self, item: Item, index: int, results: Sequence[model_claims.AllocationResult],
                         requests: Mapping[str, int] | None = None,
                         ) -> tuple[tuple[dict[str, object], ...], str | None]:
        """DRANodeAllocatableResources after the claims were allocated on node `index`: the pod's
        status entries, and why its requests plus its devices' node resources do not fit the
        node (None when they do). kube-scheduler's DynamicResources Filter, after allocating."""
        if not self.features.node_allocatable_resources or item.pod is None:
            return (), None
        pod = item.pod
        device_of = self._device_of
        footprints = []
        try:
            for claim, result in zip(item.claims, results, strict=True):
                found = nodeallocatable.claim_footprint(claim.ref(), result.devices.results, device_of)
                if found is not None:
                    footprints.append(found)
            for claim in item.allocated:
                allocated = claim.status.allocation
                if allocated is None:
                    continue
                found = nodeallocatable.claim_footprint(claim.ref(), allocated.devices.results, device_of)
                shared = nodeallocatable.shared_mapped_claim(claim, pod.metadata.uid or "", found)
                if shared is not None:
                    return (), shared
                if found is not None:
                    footprints.append(found)
        except nodeallocatable.NodeAllocatableError as exc:
            return (), str(exc)
        statuses = nodeallocatable.pod_statuses(pod, footprints)
        if not statuses:
            return (), None
        demand = dict(requests if requests is not None else nodefit.pod_requests(pod))
        for name, amount in nodeallocatable.status_demand(statuses).items():
            demand[name] = demand.get(name, 0) + amount
        reasons = nodeallocatable.insufficient(demand, self.nodes[index].status.allocatable,
                                               self.usage[index].requests)
        if reasons:
            return (), ", ".join(reasons) + " (the pod's requests plus its devices' nodeAllocatableResources)"
        return tuple(statuses), None

    def _device_of(self, driver: str, pool: str, name: str) -> devices.Device | None:
        index = self._devices_by_id
        if index is None:
            index = {(s.spec.driver, s.spec.pool.name, d.name): d
                     for s in self.snapshot.slices.slices for d in s.spec.devices}
            self._devices_by_id = index
        return index.get((driver, pool, name))

    def place(self, item: Item, *, explain: bool = True) -> Placement | NoPlacement:
        """The item's placement, or why there is none.

        `explain=False` leaves the reasons out (a NoPlacement with none, `explained` False):
        explaining runs the allocator with reasons on every node, as costly as the search
        itself; a caller that only adds placements (simulate) explains the items left over
        at the end with `explanation`, which is still true then (the free set only shrank).
        """
        shape = self._shapes.of(item)
        device_shape = self._device_shape(item)
        if self.policy == "first-fit":
            if shape in self._shapes.family:
                self._advance(shape)  # a smaller size of its family may have failed on the next nodes
            if device_shape is not None:
                # A pod cannot go where its claims alone are known not to fit: pods that differ
                # only in CPU and memory (each its own shape) start where their claims' walk is.
                self._advance(device_shape)
                first = self._first_unknown.get(device_shape, 0)
                if first > self._first_unknown.get(shape, 0):
                    self._first_unknown[shape] = first
                    self._advance(shape)
        exhausted = False
        requests = nodefit.pod_requests(item.pod) if item.pod is not None else None
        room = self._room_check(requests)
        neighbours = self.neighbour_checks(item)
        device_error: errors.DeviceError | None = None
        interrupt = interruption.current()
        failures = 0  # nodes where the allocator proved the claims do not fit, in this walk
        for tried, (index, prefer) in enumerate(self._candidates(item, shape)):
            if interrupt is not None and not tried % NODES_BETWEEN_CHECKS and interrupt():
                raise interruption.Interrupted
            if self._known_failure(shape, index):
                continue
            # The claims' own failures first: a few lookups, where node fit reads the whole pod.
            if device_shape is not None and self._known_failure(device_shape, index):
                self._record_failure(shape, index)  # the claims failed there, for another pod of theirs
                continue
            if room is not None and not room[0].has_room(index, room[1], room[2]):
                self._record_failure(shape, index)  # node fit would refuse it for CPU or memory
                continue
            if self._own_misfit(item, index, requests) is not None:
                self._record_failure(shape, index)
                continue
            if neighbours and self.neighbour_misfit(item, index) is not None:
                continue  # not remembered: a pod placed can make the node fit again
            claims_shape = device_shape if device_shape is not None else shape
            unfit = self._unfit_signatures.get(claims_shape)
            if unfit and self._signature(index, build=False) in unfit:
                # A node the allocator cannot tell from one where these claims proved not to fit.
                self._record_failure(shape, index, proven=True)
                if device_shape is not None:
                    self._record_failure(device_shape, index, proven=True)
                continue
            self.allocator_calls += 1
            try:
                outcome = allocation.allocate(
                    self.snapshot, item.claims, self.views[index], features=self.features,
                    budget=self.budget, explain=False, prefer=prefer,
                )
            except errors.InvalidPoolOnNodeError:
                # Upstream's ErrFailedAllocationOnNode: this node does not fit; others may.
                self._record_failure(shape, index)
                continue
            except errors.DeviceError as exc:
                # Met on one of this node's devices: another node may fit (a deliberate difference,
                # see the module docstring); raised when none does.
                device_error = device_error or exc
                self._device_errors.setdefault(shape, {})[index] = (self.release_epoch[index], exc)
                self._record_failure(shape, index)
                continue
            if isinstance(outcome, outcomes.Allocated):
                statuses, refused = self.node_allocatable(item, index, outcome.results, requests)
                if refused is None:
                    return Placement(self.nodes[index].metadata.name, outcome.results, outcome.steps,
                                     node_allocatable=statuses, volumes=self._volume_plan(neighbours, index))
                # The devices' node resources do not fit with the pod's (upstream checks only the
                # allocation it found, too): this node fails for the pod, not for its claims.
                self._record_failure(shape, index, proven=True)
                continue
            if isinstance(outcome, outcomes.BudgetExhausted):
                exhausted = True  # not a proven failure: do not remember it
                continue
            self._record_failure(shape, index, proven=True)
            if device_shape is not None:
                self._record_failure(device_shape, index, proven=True)
            # Only nodes with copies have a signature (equivalence.with_copies): elsewhere this costs
            # nothing. The nodes are first compared when a walk proves LONG_WALK failures and the
            # allocator has failed on a quarter as many nodes as there are since the slices changed:
            # comparing costs about an allocator call per node, paid only once as much was spent.
            failures += 1
            self._answers.failures += 1
            signature = self._signature(index, build=failures >= LONG_WALK
                                        and self._answers.failures * 4 >= len(self.nodes))
            if signature is not None:
                self._answers.added()
                self._unfit_signatures.setdefault(claims_shape, set()).add(signature)
        if device_error is None:
            # Met by an earlier item of this shape on a node this one skipped as a known failure.
            current = [(index, exc) for index, (epoch, exc) in self._device_errors.get(shape, {}).items()
                       if epoch == self.release_epoch[index]]
            device_error = min(current, key=lambda entry: entry[0])[1] if current else None
        if device_error is not None:
            raise device_error
        if not explain:
            self._shapes.unplaced(item, shape)
            return NoPlacement((), exhausted, explained=False)
        return self.explanation(item, budget_exhausted=exhausted)

    def explanation(self, item: Item, *, budget_exhausted: bool = False) -> NoPlacement:
        """`explain`, remembered per shape until the cluster changes (shared by items of one shape)."""
        shape = self._shapes.of(item, remembered=True)
        if self.neighbour_checks(item) and item.pod is not None:
            # What the pods around a node say depends on the pod's labels and namespace, not in its shape.
            meta = item.pod.metadata
            shape += json.dumps([meta.namespace or "", sorted(meta.labels.items()), meta.uid or ""])
        exhausted = budget_exhausted
        cached = self._explained.get(shape)
        if cached is not None and cached[0] == self._changes and cached[2].budget_exhausted == exhausted:
            return _renamed(cached[2], cached[1], item)
        explanation = self.explain(item, budget_exhausted=exhausted)
        self._explained[shape] = (self._changes, item, explanation)
        return explanation

    def _device_shape(self, item: Item) -> str | None:
        """The shape of the item's claims alone, for a pod: what the allocator's answer depends on.
        A pod's shape also holds its resources and constraints, so pods differing only there (as
        trace tasks do in CPU and memory) share the allocator's failures and reasons."""
        if item.pod is None:
            return None
        return self._shapes.of(Item(item.name, claims=item.claims))

    def explain(self, item: Item, *, budget_exhausted: bool = False) -> NoPlacement:
        """Why the item fits nowhere, grouped by reason. Runs the allocator with explanations."""
        grouped: dict[str, list[str]] = {}
        device_shape = self._shapes.of(Item(item.name, claims=item.claims))
        renamers: dict[int, Callable[[str], str] | None] = {}  # per item explained before: one regex
        requests = nodefit.pod_requests(item.pod) if item.pod is not None else None
        interrupt = interruption.current()
        for index, node in enumerate(self.nodes):
            if interrupt is not None and not index % NODES_BETWEEN_CHECKS and interrupt():
                raise interruption.Interrupted
            reason = self.misfit(item, index, requests)
            if reason is None:
                # The allocator's reason on a node depends on the claims and the cluster only:
                # remembered per claims' shape and node until the next change.
                cached = self._node_reasons.get((device_shape, index))
                signature = self._signature(index) if cached is None or cached[0] != self._changes else None
                if signature is not None:
                    # The reason found on an equivalent node, when it names none of that node's names.
                    alike = self._signature_reasons.get((device_shape, signature, self.usage_in_reasons))
                    if alike is not None:
                        cached = (self._changes, *alike)
                if cached is not None and cached[0] == self._changes:
                    if id(cached[1]) not in renamers:
                        renamers[id(cached[1])] = _renamer(cached[1], item)
                    rename = renamers[id(cached[1])]
                    reason = cached[2] if rename is None else rename(cached[2])
                else:
                    try:
                        outcome = allocation.allocate(
                            self.snapshot, item.claims, self.views[index], features=self.features,
                            budget=self.budget,
                        )
                    except errors.InvalidPoolOnNodeError as exc:
                        reason = str(exc)
                    else:
                        if isinstance(outcome, outcomes.Allocated):
                            refused = self.node_allocatable(item, index, outcome.results)[1]
                            if refused is None:
                                continue  # fits now (only when called directly, not after place())
                            grouped.setdefault(refused, []).append(node.metadata.name)
                            continue  # the pod's own resources: not remembered for its claims' shape
                        reason = outcome.message(usage=self.usage_in_reasons)
                    self._node_reasons[(device_shape, index)] = (self._changes, item, reason)
                    if signature is not None and not any(
                            name in reason for name in equivalence.names_of(self.snapshot, self.views[index],
                                                                            self.features)):
                        self._answers.added()
                        self._signature_reasons[(device_shape, signature, self.usage_in_reasons)] = (item, reason)
            grouped.setdefault(reason, []).append(node.metadata.name)
        ordered = sorted(grouped.items(), key=lambda kv: (-len(kv[1]), kv[0]))
        return NoPlacement(tuple((r, tuple(sorted(ns))) for r, ns in ordered), budget_exhausted)

    # ---- keeping the view current -----------------------------------------------------

    def commit(self, item: Item, placement: Placement) -> None:
        """Record a placement: its devices are in use, its pod's requests count on the node, the volumes
        it binds are taken (for the rest of the pass; the writer is kube-scheduler's, in gate mode)."""
        index = self.index[placement.node]
        if placement.volumes is not None:
            self.storage = volumes.assume(self.storage, placement.volumes)
        self._changes += 1
        self.snapshot = self.snapshot.with_allocations(placement.results, self.features)
        if item.pod is not None:
            requests = nodefit.pod_requests(item.pod)
            for name, amount in nodeallocatable.status_demand(placement.node_allocatable).items():
                requests[name] = requests.get(name, 0) + amount
            self._writable_usage(index).add(requests)
            if self._free is not None:
                self._free.update(index, self._allocatable_of(index), self.usage[index])
            self.placed.add(item.pod, placement.node)
        self._refresh_use(placement.results, extra_node=index)

    def members_apart(self, members: Sequence[Item]) -> MembersApart | None:
        """For a gang: whether member i may go to a node given the members placed before it, by what relates
        pods on different nodes (required pod affinity and anti-affinity, including between members, and
        the member's DoNotSchedule topology spread counting the members already placed), as kube-scheduler
        would see it placing them one after another. None when no member has such a rule (nothing to ask).
        Raises InvalidPodSpec."""
        pods_ = [m.pod for m in members]
        if any(p is None for p in pods_):
            return None
        related = any(placedpods.has_required_affinity(p) or placedpods.has_required_anti_affinity(p)
                      for p in pods_ if p is not None)
        checks: list[list[topologyspread.Check | podaffinity.Check]] = []
        for member in members:
            pod = member.pod
            assert pod is not None
            mine: list[topologyspread.Check | podaffinity.Check] = [
                c for c in self.neighbour_checks(member) if isinstance(c, topologyspread.Check)]
            if related:
                try:
                    affinity = podaffinity.prepare(pod, self.placed, always=True)
                except ValueError as exc:
                    raise InvalidPodSpec(str(exc)) from exc
                if affinity is not None:
                    mine.append(affinity)
            checks.append(mine)
        if not any(checks):
            return None
        nodes_by_name = self.placed.nodes

        def allow(index: int, node_name: str, before: Sequence[tuple[int, str]]) -> bool:
            node = nodes_by_name.get(node_name)
            if node is None or not checks[index]:
                return node is not None
            extra = [(p, nodes_by_name[name]) for i, name in before
                     if (p := pods_[i]) is not None and name in nodes_by_name]
            return all(check.with_pods(extra).reject(node) is None for check in checks[index])

        return allow

    def held_against(self, pod: pods.Pod, index: int) -> bool:
        """Whether node `index` is held for another nominated pod the pod must not overtake: one of higher
        priority, or of equal priority when the pod is not nominated there itself (pods nominated to one
        node with one priority compete by fit, as kube-scheduler's nominated pods do); never a member of
        the pod's own PodGroup."""
        held = self._held.get(index)
        if not held:
            return False
        mine, group, uid = pod.spec.priority or 0, _group_of(pod), pod.metadata.uid
        here = pod.status.nominated_node_name == self.nodes[index].metadata.name
        return any((priority > mine or (priority == mine and not here)) and other != uid
                   and (holder is None or holder != group) for priority, other, holder in held)

    def hold(self, node_name: str, pod: pods.Pod) -> None:
        """A pod nominated to the node (`status.nominatedNodeName`: room is being made there for it by
        preemption): until it is placed, no pod of equal or lower priority is placed on that node.
        kube-scheduler counts the nominated pod's requests there instead; which devices the nominated pod
        will take is only known when it is allocated, so here the whole node waits for it. Members of the
        nominated pod's own PodGroup are not held off: a gang preempts as one, its members together."""
        index = self.index.get(node_name)
        if index is None:
            return
        self._changes += 1
        self._held.setdefault(index, []).append((pod.spec.priority or 0, pod.metadata.uid or "", _group_of(pod)))

    def assume(self, pod: pods.Pod, node_name: str) -> None:
        """A pod placed on the node whose binding the view does not show yet (kube-scheduler's assumed
        pods): its requests and its presence count there, as if bound. Its devices are the ledger's."""
        index = self.index.get(node_name)
        if index is None or pod.finished():
            return
        self._changes += 1
        self._writable_usage(index).add(nodefit.bound_pod_requests(pod))
        if self._free is not None:
            self._free.update(index, self._allocatable_of(index), self.usage[index])
        self.placed.add(pod, node_name)

    def fork(self) -> Placer:
        """A copy to try things on (remove pods, release their devices) without changing this one: the
        nodes, the devices in use, the pods around each node and the held nodes as they are now, nothing
        remembered of earlier decisions. It ranks nodes first-fit (what a trial asks is whether
        something fits, not where it would go best)."""
        twin = copy.copy(self)
        twin.policy = "first-fit"
        twin.model = None
        twin.usage = list(self.usage)
        twin._own_usage = set()  # copied on the first write to a node (`_writable_usage`)
        twin.placed = self.placed.fork()
        twin._held = {index: list(held) for index, held in self._held.items()}
        twin.release_epoch = list(self.release_epoch)
        twin._failed, twin._family_failed, twin._first_unknown, twin._device_errors = {}, {}, {}, {}
        twin._neighbour_checks, twin._explained, twin._node_reasons = {}, {}, {}
        twin._signatures = {}  # the shared answers stay shared: they hold for any state
        twin._free, twin._ranked, twin._pool_nodes = None, None, None
        twin._arrivals, twin._arrivals_since = {}, 0
        twin._changes = self._changes + 1
        twin.allocator_calls = 0
        return twin

    @property
    def changes(self) -> int:
        """A number that changes whenever the cluster view does (a commit, a release, a trial's end): what
        was found of it under one number holds while the number stays."""
        return self._changes

    def begin_trial(self) -> Callable[[], None]:
        """Placements to be tried and undone (`dralloc simulate --batch`): the failures remembered so far
        are set aside while the trial's own are stamped apart, and the returned function brings them back.
        The caller must `release` everything it committed since, in reverse order, before calling it: the
        cluster is then as it was, so what failed before the trial fails again, and what failed during it
        (with the trial's placements in the way) is forgotten."""
        saved_epochs, saved_first = self.release_epoch, dict(self._first_unknown)
        self._trials += 1
        # Negative and far apart: never an epoch of the real run (from 0 up), nor of another trial
        # after the trial's own releases (each adds 1).
        self.release_epoch = [-(self._trials << 32)] * len(self.nodes)

        def end() -> None:
            self.release_epoch, self._first_unknown = saved_epochs, saved_first
            self._changes += 1
        return end

    def release(self, node_name: str, results: Sequence[model_claims.AllocationResult], pod: pods.Pod | None) -> None:
        """Undo a placement (claim deallocated, pod gone): failures on that node no longer hold."""
        index = self.index.get(node_name)
        self._changes += 1
        self.snapshot = self.snapshot.without_allocations(results, self.features)
        if index is not None and pod is not None:
            self._writable_usage(index).remove(nodefit.bound_pod_requests(pod))
            if self._free is not None:
                self._free.update(index, self._allocatable_of(index), self.usage[index])
            self.placed.remove(pod, node_name)
        # Released devices may sit in pools many nodes can use (allNodes, node selectors), and a
        # pod's resources free only its node: forgetting every failure is the simple exact answer.
        self.release_epoch = [epoch + 1 for epoch in self.release_epoch]
        self._first_unknown.clear()
        self._refresh_use(results, extra_node=index)

    def _refresh_use(self, results: Sequence[model_claims.AllocationResult], *, extra_node: int | None) -> None:
        if self.policy == "first-fit":
            return  # node order does not depend on use
        if self.model is not None:
            self._refresh_model(results, extra_node=extra_node)
            return
        touched = {extra_node} if extra_node is not None else set()
        pools = {(r.driver, r.pool) for a in results for r in a.devices.results}
        if pools:
            if self._pool_nodes is None:
                # Which nodes see each pool: the slices do not change while a Placer lives, and
                # asking every node per commit made BinPack and Spread quadratic on large clusters.
                self._pool_nodes = {}
                for i, view in enumerate(self.views):
                    for pool in self.snapshot.slices.pools_for(view, self.features):
                        self._pool_nodes.setdefault((pool.id.driver, pool.id.pool), []).append(i)
            for key in pools:
                touched.update(self._pool_nodes.get(key, ()))
        for i in touched:
            if i is not None:
                before = self._rank_key(i)
                self.devices[i] = scoring.node_use(self.snapshot, self.views[i], self.features)
                if self._ranked is not None and before != self._rank_key(i):
                    # Kept sorted by moving the one entry: sorting every node per decision, on
                    # Fractions, was most of a BinPack run on 1,213 nodes.
                    del self._ranked[bisect.bisect_left(self._ranked, before)]
                    bisect.insort(self._ranked, self._rank_key(i))

    def _refresh_model(self, results: Sequence[model_claims.AllocationResult], *, extra_node: int | None) -> None:
        assert self.model is not None
        touched = {extra_node} if extra_node is not None else set()
        for allocation_ in results:
            for result in allocation_.devices.results:
                touched.update(self.model.nodes_of_pool.get((result.driver, result.pool), ()))
        for i in sorted(touched):
            self.model.refresh(i, self.snapshot.allocated, self.usage[i])
