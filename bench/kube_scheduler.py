"""dralloc against the real kube-scheduler, side by side on one real Kubernetes 1.37 control plane.

The shape is scheduler_perf's SchedulingWithResourceClaimTemplate: N fake Nodes (default
500), each with one ResourceSlice of D devices of one driver (default 10; pool = node
name, `nodeName` set), one DeviceClass selecting the driver by CEL, one
ResourceClaimTemplate asking for one device of it, and P pods (default 5000, filling the
cluster exactly), each with a `resourceClaims` entry using the template.

One control plane (e2e/controlplane.py: etcd, kube-apiserver, kube-scheduler,
kube-controller-manager from e2e/bin/, in a temp run dir of its own) serves two runs,
back to back:

  kube-scheduler  the pods have the default schedulerName: kube-scheduler's
                  DynamicResources plugin allocates the claims and binds the pods;
  dralloc         run 1's pods and claims are deleted (and waited for), the same pods
                  come again with `schedulerName: dralloc`, and `dralloc run` places
                  them (a subprocess, started before the first pod is created: it must
                  have placed a canary pod without claims; its startup is reported apart).

In both runs kube-controller-manager's resourceclaim-controller creates the claims
from the template (dralloc gets `--claim-lifecycle kube-controller-manager` when its
`run` has that flag; otherwise it runs with its defaults, and both may create claims).
There is no kubelet: the Nodes are created Ready (110 pods, large cpu and memory), and
KCM runs without its node-lifecycle-controller, so nodes that never send a heartbeat
are not tainted unreachable during the run; the not-ready taint the API server puts on
new Nodes is removed by this script. kube-scheduler and KCM run with --kube-api-qps and
--kube-api-burst 5000 (--kube-api-qps; 0 keeps their defaults, 50 and 20 requests/s, at
which the claims KCM creates cap both runs at about 10 pods/s).

Per run it prints the creation rate (pods are created by --in-flight concurrent
requests), pods/s (pods bound / seconds from the first create to the last bind; a bind
is when a watch on pods first shows spec.nodeName), create->bound latency p50/p90/p99
(create = when the create call returned, on this process's clock), pods not bound
within --timeout, the CPU seconds each component used, then a correctness check: every
pod bound, its claim allocated with exactly one device on the pod's node and reserved
for it, no device in two claims (exit status 1 when violated). At the end, the ratio
dralloc/kube-scheduler of pods/s.

Prints numbers, asserts nothing about time. Usage:
  .venv/bin/python bench/kube_scheduler.py [--nodes 500] [--devices-per-node 10] [--pods 5000]
      [--timeout 600] [--only both|kube-scheduler|dralloc] [--in-flight 32] [--kube-api-qps 5000]
      [--keep-logs] [--py-spy FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import json
import math
import os
import pathlib
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from typing import Any

import aiohttp

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "e2e"))

import controlplane  # noqa: E402

Obj = dict[str, Any]
NAMESPACE = "dralloc-bench"
DRIVER = "test-driver.cdi.k8s.io"
CLASS = "test-class"
TEMPLATE = "test-claim-template"
PODS = f"/api/v1/namespaces/{NAMESPACE}/pods"
CLAIMS = f"/apis/resource.k8s.io/v1/namespaces/{NAMESPACE}/resourceclaims"
KCM_CONTROLLERS = "*,-node-lifecycle-controller"  # claims from templates stay on: both runs use them
RETRIED = (429, 500, 502, 503, 504)
FRAME = re.compile(r"^(.*) \((.*?)(?::\d+)?\)$")  # py-spy's "function (path/file.py:line)"


def new_plane(*, qps: float, run_dir: pathlib.Path) -> controlplane.ControlPlane:
    """e2e's control plane, with kube-scheduler's and KCM's client-side rate limits set to `qps` (0: theirs).

    Their defaults (kube-scheduler 50 requests/s, KCM 20) would make the claims KCM
    creates, two writes per pod, the bottleneck of both runs at about 10 pods/s;
    dralloc's client has no such limit.
    """
    limits = [f"--kube-api-qps={qps:g}", f"--kube-api-burst={math.ceil(qps)}"] if qps else []
    return controlplane.ControlPlane(run_dir=run_dir, kcm_controllers=KCM_CONTROLLERS,
                                     extra_args={"kube-scheduler": limits, "kube-controller-manager": limits})


class ApiError(RuntimeError):
    def __init__(self, method: str, path: str, status: int, body: bytes) -> None:
        super().__init__(f"{method} {path}: {status} {body[:300].decode(errors='replace')}")
        self.status = status


class Api:
    """JSON over HTTPS with the admin token; retries throttling and server errors."""

    def __init__(self, plane: controlplane.ControlPlane, in_flight: int) -> None:
        context = ssl.create_default_context(cafile=str(plane.pki / "ca.crt"))
        self.session = aiohttp.ClientSession(
            base_url=plane.url, headers={"Authorization": f"Bearer {plane.token}"},
            connector=aiohttp.TCPConnector(ssl=context, limit=in_flight + 8), read_bufsize=2**20,
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=30))

    async def call(self, method: str, path: str, body: object = None, *, accept: tuple[int, ...] = (),
                   content_type: str = "application/json") -> Obj:
        """The answer's JSON; {} for a status in `accept` (say 409 AlreadyExists on a create sent twice)."""
        for attempt in range(8):
            try:
                async with self.session.request(method, path, data=None if body is None else json.dumps(body),
                                                headers={"Content-Type": content_type}) as response:
                    data = await response.read()
                    if response.status < 300:
                        result: Obj = json.loads(data) if data else {}
                        return result
                    if response.status in accept:
                        return {}
                    if response.status not in RETRIED or attempt == 7:
                        raise ApiError(method, path, response.status, data)
            except (TimeoutError, aiohttp.ClientConnectionError):
                if attempt == 7:
                    raise
            await asyncio.sleep(0.1 * 2**attempt)
        raise AssertionError("unreachable")

    async def items(self, path: str) -> list[Obj]:
        items: list[Obj] = (await self.call("GET", path))["items"]
        return items

    async def close(self) -> None:
        await self.session.close()


