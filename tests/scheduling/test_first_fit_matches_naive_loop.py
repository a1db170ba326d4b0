"""First-fit `Placer` == the naive loop: every node in name order, from scratch, for every item.

The Placer skips nodes its failure cache already knows cannot take an item shape; that must
never change an answer. Workloads mix claim shapes (one, two, a class with a selector,
matchAttribute pairs, sizes that fit nowhere, two claims together), pods with node selectors,
tolerations and cpu requests (with and without claims), and `release` calls in between.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.builders import claim, device, slice_
from tests.scheduling import workloads
from tests.scheduling.objects import node_, pod_

from dralloc.allocation.features import Features
from dralloc.allocation.snapshots import Snapshot
from dralloc.scheduling import placement

SEEDS = range(12)


def _compare(s: workloads.Scenario) -> None:
    naive = workloads.run_naive(s)
    placed, _ = workloads.run_placer(s)
    for index, (want, got) in enumerate(zip(naive, placed, strict=True)):
        assert got == want, f"step {index} ({s.steps[index]}): placer {got}, naive {want}"


@pytest.mark.parametrize("seed", SEEDS, ids=[f"seed-{s}" for s in SEEDS])
def test_seeded_workload_with_releases(seed: int) -> None:
    """On node-local GPUs, with releases in between, every item lands where the naive loop puts it."""
    _compare(workloads.scenario(workloads.Seeded(random.Random(seed)), max_steps=16))


@pytest.mark.parametrize("seed", SEEDS, ids=[f"seed-{s}" for s in SEEDS])
def test_seeded_workload_with_network_pool(seed: int) -> None:
    """With an all-nodes pool as well, and releases, every item lands where the naive loop puts it."""
    _compare(workloads.scenario(workloads.Seeded(random.Random(1000 + seed)), network_pool=True, max_steps=16))


def test_seeded_workloads_exercise_every_path() -> None:
    """The seeded workloads include unplaceable items, releases of placed items, pods and bare claims."""
    unplaced = released = pods = claims_only = 0
    for seed in SEEDS:
        s = workloads.scenario(workloads.Seeded(random.Random(seed)), max_steps=16)
        answers = workloads.run_naive(s)
        for step, answer in zip(s.steps, answers, strict=True):
            if isinstance(step, workloads.Place):
                unplaced += answer is None
                pods += step.item.pod is not None
                claims_only += step.item.pod is None
            else:
                released += isinstance(s.steps[step.step], workloads.Place) and answers[step.step] is not None
    assert min(unplaced, released, pods, claims_only) > 0, (unplaced, released, pods, claims_only)


def test_cache_skips_nodes_known_to_fail() -> None:
    """Filling six one-GPU nodes one by one calls the allocator once per fit and once per full node.

    The naive loop would make 1 + 2 + ... + 6 = 21 calls; the cache makes 6 successes + 5 failures.
    """
    s = workloads.Scenario(
        node_list=tuple(node_(f"n{i}") for i in range(6)),
        slices=tuple(slice_(f"n{i}", pool=f"n{i}", node=f"n{i}", devices=[device("gpu-0")]) for i in range(6)),
        steps=tuple(workloads.Place(placement.Item(f"c{i}", claims=(claim(f"c{i}").request("r", "gpu").build(),)))
                    for i in range(6)),
    )
    answers, placer = workloads.run_placer(s)
    assert [a[0] if a else None for a in answers] == [f"n{i}" for i in range(6)]
    assert placer.allocator_calls == 11


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_property_first_fit_matches_naive_loop(data: st.DataObject) -> None:
    """For any small cluster and workload with releases, first-fit places exactly like the naive loop."""
    _compare(workloads.scenario(workloads.Drawn(data.draw), max_nodes=4, max_steps=10))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_property_first_fit_matches_naive_loop_with_network_pool(data: st.DataObject) -> None:
    """For any small cluster with an all-nodes pool, with releases, first-fit places like the naive loop."""
    _compare(workloads.scenario(workloads.Drawn(data.draw), network_pool=True, max_nodes=4, max_steps=10))


@pytest.mark.parametrize("shares", ["plain", "policies"])
@pytest.mark.parametrize("seed", SEEDS, ids=[f"seed-{s}" for s in SEEDS])
def test_seeded_workload_of_shares(seed: int, shares: str) -> None:
    """Shares of multi-allocatable GPUs (amounts of `compute`), with and without request policies,
    mixed with whole GPUs, pods and releases: every item lands where the naive loop puts it."""
    _compare(workloads.scenario(workloads.Seeded(random.Random(2000 + seed)), shares=shares, max_steps=20))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), st.sampled_from(["plain", "policies"]))
def test_property_first_fit_matches_naive_loop_with_shares(data: st.DataObject, shares: str) -> None:
    """For any small cluster of shareable GPUs and workload of shares, first-fit places like the naive loop."""
    _compare(workloads.scenario(workloads.Drawn(data.draw), shares=shares, network_pool=data.draw(st.booleans()),
                                max_nodes=4, max_steps=12))


def _share(name: str, milli: int) -> workloads.Place:
    return workloads.Place(placement.Item(name, claims=(claim(name).request("r", "gpu",
                                                                            capacity={"compute": milli}).build(),)))


def test_a_share_that_failed_on_a_node_rules_out_larger_shares_there() -> None:
    """Without request policies, a share of X milli-GPUs that did not fit a node proves that no
    larger share of the same request fits there: 700 fills node a's GPU, so 400 fails on a and
    goes to b; 500 then skips a without asking the allocator. Answers are the naive loop's."""
    s = workloads.Scenario(
        node_list=(node_("a"), node_("b")),
        slices=tuple(slice_(n, pool=n, node=n, devices=[device("gpu-0").shared().capacity("compute", 1000)])
                     for n in ("a", "b")),
        steps=(_share("s0", 700), _share("s1", 400), _share("s2", 500)),
    )
    _compare(s)
    answers, placer = workloads.run_placer(s)
    assert [a[0] if a else None for a in answers] == ["a", "b", "b"]
    assert placer.allocator_calls == 1 + 2 + 1


