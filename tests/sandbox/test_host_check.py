"""Only local clients drive the sandbox: a request must name it by a loopback name in its Host
header (not a DNS-rebound name of some web site), and a browser's Origin must be a local page.
kubectl, kopf and the Python clients send `Host: 127.0.0.1:PORT` and no Origin
(test_client_*.py run them)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from tests.sandbox.conftest import Http, configmap

from dralloc.sandbox import ApiServer, apiserver

CM = "/api/v1/namespaces/default/configmaps"


async def send(http: Http, method: str, path: str, headers: dict[str, str], body: Any = None) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body)
    async with http.session.request(method, http.url + path, data=data,
                                    headers={"Content-Type": "application/json", **headers}) as resp:
        text = await resp.text()
        try:
            return resp.status, json.loads(text)
        except ValueError:
            return resp.status, text


@pytest.mark.parametrize(("host", "allowed"), [
    ("127.0.0.1:6443", True), ("127.0.0.1", True), ("localhost:6443", True), ("LocalHost", True),
    ("[::1]:6443", True), ("[::1]", True), ("127.8.9.10:6443", True), ("[::ffff:127.0.0.1]:6443", True),
    (None, True),  # HTTP/1.0 without a Host header: no browser sends that
    ("127.0.0.1:7000", False), ("evil.example:6443", False), ("evil.example", False), ("localhost.evil.example", False),
    ("10.0.0.1:6443", False), ("192.168.1.20", False), ("::1", False), ("[localhost]", False), ("", False),
    ("127.1:6443", False), ("0x7f000001", False), ("2130706433", False), ("[::1]x", False),
])
def test_host_header_names_a_loopback_address(host: str | None, allowed: bool) -> None:
    assert apiserver.host_allowed(host, 6443) is allowed


def test_host_header_may_name_the_address_the_server_listens_on() -> None:
    assert apiserver.host_allowed("10.1.2.3:6443", 6443, listen="10.1.2.3")
    assert apiserver.host_allowed("[fd00::1]:6443", 6443, listen="fd00::1")
    assert not apiserver.host_allowed("evil.example:6443", 6443, listen="0.0.0.0")
    assert not apiserver.host_allowed("10.1.2.3:6443", 6443, listen="0.0.0.0")


@pytest.mark.parametrize(("origin", "allowed"), [
    ("http://localhost:3000", True), ("http://127.0.0.1", True), ("https://[::1]:8443", True),
    ("http://evil.example", False), ("https://localhost.evil.example", False), ("null", False),
    ("file://", False), ("", False), ("ftp://localhost", False),
])
def test_origin_is_a_local_page(origin: str, allowed: bool) -> None:
    assert apiserver.origin_allowed(origin) is allowed


@pytest.mark.parametrize("path", ["/version", "/healthz", "/api/v1/namespaces", "/_faults"])
async def test_requests_for_another_host_are_refused(async_apiserver: ApiServer, http: Http, path: str) -> None:
    """What a page of evil.example gets after rebinding its name to 127.0.0.1."""
    code, body = await send(http, "GET", path, {"Host": f"evil.example:{async_apiserver.port}"})
    assert code == 403 and body["kind"] == "Status" and body["reason"] == "Forbidden"
    assert "Host header 'evil.example:" in body["message"]
    code, _ = await send(http, "GET", path, {"Host": f"localhost:{async_apiserver.port}"})
    assert code == 200


async def test_writes_for_another_host_change_nothing(async_apiserver: ApiServer, http: Http) -> None:
    code, _ = await send(http, "POST", CM, {"Host": "evil.example"}, configmap("c"))
    assert code == 403
    code, _ = await send(http, "POST", "/_faults", {"Host": "evil.example"}, {"spec": "* * 500"})
    assert code == 403
    code, _ = await send(http, "POST", CM, {"Host": "127.0.0.1:1"}, configmap("c"))
    assert code == 403, "another port is another server"
    assert (await http.get(f"{CM}/c"))[0] == 404 and async_apiserver.faults.rules == []


async def test_requests_from_a_web_page_elsewhere_are_refused(async_apiserver: ApiServer, http: Http) -> None:
    """A cross-site form or fetch() names the right Host; its Origin gives it away."""
    code, body = await send(http, "POST", CM, {"Origin": "http://evil.example"}, configmap("c"))
    assert code == 403 and body["reason"] == "Forbidden" and "http://evil.example" in body["message"]
    assert (await send(http, "POST", "/_faults", {"Origin": "null"}, {"spec": "* * 500"}))[0] == 403
    assert (await http.get(f"{CM}/c"))[0] == 404 and async_apiserver.faults.rules == []
    code, _ = await send(http, "POST", CM, {"Origin": "http://localhost:3000"}, configmap("c"))
    assert code == 201, "a page served on this machine may"


async def test_http_1_0_without_a_host_header_is_served(async_apiserver: ApiServer) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", async_apiserver.port)
    writer.write(b"GET /version HTTP/1.0\r\n\r\n")
    await writer.drain()
    answer = await asyncio.wait_for(reader.read(), 10)
    writer.close()
    assert answer.startswith(b"HTTP/1.0 200") or answer.startswith(b"HTTP/1.1 200"), answer[:80]
