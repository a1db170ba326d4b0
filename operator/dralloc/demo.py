"""`dralloc demo` (`make run`): the whole system on one laptop, in one process, in seconds.

Why it exists: the operator needs a cluster with DRA drivers and GPUs to show what it
does, and nobody has one at hand. The sandbox API server plays the cluster (seeded
with the demo GPU/NIC cluster, our CRDs, and its pod simulator so bound pods turn
Running), the real operator runs against it over HTTP exactly as it would against a
cluster, and the objects in `examples/demo/` are what a user would `kubectl apply`.
The demo then reports where every pod and claim went, and stays up so kubectl (or
k9s, or the `kubernetes` client) can be pointed at it.

Both servers run in daemon threads with their own event loops (kopf cancels every
task of the loop it runs in); this thread only waits, reads the sandbox's state
through its Python handle, prints, and shuts down in order: operator, then sandbox.
It talks to neither through a Kubernetes client library, so the demo needs only the
runtime dependencies.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import logging
import pathlib
import signal
import socket
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any, TextIO

from dralloc import documents, running
from dralloc.model import quantities
from dralloc.sandbox import ApiError, ThreadedApiServer, demo_objects
from dralloc.settings import (
    ConnectionSettings,
    LeaderElectionSettings,
    RuntimeSettings,
    SchedulingSettings,
    Settings,
)
from dralloc.wording import plural

Obj = dict[str, Any]
REPO = pathlib.Path(__file__).resolve().parents[2]
# Installed without the repository (`pip install .`), the demo's objects and the CRDs come with the
# package: operator/dralloc/data/ holds copies of examples/demo/ and crds/ (tests/demo/test_packaged_data.py
# checks they are the same). From a checkout, the repository's own files are read.
PACKAGED = pathlib.Path(__file__).resolve().parent / "data"


def _checkout_or_packaged(in_repo: pathlib.Path, packaged: str) -> pathlib.Path:
    return in_repo if in_repo.is_dir() else PACKAGED / packaged


DEFAULT_EXAMPLES = _checkout_or_packaged(REPO / "examples" / "demo", "demo")
DEFAULT_CRDS = _checkout_or_packaged(REPO / "crds", "crds")
DEFAULT_KUBECONFIG = "dralloc-demo.kubeconfig"
PREFERRED_PORT = 6443  # what a real API server uses; taken only when free
EXIT_ALL_PLACED, EXIT_NOT_ALL_PLACED, EXIT_ERROR = 0, 1, 2
POLL_SECONDS = 0.2


class DemoError(Exception):
    """Something prevented the demo from starting (message for the user, exit code 2)."""


@dataclasses.dataclass(frozen=True)
class Options:
    kubeconfig: str = DEFAULT_KUBECONFIG
    port: int | None = None  # None: PREFERRED_PORT when free, else any free port
    metrics_port: int = 8080  # 0: no /metrics
    timeout: float = 60.0
    once: bool = False
    examples: pathlib.Path = DEFAULT_EXAMPLES
    crds: pathlib.Path = DEFAULT_CRDS
    log_level: str = "WARNING"


# ---- reading the examples and the outcome -------------------------------------------------------


def load_yaml_dir(directory: pathlib.Path) -> list[Obj]:
    """Every object of every *.yaml in `directory`, files in name order (as `kubectl apply -f DIR`)."""
    if not directory.is_dir():
        raise DemoError(f"{directory}: no such directory")
    objects: list[Obj] = []
    for path in sorted(directory.glob("*.yaml")):
        try:
            docs = documents.parse(path.read_text())
        except documents.Error as exc:
            raise DemoError(f"{path}: {exc}") from exc
        objects.extend(doc for doc in docs if isinstance(doc, dict))
    return objects


def demo_pods(objects: Sequence[Obj]) -> list[tuple[str, str]]:
    """(namespace, name) of every Pod among the examples, in file order."""
    return [((o.get("metadata") or {}).get("namespace") or "default", o["metadata"]["name"])
            for o in objects if o.get("kind") == "Pod" and o.get("apiVersion") == "v1"]


@dataclasses.dataclass(frozen=True)
class ClaimOutcome:
    entry: str  # the pod's name for it (spec.resourceClaims[].name)
    claim: str | None  # the ResourceClaim's name; None until it exists
    devices: tuple[str, ...]  # "request=pool/device", empty until allocated
    allocated: bool
    reserved: bool  # reservedFor names this pod


@dataclasses.dataclass(frozen=True)
class PodOutcome:
    namespace: str
    name: str
    exists: bool
    node: str | None
    claims: tuple[ClaimOutcome, ...]
    message: str  # PodScheduled=False message, if any

    @property
    def placed(self) -> bool:
        return self.node is not None and all(c.allocated and c.reserved for c in self.claims)


def readable(quantity: str) -> str:
    """The shorter of a quantity's decimal and binary spellings: consumed capacity is written in
    BinarySI as upstream does (50G shows up as 48828125Ki), which nobody reads at a glance."""
    try:
        parsed = quantities.Quantity.parse(quantity)
    except quantities.QuantityError:
        return quantity
    spellings = [str(parsed),
                 quantities.canonical(parsed.value, quantities.QuantityFormat.DECIMAL_SI),
                 quantities.canonical(parsed.value, quantities.QuantityFormat.BINARY_SI)]
    return min(spellings, key=len)


def _device(result: Obj) -> str:
    text = f"{result.get('request')}={result.get('pool')}/{result.get('device')}"
    consumed = result.get("consumedCapacity") or {}
    if consumed:
        text += "(" + ",".join(f"{k}={readable(str(v))}" for k, v in sorted(consumed.items())) + ")"
    return text


def _claim_outcome(server: ThreadedApiServer, pod: Obj, entry: Obj) -> ClaimOutcome:
    meta = pod.get("metadata") or {}
    name = entry.get("resourceClaimName")
    if name is None:  # from a template: the generated claim is recorded in the pod's status
        for status in (pod.get("status") or {}).get("resourceClaimStatuses") or []:
            if status.get("name") == entry.get("name"):
                name = status.get("resourceClaimName")
    claim = server.get("resource.k8s.io/v1", "ResourceClaim", name, meta.get("namespace", "")) if name else None
    status = (claim or {}).get("status") or {}
    allocation = status.get("allocation")
    results = ((allocation or {}).get("devices") or {}).get("results") or []
    reserved = any(r.get("uid") == meta.get("uid") for r in status.get("reservedFor") or [])
    return ClaimOutcome(entry=str(entry.get("name")), claim=name, devices=tuple(_device(r) for r in results),
                        allocated=allocation is not None, reserved=reserved)


def outcome(server: ThreadedApiServer, namespace: str, name: str) -> PodOutcome:
    pod = server.get("v1", "Pod", name, namespace)
    if pod is None:
        return PodOutcome(namespace, name, exists=False, node=None, claims=(), message="")
    spec = pod.get("spec") or {}
    claims = tuple(_claim_outcome(server, pod, e) for e in spec.get("resourceClaims") or [])
    message = ""
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
            message = condition.get("message") or condition.get("reason") or ""
    return PodOutcome(namespace, name, exists=True, node=spec.get("nodeName"), claims=claims, message=message)


def outcomes(server: ThreadedApiServer, pods: Sequence[tuple[str, str]]) -> list[PodOutcome]:
    return [outcome(server, ns, name) for ns, name in pods]


def render(results: Sequence[PodOutcome], out: TextIO) -> None:
    """pod -> node -> devices per claim; then every pod not placed, with why."""
    width = max([len("POD"), *(len(r.name) for r in results)])
    node_width = max([len("NODE"), *(len(r.node or "-") for r in results)])
    out.write(f"{'POD':<{width}}  {'NODE':<{node_width}}  CLAIMS\n")
    for r in results:
        lines = []
        for c in r.claims:
            if c.claim is None:
                lines.append(f"{c.entry}: (claim not created yet)")
            elif not c.allocated:
                lines.append(f"{c.claim}: (not allocated)")
            else:
                lines.append(f"{c.claim}: {', '.join(c.devices) or '(no devices)'}")
        lines = lines or ["-"]
        out.write(f"{r.name:<{width}}  {r.node or '-':<{node_width}}  {lines[0]}\n")
        for line in lines[1:]:
            out.write(f"{'':<{width}}  {'':<{node_width}}  {line}\n")
    pending = [r for r in results if not r.placed]
    if pending:
        out.write(f"\nNOT PLACED ({len(pending)}):\n")
        for r in pending:
            if not r.exists:
                why = "the pod does not exist"
            elif r.message:
                why = r.message
            elif r.node is not None:
                why = "bound, but its claims are not all allocated and reserved for it"
            else:
                why = "Pending (no PodScheduled condition yet)"
            out.write(f"  {r.namespace}/{r.name}: {why}\n")
    placed = len(results) - len(pending)
    out.write(f"\n{placed} of {len(results)} demo pods placed with their claims allocated.\n")
    out.flush()


GANG_EVENT_WAIT = 3.0  # seconds render_gangs waits for a placed gang's Event


def render_gangs(server: ThreadedApiServer, examples: Sequence[Obj], out: TextIO) -> None:
    """Each PodGroup of the examples: its members, and how dralloc placed them (its GangPlaced
    or GangUnfit Event), so the demo shows a gang placed as one."""
    groups = [(o["metadata"].get("namespace") or "default", o["metadata"]["name"])
              for o in examples if o.get("kind") == "PodGroup"]
    if not groups:
        return
    out.write("\nGANGS (PodGroups: all members placed together, or none)\n")

    def decisions() -> list[Obj]:
        return [e for e in server.list_objects("events.k8s.io/v1", "Event")
                if (e.get("regarding") or {}).get("kind") == "PodGroup" and e.get("reason") in ("GangPlaced", "GangUnfit")]

    # The Event follows the binds by a moment: wait a little for every group's.
    deadline = time.monotonic() + GANG_EVENT_WAIT
    events = decisions()
    while len({(e.get("regarding") or {}).get("name") for e in events}) < len(groups) and time.monotonic() < deadline:
        time.sleep(POLL_SECONDS)
        events = decisions()
    for namespace, name in groups:
        members = [o["metadata"]["name"] for o in examples if o.get("kind") == "Pod"
                   and ((o.get("spec") or {}).get("schedulingGroup") or {}).get("podGroupName") == name
                   and (o["metadata"].get("namespace") or "default") == namespace]
        said = [e for e in events if (e.get("regarding") or {}).get("name") == name
                and ((e.get("regarding") or {}).get("namespace") or namespace) == namespace]
        latest = said[-1] if said else None
        what = f"{latest['reason']}: {latest.get('note', '')}" if latest else "(not decided yet)"
        out.write(f"  {namespace}/{name} ({plural(len(members), 'pod')}: {', '.join(members)})\n    {what}\n")
    out.flush()


def wait_until_placed(server: ThreadedApiServer, pods: Sequence[tuple[str, str]], timeout: float,
                      operator: running.OperatorThread, stop: threading.Event) -> list[PodOutcome]:
    """Poll until every pod is placed, the timeout passes, the operator dies, or the user interrupts."""
    deadline = time.monotonic() + timeout
    while True:
        results = outcomes(server, pods)
        if all(r.placed for r in results) or time.monotonic() >= deadline or not operator.alive:
            return results
        if stop.wait(POLL_SECONDS):
            return results


# ---- the two servers --------------------------------------------------------------------------


def _port_free(port: int) -> bool:
    """Whether 127.0.0.1:port can be listened on (with SO_REUSEADDR, as the sandbox binds)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def start_sandbox(port: int | None, seed: Sequence[Obj]) -> ThreadedApiServer:
    chosen = port if port is not None else (PREFERRED_PORT if _port_free(PREFERRED_PORT) else 0)
    server = ThreadedApiServer(port=chosen, seed=list(seed), simulate_pods=True)
    try:
        return server.start()
    except OSError as exc:
        server.stop()
        if exc.errno == errno.EADDRINUSE:
            raise DemoError(f"--port {chosen}: address in use (--port 0 picks a free one)") from exc
        raise DemoError(f"cannot start the sandbox on port {chosen}: {exc}") from exc


