"""Nodes the allocator cannot tell apart: one signature per node and cluster state.

An AI fleet is mostly copies: thousands of nodes with the same eight GPUs, many of them
empty or full in the same way. For claims that fit none of them, the search runs on
every node and, to explain why, again with reasons: at 5,000 nodes several seconds for
one pod, all spent finding the same answer again (issue 31). The allocator's answer on a
node depends on the node only through what `signature` holds, so two nodes with equal
signatures get the same answer for any claims, and the same reasons up to the names of
their pools and devices:

- the node's declared features (optional node operations);
- per pool the node sees, in the search's order: its driver, whether it is incomplete or
  invalid (and why), its counter sets, and per device its content (`_content`: the device
  and its slice's fields, without the names that differ between copies: the slice's
  name, node name and pool name) with its state in the cluster
  (exclusively allocated, its shares and the capacity they consume, the taints
  DeviceTaintRules add), and the state of every device consuming the pool's counters.

A device selected per device by node (perDeviceNodeSelection) names its node in its own
fields: no signature then (None), the node is searched as before. Equal signatures are
never wrong to share; unequal ones only share less.

Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

from dralloc.allocation import interruption
from dralloc.allocation.features import Features
from dralloc.allocation.pools import DeviceInfo, NodeView
from dralloc.allocation.snapshots import Snapshot
from dralloc.model import devices


def _content(info: DeviceInfo, slices: dict[int, Hashable]) -> Hashable:
    """The device's and its slice's fields, without the names that differ between copies of a node; computed
    once per published device (DeviceInfo lives as long as its slice does). Attribute and capacity values
    are compared by identity: parsing interns identical values (model.devices), so copies share them, and
    both devices compared are alive (distinct live objects never share an id); a value not interned only
    makes two copies look different. Rare fields are compared by their JSON. `slices`: the slice fields
    already read in this pass, by id(slice) (the slices are alive meanwhile)."""
    known = info.content
    if known is None:
        device, slice_ = info.device, info.slice
        if (device.consumes_counters or device.node_name or device.node_selector or device.all_nodes
                or device.taints or device.binds_to_node or device.binding_conditions
                or device.binding_failure_conditions or device.node_allocatable_resources):
            rest: Hashable = device.model_dump_json(exclude={"name", "attributes", "capacity"})
        else:
            rest = device.allow_multiple_allocations
        where = slices.get(id(slice_))
        if where is None:
            spec = slice_.spec
            place: Hashable = (spec.model_dump_json(include={"node_selector", "shared_counters"})
                               if spec.node_selector is not None or spec.shared_counters else None)
            where = slices[id(slice_)] = (
                spec.driver, spec.pool.generation, spec.pool.resource_slice_count, spec.all_nodes,
                spec.per_device_node_selection, spec.skip_node_operations, spec.partition_type_attribute, place)
        capacity = device.capacity
        known = info.content = (
            device.name, info.attribute_keys.names, tuple(map(id, device.attributes.values())),
            tuple(capacity), tuple(map(id, capacity.values())), rest, where)
    return known


def _state(info: DeviceInfo, snapshot: Snapshot) -> Hashable:
    allocated, device = snapshot.allocated, info.id
    shares = allocated.share_counts.get(device)
    consumed = allocated.consumed_capacity.get(device)
    return (device in allocated.exclusive, shares,
            tuple(sorted(consumed.items())) if consumed else None,
            snapshot.extra_taints.get(device))


def content_key(snapshot: Snapshot, node: NodeView, features: Features) -> Hashable | None:
    """The node's signature without the devices' state: what cannot change while the slices do not.
    Nodes with different content keys are never equivalent. Kept with the slice index."""
    scope = snapshot.slices.scope_for(node, features)
    memo = snapshot.slices.memo
    known = memo.get(("content", id(scope)))
    if known is not None and known[0] is scope:
        return known[1]  # type: ignore[no-any-return]
    parts: list[Hashable] = [node.declared_features]
    found: Hashable | None = None
    slices: dict[int, Hashable] = {}
    for pool in scope.pools:
        if any(info.per_device_node for info in pool.devices):
            break
        counters: Hashable = None
        if pool.counter_sets:
            counters = (tuple(sorted((name, tuple(sorted(values.items()))) for name, values in pool.counter_sets.items())),
                        tuple([_content(c, slices) for c in pool.counter_consumers]))
        parts.append((pool.id.driver, pool.incomplete, pool.invalid_reason, pool.has_binding_conditions,
                      tuple([_content(info, slices) for info in pool.devices]), counters))
    else:
        found = tuple(parts)
    memo[("content", id(scope))] = (scope, found)  # the scope is kept: its id names no other object
    return found


def signature(snapshot: Snapshot, node: NodeView, features: Features) -> Hashable | None:
    """What the allocator's answer on the node depends on, without the node's names; None when the node
    cannot be compared (a device that names its node)."""
    content = content_key(snapshot, node, features)
    if content is None:
        return None
    scope = snapshot.slices.scope_for(node, features)
    states = tuple(
        (tuple(_state(info, snapshot) for info in pool.devices),
         tuple(_state(c, snapshot) for c in pool.counter_consumers) if pool.counter_sets else None)
        for pool in scope.pools)
    found = (content, states)
    try:
        hash(found)
    except TypeError:  # a taint or value that cannot be hashed: compare nothing rather than guess
        return None
    return found


def with_copies(snapshot: Snapshot, views: list[NodeView], features: Features, *,
                build: bool = True) -> list[bool] | None:
    """Per node, whether another node of `views` has the same content key: only such a node can ever share
    an answer, so only its signature is worth computing. Kept with the slice index for this list of views.
    The first time it reads every node's own slices, and the pools of the nodes whose slices look alike
    (`_fingerprint`; at 5,000 identical nodes about half a second): `build=False` answers None rather
    than pay that."""
    memo = snapshot.slices.memo
    known = memo.get(("copies", features))
    if known is not None and known[0] is views:
        return known[1]  # type: ignore[no-any-return]
    if not build:
        return None
    # A node whose own slices are like no other node's has no copy: its pools and content key are not
    # built for the comparison (a fleet's devices publish UUIDs, so every node is such, and reading
    # every node's pools was most of the comparison). The rest are compared by content key.
    slices = snapshot.slices
    prints = [_fingerprint(slices.pinned_to(view.name)) for view in views]
    alike: dict[Hashable, int] = {}
    for found_print in prints:
        if found_print is not None:
            alike[found_print] = alike.get(found_print, 0) + 1
    # Checked against the decision's CPU budget: a tenant's pod may be what triggers it. What was done
    # (each device's content, each scope's key) stays memoized, so an interrupted comparison resumes.
    keys = [content_key(snapshot, view, features) if found_print is None or alike[found_print] > 1 else None
            for view, found_print in zip(interruption.every(views), prints, strict=True)]
    counts: dict[Hashable, int] = {}
    for key in keys:
        if key is not None:
            counts[key] = counts.get(key, 0) + 1
    found = [key is not None and counts[key] > 1 for key in keys]
    memo[("copies", features)] = (views, found)
    return found


def _fingerprint(pinned: Sequence[devices.ResourceSlice]) -> Hashable | None:
    """What a node's own slices (those naming it) look like, cheaply: per slice its driver, its number of
    devices and the attribute values of its first device (by identity, as `_content` compares them);
    None for a node without such slices. Copies of a node have equal fingerprints as a rule (a copy
    whose own slices differ, say by an obsolete generation, only goes unnoticed: it is searched on its
    own, as a node without copies is); equal fingerprints are compared by content key."""
    if not pinned:
        return None
    return frozenset(
        (s.spec.driver, len(s.spec.devices), tuple(map(id, s.spec.devices[0].attributes.values())) if s.spec.devices
         else ())
        for s in pinned)


def names_of(snapshot: Snapshot, node: NodeView, features: Features) -> tuple[str, ...]:
    """The names a reason on this node could mention that a copy of the node would not: the node's, its
    pools' and its slices'. A reason mentioning none of them reads the same on any copy."""
    scope = snapshot.slices.scope_for(node, features)
    found = {node.name}
    for pool in scope.pools:
        found.add(pool.id.pool)
        found.update(s.metadata.name for s in pool.slices)
    return tuple(n for n in found if n)
