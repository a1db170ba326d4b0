"""kube-scheduler's scores of what a pod prefers: dralloc's tie-break among nodes.

A preference never keeps a pod off a node; kube-scheduler's score plugins rank the nodes that
pass its filters. dralloc ranks nodes by its AllocationPolicy first (`placement.Placer`) and uses
these scores where the policy has no order of its own. Four plugins of kube-scheduler 1.37's
default profile score what a pod prefers; each is computed here as upstream computes it, then
normalized to 0..100 as its NormalizeScore does:

  - TaintToleration (`pkg/scheduler/framework/plugins/tainttoleration/taint_toleration.go`):
    the node's PreferNoSchedule taints that none of the pod's tolerations with effect
    PreferNoSchedule or no effect tolerates; normalized reversed (fewer is better) by
    `helper.DefaultNormalizeScore`: 100 - 100 * count / most, all 100 when no node has one.
  - NodeAffinity (`nodeaffinity/node_affinity.go`, with component-helpers'
    `PreferredSchedulingTerms.Score`): the sum of the weights of the pod's
    `preferredDuringSchedulingIgnoredDuringExecution` terms the node matches (terms of weight 0
    or without requirements skipped); normalized by `DefaultNormalizeScore`: 100 * sum / most.
  - PodTopologySpread (`podtopologyspread/scoring.go`, `common.go`): the pod's ScheduleAnyway
    constraints. A node lacking one of their topology keys is ignored (normalized to 0). Each
    domain's matching pods are counted over every node that has all the keys and passes the
    constraint's node inclusion policies (as the filter counts them, `topologyspread`); for
    `kubernetes.io/hostname` the node's own pods are counted instead. A node scores, per
    constraint, count * log(domains + 2) + (maxSkew - 1), domains being the constraint's topology
    values (for hostname: the nodes not ignored), summed and rounded half away from zero;
    normalized: 100 * (most + least - score) / most (all 100 when most is 0), fewer is better.
  - InterPodAffinity (`interpodaffinity/scoring.go`): per topology domain (topologyKey, a node's
    value), the weights of the pod's preferred affinity terms (+) and anti-affinity terms (-)
    whose pods are in it, plus, for every existing pod there, the terms of that pod the incoming
    pod matches: its required affinity terms (weight 1, the default `hardPodAffinityWeight`), its
    preferred affinity (+weight) and anti-affinity (-weight) terms, read relative to the existing
    pod (`podaffinity.resolve`; its namespaceSelector against the incoming pod's namespace
    labels). A node scores the sum over the domains it is in; normalized
    100 * (score - least) / (most - least), truncated, all 0 when they are equal.

The weighted sum is the default profile's (`pkg/scheduler/apis/config/v1/default_plugins.go`):
TaintToleration 3, NodeAffinity 2, PodTopologySpread 2, InterPodAffinity 2; a plugin upstream
skips adds nothing. Terms are resolved as the filters resolve them (`podaffinity`,
`topologyspread`): namespaces, namespaceSelector, matchLabelKeys and mismatchLabelKeys alike.
The pod being placed is never among the pods counted, as it is not in upstream's snapshot.

Where this differs from upstream, deliberately:
  - The scores are normalized over every node given (the Placer's: every node of the view).
    Upstream normalizes over the nodes that passed every filter, the DRA allocator included (and,
    on large clusters, a sample of them: percentageOfNodesToScore); dralloc knows which nodes
    fit only by trying them one by one. Each plugin orders the nodes the same either way (its
    normalizing is monotone); a sum of several plugins can weigh them differently, and spread's
    domains and their log weight come from every node rather than the feasible ones.
  - The other score plugins of the default profile (NodeResourcesFit, NodeResourcesBalancedAllocation,
    ImageLocality) are not computed: the AllocationPolicy stands in for them.
  - The system default spread constraints (for a pod without constraints of its own, spreading
    it with the pods of the Services, ReplicaSets, StatefulSets and ReplicationControllers that
    select it) are not applied: dralloc does not read those objects.

`prepare` returns None when no node is preferred over another (no plugin applies, or their sum is
the same on every node): the Placer then keeps its order exactly as without preferences. A
selector the API server would refuse (an unknown operator in a preferred node affinity term, a
preferred pod affinity term or a ScheduleAnyway constraint) is an input error (ValueError), as
upstream's PreScore fails on it.

Pure: imports the model, `dralloc.allocation.nodeaffinity` and `interruption` (the scans over every
placed pod stop with the decision), and the scheduling modules `nodefit`
(tolerations), `placedpods`, `podaffinity` and `topologyspread` (their term resolution).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence

from dralloc.allocation import interruption, nodeaffinity
from dralloc.model import nodes, pods
from dralloc.scheduling import nodefit, placedpods, podaffinity, topologyspread

MAX_NODE_SCORE = 100  # upstream's framework.MaxNodeScore

TAINT_TOLERATION = "TaintToleration"
NODE_AFFINITY = "NodeAffinity"
POD_TOPOLOGY_SPREAD = "PodTopologySpread"
INTER_POD_AFFINITY = "InterPodAffinity"
# The default profile's score weights (default_plugins.go), in its plugin order.
WEIGHTS: Mapping[str, int] = {TAINT_TOLERATION: 3, NODE_AFFINITY: 2, POD_TOPOLOGY_SPREAD: 2, INTER_POD_AFFINITY: 2}
# InterPodAffinityArgs.hardPodAffinityWeight's default: what an existing pod's required affinity
# term matching the incoming pod adds to its domain.
HARD_POD_AFFINITY_WEIGHT = 1

PREFER_NO_SCHEDULE = "PreferNoSchedule"
HOSTNAME = "kubernetes.io/hostname"  # upstream counts this key's domains per node, in Score

_NO_LABELS: Mapping[str, str] = {}

Domain = tuple[str, str]  # (topologyKey, a node's value of it)


class NodeSet:
    """The nodes to score, in the caller's order, with what every pod's scores read of them found once
    (a Placer keeps one while it lives: its nodes do not change)."""

    def __init__(self, node_list: Sequence[nodes.Node]) -> None:
        self.nodes = tuple(node_list)
        # Only these nodes can score below the others for TaintToleration; most clusters have none.
        self.tainted = tuple(i for i, node in enumerate(self.nodes)
                             if any(t.effect == PREFER_NO_SCHEDULE for t in node.spec.taints))


@dataclasses.dataclass(frozen=True)
class PluginScores:
    """One plugin's scores per node (the NodeSet's order): as its Score returns them, and normalized."""

    plugin: str
    raw: tuple[int, ...]
    normalized: tuple[int, ...]


@dataclasses.dataclass(frozen=True)
class Scores:
    """A pod's preference per node (the NodeSet's order): the weighted sum, higher is better."""

    plugins: tuple[PluginScores, ...]  # the plugins that tell nodes apart
    total: tuple[int, ...]

    def of(self, plugin: str) -> PluginScores | None:
        return next((p for p in self.plugins if p.plugin == plugin), None)


# ---- normalizing ---------------------------------------------------------------------------


def default_normalize(raw: Sequence[int], *, reverse: bool = False) -> tuple[int, ...]:
    """Upstream's helper.DefaultNormalizeScore on non-negative scores: 0..most to 0..100, integer
    division; reversed, 100 minus that. When every score is 0: unchanged, or all 100 reversed."""
    most = max(raw, default=0)
    if most <= 0:
        return tuple(MAX_NODE_SCORE for _ in raw) if reverse else tuple(raw)
    scaled = (MAX_NODE_SCORE * score // most for score in raw)  # non-negative: Go's division
    return tuple(MAX_NODE_SCORE - s for s in scaled) if reverse else tuple(scaled)


def min_max_normalize(raw: Sequence[int]) -> tuple[int, ...]:
    """InterPodAffinity's NormalizeScore: least..most to 0..100 in float64, truncated; all 0 when equal."""
    if not raw:
        return ()
    least, most = min(raw), max(raw)
    spread = most - least
    if spread <= 0:
        return tuple(0 for _ in raw)
    # The same float64 operations as upstream, in its order: int() truncates as Go's int64() does.
    return tuple(int(float(MAX_NODE_SCORE) * (float(score - least) / float(spread))) for score in raw)


