"""Raw API JSON <-> model (model.conversion): every vector object round-trips; bad input names kind, name and field."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from tests.builders import claim, device, slice_
from tests.conformance import vectors

from dralloc.model import claims, conversion, devices

OBJECTS = [
    (f"{case['name']}/{group}/{index}", obj)
    for case in vectors.load_all()
    for group, objs in case["objects"].items()
    for index, obj in enumerate(objs or [])
]


@pytest.mark.parametrize(("label", "raw"), OBJECTS, ids=[label for label, _ in OBJECTS])
def test_every_vector_object_round_trips(label: str, raw: dict[str, Any]) -> None:
    """Each object of the conformance vectors parses and is written back exactly as read."""
    parsed = conversion.parse(raw)
    assert parsed is not None
    assert conversion.to_raw(parsed) == raw


def test_unknown_fields_survive_at_every_level() -> None:
    """Fields the model does not know (top level, spec, nested device, status) are written back unchanged."""
    raw = slice_("s1", devices=[device("d0").attr("numa", 1)]).raw()
    raw["futureTopLevel"] = {"x": 1}
    raw["spec"]["futureSpecField"] = [1, 2]
    raw["spec"]["devices"][0]["futureDeviceField"] = {"nested": {"deep": True}}
    raw["spec"]["devices"][0]["attributes"]["numa"]["futureKind"] = "x"
    assert conversion.to_raw(conversion.parse_as(devices.ResourceSlice, copy.deepcopy(raw))) == raw


def test_unknown_status_fields_survive_an_allocation_update() -> None:
    """A claim's unknown status fields are kept when its allocation is replaced (what we write back)."""
    raw = claim("c0").request("r0", "gpu").raw()
    raw["status"] = {"futureStatus": {"a": 1}, "reservedFor": [{"resource": "pods", "name": "p", "uid": "u"}]}
    parsed = conversion.parse_as(claims.ResourceClaim, raw)
    updated = parsed.model_copy(update={"status": parsed.status.model_copy(update={
        "allocation": claims.AllocationResult()})})
    written = conversion.to_raw(updated)
    assert written["status"]["futureStatus"] == {"a": 1}
    assert written["status"]["reservedFor"] == raw["status"]["reservedFor"]


def test_quantities_written_canonically() -> None:
    """Quantities are written back the way the API server writes them."""
    raw = slice_("s1", devices=[device("d0").capacity("memory", "1.5Gi")]).raw()
    written = conversion.to_raw(conversion.parse_as(devices.ResourceSlice, raw))
    assert written["spec"]["devices"][0]["capacity"]["memory"] == {"value": "1536Mi"}


def test_models_are_frozen() -> None:
    """Parsed objects cannot be changed in place."""
    parsed = conversion.parse_as(devices.ResourceSlice, slice_("s1").raw())
    with pytest.raises(Exception, match="frozen"):
        parsed.spec.driver = "other"  # type: ignore[misc]


MALFORMED = {
    "missing-required-field": (
        {"kind": "ResourceSlice", "metadata": {"name": "s1"}, "spec": {"pool": {"name": "p"}}},
        "ResourceSlice s1", "spec.driver"),
    "bad-quantity": (
        slice_("s1", devices=[device("d0").capacity("memory", "lots")]).raw(),
        "ResourceSlice s1", "spec.devices[0].capacity.memory.value"),
    "namespaced-claim": (
        {"kind": "ResourceClaim", "metadata": {"name": "c", "namespace": "ns"},
         "spec": {"devices": {"requests": [{"exactly": {"deviceClassName": "gpu"}}]}}},
        "ResourceClaim ns/c", "spec.devices.requests[0].name"),
    "selector-without-expression": (
        {"kind": "DeviceClass", "metadata": {"name": "gpu"}, "spec": {"selectors": [{"cel": {}}]}},
        "DeviceClass gpu", "spec.selectors[0].cel.expression"),
    "generate-name-only": (
        {"kind": "ResourceSlice", "metadata": {"generateName": "s-"},
         "spec": {"driver": "d", "pool": {"name": "p", "generation": "new"}}},
        "ResourceSlice s-", "spec.pool.generation"),
}


@pytest.mark.parametrize(("raw", "ref", "field"), list(MALFORMED.values()), ids=list(MALFORMED))
def test_malformed_object_names_kind_name_and_field(raw: dict[str, Any], ref: str, field: str) -> None:
    """A malformed object raises ObjectError with the object reference and the API field path."""
    with pytest.raises(conversion.ObjectError) as info:
        conversion.parse(raw)
    assert (info.value.ref, info.value.field) == (ref, field)
    assert str(info.value).startswith(f"{ref}: {field}: ")


def test_object_error_is_a_value_error() -> None:
    """ObjectError is a ValueError, so generic input handling catches it."""
    assert issubclass(conversion.ObjectError, ValueError) is True


def test_non_mapping_is_an_object_error() -> None:
    """Something that is not a mapping is reported, not crashed on."""
    with pytest.raises(conversion.ObjectError, match="expected a mapping, got list"):
        conversion.parse(["not", "an", "object"])  # type: ignore[arg-type]


def test_unknown_kind_is_ignored() -> None:
    """Kinds the allocator does not read parse to None."""
    assert conversion.parse({"kind": "ConfigMap", "metadata": {"name": "x"}}) is None


def test_flatten_unpacks_nested_lists() -> None:
    """`kind: List` documents (as kubectl writes them) are unpacked, nested ones too, and empty documents skipped."""
    docs = [{"kind": "List", "items": [{"kind": "Node"}, {"kind": "DeviceClassList", "items": [{"kind": "DeviceClass"}]}]},
            None, {"kind": "ResourceSlice"}]
    assert [d["kind"] for d in conversion.flatten(docs)] == ["Node", "DeviceClass", "ResourceSlice"]


def test_flatten_rejects_scalars() -> None:
    """A document that is not an object is an ObjectError."""
    with pytest.raises(conversion.ObjectError, match="expected a Kubernetes object"):
        list(conversion.flatten(["oops"]))
