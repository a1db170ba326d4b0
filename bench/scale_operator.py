"""The operator at scale (issue 15): `dralloc run` against the sandbox at 500 and 5,000 nodes.

For each cluster size (--small-nodes, then --nodes; each node has --gpus NVIDIA-like
devices in one ResourceSlice, one DeviceClass, one ResourceClaimTemplate for one GPU):

  startup   the sandbox seeded in its own process; then `dralloc run` started as a user
            starts it (its own process, standalone) together with one canary pod: the time
            from the operator's start to the canary's bind is what the initial lists (every
            Node, ResourceSlice, DeviceClass, claim and pod) and the first decision cost;
  fill      --pods pods with a claim from the template, created by another process in one
            burst: pods/s from the first create to the last bind, and each pod's
            create -> bound latency (p50, p99, max) as a watch on pods in this process sees
            the two events;
  memory    the operator's RSS after startup, at the end of the fill and after --settle
            seconds of idling (steady), and its peak (VmHWM), from /proc;
  cpu       CPU seconds of the operator and of the sandbox during the fill (from /proc):
            whether the sandbox, not dralloc, is what limits the rate.

The ratio line compares the big cluster with the small one measured in the same run
(goals: pods/s at 5,000 nodes >= 0.7x the 500-node figure, steady RSS <= 500 MiB).
Prints numbers, asserts nothing. Usage:
  .venv/bin/python bench/scale_operator.py [--nodes 5000] [--small-nodes 500] [--gpus 8]
      [--pods 2000] [--settle 5]
"""

from __future__ import annotations

import argparse
import dataclasses
import http.client
import json
import os
import pathlib
import resource
import socket
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "operator"))
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

import placement  # noqa: E402  (bench/placement.py: the sandbox process and the create client)
from tests.handlers import cluster  # noqa: E402
from tests.handlers.conftest import crds  # noqa: E402

PODS = "/api/v1/namespaces/default/pods"
TICKS = os.sysconf("SC_CLK_TCK")


def nvidia_slice(node_name: str, gpus: int) -> dict[str, Any]:
    """One node's GPUs with the attributes NVIDIA's driver publishes (what selectors read)."""
    obj = cluster.gpu_slice(node_name, gpus)
    for device in obj["spec"]["devices"]:
        index = device["attributes"]["index"]["int"]
        device["attributes"].update({
            "productName": {"string": "NVIDIA H100 80GB HBM3"}, "architecture": {"string": "Hopper"},
            "brand": {"string": "Nvidia"}, "cudaComputeCapability": {"version": "9.0.0"},
            "driverVersion": {"version": "570.124.6"}, "type": {"string": "gpu"},
            "uuid": {"string": f"GPU-{node_name}-{index:02d}"}, "pcieBusID": {"string": f"0000:{index:02x}:00.0"},
        })
        device["capacity"] = {"memory": {"value": "80Gi"}}
    return obj


