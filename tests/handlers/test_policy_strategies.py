"""The AllocationPolicy's strategies map onto the Placer's policies; an unknown one falls back, named.

The CRD's enum and the operator's map must agree: a strategy the API server accepts must be
one the operator knows.
"""

from __future__ import annotations

import pathlib

import pytest
import yaml

from dralloc.handlers import operating
from dralloc.scheduling import placement

CRD = pathlib.Path(__file__).resolve().parents[2] / "crds" / "allocationpolicies.yaml"


def test_fragmentation_aware_strategy() -> None:
    assert operating._strategy({"strategy": "FragmentationAware"}) == ("fragmentation-aware", None)


def test_unknown_strategy_names_the_field() -> None:
    assert operating._strategy({"strategy": "BestFit"}) == (
        "first-fit", "spec.strategy: unknown strategy 'BestFit'; using FirstFit")


def test_crd_enum_equals_the_operator_map() -> None:
    crd = yaml.safe_load(CRD.read_text())
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    assert schema["strategy"]["enum"] == list(operating.STRATEGIES)
    assert sorted(operating.STRATEGIES.values()) == sorted(placement.POLICIES)


@pytest.mark.parametrize(("spec", "policy", "expected"), [
    ({}, "fragmentation-aware", (1, None)),
    ({"batchOrders": 4}, "fragmentation-aware", (4, None)),
    ({"batchOrders": 1}, "first-fit", (1, None)),
    ({"batchOrders": 4}, "binpack", (1, "spec.batchOrders: 4 needs strategy FragmentationAware; placing one by one")),
    ({"batchOrders": 0}, "fragmentation-aware",
     (1, "spec.batchOrders: 0 is not a whole number from 1 to 8; placing one by one")),
    ({"batchOrders": 9}, "fragmentation-aware",
     (1, "spec.batchOrders: 9 is not a whole number from 1 to 8; placing one by one")),
    ({"batchOrders": "4"}, "fragmentation-aware",
     (1, "spec.batchOrders: '4' is not a whole number from 1 to 8; placing one by one")),
    ({"batchOrders": True}, "fragmentation-aware",
     (1, "spec.batchOrders: True is not a whole number from 1 to 8; placing one by one")),
])
def test_batch_orders_name_the_field(spec: dict[str, object], policy: str, expected: tuple[int, str | None]) -> None:
    assert operating._batch_orders(spec, policy) == expected


def test_crd_batch_orders_range_equals_the_operator() -> None:
    crd = yaml.safe_load(CRD.read_text())
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    assert (schema["batchOrders"]["minimum"], schema["batchOrders"]["maximum"]) == (1, operating.MAX_BATCH_ORDERS)
    assert schema["batchOrders"]["default"] == 1
