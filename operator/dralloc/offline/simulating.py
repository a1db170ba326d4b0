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
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from collections.abc import Sequence
from typing import Any, TextIO

from dralloc import allocation
from dralloc.allocation import errors, outcomes
from dralloc.allocation.features import Features
from dralloc.allocation.pools import NodeView
from dralloc.allocation.snapshots import Snapshot
from dralloc.model import claims as model_claims
from dralloc.model import pods as model_pods
from dralloc.model.base import Object, ObjectMeta
from dralloc.offline import heap, inputs
from dralloc.scheduling import placement

EXIT_ALL_PLACED, EXIT_SOME_UNPLACED, EXIT_INPUT_ERROR = 0, 1, 2
# Exit 2 also when the run completed but some items were invalid (reported as errors).
FRAGMENTATION_SIZES = (1, 2, 4, 8)


@dataclasses.dataclass(frozen=True)
class Request:
    snapshot_files: Sequence[str]
    workload_files: Sequence[str] = ()
    policy: str = "first-fit"
    features: Features = dataclasses.field(default_factory=Features)
    placements_out: str | None = None
    output: str = "table"
    progress: bool | None = None  # None: only when stderr is a terminal


@dataclasses.dataclass
class ItemResult:
    item: placement.Item
    placement: placement.Placement | None
    reason: str = ""
    error: bool = False  # not placed because the item itself is invalid (bad class, CEL, ...)


def _ref(obj: Object) -> str:
    """namespace/name, with the namespace a namespaced object gets when none is written: default."""
    return f"{obj.metadata.namespace or 'default'}/{obj.metadata.name}"


def _pod_item(pod: model_pods.Pod, templates: dict[str, model_claims.ResourceClaimTemplate],
              claims_by_ref: dict[str, model_claims.ResourceClaim]) -> placement.Item:
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
    return placement.Item(name=pod.metadata.name, claims=tuple(to_allocate), pod=pod, allocated=tuple(allocated))


def _workload(request: Request, snapshot_cluster: inputs.Cluster) -> tuple[list[object], inputs.Cluster]:
    if not request.workload_files:
        return [c for c in snapshot_cluster.resource_claims if c.status.allocation is None], snapshot_cluster
    ordered: list[object] = []
    cluster = inputs.Cluster()
    for path in request.workload_files:
        part = inputs.load([path])
        inputs.check_not_empty(part, [path])  # a file of other kinds only (Namespaces, ...) is fine
        cluster.claim_templates.extend(part.claim_templates)
        cluster.resource_claims.extend(part.resource_claims)
        for obj in part.ordered:
            if isinstance(obj, model_pods.Pod) or (
                isinstance(obj, model_claims.ResourceClaim) and obj.status.allocation is None
            ):
                ordered.append(obj)
    if not ordered:
        files = ", ".join("stdin" if path == "-" else path for path in request.workload_files)
        raise inputs.InputError(f"--workload {files}: no Pod and no unallocated ResourceClaim: nothing to place")
    return ordered, cluster


def utilization(snapshot: Snapshot, views: Sequence[NodeView], features: Features) -> dict[str, Any]:
    """Devices per class and per pool: total and in use."""
    from dralloc.allocation import selectors

    busy = set(snapshot.allocated.exclusive) | snapshot.allocated.shared
    per_pool: dict[str, list[int]] = {}
    per_class: dict[str, list[int]] = {name: [0, 0] for name in snapshot.classes}
    seen: set[object] = set()
    for view in views:
        for pool in snapshot.slices.pools_for(view, features):
            for info in pool.devices:
                if info.id in seen:
                    continue
                seen.add(info.id)
                used = info.id in busy
                counts = per_pool.setdefault(str(pool.id), [0, 0])
                counts[0] += 1
                counts[1] += used
                for name, device_class in snapshot.classes.items():
                    if selectors.in_class(info, device_class):
                        per_class[name][0] += 1
                        per_class[name][1] += used
    return {"classes": {k: {"devices": v[0], "inUse": v[1]} for k, v in per_class.items()},
            "pools": {k: {"devices": v[0], "inUse": v[1]} for k, v in sorted(per_pool.items())}}


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
        parts.extend(f"{r.request}={r.pool}/{r.device}" for r in allocation_.devices.results)
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


def simulate(request: Request, err: TextIO | None = None) -> dict[str, Any]:
    """Run the simulation; raises InputError / AllocationInputError on bad input."""
    err = err if err is not None else sys.stderr
    with heap.LongLived() as long_lived:
        placer, workload, templates, claims_by_ref = _prepare(request, err)
        long_lived.built()
        return _place_all(placer, workload, templates, claims_by_ref, request, err)


