"""What keeps a 5,000-node fleet's ResourceSlices small in memory, without changing what is read.

Identical scalar attributes and plain capacities parse to one shared (frozen) instance; a parsed
ResourceSlice keeps of its raw JSON only what newer/older comparisons need.
"""

from __future__ import annotations

from typing import Any

from dralloc.model import conversion, devices
from dralloc.state.cluster import ClusterState


def _slice(name: str, rv: str = "1") -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": name, "uid": f"uid-{name}", "resourceVersion": rv},
            "spec": {"driver": "gpu.example.com", "nodeName": name,
                     "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": f"gpu-{i}", "attributes": {
                         "model": {"string": "h100"}, "index": {"int": i}, "ecc": {"bool": True}, "one": {"int": 1}},
                         "capacity": {"memory": {"value": "80Gi"}}} for i in range(2)]}}


def test_identical_attribute_values_share_one_instance() -> None:
    first = conversion.parse_as(devices.ResourceSlice, _slice("a")).spec.devices
    second = conversion.parse_as(devices.ResourceSlice, _slice("b")).spec.devices
    assert first[0].attributes["model"] is second[1].attributes["model"]
    assert first[0].capacity["memory"] is second[0].capacity["memory"]
    assert first[0].attributes["index"] is not first[1].attributes["index"]  # 0 and 1
    # bool true and int 1 are different attribute values, never one instance.
    assert first[0].attributes["ecc"].bool_ is True and first[0].attributes["one"].int_ == 1
    assert first[0].attributes["ecc"] is not first[0].attributes["one"]


def test_a_parsed_slice_keeps_only_its_identity_of_the_raw_json() -> None:
    state = ClusterState()
    state.apply("ResourceSlice", None, _slice("a", rv="5"))
    (parsed,) = state.slices.all()
    assert [d.name for d in parsed.spec.devices] == ["gpu-0", "gpu-1"]
    assert state.slices.raw("", "a") == {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                                         "metadata": {"name": "a", "uid": "uid-a", "resourceVersion": "5"}}
    assert not state.apply("ResourceSlice", "MODIFIED", _slice("a", rv="4"))  # older: still refused
    assert state.apply("ResourceSlice", "MODIFIED", _slice("a", rv="6"))
    (again,) = state.slices.all()
    assert again is not parsed and len(again.spec.devices) == 2


def test_a_listed_slice_is_parsed_as_it_is_read_and_the_list_consumed() -> None:
    state = ClusterState()
    listed = [_slice("a"), _slice("b")]
    state.replace_all("ResourceSlice", listed)
    assert listed == []  # nothing holds the raw JSON any more
    assert [s.metadata.name for s in state.slices.all()] == ["a", "b"]
    assert state.slices.raw("", "b") == {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                                         "metadata": {"name": "b", "uid": "uid-b", "resourceVersion": "1"}}
