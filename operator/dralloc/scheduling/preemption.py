"""Priority preemption: which lower-priority pods to remove so that a pod fits (issue 29).

kube-scheduler's DefaultPreemption (1.37: pkg/scheduler/framework/plugins/defaultpreemption and
framework/preemption), for one pod, with devices counted exactly. Upstream cannot count devices:
the DynamicResources plugin has no PreFilterExtensions, so removing a victim never frees its
claims' devices there. Here a victim's claims free their devices when every pod that holds them
(their `reservedFor`) is removed, and the allocator itself decides the fit against the node's
allocated state with those claims taken out: preemption never removes pods for devices it
would not free.

The steps, each as upstream takes it:

- *Who may be a victim* (`potential_victims`): a pod on the node of strictly lower priority than
  the preemptor, not already terminating (it frees nothing new), whichever scheduler placed it.
  A victim is a unit (`Victim`): one pod, or every pod of a PodGroup disrupted as one
  (`disruptionMode: all`). A pod of a PodGroup has its PodGroup's priority here (`Groups`), as
  upstream's GetPodPriority gives it with GenericWorkload on (0 when the PodGroup has none).
- *Per node* (`select_on_node`, upstream's SelectVictimsOnNode): remove every potential victim;
  if the pod still does not fit, the node is no candidate. Else reprieve, most important first
  (`more_important`: higher priority, then a PodGroup's pods before a lone pod, then the larger
  unit, then the longer running), first the victims whose removal
  would break a PodDisruptionBudget, then the others: add the victim back, and keep it removed
  only if the pod no longer fits. What stays removed are the node's victims, with the number of
  PDB violations among them.
- *Across nodes* (`pick_one`, upstream's pickOneNodeForPreemption): the fewest PDB violations,
  then the lowest highest victim priority, then the smallest sum of priorities, then the fewest
  victims, then the latest start of the highest-priority victims; then the first candidate in
  the order given (node name order here; upstream's is its sampling order).

Differences, deliberate: the nodes whose own constraints admit the pod are examined in name order
until max(10 %, 100) candidates are found, one of them breaking no budget (upstream: the same count
from a random offset), so the choice does not depend on chance;
a pod that has not started counts as the latest started (upstream uses the current time).

*Gangs* (`find_for_gang`, upstream's workload-aware preemption of a PodGroup, KEP-5710): the victims
are the units of lower priority than the PodGroup on every node some member may use, all removed at
once; if the whole gang then fits, they are reprieved most important first (PDB-violating first), as
upstream does. Where upstream keeps each member on the node its first search chose while it reprieves,
here each trial searches the gang's placement again (members may move), so a victim is spared whenever
any placement of the gang allows it; and the devices a victim frees count.

Pure: no I/O, no clock. The fit itself is the caller's (`Fits`): `NodeTrial` answers it for a
Placer's node, with the victims' requests, neighbours and devices taken out.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence

from dralloc import allocation
from dralloc.allocation import interruption, outcomes
from dralloc.allocation.snapshots import Snapshot
from dralloc.model import claims as model_claims
from dralloc.model import nodes, pods
from dralloc.scheduling import labels, nodefit, placement

PREEMPT_NEVER = "Never"
PREEMPT_LOWER = "PreemptLowerPriority"
# Upstream adds MaxInt32+1 to every priority before summing, so that negative priorities order sums
# as positive ones would.
_PRIORITY_OFFSET = 2**31


def priority(pod: pods.Pod) -> int:
    return pod.spec.priority or 0


def may_preempt(pod: pods.Pod) -> bool:
    """Whether the pod may preempt others at all (`preemptionPolicy: Never` may not)."""
    return pod.spec.preemption_policy != PREEMPT_NEVER


@dataclasses.dataclass(frozen=True)
class Victim:
    """What is removed at once: one pod, or every pod of a PodGroup disrupted as one."""

    pods: tuple[pods.Pod, ...]
    # The unit's priority when a PodGroup gives it (upstream's GetPodPriority); None: its pods' own.
    group_priority: int | None = None
    # A pod of a PodGroup (either disruption mode) ranks above a lone pod of the same priority: upstream
    # types a `single`-mode member as a PodGroup victim too (NewPodVictim, a TODO there), and its
    # MoreImportantVictim ranks PodGroup victims above Pod victims.
    grouped: bool = False

    @property
    def priority(self) -> int:
        if self.group_priority is not None:
            return self.group_priority
        return max(priority(p) for p in self.pods)

    @property
    def started(self) -> str | None:
        """The earliest start time of its pods; None when none has started (counts as the latest)."""
        times = [p.status.start_time for p in self.pods if p.status.start_time]
        return min(times) if times else None

    @property
    def uids(self) -> frozenset[str]:
        return frozenset(p.metadata.uid or "" for p in self.pods)


def _start_key(started: str | None) -> tuple[int, str]:
    """Earlier first; not started last (upstream: the current time, later than any start)."""
    return (1, "") if started is None else (0, started)


def _importance(victim: Victim) -> tuple[int, int, int, tuple[int, str]]:
    """Smaller is more important: upstream's MoreImportantVictim (1.37) as a sort key."""
    return (-victim.priority, -int(victim.grouped), -len(victim.pods), _start_key(victim.started))


