"""kube-scheduler's PodTopologySpread filter: the pod's DoNotSchedule spread constraints.

Upstream: `pkg/scheduler/framework/plugins/podtopologyspread/` of kube-scheduler 1.37
(`filtering.go`: PreFilter's `calPreFilterState` and `Filter`; `common.go`:
`filterTopologySpreadConstraints`, `nodeLabelsMatchSpreadConstraints`,
`matchNodeInclusionPolicies`, `countPodsMatchSelector`; `plugin.go`: the reasons and the
system default constraints). Only a constraint with `whenUnsatisfiable: DoNotSchedule`
filters; ScheduleAnyway ones only score (`preferences`, which reads them through
`constraints`). A pod without DoNotSchedule constraints is never
refused (upstream's PreFilter returns Skip), so `prepare` returns None for it.

Cluster-level default constraints never filter under the default profile: they apply only to
pods without constraints of their own, the default profile's PodTopologySpreadArgs default to
`defaultingType: System` (`pkg/scheduler/apis/config/v1/defaults.go`), and the system defaults
(`plugin.go`: hostname maxSkew 3, zone maxSkew 5) are both ScheduleAnyway; the filter builds
its default constraints for DoNotSchedule only, and so gets none.

`prepare` is upstream's PreFilter, once per pod: over every node that carries all the
constraints' topology keys, for each constraint whose node inclusion policies the node passes
(nodeAffinityPolicy, Honor by default: the pod's nodeSelector and required node affinity;
nodeTaintsPolicy, Ignore by default; Honor: no untolerated NoSchedule/NoExecute taint), the
node's topology value is an eligible domain of that constraint and the node's matching pods
count towards it. A matching pod: in the incoming pod's namespace, not terminating
(deletionTimestamp set), matched by the constraint's labelSelector with the pod's
`matchLabelKeys` merged in; an empty selector counts no pod (upstream's
`countPodsMatchSelector` returns 0 for it), though the incoming pod still matches it itself.
The incoming pod is never counted (skipped by uid), as it is not in upstream's snapshot.

`Check.reject` is upstream's Filter, per node, constraints in the pod's order: a node without
the constraint's topology key is refused ("missing required label"); otherwise the node is
refused when matchNum(node's domain) + selfMatch - minMatchNum > maxSkew, where selfMatch is 1
when the pod matches the constraint's own (merged) selector, and minMatchNum is the smallest
count over the constraint's eligible domains, or 0 while there are fewer eligible domains than
minDomains (1 when absent). A node outside the eligible nodes (a policy excludes it) is still
judged by its domain's count (0 for a domain no eligible node is in).

The node policies read only `spec.taints` (a cordoned node's unschedulable taint counts only
once the node lifecycle controller has added it). Pods are `PlacedPods`'s: bound, or placed by
the current pass.

Pure: imports the model, `dralloc.allocation.nodeaffinity` and `interruption` (the count over every
node stops with the decision), and the scheduling modules `labels`, `nodefit` (taints vs.
tolerations) and `placedpods`.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping, Sequence

from dralloc.allocation import interruption, nodeaffinity
from dralloc.model import nodes, pods
from dralloc.scheduling import labels, nodefit, placedpods

REASON = "node(s) didn't match pod topology spread constraints"
REASON_MISSING_LABEL = REASON + " (missing required label)"

DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
HONOR = "Honor"


@dataclasses.dataclass(frozen=True)
class Constraint:
    """A constraint as the filter (DoNotSchedule) or the score (ScheduleAnyway) applies it (upstream's
    internal topologySpreadConstraint)."""

    topology_key: str
    max_skew: int
    selector: pods.LabelSelector | None  # matchLabelKeys merged in; None matches nothing
    min_domains: int
    honor_affinity: bool  # nodeAffinityPolicy Honor (the default)
    honor_taints: bool  # nodeTaintsPolicy Honor (Ignore is the default)


def _describe(pod: pods.Pod, index: int, constraint: pods.TopologySpreadConstraint) -> str:
    return (f"pod {pod.namespace or 'default'}/{pod.metadata.name}: topologySpreadConstraints[{index}] "
            f"(topologyKey {constraint.topology_key!r})")


def hard_constraints(pod: pods.Pod) -> list[Constraint]:
    """The pod's DoNotSchedule constraints, selectors merged and defaults applied. Raises ValueError
    on one the API server would have refused (an unknown selector operator, maxSkew below 1)."""
    return constraints(pod, DO_NOT_SCHEDULE)


def constraints(pod: pods.Pod, when: str) -> list[Constraint]:
    """The pod's constraints whose whenUnsatisfiable is `when` (DoNotSchedule: the filter's; ScheduleAnyway:
    the score's, `preferences`), as upstream's filterTopologySpreadConstraints builds either. Raises
    ValueError as `hard_constraints` does."""
    found = []
    pod_labels = pod.metadata.labels
    for index, raw in enumerate(pod.spec.topology_spread_constraints):
        if raw.when_unsatisfiable != when:
            continue
        if raw.max_skew is None or raw.max_skew < 1:
            raise ValueError(f"{_describe(pod, index, raw)}: maxSkew must be at least 1, not {raw.max_skew}")
        selector = labels.with_label_keys(raw.label_selector, pod_labels, match=raw.match_label_keys)
        # Upstream refuses an invalid selector in PreFilter, before counting: check every
        # requirement now rather than when (if ever) a pod's labels reach it.
        if selector is not None:
            for requirement in selector.match_expressions:
                try:
                    labels.requirement_matches(requirement, pod_labels)
                except ValueError as exc:
                    raise ValueError(f"{_describe(pod, index, raw)}: invalid labelSelector: {exc}") from exc
        found.append(Constraint(
            topology_key=raw.topology_key,
            max_skew=raw.max_skew,
            selector=selector,
            min_domains=1 if raw.min_domains is None else raw.min_domains,
            honor_affinity=(raw.node_affinity_policy or HONOR) == HONOR,
            honor_taints=raw.node_taints_policy == HONOR,
        ))
    return found


def matches_node_affinity(pod: pods.Pod, node: nodes.Node) -> bool:
    """The pod's nodeSelector and required node affinity, as upstream's RequiredNodeAffinity.Match
    with its parse errors ignored (a term that cannot be evaluated selects nothing)."""
    node_labels = node.metadata.labels
    for key, value in pod.spec.node_selector.items():
        if node_labels.get(key) != value:
            return False
    affinity = pod.spec.affinity.node_affinity if pod.spec.affinity else None
    required = affinity.required_during_scheduling_ignored_during_execution if affinity else None
    # No terms: not a constraint, as nodefit reads it (the API server requires at least one).
    if required is None or not required.node_selector_terms:
        return True
    for term in required.node_selector_terms:
        try:
            if nodeaffinity.term_matches(term, node.metadata.name, node_labels):
                return True
        except ValueError:
            continue
    return False


def count_matching(selector: pods.LabelSelector | None, candidates: Sequence[Mapping[str, str]]) -> int:
    # Upstream's countPodsMatchSelector counts nothing for an empty selector (labels.Everything()).
    if selector is None or (not selector.match_labels and not selector.match_expressions):
        return 0
    return sum(1 for candidate in candidates if labels.matches(selector, candidate))


class Check:
    """The pod's DoNotSchedule constraints with the matching pods counted per domain (PreFilter),
    asked per node (Filter): a few dict lookups."""

    def __init__(self, pod: pods.Pod, constraints: Sequence[Constraint], placed: placedpods.PlacedPods) -> None:
        self.pod = pod
        self.constraints = tuple(constraints)
        # counts[i]: topology value -> matching pods, over constraint i's eligible domains.
        self.counts: list[dict[str, int]] = [{} for _ in self.constraints]
        self._count(placed)
        self.limits: list[int | None] = self._limits()

    def _limits(self) -> list[int | None]:
        # A node passes constraint i while its domain's count is at most limits[i]
        # (maxSkew + minMatchNum - selfMatch); None: no eligible domain and minDomains < 1, where
        # upstream's minimum stays at MaxInt32 and no node fails the skew.
        limits: list[int | None] = []
        pod_labels = self.pod.metadata.labels
        for constraint, counts in zip(self.constraints, self.counts, strict=True):
            if len(counts) < constraint.min_domains:
                minimum: int | None = 0
            else:
                minimum = min(counts.values()) if counts else None
            self_match = 1 if labels.matches(constraint.selector, pod_labels) else 0
            limits.append(None if minimum is None else constraint.max_skew + minimum - self_match)
        return limits

    def _eligible(self, node: nodes.Node) -> list[bool] | None:
        """Per constraint, whether the node's domain counts for it (None: the node lacks a topology key of
        some constraint, and counts for none: upstream's PreFilter skips it)."""
        node_labels = node.metadata.labels
        if not all(c.topology_key in node_labels for c in self.constraints):
            return None
        pod = self.pod
        affinity_ok = matches_node_affinity(pod, node) if any(c.honor_affinity for c in self.constraints) else True
        taints_ok = ((nodefit.untolerated_taint(node, pod.spec.tolerations) is None)
                     if any(c.honor_taints for c in self.constraints) else True)
        return [not ((c.honor_affinity and not affinity_ok) or (c.honor_taints and not taints_ok))
                for c in self.constraints]

    def _counts(self, other: pods.Pod) -> bool:
        """Whether `other` may count: same namespace, not terminating, not the incoming pod."""
        pod = self.pod
        if other.namespace != pod.namespace or other.metadata.deletion_timestamp is not None:
            return False
        uid = pod.metadata.uid
        return not (other.metadata.uid == uid if uid is not None else other.metadata.name == pod.metadata.name)

    def _count(self, placed: placedpods.PlacedPods) -> None:
        for node_name, node in interruption.every(placed.nodes.items()):
            eligible = self._eligible(node)
            if eligible is None:
                continue
            candidates = [other.metadata.labels for other in placed.on(node_name) if self._counts(other)]
            for constraint, counts, ok in zip(self.constraints, self.counts, eligible, strict=True):
                if ok:
                    value = node.metadata.labels[constraint.topology_key]
                    counts[value] = counts.get(value, 0) + count_matching(constraint.selector, candidates)

    def with_pods(self, extra: Sequence[tuple[pods.Pod, nodes.Node]]) -> Check:
        """The check as if `extra` (pod, node) were placed too: a gang's members decided before this one,
        which kube-scheduler, placing them one after another, would count. A few lookups per pod."""
        grown = copy.copy(self)
        grown.counts = [dict(counts) for counts in self.counts]
        for other, node in extra:
            eligible = self._eligible(node) if self._counts(other) else None
            for constraint, counts, ok in zip(self.constraints, grown.counts, eligible or (), strict=False):
                if ok and count_matching(constraint.selector, (other.metadata.labels,)):
                    value = node.metadata.labels[constraint.topology_key]
                    counts[value] = counts.get(value, 0) + 1
        grown.limits = grown._limits()
        return grown

    def reject(self, node: nodes.Node) -> str | None:
        """Upstream's reason when the node breaks a constraint, or None when the node passes."""
        node_labels = node.metadata.labels
        for constraint, counts, limit in zip(self.constraints, self.counts, self.limits, strict=True):
            value = node_labels.get(constraint.topology_key)
            if value is None:
                return REASON_MISSING_LABEL
            if limit is not None and counts.get(value, 0) > limit:
                return REASON
        return None


def prepare(pod: pods.Pod, placed: placedpods.PlacedPods) -> Check | None:
    """None when the pod has no DoNotSchedule constraint (the fast path)."""
    constraints = hard_constraints(pod)
    return Check(pod, constraints, placed) if constraints else None