# ---- the cluster ---------------------------------------------------------------------------------

def node_name(i: int) -> str:
    return f"node-{i:04d}"


def node(name: str) -> Obj:
    resources = {"cpu": "1000", "memory": "4000Gi", "pods": "110"}
    ready = {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "fake node (no kubelet)"}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"allocatable": resources, "capacity": resources, "conditions": [ready]}}


def resource_slice(name: str, devices: int) -> Obj:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{name}-devices"},
            "spec": {"driver": DRIVER, "nodeName": name,
                     "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": f"device-{i}"} for i in range(devices)]}}


def pod(i: int, scheduler: str | None) -> Obj:
    spec: Obj = {"containers": [{"name": "main", "image": "pause", "resources": {"claims": [{"name": "device"}]}}],
                 "resourceClaims": [{"name": "device", "resourceClaimTemplateName": TEMPLATE}],
                 "terminationGracePeriodSeconds": 0}
    if scheduler:
        spec["schedulerName"] = scheduler
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"pod-{i:05d}"}, "spec": spec}


async def in_parallel(coros: list[Any], in_flight: int) -> None:
    semaphore = asyncio.Semaphore(in_flight)

    async def one(coro: Any) -> None:
        async with semaphore:
            await coro

    await asyncio.gather(*(one(c) for c in coros))


