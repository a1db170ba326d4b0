"""Priority preemption's core (`scheduling/preemption.py`): who may be a victim, the victims of one node,
the choice among nodes, and the fit with devices freed exactly.

Rules first, one named row or test each; then a Placer's node with GPUs held by low-priority pods; then
properties against an exhaustive search on small random nodes: the victims chosen are the ones
kube-scheduler's reprieve keeps (the most important victims spared first, every victim needed), and the
node chosen is the best by upstream's order among every node's victims.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.builders import claim, class_, device, result, slice_, snapshot
from tests.scheduling.objects import node_, pod_

from dralloc.allocation.features import Features
from dralloc.model import claims as model_claims
from dralloc.model import pods
from dralloc.scheduling import placement, preemption

FEATURES = Features()


def pod(name: str, priority: int = 0, *, node: str | None = "n1", cpu: str | None = None, started: str | None = None,
        labels: dict[str, str] | None = None, terminating: bool = False, phase: str | None = None,
        **spec: Any) -> pods.Pod:
    found = pod_(name, cpu=cpu, node_name=node, labels=labels, phase=phase,
                 spec_extra={"priority": priority, **spec})
    status = found.status.model_copy(update={"start_time": started})
    meta = found.metadata.model_copy(update={"deletion_timestamp": "2026-01-01T00:00:00Z"}) if terminating \
        else found.metadata
    return found.model_copy(update={"status": status, "metadata": meta})


def victim(name: str, priority: int, started: str | None = "2026-01-01T00:00:00Z", **fields: Any) -> preemption.Victim:
    return preemption.Victim((pod(name, priority, started=started, **fields),))


def names(victims: Sequence[preemption.Victim]) -> list[str]:
    return [p.metadata.name for v in victims for p in v.pods]


# ---- who may be a victim --------------------------------------------------------------------------

class TestPotentialVictims:
    def test_only_strictly_lower_priority_pods_not_leaving_already(self) -> None:
        preemptor = pod("big", 100, node=None)
        on_node = [pod("low", 10), pod("equal", 100), pod("high", 1000), pod("gone", 1, terminating=True),
                   pod("done", 1, phase="Succeeded"), pod("lowest", -5)]
        assert names(preemption.potential_victims(preemptor, on_node)) == ["low", "lowest"]

    def test_most_important_first_priority_then_the_longer_running(self) -> None:
        preemptor = pod("big", 100, node=None)
        on_node = [pod("young", 50, started="2026-02-01T00:00:00Z"), pod("old", 50, started="2026-01-01T00:00:00Z"),
                   pod("unstarted", 50), pod("top", 60, started="2026-03-01T00:00:00Z")]
        assert names(preemption.potential_victims(preemptor, on_node)) == ["top", "old", "young", "unstarted"]

    def test_preemption_policy_never_may_not_preempt(self) -> None:
        assert preemption.may_preempt(pod("a", 100))
        assert not preemption.may_preempt(pod("a", 100, preemptionPolicy="Never"))


# ---- the victims of one node -----------------------------------------------------------------------

def needs(capacity: int, sizes: Sequence[int], wanted: int) -> preemption.Fits:
    """A node of `capacity` whose victims use `sizes`: the pod fits when `wanted` is left."""
    def fits(removed: frozenset[int]) -> bool:
        used = sum(size for i, size in enumerate(sizes) if i not in removed)
        return capacity - used >= wanted
    return fits


class TestSelectOnNode:
    def test_no_candidate_when_removing_every_victim_is_not_enough(self) -> None:
        victims = [victim("a", 1), victim("b", 2)]
        assert preemption.select_on_node("n1", victims, needs(4, [1, 1], 5)) is None

    def test_the_most_important_victims_are_spared_first(self) -> None:
        """Three pods of 2 on a node of 6, the pod needs 2: the least important goes."""
        victims = preemption.by_importance([victim("p1", 1), victim("p3", 3), victim("p2", 2)])
        chosen = preemption.select_on_node("n1", victims, needs(6, [2, 2, 2], 2))
        assert chosen is not None and names(chosen.victims) == ["p1"] and chosen.pdb_violations == 0

    def test_reprieve_keeps_a_big_important_pod_when_small_ones_make_room(self) -> None:
        """Sparing the most important first: the 4-unit priority-3 pod stays, the two small ones go."""
        victims = [victim("big", 3), victim("s2", 2), victim("s1", 1)]
        chosen = preemption.select_on_node("n1", victims, needs(8, [4, 2, 2], 4))
        assert chosen is not None and names(chosen.victims) == ["s2", "s1"]

    def test_victims_a_budget_protects_are_spared_before_the_others(self) -> None:
        """Either pod frees enough; the one a PodDisruptionBudget protects is spared though it is the less
        important: upstream reprieves the violating victims first."""
        victims = [victim("free", 5), victim("guarded", 1, labels={"app": "db"})]
        budget = preemption.DisruptionBudget("default", pods.LabelSelector(match_labels={"app": "db"}), 0)
        chosen = preemption.select_on_node("n1", victims, needs(4, [2, 2], 2), [budget])
        assert chosen is not None and names(chosen.victims) == ["free"] and chosen.pdb_violations == 0

    def test_a_violation_that_cannot_be_avoided_is_counted(self) -> None:
        victims = [victim("guarded", 1, labels={"app": "db"})]
        budget = preemption.DisruptionBudget("default", pods.LabelSelector(match_labels={"app": "db"}), 0)
        chosen = preemption.select_on_node("n1", victims, needs(2, [2], 2), [budget])
        assert chosen is not None and chosen.pdb_violations == 1


class TestBudgets:
    SELECT = pods.LabelSelector(match_labels={"app": "db"})

    def test_a_budget_is_spent_in_victim_order(self) -> None:
        victims = [victim("a", 1, labels={"app": "db"}), victim("b", 1, labels={"app": "db"})]
        violating, others = preemption.split_by_budget(victims, [preemption.DisruptionBudget("default", self.SELECT, 1)])
        assert names(others) == ["a"] and [(names([v]), n) for v, n in violating] == [(["b"], 1)]

    @pytest.mark.parametrize("budget", [
        preemption.DisruptionBudget("other", SELECT, 0),
        preemption.DisruptionBudget("default", None, 0),
        preemption.DisruptionBudget("default", pods.LabelSelector(), 0),
        preemption.DisruptionBudget("default", SELECT, 0, disrupted=frozenset({"a"})),
    ], ids=["other-namespace", "no-selector", "empty-selector-matches-nothing", "already-disrupted"])
    def test_a_budget_that_does_not_apply(self, budget: preemption.DisruptionBudget) -> None:
        violating, others = preemption.split_by_budget([victim("a", 1, labels={"app": "db"})], [budget])
        assert not violating and names(others) == ["a"]


# ---- the choice among nodes ------------------------------------------------------------------------

def candidate(node: str, *victims: preemption.Victim, violations: int = 0) -> preemption.NodeVictims:
    return preemption.NodeVictims(node, tuple(victims), violations)


PICK = {
    "fewest-pdb-violations": ([candidate("n1", victim("a", 1), violations=1), candidate("n2", victim("b", 9))], "n2"),
    "lowest-highest-priority": ([candidate("n1", victim("a", 5)), candidate("n2", victim("b", 1), victim("c", 4))],
                                "n2"),
    "smallest-sum-of-priorities": ([candidate("n1", victim("a", 5), victim("b", 5)),
                                    candidate("n2", victim("c", 5), victim("d", 1))], "n2"),
    "negative-priorities-sum-as-positive-ones": ([candidate("n1", victim("a", -5), victim("b", -5)),
                                                  candidate("n2", victim("c", -5))], "n2"),
    "fewest-victims": ([candidate("n1", victim("a", 0), victim("b", 0)), candidate("n2", victim("c", 0))], "n2"),
    "latest-start-of-the-highest-priority-victims": (
        [candidate("n1", victim("a", 3, started="2026-01-01T00:00:00Z")),
         candidate("n2", victim("b", 3, started="2026-05-01T00:00:00Z"))], "n2"),
    "not-started-counts-as-latest": ([candidate("n1", victim("a", 3, started="2026-05-01T00:00:00Z")),
                                      candidate("n2", victim("b", 3, started=None))], "n2"),
    "the-first-of-equals": ([candidate("n1", victim("a", 3)), candidate("n2", victim("b", 3))], "n1"),
}


@pytest.mark.parametrize("case", PICK.values(), ids=PICK.keys())
def test_pick_one(case: tuple[list[preemption.NodeVictims], str]) -> None:
    candidates, wanted = case
    chosen = preemption.pick_one(candidates)
    assert chosen is not None and chosen.node == wanted


# ---- a Placer's node: requests, neighbours and devices freed exactly -------------------------------

def gpu_cluster(holders: dict[str, list[tuple[str, int, int]]], *, gpus: int = 2, cpu: str = "8",
                shared: dict[str, Sequence[str]] | None = None,
                ) -> tuple[placement.Placer, list[pods.Pod], list[preemption.HeldClaim]]:
    """Nodes (name -> pods: (name, priority, GPUs)), each with `gpus` node-local GPUs handed out to its pods
    in order. `shared[claim pod]`: more pods holding that pod's claim. The placer, the pods, the claims."""
    slices, allocated, bound, held = [], [], [], []
    for node, residents in holders.items():
        slices.append(slice_(node, pool=node, node=node, devices=[device(f"gpu-{i}") for i in range(gpus)]))
        next_gpu = 0
        for name, priority, count in residents:
            resident = pod(name, priority, node=node, cpu="1", started="2026-01-01T00:00:00Z")
            bound.append(resident)
            if not count:
                continue
            results = [result("r", f"gpu-{next_gpu + i}", pool=node) for i in range(count)]
            next_gpu += count
            built = claim(f"c-{name}").request("r", "gpu", count=count).allocated(*results).build()
            allocated.append(built)
            assert built.status.allocation is not None
            holders_ = {resident.metadata.uid or ""} | {f"uid-default-{o}" for o in (shared or {}).get(name, ())}
            held.append(preemption.HeldClaim(built.status.allocation, frozenset(holders_)))
    snap = snapshot(classes=[class_("gpu")], slices=slices, allocated=allocated)
    placer_ = placement.Placer(node_list=[node_(n, cpu=cpu) for n in holders], snapshot=snap, features=FEATURES,
                               bound_pods=bound)
    return placer_, bound, held


