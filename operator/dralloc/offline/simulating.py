"""`dralloc simulate`: would this workload fit, where would it land, what is left?

Places workload items (unallocated ResourceClaims, and Pods with their claim
templates) one at a time, in file order, with the operator's own placement code
(`dralloc.scheduling.placement.Placer`), adding each result to the in-use state
before the next item. Reports what was placed and where, what was not and why,
placements per second, device utilization per class and pool, and
fragmentation: how many nodes could still take a request for 1, 2, 4 or 8
devices of each class.

An item the allocator rejects as invalid (unknown class, CEL error, ...) is
reported unplaced with its error, and the run goes on; such errors are counted
apart from items that found no room, and make the exit code 2.

Pods that name a scheduling.k8s.io PodGroup with the gang policy are placed as the
operator places them, all or none, when the gang has minCount members
(`offline.ganging`); the report has a line per gang besides its members' own.

`--batch N` (fragmentation-aware only; issue 34's FA-batch): single pods are taken N at a
time and each burst is decided as one (`_Burst`, the orders and the choice in
`scheduling.batching`): tried in arrival order and a few hardest-first orders, each undone,
and the best kept (most device capacity allocated, then least expected fragmentation;
ties keep arrival order). Gang members, claims, and pods with shared claims or volumes
are not batched: the burst before them is decided first, then they are placed as they
arrive. Results stay in arrival order.
"""

from __future__ import annotations

import dataclasses
import importlib
import io
import json
import sys
import time
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any, TextIO

from dralloc import allocation
from dralloc.allocation import errors, outcomes, selectors
from dralloc.allocation.features import Features
from dralloc.allocation.pools import DeviceInfo, NodeView, PoolID
from dralloc.allocation.snapshots import AllocatedState, Snapshot
from dralloc.lifecycle import extended
from dralloc.model import claims as model_claims
from dralloc.model import classes as model_classes
from dralloc.model import conversion
from dralloc.model import pods as model_pods
from dralloc.model import scheduling as model_scheduling
from dralloc.model.base import Object, ObjectMeta
from dralloc.model.quantities import Quantity, QuantityFormat
from dralloc.offline import adding, allocating, ganging, heap, inputs, optimizing
from dralloc.scheduling import batching, consolidating, placement
from dralloc.wording import plural

EXIT_ALL_PLACED, EXIT_SOME_UNPLACED, EXIT_INPUT_ERROR = 0, 1, 2
# Exit 2 also when the run completed but some items were invalid (reported as errors).
FRAGMENTATION_SIZES = (1, 2, 4, 8)
# Kinds a workload file may hold that are not placed and not worth a note.
_QUIET_KINDS = frozenset({"Namespace", "ConfigMap", "Secret", "ServiceAccount", "Service"})


@dataclasses.dataclass(frozen=True)
class Request:
    snapshot_files: Sequence[str]
    workload_files: Sequence[str] = ()
    policy: str = "first-fit"
    features: Features = dataclasses.field(default_factory=Features)
    placements_out: str | None = None
    output: str = "table"
    budget: int | None = allocation.DEFAULT_BUDGET
    progress: bool | None = None  # None: only when stderr is a terminal
    optimal: float | None = None  # seconds for the exact solver (--optimal); None: not asked
    add_nodes: str | None = None  # a Node + ResourceSlices file: how many such nodes the leftovers need
    batch: int = 1  # --batch: single pods decided N at a time (`scheduling.batching`); 1: one by one
    batch_orders: int = batching.DEFAULT_ORDERS  # --batch-orders: orders tried per burst
    consolidate: int = 0  # --consolidate M: a pod that fits nowhere may move M movable pods (`scheduling.consolidating`)


@dataclasses.dataclass
class ItemResult:
    item: placement.Item
    placement: placement.Placement | None
    reason: str = ""
    error: bool = False  # not placed because the item itself is invalid (bad class, CEL, ...)
    budget_exhausted: bool = False  # not placed, and the search budget ran out on some node
    gang: str | None = None  # a gang member: its PodGroup (namespace/name), and `reason` the gang's


def _ref(obj: Object) -> str:
    """namespace/name, with the namespace a namespaced object gets when none is written: default."""
    return f"{obj.metadata.namespace or 'default'}/{obj.metadata.name}"


def _defaulted(pod: model_pods.Pod) -> model_pods.Pod:
    """The pod as the API server stores it: a container's limits are its requests where it has none.

    (kube-apiserver's Pod defaulting; manifests such as the drivers' demos write only limits,
    e.g. `nvidia.com/gpu: 1`, and both node fit and extended resources read requests.)
    """
    def container(c: model_pods.Container) -> model_pods.Container:
        missing = {k: v for k, v in c.resources.limits.items() if k not in c.resources.requests}
        if not missing:
            return c
        resources = c.resources.model_copy(update={"requests": {**c.resources.requests, **missing}})
        return c.model_copy(update={"resources": resources})

    spec = pod.spec
    containers = tuple(container(c) for c in spec.containers)
    init_containers = tuple(container(c) for c in spec.init_containers)
    if all(a is b for a, b in zip([*containers, *init_containers], [*spec.containers, *spec.init_containers],
                                  strict=True)):
        return pod
    return pod.model_copy(update={"spec": spec.model_copy(update={"containers": containers,
                                                                   "init_containers": init_containers})})


