"""Node fit: one named row per rule of `nodefit.misfit` (everything but devices).

Each row gives a pod, a node and the pods already bound there, and the reason the
node is rejected (None: the pod fits). The ids are the row names, so a failure
reads as the rule that broke.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import pytest
from tests.scheduling.objects import container, node_, node_taint, pod_

from dralloc.model import nodes, pods
from dralloc.scheduling import nodefit

UNSCHEDULABLE_TOLERATION = {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}


def sidecar(name: str, **requests: str) -> dict[str, Any]:
    """An init container with restartPolicy Always (a sidecar)."""
    return {**container(name, **requests), "restartPolicy": "Always"}


def term(*expressions: tuple[str, str, Sequence[str]], fields: Sequence[tuple[str, str, Sequence[str]]] = ()) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if expressions:
        out["matchExpressions"] = [{"key": k, "operator": op, "values": list(v)} for k, op, v in expressions]
    if fields:
        out["matchFields"] = [{"key": k, "operator": op, "values": list(v)} for k, op, v in fields]
    return out


def required(*terms: dict[str, Any]) -> dict[str, Any]:
    return {"nodeSelectorTerms": list(terms)}


@dataclasses.dataclass(frozen=True)
class Case:
    pod: pods.Pod
    node: nodes.Node
    expect: str | None  # the reason, or None when the pod fits
    bound: tuple[pods.Pod, ...] = ()


ZONE_A = node_("n1", labels={"zone": "a", "disk": "ssd", "gen": "5"})

CASES: dict[str, Case] = {
    # ---- spec.nodeName
    "node-name-of-this-node-fits": Case(pod_(node_name="n1"), node_("n1"), None),
    "node-name-of-other-node-rejects": Case(
        pod_(node_name="n2"), node_("n1"), nodefit.REASON_NODE_NAME),
    # ---- spec.unschedulable
    "unschedulable-node-rejects-pod-without-toleration": Case(
        pod_(), node_("n1", unschedulable=True), nodefit.REASON_UNSCHEDULABLE),
    "unschedulable-node-accepts-pod-tolerating-unschedulable-taint": Case(
        pod_(tolerations=[UNSCHEDULABLE_TOLERATION]), node_("n1", unschedulable=True), None),
    "unschedulable-node-accepts-pod-tolerating-everything": Case(
        pod_(tolerations=[{"operator": "Exists"}]), node_("n1", unschedulable=True), None),
    "unschedulable-node-rejects-toleration-of-other-effect": Case(
        pod_(tolerations=[{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoExecute"}]),
        node_("n1", unschedulable=True), nodefit.REASON_UNSCHEDULABLE),
    # ---- nodeSelector
    "node-selector-all-labels-match-fits": Case(pod_(node_selector={"zone": "a", "disk": "ssd"}), ZONE_A, None),
    "node-selector-wrong-value-rejects": Case(
        pod_(node_selector={"zone": "b"}), ZONE_A, nodefit.REASON_NODE_AFFINITY),
    "node-selector-one-of-two-labels-missing-rejects": Case(
        pod_(node_selector={"zone": "a", "gpu": "yes"}), ZONE_A, nodefit.REASON_NODE_AFFINITY),
    "node-selector-empty-value-needs-the-label": Case(
        pod_(node_selector={"gpu": ""}), ZONE_A, nodefit.REASON_NODE_AFFINITY),
    # ---- required node affinity
    "affinity-in-matches": Case(pod_(affinity=required(term(("zone", "In", ["a", "b"])))), ZONE_A, None),
    "affinity-in-other-values-rejects": Case(
        pod_(affinity=required(term(("zone", "In", ["b"])))), ZONE_A, nodefit.REASON_NODE_AFFINITY),
    "affinity-notin-rejects-listed-value": Case(
        pod_(affinity=required(term(("zone", "NotIn", ["a"])))), ZONE_A,
        nodefit.REASON_NODE_AFFINITY),
    "affinity-notin-matches-missing-label": Case(pod_(affinity=required(term(("gpu", "NotIn", ["x"])))), ZONE_A, None),
    "affinity-exists-matches-present-label": Case(pod_(affinity=required(term(("disk", "Exists", [])))), ZONE_A, None),
    "affinity-does-not-exist-rejects-present-label": Case(
        pod_(affinity=required(term(("disk", "DoesNotExist", [])))), ZONE_A,
        nodefit.REASON_NODE_AFFINITY),
    "affinity-gt-compares-as-integer": Case(pod_(affinity=required(term(("gen", "Gt", ["4"])))), ZONE_A, None),
    "affinity-lt-rejects-larger-label": Case(
        pod_(affinity=required(term(("gen", "Lt", ["5"])))), ZONE_A, nodefit.REASON_NODE_AFFINITY),
    "affinity-terms-are-ored": Case(
        pod_(affinity=required(term(("zone", "In", ["b"])), term(("disk", "In", ["ssd"])))), ZONE_A, None),
    "affinity-expressions-in-one-term-are-anded": Case(
        pod_(affinity=required(term(("zone", "In", ["a"]), ("disk", "In", ["hdd"])))), ZONE_A,
        nodefit.REASON_NODE_AFFINITY),
    "match-fields-metadata-name": Case(
        pod_(affinity=required(term(fields=[("metadata.name", "In", ["n1"])]))), ZONE_A, None),
    "match-fields-metadata-name-of-other-node-rejects": Case(
        pod_(affinity=required(term(fields=[("metadata.name", "In", ["n2"])]))), ZONE_A,
        nodefit.REASON_NODE_AFFINITY),
    "match-fields-and-expressions-both-must-hold": Case(
        pod_(affinity=required(term(("zone", "In", ["b"]), fields=[("metadata.name", "In", ["n1"])]))), ZONE_A,
        nodefit.REASON_NODE_AFFINITY),
    "affinity-empty-term-selects-nothing": Case(
        pod_(affinity=required({})), ZONE_A, nodefit.REASON_NODE_AFFINITY),
    "affinity-unknown-operator-is-a-reason-not-a-crash": Case(
        pod_(affinity=required(term(("zone", "Near", ["a"])))), ZONE_A,
        "invalid node affinity: node selector requirement zone: unsupported operator 'Near'"),
    # ---- node taints vs tolerations
    "no-schedule-taint-rejects-pod-without-toleration": Case(
        pod_(), node_("n1", taints=[node_taint("gpu", "true")]), nodefit.REASON_TAINT),
    "no-execute-taint-rejects-pod-without-toleration": Case(
        pod_(), node_("n1", taints=[node_taint("drain", effect="NoExecute")]), nodefit.REASON_TAINT),
    "prefer-no-schedule-taint-ignored": Case(
        pod_(), node_("n1", taints=[node_taint("soft", effect="PreferNoSchedule")]), None),
    "toleration-equal-same-value-tolerates": Case(
        pod_(tolerations=[{"key": "gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}]),
        node_("n1", taints=[node_taint("gpu", "true")]), None),
    "toleration-equal-other-value-rejects": Case(
        pod_(tolerations=[{"key": "gpu", "operator": "Equal", "value": "false"}]),
        node_("n1", taints=[node_taint("gpu", "true")]), nodefit.REASON_TAINT),
    "toleration-default-operator-is-equal": Case(
        pod_(tolerations=[{"key": "gpu", "value": "true"}]), node_("n1", taints=[node_taint("gpu", "true")]), None),
    "toleration-exists-ignores-value": Case(
        pod_(tolerations=[{"key": "gpu", "operator": "Exists"}]), node_("n1", taints=[node_taint("gpu", "x")]), None),
    "toleration-of-other-key-rejects": Case(
        pod_(tolerations=[{"key": "fpga", "operator": "Exists"}]), node_("n1", taints=[node_taint("gpu")]),
        nodefit.REASON_TAINT),
    "toleration-empty-key-exists-tolerates-every-taint": Case(
        pod_(tolerations=[{"operator": "Exists"}]),
        node_("n1", taints=[node_taint("gpu"), node_taint("drain", effect="NoExecute")]), None),
    "toleration-of-other-effect-rejects": Case(
        pod_(tolerations=[{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]),
        node_("n1", taints=[node_taint("gpu", effect="NoExecute")]), nodefit.REASON_TAINT),
    "toleration-without-effect-matches-every-effect": Case(
        pod_(tolerations=[{"key": "gpu", "operator": "Exists"}]),
        node_("n1", taints=[node_taint("gpu", effect="NoExecute")]), None),
    "every-taint-needs-a-toleration": Case(
        pod_(tolerations=[{"key": "gpu", "operator": "Exists"}]),
        node_("n1", taints=[node_taint("gpu"), node_taint("ib", "yes")]), nodefit.REASON_TAINT),
    # ---- resource fit
    "cpu-request-equal-to-allocatable-fits": Case(pod_(cpu="4"), node_("n1", cpu="4"), None),
    "cpu-request-over-allocatable-rejects": Case(pod_(cpu="4001m"), node_("n1", cpu="4"), "Insufficient cpu"),
    "memory-request-over-allocatable-rejects": Case(
        pod_(memory="2Gi"), node_("n1", cpu="4", memory="1Gi"), "Insufficient memory"),
    "ephemeral-storage-request-over-allocatable-rejects": Case(
        pod_(containers=[container(ephemeral_storage="20Gi")]),
        node_("n1", extra={"ephemeral-storage": "10Gi"}), "Insufficient ephemeral-storage"),
    "bound-pods-requests-count-against-allocatable": Case(
        pod_(cpu="2"), node_("n1", cpu="4"), "Insufficient cpu", bound=(pod_("old", cpu="3"),)),
    "bound-pods-leave-room-fits": Case(pod_(cpu="1"), node_("n1", cpu="4"), None, bound=(pod_("old", cpu="3"),)),
    "containers-requests-add-up": Case(
        pod_(containers=[container("a", cpu="2"), container("b", cpu="3")]), node_("n1", cpu="4"),
        "Insufficient cpu"),
    "init-container-request-counts-as-max": Case(
        pod_(containers=[container(cpu="1")], init_containers=[container("init", cpu="5")]), node_("n1", cpu="4"),
        "Insufficient cpu"),
    "init-container-smaller-than-containers-sum-adds-nothing": Case(
        pod_(containers=[container("a", cpu="2"), container("b", cpu="2")], init_containers=[container("i", cpu="3")]),
        node_("n1", cpu="4"), None),
    "init-containers-do-not-add-up": Case(
        pod_(containers=[container(cpu="1")], init_containers=[container("i1", cpu="3"), container("i2", cpu="3")]),
        node_("n1", cpu="4"), None),
    # sidecars (init containers with restartPolicy Always) run beside the containers: upstream's PodRequests
    "sidecar-request-adds-to-containers": Case(
        pod_(containers=[container(cpu="1")], init_containers=[sidecar("s", cpu="1500m")]), node_("n1", cpu="2"),
        "Insufficient cpu"),
    "init-container-runs-beside-the-sidecars-started-before-it": Case(
        pod_(containers=[container(cpu="500m")],
             init_containers=[sidecar("s", cpu="1"), container("i", cpu="1500m")]), node_("n1", cpu="2"),
        "Insufficient cpu"),
    "init-container-before-a-sidecar-runs-alone": Case(
        pod_(containers=[container(cpu="500m")],
             init_containers=[container("i", cpu="1500m"), sidecar("s", cpu="1")]), node_("n1", cpu="2"), None),
    "bound-pods-sidecars-count-against-allocatable": Case(
        pod_(cpu="1"), node_("n1", cpu="2"), "Insufficient cpu",
        bound=(pod_("old", containers=[container(cpu="500m")], init_containers=[sidecar("s", cpu="1")]),)),
    # pod-level requests (spec.resources, PodLevelResources): they replace the containers' cpu and memory
    "pod-level-cpu-replaces-the-containers-sum": Case(
        pod_(cpu="1", spec_extra={"resources": {"requests": {"cpu": "3"}}}), node_("n1", cpu="2"), "Insufficient cpu"),
    "pod-level-memory-leaves-cpu-to-the-containers": Case(
        pod_(cpu="1", spec_extra={"resources": {"requests": {"memory": "1Gi"}}}), node_("n1", cpu="2", memory="2Gi"),
        None),
    "bound-pods-pod-level-cpu-counts-against-allocatable": Case(
        pod_(cpu="1"), node_("n1", cpu="2"), "Insufficient cpu",
        bound=(pod_("old", cpu="500m", spec_extra={"resources": {"requests": {"cpu": "1500m"}}}),)),
    "overhead-adds-to-requests": Case(
        pod_(cpu="3", overhead={"cpu": "1500m"}), node_("n1", cpu="4"), "Insufficient cpu"),
    "overhead-within-allocatable-fits": Case(pod_(cpu="3", overhead={"cpu": "1"}), node_("n1", cpu="4"), None),
    "cpu-request-on-node-without-cpu-allocatable-rejects": Case(
        pod_(cpu="100m"), node_("n1", memory="1Gi"), "Insufficient cpu"),
    "extended-resource-not-on-node-is-left-to-devices": Case(
        pod_(containers=[container(**{"example.com/gpu": "1"})]), node_("n1", cpu="4"), None),
    "extended-resource-on-node-is-checked": Case(
        pod_(containers=[container(**{"example.com/fpga": "2"})]), node_("n1", extra={"example.com/fpga": "1"}),
        "Insufficient example.com/fpga"),
    "pod-without-requests-fits-full-node": Case(
        pod_(), node_("n1", cpu="1"), None, bound=(pod_("old", cpu="1"),)),
    "pods-count-full-rejects": Case(
        pod_(), node_("n1", pods="2"), nodefit.REASON_TOO_MANY_PODS, bound=(pod_("a"), pod_("b"))),
    "pods-count-with-room-fits": Case(pod_(), node_("n1", pods="2"), None, bound=(pod_("a"),)),
    # ---- order: kube-scheduler's filter order; the first failing filter is the reason, and
    # NodeResourcesFit lists every resource that is short
    "node-name-reported-before-unschedulable": Case(
        pod_(node_name="n2"), node_("n1", unschedulable=True), nodefit.REASON_NODE_NAME),
    "unschedulable-reported-before-node-selector": Case(
        pod_(node_selector={"zone": "b"}), node_("n1", unschedulable=True), nodefit.REASON_UNSCHEDULABLE),
    "taint-reported-before-node-selector": Case(
        pod_(node_selector={"zone": "b"}), node_("n1", taints=[node_taint("gpu")]), nodefit.REASON_TAINT),
    "taint-reported-before-resources": Case(
        pod_(cpu="8"), node_("n1", cpu="1", taints=[node_taint("gpu")]), nodefit.REASON_TAINT),
    "every-short-resource-is-listed-pods-first": Case(
        pod_(cpu="8"), node_("n1", cpu="1", pods="1"), "Too many pods, Insufficient cpu", bound=(pod_("a"),)),
    "cpu-memory-and-extended-short-are-listed-in-kube-scheduler-order": Case(
        pod_(containers=[container(cpu="8", memory="2Gi", **{"example.com/fpga": "2"})]),
        node_("n1", cpu="1", memory="1Gi", extra={"example.com/fpga": "1"}),
        "Insufficient cpu, Insufficient memory, Insufficient example.com/fpga"),
}


def _usage(bound: Sequence[pods.Pod]) -> nodefit.NodeUsage:
    usage = nodefit.NodeUsage()
    for pod in bound:
        usage.add(nodefit.pod_requests(pod))
    return usage


@pytest.mark.parametrize("case", list(CASES.values()), ids=list(CASES))
def test_node_fit_case(case: Case) -> None:
    """The node passes or is rejected with the reason the row names."""
    reason = nodefit.misfit(case.pod, case.node, _usage(case.bound), nodefit.pod_requests(case.pod))
    assert reason == case.expect


class TestPodRequests:
    def test_sum_of_containers(self) -> None:
        """Container requests of one resource add up, in nano-units."""
        pod = pod_(containers=[container("a", cpu="250m"), container("b", cpu="1")])
        assert nodefit.pod_requests(pod) == {"cpu": 1_250_000_000}

    def test_init_container_only_resource(self) -> None:
        """A resource only an init container asks for counts at the init container's request."""
        pod = pod_(containers=[container(cpu="1")], init_containers=[container("i", memory="1Ki")])
        assert nodefit.pod_requests(pod) == {"cpu": 1_000_000_000, "memory": 1024 * 1_000_000_000}

    def test_overhead_after_init_max(self) -> None:
        """Overhead is added to max(sum of containers, largest init container)."""
        pod = pod_(containers=[container(cpu="1")], init_containers=[container("i", cpu="3")], overhead={"cpu": "1"})
        assert nodefit.pod_requests(pod) == {"cpu": 4_000_000_000}

    def test_sidecars_add_up_and_init_containers_run_beside_the_earlier_ones(self) -> None:
        """Upstream's PodRequests: containers + sidecars, at least each init container plus the sidecars
        started before it."""
        pod = pod_(containers=[container(cpu="500m")],
                   init_containers=[sidecar("s1", cpu="1"), container("i1", cpu="4"), sidecar("s2", cpu="2"),
                                    container("i2", cpu="4")])
        # containers + sidecars: 0.5 + 1 + 2 = 3.5; i1 beside s1: 5; i2 beside s1 and s2: 7
        assert nodefit.pod_requests(pod) == {"cpu": 7_000_000_000}

    def test_pod_level_requests_replace_cpu_and_memory_only(self) -> None:
        pod = pod_(containers=[container(cpu="1", memory="1Gi", ephemeral_storage="1Gi")],
                   spec_extra={"resources": {"requests": {"cpu": "2"}}, "overhead": {"cpu": "100m"}})
        assert nodefit.pod_requests(pod) == {"cpu": 2_100_000_000, "memory": 1024**3 * 1_000_000_000,
                                             "ephemeral-storage": 1024**3 * 1_000_000_000}

    def test_no_requests(self) -> None:
        """A pod without requests requests nothing."""
        assert nodefit.pod_requests(pod_()) == {}


class TestNodeUsage:
    def test_remove_undoes_add(self) -> None:
        """Removing a pod's requests restores the usage before it was added."""
        usage = nodefit.NodeUsage()
        usage.add({"cpu": 5})
        usage.add({"cpu": 7, "memory": 1})
        usage.remove({"cpu": 7, "memory": 1})
        assert (usage.requests, usage.pods) == ({"cpu": 5, "memory": 0}, 1)

    def test_no_usage_means_empty_node(self) -> None:
        """misfit with usage=None treats the node as empty."""
        node = node_("n1", cpu="1", pods="1")
        pod = pod_(cpu="1")
        assert nodefit.misfit(pod, node, None, nodefit.pod_requests(pod)) is None