def gpu_pod(priority: int, gpus: int = 1, *, cpu: str = "1") -> placement.Item:
    claims = (claim("want").request("r", "gpu", count=gpus).build(),) if gpus else ()
    return placement.Item("big", claims=claims, pod=pod("big", priority, node=None, cpu=cpu))


def decide(placer_: placement.Placer, item: placement.Item, held: Sequence[preemption.HeldClaim],
           budgets: Sequence[preemption.DisruptionBudget] = ()) -> preemption.NodeVictims | None:
    assert item.pod is not None
    found = []
    for index, victims in preemption.victims_by_node(placer_, item.pod).items():
        trial = preemption.NodeTrial(placer_, item, index, victims, held)
        chosen = preemption.select_on_node(placer_.nodes[index].metadata.name, victims, trial, budgets)
        if chosen is not None:
            found.append(chosen)
    return preemption.pick_one(found)


class TestNodeTrial:
    def test_a_full_gpu_node_frees_one_gpu_from_its_least_important_holder(self) -> None:
        placer_, _, held = gpu_cluster({"n1": [("a", 10, 1), ("b", 5, 1)]})
        assert isinstance(placer_.place(gpu_pod(100)), placement.NoPlacement)
        chosen = decide(placer_, gpu_pod(100), held)
        assert chosen is not None and (chosen.node, names(chosen.victims)) == ("n1", ["b"])

    def test_equal_or_higher_priority_is_never_a_victim(self) -> None:
        placer_, _, held = gpu_cluster({"n1": [("a", 100, 1), ("b", 200, 1)]})
        assert decide(placer_, gpu_pod(100), held) is None

    def test_a_claim_another_pod_shares_is_not_freed_by_removing_one_holder(self) -> None:
        """b's claim is shared with a (equal priority, not a victim): removing b frees nothing, so the
        victim must be c, though c is more important than b."""
        placer_, _, held = gpu_cluster({"n1": [("a", 100, 0), ("b", 1, 1), ("c", 2, 1)]}, shared={"b": ["a"]})
        chosen = decide(placer_, gpu_pod(100), held)
        assert chosen is not None and names(chosen.victims) == ["c"]

    def test_no_pod_is_removed_for_devices_it_would_not_free(self) -> None:
        """The pod wants 2 GPUs of a node that has 2, but one is held by a higher-priority pod."""
        placer_, _, held = gpu_cluster({"n1": [("keep", 1000, 1), ("low", 1, 1)]})
        assert decide(placer_, gpu_pod(100, gpus=2), held) is None

    def test_cpu_alone_makes_room_too(self) -> None:
        placer_, _, held = gpu_cluster({"n1": [("a", 1, 0), ("b", 2, 0)]}, cpu="2")
        chosen = decide(placer_, gpu_pod(100, gpus=0, cpu="1"), held)
        assert chosen is not None and names(chosen.victims) == ["a"]

    def test_the_node_with_the_cheapest_victims_is_chosen(self) -> None:
        placer_, _, held = gpu_cluster({"n1": [("a", 50, 2)], "n2": [("b", 10, 1), ("c", 20, 1)]})
        chosen = decide(placer_, gpu_pod(100), held)
        assert chosen is not None and (chosen.node, names(chosen.victims)) == ("n2", ["b"])

    def test_a_node_the_pod_cannot_use_is_not_a_candidate(self) -> None:
        placer_, _, held = gpu_cluster({"n1": [("a", 1, 2)]})
        item = gpu_pod(100)
        assert item.pod is not None
        pinned = placement.Item("big", claims=item.claims, pod=pod("big", 100, node="elsewhere"))
        assert decide(placer_, pinned, held) is None


