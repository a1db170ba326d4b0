"""Malformed objects get a 4xx from the sandbox, as from kube-apiserver, never a 500.

Found by the hostile-object fuzz (tests/fuzz): null list items and non-object pod specs
crashed defaulting and validation (500), and quantities that do not parse were stored.
Values of the wrong JSON type do not decode (400); null list items decode to empty
items, which validation then judges (422), or which are fine (an empty toleration).
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.sandbox.conftest import Http

RES = "/apis/resource.k8s.io/v1"
TEMPLATES = f"{RES}/namespaces/default/resourceclaimtemplates"
SLICES = f"{RES}/resourceslices"
PODS = "/api/v1/namespaces/default/pods"
QUANTITY_ERROR = "quantities must match the regular expression"


def template(requests: Any) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": "t"},
            "spec": {"spec": {"devices": {"requests": requests}}}}


def request(**body: Any) -> dict[str, Any]:
    return {"name": "r", "exactly": {"deviceClassName": "gpu", **body}}


def pod(spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}


def slice_(capacity: Any) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "s"},
            "spec": {"driver": "gpu.example.com", "nodeName": "n", "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": "d", "capacity": {"memory": {"value": capacity}}}]}}


@pytest.mark.parametrize(("path", "body"), [
    (TEMPLATES, template("dev")),
    (TEMPLATES, template([None])),
    (TEMPLATES, {**template([request()]), "spec": {"spec": "x"}}),
    (PODS, pod("x")),
    (PODS, pod([])),
    (PODS, pod({"containers": [None]})),
    (PODS, pod({"containers": [{"name": "c", "image": "i"}], "resourceClaims": [None]})),
    (PODS, pod({"containers": [{"name": "c", "image": "i"}], "resourceClaims": [{"name": None}]})),
    (SLICES, {**slice_("1"), "spec": {**slice_("1")["spec"], "devices": [None]}}),
])
async def test_malformed_is_refused_not_a_crash(http: Http, path: str, body: dict[str, Any]) -> None:
    code, answer = await http.post(path, body)
    assert 400 <= code < 500, answer


async def test_a_null_toleration_is_an_empty_one(http: Http) -> None:
    code, answer = await http.post(TEMPLATES, template([request(tolerations=[None])]))
    assert code == 201, answer
    assert answer["spec"]["spec"]["devices"]["requests"][0]["exactly"]["tolerations"] == [{"operator": "Equal"}]


async def test_a_null_pod_spec_is_an_empty_one(http: Http) -> None:
    code, answer = await http.post(PODS, pod(None))
    assert code == 422 and "spec.containers" in str(answer)


@pytest.mark.parametrize("value", ["12abc", "0x10", "1 Gi", " 1", "1e", "1.5.5", "NaN", "1Ki1", ""])
async def test_a_quantity_that_does_not_parse_is_a_bad_request(http: Http, value: str) -> None:
    code, answer = await http.post(SLICES, slice_(value))
    assert code == 400 and QUANTITY_ERROR in answer["message"], answer
    spec = {"containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": value}}}]}
    code, answer = await http.post(PODS, pod(spec))
    assert code == 400 and 'Pod in version "v1" cannot be handled as a Pod' in answer["message"], answer


@pytest.mark.parametrize("value", ["1", "1.5", "1e3", "40Gi", "500m", "-5", ".5", "1e1000000", 7])
async def test_quantities_that_parse_are_stored(http: Http, value: Any) -> None:
    code, answer = await http.post(SLICES, slice_(value))
    assert code == 201, answer
