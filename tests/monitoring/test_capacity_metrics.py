"""The capacity gauges (dralloc.state.capacity): what they count, and how many series they make.

Counted on small snapshots built by hand (each number worked out in the test), then on
clusters shaped like a large GPU fleet to bound the series count: labels name
drivers, classes, counter sets and capacities, never pools or nodes, so the count does not
grow with the node count.
"""

from __future__ import annotations

from typing import Any

from tests.builders import claim, class_, device, device_id, result, slice_, snapshot, taint

from dralloc.allocation.snapshots import Snapshot
from dralloc.model import conversion
from dralloc.state import capacity
from dralloc.testing.fleet import exported_series, fleet

GPU = 'device.driver == "gpu.example.com"'
SERIES_BOUND = 200


def _gauges(snap: Snapshot) -> dict[str, dict[tuple[str, ...], float]]:
    """The gauges without their zero series (every state of a class is exported, zero or not)."""
    out = capacity.device_gauges(capacity.Inventory.build(snap), snap.allocated)
    return {key: {labels: value for labels, value in series if value} for key, series in out.items()}


def test_devices_by_state_count_free_as_untaken_and_unblocked() -> None:
    """Four GPUs: one allocated, one NoSchedule-tainted, one with a None-effect taint, one plain.
    Free: the None-tainted one and the plain one (None never blocks); tainted: two."""
    snap = snapshot(
        classes=[class_("gpu", GPU)],
        slices=[slice_("s", devices=[device("gpu-0"), device("gpu-1").taint("broken"),
                                     device("gpu-2").taint("note", effect="None"), device("gpu-3")])],
        allocated=[claim("c").allocated(result("r", "gpu-0"))])
    devices = _gauges(snap)["devices"]
    assert devices == {("gpu.example.com", "gpu", "total"): 4, ("gpu.example.com", "gpu", "allocated"): 1,
                       ("gpu.example.com", "gpu", "tainted"): 2, ("gpu.example.com", "gpu", "free"): 2}
    assert _gauges(snap)["device_taints"] == {("gpu.example.com", "gpu", "NoSchedule"): 1,
                                              ("gpu.example.com", "gpu", "None"): 1}


def test_devices_taken_by_a_rule_taint_and_unclassed_devices() -> None:
    """A DeviceTaintRule's NoExecute taint counts as the slice's own would; a device no class selects
    is counted under device_class "none"."""
    big = class_("big", 'device.attributes["gpu.example.com"].size >= 2')
    snap = snapshot(classes=[big], slices=[slice_("s", devices=[device("a").attr("size", 2), device("b").attr("size", 1)])])
    assert _gauges(snap)["devices"] == {("gpu.example.com", "big", "total"): 1, ("gpu.example.com", "big", "free"): 1,
                                        ("gpu.example.com", "none", "total"): 1,
                                        ("gpu.example.com", "none", "free"): 1}
    tainted = snapshot(classes=[big], slices=[slice_("s", devices=[device("a").attr("size", 2)])],
                       extra_taints={device_id("a"): [taint("broken", effect="NoExecute")]})
    gauges = _gauges(tainted)
    assert gauges["devices"] == {("gpu.example.com", "big", "total"): 1, ("gpu.example.com", "big", "tainted"): 1}
    assert gauges["device_taints"] == {("gpu.example.com", "big", "NoExecute"): 1}


def test_pools_by_free_devices() -> None:
    """Three nodes of 4 GPUs with 0, 1 and 4 allocated: pools with 4, 3 and 0 free ("4-7", "2-3", "0")."""
    slices = [slice_(f"s{n}", pool=f"node-{n}", node=f"node-{n}", devices=[device(f"gpu-{i}") for i in range(4)])
              for n in range(3)]
    taken = [result("r", f"gpu-{i}", pool="node-1") for i in range(1)] + [
        result("r", f"gpu-{i}", pool="node-2") for i in range(4)]
    snap = snapshot(classes=[class_("gpu", GPU)], slices=slices, allocated=[claim("c").allocated(*taken)])
    assert _gauges(snap)["pools"] == {("gpu.example.com", "gpu", "4-7"): 1, ("gpu.example.com", "gpu", "2-3"): 1,
                                      ("gpu.example.com", "gpu", "0"): 1}


