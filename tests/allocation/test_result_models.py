"""Results built directly (allocation.results, issue 31) are the models validation would build.

The allocator builds its common AllocationResult without validating values that come from validated
objects, as pydantic's model_construct does. Whatever a caller can observe must be the same as for the
validated model: equality, every dump, the fields set, repr, copies and pickling.
"""

from __future__ import annotations

import copy
import pickle
from typing import Any

import pytest

from dralloc.allocation import results
from dralloc.model import claims, nodes
from dralloc.model.base import raw_of

SELECTOR = nodes.NodeSelector(node_selector_terms=(nodes.NodeSelectorTerm(match_fields=(
    nodes.NodeSelectorRequirement(key="metadata.name", operator="In", values=("node-1",)),)),))
CONFIG = claims.DeviceAllocationConfiguration(source="FromClass", requests=("r",),
                                              opaque={"driver": "gpu.example.com", "parameters": {"a": 1}})


def _same(direct: Any, validated: Any) -> None:
    assert direct == validated and validated == direct
    assert type(direct) is type(validated)
    assert direct.model_fields_set == validated.model_fields_set
    assert direct.__pydantic_extra__ == validated.__pydantic_extra__
    assert direct.__pydantic_private__ == validated.__pydantic_private__
    assert list(direct.__dict__) == list(validated.__dict__)
    assert repr(direct) == repr(validated)
    assert direct.model_dump() == validated.model_dump()
    assert direct.model_dump_json() == validated.model_dump_json()
    assert direct.model_dump_json(by_alias=True, exclude_unset=True) == validated.model_dump_json(
        by_alias=True, exclude_unset=True)
    assert direct.model_dump(mode="json", by_alias=True, exclude_defaults=True, exclude_none=True) == \
        validated.model_dump(mode="json", by_alias=True, exclude_defaults=True, exclude_none=True)
    assert raw_of(direct) == raw_of(validated)
    assert pickle.loads(pickle.dumps(direct)) == validated
    assert copy.deepcopy(direct) == validated
    assert type(direct).model_validate(direct.model_dump()) == validated


def test_the_models_are_as_the_direct_builders_expect() -> None:
    assert results._DIRECT


@pytest.mark.parametrize("binding", [None, (), ("ready",)])
def test_a_device_result_is_the_validated_one(binding: tuple[str, ...] | None) -> None:
    failure = ("failed",) if binding else ()
    direct = results._device_result("r/sub", "gpu.example.com", "pool-1", "gpu-0", binding, failure)
    if binding is None:
        validated = claims.DeviceRequestAllocationResult(request="r/sub", driver="gpu.example.com", pool="pool-1",
                                                         device="gpu-0")
    else:
        validated = claims.DeviceRequestAllocationResult(request="r/sub", driver="gpu.example.com", pool="pool-1",
                                                         device="gpu-0", binding_conditions=binding,
                                                         binding_failure_conditions=failure)
    _same(direct, validated)
    assert direct.consumed_capacity == {} and direct.consumed_capacity is not results._device_result(
        "r", "d", "p", "x", None, ()).consumed_capacity


@pytest.mark.parametrize("selector", [None, SELECTOR])
@pytest.mark.parametrize("config", [(), (CONFIG,)])
def test_an_allocation_is_the_validated_one(selector: nodes.NodeSelector | None,
                                           config: tuple[claims.DeviceAllocationConfiguration, ...]) -> None:
    entries = (results._device_result("r", "gpu.example.com", "pool-1", "gpu-0", (), ()),
               claims.DeviceRequestAllocationResult(request="r", driver="gpu.example.com", pool="pool-1",
                                                    device="gpu-1", admin_access=True))
    direct = results._allocation(entries, config, selector)
    validated = claims.AllocationResult(devices=claims.DeviceAllocationResult(results=entries, config=config),
                                        node_selector=selector)
    _same(direct, validated)
    _same(direct.devices, validated.devices)


def test_a_copy_with_changes_leaves_the_shared_fields_set_alone() -> None:
    first = results._device_result("r", "gpu.example.com", "pool-1", "gpu-0", (), ())
    second = results._device_result("r", "gpu.example.com", "pool-1", "gpu-1", (), ())
    changed = first.model_copy(update={"share_id": "s"})
    assert "share_id" in changed.model_fields_set
    assert "share_id" not in first.model_fields_set and "share_id" not in second.model_fields_set
    allocation = results._allocation((first,), (), None)
    stamped = allocation.model_copy(update={"allocation_timestamp": "2026-01-01T00:00:00Z"})
    assert "allocation_timestamp" in stamped.model_fields_set
    assert "allocation_timestamp" not in results._allocation((second,), (), None).model_fields_set
