"""Devices whose attributes CEL cannot take: when the allocation fails, and when it does not.

Upstream turns the whole device into CEL's `device` before it evaluates any selector on it
(`cel/compile.go`, `getAttributeValue` from `DeviceMatches`). An attribute with no value
("unsupported attribute value"; what kube-apiserver leaves of a list attribute written while
DRAListTypeAttributes is off) or with a version that does not parse therefore fails every
selector on that device, even `device.driver == "..."`, which dralloc answers without CEL.
It fails only for devices the search reaches and evaluates: not for devices after the one
that satisfies the claim, not for devices in use (checked first), not when neither the class
nor the request has a selector. An `All` request evaluates every device up front.
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.allocation.cases import GPU, Case, allocates, c0, in_use, raises
from tests.allocation.test_allocation_cases import check
from tests.builders import built, claim, class_, device, slice_, snapshot

from dralloc import allocation
from dralloc.allocation import errors

VALUELESS: dict[str, Any] = {"name": "gpu-bad", "attributes": {"model": {"string": "a100"}, "links": {}}}
BAD_VERSION: dict[str, Any] = {"name": "gpu-bad", "attributes": {"firmware": {"version": "not-semver"}}}
ANY = class_("any")

CASES: dict[str, Case] = {
    "valueless-attribute-fails-driver-selector": Case(
        classes=[GPU], slices=[slice_("s1", devices=[VALUELESS, device("gpu-0")])],
        claims=[c0().request("r0", "gpu")],
        expect=raises(errors.InvalidSelectorError,
                      "class gpu: selector #0 on device gpu.example.com/pool-1/gpu-bad: CEL runtime error: "
                      "attribute links: unsupported attribute value"),
    ),
    "unparsable-version-fails-driver-selector": Case(
        classes=[GPU], slices=[slice_("s1", devices=[BAD_VERSION, device("gpu-0")])],
        claims=[c0().request("r0", "gpu")],
        expect=raises(errors.InvalidSelectorError, "attribute firmware: parse semantic version"),
    ),
    "valueless-attribute-fails-request-selector-of-a-class-without-selectors": Case(
        classes=[ANY], slices=[slice_("s1", devices=[VALUELESS])],
        claims=[c0().request("r0", "any", selectors=['device.driver == "gpu.example.com"'])],
        expect=raises(errors.InvalidSelectorError,
                      "claim default/c0, request r0: selector #0 on device gpu.example.com/pool-1/gpu-bad: "
                      "CEL runtime error: attribute links: unsupported attribute value"),
    ),
    "valueless-attribute-after-the-chosen-device-is-never-reached": Case(
        classes=[GPU], slices=[slice_("s1", devices=[device("gpu-0"), VALUELESS])],
        claims=[c0().request("r0", "gpu")],
        expect=allocates([("r0", "gpu-0")]),
    ),
    "valueless-attribute-in-a-later-pool-is-never-reached": Case(
        classes=[GPU],
        slices=[slice_("s1", devices=[device("gpu-0")]), slice_("s2", pool="pool-2", devices=[VALUELESS])],
        claims=[c0().request("r0", "gpu")],
        expect=allocates([("r0", "gpu-0")]),
    ),
    "valueless-attribute-on-a-device-in-use-is-never-evaluated": Case(
        classes=[GPU], slices=[slice_("s1", devices=[VALUELESS, device("gpu-0")])],
        allocated=[in_use("gpu-bad")],
        claims=[c0().request("r0", "gpu")],
        expect=allocates([("r0", "gpu-0")]),
    ),
    "valueless-attribute-without-any-selector-allocates": Case(
        classes=[ANY], slices=[slice_("s1", devices=[VALUELESS])],
        claims=[c0().request("r0", "any")],
        expect=allocates([("r0", "gpu-bad")]),
    ),
    "valueless-attribute-reached-by-a-claim-that-cannot-fit-still-fails": Case(
        classes=[GPU], slices=[slice_("s1", devices=[device("gpu-0"), VALUELESS])],
        claims=[c0().request("r0", "gpu", count=3)],
        expect=raises(errors.InvalidSelectorError, "unsupported attribute value"),
    ),
    "valueless-attribute-reached-by-a-second-claim-fails-both": Case(
        classes=[GPU], slices=[slice_("s1", devices=[device("gpu-0"), VALUELESS])],
        claims=[c0().request("r0", "gpu"), claim("c1").request("r0", "gpu")],
        expect=raises(errors.InvalidSelectorError, "unsupported attribute value"),
    ),
    "all-mode-evaluates-every-device-even-in-use": Case(
        classes=[GPU], slices=[slice_("s1", devices=[device("gpu-0"), VALUELESS])],
        allocated=[in_use("gpu-bad")],
        claims=[c0().request("r0", "gpu", all=True)],
        expect=raises(errors.InvalidSelectorError, "unsupported attribute value"),
    ),
}


@pytest.mark.parametrize("case", list(CASES.values()), ids=list(CASES))
def test_unconvertible_attributes(case: Case) -> None:
    """The allocation fails exactly when the search evaluates a selector on the unconvertible device."""
    check(case)


def test_fast_path_failure_is_remembered_per_device() -> None:
    """The failure is cached on the device like any selector result: a second call on the same
    snapshot fails the same way instead of reusing a cached driver match."""
    case = CASES["valueless-attribute-fails-driver-selector"]
    snap = snapshot(classes=case.classes, slices=case.slices, features=case.features)
    for _ in range(2):
        with pytest.raises(errors.InvalidSelectorError, match="attribute links: unsupported attribute value"):
            allocation.allocate(snap, [built(c) for c in case.claims], case.node, features=case.features)
