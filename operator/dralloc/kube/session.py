"""`Session`: one logged-in ApiClient, raw JSON requests over it, and API discovery.

Login follows the usual order: in-cluster service account when `KUBERNETES_SERVICE_HOST`
is set, otherwise a kubeconfig (`kubeconfig=`, else `$KUBECONFIG`, which may list
several files, else `~/.kube/config`). `$KUBECONFIG` is read at `connect()` time rather
than at import, which is when kubernetes_asyncio reads its own default.

Requests go through `ApiClient.call_api` with `_preload_content=False`: the library
signs the request (bearer token, client certificates, token refresh) and we get the
raw aiohttp response back, so any group/version works without generated models, and
the JSON we return is exactly what the server sent. With `_preload_content=False` the
library does not raise for HTTP errors, so `request()` maps every non-2xx answer to a
`KubeError` itself, and every transport failure to `TransportError`.

Query values are stringified here (`"true"`, not Python's `True`), because the
library's own encoding sends `watch=True`, which strict servers reject.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import pathlib
import urllib.parse
from collections.abc import Callable, Mapping
from typing import Any

import aiohttp
from kubernetes_asyncio import client, config
from kubernetes_asyncio.client import rest

from dralloc.kube import errors

logger = logging.getLogger(__name__)

JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"

# Discovery prefers the newest stable version a cluster serves.
PREFERRED_VERSIONS = ("v1", "v1beta2", "v1beta1", "v1alpha3")

_TRANSPORT_ERRORS = (aiohttp.ClientError, asyncio.TimeoutError, OSError)



class _CompactJsonRest(rest.RESTClientObject):
    """The library's REST client, sending JSON bodies compact (no blanks after `,` and `:`), as kubectl
    and client-go send them. kube-apiserver 1.37 keeps a RawExtension field (a claim's or a DeviceClass's
    `config[].opaque.parameters`) as the bytes it was sent; a later patch of the object re-encodes it
    compactly and the comparison of the two spellings refuses every patch of such a claim (`spec:
    Invalid value: null: field is immutable`). The library's own client writes `json.dumps(body)`: a claim
    dralloc created from a template with opaque config could then never be allocated."""

    async def request(self, method: str, url: str, query_params: Any = None, headers: Any = None,
                      body: Any = None, post_params: Any = None, _preload_content: bool = True,
                      _request_timeout: Any = None) -> Any:
        if body is None or post_params or _preload_content:  # dralloc always reads the raw response
            return await super().request(method, url, query_params=query_params, headers=headers, body=body,
                                         post_params=post_params, _preload_content=_preload_content,
                                         _request_timeout=_request_timeout)
        headers = {"Content-Type": JSON, **(headers or {})}
        if isinstance(_request_timeout, aiohttp.ClientTimeout):
            timeout = _request_timeout
        else:
            timeout = aiohttp.ClientTimeout(total=_request_timeout) if _request_timeout else aiohttp.ClientTimeout()
        if query_params:
            url += "?" + urllib.parse.urlencode(query_params)
        extra: dict[str, Any] = {}
        if self.proxy:
            extra["proxy"], extra["proxy_headers"] = self.proxy, self.proxy_headers
        if self.server_hostname:
            extra["server_hostname"] = self.server_hostname
        data = body if isinstance(body, bytes) else json.dumps(body, separators=(",", ":")).encode()
        return await self.pool_manager.request(method.upper(), url, timeout=timeout, headers=headers, data=data,
                                               **extra)


class _RawJsonClient(client.ApiClient):
    """The library's ApiClient without its model serializer: our bodies, headers and queries are plain
    JSON values already (dicts, lists, strings, numbers), which the library's recursive walk only copied
    before json.dumps; at 5,000 nodes that walk was a tenth of the operator's event-loop time (issue 31)."""

    def sanitize_for_serialization(self, obj: Any) -> Any:
        return obj