def more_important(a: Victim, b: Victim) -> bool:
    """Upstream's MoreImportantVictim: higher priority, then a PodGroup's before a lone pod, then more
    pods, then the earlier start."""
    return _importance(a) < _importance(b)


def by_importance(victims: Iterable[Victim]) -> list[Victim]:
    """Most important first; ties keep their given order (a stable sort, as the node's pod order)."""
    found = list(victims)
    found.sort(key=_importance)
    return found


@dataclasses.dataclass(frozen=True)
class DisruptionBudget:
    """What preemption reads of a PodDisruptionBudget: its selector and how many disruptions it allows."""

    namespace: str
    selector: pods.LabelSelector | None  # None or empty: matches nothing (upstream)
    disruptions_allowed: int
    disrupted: frozenset[str] = frozenset()  # status.disruptedPods: names already counted by the API server


def split_by_budget(victims: Sequence[Victim], budgets: Sequence[DisruptionBudget],
                    ) -> tuple[list[tuple[Victim, int]], list[Victim]]:
    """Upstream's FilterVictimsWithPDBViolation: (violating victims with how many of their pods violate,
    the others), each in the given order. Budgets are spent in that order, so a budget that allows one
    disruption lets the first matching victim go free and makes the second a violation."""
    allowed = [b.disruptions_allowed for b in budgets]

    def violates(pod: pods.Pod) -> bool:
        if not pod.metadata.labels:
            return False
        for index, budget in enumerate(budgets):
            selector = budget.selector
            if budget.namespace != pod.namespace or selector is None:
                continue
            if not selector.match_labels and not selector.match_expressions:
                continue  # an empty selector matches nothing here
            try:
                if not labels.matches(selector, pod.metadata.labels):
                    continue
            except ValueError:
                continue  # an invalid selector matches nothing
            if pod.metadata.name in budget.disrupted:
                continue
            allowed[index] -= 1
            if allowed[index] < 0:
                return True
        return False

    violating: list[tuple[Victim, int]] = []
    others: list[Victim] = []
    for victim in victims:
        count = sum(1 for pod in victim.pods if violates(pod))
        if count:
            violating.append((victim, count))
        else:
            others.append(victim)
    return violating, others


# Whether the preemptor fits with these victims (indexes into the node's potential victims) removed.
Fits = Callable[[frozenset[int]], bool]


@dataclasses.dataclass(frozen=True)
class NodeVictims:
    """A candidate: the node, the victims to remove there (most important first), the PDBs broken."""

    node: str
    victims: tuple[Victim, ...]
    pdb_violations: int

    @property
    def pods(self) -> tuple[pods.Pod, ...]:
        return tuple(p for v in self.victims for p in v.pods)


GroupKey = tuple[str, str]  # a PodGroup: (namespace, name)


@dataclasses.dataclass(frozen=True)
class Groups:
    """What preemption reads of the PodGroups of the pods it may remove (GenericWorkload)."""

    # Every PodGroup that exists: its spec.priority, 0 when unset (upstream's PodGroupPriority). A pod
    # naming a PodGroup that does not exist keeps its own priority.
    priorities: Mapping[GroupKey, int] = dataclasses.field(default_factory=dict)
    # PodGroups disrupted as one (`disruptionMode: all`): their members on nodes.
    whole: Mapping[GroupKey, tuple[pods.Pod, ...]] = dataclasses.field(default_factory=dict)


NO_GROUPS = Groups()


def _group_key(pod: pods.Pod) -> GroupKey | None:
    group = pod.spec.scheduling_group.pod_group_name if pod.spec.scheduling_group is not None else None
    return (pod.namespace, group) if group else None


def victim_priority(pod: pods.Pod, groups: Groups) -> int:
    """A pod's priority as a victim: its PodGroup's when the PodGroup exists (upstream's GetPodPriority)."""
    key = _group_key(pod)
    found = groups.priorities.get(key) if key is not None else None
    return priority(pod) if found is None else found


