"""One tenant against the others (issue 26): what a hostile namespace costs everyone else, before and after.

Each scenario runs on a fresh sandbox API server (this tree's `python -m dralloc.sandbox`, in its own process, the
same server for both versions) and a fresh operator process per version, both measured in the same run:

  before   `python -m dralloc run` from --baseline-tree DIR (PYTHONPATH=DIR/operator): a checkout of the code before
           issue 26's fix, `git worktree add /tmp/dralloc-base 7c21875`;
  after    the same from --after-tree (default: this working tree, uncommitted edits included).

Only flags both versions know are passed, so "after" runs with its defaults (--decision-cpu-budget 0.5, backoff
1 s doubling to 10 s). The cluster: --nodes nodes x --gpus GPUs of driver gpu.example.com (int attributes `index`,
`numa` = index // 4), DeviceClass `gpu`. A canary pod is bound first (the operator is up: "start" is from its process
start to that bind). Then the tenant `noisy` does its worst, then --good pods of namespace `good` (one GPU each, from a
template) are created one every --good-interval seconds; each one's wait is measured from just before its create
request until a watch of this process sees it bound (spec.nodeName): what the user waits for. A pod not bound --cap
seconds after the last create counts as not bound ("> cap").

Scenarios (--only a,b,...):

  idle        nothing else: the reference
  flood-9gpu  --noisy pods each asking 9 GPUs (nothing has more than 8), created first; the good pods follow as soon
              as every one carries PodScheduled=False (or after --settle-timeout s; the same in flood-cel and gangs).
              With --quiet-cap S they wait, after that, until no status of the tenant's pods was written for 2 s
              (at most S s more): the writes then counted are those of a tenant at rest, not of one whose pods
              are still in their first backoffs
  flood-hard  --noisy pods whose claim asks three requests of 3 GPUs in one NUMA domain (matchAttribute numa; a
              domain has 4): each request fits alone, the three never together, so every node is searched and the
              explanation searches again with things relaxed (issue 31: what such pods cost the others)
  flood-cel   --noisy pods, each with its own template whose CEL selector never matches (numa == 100 + i)
  gangs       --gangs PodGroups (gang policy, minCount --gang-size) of members asking --gang-gpus GPUs each
              (default 9: never fit, each member turned down by node fit; --gang-size 9 --gang-gpus 8 makes gangs
              whose members fit one by one but not together, 72 of 64 GPUs)
  costly      one pod whose claim has 5 requests x 8 firstAvailable alternatives in one NUMA domain (matchAttribute):
              the search tries every combination, which takes minutes. Leader election on (--replicas processes,
              Lease dralloc-system/dralloc, durations 15/10/2 s); /healthz of each replica probed every 0.2 s (a
              probe not answered in 5 s counts as 5 s), the Lease read every 0.2 s: the longest time between two
              renewals (renewTime), up to the end of the scenario, and how often it changed hands
  churn       memory: a warm-up round, then --churn pods in rounds of --churn-round, each with its own template
              holding a unique never-matching selector; a round is created, waited for (every pod told why it
              waits, or --settle-timeout s), deleted and waited for (its claims gone); the operator's VmRSS after
              the warm-up and at the end; then the good pods

Writes: the sandbox counts requests through fault rules that inject nothing (`METHOD PATH delay=0`: counters, no
effect; the same rules in both versions). During the good-pod phase (first create to last bind, or the cap, plus 1 s
for the writes that follow a bind) it prints per good pod bound: Events written (events.k8s.io and core, create or
patch), pod status writes, and all writes but this benchmark's own creates; and the status writes to `noisy`'s pods
in that time. Also the operator's CPU seconds during that phase, what other processes of the machine took (cores;
the machine may be shared), and its VmRSS.

Prints numbers with the baseline measured in the same run; asserts nothing. The defaults take about 7 minutes on
2 shared cores, --quick (small sizes) about 3.
Usage:
  git worktree add /tmp/dralloc-base 7c21875
  .venv/bin/python bench/tenants.py --baseline-tree /tmp/dralloc-base [--quick] [--only idle,costly,...]
      [--nodes 8] [--gpus 8] [--good 20] [--good-interval 0.5] [--noisy 1400] [--gangs 10] [--gang-size 4] [--gang-gpus 9]
      [--churn 1800] [--churn-round 200] [--cap 120] [--settle-timeout 60] [--quiet-cap 0] [--replicas 1]
      [--after-tree DIR] [--versions before,after]
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import http.client
import itertools
import json
import os
import pathlib
import resource
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import yaml
from scale_operator import proc_status  # bench/scale_operator.py: /proc/PID/status fields in MiB

REPO = pathlib.Path(__file__).resolve().parents[1]
DRIVER = "gpu.example.com"
AGENT = "dralloc-bench-tenants"
TICKS = os.sysconf("SC_CLK_TCK")
LEASE_NS = "dralloc-system"
SCENARIOS = ("idle", "flood-9gpu", "flood-hard", "flood-cel", "gangs", "costly", "churn")
Obj = dict[str, Any]

# Fault rules that inject nothing: each counts the requests it matches (GET /_faults). Grouped by what they count.
COUNTERS: dict[str, tuple[str, ...]] = {
    "events": ("POST /apis/events.k8s.io/v1/namespaces/*/events", "PATCH /apis/events.k8s.io/v1/namespaces/*/events/*",
               "PUT /apis/events.k8s.io/v1/namespaces/*/events/*", "POST /api/v1/namespaces/*/events",
               "PATCH /api/v1/namespaces/*/events/*", "PUT /api/v1/namespaces/*/events/*"),
    "pod-status": ("PATCH /api/v1/namespaces/*/pods/*/status", "PUT /api/v1/namespaces/*/pods/*/status"),
    "noisy-status": ("PATCH /api/v1/namespaces/noisy/pods/*/status", "PUT /api/v1/namespaces/noisy/pods/*/status"),
    "writes": ("POST *", "PUT *", "PATCH *", "DELETE *"),
}


# ---- objects (the shapes of dralloc/testing/cluster.py) ---------------------------------------------------------

def node(name: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"allocatable": {"cpu": "16", "memory": "64Gi", "pods": "250"},
                       "capacity": {"cpu": "16", "memory": "64Gi", "pods": "250"}}}


def gpu_slice(node_name: str, gpus: int) -> Obj:
    devices = [{"name": f"gpu-{i}", "attributes": {"index": {"int": i}, "numa": {"int": i // 4}},
                "capacity": {"memory": {"value": "40Gi"}}} for i in range(gpus)]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{node_name}-gpus"},
            "spec": {"driver": DRIVER, "nodeName": node_name,
                     "pool": {"name": node_name, "generation": 1, "resourceSliceCount": 1}, "devices": devices}}


def gpu_class() -> Obj:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}}


def namespace(name: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def template(name: str, ns: str, *, count: int = 1, selector: str | None = None) -> Obj:
    exactly: Obj = {"deviceClassName": "gpu", "allocationMode": "ExactCount", "count": count}
    if selector:
        exactly["selectors"] = [{"cel": {"expression": selector}}]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}}}


def hard_template(name: str, ns: str) -> Obj:
    """Three requests of 3 GPUs in one NUMA domain: each fits alone, never the three together."""
    requests = [{"name": f"r{k}", "exactly": {"deviceClassName": "gpu", "allocationMode": "ExactCount", "count": 3}}
                for k in range(3)]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"spec": {"devices": {"requests": requests,
                                          "constraints": [{"matchAttribute": f"{DRIVER}/numa"}]}}}}


def pod(name: str, ns: str, *, template_name: str | None = None, claim_name: str | None = None,
        group: str | None = None) -> Obj:
    entry: Obj = {"name": "gpus"}
    if template_name:
        entry["resourceClaimTemplateName"] = template_name
    else:
        entry["resourceClaimName"] = claim_name
    spec: Obj = {"schedulerName": "dralloc", "resourceClaims": [entry],
                 "containers": [{"name": "main", "image": "busybox", "resources": {"claims": [{"name": "gpus"}]}}]}
    if group:
        spec["schedulingGroup"] = {"podGroupName": group}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns}, "spec": spec}


def pod_group(name: str, ns: str, min_count: int) -> Obj:
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": {"name": name, "namespace": ns},
            "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}}}


def costly_claim(name: str, ns: str, *, requests: int = 5, alternatives: int = 8) -> Obj:
    """Five GPUs in one NUMA domain of four, each request any of eight alternatives (tests/handlers/test_tenant_isolation.py)."""
    entries = [{"name": f"r{r}", "firstAvailable": [
        {"name": f"a{a}", "deviceClassName": "gpu", "allocationMode": "ExactCount", "count": 1}
        for a in range(alternatives)]} for r in range(requests)]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name, "namespace": ns},
            "spec": {"devices": {"requests": entries, "constraints": [{"matchAttribute": f"{DRIVER}/numa"}]}}}


def crds() -> list[Obj]:
    return [doc for path in sorted((REPO / "crds").glob("*.yaml")) for doc in yaml.safe_load_all(path.read_text()) if doc]


COLLECTIONS = {"Pod": "/api/v1/namespaces/{ns}/pods",
               "ResourceClaimTemplate": "/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaimtemplates",
               "ResourceClaim": "/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaims",
               "PodGroup": "/apis/scheduling.k8s.io/v1beta1/namespaces/{ns}/podgroups"}


def collection(obj: Obj) -> str:
    return COLLECTIONS[obj["kind"]].format(ns=obj["metadata"]["namespace"])


# ---- processes ---------------------------------------------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def cpu_seconds(pid: int) -> float:
    try:
        fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICKS


def machine_busy() -> float:
    """CPU seconds all cores spent busy since boot (/proc/stat: all but idle and iowait)."""
    fields = [int(f) for f in pathlib.Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    return (sum(fields) - fields[3] - fields[4]) / TICKS


def own_cpu() -> float:
    mine = resource.getrusage(resource.RUSAGE_SELF)
    return mine.ru_utime + mine.ru_stime


class Api:
    """JSON over HTTP to the sandbox, one keep-alive connection per thread; `create_all` on 4 threads."""

    def __init__(self, port: int) -> None:
        self.port = port
        self._local = threading.local()
        self._pool = ThreadPoolExecutor(4)

    def request(self, method: str, path: str, body: object = None) -> tuple[int, Any]:
        headers = {"Content-Type": "application/json", "Accept": "application/json", "User-Agent": AGENT}
        for attempt in range(2):
            connection: http.client.HTTPConnection | None = getattr(self._local, "connection", None)
            if connection is None:
                connection = self._local.connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
            try:
                connection.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
                response = connection.getresponse()
                data = response.read()
                return response.status, json.loads(data) if data else {}
            except (OSError, http.client.HTTPException):
                connection.close()
                self._local.connection = None
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def get(self, path: str) -> Any:
        status, body = self.request("GET", path)
        return body if status == 200 else None

    def create(self, obj: Obj) -> int:
        return self.request("POST", collection(obj), obj)[0]

    def delete(self, obj: Obj) -> int:
        return self.request("DELETE", f"{collection(obj)}/{obj['metadata']['name']}")[0]

    def create_all(self, objs: Iterable[Obj]) -> list[int]:
        return self._refused(list(self._pool.map(self.create, objs)), "create")

    def delete_all(self, objs: Iterable[Obj]) -> list[int]:
        return self._refused(list(self._pool.map(self.delete, objs)), "delete", ok=(404,))

    @staticmethod
    def _refused(statuses: list[int], what: str, ok: tuple[int, ...] = ()) -> list[int]:
        bad = [s for s in statuses if s >= 300 and s not in ok]
        if bad:
            print(f"    ({len(bad)} of {len(statuses)} {what} requests refused: {sorted(set(bad))})", flush=True)
        return statuses

    def close(self) -> None:
        self._pool.shutdown(wait=False)


class Sandbox:
    """This tree's sandbox in its own process, seeded from a file, with the counting fault rules."""

    def __init__(self, directory: pathlib.Path, seed: list[Obj]) -> None:
        self.port = free_port()
        seed_file = directory / "seed.json"
        seed_file.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": seed}))
        self.kubeconfig = directory / "kubeconfig"
        spec = "; ".join(f"{rule} delay=0" for rules in COUNTERS.values() for rule in rules)
        self.log = open(directory / "sandbox.log", "wb")  # closed in stop()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "dralloc.sandbox", "--port", str(self.port), "--seed", str(seed_file),
             "--kubeconfig", str(self.kubeconfig), "--faults", spec],
            env={**os.environ, "PYTHONPATH": str(REPO / "operator")}, stdout=self.log, stderr=subprocess.STDOUT)
        self.api = Api(self.port)
        deadline = time.monotonic() + 60
        while not (self.kubeconfig.exists() and self._ready()):
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise RuntimeError(f"the sandbox did not start: {(directory / 'sandbox.log').read_text()[-2000:]}")
            time.sleep(0.1)

    def _ready(self) -> bool:
        try:
            return self.api.request("GET", "/version")[0] == 200
        except OSError:
            return False

    def counters(self) -> dict[str, int]:
        """How many requests each group of COUNTERS matched so far."""
        state = self.api.get("/_faults") or {}
        fired = {rule.get("spec", ""): int(rule.get("fired", 0)) for rule in state.get("rules", [])}
        return {group: sum(fired.get(f"{rule} delay=0", 0) for rule in rules) for group, rules in COUNTERS.items()}

    def stop(self) -> None:
        self.api.close()
        self.process.terminate()
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()


