"""The AllocationPolicy's strategies map onto the Placer's policies; an unknown one falls back, named.

The CRD's enum and the operator's map must agree: a strategy the API server accepts must be
one the operator knows.
"""

from __future__ import annotations

import pathlib

import pytest
import yaml

from dralloc.handlers import moving, operating
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


@pytest.mark.parametrize(("spec", "policy", "expected"), [
    ({}, "fragmentation-aware", (0, None)),
    ({"consolidationMoves": 2}, "fragmentation-aware", (2, None)),
    ({"consolidationMoves": 0}, "binpack", (0, None)),
    ({"consolidationMoves": 1}, "first-fit",
     (0, "spec.consolidationMoves: 1 needs strategy FragmentationAware; moving no pod")),
    ({"consolidationMoves": 5}, "fragmentation-aware",
     (0, "spec.consolidationMoves: 5 is not a whole number from 0 to 4; moving no pod")),
    ({"consolidationMoves": -1}, "fragmentation-aware",
     (0, "spec.consolidationMoves: -1 is not a whole number from 0 to 4; moving no pod")),
    ({"consolidationMoves": None}, "fragmentation-aware",
     (0, "spec.consolidationMoves: None is not a whole number from 0 to 4; moving no pod")),
])
def test_consolidation_moves_name_the_field(spec: dict[str, object], policy: str,
                                            expected: tuple[int, str | None]) -> None:
    assert operating._consolidation_moves(spec, policy) == expected


def test_crd_consolidation_moves_range_equals_the_operator() -> None:
    crd = yaml.safe_load(CRD.read_text())
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    field = schema["consolidationMoves"]
    assert (field["minimum"], field["maximum"], field["default"]) == (0, moving.MAX_MOVES, 0)


def test_every_copy_of_the_crd_is_the_same() -> None:
    copies = [CRD, CRD.parents[1] / "manifests" / "crds" / CRD.name,
              CRD.parents[1] / "operator" / "dralloc" / "data" / "crds" / CRD.name]
    assert len({path.read_text() for path in copies}) == 1