# ---- properties: the exhaustive search on small nodes -----------------------------------------------

@st.composite
def small_nodes(draw: st.DrawFn) -> tuple[dict[str, list[tuple[str, int, int]]], int, int]:
    """Up to 3 nodes of 4 GPUs, each with up to 4 pods of priority 0-3 holding 0-2 GPUs (no more than the
    node has); the preemptor's priority and GPUs."""
    holders: dict[str, list[tuple[str, int, int]]] = {}
    serial = itertools.count()
    for n in range(draw(st.integers(1, 3))):
        left = 4
        residents = []
        for _ in range(draw(st.integers(0, 4))):
            count = draw(st.integers(0, min(2, left)))
            left -= count
            residents.append((f"p{next(serial)}", draw(st.integers(0, 3)), count))
        holders[f"n{n}"] = residents
    return holders, draw(st.integers(1, 4)), draw(st.integers(1, 4))


def brute_force(victims: Sequence[preemption.Victim], fits: preemption.Fits) -> list[str] | None:
    """Among every set of victims whose removal lets the pod fit, the one that spares the most important
    victims first (kept victims compared in importance order), or None."""
    best: tuple[bool, ...] | None = None
    for removed_bits in itertools.product((False, True), repeat=len(victims)):
        removed = frozenset(i for i, bit in enumerate(removed_bits) if bit)
        if not fits(removed):
            continue
        kept = tuple(not bit for bit in removed_bits)
        if best is None or kept > best:
            best = kept
    if best is None:
        return None
    return names([v for v, kept in zip(victims, best, strict=True) if not kept])


