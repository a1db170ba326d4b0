"""The REST verbs: URL -> resource type -> store call -> JSON response.

One handler parses every resource URL (`/api/v1/...`, `/apis/{g}/{v}/...`, the legacy
`/watch/` prefix), so the rules for namespaces, names and subresources live in one
place. Lists and GETs reuse the stored JSON bytes; a watch is a chunked stream fed by
its `watches.Watcher` queue, with bookmarks when asked for and a server-side timeout
when `timeoutSeconds` is given. kubectl's `as=Table` requests (GET, list and watch)
get the Table kube-apiserver prints for the kind (`tables.py`).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import re
from collections.abc import Callable
from typing import Any

import yaml
from aiohttp import web

from dralloc.sandbox import (
    admission,
    errors,
    evictions,
    patching,
    pods,
    protobuf,
    resources,
    selectors,
    tables,
    watches,
)
from dralloc.sandbox import faults as faults_
from dralloc.sandbox import store as store_

Obj = dict[str, Any]
JSON = "application/json"
PROTOBUF = "application/vnd.kubernetes.protobuf"
_JSON_HEADERS = {"Content-Type": JSON}
_TRUE = ("true", "1")
_LIVENESS = 5.0  # how often an idle watch checks that its client is still there

# What kube-apiserver 1.37 decodes (CBOR is behind a feature gate that is off by default).
BODY_TYPES = (JSON, "application/yaml", PROTOBUF)  # create, update, delete options
PATCH_TYPES = ("application/json-patch+json", "application/merge-patch+json",
               "application/strategic-merge-patch+json", "application/apply-patch+yaml")
CUSTOM_PATCH_TYPES = ("application/json-patch+json", "application/merge-patch+json",
                      "application/apply-patch+yaml")  # no strategic merge patch for custom resources
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")


def respond(obj: Obj | bytes, status: int = 200) -> web.Response:
    body = obj if isinstance(obj, bytes) else json.dumps(obj, separators=(",", ":")).encode()
    headers = _JSON_HEADERS
    retry = (obj.get("details") or {}).get("retryAfterSeconds") if isinstance(obj, dict) and status >= 300 else None
    if isinstance(retry, int) and retry > 0:  # as kube-apiserver's error writer adds it
        headers = {**_JSON_HEADERS, "Retry-After": str(retry)}
    return web.Response(body=body, status=status, headers=headers)


def _flag(request: web.Request, name: str) -> bool:
    return request.query.get(name, "").lower() in _TRUE


class Endpoints:
    def __init__(self, store: store_.Store, hub: watches.Hub, *, bookmark_interval: float = 30.0,
                 faults: faults_.Faults | None = None) -> None:
        self.store = store
        self.registry = store.registry
        self.hub = hub
        self.bookmark_interval = bookmark_interval
        self.faults = faults

    # ---- routing ----------------------------------------------------------------------------

    def locate(self, path: str) -> tuple[resources.ResourceType, str | None, str | None, str, bool]:
        """(type, namespace, name, subresource, legacy-watch) for a resource URL."""
        parts = [p for p in path.split("/") if p]
        if parts[0] == "api":
            group, rest = "", parts[1:]
        else:
            group, rest = parts[1], parts[2:]
        version, rest = rest[0], rest[1:]
        legacy_watch = bool(rest) and rest[0] == "watch"
        if legacy_watch:
            rest = rest[1:]
        namespace: str | None = None
        if len(rest) >= 3 and rest[0] == "namespaces" and rest[2] not in ("status", "finalize"):
            namespace, rest = rest[1], rest[2:]
        if not rest or len(rest) > 3:
            raise errors.ApiError(404, "the server could not find the requested resource")
        rt = self.registry.get(group, version, rest[0])
        if rt is None or (namespace is not None and not rt.namespaced):
            raise errors.ApiError(404, "the server could not find the requested resource")
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else ""
        if sub and sub != "status" and sub not in rt.subresources:
            raise errors.ApiError(404, "the server could not find the requested resource")
        if sub == "status" and not rt.status:
            raise errors.ApiError(404, "the server could not find the requested resource")
        if rt.namespaced and name is not None and namespace is None:
            raise errors.ApiError(404, "the server could not find the requested resource")
        return rt, namespace, name, sub, legacy_watch

    async def handle(self, request: web.Request) -> web.StreamResponse:
        rt, ns, name, sub, legacy_watch = self.locate(request.path)
        method = request.method
        token = admission.strict_fields.set(request.query.get("fieldValidation") == "Strict")
        try:
            if method == "GET":
                if name is None:
                    if legacy_watch or _flag(request, "watch"):
                        return await self.watch(request, rt, ns)
                    return self.listing(request, rt, ns)
                return self.get(request, rt, ns or "", name)
            dry_run = request.query.get("dryRun") == "All"
            if method == "POST" and name is None:
                if ns is None and rt.namespaced:
                    raise errors.ApiError(405, "a namespace is required to create this resource")
                obj = self.store.create(rt, ns or "", await _json(request), dry_run=dry_run, owned=True)
                return respond(obj, 201)
            if method == "POST" and sub == "eviction":
                answer = evictions.Eviction(self.store, rt).evict(ns or "", name or "", await _json(request),
                                                                  dry_run=dry_run)
                return respond(answer, int(answer["code"]))
            if method == "POST" and sub == "binding":
                return respond(self.pod_action(rt, ns or "", name or "", sub, await _json(request)), 201)
            if method == "PUT" and name is not None:
                if sub == "finalize":
                    return respond(self.finalize(rt, name, await _json(request)))
                return respond(self.store.update(rt, ns or "", name, await _json(request), subresource=sub,
                                                 dry_run=dry_run, owned=True))
            if method == "PATCH" and name is not None:
                return await self.patch(request, rt, ns or "", name, sub, dry_run)
            if method == "DELETE":
                options = await _json(request, optional=True) or {}
                if "propagationPolicy" in request.query:
                    options["propagationPolicy"] = request.query["propagationPolicy"]
                if request.query.get("gracePeriodSeconds", "").isdigit():
                    options["gracePeriodSeconds"] = int(request.query["gracePeriodSeconds"])
                if name is None:
                    return respond(self.delete_collection(request, rt, ns, options))
                return respond(self.store.delete(rt, ns or "", name, options, dry_run=dry_run))
            raise errors.ApiError(405, f"{method} is not supported here")
        finally:
            admission.strict_fields.reset(token)

    # ---- reads ------------------------------------------------------------------------------

    def get(self, request: web.Request, rt: resources.ResourceType, ns: str, name: str) -> web.Response:
        entry = self.store.entry(rt, ns, name)
        if (want := _table_request(request)) is not None:
            meta = {"resourceVersion": str(entry.obj["metadata"].get("resourceVersion", ""))}
            return respond(tables.table(rt, [(entry.obj, rt.outward(entry.obj))], api_version=want[0],
                                        include=want[1], metadata=meta))
        if rt.from_storage is None and entry.obj.get("apiVersion") == rt.api_version:
            return respond(entry.raw)
        return respond(rt.outward(entry.obj))

    def _matcher(self, request: web.Request, rt: resources.ResourceType) -> selectors.Matcher | None:
        return selectors.combine(
            selectors.label_matcher(request.query.get("labelSelector")),
            selectors.field_matcher(request.query.get("fieldSelector"), rt.field_paths()))

    def listing(self, request: web.Request, rt: resources.ResourceType, ns: str | None) -> web.Response:
        matcher = self._matcher(request, rt)
        limit = int(request.query.get("limit") or 0)
        start, list_rv = _decode_continue(request.query.get("continue"))
        list_rv = list_rv or self.store.rv
        same_shape = rt.from_storage is None
        chunks: list[bytes] = []
        objs: list[tuple[Obj, Obj]] = []
        table = _table_request(request)
        last: tuple[str, str] | None = None
        more = False
        entries = self.store.scan(rt.storage, ns) if start is None else self._snapshot(rt, ns, list_rv)
        for key, entry in entries:
            if start is not None and key <= start:
                continue
            obj = entry.obj if same_shape else rt.outward(entry.obj)
            if matcher is not None and not matcher(obj):
                continue
            if limit and len(chunks) + len(objs) >= limit:
                more = True
                break
            last = key
            if table:
                objs.append((entry.obj, obj if not same_shape else rt.outward(obj)))
            elif same_shape and obj.get("apiVersion") == rt.api_version:
                chunks.append(entry.raw)
            else:
                chunks.append(json.dumps(rt.outward(obj), separators=(",", ":")).encode())
        meta: Obj = {"resourceVersion": str(list_rv)}
        if more and last is not None:
            meta["continue"] = _encode_continue(last, list_rv)
        if table:
            return respond(tables.table(rt, objs, api_version=table[0], include=table[1], metadata=meta,
                                        listing=True))
        head = json.dumps({"kind": f"{rt.kind}List", "apiVersion": rt.api_version, "metadata": meta},
                          separators=(",", ":")).encode()
        return respond(head[:-1] + b',"items":[' + b",".join(chunks) + b"]}")

    def _snapshot(self, rt: resources.ResourceType, ns: str | None,
                  rv: int) -> list[tuple[tuple[str, str], store_.Entry]]:
        """The objects as they were at `rv`, from the current state and the watch history,
        so that every page of a paginated list shows the same moment (410 once compacted)."""
        if rv < self.hub.compacted_rv:
            raise errors.gone("The provided continue parameter is too old to display a consistent list result. "
                              "You can start a new list without the continue parameter.")
        then: dict[tuple[str, str], store_.Entry | None] = {}
        for event in self.hub.history:
            if event.rv <= rv or event.storage != rt.storage or (ns is not None and event.namespace != ns):
                continue
            key = (event.namespace, event.obj["metadata"]["name"])
            if key not in then:  # the first change after `rv` knows what was there before it
                then[key] = None if event.prev is None else store_.Entry(event.prev, store_.dumps(event.prev))
        current = dict(self.store.scan(rt.storage, ns))
        keys = sorted(set(current) | set(then))
        return [(k, e) for k in keys if (e := then[k] if k in then else current.get(k)) is not None]

    async def watch(self, request: web.Request, rt: resources.ResourceType, ns: str | None) -> web.StreamResponse:
        watcher = watches.Watcher(rt, ns, self._matcher(request, rt))
        if (want := _table_request(request)) is not None:
            watcher.render = _table_renderer(rt, *want)
        watcher.agent = request.headers.get("User-Agent", "")
        auth = request.headers.get("Authorization", "")
        watcher.token = auth[7:] if auth.startswith("Bearer ") else None
        if self.faults is not None:
            watcher.lag = _lag_source(self.faults, request.path, watcher.agent, watcher.token)
        rv_text = request.query.get("resourceVersion", "")
        initial = _flag(request, "sendInitialEvents")
        since: int | None = None
        if rv_text not in ("", "0") and not initial:
            try:
                since = int(rv_text)
            except ValueError as exc:
                raise errors.ApiError(400, f"invalid resource version {rv_text!r}") from exc
        bookmarks = _flag(request, "allowWatchBookmarks")
        timeout = float(request.query.get("timeoutSeconds") or 0)
        response = web.StreamResponse(headers={"Content-Type": JSON, "Cache-Control": "no-cache"})
        response.enable_chunked_encoding()
        await response.prepare(request)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout if timeout > 0 else None
        self.hub.subscribe(watcher, since, self.store.current_events(rt.storage))
        if initial and bookmarks:
            self.hub.bookmark(watcher, self.store.rv, initial_end=True)
        next_bookmark = loop.time() + self.bookmark_interval
        try:
            while True:
                wait = min(next_bookmark - loop.time(), _LIVENESS) if bookmarks else _LIVENESS
                if deadline is not None:
                    left = deadline - loop.time()
                    wait = min(wait, left)
                    if left <= 0:
                        break
                try:
                    line = watcher.queue.get_nowait() if not watcher.queue.empty() \
                        else await asyncio.wait_for(watcher.queue.get(), wait)
                except TimeoutError:
                    if request.transport is None or request.transport.is_closing():
                        break  # the client left; aiohttp does not cancel the handler for us
                    if bookmarks and loop.time() >= next_bookmark:
                        self.hub.bookmark(watcher, self.store.rv)
                        next_bookmark = loop.time() + self.bookmark_interval
                    continue
                lines = [line]
                if watcher.queue.empty():
                    await asyncio.sleep(0)  # let concurrent writes queue up: one send for several events
                while not watcher.queue.empty() and len(lines) < 512:
                    lines.append(watcher.queue.get_nowait())
                closing = watches.CLOSE in lines
                payload = b"".join(lines)
                if payload:
                    await response.write(payload)
                if closing:
                    break
            await response.write_eof()
        except ConnectionResetError:
            pass  # the client went away: nothing left to tell it
        finally:
            self.hub.unsubscribe(watcher)
        return response

    # ---- writes -----------------------------------------------------------------------------

    async def patch(self, request: web.Request, rt: resources.ResourceType, ns: str, name: str, sub: str,
                    dry_run: bool) -> web.Response:
        ctype = patch_type(request.headers.get("Content-Type", ""), custom=rt.crd)
        raw = await request.read()
        try:
            body = yaml.safe_load(raw) if ctype == "application/apply-patch+yaml" else json.loads(raw or b"null")
        except (ValueError, yaml.YAMLError) as exc:
            raise errors.ApiError(400, f"the patch is not valid: {exc}") from exc
        try:
            entry = self.store.entry(rt, ns, name)
        except errors.ApiError:
            if ctype == "application/apply-patch+yaml":
                return respond(self.store.create(rt, ns, body, dry_run=dry_run), 201)
            raise
        current = rt.outward(json.loads(entry.raw))
        if ctype == "application/merge-patch+json":
            new = patching.merge_patch(current, body)
        elif ctype == "application/json-patch+json":
            new = patching.json_patch(current, body)
        else:  # strategic merge patch (built-in kinds only: patch_type refused it for the others) or apply
            new = (patching.strategic_merge_patch(current, body, rt.api_version, rt.kind) if rt.strategic
                   else patching.merge_patch(current, body))
        if not isinstance(new, dict):
            raise errors.ApiError(422, "the patch did not produce an object")
        return respond(self.store.update(rt, ns, name, new, subresource=sub, dry_run=dry_run, owned=True))

    def delete_collection(self, request: web.Request, rt: resources.ResourceType, ns: str | None,
                          options: Obj) -> Obj:
        matcher = self._matcher(request, rt)
        items = []
        for (obj_ns, obj_name), entry in list(self.store.scan(rt.storage, ns)):
            if matcher is None or matcher(rt.outward(entry.obj)):
                items.append(self.store.delete(rt, obj_ns, obj_name, options))
        return {"kind": f"{rt.kind}List", "apiVersion": rt.api_version,
                "metadata": {"resourceVersion": str(self.store.rv)}, "items": items}

    def pod_action(self, rt: resources.ResourceType, ns: str, name: str, sub: str, body: Obj) -> Obj:
        """pods/binding sets the node (once); pods/eviction is `evictions.py`'s."""
        entry = self.store.entry(rt, ns, name)
        target = (body.get("target") or {}).get("name")
        if not target:
            raise errors.invalid("Binding", "", name, [("target.name", "Required value")])
        pod = json.loads(entry.raw)
        pods.bind(pod, target, (body.get("metadata") or {}).get("uid"))
        self.store.put_internal((rt.storage, ns, name), pod, entry.obj)
        return errors.status_body(201)

    def finalize(self, rt: resources.ResourceType, name: str, body: Obj) -> Obj:
        entry = self.store.entry(rt, "", name)
        new = json.loads(entry.raw)
        new.setdefault("spec", {})["finalizers"] = (body.get("spec") or {}).get("finalizers") or []
        return rt.outward(self.store.put_internal((rt.storage, "", name), new, entry.obj))