def test_with_a_request_policy_anywhere_failed_shares_are_not_generalized() -> None:
    """One device with a request policy (valid values round amounts) turns the rule off: after
    400 failed on node a, 500 is asked on a again (the answers stay the naive loop's)."""
    s = workloads.Scenario(
        node_list=(node_("a"), node_("b")),
        slices=(slice_("a", pool="a", node="a", devices=[device("gpu-0").shared().capacity("compute", 1000)]),
                slice_("b", pool="b", node="b",
                       devices=[device("gpu-0").shared().capacity("compute", 1000, valid_values=(300, 1000))])),
        steps=(_share("s0", 700), _share("s1", 400), _share("s2", 500)),
    )
    _compare(s)
    answers, placer = workloads.run_placer(s)
    assert [a[0] if a else None for a in answers] == ["a", "b", None]
    assert placer.allocator_calls == 1 + 2 + 2


def test_release_of_network_device_reopens_other_nodes() -> None:
    """After releasing a device of an all-nodes pool on node b, the first node by name (a) gets the next claim.

    Regression: release() used to forget cached failures only on the released node.
    """
    s = workloads.Scenario(
        node_list=(node_("a"), node_("b", labels={"pin": "b"})),
        slices=(slice_("fabric", pool="fabric", all_nodes=True, devices=[device("d0")]),),
        steps=(
            workloads.Place(placement.Item("p1", claims=(claim("c1").request("r", "gpu").build(),),
                                           pod=pod_("p1", node_selector={"pin": "b"}))),
            workloads.Place(placement.Item("c2", claims=(claim("c2").request("r", "gpu").build(),))),
            workloads.Release(0),
            workloads.Place(placement.Item("c3", claims=(claim("c3").request("r", "gpu").build(),))),
        ),
    )
    _compare(s)



def test_a_count_that_failed_on_a_node_rules_out_larger_counts_there() -> None:
    """A claim for N GPUs that failed on a node is proof for N+1 and more of the same request there.

    Answers are the naive loop's. Allocator calls: c0 on a (fits); c1 on a (full: fails) and b;
    c2 (2 GPUs) skips a, fails on b, fits c; c3 skips a and b, fails on c; c9 skips all three
    (then explained, which calls the allocator apart). Without the rule: 1 + 2 + 3 + 3 + 3 = 12.
    """
    s = workloads.Scenario(
        node_list=(node_("a"), node_("b"), node_("c")),
        slices=(slice_("a", pool="a", node="a", devices=[device("gpu-0")]),
                slice_("b", pool="b", node="b", devices=[device("gpu-0")]),
                slice_("c", pool="c", node="c", devices=[device(f"gpu-{i}") for i in range(3)])),
        steps=tuple(workloads.Place(placement.Item(name, claims=(claim(name).request("r", "gpu", count=count).build(),)))
                    for name, count in (("c0", 1), ("c1", 1), ("c2", 2), ("c3", 3), ("c9", 9))),
    )
    _compare(s)
    answers, placer = workloads.run_placer(s)
    assert [a[0] if a else None for a in answers] == ["a", "b", "c", None, None]
    assert placer.allocator_calls == 1 + 2 + 2 + 1 + 0


def test_pods_that_differ_only_in_their_pod_level_requests_are_not_judged_alike() -> None:
    """A failure is remembered per shape: pod-level `spec.resources` is part of it, so a pod asking less at
    the pod level is not refused because a larger one was."""
    snap = Snapshot.build(device_classes=[], resource_slices=[], features=Features())
    placer = placement.Placer(node_list=[node_("n1", cpu="2")], snapshot=snap, features=Features())
    large = pod_("large", cpu="1", spec_extra={"resources": {"requests": {"cpu": "3"}}})
    small = pod_("small", cpu="1", spec_extra={"resources": {"requests": {"cpu": "1"}}})
    assert isinstance(placer.place(placement.Item("large", pod=large)), placement.NoPlacement)
    decision = placer.place(placement.Item("small", pod=small))
    assert isinstance(decision, placement.Placement) and decision.node == "n1"