@settings(max_examples=120, deadline=None)
@given(small_nodes())
def test_the_victims_are_the_ones_an_exhaustive_search_spares_last(case: tuple[Any, int, int]) -> None:
    """On every node: the victims are those whose removal lets the pod fit while sparing the most important
    victims first (over every subset), each of them is needed, and the chosen node is the best by
    upstream's order among every node's victims."""
    holders, priority, gpus = case
    placer_, _, held = gpu_cluster(holders, gpus=4)
    item = gpu_pod(priority, gpus=gpus)
    assert item.pod is not None
    per_node = []
    for index, victims in preemption.victims_by_node(placer_, item.pod).items():
        trial = preemption.NodeTrial(placer_, item, index, victims, held)
        chosen = preemption.select_on_node(placer_.nodes[index].metadata.name, victims, trial)
        wanted = brute_force(victims, trial)
        assert (None if chosen is None else sorted(names(chosen.victims))) == (
            None if wanted is None else sorted(wanted))
        if chosen is None:
            continue
        per_node.append(chosen)
        position = {names([v])[0]: i for i, v in enumerate(victims)}
        removed = frozenset(position[n] for n in names(chosen.victims))
        for name in names(chosen.victims):
            assert not trial(removed - {position[name]}), f"{name} was not needed"
    best = preemption.pick_one(per_node)
    if per_node:
        assert best is not None
        assert preemption.rank(best) == min(preemption.rank(c) for c in per_node)
        assert best is next(c for c in per_node if preemption.rank(c) == preemption.rank(best))
    else:
        assert best is None


