"""PodTopologySpread filter: one named row per rule of `topologyspread` (DoNotSchedule constraints).

Each row gives the nodes, the pods already on them and the incoming pod, and the reason
`Check.reject` gives for every node (None: the node passes). The ids are the row names,
so a failure reads as the rule that broke. Two hypothesis properties follow: the check
equals a brute-force restatement of upstream's PreFilter/Filter on random clusters, and
placing matching pods one at a time where the check allows never lets two eligible domains
differ by more than maxSkew (nor, with too few domains for minDomains, any domain hold more
than maxSkew).
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dralloc.model import conversion, nodes, pods
from dralloc.scheduling import labels, nodefit, placedpods, topologyspread

SPREAD = topologyspread.REASON
MISSING = topologyspread.REASON_MISSING_LABEL
ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
RACK = "rack"

_uids = itertools.count()


def node(name: str, zone: str | None = None, *, rack: str | None = None, hostname: bool = True,
         taints: Sequence[Mapping[str, Any]] = ()) -> nodes.Node:
    node_labels = {HOST: name} if hostname else {}
    if zone is not None:
        node_labels[ZONE] = zone
    if rack is not None:
        node_labels[RACK] = rack
    raw: dict[str, Any] = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": node_labels},
                           "spec": {"taints": [dict(t) for t in taints]}}
    parsed: nodes.Node = conversion.parse_as(nodes.Node, raw)
    return parsed


def spread(key: str = ZONE, max_skew: int | None = 1, *, when: str = "DoNotSchedule",
           selector: Mapping[str, Any] | None = None, app: str | None = "web", **extra: Any) -> dict[str, Any]:
    """A constraint as API JSON; the selector is app=<app> unless given (app=None: no selector)."""
    raw: dict[str, Any] = {"topologyKey": key, "whenUnsatisfiable": when} | extra
    if max_skew is not None:
        raw["maxSkew"] = max_skew
    if selector is not None:
        raw["labelSelector"] = dict(selector)
    elif app is not None:
        raw["labelSelector"] = {"matchLabels": {"app": app}}
    return raw


def pod(name: str = "incoming", *, app: str | None = "web", extra_labels: Mapping[str, str] | None = None,
        namespace: str = "default", node_name: str | None = None, constraints: Sequence[Mapping[str, Any]] = (),
        node_selector: Mapping[str, str] | None = None, affinity: Mapping[str, Any] | None = None,
        tolerations: Sequence[Mapping[str, Any]] = (), deleting: bool = False, uid: str | None = None) -> pods.Pod:
    pod_labels = ({"app": app} if app is not None else {}) | dict(extra_labels or {})
    metadata: dict[str, Any] = {"name": name, "namespace": namespace, "labels": pod_labels,
                                "uid": uid or f"uid-{next(_uids)}"}
    if deleting:
        metadata["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    spec: dict[str, Any] = {"containers": [{"name": "main"}],
                            "topologySpreadConstraints": [dict(c) for c in constraints]}
    if node_name is not None:
        spec["nodeName"] = node_name
    if node_selector:
        spec["nodeSelector"] = dict(node_selector)
    if affinity is not None:
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": dict(affinity)}}
    if tolerations:
        spec["tolerations"] = [dict(t) for t in tolerations]
    parsed: pods.Pod = conversion.parse_as(pods.Pod, {"apiVersion": "v1", "kind": "Pod", "metadata": metadata,
                                                      "spec": spec})
    return parsed


def on(node_name: str, count: int = 1, **fields: Any) -> list[pods.Pod]:
    """`count` pods bound to the node (app=web unless told)."""
    return [pod(f"{node_name}-{i}-{next(_uids)}", node_name=node_name, **fields) for i in range(count)]


def zone_in(*zones: str) -> dict[str, Any]:
    return {"nodeSelectorTerms": [{"matchExpressions": [{"key": ZONE, "operator": "In", "values": list(zones)}]}]}


@dataclasses.dataclass(frozen=True)
class Case:
    nodes: tuple[nodes.Node, ...]
    bound: tuple[pods.Pod, ...]
    pod: pods.Pod
    expect: Mapping[str, str | None]  # node name -> reason (None: passes); every node of the row


def case(node_list: Sequence[nodes.Node], bound: Sequence[pods.Pod], incoming: pods.Pod,
         **expect: str | None) -> Case:
    return Case(tuple(node_list), tuple(bound), incoming, {k.replace("_", "-"): v for k, v in expect.items()})


# Zones a (a1, a2), b (b1), c (c1); hostname = node name.
THREE_ZONES = (node("a1", "a"), node("a2", "a"), node("b1", "b"), node("c1", "c"))
TWO_ZONES = (node("a1", "a"), node("a2", "a"), node("b1", "b"))
TAINTED_C = (node("a1", "a"), node("b1", "b"), node("c1", "c", taints=[{"key": "gpu", "effect": "NoSchedule"}]))
SOFT_TAINTED_C = (node("a1", "a"), node("b1", "b"),
                  node("c1", "c", taints=[{"key": "gpu", "effect": "PreferNoSchedule"}]))
A2_B1 = (*on("a1"), *on("a2"), *on("b1"))  # zone a: 2, zone b: 1

CASES: dict[str, Case] = {
    # ---- the skew check, zones
    "zone-max-skew-1-rejects-the-fuller-zone": case(
        TWO_ZONES, A2_B1, pod(constraints=[spread()]), a1=SPREAD, a2=SPREAD, b1=None),
    "zone-max-skew-2-allows-the-fuller-zone": case(
        TWO_ZONES, A2_B1, pod(constraints=[spread(max_skew=2)]), a1=None, a2=None, b1=None),
    "zone-balanced-allows-every-zone": case(
        TWO_ZONES, (*on("a1"), *on("b1")), pod(constraints=[spread()]), a1=None, a2=None, b1=None),
    "zone-empty-zone-is-the-minimum": case(
        THREE_ZONES, (*on("a1"), *on("b1")), pod(constraints=[spread()]), a1=SPREAD, a2=SPREAD, b1=SPREAD, c1=None),
    "zone-max-skew-2-with-empty-zone": case(
        THREE_ZONES, (*on("a1", 2), *on("b1")), pod(constraints=[spread(max_skew=2)]),
        a1=SPREAD, a2=SPREAD, b1=None, c1=None),
    # ---- the skew check, hostnames
    "hostname-max-skew-1-rejects-the-node-ahead": case(
        TWO_ZONES, on("a1"), pod(constraints=[spread(HOST)]), a1=SPREAD, a2=None, b1=None),
    "hostname-max-skew-2-allows-one-more": case(
        TWO_ZONES, on("a1"), pod(constraints=[spread(HOST, 2)]), a1=None, a2=None, b1=None),
    "hostname-every-node-at-one-allows-every-node": case(
        TWO_ZONES, (*on("a1"), *on("a2"), *on("b1")), pod(constraints=[spread(HOST)]), a1=None, a2=None, b1=None),
    # ---- selfMatch
    "pod-not-matching-its-own-selector-adds-nothing": case(
        TWO_ZONES, A2_B1, pod(app="batch", constraints=[spread()]), a1=None, a2=None, b1=None),
    "pod-not-matching-still-rejected-beyond-max-skew": case(
        TWO_ZONES, (*on("a1", 3), *on("b1")), pod(app="batch", constraints=[spread()]),
        a1=SPREAD, a2=SPREAD, b1=None),
    # ---- which pods count
    "other-labels-do-not-count": case(
        TWO_ZONES, (*on("a1", 3, app="db"), *on("b1")), pod(constraints=[spread()]), a1=None, a2=None, b1=SPREAD),
    "other-namespace-does-not-count": case(
        TWO_ZONES, (*on("a1", 3, namespace="other"), *on("b1")), pod(constraints=[spread()]),
        a1=None, a2=None, b1=SPREAD),
    "terminating-pods-do-not-count": case(
        TWO_ZONES, (*on("a1", 3, deleting=True), *on("b1")), pod(constraints=[spread()]),
        a1=None, a2=None, b1=SPREAD),
    "the-incoming-pod-itself-does-not-count": case(
        TWO_ZONES, (*on("a1", uid="me"), *on("b1")), pod(constraints=[spread()], uid="me"),
        a1=None, a2=None, b1=SPREAD),
    "empty-selector-counts-no-pod": case(
        TWO_ZONES, on("a1", 5), pod(constraints=[spread(selector={})]), a1=None, a2=None, b1=None),
    "absent-selector-matches-nothing": case(
        TWO_ZONES, on("a1", 5), pod(constraints=[spread(app=None)]), a1=None, a2=None, b1=None),
    # ---- matchLabelKeys
    "match-label-keys-counts-only-the-pods-own-revision": case(
        TWO_ZONES, (*on("a1", 3, extra_labels={"rev": "v1"}), *on("b1", extra_labels={"rev": "v2"})),
        pod(extra_labels={"rev": "v2"}, constraints=[spread(matchLabelKeys=["rev"])]), a1=None, a2=None, b1=SPREAD),
    "match-label-keys-without-them-every-revision-counts": case(
        TWO_ZONES, (*on("a1", 3, extra_labels={"rev": "v1"}), *on("b1", extra_labels={"rev": "v2"})),
        pod(extra_labels={"rev": "v2"}, constraints=[spread()]), a1=SPREAD, a2=SPREAD, b1=None),
    "match-label-keys-key-the-pod-lacks-is-ignored": case(
        TWO_ZONES, (*on("a1", 3, extra_labels={"rev": "v1"}), *on("b1")),
        pod(constraints=[spread(matchLabelKeys=["rev"])]), a1=SPREAD, a2=SPREAD, b1=None),
    "match-label-keys-make-an-empty-selector-count": case(
        TWO_ZONES, (*on("a1", 3, extra_labels={"rev": "v1"}), *on("b1", extra_labels={"rev": "v2"})),
        pod(extra_labels={"rev": "v1"}, constraints=[spread(selector={}, matchLabelKeys=["rev"])]),
        a1=SPREAD, a2=SPREAD, b1=None),
    # ---- whenUnsatisfiable
    "schedule-anyway-does-not-filter-beside-do-not-schedule": case(
        TWO_ZONES, on("a1", 3), pod(constraints=[spread(HOST, when="ScheduleAnyway"), spread(max_skew=4)]),
        a1=None, a2=None, b1=None),
    # ---- a node missing a topology key
    "node-without-the-key-is-rejected": case(
        (*TWO_ZONES, node("x1")), (), pod(constraints=[spread()]), a1=None, a2=None, b1=None, x1=MISSING),
    "node-without-the-key-is-rejected-even-if-empty-and-skew-allows": case(
        (*TWO_ZONES, node("x1")), (), pod(constraints=[spread(max_skew=5)]), a1=None, a2=None, b1=None,
        x1=MISSING),
    "pods-on-a-node-lacking-another-constraints-key-do-not-count": case(
        (node("a1", "a", rack="r1"), node("a2", "a"), node("b1", "b", rack="r1")),
        (*on("a2", 4), *on("b1")), pod(constraints=[spread(), spread(RACK, 5)]),
        a1=None, a2=MISSING, b1=SPREAD),
    "constraints-in-order-skew-before-a-later-missing-key": case(
        (node("a1", "a", rack="r1"), node("a2", "a"), node("b1", "b", rack="r1")),
        (*on("a1", 2), *on("b1")), pod(constraints=[spread(), spread(RACK, 5)]),
        a1=SPREAD, a2=SPREAD, b1=None),
    # ---- minDomains
    "min-domains-above-the-domain-count-makes-the-minimum-0": case(
        TWO_ZONES, (*on("a1"), *on("b1")), pod(constraints=[spread(minDomains=3)]), a1=SPREAD, a2=SPREAD, b1=SPREAD),
    "min-domains-equal-to-the-domain-count-keeps-the-minimum": case(
        TWO_ZONES, (*on("a1"), *on("b1")), pod(constraints=[spread(minDomains=2)]), a1=None, a2=None, b1=None),
    "min-domains-above-the-count-with-max-skew-2": case(
        TWO_ZONES, (*on("a1"), *on("b1", 2)), pod(constraints=[spread(max_skew=2, minDomains=3)]),
        a1=None, a2=None, b1=SPREAD),
    "min-domains-counts-only-eligible-domains": case(
        THREE_ZONES, (*on("a1"), *on("b1")), pod(affinity=zone_in("a", "b"), constraints=[spread(minDomains=3)]),
        a1=SPREAD, a2=SPREAD, b1=SPREAD, c1=None),
    # ---- nodeAffinityPolicy
    "affinity-honored-by-default-excludes-other-zones": case(
        THREE_ZONES, (*on("a1"), *on("b1", 2)), pod(affinity=zone_in("a", "b"), constraints=[spread()]),
        a1=None, a2=None, b1=SPREAD, c1=None),
    "affinity-policy-ignore-counts-every-zone": case(
        THREE_ZONES, (*on("a1"), *on("b1", 2)),
        pod(affinity=zone_in("a", "b"), constraints=[spread(nodeAffinityPolicy="Ignore")]),
        a1=SPREAD, a2=SPREAD, b1=SPREAD, c1=None),
    "node-selector-honored-like-affinity": case(
        (node("a1", "a", rack="r1"), node("b1", "b", rack="r1"), node("c1", "c")),
        (*on("a1"), *on("b1", 2)), pod(node_selector={RACK: "r1"}, constraints=[spread()]),
        a1=None, b1=SPREAD, c1=None),
    "node-selector-policy-ignore": case(
        (node("a1", "a", rack="r1"), node("b1", "b", rack="r1"), node("c1", "c")),
        (*on("a1"), *on("b1", 2)), pod(node_selector={RACK: "r1"}, constraints=[spread(nodeAffinityPolicy="Ignore")]),
        a1=SPREAD, b1=SPREAD, c1=None),
    # ---- nodeTaintsPolicy
    "taints-ignored-by-default-tainted-zone-is-the-minimum": case(
        TAINTED_C, (*on("a1"), *on("b1")), pod(constraints=[spread()]), a1=SPREAD, b1=SPREAD, c1=None),
    "taints-policy-honor-excludes-untolerated-taint": case(
        TAINTED_C, (*on("a1"), *on("b1")), pod(constraints=[spread(nodeTaintsPolicy="Honor")]),
        a1=None, b1=None, c1=None),
    "taints-policy-honor-keeps-tolerated-taint": case(
        TAINTED_C, (*on("a1"), *on("b1")),
        pod(tolerations=[{"key": "gpu", "operator": "Exists"}], constraints=[spread(nodeTaintsPolicy="Honor")]),
        a1=SPREAD, b1=SPREAD, c1=None),
    "taints-policy-honor-keeps-prefer-no-schedule": case(
        SOFT_TAINTED_C, (*on("a1"), *on("b1")), pod(constraints=[spread(nodeTaintsPolicy="Honor")]),
        a1=SPREAD, b1=SPREAD, c1=None),
    "taints-policy-honor-excluded-node-judged-by-its-domain": case(
        (*TAINTED_C, node("c2", "c")), (*on("a1"), *on("b1"), *on("c2", 2)),
        pod(constraints=[spread(nodeTaintsPolicy="Honor")]), a1=None, b1=None, c1=SPREAD, c2=SPREAD),
}


@pytest.mark.parametrize("row", list(CASES.values()), ids=list(CASES))
def test_spread_rule(row: Case) -> None:
    placed = placedpods.PlacedPods(row.nodes, row.bound)
    check = topologyspread.prepare(row.pod, placed)
    assert check is not None
    assert {n.metadata.name: check.reject(n) for n in row.nodes} == dict(row.expect)


def test_finished_pods_are_left_out_by_placed_pods() -> None:
    """Succeeded/Failed pods never reach the filter (PlacedPods leaves them out, as upstream's informer)."""
    finished = [p.model_copy(update={"status": pods.PodStatus(phase="Succeeded")}) for p in on("b1", 5)]
    placed = placedpods.PlacedPods(TWO_ZONES, [*on("a1"), *finished])
    check = topologyspread.prepare(pod(constraints=[spread()]), placed)
    assert check is not None
    assert [check.reject(n) for n in TWO_ZONES] == [SPREAD, SPREAD, None]


def test_pods_placed_by_the_pass_count() -> None:
    placed = placedpods.PlacedPods(TWO_ZONES, on("a1")).fork()
    placed.add(pod("replica", node_name="b1"), "b1")
    check = topologyspread.prepare(pod(constraints=[spread()]), placed)
    assert check is not None
    assert [check.reject(n) for n in TWO_ZONES] == [None, None, None]


@pytest.mark.parametrize("constraints", [
    [], [spread(when="ScheduleAnyway")], [spread(HOST, 3, when="ScheduleAnyway", app=None)],
], ids=["no-constraints", "schedule-anyway-only", "system-default-like-schedule-anyway"])
def test_no_do_not_schedule_constraint_is_the_fast_path(constraints: list[dict[str, Any]]) -> None:
    placed = placedpods.PlacedPods(TWO_ZONES, on("a1", 9))
    assert topologyspread.prepare(pod(constraints=constraints), placed) is None


def test_invalid_selector_names_pod_and_constraint() -> None:
    bad = spread(selector={"matchExpressions": [{"key": "app", "operator": "Near", "values": ["x"]}]})
    placed = placedpods.PlacedPods(TWO_ZONES)  # no pod to match against: still refused up front
    with pytest.raises(ValueError, match=r"pod default/incoming: topologySpreadConstraints\[1\].*'Near'"):
        topologyspread.prepare(pod(constraints=[spread(), bad]), placed)


def test_missing_max_skew_is_an_input_error() -> None:
    with pytest.raises(ValueError, match=r"topologySpreadConstraints\[0\].*maxSkew"):
        topologyspread.prepare(pod(constraints=[spread(max_skew=None)]), placedpods.PlacedPods(TWO_ZONES))


def test_invalid_selector_in_schedule_anyway_is_not_the_filters() -> None:
    bad = spread(when="ScheduleAnyway", selector={"matchExpressions": [{"key": "app", "operator": "Near"}]})
    assert topologyspread.prepare(pod(constraints=[bad]), placedpods.PlacedPods(TWO_ZONES)) is None


def test_reasons_are_upstreams() -> None:
    assert topologyspread.REASON == "node(s) didn't match pod topology spread constraints"
    assert topologyspread.REASON_MISSING_LABEL == "node(s) didn't match pod topology spread constraints (missing required label)"


# ---------------------------------------------------------------- properties

KEYS = (ZONE, RACK, HOST)
APPS = ("web", "db")


@st.composite
def clusters(draw: st.DrawFn) -> tuple[list[nodes.Node], list[pods.Pod], pods.Pod]:
    node_list = []
    for index in range(draw(st.integers(1, 6))):
        node_list.append(node(
            f"n{index}", draw(st.sampled_from(["a", "b", "c", None])), rack=draw(st.sampled_from(["r1", "r2", None])),
            hostname=draw(st.booleans()),
            taints=[{"key": "gpu", "effect": draw(st.sampled_from(["NoSchedule", "NoExecute", "PreferNoSchedule"]))}]
            if draw(st.booleans()) else []))
    bound = []
    for index in range(draw(st.integers(0, 12))):
        bound.append(pod(
            f"p{index}", app=draw(st.sampled_from(APPS)), extra_labels={"rev": draw(st.sampled_from(["v1", "v2"]))},
            namespace=draw(st.sampled_from(["default", "default", "other"])),
            node_name=draw(st.sampled_from(node_list)).metadata.name, deleting=draw(st.integers(0, 5)) == 0))
    constraints = []
    for _ in range(draw(st.integers(1, 2))):
        selector = draw(st.sampled_from([None, {}, {"matchLabels": {"app": "web"}},
                                         {"matchExpressions": [{"key": "app", "operator": "In", "values": ["db"]}]}]))
        extra: dict[str, Any] = {}
        if draw(st.booleans()):
            extra["matchLabelKeys"] = ["rev"]
        if (min_domains := draw(st.sampled_from([None, 1, 2, 3, 4]))) is not None:
            extra["minDomains"] = min_domains
        if (affinity_policy := draw(st.sampled_from([None, "Honor", "Ignore"]))) is not None:
            extra["nodeAffinityPolicy"] = affinity_policy
        if (taints_policy := draw(st.sampled_from([None, "Honor", "Ignore"]))) is not None:
            extra["nodeTaintsPolicy"] = taints_policy
        constraints.append(spread(draw(st.sampled_from(KEYS)), draw(st.integers(1, 3)),
                                  when=draw(st.sampled_from(["DoNotSchedule", "DoNotSchedule", "ScheduleAnyway"])),
                                  selector=selector, app=None, **extra))
    incoming = pod(
        app=draw(st.sampled_from(APPS)), extra_labels={"rev": "v1"} if draw(st.booleans()) else {},
        constraints=constraints, uid="incoming-uid",
        node_selector={RACK: "r1"} if draw(st.booleans()) else None,
        affinity=zone_in("a", "b") if draw(st.booleans()) else None,
        tolerations=[{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}] if draw(st.booleans()) else ())
    if draw(st.booleans()):  # the incoming pod already on a node (placed again): never counted
        where = draw(st.sampled_from(node_list)).metadata.name
        bound.append(incoming.model_copy(update={"spec": incoming.spec.model_copy(update={"node_name": where})}))
    return node_list, bound, incoming


def brute_force(incoming: pods.Pod, placed: placedpods.PlacedPods, target: nodes.Node) -> str | None:
    """Upstream's PreFilter and Filter restated from scratch for one node, nothing precomputed."""
    hard = [c for c in incoming.spec.topology_spread_constraints if c.when_unsatisfiable == "DoNotSchedule"]
    keys = [c.topology_key for c in hard]
    for c in hard:
        if c.topology_key not in target.metadata.labels:
            return MISSING
        selector = labels.with_label_keys(c.label_selector, incoming.metadata.labels, match=c.match_label_keys)
        empty = selector is not None and not selector.match_labels and not selector.match_expressions

        def eligible(n: nodes.Node, c: pods.TopologySpreadConstraint = c) -> bool:
            if any(k not in n.metadata.labels for k in keys):
                return False
            if (c.node_affinity_policy or "Honor") == "Honor":
                if any(n.metadata.labels.get(k) != v for k, v in incoming.spec.node_selector.items()):
                    return False
                # The only affinity the strategy draws: zone In (a, b).
                if incoming.spec.affinity is not None and n.metadata.labels.get(ZONE) not in ("a", "b"):
                    return False
            if c.node_taints_policy == "Honor" and any(
                    t.effect in ("NoSchedule", "NoExecute")
                    and not any(nodefit.tolerates(tol, t) for tol in incoming.spec.tolerations)
                    for t in n.spec.taints):
                return False
            return True

        def count(domain: str, c: pods.TopologySpreadConstraint = c, selector: Any = selector,
                  empty: bool = empty) -> int:
            return 0 if empty else sum(
                1 for p, where in placed.all()
                if eligible(placed.nodes[where]) and placed.nodes[where].metadata.labels[c.topology_key] == domain
                and p.namespace == incoming.namespace and p.metadata.deletion_timestamp is None
                and p.metadata.uid != incoming.metadata.uid and labels.matches(selector, p.metadata.labels))

        domains = {n.metadata.labels[c.topology_key] for n in placed.nodes.values() if eligible(n)}
        minimum = 0 if len(domains) < (c.min_domains or 1) else min(count(d) for d in domains)
        self_match = labels.matches(selector, incoming.metadata.labels)
        assert c.max_skew is not None
        if count(target.metadata.labels[c.topology_key]) + self_match - minimum > c.max_skew:
            return SPREAD
    return None


@settings(max_examples=300, deadline=None)
@given(clusters())
def test_check_equals_brute_force(cluster: tuple[list[nodes.Node], list[pods.Pod], pods.Pod]) -> None:
    node_list, bound, incoming = cluster
    placed = placedpods.PlacedPods(node_list, bound)
    check = topologyspread.prepare(incoming, placed)
    for target in node_list:
        want = brute_force(incoming, placed, target)
        assert (check.reject(target) if check is not None else None) == want, target.metadata.name


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 6), st.integers(1, 3), st.sampled_from([None, 1, 2, 3, 5]), st.sampled_from([ZONE, HOST]),
       st.lists(st.integers(0, 10**6), min_size=1, max_size=25))
