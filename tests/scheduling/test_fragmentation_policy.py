"""The fragmentation-aware policy: why this node, why this device, and its properties.

Clusters and items are built with bench/traces.py's converter (GPUs as multi-allocatable
devices with a `compute` capacity of 1000, shares asking for part of it, CPU and memory
as node resources), then placed by the operator's Placer; the allocator decides, the
policy orders nodes and devices.
"""

from __future__ import annotations

from collections.abc import Sequence

import hypothesis.strategies as st
from bench import traces
from hypothesis import given, settings
from tests.scheduling.objects import placer_of

from dralloc.allocation.features import Features
from dralloc.model import claims, conversion, pods
from dralloc.scheduling import placement

FEATURES = Features.from_gates({}, release="1.37")


def task(name: str, gpus: int = 1, milli: int = 1000, cpu: int = 1000, memory: int = 1024,
         spec: tuple[str, ...] = ()) -> traces.TraceTask:
    return traces.TraceTask(name, cpu, memory, gpus, milli if gpus else 0, spec)


def item(t: traces.TraceTask) -> placement.Item:
    pod = conversion.parse_as(pods.Pod, traces.pod(t))
    if t.num_gpu == 0:
        return placement.Item(t.name, pod=pod)
    spec = traces.template(t)["spec"]["spec"]
    claim = conversion.parse_as(claims.ResourceClaim, {"metadata": {"name": f"{t.name}-gpu", "namespace": "trace"},
                                                       "spec": spec})
    return placement.Item(t.name, claims=(claim,), pod=pod)


def placer(trace_nodes: Sequence[traces.TraceNode], policy: str) -> placement.Placer:
    return placer_of(traces.snapshot_objects(trace_nodes), policy, FEATURES)


def place(p: placement.Placer, tasks: Sequence[traces.TraceTask]) -> list[str | None]:
    """Each task in order, committed; the node and devices of each (None: not placed)."""
    where: list[str | None] = []
    for t in tasks:
        it = item(t)
        decision = p.place(it)
        if isinstance(decision, placement.Placement):
            p.commit(it, decision)
            picked = ",".join(r.device for a in decision.results for r in a.devices.results)
            where.append(f"{decision.node}/{picked}" if picked else decision.node)
        else:
            where.append(None)
    return where


def node(name: str, gpus: int = 2, cpu: int = 32000, memory: int = 65536, model: str = "T4") -> traces.TraceNode:
    return traces.TraceNode(name, cpu, memory, gpus, model)


class TestWhyThisDevice:
    def test_share_avoids_the_whole_free_gpu(self) -> None:
        """gpu-0 free, gpu-1 with 600 used: a 400 share completes gpu-1 (gpu-0 stays whole for a
        whole-GPU task); first-fit puts it on gpu-0, the first device with room."""
        shapes = [task("w0"), task("w1"), task("s", milli=400)]
        for policy, expected in (("fragmentation-aware", "a/gpu-1"), ("first-fit", "a/gpu-0")):
            p = placer([node("a")], policy)
            p.expect(item(t) for t in shapes)
            # gpu-0 taken whole, 600 on gpu-1, then gpu-0 given back: gpu-0 free, gpu-1 at 600.
            whole = item(task("first"))
            decision = p.place(whole)
            assert isinstance(decision, placement.Placement)
            p.commit(whole, decision)
            assert place(p, [task("six", milli=600)]) == ["a/gpu-1"]
            p.release("a", decision.results, whole.pod)
            assert place(p, [task("four", milli=400)]) == [expected], policy


