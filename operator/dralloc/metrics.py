"""Prometheus metrics: the only module that imports prometheus_client.

Every metric is declared here once, with a closed label set (never a pod,
claim or node name as a label), and every labelled series is initialised to
zero at import so dashboards and alerts see it before the first event. Call
sites use one-line `observe_*` helpers. Gauges about the cluster (claims,
devices, queue) are computed at scrape time from a callback the operator
registers (`set_cluster_source`), so they are never stale.

Names mirror upstream where one exists (kube-scheduler's DRA metrics and
kube-controller-manager's resourceclaim controller).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

logger = logging.getLogger(__name__)
REGISTRY = CollectorRegistry(auto_describe=True)

ALLOCATION_RESULTS = ("allocated", "unschedulable", "error", "budget-exhausted", "too-costly")
# Gangs (handlers/ganging.py): what a decision for a whole PodGroup came to, and what its writes did.
GANG_RESULTS = ("placed", "unfit", "budget-exhausted", "too-costly", "waiting", "error")
GANG_COMMIT_RESULTS = ("committed", "rolled-back", "unknown", "incomplete")
CLAIM_CREATE_STATUSES = ("success", "failure")
API_OPERATIONS = ("claim-status", "bind", "pod-patch", "claim-create", "claim-delete", "pod-status",
                  "volume-binding")
# waiting-for-claim: a claim of the pod is not there yet (to be created from its template, or named and absent);
# gated: scheduling gates not dralloc's (Kueue's, say) hold it back (kube-scheduler's pending_pods{queue="gated"}).
QUEUE_STATES = ("pending", "waiting-for-claim", "backoff", "unschedulable", "error", "gated")
# The control loops; each isolates errors per object (counted in object_errors) so that a
# whole pass fails (pass_failures) only on a bug of ours, never because of one object.
LOOPS = ("scheduling", "lifecycle", "eviction", "health", "policy", "metrics", "leader-election",
         "coexistence")
# dralloc's own CRDs (crds/): without them it places pods under the default policy (handlers/watching.py).
CRDS = ("allocationpolicies.dralloc.io", "devicehealthpolicies.dralloc.io")
TAINT_EFFECTS = ("NoSchedule", "NoExecute", "None")
TAINT_SOURCES = ("slice", "rule", "policy")  # policy: a DeviceTaintRule a DeviceHealthPolicy created
EVICTION_OUTCOMES = ("deleted", "dry-run", "failed")
HEALTH_STATES = ("healthy", "suspect", "unhealthy", "recovering")
# Why a health report does not count (lifecycle/health.py IGNORED_REASONS).
HEALTH_REPORT_IGNORED_REASONS = ("unknown-claim", "claim-not-found", "claim-not-reserved", "device-not-allocated",
                                 "bad-resource-id")
# kube-controller-manager's taint-eviction pod_deletion_duration_seconds buckets (5 ms ... 240 s).
EVICTION_LATENCY_BUCKETS = (0.005, 0.025, 0.1, 0.5, 1, 2.5, 10, 30, 60, 120, 180, 240)

allocation_attempts = Counter(
    "dralloc_allocation_attempts_total", "Placement attempts for pods, by result.", ["result"], registry=REGISTRY)
allocation_duration = Histogram(
    "dralloc_allocation_duration_seconds", "Time to decide one pod's placement (all nodes), by result.",
    ["result"], registry=REGISTRY,
    buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10))
placement_latency = Histogram(
    "dralloc_pod_placement_duration_seconds", "From pod creation to bound (or ungated) with allocated claims.",
    registry=REGISTRY, buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300))
search_steps = Histogram(
    "dralloc_allocation_search_steps", "Allocator search steps per successful placement.", registry=REGISTRY,
    buckets=(1, 2, 5, 10, 25, 50, 100, 250, 1000, 10_000, 100_000, 1_000_000))
gang_decisions = Counter(
    "dralloc_gang_decisions_total", "Decisions for a whole gang (the pending pods of a PodGroup), by result.",
    ["result"], registry=REGISTRY)
gang_duration = Histogram(
    "dralloc_gang_decision_duration_seconds", "Time to decide one gang's placement (all members, all nodes), by result.",
    ["result"], registry=REGISTRY,
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30))
gang_commits = Counter(
    "dralloc_gang_commits_total",
    "Writes of decided gangs, by result: committed (every member bound or ungated), rolled-back (a write was "
    "refused; what was written is undone), unknown (an outcome stays unknown: left to the next pass), "
    "incomplete (claims written, some bind failed: retried).", ["result"], registry=REGISTRY)
gang_members_placed = Counter(
    "dralloc_gang_members_placed_total", "Pods placed (bound or ungated) as members of a gang.", registry=REGISTRY)
gang_search_steps = Histogram(
    "dralloc_gang_search_steps", "Allocator calls per gang decision (gangs.place_gang's steps).", registry=REGISTRY,
    buckets=(1, 2, 5, 10, 25, 50, 100, 250, 1000, 5000, 20_000))
claim_creates = Counter(
    "dralloc_resourceclaim_creates_total", "ResourceClaims created from templates, by status.", ["status"],
    registry=REGISTRY)
api_conflicts = Counter(
    "dralloc_api_conflicts_total", "Writes rejected with 409 Conflict (stale resourceVersion), by operation.",
    ["operation"], registry=REGISTRY)
api_retries = Counter(
    "dralloc_api_retries_total", "Operations requeued with backoff after a failed write, by operation.",
    ["operation"], registry=REGISTRY)
evictions = Counter(
    "dralloc_device_taint_pod_deletions_total", "Pods deleted because of NoExecute device taints.",
    registry=REGISTRY)

eviction_outcomes = Counter(
    "dralloc_device_taint_evictions_total",
    "Pods evicted for NoExecute device taints, by outcome (deleted, dry-run: only reported, failed).",
    ["outcome"], registry=REGISTRY)
eviction_latency = Histogram(
    "dralloc_device_taint_pod_deletion_duration_seconds",
    "From the NoExecute taint (its timeAdded, or when dralloc first saw it) to the pod's deletion; "
    "includes tolerationSeconds and rate-limit waits.", registry=REGISTRY, buckets=EVICTION_LATENCY_BUCKETS)
pending_evictions = Gauge(
    "dralloc_device_taint_pending_evictions", "Pods that NoExecute device taints will evict (due or scheduled).",
    registry=REGISTRY)
devices_tainted = Gauge(
    "dralloc_devices_tainted", "Devices with a taint in effect, by effect and source (slice, rule, policy).",
    ["effect", "source"], registry=REGISTRY)
health_transitions = Counter(
    "dralloc_device_health_transitions_total",
    "Device health state changes made by DeviceHealthPolicies, by the state entered.", ["state"],
    registry=REGISTRY)
health_reports_ignored = Counter(
    "dralloc_health_reports_ignored_total",
    "Health reports (pod allocatedResourcesStatus, claim device conditions) a DeviceHealthPolicy would act on "
    "that do not count because the device is not allocated to the reporter's claim, by reason; each report "
    "once.", ["reason"], registry=REGISTRY)

leader = Gauge(
    "dralloc_leader", "1 while this replica holds the leader Lease and acts (0: standby); by Lease name.",
    ["lease"], registry=REGISTRY)
object_errors = Counter(
    "dralloc_object_errors_total",
    "Objects a control loop could not handle (an invalid object, or a bug met while deciding for it); "
    "each is reported on the object (condition, Event) and retried, and the loop goes on with the others.",
    ["loop"], registry=REGISTRY)
duty_owner = Gauge(
    "dralloc_duty_owner",
    "Who does a duty kube-controller-manager also has a controller for (claim-lifecycle, taint-eviction): "
    "1 for the owner (dralloc or kube-controller-manager), 0 for the other.", ["duty", "owner"], registry=REGISTRY)
gate_refusals = Counter(
    "dralloc_gate_refusals_total",
    "Gate-mode pods kube-scheduler kept refusing on the node dralloc pinned them to: dralloc gave their devices "
    "back (the pod says why; its node selector cannot change once ungated).", registry=REGISTRY)
preemption_attempts = Counter(
    "dralloc_preemption_attempts_total",
    "Preemptions for pods that fit nowhere, by result: preempted (victims chosen and removed), no-candidate "
    "(removing lower-priority pods would help nowhere), error (a write was refused; the pod retries).",
    ["result"], registry=REGISTRY)
preemption_victims = Counter(
    "dralloc_preemption_victims_total", "Pods removed by dralloc's priority preemption.", registry=REGISTRY)
batch_decisions = Counter(
    "dralloc_batch_decisions_total",
    "Batches of single pods decided as one (AllocationPolicy spec.batchOrders above 1), by outcome: arrival-order "
    "(kept: no other order was better), reordered (another order allocated more or fragmented less), cut-short "
    "(the CPU budget ended the trying; the best order tried in full kept), too-costly (not even arrival order "
    "fit the budget: its pods decided one by one), error (a bug of ours: its pods decided one by one).",
    ["outcome"], registry=REGISTRY)
BATCH_OUTCOMES = ("arrival-order", "reordered", "cut-short", "too-costly", "error")
consolidations = Counter(
    "dralloc_consolidations_total",
    "Room made for pods that fit nowhere by moving pods annotated dralloc.io/movable (AllocationPolicy "
    "spec.consolidationMoves), by result: moved (the pod nominated, the moved pods removed for their controllers "
    "to re-create elsewhere), gone (a pod to move left meanwhile: looked at again), error (a write was refused; "
    "the pod retries).", ["result"], registry=REGISTRY)
consolidation_moves = Counter(
    "dralloc_consolidation_moves_total", "Movable pods removed by dralloc's consolidation to make room.",
    registry=REGISTRY)
CONSOLIDATION_RESULTS = ("moved", "gone", "error")
PREEMPTION_RESULTS = ("preempted", "no-candidate", "error")
gang_reservations = Counter(
    "dralloc_gang_reservations_total",
    "Nodes reserved for a waiting gang that may not preempt (preemption off, or its policy Never): its members "
    "nominated there, so that no lower-priority pod takes what the gang waits for.", registry=REGISTRY)
crd_missing = Gauge(
    "dralloc_crd_missing",
    "1 while the active replica finds this CRD of dralloc's not installed (not served at the version dralloc "
    "uses): pods are placed under the default policy, no DeviceHealthPolicy applies; 0 otherwise and on a standby.",
    ["crd"], registry=REGISTRY)
pass_failures = Counter(
    "dralloc_loop_pass_failures_total",
    "Whole passes of a control loop that failed and were retried: no object was decided in them.",
    ["loop"], registry=REGISTRY)

for _loop in LOOPS:
    object_errors.labels(_loop)
    pass_failures.labels(_loop)
for _crd in CRDS:
    crd_missing.labels(_crd)
# Every series a one-label counter can have exists from the start (rate() sees its first increase).
for _counter, _values in ((batch_decisions, BATCH_OUTCOMES), (consolidations, CONSOLIDATION_RESULTS),
                          (preemption_attempts, PREEMPTION_RESULTS), (eviction_outcomes, EVICTION_OUTCOMES)):
    for _value in _values:
        _counter.labels(_value)
for _effect in TAINT_EFFECTS:
    for _source in TAINT_SOURCES:
        devices_tainted.labels(_effect, _source)
for _state in HEALTH_STATES:
    health_transitions.labels(_state)
for _reason in HEALTH_REPORT_IGNORED_REASONS:
    health_reports_ignored.labels(_reason)
for _result in ALLOCATION_RESULTS:
    allocation_attempts.labels(_result)
    allocation_duration.labels(_result)
for _result in GANG_RESULTS:
    gang_decisions.labels(_result)
    gang_duration.labels(_result)
for _result in GANG_COMMIT_RESULTS:
    gang_commits.labels(_result)
for _status in CLAIM_CREATE_STATUSES:
    claim_creates.labels(_status)
for _operation in API_OPERATIONS:
    api_conflicts.labels(_operation)
    api_retries.labels(_operation)


ClusterSource = Callable[[], Mapping[str, Iterable[tuple[tuple[str, ...], float]]]]
# The cluster source's key, metric name, help and label names of the capacity gauges.
CAPACITY_FAMILIES = (
    ("device_taints", "dralloc_class_devices_tainted",
     "Devices per driver and DeviceClass with a taint of each effect in effect (slice or DeviceTaintRule).",
     ("driver", "device_class", "effect")),
    ("pools", "dralloc_pools",
     "Pools per driver and DeviceClass by how many free devices of the class they have (buckets).",
     ("driver", "device_class", "free_devices")),
    ("counters", "dralloc_shared_counters",
     "Shared counters (ResourceSlice sharedCounters) per driver, counter set and counter: total and used by "
     "allocated devices, summed over pools, in the counter's base unit.", ("driver", "counter_set", "counter", "state")),
    ("capacity", "dralloc_consumable_capacity",
     "Consumable capacity of devices that allow multiple allocations, per driver, DeviceClass and capacity: "
     "total and used, in the capacity's base unit.", ("driver", "device_class", "capacity", "state")),
    ("claim_states", "dralloc_resource_claims_by_state",
     "ResourceClaims by lifecycle state: pending, allocated (not reserved), reserved, deallocating.", ("state",)),
)


class _ClusterCollector(Collector):
    """Gauges computed from the operator's state when Prometheus scrapes."""

    def __init__(self) -> None:
        self.source: ClusterSource | None = None

    def collect(self) -> Iterable[GaugeMetricFamily]:
        try:
            values = self.source() if self.source is not None else {}
        except Exception:  # a scrape must answer even when one object breaks the cluster gauges
            logger.exception("computing the cluster gauges failed; exporting them empty")
            pass_failures.labels("metrics").inc()
            values = {}
        claims = GaugeMetricFamily(
            "dralloc_resource_claims", "ResourceClaims by allocation state, admin access and source.",
            labels=["allocated", "admin_access", "source"])
        for labels, value in values.get("resource_claims", ()):
            claims.add_metric(list(labels), value)
        devices = GaugeMetricFamily(
            "dralloc_devices", "Devices per driver and DeviceClass, by state (total, allocated, free, tainted).",
            labels=["driver", "device_class", "state"])
        for labels, value in values.get("devices", ()):
            devices.add_metric(list(labels), value)
        queue = GaugeMetricFamily(
            "dralloc_scheduling_queue_pods", "Pods dralloc owns that are not placed yet, by state.",
            labels=["state"])
        seen = dict(values.get("queue", ()))
        for state in QUEUE_STATES:
            queue.add_metric([state], seen.get((state,), 0.0))
        cel = GaugeMetricFamily(
            "dralloc_cel_selector_results", "CEL selector evaluations by outcome since start.", labels=["outcome"])
        for labels, value in values.get("cel", ()):
            cel.add_metric(list(labels), value)
        # The capacity view (state/capacity.py): no pool, node or claim names, so the series count
        # does not grow with the cluster.
        families = [claims, devices, queue, cel]
        for key, name, text, names in CAPACITY_FAMILIES:
            family = GaugeMetricFamily(name, text, labels=list(names))
            for labels, value in values.get(key, ()):
                family.add_metric(list(labels), value)
            families.append(family)
        return families


