"""NoPlacement: why an item fits nowhere, grouped by reason, and its readable message."""

from __future__ import annotations

from typing import Any

from tests.builders import claim, class_, device, result, slice_, snapshot
from tests.scheduling.objects import node_, node_taint, pod_

from dralloc.allocation.features import Features
from dralloc.model import claims as model_claims
from dralloc.model import conversion
from dralloc.scheduling import placement

FEATURES = Features()
IN_USE = "claim default/x, request r: 0 of 1 devices of class gpu usable, 1 needed (removed: 1 in use)"
NO_DEVICES = "claim default/x, request r: 0 of 0 devices of class gpu usable, 1 needed"


def placer(nodes: dict[str, dict[str, Any]], *, gpus: dict[str, int], used: dict[str, int] | None = None,
           budget: int | None = None) -> placement.Placer:
    """Nodes (name -> node_ fields) with node-local GPUs, `used[name]` of them in use."""
    slices, allocated = [], []
    for name, count in gpus.items():
        slices.append(slice_(name, pool=name, node=name, devices=[device(f"gpu-{i}") for i in range(count)]))
        taken = (used or {}).get(name, 0)
        if taken:
            allocated.append(claim(f"old-{name}").request("r", "gpu", count=taken).allocated(
                *[result("r", f"gpu-{i}", pool=name) for i in range(taken)]))
    snap = snapshot(classes=[class_("gpu")], slices=slices, allocated=allocated)
    extra: dict[str, Any] = {} if budget is None else {"budget": budget}
    return placement.Placer(node_list=[node_(n, **f) for n, f in nodes.items()], snapshot=snap, features=FEATURES,
                            **extra)


def gpu_item(count: int = 1, **pod_fields: Any) -> placement.Item:
    claims = (claim("x").request("r", "gpu", count=count).build(),)
    return placement.Item("p", claims=claims, pod=pod_("p", **pod_fields) if pod_fields else None)


def shared_claim(node: str) -> model_claims.ResourceClaim:
    """A claim already allocated, usable only from `node`."""
    raw = claim("shared").request("r", "gpu").allocated(result("r", "gpu-0", pool=node)).raw()
    raw["status"]["allocation"]["nodeSelector"] = {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]}
    parsed: model_claims.ResourceClaim = conversion.parse_as(model_claims.ResourceClaim, raw)
    return parsed


class TestGrouping:
    def test_nodes_grouped_by_reason(self) -> None:
        """Nodes with one reason share an entry; bigger groups first, then by reason text; nodes sorted."""
        gpu_node = {"labels": {"pool": "gpu"}}
        p = placer({"e": {}, "d": gpu_node | {"taints": [node_taint("dedicated")]}, "c": gpu_node, "b": gpu_node,
                    "a": {}}, gpus={"b": 1, "c": 1, "d": 1}, used={"b": 1, "c": 1})
        decision = p.place(gpu_item(node_selector={"pool": "gpu"}))
        assert decision == placement.NoPlacement((
            (IN_USE, ("b", "c")),
            ("node(s) didn't match Pod's node affinity/selector", ("a", "e")),
            ("node(s) had untolerated taint(s)", ("d",)),
        ))

    def test_node_fit_reason_for_resources(self) -> None:
        """A node without enough cpu is reported with the node-fit reason, not an allocator one."""
        decision = placer({"a": {"cpu": "1"}}, gpus={"a": 1}).place(gpu_item(cpu="2"))
        assert isinstance(decision, placement.NoPlacement)
        assert decision.reasons == (("Insufficient cpu", ("a",)),)

    def test_allocator_reason_for_node_without_devices(self) -> None:
        """A node that passes node fit but has no devices gets the allocator's reason."""
        decision = placer({"a": {}}, gpus={}).place(gpu_item())
        assert decision == placement.NoPlacement(((NO_DEVICES, ("a",)),))

    def test_allocator_reason_counts_devices_removed(self) -> None:
        """The allocator's reason says how many devices were usable and why the rest were removed."""
        decision = placer({"a": {}}, gpus={"a": 3}, used={"a": 1}).place(gpu_item(count=3))
        assert isinstance(decision, placement.NoPlacement)
        assert decision.reasons == (
            ("claim default/x, request r: 2 of 3 devices of class gpu usable, 3 needed (removed: 1 in use)", ("a",)),)

    def test_shared_claim_allocated_elsewhere(self) -> None:
        """A pod sharing a claim allocated for node a cannot go to node b, and says so."""
        p = placer({"a": {"cpu": "1"}, "b": {"cpu": "4"}}, gpus={"a": 1})
        item = placement.Item("p", pod=pod_("p", cpu="2"), allocated=(shared_claim("a"),))
        decision = p.place(item)
        assert decision == placement.NoPlacement((
            ("Insufficient cpu", ("a",)),
            ("a shared claim is allocated for other nodes", ("b",)),
        ))

    def test_place_returns_what_explain_says(self) -> None:
        """place()'s NoPlacement is the same as a direct explain() of the item."""
        p = placer({"a": {}, "b": {"cpu": "1"}}, gpus={"a": 1}, used={"a": 1})
        item = gpu_item(cpu="2")
        assert p.place(item) == p.explain(item)

    def test_explanation_follows_commits(self) -> None:
        """After a commit changes the cluster, the explanation of the same item is recomputed."""
        p = placer({"a": {}, "b": {}}, gpus={"a": 1, "b": 1})
        big = gpu_item(count=2)
        before = p.place(big)
        small = placement.Item("s", claims=(claim("s").request("r", "gpu").build(),))
        placed = p.place(small)
        assert isinstance(placed, placement.Placement)
        p.commit(small, placed)
        after = p.place(big)
        assert before == placement.NoPlacement(
            (("claim default/x, request r: 1 of 1 devices of class gpu usable, 2 needed", ("a", "b")),))
        assert after == placement.NoPlacement((
            ("claim default/x, request r: 0 of 1 devices of class gpu usable, 2 needed (removed: 1 in use)", ("a",)),
            ("claim default/x, request r: 1 of 1 devices of class gpu usable, 2 needed", ("b",)),
        ))

    def test_no_nodes(self) -> None:
        """Without nodes there are no reasons, and the message says there are no nodes."""
        decision = placer({}, gpus={}).place(gpu_item())
        assert decision == placement.NoPlacement(())
        assert isinstance(decision, placement.NoPlacement) and decision.message() == "no nodes"


