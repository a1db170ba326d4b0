"""Gangs (allocation.gangs): all or nothing, joint search across members, topology, explanations."""

from __future__ import annotations

from tests.builders import DRIVER, SliceBuilder, built, claim, class_, device, node, slice_, snapshot

from dralloc import allocation
from dralloc.allocation import gangs, outcomes
from dralloc.allocation.features import Features
from dralloc.allocation.pools import NodeView
from dralloc.allocation.snapshots import Snapshot

GPU = class_("gpu", f'device.driver == "{DRIVER}"')
NUMA = f"{DRIVER}/numa"
FEATURES = Features()


def gpus(node_name: str, *numas: int) -> SliceBuilder:
    """One slice on the node with one GPU per numa value given."""
    return slice_(f"{node_name}-gpus", node=node_name, pool=node_name,
                  devices=[device(f"gpu-{i}").attr("numa", numa) for i, numa in enumerate(numas)])


def single(name: str) -> gangs.Member:
    """A member with one claim for one GPU."""
    return gangs.Member(name, (built(claim(f"{name}-c").request("r", "gpu")),), "single")


def pair(name: str) -> gangs.Member:
    """A member with one claim for two GPUs on the same numa node."""
    return gangs.Member(name, (built(claim(f"{name}-c").request("r", "gpu", count=2).constraint_match(NUMA)),),
                        "pair")


def cluster(*slices: SliceBuilder) -> Snapshot:
    return snapshot(classes=[GPU], slices=slices)


def devices_of(placed: gangs.GangPlaced) -> dict[str, tuple[str, list[str]]]:
    return {a.member: (a.node, sorted(r.device for res in a.results for r in res.devices.results))
            for a in placed.assignments}


class TestJointSearch:
    def test_members_on_one_node_choose_devices_together(self) -> None:
        """The single GPU must not take a numa-1 GPU the pair needs: greedy takes gpu-0 and fails."""
        snap = cluster(gpus("n1", 1, 1, 0))
        members = [single("a"), pair("b")]
        greedy = gangs.place_gang(snap, members, [node("n1")], features=FEATURES, greedy=True)
        assert isinstance(greedy, gangs.GangUnfit)
        placed = gangs.place_gang(snap, members, [node("n1")], features=FEATURES)
        assert isinstance(placed, gangs.GangPlaced)
        assert devices_of(placed) == {"a": ("n1", ["gpu-2"]), "b": ("n1", ["gpu-0", "gpu-1"])}

    def test_an_earlier_member_moves_to_another_node(self) -> None:
        """Greedy puts the pair on the tightest node n2, where the triple (three GPUs on one numa
        node) needed to go; the search moves the pair to n1."""
        snap = cluster(gpus("n1", 0, 0, 1, 1), gpus("n2", 0, 0, 0))
        triple = gangs.Member("b", (built(claim("b-c").request("r", "gpu", count=3).constraint_match(NUMA)),),
                              "triple")
        members = [pair("a"), triple]
        assert isinstance(gangs.place_gang(snap, members, [node("n1"), node("n2")], features=FEATURES,
                                           greedy=True), gangs.GangUnfit)
        placed = gangs.place_gang(snap, members, [node("n1"), node("n2")], features=FEATURES)
        assert isinstance(placed, gangs.GangPlaced)
        assert {m: where for m, (where, _) in devices_of(placed).items()} == {"a": "n1", "b": "n2"}

    def test_interchangeable_members_are_not_permuted(self) -> None:
        """Six alike singles and a pair, all on numa 0: first fit puts two singles on node `a` (its two
        numa-0 GPUs), which the pair needed. The search moves them off `a` after few allocator calls:
        alike members are tried in one order only, not in all 6! of them."""
        on_numa_0 = [f'device.attributes["{DRIVER}"].numa == 0']
        singles = [gangs.Member(f"s{i}", (built(claim(f"s{i}-c").request("r", "gpu", selectors=on_numa_0)),), "s")
                   for i in range(6)]
        pair0 = gangs.Member("p", (built(claim("p-c").request("r", "gpu", count=2, selectors=on_numa_0)),), "p")
        nodes = [node("a"), *(node(f"n{i}") for i in range(6))]
        snap = cluster(gpus("a", 0, 0), *(gpus(f"n{i}", 0, 1) for i in range(6)))
        assert isinstance(gangs.place_gang(snap, [*singles, pair0], nodes, features=FEATURES, greedy=True),
                          gangs.GangUnfit)
        placed = gangs.place_gang(snap, [*singles, pair0], nodes, features=FEATURES)
        assert isinstance(placed, gangs.GangPlaced)
        assert {a.member: a.node for a in placed.assignments}["p"] == "a"
        assert placed.steps < 500  # 166 today; 4,297 without the symmetry breaking

    def test_deterministic(self) -> None:
        """The same input gives the same placement."""
        snap = cluster(gpus("n1", 0, 1), gpus("n2", 0, 1, 1))
        members = [single("a"), pair("b"), single("c")]
        nodes = [node("n1"), node("n2")]
        assert gangs.place_gang(snap, members, nodes, features=FEATURES) == \
            gangs.place_gang(snap, members, nodes, features=FEATURES)


