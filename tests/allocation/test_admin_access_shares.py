"""Admin access on devices that allow multiple allocations (DRAConsumableCapacity, DRAAdminAccess).

An admin-access request ignores other claims' allocations, but keeps out of a device its own
claim already holds. Upstream records a pick as "held by this claim" only when the device is
dedicated (`allocateDevice` in allocator_incubating.go marks `allocatingDevices` only without
allowMultipleAllocations), so on a shareable device every admin-access request of the claim
takes one more share, with its own share ID, and consumes capacity like any other share.
"""

from __future__ import annotations

import pytest
from tests.allocation.cases import GPU, Allocates, Case, allocates, c0
from tests.allocation.test_allocation_cases import run
from tests.builders import ClaimBuilder, DeviceBuilder, claim, device, result, slice_

from dralloc.allocation import outcomes
from dralloc.allocation.features import Features


def shared(name: str) -> DeviceBuilder:
    """A shareable device whose capacity policy lets a request without amounts take 1 of 10."""
    return device(name).shared().capacity("memory", "10", default="1", min="1")


SHARED = shared("gpu-0")
OTHER = device("gpu-1").capacity("memory", "10")


def admin_claim(count: int, memory: str | None = None) -> ClaimBuilder:
    """c0 with `count` admin-access requests r0, r1, ... (each for `memory`, if given)."""
    built = c0()
    for i in range(count):
        built = built.request(f"r{i}", "gpu", admin=True, capacity=None if memory is None else {"memory": memory})
    return built


# name -> (case, how many distinct shares the claim gets)
CASES: dict[str, tuple[Case, int]] = {
    "second-admin-request-takes-another-share-of-the-device": (Case(
        classes=[GPU], slices=[slice_("s1", devices=[SHARED, OTHER])],
        claims=[admin_claim(2)],
        expect=allocates([("r0", "gpu-0"), ("r1", "gpu-0")]),
    ), 2),
    "three-admin-requests-share-one-device": (Case(
        classes=[GPU], slices=[slice_("s1", devices=[SHARED])],
        claims=[admin_claim(3)],
        expect=allocates([("r0", "gpu-0"), ("r1", "gpu-0"), ("r2", "gpu-0")]),
    ), 3),
    "admin-request-after-a-normal-request-shares-the-device": (Case(
        classes=[GPU], slices=[slice_("s1", devices=[SHARED, OTHER])],
        claims=[c0().request("r0", "gpu").request("r1", "gpu", admin=True)],
        expect=allocates([("r0", "gpu-0"), ("r1", "gpu-0")]),
    ), 2),
    "normal-request-after-an-admin-request-shares-the-device": (Case(
        classes=[GPU], slices=[slice_("s1", devices=[SHARED, OTHER])],
        claims=[c0().request("r0", "gpu", admin=True).request("r1", "gpu")],
        expect=allocates([("r0", "gpu-0"), ("r1", "gpu-0")]),
    ), 2),
    "admin-shares-consume-capacity-within-the-call": (Case(
        classes=[GPU],
        slices=[slice_("s1", devices=[device("gpu-0").shared().capacity("memory", "10"),
                                      device("gpu-1").shared().capacity("memory", "10")])],
        claims=[admin_claim(2, memory="6")],
        expect=allocates([("r0", "gpu-0"), ("r1", "gpu-1")]),
    ), 2),
    "admin-shares-count-capacity-of-existing-shares": (Case(
        classes=[GPU],
        slices=[slice_("s1", devices=[device("gpu-0").shared().capacity("memory", "10"),
                                      device("gpu-1").shared().capacity("memory", "10")])],
        allocated=[claim("holder").request("r", "gpu").allocated(
            result("r", "gpu-0", share_id="11111111-1111-1111-1111-111111111111", consumed={"memory": "5"}))],
        claims=[admin_claim(2, memory="4")],
        expect=allocates([("r0", "gpu-0"), ("r1", "gpu-1")]),
    ), 2),
    "admin-request-still-skips-a-dedicated-device-of-its-claim": (Case(
        classes=[GPU], slices=[slice_("s1", devices=[device("gpu-0"), shared("gpu-1")])],
        claims=[admin_claim(2)],
        expect=allocates([("r0", "gpu-0"), ("r1", "gpu-1")]),
    ), 1),
    "shareable-device-is-dedicated-with-consumable-capacity-off": (Case(
        classes=[GPU],
        slices=[slice_("s1", devices=[device("gpu-0").shared(), device("gpu-1")])],
        claims=[admin_claim(2)],
        features=Features(consumable_capacity=False),
        expect=allocates([("r0", "gpu-0"), ("r1", "gpu-1")]),
    ), 0),
}


@pytest.mark.parametrize(("case", "shares"), list(CASES.values()), ids=list(CASES))
def test_admin_access_on_shareable_devices(case: Case, shares: int) -> None:
    """The claim gets the listed devices; each pick of a shareable device is a share of its own."""
    outcome = run(case)
    assert isinstance(outcome, outcomes.Allocated), outcome
    assert isinstance(case.expect, Allocates)
    entries = outcome.results[0].devices.results
    assert [(r.request, r.device) for r in entries] == list(case.expect.claims[0])
    admin = {r["name"]: bool(r["exactly"].get("adminAccess")) for r in case.claims[0].raw()["spec"]["devices"]["requests"]}
    assert [bool(r.admin_access) for r in entries] == [admin[r.request] for r in entries]
    share_ids = {r.share_id for r in entries if r.share_id is not None}
    assert len(share_ids) == shares