_collector = _ClusterCollector()
REGISTRY.register(_collector)


def set_cluster_source(source: ClusterSource | None) -> None:
    _collector.source = source


def observe_allocation(result: str, seconds: float, steps: int | None = None) -> None:
    allocation_attempts.labels(result).inc()
    allocation_duration.labels(result).observe(seconds)
    if steps is not None and result == "allocated":
        search_steps.observe(steps)


def observe_gang(result: str, seconds: float, steps: int | None = None) -> None:
    gang_decisions.labels(result).inc()
    gang_duration.labels(result).observe(seconds)
    if steps is not None:
        gang_search_steps.observe(steps)


def observe_gang_commit(result: str, members_placed: int = 0) -> None:
    gang_commits.labels(result).inc()
    if members_placed:
        gang_members_placed.inc(members_placed)


def set_leader(lease: str, active: bool) -> None:
    leader.labels(lease).set(1 if active else 0)


def set_duty_owner(duty: str, owner: str) -> None:
    for candidate in ("dralloc", "kube-controller-manager"):
        duty_owner.labels(duty, candidate).set(1 if candidate == owner else 0)


def set_crds_missing(missing: Iterable[str]) -> None:
    """Which of dralloc's CRDs (CRDS) the cluster does not serve; the others are 0."""
    gone = set(missing)
    for crd in CRDS:
        crd_missing.labels(crd).set(1 if crd in gone else 0)


