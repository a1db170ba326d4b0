"""An allocator error met on one node's device does not decide the pod when another node fits.

The issue's case: a class selector `device.attributes["d"].numa == 0`, one node's device has
`numa: 0`, the other's has no such attribute (a CEL runtime error there). kube-scheduler runs
the allocator on every node it examines and fails the attempt on that error; dralloc used to
stop at the first node by name, so the pod was bound or failed depending on the node names.
Now the answer depends only on whether some node fits (a documented difference,
scheduling/placement.py): bound there; when no node fits, the error is raised.
"""

from __future__ import annotations

import pytest
from tests.builders import claim, class_, device, slice_, snapshot
from tests.scheduling.objects import node_

from dralloc.allocation import errors
from dralloc.allocation.features import Features
from dralloc.scheduling import placement

FEATURES = Features()
SELECTOR = 'device.attributes["d"].numa == 0'


def _placer(good: str, bad: str, *, good_has_room: bool = True, policy: str = "first-fit") -> placement.Placer:
    slices = [slice_(f"{bad}-gpus", pool=bad, node=bad, devices=[device("gpu-0")])]
    if good_has_room:
        slices.append(slice_(f"{good}-gpus", pool=good, node=good,
                             devices=[device("gpu-0").attr("d/numa", 0)]))
    snap = snapshot(classes=[class_("gpu", SELECTOR)], slices=slices)
    return placement.Placer(node_list=[node_(good), node_(bad)], snapshot=snap, features=FEATURES, policy=policy)


def _item(name: str = "p") -> placement.Item:
    return placement.Item(name, claims=(claim(name).request("r", "gpu").build(),))


@pytest.mark.parametrize(("good", "bad"), [("n0", "n1"), ("n1", "n0")], ids=["erroring-node-last", "erroring-node-first"])
@pytest.mark.parametrize("policy", ["first-fit", "binpack", "spread"])
def test_the_node_that_fits_wins_whatever_the_node_names(good: str, bad: str, policy: str) -> None:
    decision = _placer(good, bad, policy=policy).place(_item())
    assert isinstance(decision, placement.Placement) and decision.node == good


@pytest.mark.parametrize(("good", "bad"), [("n0", "n1"), ("n1", "n0")], ids=["erroring-node-last", "erroring-node-first"])
def test_when_no_node_fits_the_error_is_raised(good: str, bad: str) -> None:
    placer = _placer(good, bad, good_has_room=False)
    with pytest.raises(errors.DeviceSelectorError, match="CEL runtime error"):
        placer.place(_item("first"))
    with pytest.raises(errors.DeviceSelectorError):  # the next pod of that shape skips the node, not the error
        placer.place(_item("second"))


def test_an_error_on_every_node_is_still_an_error_of_the_pod() -> None:
    """A class that does not exist holds on every node: raised at once, as upstream."""
    snap = snapshot(classes=[], slices=[slice_("s", pool="n0", node="n0", devices=[device("gpu-0")])])
    placer = placement.Placer(node_list=[node_("n0")], snapshot=snap, features=FEATURES)
    with pytest.raises(errors.UnknownClassError):
        placer.place(_item())
