"""InterPodAffinity filter: one named row per rule of `podaffinity`, then properties.

Each row gives the incoming pod, the pods already on the nodes, and what `reject` says for each
node of a fixed cluster (None: the node passes). The ids are the row names, so a failure reads as
the rule that broke. The cluster: two zones, one host per node, one node without a zone.

    n1 zone a | n2 zone a | n3 zone b | n4 (no zone)

Namespaces: default (team=a), other (team=b), third (no labels).

The properties compare `reject` with a brute-force restatement of the rules over every pod and
node, and check that a node without a required term's topology key is always refused.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.scheduling.objects import node_

from dralloc.model import conversion, nodes, pods
from dralloc.scheduling import labels, placedpods, podaffinity

AFFINITY = podaffinity.REASON_AFFINITY
ANTI = podaffinity.REASON_ANTI_AFFINITY
EXISTING = podaffinity.REASON_EXISTING_ANTI_AFFINITY
ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"

NODES = (
    node_("n1", labels={ZONE: "a", HOST: "n1"}),
    node_("n2", labels={ZONE: "a", HOST: "n2"}),
    node_("n3", labels={ZONE: "b", HOST: "n3"}),
    node_("n4", labels={HOST: "n4"}),
)
NAMESPACES: dict[str, dict[str, str]] = {"default": {"team": "a"}, "other": {"team": "b"}, "third": {}}


def term(key: str = ZONE, *, match: Mapping[str, str] | None = None,
         expressions: Sequence[tuple[str, str, Sequence[str]]] = (), selector: bool = True,
         namespaces: Sequence[str] = (), ns_match: Mapping[str, str] | None = None, ns_empty: bool = False,
         match_keys: Sequence[str] = (), mismatch_keys: Sequence[str] = ()) -> dict[str, Any]:
    """A PodAffinityTerm as API JSON. `selector=False`: no labelSelector at all (matches nothing);
    no `match` and no `expressions`: an empty one (matches every pod)."""
    out: dict[str, Any] = {"topologyKey": key}
    if selector:
        sel: dict[str, Any] = {}
        if match:
            sel["matchLabels"] = dict(match)
        if expressions:
            sel["matchExpressions"] = [{"key": k, "operator": op, "values": list(v)} for k, op, v in expressions]
        out["labelSelector"] = sel
    if namespaces:
        out["namespaces"] = list(namespaces)
    if ns_match is not None:
        out["namespaceSelector"] = {"matchLabels": dict(ns_match)}
    elif ns_empty:
        out["namespaceSelector"] = {}
    if match_keys:
        out["matchLabelKeys"] = list(match_keys)
    if mismatch_keys:
        out["mismatchLabelKeys"] = list(mismatch_keys)
    return out


def pod(name: str = "incoming", *, namespace: str = "default", labels: Mapping[str, str] | None = None,
        on: str | None = None, uid: str | None = None, affinity: Sequence[Mapping[str, Any]] = (),
        anti: Sequence[Mapping[str, Any]] = (), preferred: Sequence[Mapping[str, Any]] = ()) -> pods.Pod:
    """A pod with required affinity/anti-affinity terms (`preferred`: preferred affinity terms), on a node."""
    metadata: dict[str, Any] = {"name": name, "namespace": namespace, "labels": dict(labels or {})}
    if uid is not None:
        metadata["uid"] = uid
    spec: dict[str, Any] = {"containers": [{"name": "main"}]}
    if on is not None:
        spec["nodeName"] = on
    aff: dict[str, Any] = {}
    if affinity or preferred:
        aff["podAffinity"] = {}
        if affinity:
            aff["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = [dict(t) for t in affinity]
        if preferred:
            aff["podAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": 1, "podAffinityTerm": dict(t)} for t in preferred]
    if anti:
        aff["podAntiAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": [dict(t) for t in anti]}
    if aff:
        spec["affinity"] = aff
    parsed: pods.Pod = conversion.parse_as(pods.Pod, {"apiVersion": "v1", "kind": "Pod", "metadata": metadata,
                                                      "spec": spec})
    return parsed


def verdicts(incoming: pods.Pod, bound: Sequence[pods.Pod], node_list: Sequence[nodes.Node] = NODES,
             namespaces: Mapping[str, Mapping[str, str]] = NAMESPACES) -> dict[str, str | None]:
    placed = placedpods.PlacedPods(node_list, bound, namespaces)
    check = podaffinity.prepare(incoming, placed)
    return {n.metadata.name: None if check is None else check.reject(n) for n in node_list}


@dataclasses.dataclass(frozen=True)
class Case:
    pod: pods.Pod
    bound: tuple[pods.Pod, ...]
    expect: tuple[str | None, str | None, str | None, str | None]  # n1, n2, n3, n4


DB = {"app": "db"}
WEB = {"app": "web"}
ALL_PASS = (None, None, None, None)

CASES: dict[str, Case] = {
    # ---- the incoming pod's affinity: a matching pod in the node's domain
    "affinity-zone-passes-every-node-of-the-matching-pod's-zone": Case(
        pod(affinity=[term(ZONE, match=DB)]), (pod("db", labels=DB, on="n1"),), (None, None, AFFINITY, AFFINITY)),
    "affinity-hostname-passes-only-the-matching-pod's-node": Case(
        pod(affinity=[term(HOST, match=DB)]), (pod("db", labels=DB, on="n1"),), (None, AFFINITY, AFFINITY, AFFINITY)),
    "affinity-node-without-the-topology-key-is-refused": Case(
        pod(affinity=[term(ZONE, match=DB)]), (pod("db", labels=DB, on="n4"),),
        (AFFINITY, AFFINITY, AFFINITY, AFFINITY)),
    "affinity-no-matching-pod-anywhere-refuses-every-node": Case(
        pod(affinity=[term(ZONE, match=DB)]), (pod("web", labels=WEB, on="n1"),),
        (AFFINITY, AFFINITY, AFFINITY, AFFINITY)),
    "affinity-every-term-needs-its-domain": Case(
        pod(affinity=[term(ZONE, match=DB), term(HOST, match=DB)]), (pod("db", labels=DB, on="n1"),),
        (None, AFFINITY, AFFINITY, AFFINITY)),
    "affinity-a-pod-must-match-all-terms-not-one-each": Case(
        pod(affinity=[term(ZONE, match=DB), term(ZONE, match={"tier": "back"})]),
        (pod("db", labels=DB, on="n1"), pod("back", labels={"tier": "back"}, on="n1")),
        (AFFINITY, AFFINITY, AFFINITY, AFFINITY)),
    "affinity-a-pod-matching-all-terms-counts-for-each": Case(
        pod(affinity=[term(ZONE, match=DB), term(ZONE, match={"tier": "back"})]),
        (pod("db", labels={"app": "db", "tier": "back"}, on="n3"),), (AFFINITY, AFFINITY, None, AFFINITY)),
    "affinity-absent-label-selector-matches-no-pod": Case(
        pod(affinity=[term(ZONE, selector=False)]), (pod("db", labels=DB, on="n1"),),
        (AFFINITY, AFFINITY, AFFINITY, AFFINITY)),
    "affinity-empty-label-selector-matches-every-pod": Case(
        pod(affinity=[term(ZONE)]), (pod("any", on="n3"),), (AFFINITY, AFFINITY, None, AFFINITY)),
    "affinity-expressions-select-pods": Case(
        pod(affinity=[term(ZONE, expressions=[("app", "In", ["db", "cache"]), ("tier", "DoesNotExist", [])])]),
        (pod("db", labels={"app": "db", "tier": "x"}, on="n1"), pod("cache", labels={"app": "cache"}, on="n3")),
        (AFFINITY, AFFINITY, None, AFFINITY)),
    # ---- namespaces of the incoming pod's terms
    "affinity-reads-only-its-own-namespace-by-default": Case(
        pod(affinity=[term(ZONE, match=DB)]), (pod("db", namespace="other", labels=DB, on="n1"),),
        (AFFINITY, AFFINITY, AFFINITY, AFFINITY)),
    "affinity-namespaces-list-replaces-its-own-namespace": Case(
        pod(affinity=[term(ZONE, match=DB, namespaces=["other"])]),
        (pod("db", labels=DB, on="n1"), pod("db2", namespace="other", labels=DB, on="n3")),
        (AFFINITY, AFFINITY, None, AFFINITY)),
    "affinity-namespace-selector-reads-namespaces-by-label": Case(
        pod(affinity=[term(ZONE, match=DB, ns_match={"team": "b"})]),
        (pod("db", labels=DB, on="n1"), pod("db2", namespace="other", labels=DB, on="n3")),
        (AFFINITY, AFFINITY, None, AFFINITY)),
    "affinity-namespace-selector-adds-to-the-namespaces-list": Case(
        pod(affinity=[term(HOST, match=DB, namespaces=["third"], ns_match={"team": "b"})]),
        (pod("db", namespace="third", labels=DB, on="n1"), pod("db2", namespace="other", labels=DB, on="n3"),
         pod("db3", labels=DB, on="n2")),
        (None, AFFINITY, None, AFFINITY)),
    "affinity-empty-namespace-selector-reads-every-namespace": Case(
        pod(affinity=[term(ZONE, match=DB, ns_empty=True)]), (pod("db", namespace="elsewhere", labels=DB, on="n3"),),
        (AFFINITY, AFFINITY, None, AFFINITY)),
    "affinity-namespace-selector-selects-only-known-namespaces": Case(
        pod(affinity=[{"topologyKey": ZONE, "labelSelector": {"matchLabels": DB},
                       "namespaceSelector": {"matchExpressions": [{"key": "team", "operator": "DoesNotExist"}]}}]),
        (pod("db", namespace="unknown", labels=DB, on="n3"), pod("db2", namespace="third", labels=DB, on="n1")),
        (None, None, AFFINITY, AFFINITY)),
    # ---- the first pod of a series (upstream's rule for pods with affinity to themselves)
    "first-of-series-passes-every-node-with-the-keys": Case(
        pod(labels=WEB, affinity=[term(ZONE, match=WEB)]), (), (None, None, None, AFFINITY)),
    "first-of-series-needs-the-pod-to-match-its-own-terms": Case(
        pod(labels=DB, affinity=[term(ZONE, match=WEB)]), (), (AFFINITY, AFFINITY, AFFINITY, AFFINITY)),
    "first-of-series-needs-its-own-namespace-in-the-term": Case(
        pod(labels=WEB, affinity=[term(ZONE, match=WEB, namespaces=["other"])]), (),
        (AFFINITY, AFFINITY, AFFINITY, AFFINITY)),
    "first-of-series-ends-once-a-matching-pod-is-placed": Case(
        pod(labels=WEB, affinity=[term(ZONE, match=WEB)]), (pod("web", labels=WEB, on="n3"),),
        (AFFINITY, AFFINITY, None, AFFINITY)),
    "first-of-series-holds-while-matching-pods-sit-on-nodes-without-the-key": Case(
        pod(labels=WEB, affinity=[term(ZONE, match=WEB)]), (pod("web", labels=WEB, on="n4"),),
        (None, None, None, AFFINITY)),
    "first-of-series-holds-while-pods-match-only-some-terms": Case(
        pod(labels={"app": "web", "tier": "front"}, affinity=[term(ZONE, match=WEB), term(HOST, match={"tier": "front"})]),
        (pod("web", labels=WEB, on="n3"),), (None, None, None, AFFINITY)),
    # ---- the incoming pod's anti-affinity: no matching pod in the node's domain
    "anti-hostname-refuses-only-the-matching-pod's-node": Case(
        pod(anti=[term(HOST, match=DB)]), (pod("db", labels=DB, on="n1"),), (ANTI, None, None, None)),
    "anti-zone-refuses-the-whole-zone": Case(
        pod(anti=[term(ZONE, match=DB)]), (pod("db", labels=DB, on="n1"),), (ANTI, ANTI, None, None)),
    "anti-node-without-the-topology-key-passes": Case(
        pod(anti=[term(ZONE, match=DB)]), (pod("db", labels=DB, on="n3"),), (None, None, ANTI, None)),
    "anti-matching-pod-on-a-node-without-the-key-refuses-nothing": Case(
        pod(anti=[term(ZONE, match=DB)]), (pod("db", labels=DB, on="n4"),), ALL_PASS),
    "anti-any-one-term-refuses": Case(
        pod(anti=[term(HOST, match=WEB), term(ZONE, match=DB)]),
        (pod("db", labels=DB, on="n3"), pod("web", labels=WEB, on="n4")), (None, None, ANTI, ANTI)),
    "anti-other-namespace-ignored-by-default": Case(
        pod(anti=[term(HOST, match=DB)]), (pod("db", namespace="other", labels=DB, on="n1"),), ALL_PASS),
    "anti-namespace-selector-reads-labelled-namespaces": Case(
        pod(anti=[term(HOST, match=DB, ns_match={"team": "b"})]),
        (pod("db", namespace="other", labels=DB, on="n1"), pod("db2", labels=DB, on="n2")), (ANTI, None, None, None)),
    "anti-the-incoming-pod-itself-never-counts": Case(
        pod(labels=DB, uid="u-1", anti=[term(HOST, match=DB)]), (pod("incoming", labels=DB, uid="u-1", on="n1"),),
        ALL_PASS),
    "anti-the-incoming-pod-without-uid-is-known-by-name": Case(
        pod(labels=DB, anti=[term(HOST, match=DB)]), (pod("incoming", labels=DB, on="n1"), pod("db", labels=DB, on="n3")),
        (None, None, ANTI, None)),
    # ---- existing pods' anti-affinity against the incoming pod (symmetry)
    "existing-anti-hostname-refuses-its-node": Case(
        pod(labels=WEB), (pod("lonely", on="n1", anti=[term(HOST, match=WEB)]),), (EXISTING, None, None, None)),
    "existing-anti-zone-refuses-its-zone": Case(
        pod(labels=WEB), (pod("lonely", on="n3", anti=[term(ZONE, match=WEB)]),), (None, None, EXISTING, None)),
    "existing-anti-on-a-node-without-the-key-refuses-nothing": Case(
        pod(labels=WEB), (pod("lonely", on="n4", anti=[term(ZONE, match=WEB)]),), ALL_PASS),
    "existing-anti-namespaces-are-the-existing-pod's": Case(
        pod(labels=WEB), (pod("lonely", namespace="other", on="n1", anti=[term(HOST, match=WEB)]),), ALL_PASS),
    "existing-anti-namespaces-list-names-the-incoming-namespace": Case(
        pod(labels=WEB), (pod("lonely", namespace="other", on="n1", anti=[term(HOST, match=WEB, namespaces=["default"])]),),
        (EXISTING, None, None, None)),
    "existing-anti-namespace-selector-reads-the-incoming-namespace-labels": Case(
        pod(labels=WEB), (pod("a", namespace="other", on="n1", anti=[term(HOST, match=WEB, ns_match={"team": "a"})]),
                          pod("b", namespace="other", on="n2", anti=[term(HOST, match=WEB, ns_match={"team": "b"})])),
        (EXISTING, None, None, None)),
    "existing-anti-empty-namespace-selector-reads-every-namespace": Case(
        pod(labels=WEB, namespace="elsewhere"), (pod("lonely", namespace="other", on="n2", anti=[term(HOST, ns_empty=True)]),),
        (None, EXISTING, None, None)),
    "existing-anti-not-matching-the-incoming-pod-refuses-nothing": Case(
        pod(labels=DB), (pod("lonely", on="n1", anti=[term(HOST, match=WEB)]),), ALL_PASS),
    "existing-anti-of-the-incoming-pod-itself-never-counts": Case(
        pod(labels=WEB, uid="u-1"), (pod("incoming", labels=WEB, uid="u-1", on="n1", anti=[term(HOST, match=WEB)]),),
        ALL_PASS),
    "existing-anti-with-an-invalid-selector-counts-none-of-its-terms": Case(
        pod(labels=WEB), (pod("broken", on="n1", anti=[term(HOST, match=WEB), term(ZONE, expressions=[("x", "Near", ["y"])])]),),
        ALL_PASS),
    # ---- matchLabelKeys / mismatchLabelKeys: merged with the labels of the pod that owns the term
    "match-label-keys-narrow-affinity-to-the-incoming-pod's-value": Case(
        pod(labels={"tenant": "t1"}, affinity=[term(ZONE, match=DB, match_keys=["tenant"])]),
        (pod("db-t2", labels={"app": "db", "tenant": "t2"}, on="n1"), pod("db-t1", labels={"app": "db", "tenant": "t1"}, on="n3")),
        (AFFINITY, AFFINITY, None, AFFINITY)),
    "match-label-keys-the-pod-lacks-are-ignored": Case(
        pod(affinity=[term(ZONE, match=DB, match_keys=["tenant"])]),
        (pod("db-t2", labels={"app": "db", "tenant": "t2"}, on="n1"),), (None, None, AFFINITY, AFFINITY)),
    "mismatch-label-keys-keep-tenants-apart": Case(
        pod(labels={"tenant": "t1"}, anti=[term(ZONE, mismatch_keys=["tenant"])]),
        (pod("t1", labels={"tenant": "t1"}, on="n1"), pod("t2", labels={"tenant": "t2"}, on="n3")),
        (None, None, ANTI, None)),
    "existing-anti-match-label-keys-use-the-existing-pod's-labels": Case(
        pod(labels={"app": "web", "tenant": "t1"}),
        (pod("x", labels={"tenant": "t1"}, on="n1", anti=[term(HOST, match=WEB, match_keys=["tenant"])]),
         pod("y", labels={"tenant": "t2"}, on="n2", anti=[term(HOST, match=WEB, match_keys=["tenant"])])),
        (EXISTING, None, None, None)),
    # ---- which reason wins: affinity, then anti-affinity, then existing pods' anti-affinity
    "precedence-affinity-before-anti-affinity": Case(
        pod(affinity=[term(ZONE, match=DB)], anti=[term(HOST, match=WEB)]),
        (pod("db", labels=DB, on="n1"), pod("web", labels=WEB, on="n2"), pod("web2", labels=WEB, on="n3")),
        (None, ANTI, AFFINITY, AFFINITY)),
    "precedence-anti-affinity-before-existing-anti-affinity": Case(
        pod(labels=WEB, anti=[term(HOST, match=DB)]),
        (pod("db", labels=DB, on="n1", anti=[term(ZONE, match=WEB)]),), (ANTI, EXISTING, None, None)),
    "precedence-missing-key-is-affinity-even-with-existing-anti": Case(
        pod(labels=WEB, affinity=[term(ZONE, match=WEB)]), (pod("lonely", on="n4", anti=[term(HOST, match=WEB)]),),
        (None, None, None, AFFINITY)),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_filter_rule(case: Case) -> None:
    """Each node of the cluster gets the row's verdict (upstream's reason, or None)."""
    assert tuple(verdicts(case.pod, case.bound).values()) == case.expect


class TestFastPath:
    def test_pod_without_terms_and_no_existing_anti_affinity_needs_no_check(self) -> None:
        """With nothing that can refuse a node, `prepare` returns None."""
        placed = placedpods.PlacedPods(NODES, [pod("db", labels=DB, on="n1")], NAMESPACES)
        assert podaffinity.prepare(pod(), placed) is None

    def test_preferred_terms_alone_never_filter(self) -> None:
        """Preferred (scoring) terms refuse no node."""
        placed = placedpods.PlacedPods(NODES, [pod("db", labels=DB, on="n1")], NAMESPACES)
        assert podaffinity.prepare(pod(preferred=[term(HOST, match={"app": "nowhere"})]), placed) is None

    def test_existing_anti_affinity_not_matching_needs_no_check(self) -> None:
        """Existing anti-affinity that does not select the pod leaves nothing to check."""
        placed = placedpods.PlacedPods(NODES, [pod("lonely", on="n1", anti=[term(HOST, match=WEB)])], NAMESPACES)
        assert podaffinity.prepare(pod(labels=DB), placed) is None

    def test_existing_anti_affinity_matching_gives_a_check(self) -> None:
        """Existing anti-affinity that selects the pod makes `prepare` return a check."""
        placed = placedpods.PlacedPods(NODES, [pod("lonely", on="n1", anti=[term(HOST, match=WEB)])], NAMESPACES)
        assert podaffinity.prepare(pod(labels=WEB), placed) is not None


class TestPlacedPods:
    def test_a_pod_placed_by_the_pass_counts(self) -> None:
        """A pod added to PlacedPods (placed by the pass, not yet bound) counts like a bound one."""
        placed = placedpods.PlacedPods(NODES, [], NAMESPACES)
        placed.add(pod("web-0", labels=WEB), "n3")
        check = podaffinity.prepare(pod("web-1", labels=WEB, anti=[term(ZONE, match=WEB)]), placed)
        assert check is not None
        assert [check.reject(n) for n in NODES] == [None, None, ANTI, None]

    def test_a_removed_pod_no_longer_counts(self) -> None:
        """A pod removed from PlacedPods (released) refuses no node any more."""
        lonely = pod("lonely", uid="u-9", on="n1", anti=[term(HOST, match=WEB)])
        placed = placedpods.PlacedPods(NODES, [lonely], NAMESPACES)
        placed.remove(lonely, "n1")
        assert podaffinity.prepare(pod(labels=WEB), placed) is None

    def test_finished_pods_do_not_count(self) -> None:
        """A Succeeded pod is not among the placed pods (PlacedPods leaves it out), so it matches nothing."""
        done = conversion.parse_as(pods.Pod, {**pod("db", labels=DB, on="n1").model_dump(by_alias=True, exclude_none=True),
                                              "status": {"phase": "Succeeded"}})
        assert tuple(verdicts(pod(anti=[term(HOST, match=DB)]), [done]).values()) == ALL_PASS


class TestInvalidSelectors:
    def test_invalid_required_term_names_the_pod_and_the_term(self) -> None:
        """An unknown operator in a required term is a ValueError naming the pod, the term and its topology key."""
        placed = placedpods.PlacedPods(NODES, [], NAMESPACES)
        bad = pod("web", affinity=[term(ZONE, match=DB), term(HOST, expressions=[("app", "Near", ["db"])])])
        with pytest.raises(ValueError, match=r"pod default/web: podAffinity\.requiredDuringSchedulingIgnoredDuringExecution"
                                             r"\[1\] \(topologyKey 'kubernetes\.io/hostname'\): invalid labelSelector"):
            podaffinity.prepare(bad, placed)

    def test_invalid_namespace_selector_is_an_error(self) -> None:
        """An unknown operator in a namespaceSelector is a ValueError too."""
        placed = placedpods.PlacedPods(NODES, [], NAMESPACES)
        bad = pod("web", anti=[{"topologyKey": HOST, "labelSelector": {},
                                "namespaceSelector": {"matchExpressions": [{"key": "team", "operator": "Has"}]}}])
        with pytest.raises(ValueError, match=r"podAntiAffinity\.requiredDuringSchedulingIgnoredDuringExecution\[0\].*"
                                             r"invalid namespaceSelector"):
            podaffinity.prepare(bad, placed)

    def test_invalid_preferred_term_is_an_error(self) -> None:
        """Upstream's PreFilter parses preferred terms too: an invalid one refuses the pod as well."""
        placed = placedpods.PlacedPods(NODES, [], NAMESPACES)
        bad = pod("web", preferred=[term(ZONE, expressions=[("app", "Near", ["db"])])])
        with pytest.raises(ValueError, match=r"podAffinity\.preferredDuringSchedulingIgnoredDuringExecution\[0\]"):
            podaffinity.prepare(bad, placed)

    def test_invalid_operator_behind_unmet_match_labels_is_still_found(self) -> None:
        """The check does not depend on any pod's labels reaching the bad requirement."""
        placed = placedpods.PlacedPods(NODES, [pod("x", on="n1")], NAMESPACES)
        bad = pod("web", anti=[term(HOST, match={"never": "there"}, expressions=[("app", "Near", ["db"])])])
        with pytest.raises(ValueError, match="invalid labelSelector"):
            podaffinity.prepare(bad, placed)