class Operator:
    """`python -m dralloc run` of one tree, in its own process."""

    def __init__(self, tree: pathlib.Path, kubeconfig: pathlib.Path, directory: pathlib.Path, *, identity: str,
                 elect: bool) -> None:
        self.health_port = free_port()
        self.log_path = directory / f"operator-{identity}.log"
        self.log = open(self.log_path, "wb")  # closed in stop()
        flags = ["--kubeconfig", str(kubeconfig), "--metrics-port", "0", "--health-port", str(self.health_port),
                 "--log-level", "WARNING", "--identity", identity]
        if elect:
            flags += ["--leader-elect-resource-namespace", LEASE_NS, "--leader-elect-lease-duration", "15",
                      "--leader-elect-renew-deadline", "10", "--leader-elect-retry-period", "2"]
        else:
            flags += ["--standalone"]
        self.started = time.monotonic()
        self.process = subprocess.Popen([sys.executable, "-m", "dralloc", "run", *flags], cwd=directory,
                                        env={**os.environ, "PYTHONPATH": str(tree / "operator")},
                                        stdout=self.log, stderr=subprocess.STDOUT)

    @property
    def pid(self) -> int:
        return self.process.pid

    def rss(self) -> float:
        return proc_status(self.pid, "VmRSS")

    def cpu(self) -> float:
        return cpu_seconds(self.pid)

    def stop(self) -> str:
        """Stop it (SIGTERM; SIGKILL after 15 s, as a loop busy deciding may not hear it); what went wrong, if anything."""
        note = ""
        if self.process.poll() is not None:
            note = f"operator exited {self.process.returncode} during the run"
        else:
            self.process.terminate()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
                note = "operator did not stop within 15 s of SIGTERM (killed)"
        self.log.close()
        return note

    def tail(self, chars: int = 1500) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""


