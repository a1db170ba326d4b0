"""Fragmentation-aware placement (FGD): the choice that wastes the least of what is left.

Weng et al., "Beware of Fragmentation" (USENIX ATC '23): a node's free device capacity is
*fragmented* for a request shape when that shape cannot use it — the whole free capacity
when the shape does not fit the node at all (too few usable devices, or too little CPU or
memory left: stranding), otherwise the free capacity of the devices that cannot serve one
of its devices (a GPU with 200 milli left, for a share of 460; a partly used GPU, for a
whole one; a GPU of another model, for a shape that selects a model). The node's expected
fragmentation weighs every shape of the workload by how often it occurs. For each
candidate node and device choice, the policy computes how much that expected
fragmentation grows and picks the least, compared in steps of 4 % of what the request takes
(near-ties: `Measure.rank`); among growths in one step, the node whose CPU left per free GPU
is closest to the workload's (a CPU-only pod: the node with the fewest free GPUs), then the
exact growth, then node name, then device order.

This module is the measure only: pure, exact (ints or Fractions), no I/O. It sees the cluster
as the scheduling layer describes it — per node the devices in the allocator's order,
each as a signature (which shapes may use it, its capacities) and what is free of it,
plus the node resources left — and the workload as `Shape`s with weights. The
allocator still decides whether a choice is valid: the policy only orders nodes and
states which devices to try first.

Devices are measured in units of one device: a device's free share is the least, over
its capacities, of free / declared (1 for an untouched device without capacities, 0 for
one in use). A request asks, per device signature it may use, for amounts of each
capacity (what the allocator would consume, request policies applied); a device that
cannot be shared takes all of its one unit.
"""

from __future__ import annotations

import bisect
import dataclasses
import math
import operator
from collections.abc import Mapping, Sequence
from fractions import Fraction

ZERO = Fraction(0)
STEP_MEMO = 1 << 16  # device steps kept (`Measure._steps`); past that the cache starts afresh
UNRANKED = 2**63  # the growth of a choice the measure could not make: after every measured one
ONE = Fraction(1)
# Near-ties (`Measure.rank`): growths of expected fragmentation within this part of the request's
# own device capacity (4 %: 40 milli-GPUs for a whole GPU) rank alike, and the tie-breaks decide.
STEP = Fraction(4, 100)


@dataclasses.dataclass(frozen=True)
class Signature:
    """What the policy knows of a device kind: the totals of its dimensions (capacities, or one unit)."""

    totals: tuple[Amount, ...]
    shareable: bool


@dataclasses.dataclass(frozen=True)
class DeviceDemand:
    """One request: `count` devices, each of a signature in `amounts` (what it takes of each dimension).

    `domains`: the request's devices must all be in one topology domain (a matchAttribute
    constraint): signature id -> its domain, for every signature in `amounts`."""

    count: int
    amounts: Mapping[int, tuple[Amount, ...]]  # signature id -> amount per dimension
    domains: Mapping[int, object] | None = None
    _key: tuple[object, ...] | None = dataclasses.field(default=None, compare=False, repr=False)

    def key(self) -> tuple[object, ...]:
        if self._key is None:  # computed once: asked for on every decision
            domains = tuple(sorted(self.domains.items(), key=repr)) if self.domains is not None else None
            object.__setattr__(self, "_key", (self.count, tuple(sorted(self.amounts.items())), domains))
        assert self._key is not None
        return self._key


@dataclasses.dataclass(frozen=True)
class Shape:
    """A request shape of the workload: its device requests and the node resources it needs."""

    devices: tuple[DeviceDemand, ...]
    resources: tuple[int, ...]  # aligned with the model's resource names (nano-units)
    _key: tuple[object, ...] | None = dataclasses.field(default=None, compare=False, repr=False)

    def key(self) -> tuple[object, ...]:
        if self._key is None:
            object.__setattr__(self, "_key", (tuple(d.key() for d in self.devices), self.resources))
        assert self._key is not None
        return self._key


Amount = int | Fraction  # exact amounts; ints where they are whole (most are: cheaper to compare)