def _extended_claim(pod: model_pods.Pod, classes: Sequence[model_classes.DeviceClass]
                    ) -> model_claims.ResourceClaim | None:
    """The claim for the pod's DRA extended resources (KEP-5004), as the operator makes it
    (`lifecycle.extended`), named `<pod>-extended-resources` (the API server would add a random
    suffix to that generateName); None when the pod asks for none a DeviceClass serves."""
    raw = extended.extended_resource_claim(pod, classes)
    if raw is None:
        return None
    metadata = {k: v for k, v in raw["metadata"].items() if k not in ("generateName", "ownerReferences")}
    metadata["name"] = extended.generate_name(pod.metadata.name).rstrip("-")
    parsed: model_claims.ResourceClaim = conversion.parse_as(model_claims.ResourceClaim, {**raw, "metadata": metadata})
    return parsed


def pod_item(pod: model_pods.Pod, templates: dict[str, model_claims.ResourceClaimTemplate],
             claims_by_ref: dict[str, model_claims.ResourceClaim],
             classes: Sequence[model_classes.DeviceClass]) -> placement.Item:
    """The pod as a placement item: a claim made from the template of each template entry (named
    `<pod>-<entry>`), the claim of each resourceClaimName entry (those already allocated apart, in
    `allocated`), and the claim of its DRA extended resources; templates and claims are keyed
    `namespace/name`. InputError names an entry whose template or claim is not in the input.

    `kubectl dralloc why` (`dralloc.plugin`) builds its pod the same way.
    """
    namespace = pod.metadata.namespace or "default"
    to_allocate: list[model_claims.ResourceClaim] = []
    allocated: list[model_claims.ResourceClaim] = []
    for entry in pod.spec.resource_claims:
        if entry.resource_claim_template_name:
            key = f"{namespace}/{entry.resource_claim_template_name}"
            template = templates.get(key)
            if template is None:
                raise inputs.InputError(
                    f"Pod {namespace}/{pod.metadata.name}: spec.resourceClaims[{entry.name}]."
                    f"resourceClaimTemplateName: no ResourceClaimTemplate {key} in the input")
            to_allocate.append(model_claims.ResourceClaim(
                metadata=ObjectMeta(name=f"{pod.metadata.name}-{entry.name}", namespace=namespace,
                                    labels=template.spec.metadata.labels),
                spec=template.spec.spec,
            ))
        elif entry.resource_claim_name:
            key = f"{namespace}/{entry.resource_claim_name}"
            claim = claims_by_ref.get(key)
            if claim is None:
                raise inputs.InputError(
                    f"Pod {namespace}/{pod.metadata.name}: spec.resourceClaims[{entry.name}].resourceClaimName: "
                    f"no ResourceClaim {key} in the input")
            (allocated if claim.status.allocation is not None else to_allocate).append(claim)
    special = _extended_claim(pod, classes)
    if special is not None:
        to_allocate.append(special)
    return placement.Item(name=pod.metadata.name, claims=tuple(to_allocate), pod=pod, allocated=tuple(allocated))


def _workload(request: Request, snapshot_cluster: inputs.Cluster, err: TextIO
              ) -> tuple[list[object], inputs.Cluster]:
    if not request.workload_files:
        return [c for c in snapshot_cluster.resource_claims if c.status.allocation is None], snapshot_cluster
    ordered: list[object] = []
    cluster = inputs.Cluster()
    for path in request.workload_files:
        part = inputs.load([path], controllers=True)
        if not part.controllers:
            inputs.check_not_empty(part, [path])  # a file of other kinds only (Namespaces, ...) is fine
        skipped = {k: n for k, n in part.skipped_kinds.items() if k not in _QUIET_KINDS}
        if skipped:
            kinds = ", ".join(f"{n} {k}" for k, n in sorted(skipped.items()))
            err.write(f"note: --workload {'stdin' if path == '-' else path}: not placed, of kinds simulate does "
                      f"not read: {kinds}\n")
        cluster.claim_templates.extend(part.claim_templates)
        cluster.resource_claims.extend(part.resource_claims)
        for obj in part.ordered:
            if isinstance(obj, model_pods.Pod | model_scheduling.PodGroup) or (
                isinstance(obj, model_claims.ResourceClaim) and obj.status.allocation is None
            ):
                ordered.append(obj)
    if not any(isinstance(obj, model_pods.Pod | model_claims.ResourceClaim) for obj in ordered):
        files = ", ".join("stdin" if path == "-" else path for path in request.workload_files)
        raise inputs.InputError(f"--workload {files}: no Pod, no workload controller with replicas and no "
                                f"unallocated ResourceClaim: nothing to place")
    return ordered, cluster


