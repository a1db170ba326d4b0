"""DRA-backed extended resources (lifecycle.extended): the special claim and the request mappings.

Covers which resource names qualify, which class serves a name (explicit, implicit,
newest wins), the request naming `container-<i>-request-<j>`, device-plugin precedence
per node, init containers borrowing from long-lived ones and sharing the largest
request, the claim's metadata, finding it again, and the recorded status. A property
checks that every container's need is covered by the requests its mappings name.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.lifecycle.objects import by_uid, claim, container, device_class, pod

from dralloc.lifecycle import claims, extended, plans
from dralloc.model import conversion
from dralloc.model.claims import ResourceClaim
from dralloc.model.classes import DeviceClass
from dralloc.model.quantities import Quantity

GPU = "example.com/gpu"
GPU_CLASS = device_class("gpu.example.com", GPU)
NIC_CLASS = device_class("nic.example.com")
CLASSES = (GPU_CLASS, NIC_CLASS)
IMPLICIT_NIC = "deviceclass.resource.kubernetes.io/nic.example.com"


def sidecar(name: str, **requests: str) -> dict[str, Any]:
    return {**container(name, **requests), "restartPolicy": "Always"}


def req(name: str, count: int, cls: str = "gpu.example.com") -> dict[str, Any]:
    return {"name": name, "exactly": {"deviceClassName": cls, "allocationMode": "ExactCount", "count": count}}


def mapping(container_name: str, request: str, resource: str = GPU) -> dict[str, Any]:
    return {"containerName": container_name, "resourceName": resource, "requestName": request}


class TestResourceNames:
    @pytest.mark.parametrize(("name", "expected"), [
        ("example.com/gpu", True),
        ("deviceclass.resource.kubernetes.io/gpu", True),
        ("cpu", False),
        ("nvidia.com/gpu", True),
        ("kubernetes.io/something", False),
        ("hugepages-2Mi", False),
        ("requests.example.com/gpu", False),
        ("node.kubernetes.io/thing", False),
    ])
    def test_qualifies(self, name: str, expected: bool) -> None:
        """Extended resources and implicit class names qualify; native and quota names do not."""
        assert extended.is_extended_resource_name(name) is expected


class TestClassMapping:
    def test_explicit_and_implicit_names(self) -> None:
        """A class serves its extendedResourceName and its implicit name."""
        mapping = extended.class_mapping(CLASSES)
        assert mapping[GPU].name == "gpu.example.com"
        assert mapping["deviceclass.resource.kubernetes.io/gpu.example.com"].name == "gpu.example.com"
        assert mapping[IMPLICIT_NIC].name == "nic.example.com"

    def _created(self, name: str, at: str) -> DeviceClass:
        raw = conversion.to_raw(device_class(name, GPU))
        raw["metadata"]["creationTimestamp"] = at
        parsed: DeviceClass = conversion.parse_as(DeviceClass, raw)
        return parsed

    def test_newest_class_wins(self) -> None:
        """Two classes with one name: the one created later serves it, whatever the input order."""
        old, new = self._created("b", "2030-01-01T00:00:00Z"), self._created("a", "2030-01-02T00:00:00Z")
        assert extended.class_mapping([old, new])[GPU].name == "a"
        assert extended.class_mapping([new, old])[GPU].name == "a"

    def test_same_time_first_name_wins(self) -> None:
        """Created at the same time: the name sorted first serves it."""
        x, y = self._created("x", "2030-01-01T00:00:00Z"), self._created("y", "2030-01-01T00:00:00Z")
        assert extended.class_mapping([y, x])[GPU].name == "x"


@dataclasses.dataclass(frozen=True)
class Case:
    containers: tuple[dict[str, Any], ...] = ()
    init: tuple[dict[str, Any], ...] = ()
    allocatable: dict[str, str] | None = None
    requests: tuple[dict[str, Any], ...] = ()
    mappings: tuple[dict[str, Any], ...] = ()


CASES: dict[str, Case] = {
    "no-extended-resources-no-claim": Case(containers=(container("main", cpu="1"),)),
    "unmapped-extended-resource-no-claim": Case(containers=(container("main", **{"other.com/fpga": "1"}),)),
    "one-container-one-request": Case(
        containers=(container("main", **{GPU: "2"}),),
        requests=(req("container-0-request-0", 2),), mappings=(mapping("main", "container-0-request-0"),)),
    "request-index-counts-sorted-resource-names": Case(
        containers=(container("main", cpu="1", memory="1Gi", **{GPU: "1"}),),
        requests=(req("container-0-request-1", 1),), mappings=(mapping("main", "container-0-request-1"),)),
    "two-containers-two-requests": Case(
        containers=(container("a", **{GPU: "1"}), container("b", **{GPU: "3"})),
        requests=(req("container-0-request-0", 1), req("container-1-request-0", 3)),
        mappings=(mapping("a", "container-0-request-0"), mapping("b", "container-1-request-0"))),
    "zero-quantity-ignored": Case(containers=(container("main", **{GPU: "0"}),)),
    "implicit-class-name": Case(
        containers=(container("main", **{IMPLICIT_NIC: "1"}),),
        requests=(req("container-0-request-0", 1, "nic.example.com"),),
        mappings=(mapping("main", "container-0-request-0", IMPLICIT_NIC),)),
    "two-resources-sorted-by-resource": Case(
        containers=(container("main", **{GPU: "1", IMPLICIT_NIC: "1"}),),
        requests=(req("container-0-request-0", 1, "nic.example.com"), req("container-0-request-1", 1)),
        mappings=(mapping("main", "container-0-request-0", IMPLICIT_NIC), mapping("main", "container-0-request-1"))),
    "device-plugin-on-node-takes-precedence": Case(
        containers=(container("main", **{GPU: "1"}),), allocatable={GPU: "4"}),
    "node-without-device-plugin-uses-dra": Case(
        containers=(container("main", **{GPU: "1"}),), allocatable={GPU: "0"},
        requests=(req("container-0-request-0", 1),), mappings=(mapping("main", "container-0-request-0"),)),
    "init-container-borrows-from-regular": Case(
        init=(container("init", **{GPU: "1"}),), containers=(container("main", **{GPU: "2"}),),
        requests=(req("container-1-request-0", 2),),
        mappings=(mapping("main", "container-1-request-0"), mapping("init", "container-1-request-0"))),
    "init-container-asks-only-the-rest": Case(
        init=(container("init", **{GPU: "3"}),), containers=(container("main", **{GPU: "1"}),),
        requests=(req("container-0-request-0", 2), req("container-1-request-0", 1)),
        mappings=(mapping("main", "container-1-request-0"), mapping("init", "container-1-request-0"),
                  mapping("init", "container-0-request-0"))),
    "init-containers-share-the-largest": Case(
        init=(container("i0", **{GPU: "1"}), container("i1", **{GPU: "2"})),
        requests=(req("container-1-request-0", 2),),
        mappings=(mapping("i0", "container-1-request-0"), mapping("i1", "container-1-request-0"))),
    "sidecar-is-long-lived-and-lends-to-earlier-init": Case(
        init=(container("i0", **{GPU: "1"}), sidecar("side", **{GPU: "1"})),
        containers=(container("main", cpu="1"),),
        requests=(req("container-1-request-0", 1),),
        mappings=(mapping("side", "container-1-request-0"), mapping("i0", "container-1-request-0"))),
    "init-after-sidecar-cannot-borrow-from-it": Case(
        init=(sidecar("side", **{GPU: "1"}), container("i1", **{GPU: "1"})),
        requests=(req("container-0-request-0", 1), req("container-1-request-0", 1)),
        mappings=(mapping("side", "container-0-request-0"), mapping("i1", "container-1-request-0"))),
    "requests-sorted-as-strings": Case(
        containers=tuple(container(f"c{i}", **{GPU: "1"}) for i in range(11)),
        requests=tuple(req(f"container-{i}-request-0", 1) for i in sorted(range(11), key=str)),
        mappings=tuple(mapping(f"c{i}", f"container-{i}-request-0") for i in range(11))),
}


@pytest.mark.parametrize("case", list(CASES.values()), ids=list(CASES))
def test_requests_and_mappings(case: Case) -> None:
    p = pod("p", containers=case.containers, init_containers=case.init)
    allocatable = {k: Quantity.parse(v) for k, v in (case.allocatable or {}).items()} if case.allocatable else None
    requests, mappings = extended.requests_and_mappings(p, CLASSES, node_allocatable=allocatable)
    assert (requests, mappings) == (case.requests, case.mappings)
    raw = extended.extended_resource_claim(p, CLASSES, node_allocatable=allocatable)
    assert (raw is None) is (not case.requests)


class TestClaim:
    P = pod("train", uid="u-1", containers=(container("main", **{GPU: "1"}),))

    def test_shape(self) -> None:
        """generateName `<pod>-extended-resources-`, pod as controller, the annotation, the requests."""
        raw = extended.extended_resource_claim(self.P, CLASSES)
        assert raw is not None
        assert raw["metadata"] == {
            "generateName": "train-extended-resources-",
            "namespace": "default",
            "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "train", "uid": "u-1", "controller": True}],
            "annotations": {"resource.kubernetes.io/extended-resource-claim": "true"},
        }
        assert raw["spec"] == {"devices": {"requests": [req("container-0-request-0", 1)]}}
        conversion.parse_as(ResourceClaim, raw)

    def test_long_pod_name_is_cut_like_the_api_server(self) -> None:
        """The base is cut to 58 characters, as the API server would."""
        assert extended.generate_name("p" * 60) == "p" * 58

    def test_found_again_by_annotation_and_owner(self) -> None:
        """The created claim is found by the annotation and the pod's controller reference."""
        raw = extended.extended_resource_claim(self.P, CLASSES)
        assert raw is not None
        raw["metadata"] |= {"name": "train-extended-resources-abcde", "uid": "c-1"}
        created = conversion.parse_as(ResourceClaim, raw)
        assert extended.find_extended_resource_claim(self.P, [claim("other", owner=self.P), created]) == created
        successor = pod("train", uid="u-2")
        assert extended.find_extended_resource_claim(successor, [created]) is None

    def test_status_round_trip(self) -> None:
        """The recorded status names the claim, and lifecycle reads it back."""
        _, mappings = extended.requests_and_mappings(self.P, CLASSES)
        status = extended.extended_claim_status("train-extended-resources-abcde", mappings)
        p = pod("train", extended_status=status)
        assert extended.recorded_claim_name(p) == "train-extended-resources-abcde"
        assert extended.recorded_claim_name(pod("train")) is None

    def test_deleted_with_its_finished_pod(self) -> None:
        """The special claim is a claim controlled by a pod: claim_plan deletes it once the pod is done."""
        done = pod("train", uid="u-1", phase="Succeeded", node="n1")
        raw = extended.extended_resource_claim(self.P, CLASSES)
        assert raw is not None
        raw["metadata"] |= {"name": "x", "uid": "c-1"}
        special = conversion.parse_as(ResourceClaim, raw)
        assert claims.claim_plan(special, pods_by_uid=by_uid(done)) == (plans.DeleteClaim("default", "x", "c-1"),)


