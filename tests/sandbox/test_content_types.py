"""Request bodies the sandbox decodes, and the ones it refuses, as kube-apiserver 1.37 does.

kube-apiserver decodes a create, update or DeleteOptions body as JSON, YAML or protobuf (JSON
when there is no Content-Type) and answers anything else, such as the text/plain, form and
multipart bodies a web page can send without asking, with 415 UnsupportedMediaType. A PATCH
must name one of the patch types. `/_faults` takes JSON only.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from tests.sandbox.conftest import MERGE, STRATEGIC, Http, configmap
from tests.sandbox.test_object_semantics import crd

from dralloc.sandbox import ApiServer, endpoints

CM = "/api/v1/namespaces/default/configmaps"
WIDGETS = "/apis/example.dralloc.dev/v1/namespaces/default/widgets"
BODY_415 = ("the body of the request was in an unknown format - accepted media types include: "
            "application/json, application/yaml, application/vnd.kubernetes.protobuf")
WEB_PAGE_TYPES = ["text/plain", "text/plain; charset=utf-8", "application/x-www-form-urlencoded",
                  "multipart/form-data; boundary=x", "application/octet-stream", "application/merge-patch+json",
                  "application/apply-patch+yaml", "application/cbor", "json", "application/json; charset"]


async def send(http: Http, method: str, path: str, body: str | None, content_type: str | None) -> tuple[int, Any]:
    """A raw request: `content_type` None sends no Content-Type header at all."""
    headers = {} if content_type is None else {"Content-Type": content_type}
    async with http.session.request(method, http.url + path, data=None if body is None else body.encode(),
                                    headers=headers, skip_auto_headers=["Content-Type"]) as resp:
        text = await resp.text()
        return resp.status, json.loads(text) if text else None


def status_415(message: str, **extra: Any) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": "UnsupportedMediaType", "code": 415, **extra}


@pytest.mark.parametrize("content_type", WEB_PAGE_TYPES)
async def test_create_refuses_bodies_kube_apiserver_cannot_decode(http: Http, content_type: str) -> None:
    code, body = await send(http, "POST", CM, json.dumps(configmap("c")), content_type)
    assert (code, body) == (415, status_415(BODY_415))
    assert (await http.get(f"{CM}/c"))[0] == 404, "nothing was created"


async def test_update_and_delete_refuse_form_bodies(http: Http) -> None:
    _, cm = await http.post(CM, configmap("c", {"k": "v"}))
    changed = {**cm, "data": {"k": "changed"}}
    assert await send(http, "PUT", f"{CM}/c", json.dumps(changed), "text/plain") == (415, status_415(BODY_415))
    assert await send(http, "PUT", f"{CM}/c", "", "application/x-www-form-urlencoded") == \
        (415, status_415(BODY_415)), "refused before the body is looked at"
    options = json.dumps({"propagationPolicy": "Orphan"})
    assert await send(http, "DELETE", f"{CM}/c", options, "text/plain") == (415, status_415(BODY_415))
    assert (await send(http, "DELETE", CM, options, "multipart/form-data; boundary=x"))[0] == 415
    code, now = await http.get(f"{CM}/c")
    assert code == 200 and now["data"] == {"k": "v"} and now["metadata"]["resourceVersion"] == \
        cm["metadata"]["resourceVersion"]
    code, _ = await send(http, "DELETE", f"{CM}/c", None, "text/plain")
    assert code == 200, "a DELETE without a body has no media type to check"


@pytest.mark.parametrize("content_type", [None, "application/json", "application/json; charset=utf-8",
                                          "Application/JSON ; charset=UTF-8", "application/yaml"])
async def test_create_and_update_accept_json_and_yaml(http: Http, content_type: str | None) -> None:
    code, cm = await send(http, "POST", CM, json.dumps(configmap("c", {"k": "v"})), content_type)
    assert code == 201, cm
    cm["data"] = {"k": "changed"}
    code, updated = await send(http, "PUT", f"{CM}/c", json.dumps(cm), content_type)
    assert code == 200 and updated["data"] == {"k": "changed"}
    code, _ = await send(http, "DELETE", f"{CM}/c", json.dumps({"gracePeriodSeconds": 0}), content_type)
    assert code == 200


@pytest.mark.parametrize("content_type", [None, "text/plain", "application/json", "application/x-www-form-urlencoded",
                                          "application/apply-patch+cbor"])
async def test_patch_of_a_built_in_kind_refuses_what_is_not_a_patch_type(http: Http,
                                                                         content_type: str | None) -> None:
    await http.post(CM, configmap("c", {"k": "v"}))
    code, body = await send(http, "PATCH", f"{CM}/c", json.dumps({"data": {"k": "x"}}), content_type)
    # go-restful's route selection refuses it, before kube-apiserver's patch handler runs
    assert (code, body) == (415, status_415("415: Unsupported Media Type", details={}))
    assert (await http.get(f"{CM}/c"))[1]["data"] == {"k": "v"}


async def test_patch_of_a_custom_resource_refuses_strategic_merge_and_the_rest(http: Http) -> None:
    await http.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd())
    await http.post(WIDGETS, {"apiVersion": "example.dralloc.dev/v1", "kind": "Widget",
                              "metadata": {"name": "w"}, "spec": {"size": 1}})
    message = ("the body of the request was in an unknown format - accepted media types include: "
               "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml")
    for content_type in (STRATEGIC, "text/plain", None):
        code, body = await send(http, "PATCH", f"{WIDGETS}/w", json.dumps({"spec": {"size": 2}}), content_type)
        assert (code, body) == (415, status_415(message)), content_type


@pytest.mark.parametrize("content_type", [MERGE, f"{MERGE}; charset=utf-8", STRATEGIC,
                                          "application/json-patch+json"])
async def test_patch_types_with_parameters_are_accepted(http: Http, content_type: str) -> None:
    await http.post(CM, configmap("c", {"k": "v"}))
    patch: Any = [{"op": "replace", "path": "/data/k", "value": "x"}] if "json-patch" in content_type \
        else {"data": {"k": "x"}}
    code, body = await send(http, "PATCH", f"{CM}/c", json.dumps(patch), content_type)
    assert code == 200 and body["data"] == {"k": "x"}


@pytest.mark.parametrize("content_type", [None, "text/plain", "application/x-www-form-urlencoded",
                                          "multipart/form-data; boundary=x", "application/yaml"])
async def test_fault_endpoint_refuses_bodies_that_are_not_json(async_apiserver: ApiServer, http: Http,
                                                               content_type: str | None) -> None:
    code, body = await send(http, "POST", "/_faults", json.dumps({"spec": "* * 500"}), content_type)
    assert code == 415 and body["reason"] == "UnsupportedMediaType"
    assert async_apiserver.faults.rules == [], "nothing was added"
    code, _ = await send(http, "POST", "/_faults", json.dumps({"spec": "* * 500"}), "application/json; charset=utf-8")
    assert code == 201 and len(async_apiserver.faults.rules) == 1


@pytest.mark.parametrize(("header", "media"), [
    ("application/json", "application/json"), ("Application/JSON; charset=utf-8", "application/json"),
    ("application/yaml;", "application/yaml"), ("text/plain", "text/plain"), ("application/json; charset", None),
    ("json", None), ("", None), ("/json", None), ("application/", None), ("a/b/c", None), ("a b/c", None),
])
def test_media_type_parsing(header: str, media: str | None) -> None:
    assert endpoints.media_type(header) == media