class _Amounts:
    """Totals and amounts in use per name (counters in nano-units, capacities as Fractions), printed in
    the format the driver wrote the amounts in when it is known (a NIC's "1600G" stays decimal)."""

    def __init__(self) -> None:
        self.total: dict[str, Fraction] = {}
        self.used: dict[str, Fraction] = {}
        self.formats: dict[str, QuantityFormat] = {}

    def add(self, name: str, total: Fraction, used: Fraction, fmt: QuantityFormat | None = None) -> None:
        self.total[name] = self.total.get(name, Fraction(0)) + total
        self.used[name] = self.used.get(name, Fraction(0)) + used
        if fmt is not None:
            self.formats.setdefault(name, fmt)

    def as_dict(self) -> dict[str, dict[str, Any]]:
        return {name: {"total": _quantity(self.total[name], self.formats.get(name)),
                       "inUse": _quantity(self.used[name], self.formats.get(name)),
                       "percent": _percent(self.used[name], self.total[name])}
                for name in sorted(self.total)}


def _quantity(value: Fraction, fmt: QuantityFormat | None = None) -> str:
    """`fmt` None (a counter: only its nano-units are kept): binary for whole numbers, as memory is written."""
    if fmt is None:
        fmt = QuantityFormat.BINARY_SI if value.denominator == 1 else QuantityFormat.DECIMAL_SI
    return str(Quantity(value, fmt))


def _percent(used: Fraction | int, total: Fraction | int) -> float | None:
    return round(float(100 * Fraction(used) / Fraction(total)), 1) if total else None


@dataclasses.dataclass
class _Use:
    devices: int = 0
    in_use: int = 0
    counter_sets: set[tuple[PoolID, str]] = dataclasses.field(default_factory=set)
    capacity: _Amounts = dataclasses.field(default_factory=_Amounts)

    def as_dict(self, counter_use: dict[tuple[PoolID, str], dict[str, tuple[int, int]]]) -> dict[str, Any]:
        counters = _Amounts()
        for key in sorted(self.counter_sets):
            for name, (total, used) in counter_use.get(key, {}).items():
                counters.add(name, Fraction(total, NANO), Fraction(used, NANO))
        return {"devices": self.devices, "inUse": self.in_use, "percent": _percent(self.in_use, self.devices),
                "counters": counters.as_dict(), "capacity": self.capacity.as_dict()}


NANO = 10**9


def _capacity_use(info: DeviceInfo, allocated: AllocatedState
                  ) -> dict[str, tuple[Fraction, Fraction, QuantityFormat]]:
    """A shareable device's consumable capacity: name -> (total, in use, the format of its total); {} for
    other devices."""
    if not info.allow_multiple:
        return {}
    consumed = allocated.consumed_capacity.get(info.id, {})
    whole = info.id in allocated.exclusive
    return {name: (c.value.value, c.value.value if whole else min(consumed.get(name, Fraction(0)), c.value.value),
                   c.value.format)
            for name, c in info.capacity.items()}


def utilization(snapshot: Snapshot, views: Sequence[NodeView], features: Features) -> dict[str, Any]:
    """Per class and per pool: devices (total, in use), shared counters and consumable capacity.

    Counters are those of the pools' `sharedCounters`, used up by every allocated device that
    consumes them (as the allocator counts them); a class's counters are those of the counter
    sets its devices consume from, whoever uses them. Consumable capacity is that of devices
    with `allowMultipleAllocations`: what their shares consume (all of it when a device is
    allocated whole). Counters and capacities add up by name across sets and devices.
    """
    allocated = snapshot.allocated
    busy = set(allocated.exclusive) | allocated.shared
    per_pool: dict[PoolID, _Use] = {}
    per_class: dict[str, _Use] = {name: _Use() for name in snapshot.classes}
    counter_use: dict[tuple[PoolID, str], dict[str, tuple[int, int]]] = {}
    seen: set[object] = set()
    for view in views:
        for pool in snapshot.slices.pools_for(view, features):
            pool_use = per_pool.setdefault(pool.id, _Use())
            for set_name, counters in pool.counter_sets.items():
                key = (pool.id, set_name)
                if key in counter_use:
                    continue
                used = {name: 0 for name in counters}
                for info in pool.counter_consumers:
                    if info.id in busy:
                        for consumed_set, amounts in info.consumes:
                            if consumed_set == set_name:
                                for name, value in amounts:
                                    if name in used:
                                        used[name] += value
                counter_use[key] = {name: (total, used[name]) for name, total in counters.items()}
                pool_use.counter_sets.add(key)
            for info in pool.devices:
                if info.id in seen:
                    continue
                seen.add(info.id)
                in_use = info.id in busy
                capacity = _capacity_use(info, allocated)
                sets = {(pool.id, set_name) for set_name, _ in info.consumes}
                targets = [pool_use] + [per_class[name] for name, device_class in snapshot.classes.items()
                                        if selectors.in_class(info, device_class)]
                for use in targets:
                    use.devices += 1
                    use.in_use += in_use
                    use.counter_sets |= sets
                    for name, (total, used_amount, fmt) in capacity.items():
                        use.capacity.add(name, total, used_amount, fmt)
    return {"classes": {k: v.as_dict(counter_use) for k, v in per_class.items()},
            "pools": {str(k): v.as_dict(counter_use) for k, v in sorted(per_pool.items())}}