# --- property -----------------------------------------------------------------------------

counts = st.integers(min_value=0, max_value=3)


@st.composite
def containers(draw: st.DrawFn) -> tuple[tuple[dict[str, Any], ...], tuple[dict[str, Any], ...]]:
    def one(name: str, can_be_sidecar: bool) -> dict[str, Any]:
        c = container(name, **{GPU: str(draw(counts))})
        return {**c, "restartPolicy": "Always"} if can_be_sidecar and draw(st.booleans()) else c
    init = tuple(one(f"i{i}", True) for i in range(draw(st.integers(0, 3))))
    regular = tuple(one(f"c{i}", False) for i in range(draw(st.integers(0, 3))))
    return init, regular


@settings(max_examples=150, deadline=None)
@given(containers())
def test_every_container_gets_enough(shape: tuple[tuple[dict[str, Any], ...], tuple[dict[str, Any], ...]]) -> None:
    """Each container's mapped requests add up to at least what it asked for; request names are unique."""
    init, regular = shape
    p = pod("p", init_containers=init, containers=regular)
    requests, mappings = extended.requests_and_mappings(p, CLASSES)
    by_name = {r["name"]: r["exactly"]["count"] for r in requests}
    assert len(by_name) == len(requests)
    for c in (*init, *regular):
        wanted = int(c["resources"]["requests"][GPU])
        names = {m["requestName"] for m in mappings if m["containerName"] == c["name"]}
        assert names <= by_name.keys()
        assert sum(by_name[n] for n in names) >= wanted
        assert bool(names) is (wanted > 0)
