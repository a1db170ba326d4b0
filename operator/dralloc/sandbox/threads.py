"""Run an `ApiServer` on its own event loop in a background thread.

kopf cancels every task of the loop it runs in when it stops, and a synchronous test
(or `kopf.testing.KopfRunner`) blocks its thread, so tests that drive an operator need
the API server elsewhere. `run_in_thread(...)` starts one and returns a handle whose
methods are safe to call from any thread: they hop onto the server's loop and wait.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import pathlib
import threading
from collections.abc import Callable, Iterable
from typing import Any, Self, TypeVar

from dralloc.sandbox import apiserver, faults, recording

T = TypeVar("T")
Obj = dict[str, Any]


class ThreadedApiServer:
    """An `ApiServer` living in a daemon thread; use as a context manager or call `stop()`."""

    def __init__(self, **options: Any) -> None:
        self._options = options
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="dralloc-sandbox", daemon=True)
        self.server: apiserver.ApiServer | None = None
        self.kubeconfig: pathlib.Path | None = None  # set by write_kubeconfig()

    def start(self) -> Self:
        self._thread.start()

        async def make() -> apiserver.ApiServer:
            server = apiserver.ApiServer(**self._options)
            await server.start()
            return server

        self.server = asyncio.run_coroutine_threadsafe(make(), self._loop).result(30)
        return self

    def stop(self) -> None:
        if self.server is not None:
            asyncio.run_coroutine_threadsafe(self.server.stop(), self._loop).result(30)
            self.server = None
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
        if not self._loop.is_closed() and not self._loop.is_running():
            self._loop.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def call(self, fn: Callable[[], T]) -> T:
        """Run `fn` on the server's loop and return its result."""
        future: concurrent.futures.Future[T] = concurrent.futures.Future()

        def run() -> None:
            try:
                future.set_result(fn())
            except BaseException as exc:
                future.set_exception(exc)

        self._loop.call_soon_threadsafe(run)
        return future.result(30)

    @property
    def _srv(self) -> apiserver.ApiServer:
        if self.server is None:
            raise RuntimeError("the sandbox is not running")
        return self.server

    @property
    def url(self) -> str:
        return self._srv.url

    @property
    def token(self) -> str | None:
        return self._srv.token

    @property
    def faults(self) -> faults.Faults:
        return self._srv.faults

    def write_kubeconfig(self, path: str | os.PathLike[str], token: str | None = None) -> pathlib.Path:
        """A kubeconfig for this server (the fixture's own stays in `kubeconfig` unless `token` is None)."""
        written = self._srv.write_kubeconfig(path, token)
        if token is None:
            self.kubeconfig = written
        return written

    def seed(self, objects: Iterable[Obj]) -> list[Obj]:
        objs = list(objects)
        return self.call(lambda: self._srv.seed(objs))

    def get(self, api_version: str, kind: str, name: str, namespace: str = "") -> Obj | None:
        return self.call(lambda: self._srv.get(api_version, kind, name, namespace))

    def list_objects(self, api_version: str, kind: str, namespace: str | None = None) -> list[Obj]:
        return self.call(lambda: self._srv.list_objects(api_version, kind, namespace))

    @property
    def requests(self) -> recording.Recorder:
        return self._srv.requests

    def wait_for(
        self,
        api_version: str,
        kind: str,
        name: str,
        namespace: str = "",
        predicate: Callable[[Obj | None], bool] | None = None,  # None: "the object exists"
        timeout: float = 10.0,
    ) -> Obj | None:
        """Block until `predicate(object or None)` holds (raises TimeoutError after `timeout`)."""
        coro = self._srv.wait_for(api_version, kind, name, namespace, predicate, timeout)
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout + 5)

    def compact(self) -> None:
        self.call(self._srv.compact)

    def close_watches(self) -> None:
        self.call(self._srv.close_watches)

    @property
    def resource_version(self) -> int:
        return self.call(lambda: self._srv.store.rv)


def run_in_thread(**options: Any) -> ThreadedApiServer:
    """Start an `ApiServer(**options)` in a background thread and return its handle."""
    return ThreadedApiServer(**options).start()