def fragmentation(placer: placement.Placer) -> dict[str, dict[str, int]]:
    """Per class and size k: how many nodes could still allocate k devices of the class."""
    result: dict[str, dict[str, int]] = {}
    for class_name in placer.snapshot.classes:
        counts = {str(k): 0 for k in FRAGMENTATION_SIZES}
        # One probe claim per size, the same on every node (models are immutable).
        probes = {k: model_claims.ResourceClaim.model_validate({
            "metadata": {"name": f"probe-{k}", "namespace": "default"},
            "spec": {"devices": {"requests": [{"name": "r", "exactly": {
                "deviceClassName": class_name, "allocationMode": "ExactCount", "count": k}}]}},
        }) for k in FRAGMENTATION_SIZES}
        for view in placer.views:
            for k in FRAGMENTATION_SIZES:
                probe = probes[k]
                try:
                    outcome = allocation.allocate(placer.snapshot, [probe], view, features=placer.features,
                                                  explain=False)
                except errors.AllocationInputError:
                    break
                if not isinstance(outcome, outcomes.Allocated):
                    break  # a node that cannot take k devices cannot take more
                counts[str(k)] += 1
        result[class_name] = counts
    return result


def _placement_line(result: ItemResult) -> str:
    assert result.placement is not None
    parts = [result.item.name, result.placement.node]
    for allocation_ in result.placement.results:
        parts.extend(f"{r.request}={r.driver}/{r.pool}/{r.device}" for r in allocation_.devices.results)
    return " ".join(parts)


class _Progress:
    def __init__(self, total: int, enabled: bool, err: TextIO) -> None:
        self.total, self.enabled, self.err = total, enabled, err
        self.start = time.monotonic()
        self.last = 0.0
        self.shown = False

    def update(self, done: int) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self.start < 1.0 or now - self.last < 0.2:
            return
        self.last, self.shown = now, True
        width = 30
        filled = int(width * done / max(self.total, 1))
        self.err.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{self.total}")
        self.err.flush()

    def close(self) -> None:
        if self.shown:
            self.err.write("\n")


def load_cel_engine() -> None:
    """Import the CEL engine (celpy, lark: about half a second), which the allocator imports on its first
    CEL selector: a report's placements per second time the placements, not the process's start-up."""
    importlib.import_module("dralloc.cel.selectors")


def simulate(request: Request, err: TextIO | None = None) -> dict[str, Any]:
    """Run the simulation; raises InputError / AllocationInputError on bad input."""
    err = err if err is not None else sys.stderr
    with heap.LongLived() as long_lived:
        placer, workload, templates, claims_by_ref = prepare(request, err)
        long_lived.built()
        optimum = None
        if request.optimal is not None:
            # On the cluster as the snapshot has it, before any placement: its own model.
            fresh = prepare(dataclasses.replace(request, policy="fragmentation-aware"), io.StringIO())[0]
            # Gang members are left out: the solver places items one by one, not all or none.
            members = {id(pod) for pod in gang_members(workload)}
            singles = [o for o in workload if id(o) not in members]
            items = items_of(singles, templates, claims_by_ref, list(fresh.snapshot.classes.values()))
            optimum = optimizing.solve(fresh, items, time_limit=request.optimal)
            if members:
                optimum = dataclasses.replace(optimum, left_out=optimum.left_out + len(members),
                                              gang_members=len(members))
        template = adding.read_template(request.add_nodes) if request.add_nodes else None
        load_cel_engine()
        start = time.perf_counter()
        results = place_workload(placer, workload, templates, claims_by_ref, request, err)
        report = _report(placer, results, time.perf_counter() - start, request.features)
        if optimum is not None:
            report["optimal"] = optimum.as_dict()
        if template is not None:
            # Added nodes are tried for single items: a gang's members are left out (and counted).
            unplaced = [r.item for r in results if r.placement is None and not r.error and r.gang is None]
            report["addNodes"] = adding.fewest(placer, template, unplaced, request.features)
            left_out = sum(r.placement is None and not r.error and r.gang is not None for r in results)
            if left_out:
                report["addNodes"]["gangMembersLeftOut"] = left_out
        return report


