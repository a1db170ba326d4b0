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


def cpu_seconds(pid: int) -> float:
    try:
        fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICKS


class PodWatch:
    """A watch on the default namespace's pods: when each was first seen and first seen bound."""

    def __init__(self, port: int) -> None:
        self.seen: dict[str, float] = {}
        self.bound: dict[str, float] = {}
        self._connection = http.client.HTTPConnection("127.0.0.1", port, timeout=900)
        self._connection.request("GET", f"{PODS}?watch=1&allowWatchBookmarks=false")
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
    sandbox_cpu: float

    @property
    def pods_per_s(self) -> float:
        return self.fill_bound / self.fill_s if self.fill_s else 0.0

    def quantile(self, q: float) -> float:
        if not self.latencies:
            return float("nan")
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def run(nodes: int, gpus: int, pods: int, settle: float) -> Run:
    seed: list[dict[str, Any]] = [*crds(), cluster.gpu_class(), cluster.template("one-gpu")]
    for i in range(nodes):
        name = f"node-{i:04d}"
        seed += [cluster.node(name, pods="250"), nvidia_slice(name, gpus)]
    with tempfile.TemporaryDirectory() as tmp:
        began = time.monotonic()
        server = placement._Server(pathlib.Path(tmp), seed)
        seed_s = time.monotonic() - began
        watch = PodWatch(server.port)
        log = open(pathlib.Path(tmp) / "operator.log", "wb")
        started = time.monotonic()
        operator = subprocess.Popen(
            [str(REPO / ".venv" / "bin" / "dralloc"), "run", "--kubeconfig", str(server.kubeconfig),
             "--standalone", "--metrics-port", "0", "--health-port", "0", "--log-level", "WARNING"],
            stdout=log, stderr=subprocess.STDOUT)
        try:
            server.request("POST", PODS, cluster.pod("canary", template_name="one-gpu"))
            canary = watch.wait_bound(["canary"], deadline=started + 600)
            startup_s = canary - started if canary is not None else None
            rss_started = proc_status(operator.pid, "VmRSS")
            cpu_before = cpu_seconds(operator.pid), cpu_seconds(server.process.pid)
            names = [f"fill-{i:05d}" for i in range(pods)]
            fill_start = time.monotonic()
            writer = placement._client(server.port, [("POST", PODS, cluster.pod(n, template_name="one-gpu"))
                                                     for n in names])
            last = watch.wait_bound(names, deadline=fill_start + 900)
            writer.wait()
            ended = last if last is not None else time.monotonic()
            bound = [n for n in names if n in watch.bound]
            latencies = [watch.bound[n] - watch.seen[n] for n in bound if n in watch.seen]
            cpu_after = cpu_seconds(operator.pid), cpu_seconds(server.process.pid)
            rss_filled = proc_status(operator.pid, "VmRSS")
            time.sleep(settle)
            return Run(
                nodes=nodes, seed_s=seed_s, startup_s=startup_s, fill_pods=pods, fill_bound=len(bound),
                fill_s=ended - fill_start, latencies=latencies, rss_started=rss_started,
                rss_filled=rss_filled, rss_steady=proc_status(operator.pid, "VmRSS"),
                rss_peak=proc_status(operator.pid, "VmHWM"),
                operator_cpu=cpu_after[0] - cpu_before[0], sandbox_cpu=cpu_after[1] - cpu_before[1])
        finally:
            operator.terminate()
            try:
                operator.wait(30)
            except subprocess.TimeoutExpired:
                operator.kill()
            log.close()
            watch.close()
            server.stop()


def report(r: Run) -> None:
    startup = f"{r.startup_s:.2f} s" if r.startup_s is not None else "never (600 s)"
    print(f"{r.nodes:>5} nodes  sandbox seeded in {r.seed_s:.1f} s; operator start -> first bind {startup}")
    print(f"             fill: {r.fill_bound} of {r.fill_pods} pods bound in {r.fill_s:.2f} s = "
          f"{r.pods_per_s:.0f} pods/s; create->bound p50 {r.quantile(0.5) * 1000:.0f} ms, "
          f"p99 {r.quantile(0.99) * 1000:.0f} ms, max {max(r.latencies, default=0) * 1000:.0f} ms")
    print(f"             operator RSS: {r.rss_started:.0f} MiB started, {r.rss_filled:.0f} MiB filled, "
          f"{r.rss_steady:.0f} MiB steady, peak {r.rss_peak:.0f} MiB")
    per_pod = 1000 / max(r.fill_bound, 1)
    print(f"             CPU during the fill: operator {r.operator_cpu:.1f} s ({r.operator_cpu * per_pod:.1f} ms/pod), "
          f"sandbox {r.sandbox_cpu:.1f} s ({r.sandbox_cpu * per_pod:.1f} ms/pod)", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--small-nodes", type=int, default=500)
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--pods", type=int, default=2000)
    parser.add_argument("--settle", type=float, default=5.0)
    args = parser.parse_args()
    print(f"dralloc run on the sandbox: {args.gpus} GPUs a node, {args.pods} one-GPU pods in a burst", flush=True)
    small = run(args.small_nodes, args.gpus, args.pods, args.settle)
    report(small)
    big = run(args.nodes, args.gpus, args.pods, args.settle)
    report(big)
    ratio = big.pods_per_s / small.pods_per_s if small.pods_per_s else float("nan")
    print(f"ratio        pods/s at {args.nodes} / at {args.small_nodes} nodes: {ratio:.2f} (goal >= 0.7); "
          f"steady RSS at {args.nodes}: {big.rss_steady:.0f} MiB (goal <= 500)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