class TestAllOrNothing:
    def test_a_gang_that_does_not_fit_places_nobody_and_says_how_close_it_came(self) -> None:
        """A pair and two singles, all on numa 0: four numa-0 GPUs, but the pair needs both of n1's,
        and n2 has one: nothing is placed; the explanation names the member left over."""
        on_numa_0 = [f'device.attributes["{DRIVER}"].numa == 0']
        pair0 = gangs.Member("p", (built(claim("p-c").request("r", "gpu", count=2, selectors=on_numa_0)),), "pair0")
        singles = [gangs.Member(n, (built(claim(f"{n}-c").request("r", "gpu", selectors=on_numa_0)),), "single0")
                   for n in ("s1", "s2")]
        snap = cluster(gpus("n1", 0, 0), gpus("n2", 0, 1))
        outcome = gangs.place_gang(snap, [pair0, *singles], [node("n1"), node("n2")], features=FEATURES)
        assert isinstance(outcome, gangs.GangUnfit)
        assert (outcome.attempts[0].placed, outcome.attempts[0].blocked) == (2, "s2")
        assert "at most 2 of 3 members fit together; then member s2 fits on no node left" in outcome.message(3)

    def test_too_few_places_for_alike_members_ends_the_search_at_once(self) -> None:
        """Three pairs on six GPUs, but the nodes hold one same-numa pair each: the shape bound says so."""
        snap = cluster(gpus("n1", 0, 0, 1), gpus("n2", 0, 1, 1))
        outcome = gangs.place_gang(snap, [pair("a"), pair("b"), pair("c")], [node("n1"), node("n2")],
                                   features=FEATURES)
        assert isinstance(outcome, gangs.GangUnfit)
        assert outcome.attempts[0].reason == "at most 2 of the 3 members like a fit in it, even without the others"

    def test_more_devices_than_the_domain_has_free_ends_the_search_at_once(self) -> None:
        """The counting bound: three pairs need six GPUs, four are free; no allocator call is made."""
        snap = cluster(gpus("n1", 0, 0), gpus("n2", 1, 1))
        outcome = gangs.place_gang(snap, [pair("a"), pair("b"), pair("c")], [node("n1"), node("n2")],
                                   features=FEATURES)
        assert isinstance(outcome, gangs.GangUnfit)
        assert (outcome.attempts[0].reason, outcome.steps) == ("the gang needs 6 devices, 4 are free", 0)

    def test_a_member_that_fits_nowhere_alone_ends_the_search_at_once(self) -> None:
        """The bound: a member no node can take even alone rules the domain out before any search."""
        snap = cluster(gpus("n1", 0, 1), gpus("n2", 0, 1))
        outcome = gangs.place_gang(snap, [single("a"), pair("b")], [node("n1"), node("n2")], features=FEATURES)
        assert isinstance(outcome, gangs.GangUnfit)
        assert outcome.attempts[0].reason == "member b fits on no node of it, even alone"
        assert outcome.steps == 3  # each shape tried alone until it fits: a on n1; b on n1 and n2

    def test_running_out_of_steps_is_its_own_outcome(self) -> None:
        """Not a proven failure: the budget (allocator calls) ran out first."""
        snap = cluster(*(gpus(f"n{i}", 0) for i in range(4)))
        nodes = [node(f"n{i}") for i in range(4)]
        members = [single("a"), single("b")]
        # Alone on n0 and n1 (the alike-members bound); b beside a on n0 would need 2 GPUs of its 1 free
        # (no call), and alone on n1 it is known already: two calls.
        assert gangs.place_gang(snap, members, nodes, features=FEATURES).steps == 2
        outcome = gangs.place_gang(snap, members, nodes, features=FEATURES, budget=1)
        assert outcome == gangs.GangBudgetExhausted(steps=1)