async def _json(request: web.Request, *, optional: bool = False) -> Any:
    """The body of a create or update (or, `optional`, of a DELETE: its options, if it has any)."""
    raw = await request.read()
    if optional and not raw:
        return None  # kube-apiserver looks at the Content-Type of a DELETE only when a body came
    media = body_type(request.headers.get("Content-Type", ""))
    if media == PROTOBUF:
        return protobuf.decode(raw)
    if not raw.strip():
        if optional:
            return None
        raise errors.ApiError(400, "the request has no body")
    try:
        if media == "application/yaml":
            return yaml.safe_load(raw)
        return json.loads(raw)
    except (ValueError, yaml.YAMLError) as exc:
        raise errors.ApiError(400, f"the body is not valid JSON: {exc}") from exc


def unsupported_media_type(accepted: tuple[str, ...]) -> errors.ApiError:
    """kube-apiserver's 415 for a body it has no decoder for (negotiation.errUnsupportedMediaType)."""
    return errors.ApiError(415, "the body of the request was in an unknown format - accepted media types "
                                f"include: {', '.join(accepted)}")


def media_type(header: str) -> str | None:
    """The media type of a Content-Type value, lower-cased and without parameters, or None when it
    does not parse (as Go's mime.ParseMediaType: type/subtype tokens, parameters key=value)."""
    base, _, params = header.partition(";")
    kind, slash, sub = base.strip().lower().partition("/")
    if not slash or not _TOKEN.fullmatch(kind) or not _TOKEN.fullmatch(sub):
        return None
    for param in params.split(";"):
        key, equals, _value = param.partition("=")
        if param.strip() and (not equals or not _TOKEN.fullmatch(key.strip())):
            return None
    return f"{kind}/{sub}"


