"""Start the operator: logging, the kopf runtime, and its shutdown.

Separate from cli.py so tests and the demo can run the operator in a thread
with settings they build themselves (`run_in_loop`).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import threading
import time
from typing import Any

import kopf

from dralloc.handlers.runtime import Runtime
from dralloc.settings import Settings


class _JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {"time": self.formatTime(record), "level": record.levelname,
                                 "logger": record.name, "message": record.getMessage()}
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry)


def configure_logging(settings: Settings) -> None:
    handler = logging.StreamHandler()
    if settings.runtime.log_format == "json":
        handler.setFormatter(_JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)-7s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(settings.runtime.log_level)
    # kopf reports every watch-event handler call at INFO ("Handler ... succeeded"): with our
    # event handlers on every pod and claim that drowns what matters. Its warnings still show.
    logging.getLogger("kopf.objects").setLevel(max(logging.WARNING, root.level))


def peering_priority(settings: Settings) -> int:
    """Replicas must differ in priority, or kopf freezes them all: derive it from the pod name."""
    if settings.runtime.priority is not None:
        return settings.runtime.priority
    name = os.environ.get("POD_NAME") or os.environ.get("HOSTNAME") or "dralloc"
    return int(hashlib.sha256(name.encode()).hexdigest()[:6], 16) % 1000 + 1


async def run_in_loop(settings: Settings, *, stop_flag: asyncio.Event | threading.Event | None = None,
                      ready_flag: asyncio.Event | threading.Event | None = None,
                      runtime: Runtime | None = None,  # for tests: to look inside the running operator
                      identity: str | None = None,  # for tests: kopf peering identity (default host@pid)
                      ) -> None:
    """Run the operator in the current event loop until stop_flag is set (kopf cancels this loop's tasks)."""
    import dralloc.handlers  # noqa: F401  (registers the handlers)
    from dralloc.handlers.registry import REGISTRY

    if settings.connection.kubeconfig:
        os.environ["KUBECONFIG"] = settings.connection.kubeconfig
    options = settings.runtime
    namespaces = settings.scheduling.namespaces
    await kopf.operator(
        registry=REGISTRY,
        clusterwide=not namespaces,
        namespaces=list(namespaces),
        standalone=options.standalone,
        # Naming a peering makes it mandatory in kopf: only when this replica must peer.
        priority=None if options.standalone else peering_priority(settings),
        peering_name=None if options.standalone else options.peering_name,
        liveness_endpoint=f"http://0.0.0.0:{options.health_port}/healthz" if options.health_port else None,
        identity=identity,  # type: ignore[arg-type]  # kopf.Identity is a NewType of str, not exported
        memo=runtime if runtime is not None else Runtime(settings),
        stop_flag=stop_flag,
        ready_flag=ready_flag,
    )


class OperatorThread:
    """The operator in its own thread and event loop (kopf cancels every task of its loop).

    Used by `dralloc demo` and by the tests, which run the sandbox API server in the same
    process.
    """

    def __init__(self, settings: Settings, *, runtime: Runtime | None = None, identity: str | None = None) -> None:
        self.settings = settings
        self.runtime = runtime if runtime is not None else Runtime(settings)
        self.identity = identity
        self.stop_flag = threading.Event()
        self.ready_flag = threading.Event()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._main, name="dralloc-operator", daemon=True)

    def _main(self) -> None:
        try:
            asyncio.run(run_in_loop(self.settings, stop_flag=self.stop_flag, ready_flag=self.ready_flag,
                                    runtime=self.runtime, identity=self.identity))
        except BaseException as exc:  # reported by start() and by whoever watches `alive`
            self.error = exc

    @property
    def alive(self) -> bool:
        return self.thread.is_alive()

    def start(self, timeout: float = 30.0) -> OperatorThread:
        """Start and wait until kopf is ready; RuntimeError when it died or took too long."""
        self.thread.start()
        deadline = time.monotonic() + timeout
        while not self.ready_flag.wait(0.1):
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the operator did not start: {self.error!r}")
        return self

    def stop(self, timeout: float = 30.0) -> None:
        """Ask kopf to stop and wait for the thread; RuntimeError when it did not stop in time."""
        self.stop_flag.set()
        if self.thread.is_alive():
            self.thread.join(timeout)
        if self.thread.is_alive():
            raise RuntimeError(f"the operator did not stop within {timeout:g} s")


def run(settings: Settings) -> int:
    configure_logging(settings)
    try:
        asyncio.run(run_in_loop(settings))
    except KeyboardInterrupt:
        pass
    return 0