class TestTopology:
    def racks(self) -> tuple[Snapshot, list[NodeView]]:
        nodes = [NodeView("a1", {"rack": "a"}), NodeView("a2", {"rack": "a"}),
                 NodeView("b1", {"rack": "b"}), NodeView("b2", {"rack": "b"}), NodeView("loose", {})]
        return cluster(gpus("a1", 0, 0), gpus("a2", 0, 0), gpus("b1", 0, 0), gpus("b2", 0), gpus("loose", 0, 0)), nodes

    def test_all_members_share_one_value_of_the_topology_label(self) -> None:
        """Three pairs: rack b has room for one, rack a for two; no rack holds three, so it does not fit,
        though the cluster has room for four."""
        snap, nodes = self.racks()
        outcome = gangs.place_gang(snap, [pair("x"), pair("y"), pair("z")], nodes, features=FEATURES,
                                   topology_key="rack")
        assert isinstance(outcome, gangs.GangUnfit)
        assert [a.domain for a in outcome.attempts] == ["a", "b"]  # closest first
        assert "in domain a" in outcome.message(3)

    def test_tightest_domain_that_fits_is_chosen(self) -> None:
        """Rack b has fewer free GPUs: a one-pair gang goes there and rack a stays whole."""
        snap, nodes = self.racks()
        placed = gangs.place_gang(snap, [pair("x")], nodes, features=FEATURES, topology_key="rack")
        assert isinstance(placed, gangs.GangPlaced)
        assert (placed.domain, placed.assignments[0].node) == ("b", "b1")

    def test_nodes_without_the_label_are_in_no_domain(self) -> None:
        _, nodes = self.racks()
        assert "loose" not in {n.name for group in gangs.domains_of(nodes, "rack").values() for n in group}


class TestNodeAllows:
    def test_a_member_only_goes_where_the_caller_allows(self) -> None:
        """node_allows (e.g. the pod's CPU/memory fit) keeps a member off a node."""
        snap = cluster(gpus("n1", 0), gpus("n2", 0))
        placed = gangs.place_gang(snap, [single("a")], [node("n1"), node("n2")], features=FEATURES,
                                  node_allows=lambda index, n: n.name != "n1")
        assert isinstance(placed, gangs.GangPlaced)
        assert placed.assignments[0].node == "n2"