class PodWatch:
    """A watch on one namespace's pods: when each was first seen bound, which carry PodScheduled=False now."""

    def __init__(self, port: int, ns: str) -> None:
        self.port, self.ns = port, ns
        self.bound: dict[str, float] = {}
        self.waiting: set[str] = set()
        self.present: set[str] = set()
        self._lock = threading.Lock()
        self._version = ""
        self._closing = False
        self._connection: http.client.HTTPConnection | None = None
        self._opened = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        self._opened.wait(10)

    def _run(self) -> None:
        while not self._closing:
            try:
                connection = self._connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=600)
                since = f"&resourceVersion={self._version}" if self._version else ""
                connection.request("GET", f"/api/v1/namespaces/{self.ns}/pods?watch=1{since}",
                                   headers={"User-Agent": AGENT, "Accept": "application/json"})
                response = connection.getresponse()
                self._opened.set()
                for line in response:
                    self._event(line)
            except (OSError, ValueError, http.client.HTTPException):
                if self._closing:
                    return
                time.sleep(0.2)

    def _event(self, line: bytes) -> None:
        now = time.monotonic()
        try:
            event = json.loads(line)
        except ValueError:
            return
        obj = event.get("object") or {}
        if event.get("type") == "ERROR":
            self._version = ""  # 410: watch from now (nothing in this benchmark runs long enough for it)
            return
        meta = obj.get("metadata") or {}
        name = meta.get("name")
        self._version = meta.get("resourceVersion") or self._version
        if not name or event.get("type") == "BOOKMARK":
            return
        with self._lock:
            if event.get("type") == "DELETED":
                self.present.discard(name)
                self.waiting.discard(name)
                return
            self.present.add(name)
            if (obj.get("spec") or {}).get("nodeName"):
                self.bound.setdefault(name, now)
            scheduled = [c for c in (obj.get("status") or {}).get("conditions") or [] if c.get("type") == "PodScheduled"]
            if scheduled and scheduled[0].get("status") == "False":
                self.waiting.add(name)
            else:
                self.waiting.discard(name)

    def count(self, names: Iterable[str], what: str) -> int:
        with self._lock:
            among = self.bound.keys() if what == "bound" else self.waiting if what == "waiting" else self.present
            return sum(1 for n in names if n in among)

    def bound_at(self, name: str) -> float | None:
        with self._lock:
            return self.bound.get(name)

    def close(self) -> None:
        self._closing = True
        connection = self._connection
        if connection is not None and connection.sock is not None:
            try:
                connection.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._thread.join(10)


