"""The fragmentation-aware policy on partitions: GPUs shared through counters, not capacity.

Each GPU is a counter set `gpu-<i>` with 4 `slices` (quarters); its partitions are devices
that take 1, 2, 3 or 4 slices of it (4 + 2 + 1 + 1 devices). The model measures a counter
set as one shareable device whose capacities are its counters, used up by the allocated
partitions; a request takes what its partition takes. The allocator decides every
placement; the policy orders nodes and offers the partitions of the counter set it chose.
"""

from __future__ import annotations

import pathlib
from collections.abc import Sequence
from typing import Any

import yaml
from tests.scheduling.objects import place_all as place
from tests.scheduling.objects import placer_of

from dralloc.allocation.features import Features
from dralloc.model import claims, conversion, pods
from dralloc.scheduling import placement

FEATURES = Features.from_gates({}, release="1.37")
DRIVER = "gpu.example.com"
SIZES = {1: 4, 2: 2, 3: 1, 4: 1}  # slices a partition takes -> partitions of that size per GPU


def node_objects(name: str, gpus: int = 2, cpu: str = "32", *, two_sets: bool = False) -> list[dict[str, Any]]:
    """A Node with `gpus` partitionable GPUs: one slice of counter sets, one of partitions.
    `two_sets`: every partition also draws on a node-wide counter set (not modelled as one)."""
    sets = [{"name": f"gpu-{g}", "counters": {"slices": {"value": "4"}}} for g in range(gpus)]
    if two_sets:
        sets.append({"name": "node", "counters": {"slices": {"value": str(4 * gpus)}}})
    partitions = []
    for g in range(gpus):
        for size, count in SIZES.items():
            for j in range(count):
                consumes = [{"counterSet": f"gpu-{g}", "counters": {"slices": {"value": str(size)}}}]
                if two_sets:
                    consumes.append({"counterSet": "node", "counters": {"slices": {"value": str(size)}}})
                partitions.append({"name": f"gpu-{g}-{size}q-{j}", "attributes": {"slices": {"int": size},
                                                                                  "index": {"int": g}},
                                   "consumesCounters": consumes})
    pool = {"name": name, "generation": 1, "resourceSliceCount": 2}
    return [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
         "status": {"allocatable": {"cpu": cpu, "memory": "64Gi", "pods": "110"}}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{name}-counters"},
         "spec": {"driver": DRIVER, "nodeName": name, "pool": pool, "sharedCounters": sets}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{name}-partitions"},
         "spec": {"driver": DRIVER, "nodeName": name, "pool": pool, "devices": partitions}},
    ]


def placer(objects: Sequence[dict[str, Any]], policy: str) -> placement.Placer:
    device_class = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"},
                    "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}}
    return placer_of([device_class, *objects], policy, FEATURES)


def item(name: str, slices: int, count: int = 1, cpu: str = "1") -> placement.Item:
    """A pod asking for `count` partitions of `slices` quarters each."""
    request = {"name": "gpu", "exactly": {"deviceClassName": "gpu", "count": count, "selectors": [
        {"cel": {"expression": f'device.attributes["{DRIVER}"].slices == {slices}'}}]}}
    claim = conversion.parse_as(claims.ResourceClaim, {"metadata": {"name": f"{name}-gpu", "namespace": "default"},
                                                       "spec": {"devices": {"requests": [request]}}})
    pod = conversion.parse_as(pods.Pod, {"metadata": {"name": name, "namespace": "default"}, "spec": {
        "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": cpu}}}]}})
    return placement.Item(name, claims=(claim,), pod=pod)


WORKLOAD = [item("whole", 4), item("quarter", 1), item("half", 2)]


class TestModel:
    def test_a_counter_set_is_one_device_used_up_by_its_allocated_partitions(self) -> None:
        """Two GPUs: the model sees two devices of 4 slices; a half partition on gpu-0 leaves 2."""
        p = placer(node_objects("a"), "fragmentation-aware")
        p.expect(WORKLOAD)
        assert p.model is not None
        assert [d[1] for d in p.model.state(0)[0]] == [(4,), (4,)]
        assert place(p, [item("h", 2)]) == ["a/gpu-0-2q-0"]
        assert [d[1] for d in p.model.state(0)[0]] == [(2,), (4,)]

    def test_used_up_counters_rule_the_node_out_without_an_allocator_call(self) -> None:
        """Two halves use up the GPU's slices; its quarter partitions are all unallocated, but the
        model counts the counters, so a quarter is not tried there at all."""
        p = placer(node_objects("a", gpus=1), "fragmentation-aware")
        p.expect(WORKLOAD)
        assert place(p, [item("h1", 2), item("h2", 2)]) == ["a/gpu-0-2q-0", "a/gpu-0-2q-1"]
        calls = p.allocator_calls
        assert place(p, [item("q", 1)]) == [None]
        assert p.allocator_calls == calls

    def test_partitions_drawing_on_two_sets_are_measured_as_devices(self) -> None:
        """A partition that also draws on a node-wide set is not folded into one counter set: the
        model counts each as a device of its own, free until allocated. That keeps its fit a
        necessary condition (the node is still asked); the allocator refuses what the counters
        do not allow."""
        p = placer(node_objects("a", gpus=1, two_sets=True), "fragmentation-aware")
        p.expect(WORKLOAD)
        assert p.model is not None and p.model.exact
        assert len(p.model.state(0)[0]) == sum(SIZES.values())
        calls = p.allocator_calls
        assert place(p, [item("h", 2), item("q1", 1), item("q2", 1), item("q3", 1)]) == [
            "a/gpu-0-2q-0", "a/gpu-0-1q-0", "a/gpu-0-1q-1", None]
        assert p.allocator_calls == calls + 4