def test_shared_counters_sum_the_allocated_partitions() -> None:
    """Two nodes, each a 40Gi counter set split into two 20Gi partitions; one partition allocated: 20Gi of 80Gi."""
    slices = [slice_(f"s{n}", pool=f"node-{n}", node=f"node-{n}", counters={"gpu-0-counters": {"memory": "40Gi"}},
                     devices=[device(f"part-{i}").consumes("gpu-0-counters", {"memory": "20Gi"}) for i in range(2)])
              for n in range(2)]
    snap = snapshot(classes=[class_("gpu", GPU)], slices=slices,
                    allocated=[claim("c").allocated(result("r", "part-0", pool="node-0"))])
    assert _gauges(snap)["counters"] == {("gpu.example.com", "gpu-0-counters", "memory", "total"): 80 * 2**30,
                                         ("gpu.example.com", "gpu-0-counters", "memory", "used"): 20 * 2**30}


def test_a_whole_gpu_is_not_free_once_a_partition_takes_its_counters() -> None:
    """Node 0: a whole GPU consuming all 40Gi of its counter set and two 20Gi partitions of the same set,
    one partition allocated: the whole GPU no longer fits (20Gi left), the other partition does. Free:
    1, not 2 (issue 32: README's "a pod asking for N GPUs still fits" counted such GPUs). Node 1, the
    same with nothing allocated: all three free."""
    slices = [slice_(f"s{n}", pool=f"node-{n}", node=f"node-{n}", counters={"gpu-0-counters": {"memory": "40Gi"}},
                     devices=[device("whole").consumes("gpu-0-counters", {"memory": "40Gi"}),
                              *(device(f"part-{i}").consumes("gpu-0-counters", {"memory": "20Gi"}) for i in range(2))])
              for n in range(2)]
    snap = snapshot(classes=[class_("gpu", GPU)], slices=slices,
                    allocated=[claim("c").allocated(result("r", "part-0", pool="node-0"))])
    gauges = _gauges(snap)
    assert gauges["devices"] == {("gpu.example.com", "gpu", "total"): 6, ("gpu.example.com", "gpu", "allocated"): 1,
                                 ("gpu.example.com", "gpu", "free"): 4}
    assert gauges["pools"] == {("gpu.example.com", "gpu", "1"): 1, ("gpu.example.com", "gpu", "2-3"): 1}


def test_consumable_capacity_used_by_shares_and_whole_allocations() -> None:
    """Two shareable NICs of 10G bandwidth: one with a 3G share, one allocated whole: 13G of 20G used."""
    nics = [device(f"nic-{i}").shared().capacity("bandwidth", "10G", min="1G") for i in range(2)]
    snap = snapshot(classes=[class_("nic", GPU)], slices=[slice_("s", devices=nics)],
                    allocated=[claim("a").allocated(result("r", "nic-0", share_id="s1", consumed={"bandwidth": "3G"})),
                               claim("b").allocated(result("r", "nic-1"))])
    assert _gauges(snap)["capacity"] == {("gpu.example.com", "nic", "bandwidth", "total"): 20e9,
                                         ("gpu.example.com", "nic", "bandwidth", "used"): 13e9}


def _claim(raw_status: dict[str, Any], deleting: bool = False) -> Any:
    meta: dict[str, Any] = {"name": "c", "namespace": "default"}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return conversion.parse(
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": meta,
         "spec": {"devices": {"requests": []}}, "status": raw_status})