def wait_until(condition: Callable[[], bool], timeout: float, interval: float = 0.05) -> float | None:
    """Seconds until condition() held, or None after `timeout`."""
    began = time.monotonic()
    while True:
        if condition():
            return time.monotonic() - began
        if time.monotonic() - began > timeout:
            return None
        time.sleep(interval)


# ---- probes of the costly scenario ---------------------------------------------------------------------------------

class HealthProbe:
    """GET /healthz every 0.2 s; the slowest answer (a probe not answered in 5 s counts as 5 s)."""

    TIMEOUT = 5.0

    def __init__(self, port: int) -> None:
        self.port = port
        self.times: list[float] = []
        self.timeouts = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            began = time.monotonic()
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/healthz", timeout=self.TIMEOUT) as answer:
                    answer.read()
            except urllib.error.HTTPError:
                pass  # an answer all the same (a standby may say 503)
            except (OSError, http.client.HTTPException):
                if time.monotonic() - began >= self.TIMEOUT - 0.01:
                    self.timeouts += 1
            self.times.append(min(time.monotonic() - began, self.TIMEOUT))
            self._stop.wait(0.2)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)


def parse_time(text: str) -> float:
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


class LeaseWatch:
    """Read the Lease every 0.2 s: each renewTime seen, the holders, the transitions."""

    def __init__(self, api: Api, name: str = "dralloc") -> None:
        self.api, self.path = api, f"/apis/coordination.k8s.io/v1/namespaces/{LEASE_NS}/leases/{name}"
        self.renewals: list[float] = []  # distinct renewTime values, as epoch seconds
        self.holders: list[str] = []
        self.transitions = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                spec = (self.api.get(self.path) or {}).get("spec") or {}
            except (OSError, http.client.HTTPException):
                spec = {}
            renew, holder = spec.get("renewTime"), spec.get("holderIdentity") or ""
            if renew:
                at = parse_time(renew)
                if not self.renewals or at != self.renewals[-1]:
                    self.renewals.append(at)
            if holder and (not self.holders or self.holders[-1] != holder):
                self.holders.append(holder)
            self.transitions = int(spec.get("leaseTransitions") or 0)
            self._stop.wait(0.2)

    def max_gap(self, until: float) -> float:
        """The longest time between two renewals seen, the open gap up to `until` (epoch seconds) included."""
        points = [*self.renewals, until]
        return max((b - a for a, b in itertools.pairwise(points)), default=0.0)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)