class TestWhyThisNode:
    def test_cpu_stranding_moves_a_cpu_task_away(self) -> None:
        """Node a has little CPU left over its two free GPUs; a CPU-only task of 6 cores would strand
        a's GPUs for the GPU tasks (8 cores each): it goes to b. First-fit takes a."""
        cluster = [node("a", cpu=12000), node("b", cpu=64000)]
        shapes = [task("g", cpu=8000), task("c", gpus=0, cpu=6000)]
        assert place(placer(cluster, "first-fit"), [task("cpu", gpus=0, cpu=6000)]) == ["a"]
        p = placer(cluster, "fragmentation-aware")
        p.expect(item(t) for t in shapes)
        assert place(p, [task("cpu", gpus=0, cpu=6000)]) == ["b"]

    def test_cpu_task_goes_where_the_gpus_are_used_up(self) -> None:
        """Both nodes keep room for every expected shape whatever the CPU-only task takes (equal
        growth, 0): it goes to b, whose GPUs whole tasks already hold, not to a, whose free GPUs
        its CPU would later strand. First-fit takes a."""
        cluster = [node("a", cpu=32000), node("b", cpu=32000)]
        shapes = [task("g", cpu=2000), task("c", gpus=0, cpu=4000)]
        results = {}
        for policy in ("first-fit", "fragmentation-aware"):
            p = placer(cluster, policy)
            p.expect(item(t) for t in shapes)
            # Four whole-GPU tasks fill both nodes, then the two on a are released: b's GPUs are
            # used up, a's are free, both with CPU to spare.
            held = []
            for n in range(4):
                it = item(task(f"w{n}", cpu=2000))
                decision = p.place(it)
                assert isinstance(decision, placement.Placement)
                p.commit(it, decision)
                held.append((it, decision))
            for it, decision in held:
                if decision.node == "a":
                    p.release("a", decision.results, it.pod)
            results[policy] = place(p, [task("cpu", gpus=0, cpu=4000)])
        assert results == {"first-fit": ["a"], "fragmentation-aware": ["b"]}

    def test_gpu_task_goes_where_the_cpu_left_matches_its_free_gpus(self) -> None:
        """The workload asks for 8 cores per GPU. A whole GPU with 8 cores grows nothing on either
        node (one GPU and enough CPU stay for the shape); b is left with 8 cores for its free GPU,
        a with 56: b, whose CPU matches what its free GPU will be asked for (a keeps its CPU for
        the GPUs of CPU-hungry tasks). First-fit takes a."""
        cluster = [node("a", cpu=64000), node("b", cpu=16000)]
        shapes = [task("g", cpu=8000)]
        assert place(placer(cluster, "first-fit"), [task("x", cpu=8000)]) == ["a/gpu-0"]
        p = placer(cluster, "fragmentation-aware")
        p.expect(item(t) for t in shapes)
        assert place(p, [task("x", cpu=8000)]) == ["b/gpu-0"]

    def test_share_goes_where_a_share_already_is(self) -> None:
        """Two empty 1-GPU nodes after one share on b: the next share joins it on b, so a stays whole
        for whole-GPU tasks (first-fit opens a)."""
        cluster = [node("a", gpus=1), node("b", gpus=1)]
        shapes = [task("w"), task("s", milli=300)]
        ff = placer(cluster, "first-fit")
        fa = placer(cluster, "fragmentation-aware")
        fa.expect(item(t) for t in shapes)
        # Put a share on b by filling a first, then releasing a.
        for p in (ff, fa):
            blocker = item(task("blocker"))
            decision = p.place(blocker)
            assert isinstance(decision, placement.Placement) and decision.node == "a"
            p.commit(blocker, decision)
            assert place(p, [task("s1", milli=300)]) == ["b/gpu-0"]
            p.release("a", decision.results, blocker.pod)
        assert place(ff, [task("s2", milli=300)]) == ["a/gpu-0"]
        assert place(fa, [task("s2", milli=300)]) == ["b/gpu-0"]

    def test_model_constraint_keeps_scarce_gpus_free(self) -> None:
        """Tasks that must run on V100 are expected: an unconstrained task goes to the T4 node."""
        cluster = [node("a-v100", model="V100M16"), node("b-t4", model="T4")]
        shapes = [task("v", spec=("V100M16",)), task("v2", spec=("V100M16",)), task("any")]
        p = placer(cluster, "fragmentation-aware")
        p.expect(item(t) for t in shapes)
        assert place(p, [task("x")]) == ["b-t4/gpu-0"]
        assert place(placer(cluster, "first-fit"), [task("x")]) == ["a-v100/gpu-0"]