def test_an_allocation_result_type_is_what_held_claims_carry() -> None:
    """HeldClaim carries the claim's allocation as the allocator reads it."""
    _, _, held = gpu_cluster({"n1": [("a", 1, 1)]})
    assert isinstance(held[0].results, model_claims.AllocationResult)


class TestHeldNodes:
    """A node held for a nominated pod takes no pod of equal or lower priority until the nominated pod is
    placed; pods above it, and the nominated pod itself, may go there."""

    def placer(self) -> placement.Placer:
        placer_, _, _ = gpu_cluster({"n1": [], "n2": []})
        placer_.hold("n1", pod("nominated", 100, node=None))
        return placer_

    @pytest.mark.parametrize("name, priority, wanted", [
        ("low", 50, "n2"), ("equal", 100, "n2"), ("nominated", 100, "n1"), ("higher", 200, "n1"),
    ])
    def test_who_may_use_a_held_node(self, name: str, priority: int, wanted: str) -> None:
        item = placement.Item(name, claims=gpu_pod(0).claims, pod=pod(name, priority, node=None, cpu="1"))
        decision = self.placer().place(item)
        assert isinstance(decision, placement.Placement) and decision.node == wanted

    def test_a_pod_refused_everywhere_is_told_the_node_is_held(self) -> None:
        placer_, _, _ = gpu_cluster({"n1": []})
        placer_.hold("n1", pod("nominated", 100, node=None))
        decision = placer_.place(placement.Item("low", pod=pod("low", 1, node=None)))
        assert isinstance(decision, placement.NoPlacement)
        assert decision.reasons == ((placement.HELD_FOR_NOMINATED, ("n1",)),)


def test_a_node_held_for_a_gang_member_takes_the_other_members() -> None:
    """A gang preempts as one: its members, nominated together, do not hold each other off."""
    placer_, _, _ = gpu_cluster({"n1": []})
    group = {"schedulingGroup": {"podGroupName": "g"}}
    placer_.hold("n1", pod("member-0", 100, node=None, **group))
    other = placement.Item("member-1", claims=gpu_pod(0).claims, pod=pod("member-1", 100, node=None, **group))
    decision = placer_.place(other)
    assert isinstance(decision, placement.Placement) and decision.node == "n1"
    stranger = placement.Item("stranger", claims=gpu_pod(0).claims, pod=pod("stranger", 100, node=None))
    assert isinstance(placer_.place(stranger), placement.NoPlacement)


@pytest.mark.parametrize("nodes, wanted", [(3, 3), (100, 100), (500, 100), (2000, 200)])
def test_candidates_wanted_is_upstreams_ten_percent_at_least_a_hundred(nodes: int, wanted: int) -> None:
    assert preemption.candidates_wanted(nodes) == wanted


def test_the_search_stops_once_it_has_enough_candidates(monkeypatch: pytest.MonkeyPatch) -> None:
    """120 nodes where preemption helps: the first 100 by name are examined, as upstream examines 100."""
    holders = {f"n{i:03d}": [(f"p{i}", 1, 2)] for i in range(120)}
    placer_, _, held = gpu_cluster(holders)
    held_by = {uid: [h] for h in held for uid in h.holders}
    examined: list[str] = []
    select = preemption.select_on_node

    def counting(node: str, *args: Any, **kwargs: Any) -> preemption.NodeVictims | None:
        examined.append(node)
        return select(node, *args, **kwargs)

    monkeypatch.setattr(preemption, "select_on_node", counting)
    chosen = preemption.find(placer_, gpu_pod(100), lambda uid: held_by.get(uid, ()))
    assert chosen is not None and chosen.node == "n000"
    assert examined == [f"n{i:03d}" for i in range(100)]