def test_claims_by_state() -> None:
    allocation = {"devices": {"results": [result("r", "gpu-0")]}}
    reserved = {"allocation": allocation, "reservedFor": [{"resource": "pods", "name": "p", "uid": "u"}]}
    claims = [_claim({}), _claim({"allocation": allocation}), _claim(reserved), _claim(reserved),
              _claim({"allocation": allocation}, deleting=True)]
    assert dict(capacity.claim_gauges(claims)) == {("pending",): 1, ("allocated",): 1, ("reserved",): 2,
                                                   ("deallocating",): 1}


def test_the_series_count_does_not_grow_with_nodes() -> None:
    """50 and 1,000 nodes export the same number of capacity series (pools are counted, never named);
    bench/capacity_metrics.py counts them on 5,000 nodes (the same 61)."""
    small, large = exported_series(fleet(50)), exported_series(fleet(1000))
    assert small == large
    assert large <= SERIES_BOUND, large


def test_a_rebuild_after_a_rule_change_reuses_devices_and_sees_the_new_taints() -> None:
    """Slices unchanged, a DeviceTaintRule added then removed: the inventory built from the previous one
    counts the rule's taint, then no longer does (the devices' classes are reused, their effects not)."""
    slices = [slice_("s", devices=[device("gpu-0"), device("gpu-1").taint("own")])]
    plain = snapshot(classes=[class_("gpu", GPU)], slices=slices)
    ruled = snapshot(classes=[class_("gpu", GPU)], slices=slices,
                     extra_taints={device_id("gpu-0"): [taint("broken", effect="NoExecute")]})
    first = capacity.Inventory.build(plain)
    second = capacity.Inventory.build(ruled, first)
    third = capacity.Inventory.build(plain, second)

    def tainted(inventory: capacity.Inventory) -> dict[tuple[str, ...], float]:
        return {k: v for k, v in inventory.effects.items() if v}

    assert tainted(first) == {("gpu.example.com", "gpu", "NoSchedule"): 1}
    assert tainted(second) == {("gpu.example.com", "gpu", "NoSchedule"): 1, ("gpu.example.com", "gpu", "NoExecute"): 1}
    assert tainted(third) == tainted(first)
    assert second.devices[("gpu.example.com", "gpu", "free")] == 0  # one blocked by its own taint, one by the rule


def _pod(entries: list[dict[str, str]], recorded: list[dict[str, str]]) -> Any:
    return conversion.parse({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns"},
                             "spec": {"containers": [{"name": "c", "image": "x"}], "resourceClaims": entries},
                             "status": {"resourceClaimStatuses": recorded}})


def test_a_pod_waits_for_a_claim_until_every_claim_it_needs_is_there() -> None:
    template = {"name": "gpus", "resourceClaimTemplateName": "t"}
    named = {"name": "shared", "resourceClaimName": "shared-claim"}
    assert capacity.claims_missing(_pod([template], []), set()) is True  # not created (or not recorded) yet
    recorded = [{"name": "gpus", "resourceClaimName": "p-gpus-x"}]
    assert capacity.claims_missing(_pod([template], recorded), set()) is True  # recorded, not seen yet
    assert capacity.claims_missing(_pod([template], recorded), {("ns", "p-gpus-x")}) is False
    assert capacity.claims_missing(_pod([template, named], recorded), {("ns", "p-gpus-x")}) is True
    assert capacity.claims_missing(_pod([template, named], recorded), {("ns", "p-gpus-x"), ("ns", "shared-claim")}) is False


def test_the_stepwise_build_pauses_and_counts_as_the_whole_build() -> None:
    """build_steps pauses after every CEL_STEP devices classified (the event loop runs in between) and
    ends with the inventory build() makes."""
    snap = fleet(100)  # 2,500 devices
    steps = capacity.Inventory.build_steps(snap)
    pauses = 0
    while True:
        try:
            next(steps)
            pauses += 1
        except StopIteration as done:
            stepwise = done.value
            break
    assert pauses == 2500 // capacity.CEL_STEP
    whole = capacity.Inventory.build(snap)
    assert (stepwise.devices, stepwise.effects, stepwise.free_in_pool) == (whole.devices, whole.effects,
                                                                          whole.free_in_pool)
