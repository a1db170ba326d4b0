"""The fragmentation-aware policy and topology domains: a request whose devices must share one.

Each node has 8 GPUs in two NVLink domains of 4 (attribute `nvlink`); a request for 4 GPUs
with `matchAttribute: gpu.example.com/nvlink` needs one whole domain. The measure counts a
domain with fewer usable GPUs than such a request as lost to it, so single GPUs go where
they break no domain still whole.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from tests.scheduling.objects import place_all as place
from tests.scheduling.objects import placer_of

from dralloc.allocation.features import Features
from dralloc.model import claims, conversion
from dralloc.offline import optimizing
from dralloc.scheduling import placement

FEATURES = Features.from_gates({}, release="1.37")
DRIVER = "gpu.example.com"
CLASS = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"},
         "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}}


def node_objects(name: str) -> list[dict[str, Any]]:
    gpus = [{"name": f"gpu-{i}", "attributes": {"index": {"int": i}, "nvlink": {"int": i // 4}, "host": {"string": name}}}
            for i in range(8)]
    return [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
             "status": {"allocatable": {"cpu": "64", "memory": "256Gi", "pods": "110"}}},
            {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{name}-gpus"},
             "spec": {"driver": DRIVER, "nodeName": name, "pool": {"name": name, "generation": 1,
                                                                   "resourceSliceCount": 1}, "devices": gpus}}]


def item(name: str, count: int = 1, *, one_domain: bool = False, index: int | None = None, host: str = "a",
         constraint_requests: Sequence[str] = ()) -> placement.Item:
    """`index`: pinned to that GPU of node `host`."""
    exactly: dict[str, Any] = {"deviceClassName": "gpu", "count": count}
    if index is not None:
        exactly["selectors"] = [{"cel": {"expression": f'device.attributes["{DRIVER}"].index == {index} && '
                                                       f'device.attributes["{DRIVER}"].host == "{host}"'}}]
    spec: dict[str, Any] = {"devices": {"requests": [{"name": "gpus", "exactly": exactly}]}}
    if one_domain:
        spec["devices"]["constraints"] = [{"matchAttribute": f"{DRIVER}/nvlink",
                                           "requests": list(constraint_requests)}]
    claim = conversion.parse_as(claims.ResourceClaim, {"metadata": {"name": name, "namespace": "default"},
                                                       "spec": spec})
    return placement.Item(name, claims=(claim,))


WORKLOAD = [item("island", 4, one_domain=True), item("single")]


class TestWhyThisDevice:
    def test_single_gpu_keeps_the_whole_domain_whole(self) -> None:
        """gpu-4 (domain 1) is in use: a single GPU goes to domain 1 (gpu-5), so domain 0 stays whole
        and a 4-GPU island still fits; first-fit takes gpu-0, and the island then fits nowhere."""
        for policy, single, island in (("fragmentation-aware", "a/gpu-5", "a/gpu-0,gpu-1,gpu-2,gpu-3"),
                                       ("first-fit", "a/gpu-0", None)):
            p = placer_of([CLASS, *node_objects("a")], policy, FEATURES)
            p.expect(WORKLOAD)
            assert place(p, [item("pinned", index=4)]) == ["a/gpu-4"]
            assert place(p, [item("one"), item("four", 4, one_domain=True)]) == [single, island], policy


class TestWhyThisNode:
    def test_island_goes_where_it_breaks_nothing_else(self) -> None:
        """Node a has a GPU in use in each domain (no island fits), node b is untouched: the island
        goes to b whatever the policy; a single GPU then goes to a (b keeps its other island)."""
        p = placer_of([CLASS, *node_objects("a"), *node_objects("b")], "fragmentation-aware", FEATURES)
        p.expect(WORKLOAD)
        assert place(p, [item("p0", index=0), item("p4", index=4)]) == ["a/gpu-0", "a/gpu-4"]
        assert place(p, [item("four", 4, one_domain=True), item("one")]) == ["b/gpu-0,gpu-1,gpu-2,gpu-3", "a/gpu-1"]


class TestModel:
    def test_domains_are_measured_and_the_fit_is_exact(self) -> None:
        """The model knows the island does not fit a node with a GPU in use in each domain: it is
        not tried there (no allocator call), though 6 GPUs are free."""
        p = placer_of([CLASS, *node_objects("a")], "fragmentation-aware", FEATURES)
        p.expect(WORKLOAD)
        assert place(p, [item("p0", index=0), item("p4", index=4)]) == ["a/gpu-0", "a/gpu-4"]
        calls = p.allocator_calls
        assert place(p, [item("four", 4, one_domain=True)]) == [None]
        assert p.allocator_calls == calls

    def test_a_constraint_across_requests_is_not_modelled(self) -> None:
        """A matchAttribute over two requests is not described: the item gets no preference and the
        allocator places it (first fit) where the constraint holds."""
        p = placer_of([CLASS, *node_objects("a")], "fragmentation-aware", FEATURES)
        p.expect(WORKLOAD)
        request = {"deviceClassName": "gpu", "count": 2}
        claim = conversion.parse_as(claims.ResourceClaim, {"metadata": {"name": "two", "namespace": "default"}, "spec": {
            "devices": {"requests": [{"name": "x", "exactly": request}, {"name": "y", "exactly": request}],
                        "constraints": [{"matchAttribute": f"{DRIVER}/nvlink"}]}}})
        two = placement.Item("two", claims=(claim,))
        assert p._model_shape(two) is None
        assert place(p, [item("p0", index=0), two]) == ["a/gpu-0", "a/gpu-4,gpu-5,gpu-6,gpu-7"]


def test_the_exact_solver_keeps_each_request_in_one_domain() -> None:
    """`simulate --optimal`: two 4-GPU islands fit an empty node (one per domain), not three. Two
    islands of 3 and one of 2 are 8 GPUs, but after the 3s each domain has 1 left: 2 of them."""
    pytest.importorskip("ortools", reason="the exact solver needs OR-Tools: pip install ortools (the test extra)")
    p = placer_of([CLASS, *node_objects("a")], "fragmentation-aware", FEATURES)
    optimum = optimizing.solve(p, [item(f"four-{i}", 4, one_domain=True) for i in range(3)], time_limit=10)
    assert (optimum.items, optimum.left_out, optimum.best, optimum.proven) == (3, 0, 2, True)
    mixed = [item("three-0", 3, one_domain=True), item("three-1", 3, one_domain=True), item("two", 2, one_domain=True)]
    optimum = optimizing.solve(p, mixed, time_limit=10)
    assert (optimum.best, optimum.proven) == (2, True)