def operator_settings(kubeconfig: pathlib.Path, options: Options) -> Settings:
    return Settings(
        connection=ConnectionSettings(kubeconfig=str(kubeconfig)),
        scheduling=SchedulingSettings(),
        runtime=RuntimeSettings(metrics_port=options.metrics_port, metrics_address="127.0.0.1", health_port=0,
                                leader_election=LeaderElectionSettings(enabled=False), log_level=options.log_level),
    )


# ---- the command --------------------------------------------------------------------------------


@contextlib.contextmanager
def _interrupts(stop: threading.Event) -> Iterator[None]:
    """SIGINT/SIGTERM set `stop` instead of raising wherever the main thread happens to be."""
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _shown(path: pathlib.Path) -> str:
    """`path` relative to the current directory when it is below it (shorter to read)."""
    try:
        return str(path.resolve().relative_to(pathlib.Path.cwd()))
    except ValueError:
        return str(path)


def _crds(directory: pathlib.Path) -> list[Obj]:
    crds = load_yaml_dir(directory)
    if not any(c.get("kind") == "CustomResourceDefinition" for c in crds):
        raise DemoError(f"{directory}: no CustomResourceDefinitions (the operator needs crds/)")
    return crds


def run(options: Options, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    try:
        return _run(options, out)
    except DemoError as exc:
        sys.stderr.write(f"dralloc demo: {exc}\n")
        return EXIT_ERROR


def _run(options: Options, out: TextIO) -> int:
    examples = load_yaml_dir(options.examples)
    pods = demo_pods(examples)
    if not pods:
        raise DemoError(f"{options.examples}: no Pods to place")
    seed = [*demo_objects(), *_crds(options.crds)]
    metrics_port = options.metrics_port
    if metrics_port and not _port_free(metrics_port):
        sys.stderr.write(f"dralloc demo: metrics port {metrics_port} is in use; /metrics is off "
                         "(--metrics-port N to choose another)\n")
        metrics_port = 0
    options = dataclasses.replace(options, metrics_port=metrics_port)
    stop = threading.Event()
    with _interrupts(stop):
        server = start_sandbox(options.port, seed)
        operator: running.OperatorThread | None = None
        try:
            kubeconfig = server.write_kubeconfig(options.kubeconfig)
            settings = operator_settings(kubeconfig, options)
            running.configure_logging(settings)
            # kopf warns that it cannot install signal handlers in a thread: the demo handles them.
            logging.getLogger("kopf._core.reactor.running").setLevel(logging.ERROR)
            out.write(f"sandbox API server: {server.url} (demo cluster: 4 nodes x 8 GPUs, 2 NICs each)\n")
            operator = running.OperatorThread(settings)
            operator.start()
            out.write("operator: running (standalone"
                      + (f", metrics on http://127.0.0.1:{metrics_port}/metrics)\n" if metrics_port else ")\n"))
            try:
                server.seed(examples)
            except ApiError as exc:  # admission rejected an example: name it, no traceback
                raise DemoError(f"{_shown(options.examples)}: {exc}") from exc
            out.write(f"applied {_shown(options.examples)}: {plural(len(examples), 'object')}, {plural(len(pods), 'pod')}; "
                      f"waiting up to {options.timeout:g}s for placement...\n\n")
            out.flush()
            results = wait_until_placed(server, pods, options.timeout, operator, stop)
            render(results, out)
            render_gangs(server, examples, out)
            if not operator.alive:
                sys.stderr.write(f"dralloc demo: the operator stopped: {operator.error!r}\n")
            all_placed = all(r.placed for r in results)
            if options.once:
                return EXIT_ALL_PLACED if all_placed else EXIT_NOT_ALL_PLACED
            out.write(f"\nThe cluster keeps running. Point kubectl at it:\n"
                      f"  KUBECONFIG={options.kubeconfig} kubectl get pods,resourceclaims -A\n"
                      f"  KUBECONFIG={options.kubeconfig} kubectl describe pod -n {pods[0][0]} {pods[0][1]}\n"
                      f"Press Ctrl-C to stop.\n")
            out.flush()
            while not stop.wait(0.5):
                if not operator.alive:
                    sys.stderr.write(f"dralloc demo: the operator stopped: {operator.error!r}\n")
                    return EXIT_ERROR
            out.write("stopping...\n")
            out.flush()
            return EXIT_ALL_PLACED
        finally:
            if operator is not None:
                operator.stop()
            server.stop()
