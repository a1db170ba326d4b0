"""kube-scheduler's InterPodAffinity filter: required pod affinity and anti-affinity.

Upstream: `pkg/scheduler/framework/plugins/interpodaffinity/` of kube-scheduler 1.37
(`filtering.go`: PreFilter and Filter; `plugin.go`: `mergeAffinityTermNamespacesIfNotEmpty`,
`GetNamespaceLabelsSnapshot`) and `pkg/scheduler/framework/types.go` (`AffinityTerm.Matches`,
`newAffinityTerm`, `getNamespacesFromPodAffinityTerm`). Only the required terms
(`requiredDuringSchedulingIgnoredDuringExecution`) filter; the preferred ones only score
(`preferences`, which resolves them with `resolve` and `unrolled`).

A term reads the pods of some namespaces: the ones it lists plus, with a `namespaceSelector`,
the ones whose labels that selector matches (an empty selector `{}`: every namespace); with
neither, the namespace of the pod that owns the term. Among those, its `labelSelector` picks
the pods (absent: none; empty: all), with the owner's `matchLabelKeys` (key In the owner's
value) and `mismatchLabelKeys` (key NotIn it) merged in. Upstream's kube-apiserver merges those
into the stored selector when it creates the pod; merging again with the same labels changes
nothing, so a pod read from the API and a pod built by hand are judged alike (only a pod whose
labels changed since its creation differs: judged here by its labels now as well).

The incoming pod's namespaceSelector selects among the namespaces `PlacedPods.namespace_labels`
knows (upstream lists them from its namespace informer); an existing pod's is matched against
the incoming pod's namespace labels, none when that namespace is unknown.

`prepare` is upstream's PreFilter, once per pod; it records topology domains, pairs
(topologyKey, the value a node has for it), over every pod `PlacedPods` holds (bound, or placed
by the current pass), never the incoming pod itself (skipped by uid, by namespace and name
without one):
  - affinity domains: the domains, one per term, of the nodes of pods that match ALL of the
    incoming pod's affinity terms (a pod matching only some of them counts for none);
  - anti-affinity domains: per anti-affinity term, the domains of the nodes of the pods it matches;
  - existing domains: per required anti-affinity term of an existing pod that matches the
    incoming pod (its namespaces read relative to the EXISTING pod, its namespaceSelector
    against the incoming pod's namespace labels), the domain of the existing pod's node.
A node without a term's topology key adds no domain for it.

`Check.reject` is upstream's Filter, per node, in upstream's order (the first broken rule
names the reason):
  1. affinity: the node must have every affinity term's topology key, and each term's domain on
     it must be an affinity domain; except the first pod of a series: while there are no
     affinity domains at all and the incoming pod matches all its own affinity terms, any node
     with every key passes;
  2. anti-affinity: no anti-affinity term's domain on the node is an anti-affinity domain;
  3. existing pods' anti-affinity: no domain of the node is an existing domain.
A pod whose selectors do not parse (an unknown operator, which the API server refuses) is an
input error (ValueError), preferred terms included: upstream's PreFilter fails on any term of
the pod it cannot parse. An existing pod with such a required anti-affinity term counts none of
its terms, as upstream's node cache drops them.

Pure: imports the model, the scheduling modules `labels` and `placedpods`, and
`dralloc.allocation.interruption` (the scan over every placed pod stops with the decision).
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Iterable, Mapping, Sequence

from dralloc.allocation import interruption
from dralloc.model import nodes, pods
from dralloc.scheduling import labels, placedpods

REASON_AFFINITY = "node(s) didn't match pod affinity rules"
REASON_ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
REASON_EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"

Domain = tuple[str, str]  # (topologyKey, a node's value of it)

_NO_LABELS: Mapping[str, str] = {}


@dataclasses.dataclass(frozen=True)
class Term:
    """A required term as the filter applies it (upstream's AffinityTerm)."""

    selector: pods.LabelSelector | None  # the owner's matchLabelKeys/mismatchLabelKeys merged in
    namespaces: frozenset[str]
    namespace_selector: pods.LabelSelector | None  # None: no namespace beyond `namespaces`
    topology_key: str

    def matches(self, pod: pods.Pod, namespace_labels: Mapping[str, str]) -> bool:
        """`namespace_labels`: the labels of the pod's namespace (read only through a namespaceSelector)."""
        if pod.namespace in self.namespaces or labels.matches(self.namespace_selector, namespace_labels):
            return labels.matches(self.selector, pod.metadata.labels)
        return False


def _required(affinity: pods.PodAffinity | None) -> tuple[pods.PodAffinityTerm, ...]:
    return affinity.required_during_scheduling_ignored_during_execution if affinity is not None else ()


def _every_term(pod: pods.Pod) -> Iterable[tuple[str, int, pods.PodAffinityTerm]]:
    """(where, index, term) for each of the pod's terms, required and preferred."""
    affinity = pod.spec.affinity
    if affinity is None:
        return
    for field, group in (("podAffinity", affinity.pod_affinity), ("podAntiAffinity", affinity.pod_anti_affinity)):
        if group is None:
            continue
        for index, term in enumerate(group.required_during_scheduling_ignored_during_execution):
            yield f"{field}.requiredDuringSchedulingIgnoredDuringExecution", index, term
        for index, weighted in enumerate(group.preferred_during_scheduling_ignored_during_execution):
            yield f"{field}.preferredDuringSchedulingIgnoredDuringExecution", index, weighted.pod_affinity_term


def _check_selector(selector: pods.LabelSelector | None) -> None:
    # `labels.matches` stops at the first unmet requirement, so an invalid one may go unnoticed
    # until some pod's labels reach it: check each one up front, as upstream parses them.
    for requirement in selector.match_expressions if selector is not None else ():
        labels.requirement_matches(requirement, _NO_LABELS)


def validate(pod: pods.Pod) -> None:
    """Raise ValueError, naming the pod and the term, when one of its selectors cannot be parsed."""
    for where, index, term in _every_term(pod):
        for name, selector in (("labelSelector", term.label_selector), ("namespaceSelector", term.namespace_selector)):
            try:
                _check_selector(selector)
            except ValueError as exc:
                raise ValueError(f"pod {pod.namespace or 'default'}/{pod.metadata.name}: {where}[{index}] "
                                 f"(topologyKey {term.topology_key!r}): invalid {name}: {exc}") from exc


def _is_empty(selector: pods.LabelSelector) -> bool:
    return not selector.match_labels and not selector.match_expressions


def resolve(owner: pods.Pod, term: pods.PodAffinityTerm) -> Term:
    """The term of `owner` as upstream's newAffinityTerm builds it."""
    own_namespace = not term.namespaces and term.namespace_selector is None
    return Term(
        selector=labels.with_label_keys(term.label_selector, owner.metadata.labels,
                                        match=term.match_label_keys, mismatch=term.mismatch_label_keys),
        namespaces=frozenset((owner.namespace,) if own_namespace else term.namespaces),
        namespace_selector=term.namespace_selector,
        topology_key=term.topology_key,
    )


def unrolled(term: Term, namespace_labels: Mapping[str, Mapping[str, str]]) -> Term:
    """An incoming pod's term with its namespaceSelector replaced by the namespaces it selects
    (upstream's mergeAffinityTermNamespacesIfNotEmpty): only namespaces the view knows count,
    while an empty selector stays as it is and matches every namespace, known or not."""
    selector = term.namespace_selector
    if selector is None or _is_empty(selector):
        return term
    selected = {name for name, found in namespace_labels.items() if labels.matches(selector, found)}
    return dataclasses.replace(term, namespaces=term.namespaces | selected, namespace_selector=None)


def parses(terms: Iterable[pods.PodAffinityTerm]) -> bool:
    """Whether every selector of the terms parses (upstream keeps none of such a group of an existing
    pod's terms when one does not)."""
    try:
        for term in terms:
            _check_selector(term.label_selector)
            _check_selector(term.namespace_selector)
    except ValueError:
        return False
    return True


def may_match(selector: pods.LabelSelector | None, pod_labels: Mapping[str, str]) -> bool:
    """A necessary condition of the term's selector matching: the selector as written matches
    (merging label keys only adds requirements). True when it cannot tell (an invalid selector)."""
    try:
        return labels.matches(selector, pod_labels)
    except ValueError:
        return True


def _matches_all(terms: Sequence[Term], pod: pods.Pod) -> bool:
    # Incoming terms have their namespaceSelector unrolled (or empty): no namespace labels needed.
    return bool(terms) and all(term.matches(pod, _NO_LABELS) for term in terms)


@dataclasses.dataclass(frozen=True)
class SamePod:
    """Whether a pod is the incoming one: same uid, or same namespace and name when it has none
    (a pod being placed again may already be among the placed pods; it never counts)."""

    uid: str | None
    namespace: str
    name: str

    def __call__(self, other: pods.Pod) -> bool:
        if self.uid:
            return other.metadata.uid == self.uid
        return other.metadata.name == self.name and other.namespace == self.namespace


class Check:
    """The topology domains the pod's filter rules read, gathered once; `reject` per node."""

    def __init__(self, pod: pods.Pod, affinity: Sequence[Term], anti: Sequence[Term],
                 placed: placedpods.PlacedPods) -> None:
        self.pod = pod
        self.affinity = tuple(affinity)
        self.anti = tuple(anti)
        self.affinity_keys = tuple(dict.fromkeys(t.topology_key for t in affinity))
        self.anti_keys = tuple(dict.fromkeys(t.topology_key for t in anti))
        self.affinity_domains: set[Domain] = set()
        self.anti_domains: set[Domain] = set()
        self.existing_domains: set[Domain] = set()
        self._is_self = SamePod(pod.metadata.uid, pod.namespace, pod.metadata.name)
        # Upstream reads the incoming pod's namespace labels once; an unknown namespace has none.
        self._namespace_labels = placed.namespace_labels.get(pod.namespace, _NO_LABELS)
        if affinity or anti:
            # by_node rather than all(): the order does not matter here and all() sorts every call.
            for node_name, on_node in interruption.every(placed.by_node.items()):
                node = placed.nodes.get(node_name)
                if node is None or not on_node:
                    continue
                for other in on_node:
                    self._add_incoming(other, node.metadata.labels)
        for other, node_name in placed.anti_affinity:
            node = placed.nodes.get(node_name)
            if node is not None:
                self._add_existing(other, node.metadata.labels)
        self._settle()

    def _settle(self) -> None:
        # Upstream's "first pod in a series that have affinity to themselves" rule.
        self.first_of_series = not self.affinity_domains and _matches_all(self.affinity, self.pod)
        self.existing_keys = frozenset(key for key, _ in self.existing_domains)

    def _add_incoming(self, other: pods.Pod, node_labels: Mapping[str, str]) -> None:
        """The domains `other`, on a node with these labels, adds for the incoming pod's own terms."""
        if self._is_self(other):
            return
        affinity = self.affinity
        if affinity and _matches_all(affinity, other):
            self.affinity_domains.update((t.topology_key, node_labels[t.topology_key])
                                         for t in affinity if t.topology_key in node_labels)
        for term in self.anti:
            key = term.topology_key
            if key in node_labels and term.matches(other, _NO_LABELS):
                self.anti_domains.add((key, node_labels[key]))

    def _add_existing(self, other: pods.Pod, node_labels: Mapping[str, str]) -> None:
        """The domains `other`'s required anti-affinity terms, on a node with these labels, refuse."""
        if self._is_self(other):
            return
        pod_labels = self.pod.metadata.labels
        anti = other.spec.affinity.pod_anti_affinity if other.spec.affinity is not None else None
        raw = _required(anti)
        # Every pod placed reads every existing pod's terms: cheap necessary conditions first,
        # the whole term (namespaces, label keys merged) only for the few that pass them.
        candidates = [t for t in raw if t.topology_key in node_labels and may_match(t.label_selector, pod_labels)]
        # Upstream's node cache ignores a parse error and keeps none of the pod's terms.
        if not candidates or not parses(raw):
            return
        for term in candidates:
            if resolve(other, term).matches(self.pod, self._namespace_labels):
                key = term.topology_key
                self.existing_domains.add((key, node_labels[key]))

    def with_pods(self, extra: Sequence[tuple[pods.Pod, nodes.Node]]) -> Check:
        """The check as if `extra` (pod, node) were placed too: a gang's members decided before this one,
        which kube-scheduler, placing them one after another, would count. A few lookups per pod."""
        grown = copy.copy(self)
        grown.affinity_domains = set(self.affinity_domains)
        grown.anti_domains = set(self.anti_domains)
        grown.existing_domains = set(self.existing_domains)
        for other, node in extra:
            grown._add_incoming(other, node.metadata.labels)
            if placedpods.has_required_anti_affinity(other):
                grown._add_existing(other, node.metadata.labels)
        grown._settle()
        return grown

    @property
    def can_reject(self) -> bool:
        """Whether any node could be refused: affinity terms (a node may lack their keys), or a
        domain that anti-affinity refuses (without one, upstream's Filter passes every node)."""
        return bool(self.affinity_keys or self.anti_domains or self.existing_domains)

    def reject(self, node: nodes.Node) -> str | None:
        """Upstream's reason for the first rule the node breaks, or None when it passes."""
        node_labels = node.metadata.labels
        if self.affinity_keys:
            found = True
            for key in self.affinity_keys:
                if key not in node_labels:
                    return REASON_AFFINITY  # every topology key must be on the node, first pod or not
                if (key, node_labels[key]) not in self.affinity_domains:
                    found = False
            if not found and not self.first_of_series:
                return REASON_AFFINITY
        if self.anti_domains:
            for key in self.anti_keys:
                if key in node_labels and (key, node_labels[key]) in self.anti_domains:
                    return REASON_ANTI_AFFINITY
        if self.existing_domains:
            for key in self.existing_keys:
                if key in node_labels and (key, node_labels[key]) in self.existing_domains:
                    return REASON_EXISTING_ANTI_AFFINITY
        return None


def prepare(pod: pods.Pod, placed: placedpods.PlacedPods, *, always: bool = False) -> Check | None:
    """None when neither the pod's own required terms nor any existing pod's anti-affinity can
    refuse a node (the fast path; `always`: the check even then, for a gang's member that pods placed
    with it may yet refuse, see `Check.with_pods`). Raises ValueError on a selector that cannot be
    parsed."""
    validate(pod)
    affinity = pod.spec.affinity
    own = [unrolled(resolve(pod, t), placed.namespace_labels)
           for t in _required(affinity.pod_affinity if affinity is not None else None)]
    own_anti = [unrolled(resolve(pod, t), placed.namespace_labels)
                for t in _required(affinity.pod_anti_affinity if affinity is not None else None)]
    if not own and not own_anti and not placed.anti_affinity and not always:
        return None
    check = Check(pod, own, own_anti, placed)
    return check if check.can_reject or always else None


def repel(one: pods.Pod, other: pods.Pod, node_labels: Mapping[str, str],
          namespace_labels: Mapping[str, Mapping[str, str]]) -> bool:
    """Whether the two pods may not share a node with these labels: a required anti-affinity term of
    either matches the other, and the node has the term's topology key (on one node the two share every
    domain the node has). For pods placed together, as a gang's members are, where neither is among
    the pods the filter counts yet."""
    for owner, target in ((one, other), (other, one)):
        affinity = owner.spec.affinity
        for raw in _required(affinity.pod_anti_affinity if affinity is not None else None):
            if raw.topology_key not in node_labels:
                continue
            term = resolve(owner, raw)
            if term.matches(target, namespace_labels.get(target.namespace, _NO_LABELS)):
                return True
    return False