def prepare(request: Request, err: TextIO) -> tuple[placement.Placer, list[object],
                                                     dict[str, model_claims.ResourceClaimTemplate],
                                                     dict[str, model_claims.ResourceClaim]]:
    """Everything the placement loop needs: the inputs read, the snapshot and node indexes built. The
    workload is its objects in order: Pods, unallocated ResourceClaims, and the PodGroups of both inputs
    (the snapshot's first), which gang members name."""
    cluster = inputs.load(request.snapshot_files)
    inputs.check_not_empty(cluster, request.snapshot_files)
    workload, workload_cluster = _workload(request, cluster, err)
    if request.workload_files:
        workload = [*cluster.pod_groups, *workload]
    features = request.features
    snapshot = inputs.snapshot_of(cluster, features)
    found = inputs.nodes_of(cluster, request.snapshot_files)
    err.write(found.note())
    placer = placement.Placer(node_list=found.nodes, snapshot=snapshot, features=features, policy=request.policy,
                              bound_pods=[_defaulted(p) for p in cluster.pods if p.spec.node_name],
                              budget=request.budget)
    templates = {_ref(t): t for t in [*cluster.claim_templates, *workload_cluster.claim_templates]}
    claims_by_ref = {_ref(c): c for c in [*cluster.resource_claims, *workload_cluster.resource_claims]}
    return placer, workload, templates, claims_by_ref


def gang_members(workload: list[object]) -> list[model_pods.Pod]:
    """The workload's pods that are placed as members of a gang (`offline.ganging`): those naming a PodGroup
    that is not one with the basic policy."""
    basic = {(g.metadata.namespace or "default", g.metadata.name) for g in workload
             if isinstance(g, model_scheduling.PodGroup) and g.spec.scheduling_policy.gang is None}
    return [o for o in workload if isinstance(o, model_pods.Pod)
            and (key := ganging.group_key(o)) is not None and key not in basic]


def items_of(workload: list[object], templates: dict[str, model_claims.ResourceClaimTemplate],
             claims_by_ref: dict[str, model_claims.ResourceClaim], classes: Sequence[model_classes.DeviceClass]
             ) -> list[placement.Item]:
    """The workload as items, as placed from the start (a shared claim counts with each pod)."""
    return [pod_item(_defaulted(o), templates, claims_by_ref, classes) if isinstance(o, model_pods.Pod)
            else placement.Item(name=o.metadata.name, claims=(o,))
            for o in workload if isinstance(o, model_pods.Pod | model_claims.ResourceClaim)]


def place_workload(placer: placement.Placer, workload: list[object],
                   templates: dict[str, model_claims.ResourceClaimTemplate],
                   claims_by_ref: dict[str, model_claims.ResourceClaim], request: Request, err: TextIO
                   ) -> list[ItemResult]:
    """The placement loop: each item in order, committed before the next (bench/scale.py times it). A gang's
    members are placed together when the gang is complete enough (`offline.ganging`)."""
    results = Results()
    classes = list(placer.snapshot.classes.values())
    total = sum(not isinstance(obj, model_scheduling.PodGroup) for obj in workload)
    progress = _Progress(total, err.isatty() if request.progress is None else request.progress, err)
    if placer.model is not None:
        # The fragmentation-aware policy weighs choices by the shapes still to come: here the
        # whole workload is the queue.
        placer.expect(items_of(workload, templates, claims_by_ref, classes))
    consolidator: consolidating.Consolidator | None = None
    if request.consolidate > 0 and placer.model is not None:
        consolidator = consolidating.Consolidator(
            placer, request.consolidate,
            lambda item, decision: batching.as_bound(item.pod, decision),
            lambda entry, decision: _record(entry.item, decision, claims_by_ref))
        results.consolidation = consolidator.stats

    def settled(entry: ItemResult) -> None:
        """A single item decided: a placed one may be moved later, one that fits nowhere may get room."""
        if consolidator is None or entry.error or entry.gang is not None:
            return
        pod = entry.item.pod
        if entry.placement is None and pod is not None and batching.batchable(pod, entry.item):
            made = consolidator.make_room(entry.item)
            if made is None:
                return
            _record(entry.item, made, claims_by_ref)
            entry.placement, entry.budget_exhausted = made, False
        if entry.placement is not None:
            consolidator.placed(entry)

    burst: _Burst | None = None
    if request.batch > 1 and placer.model is not None:
        burst = _Burst(placer, items_of(workload, templates, claims_by_ref, classes), request.batch,
                       request.batch_orders, claims_by_ref, settled)
    gangs = None
    if any(isinstance(obj, model_pods.Pod) and ganging.group_key(obj) is not None for obj in workload):
        gangs = ganging.Gangs(
            [g for g in workload if isinstance(g, model_scheduling.PodGroup)], list(placer.placed.all()),
            {name: dict(node.metadata.labels) for name, node in placer.placed.nodes.items()},
            lambda item, decision: _record(item, decision, claims_by_ref))
    for done, obj in enumerate(workload):
        if isinstance(obj, model_scheduling.PodGroup):
            continue
        if isinstance(obj, model_pods.Pod):
            pod = _defaulted(obj)
            item = pod_item(pod, templates, claims_by_ref, classes)
            key = gangs.key_of(pod) if gangs is not None else None
            if burst is not None and key is None and batching.batchable(pod, item):
                entry = ItemResult(item, None)
                results.append(entry)
                burst.add(entry)
                progress.update(done + 1)
                continue
            if burst is not None:
                burst.flush()  # what arrived before this item is decided before it
            if gangs is not None and key is not None:
                member = ItemResult(item, None, gang=f"{key[0]}/{key[1]}")
                results.append(member)
                gangs.arrive(key, pod, member, placer)
                progress.update(done + 1)
                continue
        else:
            assert isinstance(obj, model_claims.ResourceClaim)
            if burst is not None:
                burst.flush()
            current = claims_by_ref.get(_ref(obj), obj)
            if current.status.allocation is not None:
                continue  # allocated earlier in this run, as a pod's shared claim
            item = placement.Item(name=obj.metadata.name, claims=(current,))
        try:
            decision = placer.place(item, explain=False)
        except errors.AllocationInputError as exc:
            # One invalid item (unknown class, bad CEL, ...) must not stop the others.
            results.append(ItemResult(item, None, f"error: {errors.for_users(exc)}", error=True))
            progress.update(done + 1)
            continue
        if isinstance(decision, placement.Placement):
            placer.commit(item, decision)
            _record(item, decision, claims_by_ref)
            results.append(ItemResult(item, decision))
        else:
            results.append(ItemResult(item, None, "", budget_exhausted=decision.budget_exhausted))
        settled(results[-1])
        progress.update(done + 1)
    if burst is not None:
        burst.flush()
    progress.close()
    # Reasons at the end, not when each item failed: items only ever add allocations here, so an
    # item that did not fit then does not fit now, and items of one shape share one explanation
    # of the final state instead of one per change in between (half the run otherwise).
    for entry in results:
        if entry.placement is None and not entry.error and entry.gang is None:
            explanation = placer.explanation(entry.item, budget_exhausted=entry.budget_exhausted)
            entry.reason = allocating.offline_wording(explanation.message(), request.budget)
    if gangs is not None:
        results.gangs = gangs.summaries()
    return results


