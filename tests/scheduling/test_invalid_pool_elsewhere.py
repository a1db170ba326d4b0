"""An invalid pool on one node fails that node only (upstream's ErrFailedAllocationOnNode).

Found by tests/fuzz: a slice publishing a duplicate device made every pod that did not fit
on its node fail with an input error, instead of going to the next node.
"""

from __future__ import annotations

import pytest
from tests.builders import claim, class_, device, slice_, snapshot
from tests.scheduling.objects import node_

from dralloc import allocation
from dralloc.allocation import errors
from dralloc.allocation.features import Features
from dralloc.scheduling import placement

FEATURES = Features()


def _placer(free_on_b: int, policy: str = "first-fit") -> placement.Placer:
    slices = [
        # node-a: its GPUs are fine, but another pool there publishes d0 twice (invalid).
        slice_("a-gpus", pool="a", node="node-a", devices=[device("gpu-0")]),
        slice_("a-bad-1", driver="bad.example.com", pool="bad", node="node-a", slice_count=2,
               devices=[device("d0")]),
        slice_("a-bad-2", driver="bad.example.com", pool="bad", node="node-a", slice_count=2,
               devices=[device("d0")]),
        slice_("b-gpus", pool="b", node="node-b", devices=[device(f"gpu-{i}") for i in range(free_on_b)]),
    ]
    snap = snapshot(classes=[class_("gpu")], slices=slices)
    return placement.Placer(node_list=[node_("node-a"), node_("node-b")], snapshot=snap, features=FEATURES,
                            policy=policy)


def _item(name: str, count: int) -> placement.Item:
    return placement.Item(name, claims=(claim(name).request("r", "gpu", count=count).build(),))


def test_the_allocator_alone_still_raises_on_that_node() -> None:
    placer = _placer(2)
    with pytest.raises(errors.InvalidPoolOnNodeError, match="invalid resource pools were encountered"):
        allocation.allocate(placer.snapshot, _item("two", 2).claims, placer.views[0], features=FEATURES)


@pytest.mark.parametrize("policy", ["first-fit", "binpack", "spread"])
def test_a_claim_that_does_not_fit_next_to_an_invalid_pool_goes_to_the_next_node(policy: str) -> None:
    placer = _placer(2, policy)
    decision = placer.place(_item("two", 2))
    assert isinstance(decision, placement.Placement) and decision.node == "node-b"


def test_fitting_next_to_an_invalid_pool_is_fine() -> None:
    decision = _placer(0).place(_item("one", 1))
    assert isinstance(decision, placement.Placement) and decision.node == "node-a"


def test_nowhere_to_go_names_the_invalid_pool_on_its_node() -> None:
    decision = _placer(1).place(_item("two", 2))
    assert isinstance(decision, placement.NoPlacement)
    message = decision.message()
    assert "node-a: cannot allocate all claims on node node-a: invalid resource pools were encountered: " \
           "bad.example.com/bad (duplicate device name d0)" in message
    assert "node-b: claim default/two, request r:" in message
