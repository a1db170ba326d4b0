"""`ApiServer`: the aiohttp application around the store, and its lifecycle.

The server owns one event loop's worth of state (store, watch hub, collector, PV binder,
disruption controller, optional pod simulator) and serves it on 127.0.0.1 by default. Use it as
`async with ApiServer(...) as srv:` in the loop of your choice; a kopf operator must
not share that loop (kopf cancels every task of its loop on exit), which is what
`threads.run_in_thread()` is for.

Requests pass four layers before the REST verbs: the Host and Origin check (403 unless
the request names this server by a loopback name and comes from no web page elsewhere:
a page in a browser must not drive the sandbox, by DNS rebinding or a cross-site form),
the optional bearer token (401), the fault rules (`faults.py`: injected statuses,
latency, errors after a committed write), and error rendering (every `ApiError` becomes
its Status body; anything else is a logged 500). `/_faults` (loopback clients only,
JSON bodies only) lists, adds and clears fault rules while the server runs; fault rules
never apply to it.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import logging
import os
import pathlib
import re
import threading
import urllib.parse
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any

from aiohttp import web

from dralloc.sandbox import (
    admission,
    collecting,
    discovery,
    disruption,
    endpoints,
    errors,
    kubeconfig,
    persistence,
    recording,
    resources,
    scheduler,
    simulator,
    volumebinding,
    watches,
)
from dralloc.sandbox import (
    faults as faults_,
)
from dralloc.sandbox import (
    store as store_,
)

logger = logging.getLogger(__name__)
Obj = dict[str, Any]
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class ApiServer:
    """A Kubernetes-compatible API server; `url` is known once started."""

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,  # 0 = a free port, chosen at start
        token: str | Sequence[str] | None = None,  # None = no authentication; several = any of them
        seed: Iterable[Obj] = (),
        state_file: str | os.PathLike[str] | None = None,  # load at start, save at stop
        simulate_pods: bool = False,
        sim_start_delay: float = 0.5,
        faults: str | None = None,  # a --faults spec
        faults_seed: int | None = None,  # seed of the faults' random draws (p=); None = random
        history: int = 20_000,  # watch events kept for resuming
        bookmark_interval: float = 30.0,
        validate_schemas: bool = True,
        kubernetes_version: str = "1.37",  # the release it runs as: 1.36 serves scheduling.k8s.io/v1alpha2; 1.38: its DRA rules
        pv_binder: bool = True,  # play the PV controller's binding (volumebinding.py), as KCM runs it by default
        disruption_controller: bool = True,  # play KCM's disruption controller (disruption.py): PDB status
    ) -> None:
        tokens = [token] if isinstance(token, str) else list(token or ())
        self.tokens = frozenset(tokens)
        self.token = tokens[0] if tokens else None  # the one write_kubeconfig() uses
        self.host, self.port = host, port
        self.state_file = pathlib.Path(state_file) if state_file else None
        self.registry = resources.Registry(kubernetes_version)
        self.hub = watches.Hub(history)
        self.admission = admission.Admission(validate_schemas=validate_schemas,
                                             namespace_labels=self._namespace_labels, node=self._node,
                                             nodes=self._nodes, objects=self._objects,
                                             release=kubernetes_version)
        self.store = store_.Store(self.registry, self.hub, self.admission)
        self.collector = collecting.Collector(self.store)
        self.volume_binder = volumebinding.VolumeBinder(self.store) if pv_binder else None
        self.disruption_controller = disruption.DisruptionController(self.store) if disruption_controller else None
        self.simulator = simulator.PodSimulator(self.store, start_delay=sim_start_delay) if simulate_pods else None
        self.scheduler = scheduler.SchedulerStandIn(self.store, delay=min(sim_start_delay, 0.05)) \
            if simulate_pods else None
        self.faults = faults_.Faults(seed=faults_seed)
        self.endpoints = endpoints.Endpoints(self.store, self.hub, bookmark_interval=bookmark_interval,
                                             faults=self.faults)
        self.requests = recording.Recorder()
        if faults:
            self.faults.load(faults)
        self._initial_seed = list(seed)
        self._runner: web.AppRunner | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self.kubeconfig: pathlib.Path | None = None  # set by write_kubeconfig()

    def _namespace_labels(self, namespace: str) -> dict[str, str]:
        entry = self.store.objects["/namespaces"].get(("", namespace))
        return dict((entry.obj["metadata"].get("labels") or {}) if entry else {})

    def _node(self, name: str) -> Obj | None:
        entry = self.store.objects["/nodes"].get(("", name))
        return entry.obj if entry else None

    def _nodes(self) -> list[Obj]:
        return [entry.obj for entry in self.store.objects["/nodes"].values()]

    def _objects(self, storage: str) -> list[Obj]:
        """The stored objects of one storage (admission plugins look up StorageClasses, PriorityClasses)."""
        store = getattr(self, "store", None)  # None while the store creates its initial objects
        return [entry.obj for entry in store.objects.get(storage, {}).values()] if store is not None else []

    # ---- lifecycle --------------------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    async def __aenter__(self) -> ApiServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self.faults.bind("close-watches", self._in_loop(self.hub.close_all))
        self.faults.bind("compact", self._in_loop(lambda: self.hub.compact(self.store.rv)))
        if self.state_file and self.state_file.exists():
            persistence.load_file(self.store, self.state_file)
        elif self._initial_seed:
            self.seed(self._initial_seed)
        app = web.Application(middlewares=[self._middleware], client_max_size=64 * 2**20)
        app.router.add_route("*", "/{tail:.*}", self._route)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port, reuse_address=True)
        await site.start()
        server = getattr(site, "_server", None)
        if self.port == 0 and server is not None and server.sockets:
            self.port = server.sockets[0].getsockname()[1]
        self._tasks.append(asyncio.create_task(self.collector.run(), name="sandbox-collector"))
        if self.volume_binder is not None:
            self._tasks.append(asyncio.create_task(self.volume_binder.run(), name="sandbox-pv-binder"))
        if self.disruption_controller is not None:
            self._tasks.append(asyncio.create_task(self.disruption_controller.run(), name="sandbox-disruption"))
        for rule in list(self.faults.rules):
            if rule.action in faults_.PERIODIC:
                self._start_periodic(rule)
        self.faults.on_periodic(self._start_periodic)
        logger.info("sandbox API server listening on %s", self.url)

    async def stop(self) -> None:
        self.faults.on_periodic(None)
        self.hub.close_all()
        if self.simulator is not None:
            self.simulator.stop()
        if self.scheduler is not None:
            self.scheduler.stop()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks.clear()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self.state_file:
            self.save_state(self.state_file)

    def save_state(self, path: str | os.PathLike[str]) -> None:
        persistence.save_file(self.store, path)

    def _in_loop(self, fn: Callable[[], None]) -> Callable[[], None]:
        """`fn` runs on the server's loop, also when called from another thread (and waits)."""
        def call() -> None:
            loop = self._loop
            if loop is None or _running_loop() is loop:
                fn()
                return
            done = threading.Event()

            def run() -> None:
                try:
                    fn()
                finally:
                    done.set()
            loop.call_soon_threadsafe(run)
            done.wait(10)
        return call

    def _start_periodic(self, rule: faults_.Rule) -> None:
        """Run a periodic fault rule on the server's loop (callable from any thread)."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return

        def start() -> None:
            self._tasks = [t for t in self._tasks if not t.done()]
            self._tasks.append(loop.create_task(self._periodic(rule), name="sandbox-faults"))
        if _running_loop() is loop:
            start()
        else:
            loop.call_soon_threadsafe(start)

    async def _periodic(self, rule: faults_.Rule) -> None:
        while self.faults.active(rule):
            await asyncio.sleep(rule.every)
            if not self.faults.fire_periodic(rule):
                return
            if rule.action == "compact":
                self.hub.compact(self.store.rv)
            else:
                self.hub.close_matching(lambda w: rule.targets(w.agent, w.token))

    # ---- helpers for tests and the CLI ------------------------------------------------------

    def write_kubeconfig(self, path: str | os.PathLike[str], token: str | None = None) -> pathlib.Path:
        """A kubeconfig for this server, with `token` (default: the first one configured; only
        then is it remembered as `self.kubeconfig`)."""
        written = kubeconfig.write(path, self.url, token or self.token)
        if token is None:
            self.kubeconfig = written
        return written

    def seed(self, objects: Iterable[Obj]) -> list[Obj]:
        """Store objects as given (status included); namespaces they name are created."""
        stored = []
        for obj in _flatten(objects):
            rt = self.registry.by_kind(obj.get("apiVersion", ""), obj.get("kind", ""))
            if rt is None:
                raise errors.ApiError(404, f"no resource serves {obj.get('apiVersion')}/{obj.get('kind')}")
            meta = obj.get("metadata") or {}
            ns = meta.get("namespace") or "default" if rt.namespaced else ""
            if rt.namespaced and ("", ns) not in self.store.objects["/namespaces"]:
                self.store.create(self.registry.get("", "v1", "namespaces"),  # type: ignore[arg-type]
                                  "", {"metadata": {"name": ns}})
            clean = {**obj, "metadata": {k: v for k, v in meta.items() if k != "resourceVersion"}}
            stored.append(self.store.create(rt, ns, clean, keep_status=True))
        return stored

    def get(self, api_version: str, kind: str, name: str, namespace: str = "") -> Obj | None:
        """A stored object as its apiVersion shows it, or None."""
        rt = self.registry.by_kind(api_version, kind)
        if rt is None:
            return None
        entry = self.store.objects[rt.storage].get((namespace if rt.namespaced else "", name))
        return json.loads(json.dumps(rt.outward(entry.obj))) if entry else None

    def list_objects(self, api_version: str, kind: str, namespace: str | None = None) -> list[Obj]:
        rt = self.registry.by_kind(api_version, kind)
        if rt is None:
            return []
        return [json.loads(json.dumps(rt.outward(e.obj))) for _, e in self.store.scan(rt.storage, namespace)]

    async def wait_for(
        self,
        api_version: str,
        kind: str,
        name: str,
        namespace: str = "",
        predicate: Callable[[Obj | None], bool] | None = None,  # None: "the object exists"
        timeout: float = 10.0,
    ) -> Obj | None:
        """The object once `predicate(object or None)` holds, checked on every write to it."""
        rt = self.registry.by_kind(api_version, kind)
        if rt is None:
            raise errors.ApiError(404, f"no resource serves {api_version}/{kind}")
        check = predicate or (lambda obj: obj is not None)
        key = (namespace if rt.namespaced else "", name)
        done = asyncio.Event()

        def listener(event: watches.Event) -> None:
            if event.storage == rt.storage and (event.namespace, event.obj["metadata"]["name"]) == key:
                done.set()

        self.store.listeners.append(listener)
        try:
            async with asyncio.timeout(timeout):
                while True:
                    current = self.get(api_version, kind, name, namespace)
                    if check(current):
                        return current
                    done.clear()
                    await done.wait()
        finally:
            self.store.listeners.remove(listener)

    def compact(self) -> None:
        self.faults.compact()

    def close_watches(self) -> None:
        self.faults.close_watches()

    # ---- HTTP -------------------------------------------------------------------------------

    @web.middleware
    async def _middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """Answer (token, faults, handler, errors as Status), then record the request."""
        response = await self._answer(request, handler)
        if request.path.startswith(FAULTS_PATH):
            return response
        raw = await request.read() if request.method != "GET" else None  # aiohttp caches the body
        self.requests.add(request.method, request.path, dict(request.query), request.content_type, raw,
                          response.status)
        return response

    async def _answer(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        try:
            self._check_origin(request)
            if self.tokens and bearer_token(request) not in self.tokens:
                raise errors.ApiError(401, "Unauthorized")
            if request.path.startswith(FAULTS_PATH):
                return await handler(request)
            decision = self.faults.decide(request.method, request.path, request.headers.get("User-Agent", ""),
                                          bearer_token(request))
            if decision is None:
                return await handler(request)
            if decision.delay:
                await asyncio.sleep(decision.delay)
            if decision.status is not None and not decision.applied_then:
                raise _injected(decision)
            try:
                response = await handler(request)
            except errors.ApiError:
                self.faults.refund(decision)  # nothing was applied: the rule did not fire
                raise
            if decision.applied_then:
                if response.status >= 300:
                    self.faults.refund(decision)
                    return response
                raise _injected(decision)
            return response
        except errors.ApiError as exc:
            return endpoints.respond(exc.status_body(), exc.code)
        except (web.HTTPException, ConnectionResetError, asyncio.CancelledError):
            raise
        except Exception as exc:
            logger.exception("sandbox request failed: %s %s", request.method, request.path_qs)
            return endpoints.respond(errors.status_body(500, f"internal error: {exc}"), 500)

    def _check_origin(self, request: web.Request) -> None:
        """403 unless the Host header names this server as a local client does, and an Origin
        header (which browsers send, API clients do not) is a loopback one: a web page elsewhere
        reaches us only through DNS rebinding (its own name in Host) or a cross-site request
        (its origin in Origin), and both are refused here."""
        host = request.headers.get("Host")
        if not host_allowed(host, self.port, self.host):
            raise errors.ApiError(403, f"the Host header {host!r} does not name this server: the sandbox only "
                                       f"answers requests for localhost, 127.x.y.z or [::1] (port {self.port})")
        origin = request.headers.get("Origin")
        if origin is not None and not origin_allowed(origin, self.host):
            raise errors.ApiError(403, f"requests from the web origin {origin!r} are refused: the sandbox only "
                                       "serves pages on this machine (localhost, 127.x.y.z, [::1])")

    async def _route(self, request: web.Request) -> web.StreamResponse:
        path = request.path.rstrip("/") or "/"
        parts = [p for p in path.split("/") if p]
        if parts and parts[0] == FAULTS_PATH.strip("/"):
            return await self._faults_endpoint(request, parts[1:])
        if request.method == "GET":
            doc = self._discovery(path, parts, request)
            if doc is not None:
                return doc
        if (len(parts) >= 3 and parts[0] == "api") or (len(parts) >= 4 and parts[0] == "apis"):
            return await self.endpoints.handle(request)
        raise errors.ApiError(404, "the server could not find the requested resource")

    def _discovery(self, path: str, parts: list[str], request: web.Request) -> web.Response | None:
        respond = endpoints.respond
        if path in ("/healthz", "/livez", "/readyz"):
            return web.Response(text="ok")
        if path == "/version":
            return respond(discovery.version_info(self.registry.release))
        if path == "/api":
            return respond(discovery.api_versions(f"{self.host}:{self.port}"))
        if path == "/apis":
            return respond(discovery.api_group_list(self.registry))
        if path == "/openapi/v2":
            if "protobuf" in request.headers.get("Accept", "") and "json" not in request.headers.get("Accept", ""):
                raise errors.ApiError(406, "only application/json is served")
            return respond(discovery.openapi_v2())
        if path == "/openapi/v3":
            return respond(discovery.openapi_v3_index(self.registry))
        if parts[:2] == ["openapi", "v3"] and len(parts) in (4, 5):
            group, version = ("", parts[3]) if parts[2] == "api" else (parts[3], parts[4] if len(parts) > 4 else "")
            doc = discovery.openapi_v3_gv(self.registry, group, version)
            if doc is None:
                raise errors.ApiError(404, "the server could not find the requested resource")
            return respond(doc)
        found: Obj | None = None
        if len(parts) == 2 and parts[0] == "api":
            found = discovery.resource_list(self.registry, "", parts[1])
        elif len(parts) == 2 and parts[0] == "apis":
            found = discovery.api_group(self.registry, parts[1])
        elif len(parts) == 3 and parts[0] == "apis":
            found = discovery.resource_list(self.registry, parts[1], parts[2])
        else:
            return None
        if found is None:
            raise errors.ApiError(404, "the server could not find the requested resource")
        return respond(found)


    async def _faults_endpoint(self, request: web.Request, rest: list[str]) -> web.Response:
        """GET lists rules and counters; POST adds rules (spec text or JSON); DELETE clears
        them (`?counters=true` also zeroes the counters) or, as /_faults/{id}, removes one."""
        if not is_loopback(request.remote):
            raise errors.ApiError(403, "the fault control endpoint only serves loopback clients")
        if len(rest) > 1 or (rest and request.method != "DELETE"):
            raise errors.ApiError(404, "the server could not find the requested resource")
        if request.method == "GET":
            return endpoints.respond(self.faults.snapshot())
        if request.method == "POST":
            if endpoints.media_type(request.headers.get("Content-Type", "")) != "application/json":
                raise errors.ApiError(415, "the fault control endpoint only accepts application/json bodies: "
                                           '{"spec": "..."}, a rule object or a list of them')
            raw = (await request.read()).decode(errors="replace")
            try:
                added = self.faults.load_json(json.loads(raw or "null"))
            except ValueError as exc:
                raise errors.ApiError(400, f"bad fault rules: {exc}") from exc
            return endpoints.respond({"added": [r.describe() for r in added], **self.faults.snapshot()}, 201)
        if request.method == "DELETE":
            if rest:
                if not rest[0].isdigit() or not self.faults.remove(int(rest[0])):
                    raise errors.ApiError(404, f"no fault rule {rest[0]!r}")
            else:
                self.faults.clear(counters=request.query.get("counters", "").lower() in ("true", "1"))
            return endpoints.respond(self.faults.snapshot())
        raise errors.ApiError(405, f"{request.method} is not supported here")


FAULTS_PATH = "/_faults"


def is_loopback(remote: str | None) -> bool:
    """Whether a peer address is this machine (127.0.0.0/8, ::1, or IPv4-mapped loopback)."""
    if not remote:
        return False
    try:
        address = ipaddress.ip_address(remote.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped.is_loopback
    return address.is_loopback


_HOST = re.compile(r"(\[[^\]]+\]|[^:\[\]]+)(?::(\d*))?")


def local_host(name: str, listen: str = "") -> bool:
    """Whether a host name (an IPv6 address without brackets) is this machine's: localhost,
    127.x.y.z, ::1, or the address the server listens on when that is a specific one."""
    name = name.lower()
    if name == "localhost" or (listen not in ("", "0.0.0.0", "::") and name == listen.lower()):
        return True
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return is_loopback(name)


def host_allowed(host: str | None, port: int, listen: str = "") -> bool:
    """Whether a Host header names this server as a local client does: a local host name
    (`local_host`; IPv6 in brackets) with no port or the server's. No Host header at all
    (HTTP/1.0) is accepted: a browser always sends one."""
    if host is None:
        return True
    found = _HOST.fullmatch(host.strip())
    if found is None:
        return False
    name, given = found.groups()
    if given and int(given) != port:
        return False
    if name.startswith("["):
        return ":" in name and local_host(name[1:-1], listen)
    return ":" not in name and local_host(name, listen)


def origin_allowed(origin: str, listen: str = "") -> bool:
    """Whether an Origin header is a page on this machine (http or https, a local host name)."""
    try:
        parts = urllib.parse.urlsplit(origin.strip())
        name = parts.hostname
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(name) and local_host(name or "", listen)


def bearer_token(request: web.Request) -> str | None:
    auth = request.headers.get("Authorization", "")
    return auth[7:] if auth.startswith("Bearer ") else None


def _injected(decision: faults_.Decision) -> errors.ApiError:
    status = decision.status or 500
    return errors.ApiError(status, decision.message, details={} if status == 504 else None)


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _flatten(objects: Iterable[Obj]) -> Iterable[Obj]:
    for obj in objects:
        if not obj:
            continue
        if obj.get("kind", "").endswith("List") and isinstance(obj.get("items"), list):
            yield from _flatten(obj["items"])
        else:
            yield obj