def body_type(header: str) -> str:
    """The serializer kube-apiserver picks for the body of a create, update or delete: JSON when
    there is no Content-Type, else the type named (charset and other parameters ignored) if it is
    JSON, YAML or protobuf; anything else (text/plain, forms, ...) is a 415."""
    if not header:
        return JSON
    media = media_type(header)
    if media not in BODY_TYPES:
        raise unsupported_media_type(BODY_TYPES)
    return media


def patch_type(header: str, *, custom: bool) -> str:
    """The patch type of a PATCH, refused as kube-apiserver refuses it: built-in resources are
    routed by go-restful, which answers a Content-Type outside the patch types (or none) with its
    own `415: Unsupported Media Type`; the patch handler (the only check for custom resources)
    then wants the value up to `;` to be one of the types exactly."""
    accepted = CUSTOM_PATCH_TYPES if custom else PATCH_TYPES
    if not custom:
        offered = header or "application/octet-stream"  # go-restful's stand-in for a missing one
        if not any(part.split(";", 1)[0].strip(" ") in accepted for part in offered.split(",")):
            raise errors.ApiError(415, "415: Unsupported Media Type", details={})
    cut = header.find(";")
    ctype = header[:cut] if cut > 0 else header
    if ctype not in accepted:
        raise unsupported_media_type(accepted)
    return ctype


