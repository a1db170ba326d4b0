"""Benchmark of the sandbox API server: prints numbers, never asserts.

The server runs in its own process (as `dralloc sandbox` does), the clients in this
one, over HTTP on 127.0.0.1. Measured:

- creates/s: ResourceClaims created by concurrent clients (full admission: schema,
  DRA rules, CEL parse);
- status patches/s with 3 watchers: merge-patches of claim status while three watches
  of all claims stream every event (and the time until the last watcher saw the last
  write);
- list latency of 10,000 ResourceSlices (4 devices each), as one unpaginated LIST;
- watch event latency p50/p99: a write, then the time until a watcher has its event;
- the server's own CPU per request (from /proc), which does not depend on how much
  of a core the machine's other work leaves it, and the rate that implies per core;
- for reference, the same creates and status writes in-process (store + admission, no
  HTTP), which is the server's own cost per write; the rest is HTTP on loopback and the
  client, which share this machine's cores.

Targets on our machines: >= 1,500 writes/s sustained, a 10,000-slice list <= 1 s.
Usage: python bench/sandbox.py [--claims 3000] [--slices 10000] [--concurrency 32]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from typing import Any

import aiohttp

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLAIMS = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims"
SLICES = "/apis/resource.k8s.io/v1/resourceslices"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ServerCpu:
    """CPU seconds the server process used (Linux /proc), to tell its cost from contention."""

    def __init__(self, pid: int) -> None:
        self.path = f"/proc/{pid}/stat"

    def seconds(self) -> float:
        try:
            fields = open(self.path).read().rsplit(")", 1)[1].split()
        except OSError:
            return float("nan")
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def report(self, since: float, count: int, wall: float) -> str:
        used = self.seconds() - since
        return (f"server CPU {used / count * 1000:.2f} ms per request (~{count / used:,.0f}/s per core), "
                f"it got {used / wall:.0%} of a core")


def claim(i: int) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": f"claim-{i}"},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                "deviceClassName": "gpu",
                "selectors": [{"cel": {"expression": 'device.attributes["gpu.dralloc.dev"].type == "gpu"'}}]}}]}}}


def resource_slice(i: int) -> dict[str, Any]:
    node = f"node-{i // 10}"
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"slice-{i}"},
            "spec": {"driver": "gpu.dralloc.dev", "nodeName": node,
                     "pool": {"name": f"{node}-{i % 10}", "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": f"gpu-{d}", "attributes": {
                         "productName": {"string": "NVIDIA H100 80GB HBM3"}, "index": {"int": d},
                         "driverVersion": {"version": "550.54.15"}},
                         "capacity": {"memory": {"value": "80Gi"}}} for d in range(4)]}}


async def run_all(session: aiohttp.ClientSession, method: str, url: str, bodies: list[Any],
                  concurrency: int, content_type: str = "application/json") -> list[int]:
    queue: asyncio.Queue[tuple[int, Any]] = asyncio.Queue()
    for item in enumerate(bodies):
        queue.put_nowait(item)
    codes = [0] * len(bodies)

    async def worker() -> None:
        while not queue.empty():
            i, (path, body) = queue.get_nowait()
            async with session.request(method, url + path, data=json.dumps(body),
                                       headers={"Content-Type": content_type}) as resp:
                await resp.read()
                codes[i] = resp.status

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return codes


async def watcher(session: aiohttp.ClientSession, url: str, rv: str, expect: int, done: list[float]) -> None:
    seen = 0
    params = {"watch": "true", "resourceVersion": rv}
    async with session.get(url + "/apis/resource.k8s.io/v1/resourceclaims", params=params,
                           timeout=aiohttp.ClientTimeout(total=300)) as resp:
        async for line in resp.content:
            if line.strip():
                seen += 1
            if seen >= expect:
                break
    done.append(time.perf_counter())


async def bench(args: argparse.Namespace, url: str, cpu: ServerCpu) -> None:
    connector = aiohttp.TCPConnector(limit=args.concurrency + 8)
    async with aiohttp.ClientSession(connector=connector) as session:
        # creates/s
        bodies = [(CLAIMS, claim(i)) for i in range(args.claims)]
        used, start = cpu.seconds(), time.perf_counter()
        codes = await run_all(session, "POST", url, bodies, args.concurrency)
        elapsed = time.perf_counter() - start
        print(f"creates/s (ResourceClaims, {args.claims}, concurrency {args.concurrency}): "
              f"{args.claims / elapsed:,.0f}  [{codes.count(201)} created; "
              f"{cpu.report(used, args.claims, elapsed)}]")

        # status patches/s with 3 watchers
        async with session.get(url + CLAIMS) as resp:
            rv = (await resp.json())["metadata"]["resourceVersion"]
        done: list[float] = []
        watchers = [asyncio.create_task(watcher(session, url, rv, args.claims, done)) for _ in range(3)]
        await asyncio.sleep(0.2)
        alloc = {"devices": {"results": [{"request": "gpu", "driver": "gpu.dralloc.dev", "pool": "node-0",
                                          "device": "gpu-0"}]}}
        patches = [(f"{CLAIMS}/claim-{i}/status", {"status": {"allocation": alloc, "reservedFor": [
            {"resource": "pods", "name": f"pod-{i}", "uid": f"uid-{i}"}]}}) for i in range(args.claims)]
        used, start = cpu.seconds(), time.perf_counter()
        codes = await run_all(session, "PATCH", url, patches, args.concurrency, "application/merge-patch+json")
        elapsed = time.perf_counter() - start
        await asyncio.gather(*watchers)
        lag = max(done) - start - elapsed
        print(f"status patches/s with 3 watchers: {args.claims / elapsed:,.0f}  "
              f"[{codes.count(200)} ok; last watcher done {max(lag, 0) * 1000:.0f} ms after the last write; "
              f"{cpu.report(used, args.claims, max(done) - start)}]")

        # list latency of N ResourceSlices
        bodies = [(SLICES, resource_slice(i)) for i in range(args.slices)]
        start = time.perf_counter()
        codes = await run_all(session, "POST", url, bodies, args.concurrency)
        elapsed = time.perf_counter() - start
        print(f"creates/s (ResourceSlices with 4 devices): {args.slices / elapsed:,.0f}  "
              f"[{codes.count(201)} created]")
        timings = []
        for _ in range(5):
            start = time.perf_counter()
            async with session.get(url + SLICES) as resp:
                body = await resp.read()
            timings.append(time.perf_counter() - start)
        count = len(json.loads(body)["items"])
        print(f"list latency of {count:,} ResourceSlices ({len(body) / 2**20:.1f} MiB): "
              f"best {min(timings) * 1000:.0f} ms, median {statistics.median(timings) * 1000:.0f} ms")

        # watch event latency
        latencies = await watch_latency(session, url, args.latency_samples)
        latencies.sort()
        p50 = latencies[len(latencies) // 2]
        p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
        print(f"watch event latency ({len(latencies)} writes): p50 {p50 * 1000:.2f} ms, p99 {p99 * 1000:.2f} ms")


async def watch_latency(session: aiohttp.ClientSession, url: str, samples: int) -> list[float]:
    path = "/api/v1/namespaces/default/configmaps"
    async with session.post(url + path, json={"metadata": {"name": "probe"}, "data": {}}) as resp:
        rv = (await resp.json())["metadata"]["resourceVersion"]
    latencies: list[float] = []
    params = {"watch": "true", "resourceVersion": rv}
    async with session.get(url + path, params=params) as stream:
        for i in range(samples):
            sent = time.perf_counter()
            async with session.patch(url + path + "/probe", data=json.dumps({"data": {"i": str(i)}}),
                                     headers={"Content-Type": "application/merge-patch+json"}) as resp:
                await resp.read()
            await stream.content.readline()
            latencies.append(time.perf_counter() - sent)
    return latencies


def in_process(count: int) -> None:
    sys.path.insert(0, os.path.join(ROOT, "operator"))
    from dralloc.sandbox import admission, resources, store, watches

    registry, hub = resources.Registry(), watches.Hub()
    objects = store.Store(registry, hub, admission.Admission())
    rt = registry.get("resource.k8s.io", "v1", "resourceclaims")
    assert rt is not None
    start = time.perf_counter()
    for i in range(count):
        objects.create(rt, "default", claim(i))
    created = time.perf_counter() - start
    alloc = {"devices": {"results": [{"request": "gpu", "driver": "gpu.dralloc.dev", "pool": "node-0",
                                      "device": "gpu-0"}]}}
    start = time.perf_counter()
    for i in range(count):
        current = json.loads(objects.entry(rt, "default", f"claim-{i}").raw)
        current["status"] = {"allocation": alloc}
        objects.update(rt, "default", f"claim-{i}", current, subresource="status")
    patched = time.perf_counter() - start
    print(f"in-process (no HTTP): creates/s {count / created:,.0f}, status writes/s {count / patched:,.0f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--claims", type=int, default=3000)
    parser.add_argument("--slices", type=int, default=10_000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--latency-samples", type=int, default=500)
    args = parser.parse_args()
    port = free_port()
    env = {**os.environ, "PYTHONPATH": os.path.join(ROOT, "operator")}
    server = subprocess.Popen([sys.executable, "-m", "dralloc.sandbox", "--port", str(port), "--seed", "empty"],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True)
    try:
        assert server.stdout is not None
        server.stdout.readline()
        asyncio.run(bench(args, f"http://127.0.0.1:{port}", ServerCpu(server.pid)))
    finally:
        server.terminate()
        server.wait(30)
    in_process(args.claims)
    return 0


if __name__ == "__main__":
    sys.exit(main())