async def seed(api: Api, args: argparse.Namespace) -> None:
    """Namespace, CRDs for dralloc, DeviceClass, template, Nodes (Ready, untainted) and slices."""
    await api.call("POST", "/api/v1/namespaces", {"metadata": {"name": NAMESPACE}}, accept=(409,))
    import yaml  # PyYAML: a dralloc dependency

    for path in sorted((REPO / "crds").glob("*.yaml")):
        crd = yaml.safe_load(path.read_text())
        await api.call("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd, accept=(409,))
        version = next(v["name"] for v in crd["spec"]["versions"] if v.get("served", True))
        await until_served(api, f"/apis/{crd['spec']['group']}/{version}/{crd['spec']['names']['plural']}")
    await api.call("POST", "/apis/resource.k8s.io/v1/deviceclasses", {
        "metadata": {"name": CLASS}, "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}},
        accept=(409,))
    await api.call("POST", f"/apis/resource.k8s.io/v1/namespaces/{NAMESPACE}/resourceclaimtemplates", {
        "metadata": {"name": TEMPLATE}, "spec": {"spec": {"devices": {"requests": [{"name": "req-0", "exactly": {
            "deviceClassName": CLASS, "allocationMode": "ExactCount", "count": 1}}]}}}}, accept=(409,))

    async def one_node(i: int) -> None:
        name = node_name(i)
        created = await api.call("POST", "/api/v1/nodes", node(name), accept=(409,))
        if (created.get("spec") or {}).get("taints"):  # TaintNodesByCondition's not-ready taint
            await api.call("PATCH", f"/api/v1/nodes/{name}", {"spec": {"taints": None}},
                           content_type="application/merge-patch+json")
        await api.call("POST", "/apis/resource.k8s.io/v1/resourceslices", resource_slice(name, args.devices_per_node),
                       accept=(409,))

    await in_parallel([one_node(i) for i in range(args.nodes)], args.in_flight)
    for _ in range(300):  # pods are refused until the namespace's ServiceAccount exists
        with contextlib.suppress(ApiError):
            await api.call("GET", f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/default")
            return
        await asyncio.sleep(0.2)
    raise RuntimeError(f"no ServiceAccount {NAMESPACE}/default after 60 s")


async def until_served(api: Api, path: str, timeout: float = 60) -> None:
    """A new CRD's list answers 404, then 429 while its storage starts: the operator must not meet either."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            await api.call("GET", path)
            return
        except ApiError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.2)


async def delete_everything(api: Api, timeout: float = 600) -> float:
    """Pods (grace period 0: there is no kubelet to finish them), then claims, until both are gone.

    One DELETE per object, in parallel: the API server's deletecollection deletes one by one."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        pods, claims = await api.items(PODS), await api.items(CLAIMS)
        if not pods and not claims:
            return time.monotonic() - start
        requests = [api.call("DELETE", f"{PODS}/{p['metadata']['name']}?gracePeriodSeconds=0", accept=(404,))
                    for p in pods if not p["metadata"].get("deletionTimestamp")]
        for claim in claims if not pods else []:
            path = f"{CLAIMS}/{claim['metadata']['name']}"
            if not claim["metadata"].get("deletionTimestamp"):
                requests.append(api.call("DELETE", path, accept=(404,)))
            if claim["metadata"].get("finalizers"):  # delete-protection: nobody deallocates run 1's claims now
                requests.append(api.call("PATCH", path, {"metadata": {"finalizers": None}}, accept=(404, 409),
                                         content_type="application/merge-patch+json"))
        await in_parallel(requests, 32)
        await asyncio.sleep(0.5)
    raise RuntimeError(f"pods and claims of {NAMESPACE} not gone after {timeout:.0f} s")


# ---- one run -----------------------------------------------------------------------------------

async def watch_bound(api: Api, version: str, bound: dict[str, float]) -> None:
    """Until cancelled: when each pod is first seen with spec.nodeName (this process's clock)."""
    while True:
        path = f"{PODS}?watch=1&allowWatchBookmarks=true&timeoutSeconds=600&resourceVersion={version}"
        try:
            async with api.session.get(path) as response:
                if response.status != 200:
                    raise ApiError("WATCH", path, response.status, await response.read())
                async for line in response.content:
                    event = json.loads(line)
                    obj = event["object"]
                    if event["type"] == "ERROR":  # 410 Gone: relist (binds seen then are timed now)
                        listing = await api.call("GET", PODS)
                        now = time.monotonic()
                        for item in listing["items"]:
                            if item["spec"].get("nodeName"):
                                bound.setdefault(item["metadata"]["name"], now)
                        version = listing["metadata"]["resourceVersion"]
                        break
                    version = obj["metadata"]["resourceVersion"]
                    if event["type"] != "BOOKMARK" and obj["spec"].get("nodeName"):
                        bound.setdefault(obj["metadata"]["name"], time.monotonic())
        except (TimeoutError, aiohttp.ClientError):
            await asyncio.sleep(0.2)


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)] if ordered else float("nan")


class CpuClock:
    """CPU seconds used by the components' processes (Linux /proc): their cost apart from contention."""

    def __init__(self, pids: dict[str, int]) -> None:
        self.pids = pids
        self.start = self.read()

    def read(self) -> dict[str, float]:
        used = {}
        for name, pid in self.pids.items():
            try:
                fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                used[name] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
            except OSError:
                used[name] = float("nan")
        return used

    def since_start(self) -> str:
        now = self.read()
        return ", ".join(f"{name} {now[name] - self.start[name]:.1f}" for name in self.pids)


async def run(api: Api, args: argparse.Namespace, label: str, scheduler: str | None,
              alive: Callable[[], None], cpu_pids: dict[str, int]) -> tuple[float, bool]:
    """Create the pods, wait for their binds, print the numbers and the check; (pods/s, check passed)."""
    listing = await api.call("GET", PODS)
    bound: dict[str, float] = {}
    created: dict[str, float] = {}
    watcher = asyncio.create_task(watch_bound(api, listing["metadata"]["resourceVersion"], bound))
    cpu = CpuClock(cpu_pids)
    try:
        async def create(i: int) -> None:
            body = pod(i, scheduler)
            await api.call("POST", PODS, body, accept=(409,))
            created[body["metadata"]["name"]] = time.monotonic()

        start = time.monotonic()
        creating = asyncio.create_task(in_parallel([create(i) for i in range(args.pods)], args.in_flight))
        deadline = start + args.timeout
        while (len(bound) < args.pods or not creating.done()) and time.monotonic() < deadline:
            alive()
            if creating.done() and creating.exception() is not None:
                break
            await asyncio.sleep(0.2)
        if not creating.done():
            creating.cancel()
        await asyncio.gather(creating, return_exceptions=True)
        creating.result()  # raises what a create raised
    finally:
        watcher.cancel()
        await asyncio.gather(watcher, return_exceptions=True)
    done = [name for name in bound if name in created]
    last_bound = max((bound[n] for n in done), default=start)
    elapsed = last_bound - start
    rate = len(done) / elapsed if elapsed > 0 else 0.0
    latencies = [max(0.0, bound[n] - created[n]) for n in done]
    create_time = max(created.values(), default=start) - start
    print(f"{label}: created {len(created)} pods in {create_time:.1f} s = {len(created) / max(create_time, 1e-9):.0f}"
          f" pods/s ({args.in_flight} in flight)")
    print(f"{label}: {len(done)}/{args.pods} pods bound in {elapsed:.1f} s = {rate:.1f} pods/s;"
          f" create->bound p50 {percentile(latencies, 50):.2f} s, p90 {percentile(latencies, 90):.2f} s,"
          f" p99 {percentile(latencies, 99):.2f} s; {args.pods - len(done)} not bound within {args.timeout:.0f} s")
    print(f"{label}: CPU seconds used during the run: {cpu.since_start()}")
    return rate, await check(api, label, args.pods)


async def check(api: Api, label: str, expected: int) -> bool:
    """Every pod bound; its claim allocated with exactly one device of its node, reserved for it; no device twice."""
    pods, claims = await api.items(PODS), await api.items(CLAIMS)
    by_name = {c["metadata"]["name"]: c for c in claims}
    holders: dict[tuple[str, str, str], list[str]] = collections.defaultdict(list)
    for c in claims:
        for result in (((c.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results") or []:
            holders[(result["driver"], result["pool"], result["device"])].append(c["metadata"]["name"])
    unbound, bad, referenced = 0, [], set()
    for p in pods:
        name, node_ = p["metadata"]["name"], p["spec"].get("nodeName")
        unbound += not node_
        statuses = (p.get("status") or {}).get("resourceClaimStatuses") or []
        claim = by_name.get(statuses[0].get("resourceClaimName", "")) if statuses else None
        if claim is None:
            bad.append(f"{name}: no claim")
            continue
        referenced.add(claim["metadata"]["name"])
        status = claim.get("status") or {}
        results = ((status.get("allocation") or {}).get("devices") or {}).get("results") or []
        reserved = {r.get("uid") for r in status.get("reservedFor") or []}
        if len(results) != 1:
            bad.append(f"{name}: claim {claim['metadata']['name']} has {len(results)} devices")
        elif node_ and results[0]["pool"] != node_:
            bad.append(f"{name}: on {node_}, its device on {results[0]['pool']}")
        elif p["metadata"]["uid"] not in reserved:
            bad.append(f"{name}: claim {claim['metadata']['name']} not reserved for it")
    twice = {device: names for device, names in holders.items() if len(names) > 1}
    extra = [c for c in claims if c["metadata"]["name"] not in referenced]
    extra_allocated = sum(1 for c in extra if (c.get("status") or {}).get("allocation"))
    ok = len(pods) == expected and not unbound and not bad and not twice
    print(f"{label}: check {'OK' if ok else 'VIOLATED'}: {len(pods) - unbound}/{expected} pods bound,"
          f" {len(pods) - len(bad)} with their claim allocated (1 device, on the pod's node, reserved for it),"
          f" {len(twice)} devices in two claims, {len(extra)} claims of no pod ({extra_allocated} allocated)")
    for line in [*bad[:5], *(f"{'/'.join(d)} in {', '.join(n)}" for d, n in list(twice.items())[:5])]:
        print(f"{label}:   {line}")
    return ok


# ---- the operator ----------------------------------------------------------------------------------

class Operator:
    """`dralloc run` as a subprocess in its own process group; stop() is safe to call twice."""

    def __init__(self, kubeconfig: pathlib.Path, log: pathlib.Path) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.health = int(probe.getsockname()[1])
        dralloc = str(REPO / ".venv" / "bin" / "dralloc")
        help_text = subprocess.run([dralloc, "run", "--help"], capture_output=True, text=True, check=True).stdout
        self.claim_lifecycle = "--claim-lifecycle" in help_text
        self.command = [dralloc, "run", "--kubeconfig", str(kubeconfig), "--scheduler-name", "dralloc",
                        "--standalone", "--metrics-port", "0", "--health-address", "127.0.0.1",
                        "--health-port", str(self.health), "--log-level", "WARNING",
                        *(["--claim-lifecycle", "kube-controller-manager"] if self.claim_lifecycle else [])]
        self.log = log
        self.process: subprocess.Popen[bytes] | None = None
        self.started = 0.0

    def start(self, timeout: float = 120) -> None:
        """Start and wait until /healthz answers (kopf runs; its probe results may be 10 s old)."""
        self.started = time.monotonic()
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(self.command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                            start_new_session=True, preexec_fn=controlplane._die_with_parent)
        while time.monotonic() - self.started < timeout:
            self.check()
            with contextlib.suppress(OSError):
                with urllib.request.urlopen(f"http://127.0.0.1:{self.health}/healthz", timeout=2):
                    return
            time.sleep(0.05)
        raise RuntimeError(f"dralloc's /healthz did not answer within {timeout:.0f} s (log: {self.log})")

    async def until_placing(self, api: Api, timeout: float = 120) -> None:
        """Until the operator has placed a canary pod (no claims), which is then deleted."""
        path = f"{PODS}/canary"
        await api.call("POST", PODS, {"metadata": {"name": "canary"}, "spec": {
            "schedulerName": "dralloc", "containers": [{"name": "main", "image": "pause"}]}})
        while not (await api.call("GET", path))["spec"].get("nodeName"):
            self.check()
            if time.monotonic() - self.started > timeout:
                raise RuntimeError(f"dralloc did not place a pod within {timeout:.0f} s (log: {self.log})")
            await asyncio.sleep(0.05)
        await api.call("DELETE", f"{path}?gracePeriodSeconds=0")
        while await api.call("GET", path, accept=(404,)):
            await asyncio.sleep(0.05)

    def check(self) -> None:
        if self.process is not None and self.process.poll() is not None:
            raise RuntimeError(f"dralloc exited with status {self.process.returncode} (log: {self.log})")

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        controlplane.stop_group(process, grace=30)


class Profiler:
    """py-spy recording the operator (raw collapsed stacks), and the top functions from them."""

    def __init__(self, pid: int, out: pathlib.Path) -> None:
        spy = shutil.which("py-spy", path=str(REPO / ".venv" / "bin")) or shutil.which("py-spy")
        if spy is None:
            raise SystemExit("--py-spy: py-spy is not installed (.venv/bin/pip install py-spy)")
        self.out = out
        self.process = subprocess.Popen([spy, "record", "--pid", str(pid), "--format", "raw", "--rate", "50",
                                         "--nonblocking", "--output", str(out)], stdout=subprocess.DEVNULL,
                                        start_new_session=True)

    def stop(self, top: int = 15) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)  # py-spy writes its output on SIGINT
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.process.kill()
        if not self.out.exists():
            print(f"py-spy: no output in {self.out}")
            return
        own: collections.Counter[str] = collections.Counter()
        total: collections.Counter[str] = collections.Counter()
        by_part: collections.Counter[str] = collections.Counter()
        samples = 0
        for line in self.out.read_text().splitlines():
            stack, _, number = line.rpartition(" ")
            if not stack:
                continue
            frames = [(m.group(1), m.group(2)) if (m := FRAME.match(f)) else (f, "?") for f in stack.split(";")]
            count = int(number)
            samples += count
            own[f"{frames[-1][0]} ({frames[-1][1]})"] += count
            by_part[part(frames[-1][1])] += count
            for function, path in set(frames):
                if path.startswith("dralloc/"):
                    total[f"{function} ({path})"] += count
        if not samples:
            print(f"py-spy: no samples in {self.out}")
            return

        def show(title: str, counter: collections.Counter[str], skip: float = 1.0) -> None:
            print(f"py-spy: {title}")
            for name, count in [(n, c) for n, c in counter.most_common() if c / samples < skip][:top]:
                print(f"  {100 * count / samples:5.1f}%  {name}")

        print(f"py-spy: {samples} samples of the operator while busy ({self.out})")
        show("own time by package", by_part)
        show("own time by function", own)
        show("dralloc's functions with what they call (below the event loop)", total, skip=0.9)


def part(path: str) -> str:
    """`dralloc/handlers/x.py` -> dralloc.handlers; `aiohttp/client.py` -> aiohttp; `json/decoder.py` -> json."""
    pieces = path.split("/")
    if pieces[0] == "dralloc" and len(pieces) > 2:
        return f"dralloc.{pieces[1]}"
    return pieces[0].removesuffix(".py")


# ---- main -------------------------------------------------------------------------------------

async def bench(plane: controlplane.ControlPlane, operator: Operator, args: argparse.Namespace) -> int:
    api = Api(plane, args.in_flight)
    try:
        start = time.monotonic()
        await seed(api, args)
        print(f"seeded {args.nodes} nodes x {args.devices_per_node} devices in {time.monotonic() - start:.1f} s;"
              f" {args.pods} pods per run, {args.nodes * args.devices_per_node} devices")
        pids = {name: proc.pid for name, proc in plane.procs}
        pids["bench"] = os.getpid()
        rates: dict[str, float] = {}
        ok = True
        if args.only in ("both", "kube-scheduler"):
            rates["kube-scheduler"], passed = await run(api, args, "kube-scheduler", None, plane.check, pids)
            ok &= passed
            print(f"deleted run 1's pods and claims in {await delete_everything(api):.1f} s")
        if args.only in ("both", "dralloc"):
            if not operator.claim_lifecycle:
                print("dralloc: `dralloc run` has no --claim-lifecycle yet: its defaults (it and KCM create claims)")
            operator.start()
            up = time.monotonic() - operator.started
            await operator.until_placing(api)
            print(f"dralloc: operator started: /healthz after {up:.1f} s, its first pod placed after"
                  f" {time.monotonic() - operator.started:.1f} s (not counted below)")
            assert operator.process is not None
            pids["dralloc"] = operator.process.pid
            profiler = Profiler(operator.process.pid, args.py_spy) if args.py_spy else None

            def alive() -> None:
                plane.check()
                operator.check()

            try:
                rates["dralloc"], passed = await run(api, args, "dralloc", "dralloc", alive, pids)
            finally:
                if profiler is not None:
                    profiler.stop()
            ok &= passed
        if len(rates) == 2:
            print(f"ratio dralloc/kube-scheduler, pods/s: {rates['dralloc'] / max(rates['kube-scheduler'], 1e-9):.2f}")
        return 0 if ok else 1
    finally:
        await api.close()


def _raise_on_signal(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--devices-per-node", type=int, default=10)
    parser.add_argument("--pods", type=int, default=5000)
    parser.add_argument("--timeout", type=float, default=600, help="seconds per run for every pod to be bound")
    parser.add_argument("--only", choices=("both", "kube-scheduler", "dralloc"), default="both")
    parser.add_argument("--in-flight", type=int, default=32, help="concurrent pod creates (default 32)")
    parser.add_argument("--kube-api-qps", type=float, default=5000,
                        help="kube-scheduler's and KCM's --kube-api-qps and -burst (default 5000; 0: their defaults)")
    parser.add_argument("--keep-logs", action="store_true", help="keep the run dir (components' and dralloc's logs)")
    parser.add_argument("--py-spy", type=pathlib.Path, metavar="FILE",
                        help="record the operator with py-spy during its run (raw stacks to FILE), print top functions")
    args = parser.parse_args()
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):  # SIGINT too: `cmd &` ignores it
        signal.signal(signum, _raise_on_signal)
    run_dir = pathlib.Path(tempfile.mkdtemp(prefix="dralloc-bench-"))
    plane = new_plane(qps=args.kube_api_qps, run_dir=run_dir)
    operator = Operator(plane.kubeconfig, run_dir / "logs" / "dralloc.log")
    started = time.monotonic()
    code = 1
    try:
        plane.start()
        print(f"control plane up in {time.monotonic() - started:.1f} s at {plane.url}"
              f" (kube-controller-manager --controllers={KCM_CONTROLLERS})", flush=True)
        code = asyncio.run(bench(plane, operator, args))
    except KeyboardInterrupt:
        print("interrupted: stopping", file=sys.stderr)
        code = 130
    except (RuntimeError, ApiError, subprocess.CalledProcessError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        if plane.procs:
            plane.tail_logs()
        code = 1
    finally:
        operator.stop()
        plane.stop()
        print(f"whole run: {time.monotonic() - started:.1f} s", flush=True)
        if args.keep_logs or code not in (0, 130):
            print(f"logs kept in {run_dir / 'logs'}")
        else:
            shutil.rmtree(run_dir, ignore_errors=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