class TestWhyThisPartition:
    def test_quarter_completes_the_used_gpu(self) -> None:
        """gpu-0 free, gpu-1 with a half in use: a quarter goes to gpu-1, so gpu-0 stays whole for
        the whole-GPU shape; first-fit takes the first quarter partition, on gpu-0."""
        for policy, expected in (("fragmentation-aware", "a/gpu-1-1q-0"), ("first-fit", "a/gpu-0-1q-0")):
            p = placer(node_objects("a"), policy)
            p.expect(WORKLOAD)
            whole = item("whole", 4)
            decision = p.place(whole)
            assert isinstance(decision, placement.Placement)
            p.commit(whole, decision)
            assert place(p, [item("h", 2)]) == ["a/gpu-1-2q-0"]
            p.release("a", decision.results, whole.pod)
            assert place(p, [item("q", 1)]) == [expected], policy


class TestWhyThisNode:
    def test_half_goes_to_the_broken_gpu_not_the_whole_one(self) -> None:
        """Node a's GPU is untouched, node b's has a quarter in use: a half goes to b (a stays
        whole for the whole-GPU shape); first-fit takes a, the first node by name."""
        for policy, expected in (("fragmentation-aware", "b/gpu-0-2q-0"), ("first-fit", "a/gpu-0-2q-0")):
            p = placer([*node_objects("a", gpus=1), *node_objects("b", gpus=1)], policy)
            p.expect(WORKLOAD)
            whole = item("whole", 4)
            decision = p.place(whole)
            assert isinstance(decision, placement.Placement) and decision.node == "a"
            p.commit(whole, decision)
            assert place(p, [item("q", 1)]) == ["b/gpu-0-1q-0"]
            p.release("a", decision.results, whole.pod)
            assert place(p, [item("h", 2)]) == [expected], policy

    def test_fills_as_many_gpus_as_first_fit_on_quarters_only(self) -> None:
        """Identical single-partition requests: the policy places exactly as many as first-fit."""
        cluster = [*node_objects("a", gpus=2), *node_objects("b", gpus=1)]
        counts = {}
        for policy in ("first-fit", "fragmentation-aware"):
            p = placer(cluster, policy)
            quarters = [item(f"q{i}", 1) for i in range(14)]
            p.expect(quarters)
            counts[policy] = sum(w is not None for w in place(p, quarters))
        assert counts == {"first-fit": 12, "fragmentation-aware": 12}


class TestRealDriver:
    """dra-example-driver's partitionable GPUs (tests/offline/data/real-drivers): per GPU a full
    device and 4 partitions, all drawing on the GPU's counter set (memory 80Gi, compute 100)."""

    @staticmethod
    def claim_item(name: str, selector: str) -> placement.Item:
        request = {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com",
                                              "selectors": [{"cel": {"expression": selector}}]}}
        claim = conversion.parse_as(claims.ResourceClaim, {"metadata": {"name": name, "namespace": "default"},
                                                           "spec": {"devices": {"requests": [request]}}})
        return placement.Item(name, claims=(claim,))

    def test_counter_sets_are_measured_and_a_full_gpu_goes_where_they_allow(self) -> None:
        path = pathlib.Path(__file__).parents[1] / "offline" / "data" / "real-drivers" / \
            "example-driver-partitions-2x4.yaml"
        objects = [o for o in yaml.safe_load_all(path.read_text()) if o]
        p = placer_of(objects, "fragmentation-aware", FEATURES)
        partition = 'has(device.attributes["gpu.example.com"].partition)'
        full = 'has(device.attributes["gpu.example.com"].full)'
        p.expect([self.claim_item("p", partition), self.claim_item("f", full)])
        assert p.model is not None and p.model.exact
        gi = 2**30
        assert [d[1] for d in p.model.state(0)[0]] == [(100, 80 * gi), (100, 80 * gi)]  # compute, memory
        assert place(p, [self.claim_item("p1", partition), self.claim_item("f1", full),
                         self.claim_item("f2", full), self.claim_item("p2", partition)]) == [
            "dra-example-driver-cluster-worker/gpu-0-partition-0",
            "dra-example-driver-cluster-worker/gpu-1-full",  # gpu-0's counters have 75 compute left
            None,
            "dra-example-driver-cluster-worker/gpu-0-partition-1",
        ]
        assert [d[1] for d in p.model.state(0)[0]] == [(50, 40 * gi), (0, 0)]


class TestNotModelled:
    def test_two_partitions_of_one_gpu_for_one_request_are_left_to_the_allocator(self) -> None:
        """Two quarters in one request fit a 1-GPU node (two quarter partitions of one counter
        set); the measure counts a request's devices as distinct units, so it does not describe
        the request, and the item is placed by the allocator on the nodes in name order."""
        p = placer(node_objects("a", gpus=1), "fragmentation-aware")
        p.expect(WORKLOAD)
        pair = item("pair", 1, count=2)
        assert p._model_shape(pair) is None
        assert place(p, [pair]) == ["a/gpu-0-1q-0,gpu-0-1q-1"]

    def test_a_request_for_two_whole_gpus_is_modelled(self) -> None:
        """Two 4-quarter partitions cannot come from one counter set: distinct units are exact."""
        p = placer(node_objects("a"), "fragmentation-aware")
        p.expect(WORKLOAD)
        both = item("both", 4, count=2)
        assert p._model_shape(both) is not None
        assert place(p, [both]) == ["a/gpu-0-4q-0,gpu-1-4q-0"]