class _Burst:
    """`--batch N`: single pods gathered N at a time and decided together (`scheduling.batching`: the
    orders tried on the placer and undone, the best kept; arrival order wins ties, and no order is
    kept that loses an item arrival order places). The chosen placements are then committed: the
    cluster is the same as when they were found, so they are valid as they are."""

    def __init__(self, placer: placement.Placer, workload: Sequence[placement.Item], size: int, orders: int,
                 claims_by_ref: dict[str, model_claims.ResourceClaim],
                 settled: Callable[[ItemResult], None]) -> None:
        assert placer.model is not None
        self.placer, self.size, self.orders, self.claims_by_ref = placer, size, orders, claims_by_ref
        self.settled = settled  # told of each item once its burst is decided, in the order decided
        self.pending: list[ItemResult] = []
        self.counts = batching.shape_counts(placer, workload)

    def add(self, entry: ItemResult) -> None:
        self.pending.append(entry)
        if len(self.pending) >= self.size:
            self.flush()

    def flush(self) -> None:
        if not self.pending:
            return
        pending, placer = self.pending, self.placer
        order: Sequence[int] = (0,)
        if len(pending) == 1:
            decisions = self._one(pending[0].item)
        else:
            choice = batching.choose(placer, [entry.item for entry in pending], self.counts, self.orders)
            order, decisions = choice.order, choice.decisions
        for i in order:
            entry, decision = pending[i], decisions[i]
            if isinstance(decision, Exception):
                entry.reason, entry.error = f"error: {errors.for_users(decision)}", True
            elif isinstance(decision, placement.Placement):
                if len(pending) > 1:
                    placer.commit(entry.item, decision)
                _record(entry.item, decision, self.claims_by_ref)
                entry.placement = decision
            else:
                entry.budget_exhausted = decision.budget_exhausted
        for i in order:
            self.settled(pending[i])
        self.pending = []

    def _one(self, item: placement.Item) -> dict[int, batching.Decision]:
        """A burst of one: placed as one by one places it (committed here)."""
        try:
            decision = self.placer.place(item, explain=False)
        except errors.AllocationInputError as exc:
            return {0: exc}
        if isinstance(decision, placement.Placement):
            self.placer.commit(item, decision)
        return {0: decision}


class Results(list[ItemResult]):
    """The items' results in order, and `gangs`: one summary per gang (`offline.ganging.Gang.summary`)."""

    gangs: list[dict[str, Any]]
    consolidation: consolidating.Stats | None

    def __init__(self) -> None:
        super().__init__()
        self.gangs = []
        self.consolidation = None


def _record(item: placement.Item, decision: placement.Placement,
            claims_by_ref: dict[str, model_claims.ResourceClaim]) -> None:
    """A placed item's claims, allocated, for the items after it that name them (shared claims)."""
    for claim, result in zip(item.claims, decision.results, strict=True):
        if _ref(claim) in claims_by_ref:
            claims_by_ref[_ref(claim)] = claim.model_copy(
                update={"status": claim.status.model_copy(update={"allocation": result})})