class TestPodGroupVictims:
    """A PodGroup disrupted as one (`disruptionMode: all`) is a victim with every member, wherever they run;
    a PodGroup's pods have its priority (upstream's GetPodPriority with GenericWorkload on)."""

    group = {"schedulingGroup": {"podGroupName": "train"}}

    def members(self, *priorities: int) -> tuple[pods.Pod, ...]:
        return tuple(pod(f"train-{i}", p, node=f"n{i + 1}", **self.group) for i, p in enumerate(priorities or (10, 10)))

    def whole(self, members: tuple[pods.Pod, ...], priority: int = 10) -> preemption.Groups:
        return preemption.Groups({("default", "train"): priority}, {("default", "train"): members})

    def test_one_member_on_the_node_brings_the_whole_group(self) -> None:
        members = self.members()
        found = preemption.potential_victims(pod("big", 100, node=None), [members[0], pod("solo", 5)],
                                             self.whole(members))
        assert [names([v]) for v in found] == [["train-0", "train-1"], ["solo"]]

    def test_a_group_with_a_member_the_preemptor_may_not_remove_is_no_victim(self) -> None:
        """Here a member already terminating: the group cannot go as one any more."""
        members = (pod("train-0", 10, node="n1", **self.group),
                   pod("train-1", 10, node="n2", terminating=True, **self.group))
        assert preemption.potential_victims(pod("big", 100, node=None), [members[0]], self.whole(members)) == []

    def test_without_disruption_as_one_members_go_alone(self) -> None:
        members = self.members()
        found = preemption.potential_victims(pod("big", 100, node=None), [members[0]],
                                             preemption.Groups({("default", "train"): 10}))
        assert [names([v]) for v in found] == [["train-0"]]

    def test_a_member_has_its_pod_groups_priority_not_its_own(self) -> None:
        """kube-scheduler 1.37 reads a grouped victim's priority from its PodGroup (0 when it has none): a
        member whose own priority is 500 in a PodGroup of priority 0 may be removed by a pod of 100, and a
        member of 5 in a PodGroup of 1000 may not."""
        member = pod("train-0", 500, **self.group)
        assert names(preemption.potential_victims(pod("big", 100, node=None), [member],
                                                  preemption.Groups({("default", "train"): 0}))) == ["train-0"]
        low = pod("train-0", 5, **self.group)
        assert preemption.potential_victims(pod("big", 100, node=None), [low],
                                            preemption.Groups({("default", "train"): 1000})) == []

    def test_a_member_of_a_pod_group_that_does_not_exist_keeps_its_own_priority(self) -> None:
        member = pod("train-0", 500, **self.group)
        assert preemption.potential_victims(pod("big", 100, node=None), [member], preemption.Groups()) == []

    def test_a_pod_groups_pod_outranks_a_lone_pod_of_its_priority(self) -> None:
        """Upstream's MoreImportantVictim ranks PodGroup victims above Pod victims at one priority, a
        `single`-mode member too, before size and start time: the lone pod, started earlier, goes first."""
        member = pod("train-0", 10, started="2026-01-02T00:00:00Z", **self.group)
        lone = pod("lone", 10, started="2026-01-01T00:00:00Z")
        found = preemption.potential_victims(pod("big", 100, node=None), [lone, member],
                                             preemption.Groups({("default", "train"): 10}))
        assert [names([v]) for v in found] == [["train-0"], ["lone"]]
        assert preemption.more_important(found[0], found[1])


def nominated(name: str, priority: int, node: str) -> pods.Pod:
    found = pod(name, priority, node=None)
    return found.model_copy(update={"status": found.status.model_copy(update={"nominated_node_name": node})})


def test_pods_nominated_to_one_node_with_one_priority_do_not_hold_each_other_off() -> None:
    """Two equal-priority pods nominated to n1 compete by fit there (kube-scheduler's nominated pods count
    each other's requests); a third of that priority, nominated nowhere, is held off."""
    placer_, _, _ = gpu_cluster({"n1": []})
    first, second = nominated("first", 100, "n1"), nominated("second", 100, "n1")
    placer_.hold("n1", first)
    placer_.hold("n1", second)
    item = placement.Item("second", claims=gpu_pod(0).claims, pod=second)
    decision = placer_.place(item)
    assert isinstance(decision, placement.Placement) and decision.node == "n1"
    outsider = placement.Item("outsider", claims=gpu_pod(0).claims, pod=pod("outsider", 100, node=None))
    assert isinstance(placer_.place(outsider), placement.NoPlacement)


def test_a_node_held_for_another_pod_is_no_preemption_candidate() -> None:
    """Room being made on n1 for one pod is not taken by another pod of its priority preempting there too
    (two nominations to one node would each hold the other off)."""
    placer_, _, held = gpu_cluster({"n1": [("a", 1, 2)], "n2": [("b", 5, 2)]})
    placer_.hold("n1", nominated("first", 100, "n1"))
    by_uid = {uid: [h] for h in held for uid in h.holders}
    chosen = preemption.find(placer_, gpu_pod(100), lambda uid: by_uid.get(uid, ()))
    assert chosen is not None and chosen.node == "n2"