# A device's state: (signature id, free amount per dimension). A node's: its devices in the
# allocator's order and the resources left.
DeviceState = tuple[int, tuple[Amount, ...]]
NodeState = tuple[tuple[DeviceState, ...], tuple[int, ...]]
# What the measure keeps of a node's devices: (free share, per group the share its requests can
# use or 0 when they do not fit, per measured demand the devices that can serve it, per group
# the share its requests can use, per measured demand the most devices that can serve it
# together: in one domain for a demand with domains, else the third element).
DevicePart = tuple[Amount, tuple[Amount, ...], tuple[int, ...], tuple[Amount, ...], tuple[int, ...]]
Key = tuple[Amount | float, ...]  # a choice's order key (`Measure.rank`)


class Measure:
    """Expected fragmentation of node states for one weighted set of shapes, memoized per state.

    The shapes are grouped by their device requests: whether a device can serve a request,
    how many usable devices a request finds and what the others leave unusable are computed
    once per group and state, and each shape of the group only adds its node-resource check
    (shapes differ mostly in CPU and memory). Per-device answers are memoized per device
    state, which repeat across thousands of alike GPUs.
    """

    def __init__(self, signatures: Sequence[Signature], shapes: Sequence[tuple[Shape, int]]) -> None:
        self.signatures = list(signatures)
        merged: dict[tuple[object, ...], tuple[Shape, int]] = {}
        for shape, weight in shapes:
            if weight <= 0 or not shape.devices:
                continue  # a shape without devices cannot be left without devices by a choice
            known = merged.get(shape.key())
            merged[shape.key()] = (shape, weight + (known[1] if known is not None else 0))
        # Sorted by key: the sums are exact anyway; the order only keeps runs reproducible.
        self.shapes = [merged[k] for k in sorted(merged, key=repr)]
        self.total_weight = sum(w for _, w in self.shapes)
        self._balance: Fraction | None = None
        self._step_sizes: dict[tuple[object, ...], Amount] = {}
        self._demand_ids: dict[tuple[object, ...], int] = {}
        self._demands: list[DeviceDemand] = []
        groups: dict[tuple[int, ...], list[tuple[tuple[int, ...], int]]] = {}
        for shape, weight in self.shapes:
            ids = tuple(self._demand_id(d) for d in shape.devices)
            groups.setdefault(ids, []).append((shape.resources, weight))
        # (demand ids with their counts, [(resources, weight)]) per group of alike device requests
        self._groups = [(tuple((i, self._demands[i].count) for i in ids), members)
                        for ids, members in sorted(groups.items())]
        self._group_weights = [sum(w for _, w in members) for _, members in self._groups]
        # The demands of the groups; demands of other shapes (`choose` on a shape the workload
        # did not announce) get ids after these and are not in the per-device vectors.
        self._measured = len(self._demands)
        single = all(len(demands) == 1 for demands, _ in self._groups)
        self._single = (tuple(demands[0][0] for demands, _ in self._groups),
                        tuple(demands[0][1] for demands, _ in self._groups)) if single else None
        self._no_counts = (0,) * self._measured
        self._no_parts: DevicePart = (0, (0,) * len(self._groups), self._no_counts, (0,) * len(self._groups),
                                      self._no_counts)
        # Groups and demands with topology domains: their parts are worked out per node, not summed.
        self._domain_demands = tuple(i for i in range(self._measured) if self._demands[i].domains is not None)
        self._domain_groups = tuple(g for g, (demands, _) in enumerate(self._groups)
                                    if any(self._demands[i].domains is not None for i, _ in demands))
        self._last_shape: Shape | None = None
        self._last_ids: tuple[int, ...] = ()
        self._usable: dict[tuple[DeviceState, int], bool] = {}
        self._shares: dict[DeviceState, Amount] = {}
        self._vectors: dict[DeviceState, tuple[Amount, tuple[int, ...], tuple[Amount, ...]]] = {}
        self._device_parts: dict[tuple[DeviceState, ...], DevicePart] = {}
        self._resource_parts: dict[tuple[int, ...], tuple[int, ...]] = {}
        self._resource_levels: dict[tuple[int, ...], tuple[int, ...]] = {}
        self._step_memo: dict[tuple[tuple[DeviceState, ...], int, tuple[int, ...]],
                              list[tuple[int, DevicePart, tuple[DeviceState, ...]]]] = {}
        self._taken_memo: dict[tuple[DeviceState, int], DeviceState] = {}
        # Per node resource, the distinct amounts the shapes ask for, ascending (`_resource_part`).
        dimensions = len(self.shapes[0][0].resources) if self.shapes else 0
        self._levels = tuple(sorted({shape.resources[k] for shape, _ in self.shapes}) for k in range(dimensions))
        # Shares are counted in 1/unit of a device, as ints, when that is exact for every
        # signature (unit: the least common multiple of the whole totals, 1000 for milli-GPUs):
        # Fraction arithmetic was most of the policy's time. Amounts that are not whole keep
        # their shares as Fractions, still exact.
        unit = 1
        for signature in self.signatures:
            for total in signature.totals:
                if isinstance(total, int) and total > 0:
                    unit = unit * total // math.gcd(unit, total)
        self.unit = unit if unit <= 10**12 else 1

    def _demand_id(self, demand: DeviceDemand) -> int:
        key = demand.key()
        known = self._demand_ids.get(key)
        if known is None:
            known = self._demand_ids[key] = len(self._demands)
            self._demands.append(demand)
        return known

    def share(self, device: DeviceState) -> Amount:
        """The free part of one device, in 1/`unit` of a device."""
        known = self._shares.get(device)
        if known is None:
            signature = self.signatures[device[0]]
            exact = ZERO if not signature.totals else min(
                Fraction(free) / total for free, total in zip(device[1], signature.totals, strict=True))
            scaled = exact * self.unit
            known = scaled.numerator if scaled.denominator == 1 else scaled
            self._shares[device] = known
        return known

    @staticmethod
    def usable(device: DeviceState, demand: DeviceDemand) -> bool:
        amounts = demand.amounts.get(device[0])
        return amounts is not None and all(f >= a for f, a in zip(device[1], amounts, strict=True))

    def _usable_by(self, device: DeviceState, demand_id: int) -> bool:
        key = (device, demand_id)
        known = self._usable.get(key)
        if known is None:
            known = self._usable[key] = self.usable(device, self._demands[demand_id])
        return known

    def fits(self, state: NodeState, shape: Shape) -> bool:
        """A necessary condition for the shape to fit the node (each request on its own)."""
        need, left = shape.resources, state[1]
        if len(need) == 2 == len(left):  # CPU and memory, as the scheduling layer models them
            if need[0] > left[0] or need[1] > left[1]:
                return False
        elif any(n > h for n, h in zip(need, left, strict=True)):
            return False
        counts = None
        for demand, demand_id in zip(shape.devices, self._ids(shape), strict=True):
            if demand_id < self._measured:
                if counts is None:
                    counts = self._device_part(state[0])[4]  # shared by every shape asked of the node
                if counts[demand_id] < demand.count:
                    return False
                continue
            if demand.domains is not None:
                if self._most_in_a_domain(state[0], demand) < demand.count:
                    return False
                continue
            usable = 0
            for device in state[0]:
                if self.usable(device, demand):
                    usable += 1
                    if usable >= demand.count:
                        break
            else:
                return False
        return True

    def _most_in_a_domain(self, devices: Sequence[DeviceState], demand: DeviceDemand) -> int:
        """The most devices that can serve the demand in one of its domains."""
        return max(map(len, self._domain_members(devices, demand).values()), default=0)

    def _domain_members(self, devices: Sequence[DeviceState], demand: DeviceDemand,
                        excluded: tuple[int, ...] = ()) -> dict[object, list[int]]:
        """Per domain, the positions of the devices that can serve the demand."""
        assert demand.domains is not None
        members: dict[object, list[int]] = {}
        for position, device in enumerate(devices):
            if position not in excluded and self.usable(device, demand):
                members.setdefault(demand.domains[device[0]], []).append(position)
        return members

    def _ids(self, shape: Shape) -> tuple[int, ...]:
        """The shape's demand ids; the last shape's are kept: a decision asks them of every node."""
        if shape is not self._last_shape:
            self._last_ids = tuple(self._demand_id(d) for d in shape.devices)
            self._last_shape = shape
        return self._last_ids

    def fragmentation(self, state: NodeState) -> Amount:
        """The node's expected fragmentation, in device units times weights (the total weight
        divides every node alike, so it is left out).

        Per group of shapes with the same device requests: if the devices cannot serve them,
        or a shape's CPU and memory do not fit, all free capacity is lost to it; otherwise the
        free capacity of the devices none of its requests can use. So the total is the weight
        of all groups times the free capacity, less, per group, the capacity its requests can
        use (0 when they do not fit the devices) times the weight of its shapes whose CPU and
        memory fit: a dot product of a device part, which depends on the devices' states only,
        and a resource part, which depends on what is left of CPU and memory only. Each is
        memoized on its own, as many nodes share one but not the other.
        """
        devices, left = state
        free, usable = self._device_part(devices)[:2]
        if not free:
            return 0
        dot: Amount = sum(map(operator.mul, usable, self._resource_part(left)))
        return self.total_weight * free - dot

    def _vector(self, device: DeviceState) -> tuple[Amount, tuple[int, ...], tuple[Amount, ...]]:
        """One device state's part: (its free share, per measured demand whether it can serve
        it (0/1), per group its share if some request of the group can use it, else 0)."""
        known = self._vectors.get(device)
        if known is None:
            share = self.share(device)
            flags = tuple(1 if self.usable(device, demand) else 0 for demand in self._demands[:self._measured])
            usable = tuple(share if share and any(flags[i] for i, _ in demands) else 0 for demands, _ in self._groups)
            known = self._vectors[device] = (share, flags, usable)
        return known

    def _device_part(self, devices: tuple[DeviceState, ...]) -> DevicePart:
        """(free capacity, per group: the free capacity its requests can use, 0 when the devices
        cannot serve them; per measured demand: how many devices can serve it; per group the
        free capacity its requests can use, whether or not they fit). Summed over the devices'
        vectors, which repeat across thousands of alike GPUs."""
        known = self._device_parts.get(devices)
        if known is not None:
            return known
        if not devices:
            known = self._no_parts
        else:
            vectors = [self._vector(d) for d in devices]
            free: Amount = sum([v[0] for v in vectors], 0)
            counts = tuple(map(sum, zip(*[v[1] for v in vectors], strict=True)))
            usable = tuple(map(sum, zip(*[v[2] for v in vectors], strict=True)))
            known = self._with_domains(devices, (free, self._fitting(counts, usable), counts, usable, counts))
        self._device_parts[devices] = known
        return known

    def _changed_part(self, base: DevicePart, devices: tuple[DeviceState, ...], old: DeviceState,
                      new: DeviceState) -> DevicePart:
        """The device part of `devices`, which are the devices of `base` with one `old` now `new`:
        the sums less one vector plus another (a choice changes one device of the node)."""
        known = self._device_parts.get(devices)
        if known is None:
            was, now = self._vector(old), self._vector(new)
            free = base[0] - was[0] + now[0]
            counts = tuple(map(operator.add, map(operator.sub, base[2], was[1]), now[1]))
            usable = tuple(map(operator.add, map(operator.sub, base[3], was[2]), now[2]))
            known = self._device_parts[devices] = self._with_domains(
                devices, (free, self._fitting(counts, usable), counts, usable, counts))
        return known

    def _with_domains(self, devices: tuple[DeviceState, ...], part: DevicePart) -> DevicePart:
        """The part with its groups and demands that have topology domains worked out on the node:
        a demand fits when one domain has enough devices for it, and only the devices of domains
        that do can serve it (the others are too few together)."""
        if not self._domain_demands:
            return part
        free, fitting, counts, usable, _ = part
        most = list(counts)
        for i in self._domain_demands:
            most[i] = self._most_in_a_domain(devices, self._demands[i])
        parts = list(fitting)
        for g in self._domain_groups:
            serving = [False] * len(devices)
            fit = True
            for i, count in self._groups[g][0]:
                demand = self._demands[i]
                if demand.domains is None:
                    positions = [p for p, d in enumerate(devices) if self._usable_by(d, i)]
                    fit = fit and len(positions) >= count
                else:
                    positions = [p for members in self._domain_members(devices, demand).values()
                                 if len(members) >= count for p in members]
                    fit = fit and bool(positions)
                for p in positions:
                    serving[p] = True
            parts[g] = sum((self.share(d) for d, s in zip(devices, serving, strict=True) if s), 0) if fit else 0
        return free, tuple(parts), counts, usable, tuple(most)

    def _fitting(self, counts: tuple[int, ...], usable: tuple[Amount, ...]) -> tuple[Amount, ...]:
        """Per group: the free capacity its requests can use if the devices can serve them, else 0."""
        if self._single is not None:  # one request per group: multiply by "enough devices" (0/1), in C
            ids, needed = self._single
            return tuple(map(operator.mul, usable, map(operator.ge, map(counts.__getitem__, ids), needed)))
        return tuple(u if all(counts[i] >= n for i, n in demands) else 0
                     for u, (demands, _) in zip(usable, self._groups, strict=True))

    def _resource_part(self, left: tuple[int, ...]) -> tuple[int, ...]:
        """Per group: the weight of its shapes whose node resources fit in `left`.

        Which shapes fit depends only on where each amount left falls among the amounts the
        shapes ask for, so the answer is kept per those levels: nodes (and what choices leave
        of them) are many, levels few."""
        known = self._resource_parts.get(left)
        if known is None:
            levels = (tuple(bisect.bisect_right(asked, amount) for asked, amount in zip(self._levels, left, strict=True))
                      if len(left) == len(self._levels) else left)
            known = self._resource_levels.get(levels)
            if known is None:
                known = tuple(sum(w for needs, w in members if all(n <= h for n, h in zip(needs, left, strict=True)))
                              for _, members in self._groups)
                self._resource_levels[levels] = known
            self._resource_parts[left] = known
        return known

    @staticmethod
    def take(device: DeviceState, amounts: tuple[Amount, ...]) -> DeviceState:
        return device[0], tuple(f - a for f, a in zip(device[1], amounts, strict=True))

    def choose(self, state: NodeState, shape: Shape) -> tuple[Amount, tuple[int, ...]] | None:
        """(growth of the expected fragmentation, device positions in the order to take them),
        or None when the shape cannot fit the node (`fits`); (UNRANKED, ()) when it may but the
        greedy choice below found no devices for every request.

        Devices are taken one at a time, request by request, each time the one whose taking
        leaves the least expected fragmentation (ties: the earliest position): greedy, as FGD.
        A request takes distinct devices; a later request may take a shareable one again.
        """
        choice = self._choices((state,), shape)[0]
        return None if choice is None else choice[:2]

    def _choices(self, states: Sequence[NodeState], shape: Shape
                 ) -> list[tuple[Amount, tuple[int, ...], Amount] | None]:
        """`choose` on each state, with the free device capacity after it. What depends on the
        shape alone is worked out once: the policy asks one shape of every node state that
        appeared since it last asked, most of them ruled out at once by `fits`."""
        ids = self._ids(shape)
        need = shape.resources
        # Counted per device part when every request of the shape is a measured demand.
        measured = tuple((i, d.count) for i, d in zip(ids, shape.devices, strict=True)) \
            if all(i < self._measured for i in ids) else None
        weight, resource_part, steps = self.total_weight, self._resource_part, self._steps
        parts = self._device_parts
        results: list[tuple[Amount, tuple[int, ...], Amount] | None] = []
        for state in states:
            devices, left = state
            if len(need) == 2 == len(left):  # CPU and memory, as the scheduling layer models them
                if need[0] > left[0] or need[1] > left[1]:
                    results.append(None)
                    continue
                resources: tuple[int, ...] = (left[0] - need[0], left[1] - need[1])
            elif any(n > h for n, h in zip(need, left, strict=True)):
                results.append(None)
                continue
            else:
                resources = tuple(h - n for h, n in zip(left, need, strict=True))
            part = parts.get(devices) or self._device_part(devices)
            if measured is not None:
                counts = part[4]
                if any(counts[i] < n for i, n in measured):
                    results.append(None)
                    continue
            elif not self.fits(state, shape):
                results.append(None)
                continue
            free = part[0]
            before = self.fragmentation(state)
            fitting = resource_part(resources)
            taken: list[int] = []
            excluded: tuple[int, ...] = ()
            best: tuple[Amount, int, tuple[DeviceState, ...], Amount] | None = None
            after, failed = devices, False
            for demand, demand_id in zip(shape.devices, ids, strict=True):
                domains = demand.domains
                hosting: set[object] | None = None
                if domains is not None:  # its devices in one domain with room for all of them
                    hosting = {domain for domain, members in self._domain_members(after, demand, excluded).items()
                               if len(members) >= demand.count}
                # One request never takes a device twice (the allocator's rule, shares too);
                # requests after it may share a shareable one.
                out = excluded
                for _ in range(demand.count):
                    best = None
                    for position, step, changed in steps(after, demand_id, out):
                        if hosting is not None and domains[after[position][0]] not in hosting:  # type: ignore[index]
                            continue
                        # The fragmentation of (changed, resources), inline: it runs per candidate.
                        left_free = step[0]
                        value = weight * left_free - sum(map(operator.mul, step[1], fitting)) if left_free else 0
                        if best is None or value < best[0]:
                            best = (value, position, changed, left_free)
                    if best is None:
                        failed = True
                        break
                    if hosting is not None:
                        hosting = {domains[after[best[1]][0]]}  # type: ignore[index]
                    position, after = best[1], best[2]
                    taken.append(position)
                    out = tuple(sorted((*out, position)))
                    if not self.signatures[after[position][0]].shareable:
                        excluded = tuple(sorted((*excluded, position)))
                if failed:
                    break
            if failed:
                # Requests competing for the same devices: this greedy order found no way,
                # another may; the node is not ruled out, only ranked after all others.
                results.append((UNRANKED, (), 0))
            elif best is None:  # nothing to take: the devices stay as they are
                results.append((self.fragmentation((devices, resources)) - before, (), free))
            else:  # the last step's value is the fragmentation after the whole choice
                results.append((best[0] - before, tuple(taken), best[3]))
        return results

    def _steps(self, devices: tuple[DeviceState, ...], demand_id: int, excluded: tuple[int, ...]
               ) -> list[tuple[int, DevicePart, tuple[DeviceState, ...]]]:
        """The devices one device of the demand may take next, each as (position, the device part
        after taking it, the devices after): the earliest of equal devices stands for all, as
        equal devices give equal results; positions in `excluded` (taken by this request, or
        by an earlier one and not shareable) are out. Kept per devices and demand: the shapes that differ only in CPU and memory (most
        of a workload's) share them, and only the weights of what fits then differ."""
        key = (devices, demand_id, excluded)
        known = self._step_memo.get(key)
        if known is None:
            known = []
            seen: set[DeviceState] = set()
            base = self._device_part(devices)
            for position, device in enumerate(devices):
                if device in seen or position in excluded or not self._usable_by(device, demand_id):
                    continue
                seen.add(device)
                new = self._taken(device, demand_id)
                after = (*devices[:position], new, *devices[position + 1:])
                known.append((position, self._changed_part(base, after, device, new), after))
            if len(self._step_memo) >= STEP_MEMO:
                self._step_memo.clear()  # a cache: dropping it only costs recomputing
            self._step_memo[key] = known
        return known

    def _taken(self, device: DeviceState, demand_id: int) -> DeviceState:
        key = (device, demand_id)
        known = self._taken_memo.get(key)
        if known is None:
            known = self._taken_memo[key] = self.take(device, self._demands[demand_id].amounts[device[0]])
        return known

    def balance(self) -> Fraction:
        """The workload's first node resource (CPU, as the scheduling layer models it) per unit of
        device capacity: over the weighted shapes with devices, what they ask of the resource
        over the device capacity they take (a share: its part of the device in its binding
        dimension; a device that cannot be shared: all of it). Computed once per measure."""
        if self._balance is None:
            resource, units = 0, Fraction(0)
            for shape, weight in self.shapes:
                if not shape.resources:
                    continue
                resource += weight * shape.resources[0]
                units += weight * self.size(shape)  # a request no device can serve takes 0
            self._balance = Fraction(resource) / units if units else ZERO
        return self._balance

    def rank(self, state: NodeState, shape: Shape) -> tuple[Key, tuple[int, ...]] | None:
        """`choose` with its tie-breaks: (the order key, device positions), or None when the shape
        cannot fit the node. Keys compare as tuples, least first: the growth of the expected
        fragmentation first, rounded up to whole steps (`step`: 4 % of the capacity the request
        itself takes, in expected fragmentation: 40 milli-GPUs for a whole GPU, 6.4 for a share
        of 160, 320 for 8 GPUs; a request without devices: 40), then

        - for a request with devices: how far the node's CPU left per unit of free device
          capacity, after the placement, is from the workload's (`balance`): a node keeps CPU
          for what its free GPUs will be asked for, neither stranding them (too little CPU per
          GPU) nor holding CPU the GPU tasks will not come for; a node left without free devices
          comes first (-1: nothing of it can be stranded). The distance is in the key twice:
          as the float nearest to it, then exactly (floats compare in C; rounding keeps their
          order, so the exact value only decides between distances that round alike);
        - for a request without devices (a CPU-only pod), which leaves the devices as they are:
          the node's free device capacity, least first, so the CPU it takes strands the fewest
          free GPUs (a node whose GPUs are used up first).

        Then the exact growth, then the name (the caller's order). All of it is exact (ints and
        Fractions; the step is a Fraction, the rounding an integer division).

        Why a step: the exact growth rarely ties, so the tie-breaks, which keep CPU where free
        GPUs will need it, almost never had a say; choices a few milli-GPUs of expected
        fragmentation apart are near-ties, and CPU stranding whole GPUs costs more (FGD, which
        rounds its node score to an integer, ties them too). Why relative to the request: a
        fixed step of 40 milli-GPUs is 0.5 % of what an 8-GPU task moves but a quarter of a
        160-milli share's whole effect: a 160 share filling a 190 residue (30 left, which
        nothing uses) and one on a 410 residue (250 left) were 34 milli-GPUs of expected
        fragmentation apart, within one fixed step, so the CPU tie-break chose between them and
        scattered the small shares, leaving residues of 100-250 milli no later share fits
        (issue 34: multigpu50, where half of the tasks are multi-GPU and the small shares are
        the few that fill the residues of the 810 shares, ended 2.8 GPUs worse over seeds
        0-4 with the fixed step). Measured on the Alibaba trace's inflation experiment
        (bench/quality.py, mean unallocated GPUs over seeds 0-9, issue 34): default 311.8 ->
        275.1, gpushare100 824.3 -> 820.0, multigpu50 162.0 -> 160.3, gpuspec33 320.8 -> 291.2
        (a fixed 40-milli step: 271.3 on default but 165.0 on multigpu50 over seeds 0-5, where
        the exact growth left 163.1); the CPU-only rule
        (issue 18) left 321.3 -> 301.4 GPUs unallocated on the default file, the balance rule
        848.3 -> 810.5 on gpushare100 with it; a best fit on free GPUs or on CPU, or the most
        CPU per free GPU, did worse on some file.
        """
        return self.rank_all((state,), shape)[0]

    def step(self, shape: Shape) -> Amount:
        """The growth within which two choices of the shape are near-ties, in the units of
        `choose`'s growth (1/`unit` of a device times the weights): `STEP` of the shape's own
        device capacity (`size`) in expected fragmentation, that is times the total weight;
        a shape without devices: `STEP` of one whole device. Kept per shape."""
        key = shape.key()
        known = self._step_sizes.get(key)
        if known is None:
            exact = STEP * self.total_weight * (self.size(shape) or self.unit)
            known = exact.numerator if exact.denominator == 1 else exact
            self._step_sizes[key] = known
        return known

    def size(self, shape: Shape) -> Amount:
        """The device capacity the shape takes, in 1/`unit` of a device: per request, its count
        times its part of one device (a share: its part in its binding dimension; a device
        that cannot be shared: all of it), on the first signature it may use (as `balance`)."""
        total: Amount = 0
        for demand in shape.devices:
            total += demand.count * self._part(demand)
        return total

    def _part(self, demand: DeviceDemand) -> Amount:
        """One device of the request, in 1/`unit` of a device (0: no device can serve it)."""
        if not demand.amounts:
            return 0
        signature_id, amounts = min(demand.amounts.items(), key=lambda kv: kv[0])
        signature = self.signatures[signature_id]
        part = (max(Fraction(a) / t for a, t in zip(amounts, signature.totals, strict=True))
                if signature.shareable and signature.totals else ONE) * self.unit
        return part.numerator if part.denominator == 1 else part

    def rank_all(self, states: Sequence[NodeState], shape: Shape) -> list[tuple[Key, tuple[int, ...]] | None]:
        """`rank` of each state for one shape."""
        results: list[tuple[Key, tuple[int, ...]] | None] = []
        balance = self.balance() if shape.devices and shape.resources else ZERO
        numerator, denominator = balance.numerator, balance.denominator
        step = self.step(shape)
        for state, choice in zip(states, self._choices(states, shape), strict=True):
            if choice is None:
                results.append(None)
                continue
            growth, taken, free = choice
            if growth == UNRANKED:
                results.append(((growth,), taken))
                continue
            stepped = -(-growth // step) if step else growth  # rounded up to whole steps: exact
            if not shape.devices:
                results.append(((stepped, free, growth), taken))
            elif not shape.resources:
                results.append(((stepped, growth), taken))
            elif not free:
                results.append(((stepped, -1, -1, growth), taken))
            else:
                left = state[1][0] - shape.resources[0]
                if isinstance(free, int):  # |left / free - p / q| as one Fraction: ints until the end
                    distance = Fraction(abs(left * denominator - numerator * free), free * denominator)
                else:
                    distance = abs(Fraction(left) / free - balance)
                results.append(((stepped, float(distance), distance, growth), taken))
        return results