class Session:
    """A connection to one API server; use `await Session.connect(...)`, close with `close()`."""

    def __init__(self, api_client: Any, *, request_timeout: float | None = 30.0) -> None:
        self._api = api_client  # a kubernetes_asyncio ApiClient, logged in
        self.server: str = str(api_client.configuration.host)
        self.request_timeout = request_timeout  # seconds per non-watch request; None = no limit
        # Called with (method, path) before every write; raises (NotLeaderError) to refuse it
        # unsent. Leader election sets it: a replica that may not act never writes.
        self.write_guard: Callable[[str, str], None] | None = None

    @classmethod
    async def connect(
        cls,
        *,
        kubeconfig: str | None = None,  # None: $KUBECONFIG, else ~/.kube/config
        context: str | None = None,  # None: the kubeconfig's current-context
        in_cluster: bool | None = None,  # None: in-cluster if KUBERNETES_SERVICE_HOST is set
        request_timeout: float | None = 30.0,
    ) -> Session:
        conf = client.Configuration()
        if in_cluster is None:
            in_cluster = kubeconfig is None and bool(os.environ.get("KUBERNETES_SERVICE_HOST"))
        try:
            if in_cluster:
                config.load_incluster_config(client_configuration=conf)  # type: ignore[no-untyped-call]
            else:
                path = kubeconfig or os.environ.get("KUBECONFIG") or str(pathlib.Path.home() / ".kube" / "config")
                await config.load_kube_config(config_file=path, context=context, client_configuration=conf,
                                              persist_config=False)
        except (config.ConfigException, OSError, ValueError, KeyError, TypeError) as exc:
            raise errors.ConfigError(f"cannot load {'in-cluster' if in_cluster else 'kubeconfig'} "
                                     f"credentials: {exc}") from exc
        api = _RawJsonClient(conf)
        await api.rest_client.close()  # unused: its JSON bodies have blanks (see _CompactJsonRest)
        api.rest_client = _CompactJsonRest(conf)
        # kubernetes-asyncio opens its aiohttp session with trust_env=True: every request then
        # reads ~/.netrc and the proxy variables in a worker thread, which was the single largest
        # cost of a placement. The API server address comes from the kubeconfig; proxies for it
        # are set there (proxy-url), not in the environment.
        pool = getattr(api.rest_client, "pool_manager", None)
        if pool is not None and hasattr(pool, "_trust_env") and not conf.proxy:
            pool._trust_env = False
        return cls(api, request_timeout=request_timeout)

    async def close(self) -> None:
        await self._api.close()

    async def __aenter__(self) -> Session:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ---- raw requests (for the kube package's own modules) ---------------------------------

    async def request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, str | int | bool | None] | None = None,
        body: Any = None,
        content_type: str = JSON,
    ) -> Any:
        """Send one request; the parsed JSON answer (None when empty), or a `KubeError`."""
        data, status = await self.request_bytes(method, path, query=query, body=body, content_type=content_type)
        if not data:
            return None
        try:
            return json.loads(data)
        except ValueError as exc:
            raise errors.ServerError(status, "BadResponse",
                                     f"{method} {path}: the answer is not JSON: {data[:errors.MAX_RAW_BODY]!r}"
                                     ) from exc

    async def request_bytes(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, str | int | bool | None] | None = None,
        body: Any = None,
        content_type: str = JSON,
        accept: str = JSON,
    ) -> tuple[bytes, int]:
        """Send one request (a `bytes` body is sent as it is); the answer's bytes and HTTP status, or a
        `KubeError`. For the protobuf writes (kube/protowire.py) and `request`."""
        if method != "GET" and self.write_guard is not None:
            self.write_guard(method, path)
        response = await self._send(method, path, query=query, body=body, content_type=content_type,
                                    timeout=self.request_timeout, accept=accept)
        try:
            return await response.read(), response.status
        except _TRANSPORT_ERRORS as exc:
            raise errors.TransportError(f"{method} {path}: reading the answer failed: {exc!r}") from exc
        finally:
            response.release()

    async def stream(
        self,
        path: str,
        *,
        query: Mapping[str, str | int | bool | None] | None = None,
        timeout: aiohttp.ClientTimeout | None = None,
    ) -> aiohttp.ClientResponse:
        """Open a streaming GET (a watch); the caller reads it and must `close()` it."""
        return await self._send("GET", path, query=query, body=None, content_type=JSON, timeout=timeout)

    async def _send(self, method: str, path: str, *, query: Mapping[str, str | int | bool | None] | None,
                    body: Any, content_type: str, timeout: float | aiohttp.ClientTimeout | None,
                    accept: str = JSON) -> aiohttp.ClientResponse:
        params = [(k, _query_value(v)) for k, v in (query or {}).items() if v is not None]
        try:
            response: aiohttp.ClientResponse = await self._api.call_api(
                path, method,
                query_params=params,
                header_params={"Content-Type": content_type, "Accept": accept},
                body=body,
                auth_settings=["BearerToken"],
                _preload_content=False,
                _return_http_data_only=True,
                _request_timeout=timeout,
            )
        except client.ApiException as exc:  # raised before sending (e.g. a body it cannot encode)
            raise errors.from_api_exception(exc) from exc
        except _TRANSPORT_ERRORS as exc:
            raise errors.TransportError(f"{method} {path}: {exc!r}") from exc
        if 200 <= response.status <= 299:
            return response
        try:
            data = await response.read()
        except _TRANSPORT_ERRORS as exc:
            raise errors.TransportError(f"{method} {path}: HTTP {response.status}, then reading failed: "
                                        f"{exc!r}") from exc
        finally:
            response.release()
        # Shape the failure as the library's own exception so the cause chain looks the
        # same whichever way a request failed.
        api_exc = client.ApiException(status=response.status, reason=response.reason)
        api_exc.body = data
        api_exc.headers = response.headers
        raise errors.from_api_exception(api_exc) from api_exc

    # ---- discovery --------------------------------------------------------------------------

    async def server_minor(self) -> tuple[int, int]:
        """(major, minor) of the API server (GET /version; a minor like "37+" counts as 37)."""
        doc = await self.request("GET", "/version") or {}
        try:
            return int(str(doc.get("major", "")).rstrip("+")), int(str(doc.get("minor", "")).rstrip("+"))
        except ValueError as exc:
            raise errors.KubeError(0, "BadVersion", f"GET /version: unreadable version "
                                   f"{doc.get('major')!r}.{doc.get('minor')!r}") from exc

    async def served_version(self, group: str, kind_plural: str) -> str | None:
        """The version of `group`/`kind_plural` this server serves, None if none.

        Preference: v1, v1beta2, v1beta1, v1alpha3, then any other served version in
        the server's own order (so CRDs at e.g. v1alpha1 are found too).
        """
        if not group:
            found = await self._resource_names("/api/v1")
            return "v1" if kind_plural in found else None
        try:
            doc = await self.request("GET", f"/apis/{group}")
        except errors.NotFoundError:
            return None
        served = [str(v.get("version")) for v in (doc or {}).get("versions") or [] if isinstance(v, dict)]
        ordered = [v for v in PREFERRED_VERSIONS if v in served] + [v for v in served if v not in PREFERRED_VERSIONS]
        for version in ordered:
            if kind_plural in await self._resource_names(f"/apis/{group}/{version}"):
                return version
        return None

    async def serves(self, group: str, version: str, kind_plural: str) -> bool:
        """Whether this server serves `kind_plural` at `group`/`version` (discovery): a CRD that is not
        installed (or not at that version) is not served."""
        return kind_plural in await self._resource_names(f"/apis/{group}/{version}" if group else f"/api/{version}")

    async def _resource_names(self, path: str) -> set[str]:
        try:
            doc = await self.request("GET", path)
        except errors.NotFoundError:
            return set()
        return {str(r.get("name")) for r in (doc or {}).get("resources") or [] if isinstance(r, dict)}


def _query_value(value: str | int | bool) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