def _removable(pod: pods.Pod, below: int, spared: Collection[str | None], groups: Groups) -> bool:
    return (victim_priority(pod, groups) < below and pod.metadata.deletion_timestamp is None
            and not pod.finished() and pod.metadata.uid not in spared)


def _collect(on_node: Iterable[pods.Pod], below: int, spared: Collection[str | None], groups: Groups,
             taken: set[GroupKey]) -> list[Victim]:
    """The pods of priority below `below` (not in `spared`) as victims; a PodGroup disrupted as one once
    (`taken`: those already collected), with all its members, if each may go."""
    found: list[Victim] = []
    for pod in on_node:
        if not _removable(pod, below, spared, groups):
            continue
        key = _group_key(pod)
        known = key is not None and key in groups.priorities
        group_priority = groups.priorities[key] if key is not None and known else None
        members = groups.whole.get(key) if key is not None else None
        if members is None:
            found.append(Victim((pod,), group_priority, grouped=known))
            continue
        assert key is not None
        if key not in taken:
            taken.add(key)
            if all(_removable(m, below, spared, groups) for m in members):
                found.append(Victim(tuple(members), group_priority, grouped=True))
    return found


def potential_victims(preemptor: pods.Pod, on_node: Iterable[pods.Pod], groups: Groups = NO_GROUPS) -> list[Victim]:
    """The node's pods the preemptor may remove: strictly lower priority (a PodGroup's pods: their
    PodGroup's), not terminating, not finished, most important first. A pod of a PodGroup disrupted as
    one comes with every member of its group, wherever they run, and only if the preemptor may remove
    each of them."""
    return by_importance(_collect(on_node, priority(preemptor), (preemptor.metadata.uid,), groups, set()))


def select_on_node(node: str, victims: Sequence[Victim], fits: Fits,
                   budgets: Sequence[DisruptionBudget] = ()) -> NodeVictims | None:
    """Upstream's SelectVictimsOnNode over `victims` (most important first): None when the preemptor does
    not fit even with all of them removed."""
    if not victims:
        # Room without removing anyone (the cluster changed meanwhile): a candidate with no victim. With
        # victims, the reprieve below spares them all in that case.
        return NodeVictims(node, (), 0) if fits(frozenset()) else None
    removed = set(range(len(victims)))
    if not fits(frozenset(removed)):
        return None
    position = {id(v): i for i, v in enumerate(victims)}
    violating, others = split_by_budget(victims, budgets)
    kept_removed: list[int] = []
    violations = 0

    def reprieve(victim: Victim) -> bool:
        index = position[id(victim)]
        removed.discard(index)
        if fits(frozenset(removed)):
            return True
        removed.add(index)
        kept_removed.append(index)
        return False

    for victim, count in violating:
        if not reprieve(victim):
            violations += count
    for victim in others:
        reprieve(victim)
    chosen = by_importance(victims[i] for i in sorted(kept_removed))
    return NodeVictims(node, tuple(chosen), violations)


def _highest_start(candidate: NodeVictims) -> str | None:
    """Upstream's GetEarliestPodStartTime: the earliest start among the highest-priority victims."""
    top = max(v.priority for v in candidate.victims)
    times = [v.started for v in candidate.victims if v.priority == top]
    started = [t for t in times if t is not None]
    return min(started) if started else None


Rank = tuple[int, int, int, int, tuple[int, tuple[int, ...]]]


def rank(candidate: NodeVictims) -> Rank:
    """The order of upstream's pickOneNodeForPreemption, smaller is better; a node with no victim first."""
    pods_ = candidate.pods
    if not pods_:
        return (0, -(2**63), 0, 0, (0, ()))
    started = _highest_start(candidate)
    # The latest start wins: not started counts as latest of all.
    latest: tuple[int, tuple[int, ...]] = (0, ()) if started is None else (1, _descending(started))
    # Upstream reads the own priority of the first pod of the victims, most important first.
    return (candidate.pdb_violations, priority(pods_[0]),
            sum(priority(p) + _PRIORITY_OFFSET for p in pods_), len(pods_), latest)


def _descending(text: str) -> tuple[int, ...]:
    """A key under which later timestamps sort first."""
    return tuple(-ord(c) for c in text)


def pick_one(candidates: Sequence[NodeVictims]) -> NodeVictims | None:
    """The best candidate by `rank`; the first of equals (candidates in node name order)."""
    best: NodeVictims | None = None
    best_rank: Rank | None = None
    for candidate in candidates:
        found = rank(candidate)
        if best_rank is None or found < best_rank:
            best, best_rank = candidate, found
    return best


