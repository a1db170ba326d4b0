"""Start the operator: logging, the kopf runtime, and its shutdown.

Separate from cli.py so tests and the demo can run the operator in a thread
with settings they build themselves (`run_in_loop`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import socket
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any

import kopf

from dralloc.handlers.runtime import Runtime
from dralloc.settings import Settings


class _JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {"time": self.formatTime(record), "level": record.levelname,
                                 "replica": getattr(record, "replica", "-"), "logger": record.name,
                                 "message": record.getMessage()}
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry)


# C0 controls, DEL, C1 controls and Unicode's line/paragraph separators: anything a terminal or
# a log shipper could take for the end of a line (or the start of an escape sequence).
_CONTROLS = [*map(chr, range(0x20)), *map(chr, range(0x7F, 0xA0)), "\u2028", "\u2029"]
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_ESCAPES = str.maketrans({c: _NAMED.get(c, f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}")
                          for c in _CONTROLS})
PLAIN_FORMAT = "%(asctime)s %(levelname)-7s [%(replica)s] %(name)s: %(message)s"
CONTINUATION = "  | "  # starts each traceback line of a plain record


def escape_controls(text: str) -> str:
    """`text` on one line: a newline becomes the two characters \\n (\\r, \\t alike), other controls \\xNN
    (the Unicode line separators \\u2028, \\u2029)."""
    return text.translate(_ESCAPES)


class _PlainFormatter(logging.Formatter):
    """One record, one line: what a tenant put into a message (a CEL string, a name) cannot forge lines.

    The message line is escaped (`escape_controls`); a traceback (exc_info, stack_info) keeps its
    lines, each escaped and started with CONTINUATION, so none of them reads as a record of its
    own (a record's line starts with its time). Backslashes are not doubled: a message may show
    a literal "\\n" the same as an escaped newline, but never a line break.
    """

    def __init__(self) -> None:
        super().__init__(PLAIN_FORMAT)

    def format(self, record: logging.LogRecord) -> str:
        # logging.Formatter.format, except that no text is appended unescaped (nor cached on the record).
        record.message = record.getMessage()
        record.asctime = self.formatTime(record, self.datefmt)
        lines = [escape_controls(self.formatMessage(record))]
        if record.exc_info:
            lines.append(self.formatException(record.exc_info))
        elif record.exc_text:
            lines.append(record.exc_text)
        if record.stack_info:
            lines.append(self.formatStack(record.stack_info))
        return "\n".join([lines[0], *(CONTINUATION + escape_controls(line)
                                       for text in lines[1:] for line in text.rstrip("\n").split("\n"))])


class _Replica(logging.Filter):
    """Every line says which replica wrote it (two replicas log to one place in a cluster)."""

    def __init__(self, identity: str) -> None:
        super().__init__()
        self.identity = identity

    def filter(self, record: logging.LogRecord) -> bool:
        record.replica = self.identity
        return True


def configure_logging(settings: Settings, identity: str = "-") -> None:
    handler = logging.StreamHandler()
    handler.addFilter(_Replica(identity))
    if settings.runtime.log_format == "json":
        handler.setFormatter(_JsonFormatter())
    else:
        handler.setFormatter(_PlainFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(settings.runtime.log_level)
    # kopf reports every watch-event handler call at INFO ("Handler ... succeeded"): with our
    # event handlers on every pod and claim that drowns what matters. Its warnings still show.
    logging.getLogger("kopf.objects").setLevel(max(logging.WARNING, root.level))


class _Keeper(logging.Handler):
    def __init__(self, records: list[logging.LogRecord]) -> None:
        super().__init__()
        self.records = records

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@contextlib.contextmanager
def holding_logs() -> Iterator[list[logging.LogRecord]]:
    """Every record logged inside, at any level, kept instead of written (the root logger's handlers and level
    restored after), for `run` to log once `configure_logging` has set --log-format and --log-level up: what
    `dralloc run` logs before it has its settings (a kubeconfig warning, the API server's version) then reads
    like every other line, not as Python's bare last-resort line before the first JSON record."""
    held: list[logging.LogRecord] = []
    root = logging.getLogger()
    saved_handlers, saved_level = root.handlers[:], root.level
    root.handlers[:] = [_Keeper(held)]
    root.setLevel(logging.NOTSET)
    try:
        yield held
    finally:
        root.handlers[:] = saved_handlers
        root.setLevel(saved_level)


async def _wait(flag: asyncio.Event | threading.Event) -> None:
    if isinstance(flag, asyncio.Event):
        await flag.wait()
        return
    while not flag.is_set():
        await asyncio.sleep(0.05)


def usable_port(address: str, port: int, *, may_move: bool, what: str) -> int:
    """`port`, or (when it is taken and `may_move`) a free one on `address`; 0 stays 0 (off).

    The probe binds the way the listeners will (SO_REUSEADDR, as http.server's and aiohttp's
    servers do): connections of the previous process left in TIME_WAIT on the port do not
    make it "taken" (a restart within a minute of a scrape would crash-loop), a socket still
    listening on it (another replica) does.
    """
    if not port:
        return 0
    with socket.socket(socket.AF_INET6 if ":" in address else socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((address, port))
            return port
        except OSError as exc:
            if not may_move:
                raise OSError(f"{what}: cannot listen on {address}:{port}: {exc.strerror}") from exc
    with socket.socket(socket.AF_INET6 if ":" in address else socket.AF_INET, socket.SOCK_STREAM) as free:
        free.bind((address, 0))
        moved = int(free.getsockname()[1])
    logging.getLogger(__name__).warning("%s: port %d on %s is taken (another replica on this host?); using %d",
                                        what, port, address, moved)
    return moved


async def run_in_loop(settings: Settings, *, stop_flag: asyncio.Event | threading.Event | None = None,
                      ready_flag: asyncio.Event | threading.Event | None = None,
                      runtime: Runtime | None = None,  # for tests: to look inside the running operator
                      ) -> None:
    """Run the operator in the current event loop until stop_flag is set (or SIGINT/SIGTERM in the main thread).

    Stopping is ours first, then kopf's: the election gives the Lease up and the control
    loops finish their step (handlers/operating.py `stop_everything`) before kopf stops
    its watches, so a rolling update hands over at once and no write is cut in half.
    """
    import dralloc.handlers  # noqa: F401  (registers the handlers)
    from dralloc.handlers import operating
    from dralloc.handlers.registry import REGISTRY

    if settings.connection.kubeconfig:
        os.environ["KUBECONFIG"] = settings.connection.kubeconfig
    options = settings.runtime
    namespaces = settings.scheduling.namespaces
    rt = runtime if runtime is not None else Runtime(settings)
    rt.metrics_port = usable_port(options.metrics_address, options.metrics_port,
                                  may_move=options.metrics_port_may_move, what="/metrics")
    health_port = usable_port(options.health_address, options.health_port,
                              may_move=options.health_port_may_move, what="/healthz")
    loop = asyncio.get_running_loop()
    requested, kopf_stop, kopf_ready = asyncio.Event(), asyncio.Event(), asyncio.Event()

    async def stop_when_asked() -> None:
        waits: list[asyncio.Task[Any]] = [asyncio.create_task(requested.wait())]
        if stop_flag is not None:
            waits.append(asyncio.create_task(_wait(stop_flag)))
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in waits:
                task.cancel()
        logging.getLogger(__name__).info("stopping (replica %s)", rt.identity)
        await operating.stop_everything(rt)
        kopf_stop.set()

    async def when_ready() -> None:
        await kopf_ready.wait()
        if threading.current_thread() is threading.main_thread():
            # kopf installed its own handlers when it started; ours stop the loops first.
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(sig, requested.set)
        if ready_flag is not None:
            ready_flag.set()

    # Created before kopf starts, so kopf's shutdown leaves them to us.
    helpers = [asyncio.create_task(stop_when_asked(), name="dralloc-stopper"),
               asyncio.create_task(when_ready(), name="dralloc-ready")]
    try:
        await kopf.operator(
            registry=REGISTRY,
            clusterwide=not namespaces,
            namespaces=list(namespaces),
            standalone=True,  # one replica acts through our own leader election (handlers/leading.py)
            liveness_endpoint=(f"http://{options.health_address}:{health_port}/healthz" if health_port else None),
            memo=rt,
            stop_flag=kopf_stop,
            ready_flag=kopf_ready,
        )
    finally:
        for task in helpers:
            task.cancel()
        await asyncio.gather(*helpers, return_exceptions=True)


class OperatorThread:
    """The operator in its own thread and event loop (kopf cancels every task of its loop).

    Used by `dralloc demo` and by the tests, which run the sandbox API server in the same
    process.
    """

    def __init__(self, settings: Settings, *, runtime: Runtime | None = None) -> None:
        self.settings = settings
        self.runtime = runtime if runtime is not None else Runtime(settings)
        self.stop_flag = threading.Event()
        self.ready_flag = threading.Event()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._main, name="dralloc-operator", daemon=True)

    def _main(self) -> None:
        try:
            asyncio.run(run_in_loop(self.settings, stop_flag=self.stop_flag, ready_flag=self.ready_flag,
                                    runtime=self.runtime))
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


def run(settings: Settings, held: Sequence[logging.LogRecord] = ()) -> int:
    """`dralloc run`: `held` (`holding_logs`) is logged first, in the format and at the level of every other line."""
    from dralloc.allocation import selectors

    selectors.set_cache_limit(selectors.CACHE_EXPRESSIONS, settings.scheduling.cel_cache_results)
    runtime = Runtime(settings)
    configure_logging(settings, runtime.identity)
    for record in held:
        logger = logging.getLogger(record.name)
        if logger.isEnabledFor(record.levelno):
            logger.handle(record)
    try:
        asyncio.run(run_in_loop(settings, runtime=runtime))
    except KeyboardInterrupt:
        pass
    return 0
