"""Which pods of a scheduling pass's run are decided as one batch (`handlers.batches.plan`).

Stretches of two or more consecutive pods that may be batched and share a priority; every other
pod alone, in the run's order. Pods of another priority never share a batch, so a batch cannot
reorder priorities; a pod that names a shared claim, has volumes to bind or already holds claims
is decided alone; so is one a batch already left unplaced (`alone`).
"""

from __future__ import annotations

import pytest

from dralloc.handlers import batches
from dralloc.model import conversion, pods
from dralloc.scheduling import placement

B = batches.Batch


def _pod(name: str, priority: int = 0, *, shared: bool = False, volume: bool = False) -> pods.Pod:
    claims = [{"name": "gpu", "resourceClaimName": "shared"} if shared
              else {"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]
    spec: dict[str, object] = {"containers": [{"name": "main", "image": "busybox"}], "priority": priority,
                               "resourceClaims": claims}
    if volume:
        spec["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]
    return conversion.parse_as(pods.Pod, {"metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}"},
                                          "spec": spec})


def _run(*specs: pods.Pod) -> list[tuple[pods.Pod, placement.Item]]:
    return [(pod, placement.Item(pod.metadata.name, pod=pod)) for pod in specs]


@pytest.mark.parametrize(("run", "orders", "alone", "expected"), [
    (_run(_pod("a"), _pod("b"), _pod("c")), 4, set(), [B((0, 1, 2))]),
    # one by one
    (_run(_pod("a"), _pod("b"), _pod("c")), 1, set(), [0, 1, 2]),
    # a batch of one is a pod alone
    (_run(_pod("a")), 4, set(), [0]),
    # priorities never share a batch
    (_run(_pod("a", 10), _pod("b", 10), _pod("c"), _pod("d")), 4, set(), [B((0, 1)), B((2, 3))]),
    (_run(_pod("a", 10), _pod("b"), _pod("c", 10)), 4, set(), [0, 1, 2]),
    # a shared claim, a volume: alone, and the stretch is cut there
    (_run(_pod("a"), _pod("b", shared=True), _pod("c"), _pod("d")), 4, set(), [0, 1, B((2, 3))]),
    (_run(_pod("a"), _pod("b"), _pod("c", volume=True)), 4, set(), [B((0, 1)), 2]),
    # left unplaced by a batch: alone
    (_run(_pod("a"), _pod("b"), _pod("c")), 4, {"uid-b"}, [0, 1, 2]),
    (_run(_pod("a"), _pod("b"), _pod("c")), 4, {"uid-a"}, [0, B((1, 2))]),
])
def test_plan(run: list[tuple[pods.Pod, placement.Item]], orders: int, alone: set[str],
              expected: list[batches.Unit]) -> None:
    assert batches.plan(run, orders, alone) == expected


def test_a_pod_holding_allocated_claims_is_alone() -> None:
    """An earlier attempt's reservations restrict it to their node: nothing to reorder."""
    from tests.builders import claim

    a, b = _pod("a"), _pod("b")
    held = placement.Item("b", pod=b, allocated=(claim("mine").request("gpu", "gpu").build(),))
    assert batches.plan([(a, placement.Item("a", pod=a)), (b, held)], 4, set()) == [0, 1]