def _encode_continue(key: tuple[str, str], rv: int) -> str:
    return base64.urlsafe_b64encode(json.dumps({"rv": rv, "start": list(key)}).encode()).decode()


def _decode_continue(token: str | None) -> tuple[tuple[str, str] | None, int]:
    if not token:
        return None, 0
    try:
        data = json.loads(base64.urlsafe_b64decode(token.encode()))
        return (str(data["start"][0]), str(data["start"][1])), int(data["rv"])
    except (ValueError, KeyError, IndexError, TypeError, binascii.Error) as exc:
        raise errors.ApiError(400, "the continue token is not valid") from exc


def _lag_source(faults: faults_.Faults, path: str, agent: str, token: str | None) -> Callable[[], float]:
    def lag() -> float:
        return faults.lag(path, agent, token) if faults.lagging else 0.0
    return lag


def _table_request(request: web.Request) -> tuple[str, str] | None:
    """(Table apiVersion, includeObject) when the client asked for a Table, else None."""
    version = tables.negotiate(request.headers.get("Accept", ""))
    if version is None:
        return None
    return version, tables.include_option(request.query.get("includeObject"))


def _table_renderer(rt: resources.ResourceType, version: str, include: str) -> Callable[[Obj, Obj], bytes]:
    """Watch events as one-row Tables; like kube-apiserver, only the first carries the columns."""
    first = [True]

    def render(stored: Obj, shown: Obj) -> bytes:
        meta = {"resourceVersion": str(stored["metadata"].get("resourceVersion", ""))}
        tbl = tables.table(rt, [(stored, shown)], api_version=version, include=include, metadata=meta,
                           headers=first[0])
        first[0] = False
        return json.dumps(tbl, separators=(",", ":")).encode()
    return render