def test_reasons_are_upstream_text() -> None:
    """The reasons read exactly as kube-scheduler's InterPodAffinity reports them."""
    assert (AFFINITY, ANTI, EXISTING) == (
        "node(s) didn't match pod affinity rules",
        "node(s) didn't match pod anti-affinity rules",
        "node(s) didn't satisfy existing pods anti-affinity rules",
    )


# ---- properties: a brute-force restatement over every pod and node

KEYS = (ZONE, HOST, "rack")
APPS = ("web", "db")
NS = ("default", "other", "third")


def _selector_matches(owner_labels: Mapping[str, str], raw: Mapping[str, Any], target: Mapping[str, str]) -> bool:
    """The term's labelSelector with matchLabelKeys/mismatchLabelKeys, restated without merging."""
    if "labelSelector" not in raw or not labels.matches(
            conversion.parse_as(pods.LabelSelector, raw["labelSelector"]), target):
        return False
    for key in raw.get("matchLabelKeys", ()):
        if key in owner_labels and target.get(key) != owner_labels[key]:
            return False
    return all(not (key in owner_labels and target.get(key) == owner_labels[key])
               for key in raw.get("mismatchLabelKeys", ()))


def _in_namespaces(owner_ns: str, raw: Mapping[str, Any], target_ns: str) -> bool:
    listed = raw.get("namespaces", [])
    if not listed and "namespaceSelector" not in raw:
        return target_ns == owner_ns
    if target_ns in listed:
        return True
    if "namespaceSelector" in raw:
        # every namespace the pods use is known in these clusters
        return labels.matches(conversion.parse_as(pods.LabelSelector, raw["namespaceSelector"]), NAMESPACES[target_ns])
    return False