# ---- one run: a scenario against one version ---------------------------------------------------------------------

@dataclasses.dataclass
class Result:
    scenario: str
    version: str
    good: int = 0
    latencies: list[float] = dataclasses.field(default_factory=list)  # of the good pods bound
    cap: float = 0.0
    startup: float | None = None
    setup: str = ""
    writes: dict[str, int] = dataclasses.field(default_factory=dict)
    operator_cpu: float = 0.0
    others_cores: float = 0.0
    rss: float = 0.0
    extras: dict[str, str] = dataclasses.field(default_factory=dict)
    notes: list[str] = dataclasses.field(default_factory=list)
    error: str = ""

    @property
    def bound(self) -> int:
        return len(self.latencies)

    def p50(self) -> str:
        waits = sorted(self.latencies) + [float("inf")] * (self.good - self.bound)
        value = statistics.median_low(waits) if waits else float("nan")
        return f"> {self.cap:.0f} s" if value == float("inf") else duration(value)

    def max(self) -> str:
        if self.bound < self.good:
            return f"> {self.cap:.0f} s"
        return duration(max(self.latencies, default=float("nan")))

    def per_placement(self, group: str) -> str:
        if group not in self.writes:
            return "-"
        return f"{self.writes[group] / self.bound:.1f}" if self.bound else f"{self.writes[group]} (none bound)"


def duration(seconds: float) -> str:
    if seconds != seconds:
        return "-"
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.2f} s"


def seed(args: argparse.Namespace) -> list[Obj]:
    objs = [*crds(), gpu_class(), *(namespace(n) for n in ("good", "noisy", LEASE_NS)),
            template("one-gpu", "good"), template("nine", "noisy", count=9), hard_template("hard", "noisy"),
            template("gang-member", "noisy", count=args.gang_gpus)]
    for i in range(args.nodes):
        objs += [node(f"node-{i}"), gpu_slice(f"node-{i}", args.gpus)]
    return objs


def flood(sandbox: Sandbox, noisy: PodWatch, pods: list[Obj], others: list[Obj], settle: float, quiet_cap: float,
          what: str = "noisy pods") -> str:
    """Create the tenant's objects (`others` first: templates, groups), wait until every one of its pods is told why it
    waits (or `settle` s), so that the writes counted afterwards are not first reports; with `quiet_cap`, then until
    no status of theirs was written for 2 s (or `quiet_cap` s more)."""
    api = sandbox.api
    began = time.monotonic()
    api.create_all(others)
    api.create_all(pods)
    created = time.monotonic() - began
    names = [p["metadata"]["name"] for p in pods]
    waited = wait_until(lambda: noisy.count(names, "waiting") == len(names), settle, interval=0.5)
    told = noisy.count(names, "waiting")
    when = f"after {waited:.1f} s" if waited is not None else f"after {settle:.0f} s (cap)"
    summary = f"{len(pods)} {what} created in {created:.1f} s, {told} told why they wait {when}"
    if quiet_cap <= 0:
        return summary
    quiet_began = time.monotonic()
    last, changed = sandbox.counters()["noisy-status"], time.monotonic()
    while time.monotonic() - changed < 2.0 and time.monotonic() - quiet_began < quiet_cap:
        time.sleep(0.5)
        now = sandbox.counters()["noisy-status"]
        if now != last:
            last, changed = now, time.monotonic()
    quiet = (f"their statuses quiet after {changed - quiet_began:.1f} s more" if time.monotonic() - changed >= 2.0
             else f"their statuses still written {quiet_cap:.0f} s later")
    return f"{summary}, {quiet}"


