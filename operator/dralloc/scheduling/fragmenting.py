"""The cluster and items as the fragmentation measure sees them (`allocation.fragmentation`).

`ClusterModel` turns what the Placer holds (nodes, the allocator snapshot, the
resources pods use per node) into per-node states for the measure, turns an item
into a `Shape`, keeps the states current as placements are committed, and
answers "in which order should this item try the nodes, and which devices first".

What is modelled: `exactly` requests in ExactCount mode (a firstAvailable request
by its first subrequest), their class and request selectors and the capacity the
allocator would consume (request policies applied); partitions (devices that cannot
be shared, each drawing on one counter set of its pool) as their counter set, one
shareable device whose capacities are the set's counters, which a request takes what
its partition takes of; CPU and memory of a pod. A device drawing on several counter
sets is measured as a device of its own, as if the counters were not there (the
model may see room the allocator refuses, never the other way round). A request
whose devices must share attributes (matchAttribute constraints covering that request
alone: a topology domain such as an NVLink island) is measured per domain: it fits a
node where one domain has room for all of it, and only such domains' devices serve it.
What is not modelled (other constraints, All mode, admin access) is simply not
measured: an item whose shape cannot be modelled gets no device preference and tries
the nodes by name, and a shape that cannot be modelled does not count in the
distribution. The allocator decides every placement, so a model that is only an
approximation can make a choice worse, never invalid.

Devices are grouped by signature (driver, attributes, capacities, shareable):
selectors are evaluated once per signature, not once per device, which is what
keeps this cheap on thousands of identical GPUs.
"""

from __future__ import annotations

import bisect
import dataclasses
import heapq
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from fractions import Fraction

from dralloc.allocation import capacity, constraints, errors, selectors
from dralloc.allocation.features import Features
from dralloc.allocation.fragmentation import (
    Amount,
    DeviceDemand,
    DeviceState,
    Key,
    Measure,
    NodeState,
    Shape,
    Signature,
)
from dralloc.allocation.pools import DeviceID, DeviceInfo, NodeView, Pool
from dralloc.allocation.snapshots import AllocatedState, Snapshot
from dralloc.model import claims as model_claims
from dralloc.model import classes as model_classes
from dralloc.model import devices
from dralloc.model import nodes as model_nodes
from dralloc.scheduling import nodefit

RESOURCES = ("cpu", "memory")  # node resources whose stranding the measure counts
UNLIMITED = 2**62  # a node that does not advertise a resource does not limit it here


def _exact(value: Fraction) -> Amount:
    """Whole amounts as ints: the measure compares them millions of times, ints are cheaper."""
    return value.numerator if value.denominator == 1 else value


def _nano(value: int) -> Amount:
    """An amount in nano-units (as counters are kept) as the measure's exact amount."""
    return _exact(Fraction(value, 10**9))


@dataclasses.dataclass
class CounterSet:
    """A pool's counter set as the measure sees it: one shareable device whose capacities are the
    set's counters, used up by the allocated devices that draw on it (the pool's, wherever they
    are published); `members` are the partitions of it the node can use, in the allocator's order."""

    driver: str
    pool: str
    name: str
    totals: dict[str, int]  # counter -> total, nano-units
    consumers: list[tuple[DeviceInfo, dict[str, int]]]
    members: list[DeviceInfo] = dataclasses.field(default_factory=list)

    @classmethod
    def of(cls, pool: Pool, name: str) -> CounterSet:
        consumers = [(info, dict(counters)) for info in pool.counter_consumers
                     for set_name, counters in info.consumes if set_name == name]
        return cls(pool.id.driver, pool.id.pool, name, dict(pool.counter_sets[name]), consumers)

    def taken(self, info: DeviceInfo, names: Sequence[str]) -> tuple[Amount, ...]:
        """What the device takes of each counter (names in order), when allocated."""
        counters = next((dict(c) for set_name, c in info.consumes if set_name == self.name), {})
        return tuple(_nano(counters.get(name, 0)) for name in names)

    def free(self, names: Sequence[str], allocated: AllocatedState) -> tuple[Amount, ...]:
        used = dict.fromkeys(names, 0)
        for info, counters in self.consumers:
            if info.id in allocated.exclusive or info.id in allocated.shared:
                for counter, amount in counters.items():
                    if counter in used:
                        used[counter] += amount
        return tuple(_nano(max(self.totals[name] - used[name], 0)) for name in names)