def _term_matches(owner: pods.Pod, raw: Mapping[str, Any], target: pods.Pod) -> bool:
    return (_in_namespaces(owner.namespace, raw, target.namespace)
            and _selector_matches(owner.metadata.labels, raw, target.metadata.labels))


def _raw_terms(p: pods.Pod, anti: bool) -> list[dict[str, Any]]:
    affinity = p.spec.affinity
    group = None if affinity is None else (affinity.pod_anti_affinity if anti else affinity.pod_affinity)
    if group is None:
        return []
    return [t.model_dump(by_alias=True, exclude_defaults=True) for t in group.required_during_scheduling_ignored_during_execution]


def brute_force(incoming: pods.Pod, bound: Sequence[pods.Pod], node_list: Sequence[nodes.Node],
                node: nodes.Node) -> str | None:
    by_name = {n.metadata.name: n.metadata.labels for n in node_list}
    others = [(p, by_name[p.spec.node_name]) for p in bound
              if p.spec.node_name in by_name and p.metadata.uid != incoming.metadata.uid]
    here = node.metadata.labels

    def same_domain(key: str, there: Mapping[str, str]) -> bool:
        return key in here and key in there and here[key] == there[key]

    affinity = _raw_terms(incoming, anti=False)
    if affinity:
        if any(t["topologyKey"] not in here for t in affinity):
            return AFFINITY
        matching_all = [(p, there) for p, there in others if all(_term_matches(incoming, t, p) for t in affinity)]
        every_term_met = all(any(same_domain(t["topologyKey"], there) for _, there in matching_all) for t in affinity)
        any_counted = any(t["topologyKey"] in there for _, there in matching_all for t in affinity)
        first_of_series = not any_counted and all(_term_matches(incoming, t, incoming) for t in affinity)
        if not every_term_met and not first_of_series:
            return AFFINITY
    for t in _raw_terms(incoming, anti=True):
        if any(same_domain(t["topologyKey"], there) and _term_matches(incoming, t, p) for p, there in others):
            return ANTI
    for p, there in others:
        for t in _raw_terms(p, anti=True):
            if same_domain(t["topologyKey"], there) and _term_matches(p, t, incoming):
                return EXISTING
    return None


