"""Kubernetes 1.38 semantics that the conformance vectors cannot state on their own (each checked with
the v0.37.2 and v0.38.0-beta.0 oracles)."""

from __future__ import annotations

import copy

import pytest
from tests.conformance import vectors
from tests.conformance.test_vectors_library import run_vector

from dralloc.allocation import errors

INCOMPLETE = next(c for c in vectors.load_all() if c["name"] == "all-devices-of-the-incomplete-pool")


def _invalid_pool() -> dict:
    """The same All request, its pool complete but invalid (one device name twice)."""
    case = copy.deepcopy(INCOMPLETE)
    for slice_ in case["objects"]["resourceSlices"]:
        slice_["spec"]["pool"]["resourceSliceCount"] = 1
        slice_["spec"]["devices"] = slice_["spec"]["devices"] * 2
    case["objects"]["resourceSlices"] = case["objects"]["resourceSlices"][:1]
    return case


@pytest.mark.parametrize(("case", "words"), [(INCOMPLETE, "is currently being updated"),
                                             (_invalid_pool(), "is currently invalid")])
@pytest.mark.parametrize("release", ["1.37", "1.38"])
def test_all_on_an_incomplete_or_invalid_pool_rules_out_the_node_at_1_38(
        case: dict, words: str, release: str) -> None:
    """1.38 wraps ErrFailedAllocationOnNode (InvalidPoolOnNodeError): only this node is ruled out."""
    with pytest.raises(errors.InvalidPoolError, match=words) as info:
        run_vector(case, release)
    assert isinstance(info.value, errors.InvalidPoolOnNodeError) == (release == "1.38")