# ---- the fit on one node, for a Placer ------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class HeldClaim:
    """An allocated claim on or for the node, and the pods that hold it (its reservedFor, by uid)."""

    results: model_claims.AllocationResult
    holders: frozenset[str]


class NodeTrial:
    """Whether the preemptor fits a Placer's node with some of its victims removed: the node's own
    resources without the victims' requests, the filters that read the pods around it without the
    victims, and the allocator against the node's devices with the victims' claims taken out (a claim
    goes when every pod holding it is removed). Answers are remembered per set of victims."""

    def __init__(self, placer: placement.Placer, item: placement.Item, index: int, victims: Sequence[Victim],
                 held: Sequence[HeldClaim]) -> None:
        assert item.pod is not None
        self.placer, self.item, self.index = placer, item, index
        self.node = placer.nodes[index]
        self.victims = list(victims)
        self.held = list(held)
        self.requests = nodefit.pod_requests(item.pod)
        self._known: dict[frozenset[int], bool] = {}
        self.calls = 0
        # The claims some set of these victims may free, taken out of the devices in use once: a trial then
        # adds back those it keeps (cheap), where taking out per trial copies the whole in-use state.
        every = frozenset(uid for victim in self.victims for uid in victim.uids)
        self._freeable = [claim for claim in self.held if claim.holders and claim.holders <= every]
        self._base: Snapshot | None = None

    def __call__(self, removed: frozenset[int]) -> bool:
        known = self._known.get(removed)
        if known is None:
            known = self._known[removed] = self._fits(removed)
        return known

    def _fits(self, removed: frozenset[int]) -> bool:
        placer, node_name = self.placer, self.node.metadata.name
        gone = [p for i in sorted(removed) for p in self.victims[i].pods]
        gone_uids = frozenset(p.metadata.uid or "" for p in gone)
        # The node's own resources.
        shared = placer.usage[self.index]
        usage = nodefit.NodeUsage(dict(shared.requests), shared.pods)
        for victim in gone:
            if victim.spec.node_name == node_name:  # a PodGroup victim's other members free other nodes
                usage.remove(nodefit.bound_pod_requests(victim))
        pod = self.item.pod
        assert pod is not None
        if nodefit.misfit(pod, self.node, usage, self.requests, dra_backed=placer.dra_backed) is not None:
            return False
        # The filters that read the pods around the node, without the victims.
        around = placer.placed.fork()
        for victim in gone:
            around.remove(victim, victim.spec.node_name or node_name)
        try:
            for check in placement.neighbour_checks_of(pod, around, placer.storage):
                if check.reject(self.node) is not None:
                    return False
        except ValueError:
            return False
        # The devices, with the claims only victims hold taken out.
        snapshot = placer.snapshot
        if self._freeable:
            if self._base is None:
                self._base = snapshot.without_allocations([c.results for c in self._freeable], placer.features)
            kept = [c.results for c in self._freeable if not c.holders <= gone_uids]
            snapshot = self._base.with_allocations(kept, placer.features) if kept else self._base
        self.calls += 1
        outcome = allocation.allocate(snapshot, self.item.claims, placer.views[self.index], features=placer.features,
                                      budget=placer.budget, explain=False)
        return isinstance(outcome, outcomes.Allocated)


def victims_by_node(placer: placement.Placer, preemptor: pods.Pod,
                    groups: Groups = NO_GROUPS) -> Mapping[int, list[Victim]]:
    """The potential victims of every node whose own constraints (node name, cordon, taints, node
    affinity) admit the preemptor: the nodes where removing pods may help (upstream skips the nodes a
    filter found unresolvable)."""
    found: dict[int, list[Victim]] = {}
    for index, node in enumerate(placer.nodes):
        if nodefit.static_misfit(preemptor, node) is not None or placer.held_against(preemptor, index):
            continue  # what removing pods cannot change, or room being made there for another pod
        victims = potential_victims(preemptor, placer.placed.on(node.metadata.name), groups)
        if victims:
            found[index] = victims
    return found


# Upstream's DefaultPreemption arguments (their defaults): how many candidate nodes a preemption looks for.
MIN_CANDIDATE_NODES_PERCENTAGE = 10
MIN_CANDIDATE_NODES_ABSOLUTE = 100