def observe_object_error(loop: str) -> None:
    object_errors.labels(loop).inc()


def observe_gate_refusal() -> None:
    gate_refusals.inc()


def observe_preemption(result: str, victims: int) -> None:
    preemption_attempts.labels(result).inc()
    if victims:
        preemption_victims.inc(victims)


def observe_batch(outcome: str) -> None:
    batch_decisions.labels(outcome).inc()


def observe_consolidation(result: str, moved: int) -> None:
    consolidations.labels(result).inc()
    if moved:
        consolidation_moves.inc(moved)


def observe_gang_reservation() -> None:
    gang_reservations.inc()


def observe_pass_failure(loop: str) -> None:
    pass_failures.labels(loop).inc()


def observe_placement_latency(seconds: float) -> None:
    placement_latency.observe(max(seconds, 0.0))


def observe_claim_create(ok: bool) -> None:
    claim_creates.labels("success" if ok else "failure").inc()


def observe_conflict(operation: str) -> None:
    api_conflicts.labels(operation).inc()


def observe_retry(operation: str) -> None:
    api_retries.labels(operation).inc()


def observe_eviction() -> None:
    evictions.inc()


def observe_eviction_outcome(outcome: str) -> None:
    eviction_outcomes.labels(outcome).inc()


def observe_eviction_latency(seconds: float) -> None:
    eviction_latency.observe(max(seconds, 0.0))


def set_pending_evictions(count: int) -> None:
    pending_evictions.set(count)


def set_devices_tainted(counts: Mapping[tuple[str, str], int]) -> None:
    """Devices per (effect, source); effects or sources outside the closed sets are not exported."""
    for effect in TAINT_EFFECTS:
        for source in TAINT_SOURCES:
            devices_tainted.labels(effect, source).set(counts.get((effect, source), 0))


def observe_health_transition(state: str) -> None:
    if state in HEALTH_STATES:
        health_transitions.labels(state).inc()


def observe_health_report_ignored(reason: str) -> None:
    if reason in HEALTH_REPORT_IGNORED_REASONS:
        health_reports_ignored.labels(reason).inc()


def serve(port: int, address: str = "127.0.0.1") -> WSGIServer:
    """Expose /metrics on a daemon thread (prometheus_client's own server); the server, to stop it.

    Its listening socket sets SO_REUSEADDR (http.server.HTTPServer's allow_reuse_address,
    which prometheus_client's ThreadingWSGIServer inherits), so a restart binds the port again
    while the last scrapes' connections are in TIME_WAIT; running.usable_port probes alike.
    """
    server, _thread = start_http_server(port, addr=address, registry=REGISTRY)
    return server