def _prepare(request: Request, err: TextIO) -> tuple[placement.Placer, list[object],
                                                     dict[str, model_claims.ResourceClaimTemplate],
                                                     dict[str, model_claims.ResourceClaim]]:
    """Everything the placement loop needs: the inputs read, the snapshot and node indexes built."""
    cluster = inputs.load(request.snapshot_files)
    inputs.check_not_empty(cluster, request.snapshot_files)
    workload, workload_cluster = _workload(request, cluster)
    features = request.features
    snapshot = inputs.snapshot_of(cluster, features)
    found = inputs.nodes_of(cluster, request.snapshot_files)
    err.write(found.note())
    placer = placement.Placer(node_list=found.nodes, snapshot=snapshot, features=features, policy=request.policy,
                              bound_pods=[p for p in cluster.pods if p.spec.node_name])
    templates = {_ref(t): t for t in [*cluster.claim_templates, *workload_cluster.claim_templates]}
    claims_by_ref = {_ref(c): c for c in [*cluster.resource_claims, *workload_cluster.resource_claims]}
    return placer, workload, templates, claims_by_ref


def _place_all(placer: placement.Placer, workload: list[object],
               templates: dict[str, model_claims.ResourceClaimTemplate],
               claims_by_ref: dict[str, model_claims.ResourceClaim], request: Request, err: TextIO
               ) -> dict[str, Any]:
    """Place the workload items in order, then the report (placement-only seconds included)."""
    features = request.features
    results: list[ItemResult] = []
    progress = _Progress(len(workload), err.isatty() if request.progress is None else request.progress, err)
    start = time.perf_counter()
    for done, obj in enumerate(workload):
        if isinstance(obj, model_pods.Pod):
            item = _pod_item(obj, templates, claims_by_ref)
        else:
            assert isinstance(obj, model_claims.ResourceClaim)
            current = claims_by_ref.get(_ref(obj), obj)
            if current.status.allocation is not None:
                continue  # allocated earlier in this run, as a pod's shared claim
            item = placement.Item(name=obj.metadata.name, claims=(current,))
        try:
            decision = placer.place(item)
        except errors.AllocationInputError as exc:
            # One invalid item (unknown class, bad CEL, ...) must not stop the others.
            results.append(ItemResult(item, None, f"error: {exc}", error=True))
            progress.update(done + 1)
            continue
        if isinstance(decision, placement.Placement):
            placer.commit(item, decision)
            for claim, result in zip(item.claims, decision.results, strict=True):
                if _ref(claim) in claims_by_ref:
                    claims_by_ref[_ref(claim)] = claim.model_copy(
                        update={"status": claim.status.model_copy(update={"allocation": result})})
            results.append(ItemResult(item, decision))
        else:
            results.append(ItemResult(item, None, decision.message()))
        progress.update(done + 1)
    elapsed = time.perf_counter() - start
    progress.close()
    placed = [r for r in results if r.placement is not None]
    return {
        "items": len(results),
        "placed": len(placed),
        "errors": sum(r.error for r in results),
        "unplaced": [{"name": r.item.name, "reason": r.reason, **({"error": True} if r.error else {})}
                     for r in results if r.placement is None],
        "seconds": elapsed,
        "placementsPerSecond": len(placed) / elapsed if elapsed > 0 else 0.0,
        "allocatorCalls": placer.allocator_calls,
        "placements": [_placement_line(r) for r in placed],
        "utilization": utilization(placer.snapshot, placer.views, features),
        "fragmentation": fragmentation(placer),
    }


def _print_table(report: dict[str, Any], out: TextIO) -> None:
    failed = f", {report['errors']} invalid" if report["errors"] else ""
    out.write(f"placed {report['placed']} of {report['items']} items{failed} in {report['seconds']:.3f} s "
              f"({report['placementsPerSecond']:.0f} placements/s, {report['allocatorCalls']} allocator calls)\n")
    if report["unplaced"]:
        out.write(f"\nunplaced ({len(report['unplaced'])}):\n")
        for entry in report["unplaced"][:50]:
            out.write(f"  {entry['name']}: {entry['reason']}\n")
        if len(report["unplaced"]) > 50:
            out.write(f"  ... {len(report['unplaced']) - 50} more\n")
    out.write("\nutilization per class:\n")
    for name, counts in report["utilization"]["classes"].items():
        total, used = counts["devices"], counts["inUse"]
        share = f"{100 * used / total:.0f}%" if total else "-"
        out.write(f"  {name:30} {used:6d} / {total:6d} in use ({share})\n")
    out.write("\nnodes that can still take N devices of a class:\n")
    out.write(f"  {'class':30} " + " ".join(f"{'N=' + str(k):>6}" for k in FRAGMENTATION_SIZES) + "\n")
    for name, counts in report["fragmentation"].items():
        out.write(f"  {name:30} " + " ".join(f"{counts[str(k)]:6d}" for k in FRAGMENTATION_SIZES) + "\n")


def run(request: Request, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    try:
        report = simulate(request, err)
    except (inputs.InputError, errors.AllocationInputError) as exc:
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
        err.write(f"error: {report['errors']} of {report['items']} item(s) are invalid and were not placed "
                  f"(listed in the report with their error); the others were placed as reported\n")
        return EXIT_INPUT_ERROR
    return EXIT_ALL_PLACED if not report["unplaced"] else EXIT_SOME_UNPLACED
