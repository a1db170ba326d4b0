"""HTTP failures become the right `KubeError` class, with the server's words and the cause kept.

Statuses are provoked with the sandbox's fault rules (the server answers a real Status
body over HTTP); real refusals (a missing object, an invalid claim, a duplicate name,
a wrong token, a closed port) are provoked for real. Pure mapping details (non-JSON
bodies, Retry-After) are checked on `errors.from_status` directly.
"""

from __future__ import annotations

import pathlib

import pytest
from kubernetes_asyncio.client import ApiException
from tests.kube.objects import claim

from dralloc.kube import errors, reading, resources, writing
from dralloc.kube.session import Session
from dralloc.sandbox import ApiServer
from dralloc.sandbox import kubeconfig as sandbox_kubeconfig

CASES = [
    (401, errors.UnauthorizedError, "Unauthorized"),
    (403, errors.ForbiddenError, "Forbidden"),
    (404, errors.NotFoundError, "NotFound"),
    (409, errors.ConflictError, "Conflict"),
    (410, errors.GoneError, "Expired"),
    (422, errors.InvalidError, "Invalid"),
    (429, errors.TooManyRequestsError, "TooManyRequests"),
    (500, errors.ServerError, "InternalError"),
    (503, errors.ServerError, "ServiceUnavailable"),
    (400, errors.KubeError, "BadRequest"),
]


@pytest.mark.parametrize(("status", "cls", "reason"), CASES, ids=[str(c[0]) for c in CASES])
async def test_status_maps_to_class(async_apiserver: ApiServer, session: Session, status: int,
                                    cls: type[errors.KubeError], reason: str) -> None:
    """Each injected status raises its class, keeps the Status message, and chains the ApiException."""
    async_apiserver.faults.next("GET", "/api/v1/namespaces/default/pods", status=status, message="scripted")
    with pytest.raises(errors.KubeError) as caught:
        await reading.list_objects(session, resources.PODS, namespace="default")
    err = caught.value
    assert type(err) is cls
    assert (err.status, err.reason, err.message) == (status, reason, "scripted")
    assert isinstance(err.__cause__, ApiException) and err.__cause__.status == status


async def test_fault_on_write_maps_too(async_apiserver: ApiServer, session: Session) -> None:
    """A 409 on a status write is a ConflictError (what a handler turns into a retry)."""
    created = await writing.create_object(session, resources.RESOURCE_CLAIMS, claim("c"))
    async_apiserver.faults.next("PUT", "/apis/resource.k8s.io/v1/namespaces/*/resourceclaims/*/status", status=409)
    with pytest.raises(errors.ConflictError):
        await writing.replace_claim_status(session, created, {})


async def test_real_not_found_keeps_server_message(session: Session) -> None:
    """A get of a missing claim is NotFoundError with the server's message naming it."""
    with pytest.raises(errors.NotFoundError) as caught:
        await reading.get_object(session, resources.RESOURCE_CLAIMS, "missing", "default")
    assert "missing" in caught.value.message and caught.value.reason == "NotFound"


async def test_invalid_object_carries_field_causes(session: Session) -> None:
    """A claim with a CEL selector that does not compile is InvalidError naming the field."""
    bad = claim("bad")
    bad["spec"]["devices"]["requests"][0]["exactly"]["selectors"] = [{"cel": {"expression": "1 +"}}]
    with pytest.raises(errors.InvalidError) as caught:
        await writing.create_object(session, resources.RESOURCE_CLAIMS, bad)
    assert caught.value.causes and caught.value.causes[0]["field"].endswith("cel.expression")


async def test_duplicate_create_is_already_exists(session: Session) -> None:
    """Creating an existing name is AlreadyExistsError, which is also a ConflictError."""
    await writing.create_object(session, resources.RESOURCE_CLAIMS, claim("dup"))
    with pytest.raises(errors.AlreadyExistsError) as caught:
        await writing.create_object(session, resources.RESOURCE_CLAIMS, claim("dup"))
    assert isinstance(caught.value, errors.ConflictError) and caught.value.status == 409


@pytest.mark.sandbox(token="s3cret")
async def test_wrong_token_is_unauthorized(async_apiserver: ApiServer, tmp_path: pathlib.Path) -> None:
    """A kubeconfig with the wrong bearer token gets UnauthorizedError."""
    path = sandbox_kubeconfig.write(tmp_path / "wrong", async_apiserver.url, token="not-it")
    async with await Session.connect(kubeconfig=str(path)) as session:
        with pytest.raises(errors.UnauthorizedError):
            await reading.list_objects(session, resources.NODES)


async def test_unreachable_server_is_transport_error(tmp_path: pathlib.Path) -> None:
    """Nothing listening: TransportError (status 0), with the connection error chained."""
    path = sandbox_kubeconfig.write(tmp_path / "closed", "http://127.0.0.1:9")
    async with await Session.connect(kubeconfig=str(path)) as session:
        with pytest.raises(errors.TransportError) as caught:
            await reading.list_objects(session, resources.NODES)
    assert caught.value.status == 0 and caught.value.__cause__ is not None


async def test_missing_kubeconfig_is_config_error(tmp_path: pathlib.Path) -> None:
    """A kubeconfig path that does not exist is ConfigError, not a library exception."""
    with pytest.raises(errors.ConfigError):
        await Session.connect(kubeconfig=str(tmp_path / "nope"))


class TestFromStatus:
    def test_non_json_body_is_cut(self) -> None:
        """A huge non-JSON body (a proxy's HTML page) is cut to MAX_RAW_BODY plus a length note."""
        err = errors.from_status(502, "<html>" + "x" * 10_000, http_reason="Bad Gateway")
        assert type(err) is errors.ServerError and err.reason == "Bad Gateway"
        assert err.message.startswith("<html>xx") and len(err.message) < errors.MAX_RAW_BODY + 40

    def test_retry_after_from_header_or_details(self) -> None:
        """429 takes Retry-After from the header, else from details.retryAfterSeconds."""
        body = '{"kind": "Status", "code": 429, "reason": "TooManyRequests", "details": {"retryAfterSeconds": 7}}'
        from_details = errors.from_status(429, body)
        from_header = errors.from_status(429, body, headers={"Retry-After": "3"})
        assert isinstance(from_details, errors.TooManyRequestsError) and from_details.retry_after == 7.0
        assert isinstance(from_header, errors.TooManyRequestsError) and from_header.retry_after == 3.0

    def test_from_api_exception_reads_body(self) -> None:
        """The library's exception (as it raises it) maps by its status and Status body."""
        exc = ApiException(status=404, reason="Not Found")
        exc.body = b'{"kind": "Status", "code": 404, "reason": "NotFound", "message": "pods \\"p\\" not found"}'
        err = errors.from_api_exception(exc)
        assert type(err) is errors.NotFoundError and err.message == 'pods "p" not found'


async def test_request_timeout_is_transport_error(async_apiserver: ApiServer) -> None:
    """A server slower than the session's request_timeout gives TransportError, not a hang."""
    async_apiserver.faults.latency("GET", "/api/v1/nodes", 1.0, times=1)
    async with await Session.connect(kubeconfig=str(async_apiserver.kubeconfig), request_timeout=0.1) as session:
        with pytest.raises(errors.TransportError):
            await reading.list_objects(session, resources.NODES)
