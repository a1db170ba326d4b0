"""The AllocationPolicy's strategies map onto the Placer's policies; an unknown one falls back, named.

The CRD's enum and the operator's map must agree: a strategy the API server accepts must be
one the operator knows.
"""

from __future__ import annotations

import pathlib

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