def churn(api: Api, noisy: PodWatch, operator: Operator, total: int, size: int, settle: float,
          result: Result) -> None:
    """Rounds of `size` pods with unique templates: a warm-up round, then `total` pods; RSS after warm-up and at the end."""
    serial = 0
    series: list[str] = []
    slow = 0
    rounds = [size] + [size] * (total // size) + ([total % size] if total % size else [])
    began = time.monotonic()
    rss_start = 0.0
    for index, count in enumerate(rounds):
        templates = [template(f"churn-{serial + i}", "noisy",
                              selector=f'device.attributes["{DRIVER}"].numa == {100 + serial + i}') for i in range(count)]
        pods = [pod(f"churn-{serial + i}", "noisy", template_name=f"churn-{serial + i}") for i in range(count)]
        serial += count
        names = [p["metadata"]["name"] for p in pods]
        api.create_all(templates)
        api.create_all(pods)
        def told(names: list[str] = names) -> bool:
            return noisy.count(names, "waiting") == len(names)

        if wait_until(told, settle, interval=0.25) is None:
            slow += 1
        api.delete_all(pods)
        api.delete_all(templates)

        def gone(names: list[str] = names) -> bool:
            claims = (api.get("/apis/resource.k8s.io/v1/namespaces/noisy/resourceclaims") or {}).get("items")
            return noisy.count(names, "present") == 0 and claims == []

        if wait_until(gone, settle, interval=0.5) is None:
            slow += 1
        rss = operator.rss()
        if index == 0:
            rss_start = rss
        series.append(f"{rss:.0f}")
    rss_end = operator.rss()
    result.extras["RSS after warm-up"] = f"{rss_start:.0f} MiB"
    result.extras["RSS at end"] = f"{rss_end:.0f} MiB ({rss_end / rss_start:.2f}x)" if rss_start else "-"
    result.extras["peak"] = f"{proc_status(operator.pid, 'VmHWM'):.0f} MiB"
    result.setup = (f"warm-up {size} + {total} pods with unique selectors in {len(rounds) - 1} rounds, "
                    f"{time.monotonic() - began:.0f} s" + (f"; {slow} waits hit the {settle:.0f} s cap" if slow else ""))
    result.notes.append("RSS (MiB) after each round: " + " ".join(series))


def good_phase(api: Api, watch: PodWatch, count: int, interval: float, cap: float) -> list[float]:
    """Create the good pods one every `interval` s; the wait of each one bound, from its create to its bind."""
    created: dict[str, float] = {}
    began = time.monotonic()
    for i in range(count):
        pause = began + i * interval - time.monotonic()
        if pause > 0:
            time.sleep(pause)
        name = f"good-{i:03d}"
        created[name] = time.monotonic()
        status = api.create(pod(name, "good", template_name="one-gpu"))
        if status >= 300:
            print(f"    (good pod {name}: create answered {status})", flush=True)
    wait_until(lambda: watch.count(created, "bound") == len(created), cap)
    latencies = []
    for name, at in created.items():
        bound = watch.bound_at(name)
        if bound is not None:
            latencies.append(bound - at)
    return latencies


def run(scenario: str, version: str, tree: pathlib.Path, args: argparse.Namespace) -> Result:
    result = Result(scenario, version, good=args.good, cap=args.cap)
    elect = scenario == "costly"
    with tempfile.TemporaryDirectory(prefix=f"dralloc-tenants-{scenario}-{version}-") as tmp:
        directory = pathlib.Path(tmp)
        sandbox = Sandbox(directory, seed(args))
        api = sandbox.api
        operators: list[Operator] = []
        watches: list[PodWatch] = []
        probes: list[HealthProbe] = []
        lease: LeaseWatch | None = None
        try:
            good = PodWatch(sandbox.port, "good")
            noisy = PodWatch(sandbox.port, "noisy")
            watches += [good, noisy]
            for i in range(args.replicas if elect else 1):
                operators.append(Operator(tree, sandbox.kubeconfig, directory, identity=f"{version}-{i}", elect=elect))
            api.create(pod("canary", "good", template_name="one-gpu"))
            if wait_until(lambda: good.count(["canary"], "bound") == 1, 120) is None:
                raise RuntimeError("the canary pod was not bound in 120 s; operator log:\n" + operators[0].tail())
            result.startup = (good.bound_at("canary") or 0.0) - operators[0].started

            if scenario == "flood-9gpu":
                result.setup = flood(sandbox, noisy, [pod(f"noisy-{i:05d}", "noisy", template_name="nine")
                                                  for i in range(args.noisy)], [], args.settle_timeout, args.quiet_cap)
            elif scenario == "flood-hard":
                result.setup = flood(sandbox, noisy, [pod(f"noisy-{i:05d}", "noisy", template_name="hard")
                                                  for i in range(args.noisy)], [], args.settle_timeout, args.quiet_cap)
            elif scenario == "flood-cel":
                templates = [template(f"cel-{i:05d}", "noisy", selector=f'device.attributes["{DRIVER}"].numa == {100 + i}')
                             for i in range(args.noisy)]
                result.setup = flood(sandbox, noisy, [pod(f"noisy-{i:05d}", "noisy", template_name=f"cel-{i:05d}")
                                                  for i in range(args.noisy)], templates, args.settle_timeout,
                                     args.quiet_cap)
            elif scenario == "gangs":
                groups = [pod_group(f"gang-{g}", "noisy", args.gang_size) for g in range(args.gangs)]
                members = [pod(f"gang-{g}-{m}", "noisy", template_name="gang-member", group=f"gang-{g}")
                           for g in range(args.gangs) for m in range(args.gang_size)]
                result.setup = flood(sandbox, noisy, members, groups, args.settle_timeout, args.quiet_cap,
                                     what=f"gang members ({args.gangs} PodGroups of minCount {args.gang_size})")
            elif scenario == "costly":
                lease = LeaseWatch(api)  # from now on: the operator is up and leads
                probes = [HealthProbe(op.health_port) for op in operators]
                api.create_all([costly_claim("heavy", "noisy")])
                api.create_all([pod("heavy", "noisy", claim_name="heavy")])
                time.sleep(3)  # its decision has begun
                result.setup = "1 pod with a 5 x 8 firstAvailable claim in one NUMA domain, 3 s before the good pods"
            elif scenario == "churn":
                churn(api, noisy, operators[0], args.churn, args.churn_round, args.settle_timeout, result)

            pids = [op.pid for op in operators]
            before_counts = sandbox.counters()
            cpu0 = sum(cpu_seconds(p) for p in pids)
            ours0 = cpu_seconds(sandbox.process.pid) + own_cpu() + cpu0
            busy0, wall0 = machine_busy(), time.monotonic()
            result.latencies = good_phase(api, good, args.good, args.good_interval, args.cap)
            time.sleep(1.0)  # the writes that follow a bind (its Event) belong to the placement
            after_counts = sandbox.counters()
            cpu1 = sum(cpu_seconds(p) for p in pids)
            ours1 = cpu_seconds(sandbox.process.pid) + own_cpu() + cpu1
            busy1, wall1 = machine_busy(), time.monotonic()
            result.writes = {k: after_counts[k] - before_counts.get(k, 0) for k in after_counts}
            result.writes["writes"] -= args.good  # this benchmark's creates
            result.operator_cpu = cpu1 - cpu0
            result.others_cores = max(0.0, (busy1 - busy0) - (ours1 - ours0)) / max(wall1 - wall0, 1e-9)
            result.rss = max(op.rss() for op in operators)

            if elect:
                for probe in probes:
                    probe.stop()
                times = [t for probe in probes for t in probe.times]
                timeouts = sum(probe.timeouts for probe in probes)
                slowest = max(times, default=float("nan"))
                result.extras["healthz max"] = (f">= {HealthProbe.TIMEOUT:.0f} s ({timeouts} of {len(times)} timed out)"
                                                if timeouts else f"{duration(slowest)} ({len(times)} probes)")
                if lease is not None:
                    lease.stop()
                    result.extras["Lease max gap"] = f"{lease.max_gap(time.time()):.1f} s"
                    result.extras["holders"] = f"{len(lease.holders)} ({lease.transitions} transitions)"
        except Exception as exc:  # one run failing must not lose the others' numbers
            result.error = f"{type(exc).__name__}: {exc}"
            traceback.print_exc()
        finally:
            for probe in probes:
                probe.stop()
            if lease is not None:
                lease.stop()
            for op in operators:
                note = op.stop()
                if note:
                    result.notes.append(note)
                    if "exited" in note:
                        result.notes.append("its log ends: " + op.tail(800).replace("\n", " | "))
            for watch in watches:
                watch.close()
            sandbox.stop()
    return result


# ---- output --------------------------------------------------------------------------------------------------------

COLUMNS = ("version", "start", "good p50", "good max", "bound", "Events/pod", "pod status/pod", "writes/pod",
           "noisy status writes", "operator CPU", "others", "RSS")


def row(r: Result) -> list[str]:
    if r.error and not r.latencies:
        return [r.version, "-", "failed", "-", "-", "-", "-", "-", "-", "-", "-", "-"]
    return [r.version, duration(r.startup) if r.startup is not None else "-", r.p50(), r.max(), f"{r.bound}/{r.good}",
            r.per_placement("events"), r.per_placement("pod-status"), r.per_placement("writes"),
            str(r.writes.get("noisy-status", "-")), f"{r.operator_cpu:.1f} s", f"{r.others_cores:.2f} cores",
            f"{r.rss:.0f} MiB"]


def table(results: list[Result]) -> None:
    extras = [k for r in results for k in r.extras]
    columns = [*COLUMNS, *dict.fromkeys(extras)]
    rows = [[*row(r), *(r.extras.get(k, "-") for k in columns[len(COLUMNS):])] for r in results]
    widths = [max(len(c), *(len(x[i]) for x in rows)) for i, c in enumerate(columns)]
    print("  " + "  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)))
    for x in rows:
        print("  " + "  ".join(v.ljust(w) for v, w in zip(x, widths, strict=True)))
    for r in results:
        for line in ([r.setup] if r.setup else []) + r.notes + ([f"error: {r.error}"] if r.error else []):
            print(f"  {r.version}: {line}")
    print(flush=True)


def describe(scenario: str, args: argparse.Namespace) -> str:
    good = f"then {args.good} good pods (1 GPU) one every {args.good_interval:g} s"
    return {
        "idle": f"idle: {args.nodes} nodes x {args.gpus} GPUs, no other tenant; {args.good} good pods one every {args.good_interval:g} s",
        "flood-9gpu": f"flood-9gpu: {args.noisy} noisy pods asking 9 GPUs each (never fit), {good}",
        "flood-hard": f"flood-hard: {args.noisy} noisy pods asking 3 x 3 GPUs in one NUMA domain of 4 (never fit), {good}",
        "flood-cel": f"flood-cel: {args.noisy} noisy pods, each its own template with a never-matching CEL selector, {good}",
        "gangs": f"gangs: {args.gangs} gangs (minCount {args.gang_size}) of members asking {args.gang_gpus} GPUs each, {good}",
        "costly": f"costly: 1 pod with a claim of 5 requests x 8 alternatives in one NUMA domain, {good}; "
                  f"leader election, {args.replicas} replica(s)",
        "churn": f"churn: {args.churn} pods with unique CEL selectors created and deleted in rounds of {args.churn_round}, "
                 f"{good}",
    }[scenario]


def markdown(all_results: list[Result]) -> None:
    print("| scenario | version | good p50 | good max | bound | Events / writes per good pod | extras |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for r in all_results:
        if r.error and not r.latencies:
            print(f"| {r.scenario} | {r.version} | failed | | | | {r.error} |")
            continue
        extras = "; ".join(f"{k} {v}" for k, v in r.extras.items())
        noisy = r.writes.get("noisy-status", 0)
        if noisy:
            extras = (extras + "; " if extras else "") + f"{noisy} noisy pod status writes meanwhile"
        print(f"| {r.scenario} | {r.version} | {r.p50()} | {r.max()} | {r.bound}/{r.good} | "
              f"{r.per_placement('events')} / {r.per_placement('writes')} | {extras} |")
    print(flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--baseline-tree", type=pathlib.Path, help="a checkout of the code before (7c21875)")
    parser.add_argument("--after-tree", type=pathlib.Path, default=REPO, help="the code after (default: this tree)")
    parser.add_argument("--versions", default="before,after", help="which to run (default before,after)")
    parser.add_argument("--only", default=",".join(SCENARIOS), help=f"scenarios, of {','.join(SCENARIOS)}")
    parser.add_argument("--quick", action="store_true", help="small sizes (a few minutes)")
    parser.add_argument("--nodes", type=int)
    parser.add_argument("--gpus", type=int)
    parser.add_argument("--good", type=int)
    parser.add_argument("--good-interval", type=float)
    parser.add_argument("--noisy", type=int)
    parser.add_argument("--gangs", type=int)
    parser.add_argument("--gang-size", type=int)
    parser.add_argument("--gang-gpus", type=int, help="GPUs each gang member asks (default 9: no node has them)")
    parser.add_argument("--churn", type=int)
    parser.add_argument("--churn-round", type=int)
    parser.add_argument("--cap", type=float, help="seconds after the last good create before a pod counts as not bound")
    parser.add_argument("--settle-timeout", type=float, help="the longest wait for the tenant's pods to be told why")
    parser.add_argument("--quiet-cap", type=float,
                        help="then wait until the tenant's statuses stay unwritten for 2 s, at most this long (default 0: no)")
    parser.add_argument("--replicas", type=int, default=1, help="operator processes in the costly scenario")
    args = parser.parse_args()
    sizes = {"nodes": (8, 8), "gpus": (8, 8), "good": (20, 8), "good_interval": (0.5, 0.5), "noisy": (1400, 150),
             "gangs": (10, 3), "gang_size": (4, 4), "gang_gpus": (9, 9), "churn": (1800, 200), "churn_round": (200, 100),
             "cap": (120.0, 30.0), "settle_timeout": (60.0, 20.0), "quiet_cap": (0.0, 0.0)}
    for key, (full, quick) in sizes.items():
        if getattr(args, key) is None:
            setattr(args, key, quick if args.quick else full)
    scenarios = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = [s for s in scenarios if s not in SCENARIOS]
    if unknown:
        parser.error(f"unknown scenario(s) {unknown}; known: {', '.join(SCENARIOS)}")
    trees = {"before": args.baseline_tree, "after": args.after_tree}
    versions = [v.strip() for v in args.versions.split(",") if v.strip()]
    for version in versions:
        if version not in trees:
            parser.error(f"--versions: before and/or after, not {version!r}")
        tree = trees[version]
        if tree is None:
            parser.error("before needs --baseline-tree DIR: git worktree add /tmp/dralloc-base 7c21875")
        if not (tree / "operator" / "dralloc" / "__main__.py").exists():
            parser.error(f"{tree}: no operator/dralloc/__main__.py (python -m dralloc) there")

    def interrupted(signum: int, frame: object) -> None:
        raise KeyboardInterrupt  # the runs' finally blocks stop their sandbox and operators

    signal.signal(signal.SIGTERM, interrupted)
    print(f"bench/tenants.py: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at start; "
          + ", ".join(f"{v} = {trees[v]}" for v in versions), flush=True)
    began = time.monotonic()
    everything: list[Result] = []
    for scenario in scenarios:
        print(f"== {describe(scenario, args)}", flush=True)
        results = []
        for version in versions:
            tree = trees[version]
            assert tree is not None
            started = time.monotonic()
            result = run(scenario, version, tree.resolve(), args)
            print(f"  ({version}: {time.monotonic() - started:.0f} s, load average now {os.getloadavg()[0]:.2f})",
                  flush=True)
            results.append(result)
        table(results)
        everything += results
    print(f"all scenarios in {(time.monotonic() - began) / 60:.1f} min", flush=True)
    markdown(everything)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