class TestBudget:
    def test_budget_exhausted_is_flagged(self) -> None:
        """A search that runs out of steps is reported as budget exhausted, with its own message."""
        decision = placer({"a": {}}, gpus={"a": 4}, budget=1).place(gpu_item(count=3))
        assert isinstance(decision, placement.NoPlacement)
        assert decision.budget_exhausted is True
        assert "without a decision" in decision.message()

    def test_budget_exhaustion_is_not_cached_as_failure(self) -> None:
        """Running out of budget is not a proven failure: the next place() asks the allocator again."""
        p = placer({"a": {}}, gpus={"a": 4}, budget=1)
        p.place(gpu_item(count=3))
        calls = p.allocator_calls
        p.place(gpu_item(count=3))
        assert p.allocator_calls == calls + 1

    def test_proven_failure_is_cached(self) -> None:
        """A proven failure of an item shape is not asked again until something changes on the node."""
        p = placer({"a": {}}, gpus={"a": 1})
        p.place(gpu_item(count=2))
        calls = p.allocator_calls
        p.place(gpu_item(count=2))
        assert p.allocator_calls == calls


class TestMessage:
    def test_one_node(self) -> None:
        """One node: 'NODE: reason'."""
        assert placement.NoPlacement((("Too many pods", ("a",)),)).message() == "a: Too many pods"

    def test_two_or_three_nodes_listed(self) -> None:
        """Up to three nodes are listed after the count."""
        decision = placement.NoPlacement((("Insufficient cpu", ("a", "b", "c")),))
        assert decision.message() == "3 nodes (a, b, c): Insufficient cpu"

    def test_more_than_three_nodes_elided(self) -> None:
        """Past three nodes, the list ends with '...'."""
        decision = placement.NoPlacement((("Insufficient cpu", ("a", "b", "c", "d")),))
        assert decision.message() == "4 nodes (a, b, c, ...): Insufficient cpu"

    def test_reasons_joined_with_semicolons(self) -> None:
        """Reasons appear in order, separated by '; '."""
        decision = placement.NoPlacement((("Insufficient cpu", ("a", "b")), ("Too many pods", ("c",))))
        assert decision.message() == "2 nodes (a, b): Insufficient cpu; c: Too many pods"

    def test_limit_counts_the_rest(self) -> None:
        """Reasons beyond the limit are counted, not listed."""
        decision = placement.NoPlacement(tuple((f"reason {i}", (f"n{i}",)) for i in range(4)))
        assert decision.message(limit=2) == "n0: reason 0; n1: reason 1; ... and 2 more reasons"


class TestExplanationCache:
    def test_explanation_names_the_items_own_claim(self) -> None:
        """Two unplaceable items of one shape: each explanation names its own claim."""
        p = placer({"a": {}}, gpus={"a": 1})
        p.place(placement.Item("c1", claims=(claim("c1").request("r", "gpu", count=2).build(),)))
        second = p.place(placement.Item("c2", claims=(claim("c2").request("r", "gpu", count=2).build(),)))
        assert isinstance(second, placement.NoPlacement)
        assert second.message() == "a: claim default/c2, request r: 1 of 1 devices of class gpu usable, 2 needed"