def _request_key(request: model_claims.ExactDeviceRequest | model_claims.DeviceSubRequest) -> str:
    return json.dumps(request.model_dump(mode="json", by_alias=True, exclude_defaults=True), sort_keys=True)


class ClusterModel:
    """Per-node device and resource states for the fragmentation measure. Pure, not thread-safe."""

    def __init__(self, *, snapshot: Snapshot, views: Sequence[NodeView], node_list: Sequence[model_nodes.Node],
                 usage: Sequence[nodefit.NodeUsage], features: Features) -> None:
        self.features = features
        self.view = selectors.view_of(features)
        self.classes = snapshot.classes
        self._signature_of: dict[tuple[object, ...], int] = {}
        self._dumps: dict[int, tuple[object, str]] = {}
        self.signatures: list[Signature] = []
        self.representatives: list[DeviceInfo] = []
        self.dimensions: list[tuple[str, ...]] = []  # capacity names per signature ((): one unit)
        # Per node, the measure's devices in the allocator's order: devices, and counter sets
        # standing for the partitions that draw on them; with the devices each stands for.
        self.devices: list[list[DeviceInfo | CounterSet]] = []
        self.device_ids: list[list[tuple[DeviceID, ...]]] = []
        self.device_signatures: list[list[int]] = []
        self._members: dict[int, list[tuple[DeviceInfo, tuple[Amount, ...]]]] = {}  # counter set signatures
        seen: set[DeviceID] = set()
        seen_sets: set[tuple[str, str, str]] = set()
        # Whether each node's state is all that decides the model's fit there: not so when some
        # device is usable from several nodes (measured on the first only, below).
        self.exact = True
        for view in views:
            units: list[DeviceInfo | CounterSet] = []
            sets: dict[tuple[str, str, str], CounterSet] = {}
            for pool, info in snapshot.slices.scope_for(view, features).order:
                if info.id in seen:
                    self.exact = False
                    continue  # a device many nodes can use (allNodes) is measured on the first only
                seen.add(info.id)
                name = self._counter_set_of(pool, info)
                if name is None:
                    units.append(info)
                    continue
                key = (info.driver, info.id.pool, name)
                counter_set = sets.get(key)
                if counter_set is None:
                    if key in seen_sets:  # measured on another node that sees the pool
                        self.exact = False
                        continue
                    seen_sets.add(key)
                    counter_set = sets[key] = CounterSet.of(pool, name)
                    units.append(counter_set)
                counter_set.members.append(info)
            self.devices.append(units)
            self.device_ids.append([(u.id,) if isinstance(u, DeviceInfo) else tuple(m.id for m in u.members)
                                    for u in units])
            self.device_signatures.append([self._signature(u) if isinstance(u, DeviceInfo)
                                           else self._counter_signature(u) for u in units])
        # (driver, pool) -> the nodes whose measured devices are in it: whose state a result changes.
        self.nodes_of_pool: dict[tuple[str, str], list[int]] = {}
        for index, units in enumerate(self.devices):
            for pool_key in sorted({(u.id.driver, u.id.pool) if isinstance(u, DeviceInfo) else (u.driver, u.pool)
                                    for u in units}):
                self.nodes_of_pool.setdefault(pool_key, []).append(index)
        self.allocatable = [tuple(self._allocatable(n, name) for name in RESOURCES) for n in node_list]
        self._demands: dict[str, dict[int, tuple[Amount, ...]] | None] = {}
        self._by_object: dict[int, tuple[object, dict[int, tuple[Amount, ...]] | None]] = {}
        self.measure = Measure(self.signatures, ())
        # States are interned: nodes in one state share one id, one group (indexes in name order)
        # and one memoized choice per shape; hashing every node's state per decision would not do.
        self._ids: dict[NodeState, int] = {}
        self._state_of: list[NodeState] = []
        self._groups: dict[int, list[int]] = {}
        self._shape_ids: dict[tuple[object, ...], int] = {}
        # shape id -> state id -> the measure's ranked choice (None: the shape does not fit that state)
        self._choices: dict[int, dict[int, tuple[Key, tuple[int, ...]] | None]] = {}
        # Per shape id, the states it was ranked on in key order, kept up to date from the log of
        # states that appeared since (`_ordered`): a decision then costs the changes, not a pass
        # over every node state (most of the policy's time on 1,213 distinct nodes).
        self._sorted: dict[int, tuple[int, list[tuple[Key, int]]]] = {}
        self._appeared: list[int] = []  # state ids that got a group, in order (see `refresh`)
        self.state_ids: list[int] = []
        for index in range(len(views)):
            state_id = self._intern(self._state(index, snapshot.allocated, usage[index]))
            self.state_ids.append(state_id)
            self._groups.setdefault(state_id, []).append(index)

    # ---- building ---------------------------------------------------------------------

    @staticmethod
    def _allocatable(node: model_nodes.Node, name: str) -> int:
        quantity = node.status.allocatable.get(name)
        return quantity.nanos if quantity is not None else UNLIMITED

    def _shareable(self, info: DeviceInfo) -> bool:
        return self.features.consumable_capacity and info.allow_multiple

    def _dumped(self, value: devices.DeviceAttribute | devices.DeviceCapacity) -> str:
        """A value's JSON, once per value object: identical attributes and plain capacities are
        one shared instance (the model interns them), so thousands of GPUs dump a few values.
        The objects are kept, so their ids stay theirs while this model lives."""
        known = self._dumps.get(id(value))
        if known is None or known[0] is not value:
            known = self._dumps[id(value)] = (value, json.dumps(value.model_dump(mode="json", by_alias=True),
                                                                sort_keys=True))
        return known[1]

    def _signature(self, info: DeviceInfo) -> int:
        shareable = self._shareable(info)
        key = (info.driver, shareable, tuple((k, self._dumped(v)) for k, v in sorted(info.attributes.items())),
               tuple((k, self._dumped(v)) for k, v in sorted(info.capacity.items())))
        known = self._signature_of.get(key)
        if known is not None:
            return known
        names = tuple(sorted(info.capacity)) if shareable else ()
        totals = tuple(_exact(info.capacity[n].value.value) for n in names) if names else (1,)
        self._signature_of[key] = len(self.signatures)
        self.signatures.append(Signature(totals, shareable))
        self.representatives.append(info)
        self.dimensions.append(names)
        return len(self.signatures) - 1

    def _counter_set_of(self, pool: Pool, info: DeviceInfo) -> str | None:
        """The counter set the measure counts the device in, if it is a partition it can model:
        a device that cannot be shared, drawing on one counter set of its pool. Other devices
        that consume counters are measured as devices of their own, as if counters were not
        there: free while unallocated, which the allocator may still refuse (never the other
        way round, so the model's fit stays a necessary condition)."""
        if not self.features.partitionable_devices or len(info.consumes) != 1 or self._shareable(info):
            return None
        name, counters = info.consumes[0]
        totals = pool.counter_sets.get(name)
        if totals is None or any(counter not in totals for counter, _ in counters):
            return None
        return name

    def _counter_signature(self, counter_set: CounterSet) -> int:
        """A counter set's signature: its counters and totals, and its partitions (what each is,
        what each takes of the set). Selectors are asked of one partition per kind."""
        names = tuple(sorted(counter_set.totals))
        kinds: dict[tuple[object, ...], tuple[DeviceInfo, tuple[Amount, ...]]] = {}
        for info in counter_set.members:
            taken = counter_set.taken(info, names)
            kind = (info.driver, tuple((k, self._dumped(v)) for k, v in sorted(info.attributes.items())),
                    tuple((k, self._dumped(v)) for k, v in sorted(info.capacity.items())), taken)
            kinds.setdefault(kind, (info, taken))
        key = ("counter set", counter_set.driver, tuple((n, counter_set.totals[n]) for n in names),
               tuple(sorted(kinds, key=repr)))
        known = self._signature_of.get(key)
        if known is not None:
            return known
        self._signature_of[key] = len(self.signatures)
        self.signatures.append(Signature(tuple(_nano(counter_set.totals[n]) for n in names), True))
        members = [kinds[k] for k in sorted(kinds, key=repr)]
        self.representatives.append(members[0][0])
        self.dimensions.append(names)
        self._members[len(self.signatures) - 1] = members
        return len(self.signatures) - 1

    def _unit_state(self, unit: DeviceInfo | CounterSet, sig: int, allocated: AllocatedState) -> DeviceState:
        if isinstance(unit, DeviceInfo):
            return self._device_state(unit, sig, allocated)
        return sig, unit.free(self.dimensions[sig], allocated)

    def _device_state(self, info: DeviceInfo, sig: int, allocated: AllocatedState) -> DeviceState:
        totals = self.signatures[sig].totals
        if info.id in allocated.exclusive:
            return sig, tuple(0 for _ in totals)
        names = self.dimensions[sig]
        if not names:  # one unit: free unless some allocation holds it
            return sig, (0 if info.id in allocated.shared else 1,)
        consumed = allocated.consumed_capacity.get(info.id)
        if not consumed:
            return sig, totals  # untouched: most devices of a cluster, no arithmetic
        return sig, tuple(_exact(Fraction(t) - consumed.get(n, Fraction(0))) for n, t in zip(names, totals, strict=True))

    def _state(self, index: int, allocated: AllocatedState, usage: nodefit.NodeUsage) -> NodeState:
        devices = tuple(self._unit_state(unit, sig, allocated)
                        for unit, sig in zip(self.devices[index], self.device_signatures[index], strict=True))
        left = tuple(total - usage.requests.get(name, 0) if total != UNLIMITED else UNLIMITED
                     for name, total in zip(RESOURCES, self.allocatable[index], strict=True))
        return devices, left

    def _intern(self, state: NodeState) -> int:
        known = self._ids.get(state)
        if known is None:
            known = self._ids[state] = len(self._state_of)
            self._state_of.append(state)
        return known

    def state(self, index: int) -> NodeState:
        return self._state_of[self.state_ids[index]]

    def refresh(self, index: int, allocated: AllocatedState, usage: nodefit.NodeUsage) -> None:
        """The node's state after a commit or release on it."""
        new = self._intern(self._state(index, allocated, usage))
        old = self.state_ids[index]
        if new == old:
            return
        members = self._groups[old]
        members.remove(index)
        if not members:
            del self._groups[old]
        if new not in self._groups:
            self._appeared.append(new)
        bisect.insort(self._groups.setdefault(new, []), index)
        self.state_ids[index] = new
        if len(self._appeared) > 1 << 17:  # a long-lived model: start the orders afresh
            self._sorted.clear()
            self._appeared.clear()

    def _amounts(self, request: model_claims.ExactDeviceRequest | model_claims.DeviceSubRequest
                 ) -> dict[int, tuple[Amount, ...]] | None:
        """Signature -> what one device of the request takes of it; None when not modelled."""
        # By object first: the pods of one template share its request objects (kept alive here,
        # so an id is never reused), and dumping a request to find its key costs more.
        seen = self._by_object.get(id(request))
        if seen is not None and seen[0] is request:
            return seen[1]
        key = _request_key(request)
        if key in self._demands:
            self._by_object[id(request)] = (request, self._demands[key])
            return self._demands[key]
        result: dict[int, tuple[Amount, ...]] | None = {}
        device_class: model_classes.DeviceClass | None = self.classes.get(request.device_class_name)
        if device_class is None:
            result = None
        else:
            assert result is not None
            wanted = request.capacity.requests if request.capacity is not None else None
            for sig, info in enumerate(self.representatives):
                members = self._members.get(sig)
                if members is not None:
                    # A counter set serves the request with any partition the selectors accept;
                    # the least each counter could lose keeps the model's fit a necessary one.
                    options = [taken for member, taken in members if self._selects(member, device_class, request)]
                    if options:
                        result[sig] = tuple(min(column) for column in zip(*options, strict=True))
                    continue
                if not self._selects(info, device_class, request):
                    continue
                names = self.dimensions[sig]
                if not names:
                    result[sig] = (1,)
                    continue
                amounts = capacity.consumption(wanted, info.capacity, step_format=self.features.at_least_1_37,
                                               fractional=self.features.fractional_capacity_range)
                if amounts is not None:
                    result[sig] = tuple(_exact(amounts[n].value) for n in names)
        self._demands[key] = result
        self._by_object[id(request)] = (request, result)
        return result

    @staticmethod
    def _domain_attributes(claim: model_claims.ResourceClaim) -> dict[str, list[str]] | None:
        """Request name -> the attributes its devices must share (matchAttribute constraints that
        cover that one request: a topology domain); None when the claim has a constraint the
        measure does not describe (distinctAttribute, or one across several requests)."""
        names = [r.name for r in claim.spec.devices.requests]
        result: dict[str, list[str]] = {}
        for constraint in claim.spec.devices.constraints:
            if constraint.match_attribute is None or constraint.distinct_attribute is not None:
                return None
            covered = constraint.requests or tuple(names)
            if len(covered) != 1 or "/" in covered[0]:
                return None
            result.setdefault(covered[0], []).append(constraint.match_attribute)
        return result

    def _domains(self, amounts: Mapping[int, tuple[Amount, ...]], attributes: Sequence[str]
                 ) -> dict[int, object] | None:
        """Signature -> its domain (the attributes' values) for the signatures that have every
        attribute (a device without one cannot serve the request); None when some value is one the
        measure does not compare (a list) or a signature is a counter set (partitions differ)."""
        domains: dict[int, object] = {}
        for sig in amounts:
            if sig in self._members:
                return None
            info = self.representatives[sig]
            try:  # the allocator's own reading of the values: typed, `int 1` is not `string "1"`
                values = tuple(constraints.elements(info, attribute, list_types=False) for attribute in attributes)
            except constraints.UnsupportedValue:
                return None
            if all(v is not None for v in values):
                domains[sig] = values
        return domains

    def _holds_two(self, sig: int, taken: tuple[Amount, ...]) -> bool:
        """Whether one counter set of the signature could give one request two of its partitions.
        The measure counts a request's devices as distinct units, so it would count one where
        the allocator may find two: such a request is not modelled (its fit would no longer be
        a necessary condition)."""
        return sig in self._members and all(2 * t <= total for t, total in
                                            zip(taken, self.signatures[sig].totals, strict=True))

    def _selects(self, info: DeviceInfo, device_class: model_classes.DeviceClass,
                 request: model_claims.ExactDeviceRequest | model_claims.DeviceSubRequest) -> bool:
        try:
            return (selectors.all_match(info, device_class.spec.selectors, owner="fragmentation model", view=self.view)
                    and selectors.all_match(info, request.selectors, owner="fragmentation model", view=self.view))
        except errors.AllocationInputError:
            return False  # the allocator reports the error when the item is placed

    def shape(self, claims: Sequence[model_claims.ResourceClaim], requests: Mapping[str, int] | None) -> Shape | None:
        """The item as the measure sees it; None when some request is not modelled."""
        demands = []
        for claim in claims:
            in_one_domain = self._domain_attributes(claim)
            if in_one_domain is None:
                return None
            for request in claim.spec.devices.requests:
                chosen: model_claims.ExactDeviceRequest | model_claims.DeviceSubRequest | None = request.exactly
                if chosen is None and request.first_available:
                    chosen = request.first_available[0]
                if chosen is None or chosen.allocation_mode not in (None, model_claims.ALLOCATION_MODE_EXACT_COUNT):
                    return None
                if isinstance(chosen, model_claims.ExactDeviceRequest) and chosen.admin_access:
                    return None
                amounts = self._amounts(chosen)
                if amounts is None:
                    return None
                domains = None
                attributes = in_one_domain.get(request.name)
                if attributes:
                    if chosen.derived_attributes:
                        return None  # values computed per request: not the devices' own
                    domains = self._domains(amounts, attributes)
                    if domains is None:
                        return None
                    amounts = {sig: taken for sig, taken in amounts.items() if sig in domains}
                count = chosen.count if chosen.count is not None else 1
                if count > 1 and any(self._holds_two(sig, taken) for sig, taken in amounts.items()):
                    return None
                demands.append(DeviceDemand(count, amounts, domains))
        wanted = requests or {}
        return Shape(tuple(demands), tuple(wanted.get(name, 0) for name in RESOURCES))

    def expect(self, shapes: Iterable[tuple[Shape, int]]) -> None:
        """The workload's shapes and how often each occurs (the queue, recent arrivals)."""
        self.measure = Measure(self.signatures, list(shapes))
        self._choices.clear()
        self._sorted.clear()

    def expect_as(self, other: ClusterModel) -> None:
        """The expectation another model of the same cluster was given (`expect`): its measure itself when
        the device kinds are the same (it only memoizes what follows from a node's state), else one built
        anew from its shapes."""
        if other.measure.signatures == self.signatures:
            self.measure = other.measure
        else:
            self.measure = Measure(self.signatures, other.measure.shapes)
        self._choices.clear()
        self._sorted.clear()

    # ---- choosing ---------------------------------------------------------------------

    def order(self, shape: Shape, *, preference: Sequence[int] | None = None,
              ) -> Iterator[tuple[int, tuple[DeviceID, ...]]]:
        """Node indexes (nodes sorted by name) where the shape may fit, least growth of expected
        fragmentation first, in steps of 4 % of what the shape takes (among growths in one step:
        the node's CPU per free GPU closest to the workload's; for a shape without devices, the
        fewest free devices; then the exact growth; `Measure.rank`), then
        by `preference` (a score per node index, highest first: the pod's preferences), then
        by name, each with its devices in the order to try them.
        Nodes where the model rules the shape out follow by preference and name, only when
        the model cannot be sure (devices shared between nodes); the allocator decides."""
        shape_id = self._shape_ids.setdefault(shape.key(), len(self._shape_ids))
        choices = self._choices.setdefault(shape_id, {})
        ordered = self._ordered(shape_id, shape, choices)
        groups = self._groups
        # Nodes of one state are alike: one choice serves them all; equal keys merge by name.
        # States without a group any more are skipped here and dropped on the next update; the
        # ones at the front are dropped now: the best states are the ones placements change, so
        # without this every decision walked past the states its predecessors used up.
        stale = 0
        while stale < len(ordered) and not groups.get(ordered[stale][1]):
            stale += 1
        if stale:
            del ordered[:stale]
        position, count = 0, len(ordered)
        while position < count:
            key = ordered[position][0]
            run = []
            while position < count and ordered[position][0] == key:
                members = groups.get(ordered[position][1])
                if members:
                    run.append(members)
                position += 1
            tied: Iterable[int] = heapq.merge(*run) if len(run) > 1 else list(run[0]) if run else ()
            if preference is not None:
                tied = sorted(tied, key=lambda index: -preference[index])  # stable: name among equals
            for index in tied:
                positions = choices[self.state_ids[index]]
                assert positions is not None
                ids = self.device_ids[index]
                # A counter set stands for its partitions: all are offered, the allocator picks.
                yield index, tuple(dict.fromkeys(i for p in positions[1] for i in ids[p]))
        if self.exact:
            # The model's fit is a necessary condition (CPU and memory as node fit counts them;
            # selectors on devices alike in everything a selector reads; the allocator's own
            # capacity arithmetic): the allocator would refuse these nodes, so they are not asked.
            return
        rest = [members for state_id, members in groups.items() if choices.get(state_id) is None]
        unsure: Iterable[int] = heapq.merge(*rest)
        if preference is not None:
            unsure = sorted(unsure, key=lambda index: -preference[index])
        for index in unsure:
            yield index, ()

    def _rank(self, shape: Shape, choices: dict[int, tuple[Key, tuple[int, ...]] | None],
              state_ids: Iterable[int]) -> None:
        """The measure's ranked choices for the states not ranked yet, all in one call."""
        unknown = [state_id for state_id in dict.fromkeys(state_ids) if state_id not in choices]
        if unknown:
            states = self._state_of
            ranked = self.measure.rank_all([states[state_id] for state_id in unknown], shape)
            choices.update(zip(unknown, ranked, strict=True))

    def _ordered(self, shape_id: int, shape: Shape,
                 choices: dict[int, tuple[Key, tuple[int, ...]] | None],
                 ) -> list[tuple[Key, int]]:
        """(key, state id) of the states the shape fits, in key order, for the current groups."""
        groups = self._groups
        known = self._sorted.get(shape_id)
        if known is None:
            self._rank(shape, choices, groups)
            entries = []
            for state_id in groups:
                choice = choices[state_id]
                if choice is not None:
                    entries.append((choice[0], state_id))
            entries.sort()
            self._sorted[shape_id] = (len(self._appeared), entries)
            return entries
        seen, entries = known
        appeared = self._appeared
        if seen < len(appeared):
            # Add the states that appeared since; the ones that lost their last node are skipped
            # when the order is read, and dropped once they are half of it.
            if len(entries) > 2 * len(groups):
                entries = [entry for entry in entries if entry[1] in groups]
            new = [state_id for state_id in appeared[seen:] if state_id in groups]
            self._rank(shape, choices, new)
            for state_id in new:
                choice = choices[state_id]
                if choice is not None:
                    entry = (choice[0], state_id)
                    at = bisect.bisect_left(entries, entry)
                    if at == len(entries) or entries[at] != entry:
                        entries.insert(at, entry)
            self._sorted[shape_id] = (len(appeared), entries)
        return entries