def spread_normalize(raw: Sequence[int], ignored: Sequence[bool]) -> tuple[int, ...]:
    """PodTopologySpread's NormalizeScore: ignored nodes 0; the others 100 * (most + least - s) / most
    (fewer matching pods is better), all 100 when the most is 0."""
    kept = [score for score, skip in zip(raw, ignored, strict=True) if not skip]
    least, most = min(kept, default=0), max([0, *kept])
    found = []
    for score, skip in zip(raw, ignored, strict=True):
        if skip:
            found.append(0)
        elif most == 0:
            found.append(MAX_NODE_SCORE)
        else:
            found.append(MAX_NODE_SCORE * (most + least - score) // most)  # score >= least: non-negative
    return tuple(found)


def round_half_away(value: float) -> int:
    """Go's math.Round for a non-negative value (Python's round() rounds half to even)."""
    whole = math.floor(value)
    return whole + 1 if value - whole >= 0.5 else whole


# ---- the plugins ---------------------------------------------------------------------------


def taint_toleration(pod: pods.Pod, node_set: NodeSet) -> PluginScores | None:
    """TaintToleration's scores; None when no node has a PreferNoSchedule taint (every node 100)."""
    if not node_set.tainted:
        return None
    tolerations = [t for t in pod.spec.tolerations if not t.effect or t.effect == PREFER_NO_SCHEDULE]
    raw = [0] * len(node_set.nodes)
    for index in node_set.tainted:
        raw[index] = sum(1 for taint in node_set.nodes[index].spec.taints
                         if taint.effect == PREFER_NO_SCHEDULE
                         and not any(nodefit.tolerates(t, taint) for t in tolerations))
    return PluginScores(TAINT_TOLERATION, tuple(raw), default_normalize(raw, reverse=True))


def _describe(pod: pods.Pod) -> str:
    return f"pod {pod.namespace or 'default'}/{pod.metadata.name}"


def node_affinity(pod: pods.Pod, node_set: NodeSet) -> PluginScores | None:
    """NodeAffinity's scores; None when the pod has no preferred node affinity term that can match.
    Raises ValueError on a term the API server would refuse (upstream's PreScore fails on it)."""
    affinity = pod.spec.affinity.node_affinity if pod.spec.affinity is not None else None
    preferred = affinity.preferred_during_scheduling_ignored_during_execution if affinity is not None else ()
    # Upstream's NewPreferredSchedulingTerms leaves out terms of weight 0 and empty terms unparsed.
    terms = [(index, term) for index, term in enumerate(preferred)
             if term.weight != 0 and (term.preference.match_expressions or term.preference.match_fields)]
    if not terms:
        return None
    raw = []
    for node in node_set.nodes:
        total = 0
        for index, term in terms:
            try:
                matched = nodeaffinity.term_matches(term.preference, node.metadata.name, node.metadata.labels)
            except ValueError as exc:
                raise ValueError(f"{_describe(pod)}: nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution"
                                 f"[{index}]: {exc}") from exc
            if matched:
                total += term.weight
        raw.append(total)
    return PluginScores(NODE_AFFINITY, tuple(raw), default_normalize(raw))


def _spread_candidates(placed: placedpods.PlacedPods, node_name: str, pod: pods.Pod,
                       is_self: podaffinity.SamePod) -> list[Mapping[str, str]]:
    """The labels of the pods on the node a spread constraint may count: the incoming pod's namespace,
    not terminating, not the incoming pod (upstream's countPodsMatchSelector)."""
    namespace = pod.namespace
    return [other.metadata.labels for other in placed.on(node_name)
            if other.namespace == namespace and other.metadata.deletion_timestamp is None and not is_self(other)]


def topology_spread(pod: pods.Pod, placed: placedpods.PlacedPods, node_set: NodeSet) -> PluginScores | None:
    """PodTopologySpread's scores for the pod's ScheduleAnyway constraints; None without one. Raises
    ValueError on a constraint the API server would refuse."""
    soft = topologyspread.constraints(pod, topologyspread.SCHEDULE_ANYWAY)
    if not soft:
        return None
    keys = [c.topology_key for c in soft]
    node_list = node_set.nodes
    ignored = [not all(key in node.metadata.labels for key in keys) for node in node_list]
    # The constraint's domains among the nodes scored (upstream's initPreScoreState); hostname's
    # are counted per node below, and weighed by the number of nodes scored.
    counts: list[dict[str, int]] = [{} for _ in soft]
    for node, skip in zip(node_list, ignored, strict=True):
        if not skip:
            for constraint, found in zip(soft, counts, strict=True):
                if constraint.topology_key != HOSTNAME:
                    found.setdefault(node.metadata.labels[constraint.topology_key], 0)
    scored = ignored.count(False)
    weights = [math.log((scored if c.topology_key == HOSTNAME else len(found)) + 2)
               for c, found in zip(soft, counts, strict=True)]
    is_self = podaffinity.SamePod(pod.metadata.uid, pod.namespace, pod.metadata.name)
    any_affinity = any(c.honor_affinity for c in soft)
    any_taints = any(c.honor_taints for c in soft)
    # The matching pods per domain, over every node of the cluster with all the keys (PreScore).
    for node_name, node in interruption.every(placed.nodes.items()):
        node_labels = node.metadata.labels
        if not all(key in node_labels for key in keys):
            continue
        affinity_ok = topologyspread.matches_node_affinity(pod, node) if any_affinity else True
        taints_ok = (nodefit.untolerated_taint(node, pod.spec.tolerations) is None) if any_taints else True
        candidates: list[Mapping[str, str]] | None = None
        for constraint, found in zip(soft, counts, strict=True):
            if constraint.topology_key == HOSTNAME:
                continue
            if (constraint.honor_affinity and not affinity_ok) or (constraint.honor_taints and not taints_ok):
                continue
            value = node_labels[constraint.topology_key]
            if value not in found:
                continue  # a domain no node scored is in
            if candidates is None:
                candidates = _spread_candidates(placed, node_name, pod, is_self)
            found[value] += topologyspread.count_matching(constraint.selector, candidates)
    raw = []
    for node, skip in zip(node_list, ignored, strict=True):
        if skip:
            raw.append(0)
            continue
        score = 0.0
        own: list[Mapping[str, str]] | None = None
        for constraint, found, weight in zip(soft, counts, weights, strict=True):
            if constraint.topology_key == HOSTNAME:
                if own is None:
                    own = _spread_candidates(placed, node.metadata.name, pod, is_self)
                count = topologyspread.count_matching(constraint.selector, own)
            else:
                count = found[node.metadata.labels[constraint.topology_key]]
            score += count * weight + (constraint.max_skew - 1)  # upstream's scoreForCount, in float64
        raw.append(round_half_away(score))
    return PluginScores(POD_TOPOLOGY_SPREAD, tuple(raw), spread_normalize(raw, ignored))


def _weighted(owner: pods.Pod, group: pods.PodAffinity | None, sign: int,
              namespace_labels: Mapping[str, Mapping[str, str]]) -> list[tuple[int, podaffinity.Term]]:
    """The incoming pod's preferred terms of one group, signed weights, namespaceSelector unrolled."""
    if group is None:
        return []
    return [(sign * weighted.weight, podaffinity.unrolled(podaffinity.resolve(owner, weighted.pod_affinity_term),
                                                          namespace_labels))
            for weighted in group.preferred_during_scheduling_ignored_during_execution]


def _existing_groups(other: pods.Pod) -> Iterable[tuple[tuple[pods.PodAffinityTerm, ...], tuple[int, ...]]]:
    """An existing pod's terms that score for the incoming pod, per group, with signed weights."""
    affinity = other.spec.affinity
    if affinity is None:
        return
    together, apart = affinity.pod_affinity, affinity.pod_anti_affinity
    if together is not None:
        required = together.required_during_scheduling_ignored_during_execution
        if required:
            yield required, (HARD_POD_AFFINITY_WEIGHT,) * len(required)
        preferred = together.preferred_during_scheduling_ignored_during_execution
        if preferred:
            yield tuple(w.pod_affinity_term for w in preferred), tuple(w.weight for w in preferred)
    if apart is not None:
        preferred = apart.preferred_during_scheduling_ignored_during_execution
        if preferred:
            yield tuple(w.pod_affinity_term for w in preferred), tuple(-w.weight for w in preferred)


def _add_existing(other: pods.Pod, pod: pods.Pod, namespace_labels: Mapping[str, str],
                  node_labels: Mapping[str, str], domains: dict[Domain, int]) -> None:
    """The existing pod's terms the incoming pod matches, each adding its weight to its domain."""
    pod_labels = pod.metadata.labels
    for terms, weights in _existing_groups(other):
        # Cheap necessary conditions first; the whole term only for the few that pass them.
        candidates = [(term, weight) for term, weight in zip(terms, weights, strict=True)
                      if term.topology_key in node_labels and podaffinity.may_match(term.label_selector, pod_labels)]
        # Upstream's node cache keeps none of a group's terms when one does not parse.
        if not candidates or not podaffinity.parses(terms):
            continue
        for term, weight in candidates:
            if podaffinity.resolve(other, term).matches(pod, namespace_labels):
                domain = (term.topology_key, node_labels[term.topology_key])
                domains[domain] = domains.get(domain, 0) + weight


def inter_pod_affinity(pod: pods.Pod, placed: placedpods.PlacedPods, node_set: NodeSet) -> PluginScores | None:
    """InterPodAffinity's scores; None when no domain gets a weight (upstream's PreScore skips). Raises
    ValueError on a term of the pod the API server would refuse."""
    affinity = pod.spec.affinity
    own: list[tuple[int, podaffinity.Term]] = []
    if affinity is not None:
        podaffinity.validate(pod)  # before the terms are resolved: the error names the term
        own = (_weighted(pod, affinity.pod_affinity, 1, placed.namespace_labels)
               + _weighted(pod, affinity.pod_anti_affinity, -1, placed.namespace_labels))
    if not own and not placed.preferring:
        return None
    is_self = podaffinity.SamePod(pod.metadata.uid, pod.namespace, pod.metadata.name)
    # The incoming pod's namespace labels, for existing pods' namespaceSelectors (none when unknown).
    namespace_labels = placed.namespace_labels.get(pod.namespace, _NO_LABELS)
    domains: dict[Domain, int] = {}
    if own:
        # Every pod counts for the incoming pod's terms; those with terms of their own also score.
        scoring = {id(other) for other, _ in placed.preferring}
        for node_name, on_node in interruption.every(placed.by_node.items()):
            node = placed.nodes.get(node_name)
            if node is None or not node.metadata.labels or not on_node:
                continue
            node_labels = node.metadata.labels
            for other in on_node:
                if is_self(other):
                    continue
                for weight, term in own:
                    key = term.topology_key
                    # The incoming pod's namespaceSelector is unrolled: no namespace labels needed.
                    if key in node_labels and term.matches(other, _NO_LABELS):
                        domain = (key, node_labels[key])
                        domains[domain] = domains.get(domain, 0) + weight
                if id(other) in scoring:
                    _add_existing(other, pod, namespace_labels, node_labels, domains)
    else:
        # Only the existing pods' terms can score (upstream's HavePodsWithAffinityList).
        for other, node_name in placed.preferring:
            node = placed.nodes.get(node_name)
            if node is None or not node.metadata.labels or is_self(other):
                continue
            _add_existing(other, pod, namespace_labels, node.metadata.labels, domains)
    if not domains:
        return None
    keys = tuple(dict.fromkeys(key for key, _ in domains))
    raw = []
    for node in node_set.nodes:
        node_labels = node.metadata.labels
        raw.append(sum(domains.get((key, node_labels[key]), 0) for key in keys if key in node_labels))
    return PluginScores(INTER_POD_AFFINITY, tuple(raw), min_max_normalize(raw))


# ---- together --------------------------------------------------------------------------------


def evaluate(pod: pods.Pod, placed: placedpods.PlacedPods,
             node_list: NodeSet | Sequence[nodes.Node]) -> dict[str, PluginScores]:
    """Every plugin upstream would score the pod with (that it does not skip), by name, in the default
    profile's order. Raises ValueError on a preference the API server would refuse."""
    node_set = node_list if isinstance(node_list, NodeSet) else NodeSet(node_list)
    found = (
        taint_toleration(pod, node_set),
        node_affinity(pod, node_set),
        topology_spread(pod, placed, node_set),
        inter_pod_affinity(pod, placed, node_set),
    )
    return {scores.plugin: scores for scores in found if scores is not None}


def prepare(pod: pods.Pod, placed: placedpods.PlacedPods,
            node_list: NodeSet | Sequence[nodes.Node]) -> Scores | None:
    """The pod's preference per node, or None when it prefers no node over another (the fast path:
    no preferred term, no ScheduleAnyway constraint, no existing pod whose terms score, no
    PreferNoSchedule taint the pod does not tolerate; or scores that are the same everywhere).
    Computed from the pods placed now: a commit changes it. Raises ValueError as `evaluate`."""
    node_set = node_list if isinstance(node_list, NodeSet) else NodeSet(node_list)
    # A plugin that scores every node alike adds the same to each: it cannot change the order.
    plugins = tuple(p for p in evaluate(pod, placed, node_set).values() if len(set(p.normalized)) > 1)
    if not plugins:
        return None
    total = tuple(sum(WEIGHTS[p.plugin] * p.normalized[i] for p in plugins) for i in range(len(node_set.nodes)))
    if len(set(total)) <= 1:
        return None
    return Scores(plugins, total)