class TestLearning:
    def test_without_expect_the_arrivals_are_the_distribution(self) -> None:
        """No `expect`: the shapes seen so far weigh the choice (the second 700 share completes gpu-0's
        300 rather than leaving it fragmented)."""
        p = placer([node("a")], "fragmentation-aware")
        assert place(p, [task("s", milli=300), task("w", milli=1000), task("t", milli=700)]) == [
            "a/gpu-0", "a/gpu-1", "a/gpu-0"]


cluster_shapes = st.lists(st.tuples(st.integers(1, 4), st.sampled_from(["T4", "P100"]), st.integers(4, 64)),
                          min_size=1, max_size=4)
task_shapes = st.lists(st.tuples(st.integers(0, 2), st.sampled_from([1000, 250, 500, 700]),
                                 st.integers(1, 16), st.sampled_from([(), ("T4",)])), min_size=1, max_size=14)


def _cluster(spec: list[tuple[int, str, int]]) -> list[traces.TraceNode]:
    return [node(f"n{i}", gpus=g, model=m, cpu=c * 1000) for i, (g, m, c) in enumerate(spec)]


def _tasks(spec: list[tuple[int, int, int, tuple[str, ...]]]) -> list[traces.TraceTask]:
    return [task(f"t{i}", gpus=g, milli=(m if g == 1 else 1000), cpu=c * 1000, spec=s)
            for i, (g, m, c, s) in enumerate(spec)]


class TestProperties:
    @settings(max_examples=40, deadline=None)
    @given(cluster_shapes, task_shapes)
    def test_deterministic(self, cluster: list[tuple[int, str, int]],
                           workload: list[tuple[int, int, int, tuple[str, ...]]]) -> None:
        """The same cluster and workload give the same nodes and devices, every time."""
        runs = []
        for _ in range(2):
            p = placer(_cluster(cluster), "fragmentation-aware")
            p.expect(item(t) for t in _tasks(workload))
            runs.append(place(p, _tasks(workload)))
        assert runs[0] == runs[1]

    @settings(max_examples=40, deadline=None)
    @given(cluster_shapes, st.integers(1, 20), st.sampled_from([1000, 400]))
    def test_identical_requests_place_as_many_as_first_fit(self, cluster: list[tuple[int, str, int]],
                                                           count: int, milli: int) -> None:
        """Identical single-device requests: the policy places exactly as many as first-fit."""
        tasks = [task(f"t{i}", milli=milli, cpu=1000) for i in range(count)]
        placed = {}
        for policy in ("first-fit", "fragmentation-aware"):
            p = placer(_cluster(cluster), policy)
            p.expect(item(t) for t in tasks)
            placed[policy] = sum(w is not None for w in place(p, tasks))
        assert placed["fragmentation-aware"] == placed["first-fit"]

    @settings(max_examples=40, deadline=None)
    @given(cluster_shapes, task_shapes)
    def test_orders_kept_across_decisions_equal_orders_built_afresh(
            self, cluster: list[tuple[int, str, int]], workload: list[tuple[int, int, int, tuple[str, ...]]]) -> None:
        """The model keeps each shape's node order and updates it for the node states that
        changed since; after every commit that order is the one built from scratch."""
        tasks = _tasks(workload)
        p = placer(_cluster(cluster), "fragmentation-aware")
        p.expect(item(t) for t in tasks)
        model = p.model
        assert model is not None
        for t in tasks:
            it = item(t)
            shape = p._model_shape(it)
            if shape is not None:
                kept = list(model.order(shape))
                model._sorted.clear()
                assert list(model.order(shape)) == kept
            decision = p.place(it)
            if isinstance(decision, placement.Placement):
                p.commit(it, decision)