def _report(placer: placement.Placer, results: list[ItemResult], elapsed: float, features: Features
            ) -> dict[str, Any]:
    placed = [r for r in results if r.placement is not None]
    return {
        "items": len(results),
        "placed": len(placed),
        "errors": sum(r.error for r in results),
        "unplaced": [{"name": r.item.name, "reason": r.reason, **({"error": True} if r.error else {}),
                      **({"podGroup": r.gang} if r.gang is not None else {})}
                     for r in results if r.placement is None],
        "seconds": elapsed,
        "placementsPerSecond": len(placed) / elapsed if elapsed > 0 else 0.0,
        "allocatorCalls": placer.allocator_calls,
        "placements": [_placement_line(r) for r in placed],
        "utilization": utilization(placer.snapshot, placer.views, features),
        "fragmentation": fragmentation(placer),
        "gangs": results.gangs if isinstance(results, Results) else [],
        **({"consolidation": dataclasses.asdict(results.consolidation)}
           if isinstance(results, Results) and results.consolidation is not None else {}),
    }


def _amounts_text(amounts: dict[str, dict[str, Any]]) -> str:
    return ", ".join(f"{name} {_pair(a['inUse'], a['total'])}" + (f" ({a['percent']:.0f}%)" if a["percent"] is not None
                                                                else "") for name, a in amounts.items())