def test_placing_where_allowed_keeps_domains_within_max_skew(
        node_count: int, max_skew: int, min_domains: int | None, key: str, picks: list[int]) -> None:
    """Each pod (matching its own selector) goes to a node `reject` allows. Then: eligible domains
    never differ by more than maxSkew; with fewer domains than minDomains none holds more than
    maxSkew; and otherwise some node is always allowed (the least-loaded domain is)."""
    node_list = [node(f"n{i}", "abc"[i % 3]) for i in range(node_count)]
    placed = placedpods.PlacedPods(node_list).fork()
    extra: dict[str, Any] = {"minDomains": min_domains} if min_domains is not None else {}
    domain_of = {n.metadata.name: n.metadata.labels[key] for n in node_list}
    domains = set(domain_of.values())
    counts = dict.fromkeys(domains, 0)
    for step, pick in enumerate(picks):
        incoming = pod(f"r{step}", constraints=[spread(key, max_skew, **extra)])
        check = topologyspread.prepare(incoming, placed)
        assert check is not None
        allowed = [n.metadata.name for n in node_list if check.reject(n) is None]
        if min_domains is None or len(domains) >= min_domains:
            assert allowed, f"step {step}: no node allowed with {counts}"
        if not allowed:
            assert all(c == max_skew for c in counts.values())
            continue
        chosen = allowed[pick % len(allowed)]
        placed.add(incoming, chosen)
        counts[domain_of[chosen]] += 1
        assert max(counts.values()) - min(counts.values()) <= max_skew, counts
        if min_domains is not None and len(domains) < min_domains:
            assert max(counts.values()) <= max_skew, counts


@settings(max_examples=300, deadline=None)
@given(clusters(), st.data())
def test_with_pods_equals_a_check_over_the_cluster_with_them(
        cluster: tuple[list[nodes.Node], list[pods.Pod], pods.Pod], data: st.DataObject) -> None:
    """A gang member's check grown by the members placed before it (`with_pods`) says what a check prepared
    over the cluster holding them says, on every node: the gang search may count members incrementally."""
    node_list, bound, incoming = cluster
    check = topologyspread.prepare(incoming, placedpods.PlacedPods(node_list, bound))
    if check is None:
        return
    split = data.draw(st.integers(0, len(bound)))
    before, members = bound[:split], bound[split:]
    by_name = {n.metadata.name: n for n in node_list}
    partial = topologyspread.prepare(incoming, placedpods.PlacedPods(node_list, before))
    assert partial is not None
    grown = partial.with_pods([(p, by_name[p.spec.node_name or ""]) for p in members if p.spec.node_name in by_name])
    for target in node_list:
        assert grown.reject(target) == check.reject(target), target.metadata.name