def candidates_wanted(nodes: int) -> int:
    """Upstream's calculateNumCandidates: 10 % of the nodes where preemption may help, at least 100, at
    most all of them. The search stops once it has that many candidates, one of them breaking no budget."""
    return min(nodes, max(nodes * MIN_CANDIDATE_NODES_PERCENTAGE // 100, MIN_CANDIDATE_NODES_ABSOLUTE))


# Claims held by a pod (its uid): what removing it may free.
HeldBy = Callable[[str], Sequence[HeldClaim]]


def find(placer: placement.Placer, item: placement.Item, held_by: HeldBy,
         budgets: Sequence[DisruptionBudget] = (), groups: Groups = NO_GROUPS) -> NodeVictims | None:
    """The node and the victims kube-scheduler's DefaultPreemption would choose for the item's pod, with
    devices counted: every node whose own constraints admit the pod, its victims chosen by
    `select_on_node`, the best of them by `pick_one`. None when removing lower-priority pods helps
    nowhere. Consults the decision's interruption check between nodes."""
    pod = item.pod
    if pod is None or not may_preempt(pod):
        return None
    candidates: list[NodeVictims] = []
    potential = victims_by_node(placer, pod, groups)
    wanted = candidates_wanted(len(potential))
    for index, victims in potential.items():
        if len(candidates) >= wanted and any(c.pdb_violations == 0 for c in candidates):
            break  # upstream's DryRunPreemption stops here too
        interruption.checkpoint()
        seen: set[int] = set()
        held = []
        for victim in victims:
            for uid in victim.uids:
                for claim in held_by(uid):
                    if id(claim) not in seen:
                        seen.add(id(claim))
                        held.append(claim)
        trial = NodeTrial(placer, item, index, victims, held)
        chosen = select_on_node(placer.nodes[index].metadata.name, victims, trial, budgets)
        if chosen is not None:
            candidates.append(chosen)
    return pick_one(candidates)


# ---- a whole gang ----------------------------------------------------------------------------------

GangFits = Callable[[placement.Placer], object | None]  # a placement of the whole gang on the placer, or None


def find_for_gang(placer: placement.Placer, members: Sequence[pods.Pod], gang_priority: int, fits: GangFits,
                  held_by: HeldBy, budgets: Sequence[DisruptionBudget] = (), groups: Groups = NO_GROUPS, *,
                  within: Callable[[nodes.Node], bool] | None = None) -> tuple[NodeVictims, object] | None:
    """Victims for a gang that fits nowhere, chosen for the whole gang's joint placement: the pods of lower
    priority than the gang on every node some member may use (its own constraints admit it), removed all
    at once; when the gang then fits, spared one by one, most important first (and first those a
    PodDisruptionBudget protects), as long as the gang still fits. The victims (`node` empty: they may
    span nodes) with the gang's placement once they are gone; None when removing every such pod does
    not make room. Each trial is a gang search on a fork of the placer; the decision's interruption check
    bounds them all. `within`: only the pods of the nodes it accepts (one topology domain). Whether the
    gang may preempt is the caller's to decide: the same search picks the nodes a gang that may not
    preempt waits on (the caller reserves them, removing nobody)."""
    if not members:
        return None
    uids = {m.metadata.uid for m in members}
    found: list[Victim] = []
    taken: set[GroupKey] = set()
    for index, node in enumerate(placer.nodes):
        if within is not None and not within(node):
            continue  # outside the domain tried
        if all(nodefit.static_misfit(member, node) is not None or placer.held_against(member, index)
               for member in members):
            continue
        found += _collect(placer.placed.on(node.metadata.name), gang_priority, uids, groups, taken)
    victims = by_importance(found)
    if not victims:
        return None
    plans: dict[frozenset[int], object | None] = {}

    def trial(removed: frozenset[int]) -> bool:
        if removed not in plans:
            interruption.checkpoint()
            fork = placer.fork()
            gone = [p for i in sorted(removed) for p in victims[i].pods]
            gone_uids = frozenset(p.metadata.uid or "" for p in gone)
            freed: dict[int, model_claims.AllocationResult] = {}
            for pod in gone:
                fork.release(pod.spec.node_name or "", (), pod)
                for claim in held_by(pod.metadata.uid or ""):
                    if claim.holders <= gone_uids:
                        freed[id(claim)] = claim.results
            if freed:
                fork.release("", list(freed.values()), None)
            plans[removed] = fits(fork)
        return plans[removed] is not None

    chosen = select_on_node("", victims, trial, budgets)
    if chosen is None:
        return None
    position = {id(v): i for i, v in enumerate(victims)}
    plan = plans[frozenset(position[id(v)] for v in chosen.victims)]
    return chosen, plan