_BINARY_UNITS = (("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))
# No "k": thousands read as well in digits (a trace's compute 2000/2000, not 2k/2k).
_DECIMAL_UNITS = (("E", 10**18), ("P", 10**15), ("T", 10**12), ("G", 10**9), ("M", 10**6))


def _pair(used: str, total: str) -> str:
    """"used/total" in one unit, the largest both are whole multiples of (220G/3200G, 9840/10000, 8Gi/160Gi),
    binary when either is written binary; as written when either is not a whole number."""
    used_value, total_value = Quantity.parse(used).value, Quantity.parse(total).value
    if used_value.denominator != 1 or total_value.denominator != 1:
        return f"{used}/{total}"
    units = _BINARY_UNITS if any(text.endswith("i") for text in (used, total)) else _DECIMAL_UNITS
    for suffix, unit in units:
        if used_value % unit == 0 and total_value % unit == 0 and total_value:
            return f"{used_value // unit}{suffix}/{total_value // unit}{suffix}"
    return f"{used_value}/{total_value}"


def _use_rows(entries: dict[str, dict[str, Any]], limit: int | None = None) -> list[str]:
    """One line per class or pool: devices in use, then counters and capacity when there are any."""
    names = list(entries)[:limit] if limit is not None else list(entries)
    if not names:
        return []
    width = max(len(n) for n in names)
    digits = max(len(str(entries[n]["devices"])) for n in names)
    lines = []
    for name in names:
        use = entries[name]
        share = f"({use['percent']:.0f}%)" if use["percent"] is not None else "(-)"
        line = f"  {name:{width}}  {use['inUse']:>{digits}} / {use['devices']:>{digits}} devices in use {share:>6}"
        extra = [f"counters {_amounts_text(use['counters'])}"] if use["counters"] else []
        extra += [f"capacity {_amounts_text(use['capacity'])}"] if use["capacity"] else []
        lines.append(line + ("; " + "; ".join(extra) if extra else ""))
    if limit is not None and len(entries) > limit:
        lines.append(f"  ... {len(entries) - limit} more (-o json lists every pool)")
    return lines


POOL_ROWS = 20  # pools in the table; -o json has all of them


def _print_table(report: dict[str, Any], out: TextIO) -> None:
    failed = f", {report['errors']} invalid" if report["errors"] else ""
    out.write(f"placed {report['placed']} of {plural(report['items'], 'item')}{failed} in {report['seconds']:.3f} s "
              f"({report['placementsPerSecond']:.0f} placements/s, {plural(report['allocatorCalls'], 'allocator call')})\n")
    moved = report.get("consolidation")
    if moved is not None:
        out.write(f"consolidation: {plural(moved['placed'], 'item')} of the {moved['tried']} that fit nowhere placed by "
                  f"moving {plural(moved['moves'], 'movable pod')} (--consolidate)\n")
    optimum = report.get("optimal")
    if optimum is not None:
        found = (f"{optimum['best']} (optimal)" if optimum["proven"] else
                 f"{optimum['best']}, and no assignment more than {optimum['bound']} (time limit reached)")
        gang = (f" ({optimum['gang_members']} of them gang members: the model places no gang all or none)"
                if optimum.get("gang_members") else "")
        left = f"; {plural(optimum['left_out'], 'item')} not modelled, left out{gang}" if optimum["left_out"] else ""
        out.write(f"an exact solver places {found} of the {plural(optimum['items'], 'modelled item')} together{left}\n")
    added = report.get("addNodes")
    if added is not None:
        unfit = (f"; {len(added['unfit'])} {'fits' if len(added['unfit']) == 1 else 'fit'} no empty "
                 f"{added['template']} at all (e.g. {added['unfit'][0]})" if added["unfit"] else "")
        if added.get("gangMembersLeftOut"):
            unfit += (f"; {plural(added['gangMembersLeftOut'], 'unplaced gang member')} left out (added nodes "
                      "are tried for single items only)")
        if added["nodes"] is None:
            out.write(f"more than {adding.MAX_NODES} nodes like {added['template']} would be needed for the "
                      f"{plural(added['items'], 'unplaced item')}{unfit}\n")
        else:
            out.write(f"{plural(added['nodes'], 'more node')} like {added['template']} would let the "
                      f"{plural(added['items'], 'unplaced item')} that {'fits' if added['items'] == 1 else 'fit'} one "
                      f"be placed{unfit}\n")
    if report["gangs"]:
        out.write(f"\ngangs ({len(report['gangs'])}):\n")
        out.writelines(f"  {_gang_text(gang)}\n" for gang in report["gangs"])
    if report["unplaced"]:
        out.write(f"\nunplaced ({len(report['unplaced'])}):\n")
        for entry in report["unplaced"][:50]:
            out.write(f"  {entry['name']}: {entry['reason']}\n")
        if len(report["unplaced"]) > 50:
            out.write(f"  ... {len(report['unplaced']) - 50} more\n")
    print_use_and_fragmentation(report, out)


def _gang_text(gang: dict[str, Any]) -> str:
    """One gang: placed or not (with its domain), how many of its members, minCount."""
    if not gang["found"]:
        naming = f"{plural(gang['members'], 'pod')} {'names' if gang['members'] == 1 else 'name'} it"
        return f"{gang['podGroup']}: not placed, no such PodGroup in the input ({naming})"
    members = f"{gang['placed']} of {plural(gang['members'], 'member')} placed"
    bound = f" ({gang['boundBefore']} bound before)" if gang["boundBefore"] else ""
    where = f" in {gang['topologyKey']}={gang['domain']}" if gang["domain"] is not None else ""
    why = f": {gang['reason']}" if gang["reason"] else ""
    return f"{gang['podGroup']} (minCount {gang['minCount']}): {members}{bound}{where}{why}"


def print_use_and_fragmentation(report: dict[str, Any], out: TextIO) -> None:
    """The table's sections from a report's "utilization" (devices, counters and capacity in use per
    class, then per pool, at most POOL_ROWS pools) and "fragmentation" (per class, how many nodes
    could still take N devices); `kubectl dralloc status` (`dralloc.plugin`) prints the same."""
    out.write("\nutilization per class:\n")
    out.writelines(line + "\n" for line in _use_rows(report["utilization"]["classes"]))
    pools = report["utilization"]["pools"]
    if pools:
        out.write("\nutilization per pool:\n")
        out.writelines(line + "\n" for line in _use_rows(pools, POOL_ROWS))
    out.write("\nnodes that can still take N devices of a class:\n")
    fragmentation_ = report["fragmentation"]
    width = max(5, *(len(n) for n in fragmentation_)) if fragmentation_ else 5
    out.write(f"  {'class':{width}} " + " ".join(f"{'N=' + str(k):>6}" for k in FRAGMENTATION_SIZES) + "\n")
    for name, counts in fragmentation_.items():
        out.write(f"  {name:{width}} " + " ".join(f"{counts[str(k)]:6d}" for k in FRAGMENTATION_SIZES) + "\n")


def run(request: Request, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    try:
        report = simulate(request, err)
    except (inputs.InputError, errors.AllocationInputError) as exc:
        err.write(f"error: {errors.for_users(exc)}\n")
        return EXIT_INPUT_ERROR
    except optimizing.SolverMissing as exc:
        err.write(f"error: {exc}\n")
        return EXIT_INPUT_ERROR
    if request.placements_out:
        try:
            with open(request.placements_out, "w", encoding="utf-8") as handle:
                handle.writelines(line + "\n" for line in report["placements"])
        except OSError as exc:
            err.write(f"error: --placements-out {request.placements_out}: {exc.strerror or exc}\n")
            return EXIT_INPUT_ERROR
    if request.output == "json":
        out.write(json.dumps(report, indent=2) + "\n")
    else:
        _print_table(report, out)
    if report["errors"]:
        one = report["errors"] == 1
        err.write(f"error: {report['errors']} of {plural(report['items'], 'item')} {'is' if one else 'are'} invalid "
                  f"and {'was' if one else 'were'} not placed (listed in the report with {'its' if one else 'their'} "
                  f"error); the others were placed as reported\n")
        return EXIT_INPUT_ERROR
    return EXIT_ALL_PLACED if not report["unplaced"] else EXIT_SOME_UNPLACED