@st.composite
def raw_terms(draw: st.DrawFn) -> dict[str, Any]:
    key = draw(st.sampled_from(KEYS))
    selector = draw(st.sampled_from(["none", "empty", "web", "db", "not-web"]))
    namespaces = draw(st.sampled_from(["own", "list", "selector", "list+selector", "all"]))
    raw = term(key, selector=selector != "none",
               match={"app": selector} if selector in APPS else None,
               expressions=[("app", "NotIn", ["web"])] if selector == "not-web" else (),
               namespaces=["other"] if "list" in namespaces else (),
               ns_match={"team": "a"} if "selector" in namespaces else None,
               ns_empty=namespaces == "all",
               match_keys=["tenant"] if draw(st.booleans()) else (),
               mismatch_keys=["tenant"] if draw(st.booleans()) else ())
    return raw


@st.composite
def pod_labels(draw: st.DrawFn) -> dict[str, str]:
    found = {}
    if draw(st.booleans()):
        found["app"] = draw(st.sampled_from(APPS))
    if draw(st.booleans()):
        found["tenant"] = draw(st.sampled_from(("t1", "t2")))
    return found


@st.composite
def clusters(draw: st.DrawFn) -> tuple[pods.Pod, list[pods.Pod], list[nodes.Node]]:
    node_list = []
    for i in range(draw(st.integers(1, 5))):
        node_labels = {HOST: f"n{i}"} if draw(st.integers(0, 4)) else {}
        if draw(st.booleans()):
            node_labels[ZONE] = draw(st.sampled_from("ab"))
        if draw(st.booleans()):
            node_labels["rack"] = draw(st.sampled_from(("r1", "r2")))
        node_list.append(node_(f"n{i}", labels=node_labels))
    bound = []
    for j in range(draw(st.integers(0, 8))):
        anti = draw(st.lists(raw_terms(), max_size=2)) if draw(st.booleans()) else []
        bound.append(pod(f"p{j}", uid=f"u{j}", namespace=draw(st.sampled_from(NS)), labels=draw(pod_labels()),
                         on=f"n{draw(st.integers(0, len(node_list) - 1))}", anti=anti))
    incoming = pod("incoming", uid="u-in", namespace=draw(st.sampled_from(NS)), labels=draw(pod_labels()),
                   # affinity refuses most nodes: drawn less often, so the other rules get their turn
                   affinity=draw(st.lists(raw_terms(), max_size=2)) if draw(st.integers(0, 2)) == 0 else [],
                   anti=draw(st.lists(raw_terms(), max_size=2)))
    return incoming, bound, node_list


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_property_reject_matches_brute_force(cluster: tuple[pods.Pod, list[pods.Pod], list[nodes.Node]]) -> None:
    """For any small cluster, every node's verdict is what a per-node scan over all pods says."""
    incoming, bound, node_list = cluster
    got = verdicts(incoming, bound, node_list)
    want = {n.metadata.name: brute_force(incoming, bound, node_list, n) for n in node_list}
    assert got == want


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_property_node_without_an_affinity_key_is_refused(cluster: tuple[pods.Pod, list[pods.Pod], list[nodes.Node]]) -> None:
    """A node lacking the topology key of any required affinity term is refused, whatever the pods."""
    incoming, bound, node_list = cluster
    keys = {t["topologyKey"] for t in _raw_terms(incoming, anti=False)}
    got = verdicts(incoming, bound, node_list)
    for n in node_list:
        if keys - n.metadata.labels.keys():
            assert got[n.metadata.name] == AFFINITY


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(), st.data())
def test_property_with_pods_equals_a_check_over_the_cluster_with_them(
        cluster: tuple[pods.Pod, list[pods.Pod], list[nodes.Node]], data: st.DataObject) -> None:
    """A gang member's check grown by the members placed before it (`with_pods`) says what a check prepared
    over the cluster holding them says, on every node: the gang search may count members incrementally."""
    incoming, bound, node_list = cluster
    split = data.draw(st.integers(0, len(bound)))
    before, members = bound[:split], bound[split:]
    placed = placedpods.PlacedPods(node_list, before, NAMESPACES)
    check = podaffinity.prepare(incoming, placed, always=True)
    assert check is not None
    by_name = {n.metadata.name: n for n in node_list}
    grown = check.with_pods([(p, by_name[p.spec.node_name or ""]) for p in members])
    want = verdicts(incoming, bound, node_list)
    assert {n.metadata.name: grown.reject(n) for n in node_list} == want