class TestNodeHolds:
    def test_members_sharing_a_node_must_fit_its_resources_together(self) -> None:
        """n1 is the tightest node and has GPUs for both singles, but its cpu holds one of them
        (node_holds): the second goes to n2 instead of the gang being placed onto n1 whole."""
        snap = cluster(gpus("n1", 0, 0), gpus("n2", 0, 0, 0))
        placed = gangs.place_gang(snap, [single("a"), single("b")], [node("n1"), node("n2")], features=FEATURES,
                                  node_holds=lambda indices, n: n.name != "n1" or len(indices) < 2)
        assert isinstance(placed, gangs.GangPlaced)
        assert {a.member: a.node for a in placed.assignments} == {"a": "n1", "b": "n2"}

    def test_without_node_holds_both_go_to_the_tightest_node(self) -> None:
        """The same gang, nothing limiting the node: BinPack keeps both on n1 (what the test above moves)."""
        snap = cluster(gpus("n1", 0, 0), gpus("n2", 0, 0, 0))
        placed = gangs.place_gang(snap, [single("a"), single("b")], [node("n1"), node("n2")], features=FEATURES)
        assert isinstance(placed, gangs.GangPlaced)
        assert {a.node for a in placed.assignments} == {"n1"}

    def test_the_shape_bound_counts_what_the_nodes_hold(self) -> None:
        """Six GPUs for three singles, but each node runs one member at most: ruled out by the bound."""
        snap = cluster(gpus("n1", 0, 0, 0), gpus("n2", 0, 0, 0))
        outcome = gangs.place_gang(snap, [single("a"), single("b"), single("c")], [node("n1"), node("n2")],
                                   features=FEATURES, node_holds=lambda indices, n: len(indices) < 2)
        assert isinstance(outcome, gangs.GangUnfit)
        assert outcome.attempts[0].reason == "at most 2 of the 3 members like a fit in it, even without the others"
        assert outcome.steps == 2  # each node tried alone, no search


class TestCallsSaved:
    def test_a_shapes_check_alone_is_not_reused_when_its_results_carry_share_ids(self) -> None:
        """Share IDs name the claim: two alike members on shareable devices, each alone on its own node
        (2 units of a 3-unit device: one per node), get the IDs their own claims would get, as when each
        is allocated by itself; the shape's check alone is reused only for results without any."""
        def shareable(node_name: str) -> SliceBuilder:
            return slice_(f"{node_name}-gpus", node=node_name, pool=node_name,
                          devices=[device("gpu-0").shared().capacity("memory", "3", default="2", min="1")])

        snap = cluster(shareable("n1"), shareable("n2"))
        members = [single("a"), single("b")]
        placed = gangs.place_gang(snap, members, [node("n1"), node("n2")], features=FEATURES)
        assert isinstance(placed, gangs.GangPlaced)
        assert [a.node for a in placed.assignments] == ["n1", "n2"]
        for member, assignment in zip(members, placed.assignments, strict=True):
            alone = allocation.allocate(snap, member.claims, node(assignment.node), features=FEATURES)
            assert isinstance(alone, outcomes.Allocated)
            (result,) = assignment.results[0].devices.results
            assert result.share_id is not None and result.share_id == alone.results[0].devices.results[0].share_id
        ids = {a.results[0].devices.results[0].share_id for a in placed.assignments}
        assert len(ids) == 2


def test_a_tenants_gang_is_not_told_how_many_devices_others_leave_free() -> None:
    """The operator's wording (usage=False) of the counting bound leaves out the free count, which changes
    whenever another tenant allocates (and would be rewritten on every member, issue 26)."""
    unfit = gangs.GangUnfit((gangs.DomainAttempt(None, 0, None, "the gang needs 6 devices, 4 are free",
                                                 "the gang needs 6 devices, more than are free"),), 0)
    assert unfit.message(3) == "gang of 3 does not fit: the gang needs 6 devices, 4 are free"
    assert unfit.message(3, usage=False) == "gang of 3 does not fit: the gang needs 6 devices, more than are free"


def test_an_empty_topology_value_is_a_domain_up_to_1_37_and_none_at_1_38() -> None:
    """kube-scheduler 1.38's TopologyPlacement skips nodes whose topology label is empty (read in
    v1.38.0-beta.0's topology_placement.go); 1.37's grouped them in the domain ""."""
    from dralloc.allocation.gangs import domains_of
    from dralloc.allocation.pools import NodeView

    nodes = [NodeView("a", {"rack": ""}), NodeView("b", {"rack": "r1"}), NodeView("c", {})]
    assert {k: [n.name for n in v] for k, v in domains_of(nodes, "rack").items()} == {"": ["a"], "r1": ["b"]}
    assert {k: [n.name for n in v] for k, v in domains_of(nodes, "rack", empty_is_domain=False).items()} == {
        "r1": ["b"]}