def proc_status(pid: int, field: str) -> float:
    """A /proc/PID/status field in MiB (VmRSS, VmHWM); 0 when the process is gone."""
    try:
        for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def machine_busy() -> float:
    """CPU seconds all cores spent busy since boot (/proc/stat: all but idle and iowait)."""
    fields = [int(f) for f in pathlib.Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    return (sum(fields) - fields[3] - fields[4]) / TICKS


def own_cpu() -> float:
    """CPU seconds of this process and of its reaped children (the writer, once waited for)."""
    mine, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return mine.ru_utime + mine.ru_stime + children.ru_utime + children.ru_stime


def cpu_seconds(pid: int) -> float:
    try:
        fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICKS


class PodWatch:
    """A watch on the default namespace's pods: when each was first seen and first seen bound."""

    def __init__(self, port: int, *, connection: http.client.HTTPConnection | None = None,
                 headers: dict[str, str] | None = None) -> None:
        self.seen: dict[str, float] = {}
        self.bound: dict[str, float] = {}
        self._connection = connection or http.client.HTTPConnection("127.0.0.1", port, timeout=900)
        self._connection.request("GET", f"{PODS}?watch=1&allowWatchBookmarks=false", headers=headers or {})
        self._response = self._connection.getresponse()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        try:
            self._follow()
        except (OSError, ValueError, http.client.HTTPException):
            pass  # the watch was closed (close) or the server went away

    def _follow(self) -> None:
        for line in self._response:
            now = time.monotonic()
            try:
                event = json.loads(line)
            except ValueError:
                continue
            obj = event.get("object") or {}
            name = (obj.get("metadata") or {}).get("name")
            if not name:
                continue
            self.seen.setdefault(name, now)
            if (obj.get("spec") or {}).get("nodeName"):
                self.bound.setdefault(name, now)

    def wait_bound(self, names: list[str], *, deadline: float) -> float | None:
        """When the last of `names` was bound (monotonic), None if not all were by the deadline."""
        while time.monotonic() < deadline:
            if all(n in self.bound for n in names):
                return max(self.bound[n] for n in names)
            time.sleep(0.05)
        return None

    def close(self) -> None:
        # Shut the socket down first: the reader thread holds the response's buffer lock while it
        # waits for a line, and closing the connection from here would wait for that lock.
        sock = self._connection.sock
        if sock is not None:
            sock.shutdown(socket.SHUT_RDWR)
        self._thread.join(10)
        self._connection.close()


@dataclasses.dataclass
class Run:
    control_plane: str
    nodes: int
    seed_s: float
    startup_s: float | None
    fill_pods: int
    fill_bound: int
    fill_s: float
    latencies: list[float]
    rss_started: float
    rss_filled: float
    rss_steady: float
    rss_peak: float
    operator_cpu: float
    server_cpu: dict[str, float]  # component (the sandbox; kube-apiserver, etcd, ...) -> CPU s in the fill
    bench_cpu: float  # this process (the watch) and the writer, in the fill
    machine_cpu: float  # every process of the machine, in the fill (others' work included)
    settled_s: float = 0.0  # real control plane: until KCM untainted every Node and Nodes stopped changing

    @property
    def pods_per_s(self) -> float:
        return self.fill_bound / self.fill_s if self.fill_s else 0.0

    def quantile(self, q: float) -> float:
        if not self.latencies:
            return float("nan")
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


class SandboxTarget:
    """The sandbox in its own process, seeded with the whole cluster at start."""

    name = "sandbox"

    def __init__(self, directory: pathlib.Path, seed: list[dict[str, Any]]) -> None:
        self.server = placement._Server(directory, seed)
        self.kubeconfig = self.server.kubeconfig
        self.settled_s = 0.0

    def watch(self) -> PodWatch:
        return PodWatch(self.server.port)

    def create(self, obj: dict[str, Any]) -> None:
        self.server.request("POST", PODS, obj)

    def writer(self, requests: list[tuple[str, str, object]]) -> subprocess.Popen[bytes]:
        return placement._client(self.server.port, requests)

    def pids(self) -> dict[str, int]:
        return {"sandbox": self.server.process.pid}

    def stop(self) -> None:
        self.server.stop()


class RealTarget:
    """The real control plane (bench/real_control_plane.py), its objects created in parallel."""

    name = "real"

    def __init__(self, run_dir: pathlib.Path, seed: list[dict[str, Any]], kcm_controllers: str) -> None:
        import real_control_plane as rcp

        self.server = rcp.RealServer(run_dir, kcm_controllers=kcm_controllers)
        self._rcp = rcp
        try:
            crd_objs = [o for o in seed if o["kind"] == "CustomResourceDefinition"]
            self.server.create_all(crd_objs)
            self.server.wait_established(o["metadata"]["name"] for o in crd_objs)
            others = [rcp.ready_node(o) if o["kind"] == "Node" else o for o in seed if o not in crd_objs]
            self.server.create_all(o for o in others if o["kind"] != "ResourceSlice")
            self.server.create_all(o for o in others if o["kind"] == "ResourceSlice")
            began = time.monotonic()
            self.server.wait_nodes_settled(sum(1 for o in others if o["kind"] == "Node"))
            self.settled_s = time.monotonic() - began
        except BaseException:
            self.server.plane.tail_logs()
            self.server.stop()
            raise
        self.kubeconfig = self.server.kubeconfig

    def watch(self) -> PodWatch:
        return PodWatch(self.server.port, connection=self.server.connection(timeout=900),
                        headers=self.server.headers)

    def create(self, obj: dict[str, Any]) -> None:
        self.server.request("POST", PODS, obj)

    def writer(self, requests: list[tuple[str, str, object]]) -> subprocess.Popen[bytes]:
        return self._rcp.client(self.server, requests)

    def pids(self) -> dict[str, int]:
        return self.server.processes

    def stop(self) -> None:
        self.server.stop()


def run(nodes: int, gpus: int, pods: int, settle: float, *, control_plane: str = "sandbox",
        run_dir: pathlib.Path | None = None, kcm_controllers: str = "*") -> Run:
    seed: list[dict[str, Any]] = [*crds(), cluster.gpu_class(), cluster.template("one-gpu")]
    for i in range(nodes):
        name = f"node-{i:04d}"
        seed += [cluster.node(name, pods="250"), nvidia_slice(name, gpus)]
    with tempfile.TemporaryDirectory() as tmp:
        began = time.monotonic()
        target: SandboxTarget | RealTarget
        if control_plane == "sandbox":
            target = SandboxTarget(pathlib.Path(tmp), seed)
        else:
            target = RealTarget(run_dir or pathlib.Path(tmp) / "run", seed, kcm_controllers)
        seed_s = time.monotonic() - began
        watch = target.watch()
        log = open(pathlib.Path(tmp) / "operator.log", "wb")
        started = time.monotonic()
        operator = subprocess.Popen(
            [str(REPO / ".venv" / "bin" / "dralloc"), "run", "--kubeconfig", str(target.kubeconfig),
             "--standalone", "--metrics-port", "0", "--health-port", "0", "--log-level", "WARNING"],
            stdout=log, stderr=subprocess.STDOUT)
        try:
            target.create(cluster.pod("canary", template_name="one-gpu"))
            canary = watch.wait_bound(["canary"], deadline=started + 600)
            startup_s = canary - started if canary is not None else None
            rss_started = proc_status(operator.pid, "VmRSS")
            pids = target.pids()
            cpu_before = cpu_seconds(operator.pid), {name: cpu_seconds(pid) for name, pid in pids.items()}
            bench_before, machine_before = own_cpu(), machine_busy()
            names = [f"fill-{i:05d}" for i in range(pods)]
            fill_start = time.monotonic()
            writer = target.writer([("POST", PODS, cluster.pod(n, template_name="one-gpu")) for n in names])
            last = watch.wait_bound(names, deadline=fill_start + 900)
            writer.wait()
            ended = last if last is not None else time.monotonic()
            bound = [n for n in names if n in watch.bound]
            latencies = [watch.bound[n] - watch.seen[n] for n in bound if n in watch.seen]
            cpu_after = cpu_seconds(operator.pid), {name: cpu_seconds(pid) for name, pid in pids.items()}
            bench_cpu, machine_cpu = own_cpu() - bench_before, machine_busy() - machine_before
            rss_filled = proc_status(operator.pid, "VmRSS")
            time.sleep(settle)
            return Run(
                control_plane=control_plane, nodes=nodes, seed_s=seed_s, startup_s=startup_s, fill_pods=pods,
                fill_bound=len(bound), fill_s=ended - fill_start, latencies=latencies, rss_started=rss_started,
                rss_filled=rss_filled, rss_steady=proc_status(operator.pid, "VmRSS"),
                rss_peak=proc_status(operator.pid, "VmHWM"), operator_cpu=cpu_after[0] - cpu_before[0],
                server_cpu={name: cpu_after[1][name] - cpu_before[1][name] for name in pids},
                bench_cpu=bench_cpu, machine_cpu=machine_cpu, settled_s=target.settled_s)
        finally:
            operator.terminate()
            try:
                operator.wait(30)
            except subprocess.TimeoutExpired:
                operator.kill()
            log.close()
            watch.close()
            if operator.returncode not in (0, -15, None):
                print(f"             (operator exited {operator.returncode}; the end of its log:)\n"
                      + (pathlib.Path(tmp) / "operator.log").read_text(errors="replace")[-2000:], flush=True)
            target.stop()


def report(r: Run) -> None:
    startup = f"{r.startup_s:.2f} s" if r.startup_s is not None else "never (600 s)"
    if r.control_plane == "sandbox":
        print(f"{r.nodes:>5} nodes  sandbox seeded in {r.seed_s:.1f} s; operator start -> first bind {startup}")
    else:
        print(f"{r.nodes:>5} nodes  real control plane up and seeded in {r.seed_s:.1f} s (of which {r.settled_s:.1f} s "
              f"waiting for KCM to untaint the Nodes); operator start -> first bind {startup}")
    print(f"             fill: {r.fill_bound} of {r.fill_pods} pods bound in {r.fill_s:.2f} s = "
          f"{r.pods_per_s:.0f} pods/s; create->bound p50 {r.quantile(0.5) * 1000:.0f} ms, "
          f"p99 {r.quantile(0.99) * 1000:.0f} ms, max {max(r.latencies, default=0) * 1000:.0f} ms")
    print(f"             operator RSS: {r.rss_started:.0f} MiB started, {r.rss_filled:.0f} MiB filled, "
          f"{r.rss_steady:.0f} MiB steady, peak {r.rss_peak:.0f} MiB")
    per_pod = 1000 / max(r.fill_bound, 1)
    servers = ", ".join(f"{name} {cpu:.1f} s ({cpu * per_pod:.1f} ms/pod)" for name, cpu in r.server_cpu.items())
    print(f"             CPU during the fill: operator {r.operator_cpu:.1f} s ({r.operator_cpu * per_pod:.1f} ms/pod), "
          f"{servers}", flush=True)
    ours = r.operator_cpu + sum(r.server_cpu.values()) + r.bench_cpu
    print(f"             machine during the fill ({os.cpu_count()} cores x {r.fill_s:.1f} s): {r.machine_cpu:.1f} CPU s busy, "
          f"{ours:.1f} s of them this benchmark's (watch and writer {r.bench_cpu:.1f} s), "
          f"{max(r.machine_cpu - ours, 0):.1f} s other processes'", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--small-nodes", type=int, default=500, help="0: measure --nodes alone")
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--pods", type=int, default=2000)
    parser.add_argument("--settle", type=float, default=5.0)
    parser.add_argument("--control-plane", choices=("sandbox", "real"), default="sandbox",
                        help="the embedded sandbox API server (default), or the real Kubernetes control plane of "
                        "e2e/controlplane.py (binaries in e2e/bin/)")
    parser.add_argument("--run-dir", type=pathlib.Path, default=pathlib.Path("/tmp/dralloc-bench-scale-operator"),
                        help="real: the control plane's kubeconfig and logs (not e2e/run, which the suite uses)")
    parser.add_argument("--claim-lifecycle", choices=("kube-controller-manager", "dralloc"),
                        default="kube-controller-manager",
                        help="real: who creates the pods' claims from the template: KCM's resourceclaim-controller "
                        "(default, as in a real cluster) or dralloc (KCM runs without its DRA controllers; what "
                        "dralloc does on the sandbox)")
    args = parser.parse_args()
    kcm_controllers = "*" if args.claim_lifecycle == "kube-controller-manager" else \
        "*,-resourceclaim-controller,-device-taint-eviction-controller"
    where = "the sandbox" if args.control_plane == "sandbox" else \
        f"the real control plane (claims from templates by {args.claim_lifecycle})"
    print(f"dralloc run on {where}: {args.gpus} GPUs a node, {args.pods} one-GPU pods in a burst", flush=True)
    options = {"control_plane": args.control_plane, "run_dir": args.run_dir.resolve(), "kcm_controllers": kcm_controllers}
    small = None
    if args.small_nodes:
        small = run(args.small_nodes, args.gpus, args.pods, args.settle, **options)  # type: ignore[arg-type]
        report(small)
    big = run(args.nodes, args.gpus, args.pods, args.settle, **options)  # type: ignore[arg-type]
    report(big)
    if small is not None:
        ratio = big.pods_per_s / small.pods_per_s if small.pods_per_s else float("nan")
        print(f"ratio        pods/s at {args.nodes} / at {args.small_nodes} nodes: {ratio:.2f} (goal >= 0.7); "
              f"steady RSS at {args.nodes}: {big.rss_steady:.0f} MiB (goal <= 500)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
