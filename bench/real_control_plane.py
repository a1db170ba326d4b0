"""The real control plane of e2e/controlplane.py for benchmarks: started with a benchmark's flags, HTTPS requests, fast bulk creates.

`RealServer` starts `ControlPlane` (etcd, kube-apiserver, kube-scheduler,
kube-controller-manager; binaries from e2e/bin/) in its own run dir, so that it can run
beside the suite's e2e/run, and offers what bench/scale_operator.py uses of the sandbox
handle: `kubeconfig`, `request`, `connection()` (for a watch), `processes` (pids of the
components, for their CPU), `stop()`.

No kubelet runs, so the Nodes a benchmark creates are kept usable this way:

- each Node is created with a Ready=True condition (as a kubelet registers one);
- kube-apiserver's TaintNodesByCondition admission gives every new Node the
  node.kubernetes.io/not-ready:NoSchedule taint; KCM's node-lifecycle-controller takes
  it off once it sees Ready=True (during setup: `wait_nodes_settled` waits for that);
- KCM runs with --node-monitor-grace-period=24h (NODE_MONITOR_GRACE): the lifecycle
  controller never finds a heartbeat (Lease or condition) overdue during a run, so nothing
  heartbeats N Leases and no Node is tainted unreachable. Node objects do not change while
  a measurement runs, as in a cluster of healthy kubelets whose Lease renewals dralloc does
  not watch.

KCM's client rate limit (--kube-api-qps 20, --kube-api-burst 30 by default) is raised
(KCM_QPS): the resourceclaim-controller makes two writes per pod (the claim, the pod's
resourceClaimStatuses) and at 20 QPS it, not dralloc, would set the rate of a burst.
"""

from __future__ import annotations

import concurrent.futures
import http.client
import json
import pathlib
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Iterable
from typing import Any

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "e2e"))

import controlplane  # type: ignore[import-not-found]  # noqa: E402  (e2e/controlplane.py)

NODE_MONITOR_GRACE = "24h"
KCM_QPS = ("1000", "2000")  # --kube-api-qps, --kube-api-burst
Obj = dict[str, Any]

# kind -> collection path (cluster-scoped, or in `default`)
PATHS = {
    "CustomResourceDefinition": "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
    "DeviceClass": "/apis/resource.k8s.io/v1/deviceclasses",
    "ResourceClaimTemplate": "/apis/resource.k8s.io/v1/namespaces/default/resourceclaimtemplates",
    "ResourceSlice": "/apis/resource.k8s.io/v1/resourceslices",
    "Node": "/api/v1/nodes",
    "Pod": "/api/v1/namespaces/default/pods",
}


def ready_node(node: Obj) -> Obj:
    """The Node with a Ready=True condition, as a kubelet registers it."""
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    ready = {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "benchmark node (no kubelet)",
             "lastHeartbeatTime": now, "lastTransitionTime": now}
    return {**node, "status": {**node.get("status", {}), "conditions": [ready]}}


class RealServer:
    def __init__(self, run_dir: pathlib.Path, *, kcm_controllers: str = controlplane.KCM_CONTROLLERS,
                 kcm_qps: tuple[str, str] = KCM_QPS) -> None:
        self.run_dir = run_dir
        extra = {"kube-controller-manager": [f"--node-monitor-grace-period={NODE_MONITOR_GRACE}",
                                             f"--kube-api-qps={kcm_qps[0]}", f"--kube-api-burst={kcm_qps[1]}"]}
        self.plane = controlplane.ControlPlane(run_dir=run_dir, kcm_controllers=kcm_controllers, extra_args=extra)
        try:
            self.plane.start()
        except BaseException:
            self.plane.tail_logs()
            self.plane.stop()
            raise
        self.kubeconfig = self.plane.kubeconfig
        self.port = self.plane.ports["apiserver"]
        self.ca = str(self.plane.pki / "ca.crt")
        self.headers = {"Authorization": f"Bearer {self.plane.token}"}
        self._context = ssl.create_default_context(cafile=self.ca)
        self._local = threading.local()

    @property
    def processes(self) -> dict[str, int]:
        return {name: proc.pid for name, proc in self.plane.procs}

    def connection(self, timeout: float = 60) -> http.client.HTTPSConnection:
        return http.client.HTTPSConnection("127.0.0.1", self.port, timeout=timeout, context=self._context)

    def request(self, method: str, path: str, body: object = None,
                content_type: str = "application/json") -> Obj:
        """One request on this thread's keep-alive connection; raises on a status >= 400 but 409 on a create.
        A connection the server closed while idle is replaced once (a retried create may answer 409)."""
        data = json.dumps(body).encode() if body is not None else None
        for attempt in (1, 2):
            connection = getattr(self._local, "connection", None)
            reused = connection is not None
            if connection is None:
                connection = self._local.connection = self.connection()
            try:
                connection.request(method, path, body=data, headers={**self.headers, "Content-Type": content_type})
                response = connection.getresponse()
                payload = response.read()
                break
            except (OSError, http.client.HTTPException):
                connection.close()
                self._local.connection = None
                if not reused or attempt == 2:
                    raise
        if response.status >= 400 and not (response.status == 409 and method == "POST"):
            raise RuntimeError(f"{method} {path}: {response.status} {payload[:300]!r}")
        result: Obj = json.loads(payload or b"{}")
        return result

    def create_all(self, objects: Iterable[Obj], *, workers: int = 8) -> None:
        """POST each object to its kind's collection, `workers` connections in parallel (409 is fine)."""
        items = list(objects)
        with concurrent.futures.ThreadPoolExecutor(workers) as pool:
            for future in [pool.submit(self.request, "POST", PATHS[obj["kind"]], obj) for obj in items]:
                future.result()

    def wait_established(self, crd_names: Iterable[str], timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        for name in crd_names:
            while True:
                crd = self.request("GET", f"{PATHS['CustomResourceDefinition']}/{name}")
                if any(c.get("type") == "Established" and c.get("status") == "True"
                       for c in (crd.get("status") or {}).get("conditions") or []):
                    break
                if time.monotonic() > deadline:
                    raise RuntimeError(f"CRD {name} not Established after {timeout:.0f} s")
                time.sleep(0.2)

    def wait_nodes_settled(self, count: int, *, quiet: float = 5.0, timeout: float = 900) -> float:
        """Until `count` Nodes exist, none has a taint and none changed for `quiet` s (KCM's
        node-lifecycle-controller untaints, its ttl-controller annotates); the seconds it took."""
        began = time.monotonic()
        deadline = began + timeout
        last_change = time.monotonic()
        previous: int | None = None
        while True:
            items = self.request("GET", "/api/v1/nodes")["items"]
            tainted = sum(1 for n in items if (n.get("spec") or {}).get("taints"))
            newest = max((int(n["metadata"]["resourceVersion"]) for n in items), default=0)
            if newest != previous:
                previous, last_change = newest, time.monotonic()
            if len(items) >= count and not tainted and time.monotonic() - last_change >= quiet:
                return time.monotonic() - began
            if time.monotonic() > deadline:
                raise RuntimeError(f"nodes not settled after {timeout:.0f} s: {len(items)} of {count}, "
                                   f"{tainted} tainted")
            self.plane.check()
            time.sleep(1.0)

    def request_counts(self) -> dict[str, float]:
        """kube-apiserver's apiserver_request_total summed by 'VERB resource[/subresource]' (its /metrics)."""
        connection = self.connection()
        try:
            connection.request("GET", "/metrics", headers=self.headers)
            text = connection.getresponse().read().decode()
        finally:
            connection.close()
        counts: dict[str, float] = {}
        for line in text.splitlines():
            if not line.startswith("apiserver_request_total{"):
                continue
            labels_text, _, value = line[len("apiserver_request_total{"):].rpartition("} ")
            labels = dict(item.split("=", 1) for item in labels_text.split('",') if "=" in item)
            labels = {k: v.strip('"') for k, v in labels.items()}
            resource = labels.get("resource", "") + (f"/{labels['subresource']}" if labels.get("subresource") else "")
            key = f"{labels.get('verb', '?')} {resource or '-'}"
            counts[key] = counts.get(key, 0.0) + float(value)
        return counts

    def profile(self, component: str, seconds: int, path: pathlib.Path) -> threading.Thread:
        """Start fetching a `seconds`-long CPU profile of kube-apiserver (its /debug/pprof, on by
        default) into `path`, in a thread (join it); `go tool pprof -top <path>` reads it."""
        assert component == "kube-apiserver", "only kube-apiserver's port is served with the admin token"

        def fetch() -> None:
            connection = self.connection(timeout=seconds + 120)
            try:
                connection.request("GET", f"/debug/pprof/profile?seconds={seconds}", headers=self.headers)
                response = connection.getresponse()
                data = response.read()
                if response.status == 200:
                    path.write_bytes(data)
                else:
                    print(f"  (profile of {component}: {response.status} {data[:200]!r})", flush=True)
            finally:
                connection.close()

        thread = threading.Thread(target=fetch, daemon=True)
        thread.start()
        return thread

    def stop(self) -> None:
        self.plane.stop()


_CLIENT = """
import http.client, json, os, ssl, sys, threading, time
port, ca, connections = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
headers = {"Authorization": "Bearer " + os.environ["BENCH_TOKEN"], "Content-Type": "application/json"}
context = ssl.create_default_context(cafile=ca)
requests = json.load(sys.stdin)
failed = []

def send(share):
    connection = http.client.HTTPSConnection("127.0.0.1", port, timeout=60, context=context)
    for method, path, body in share:
        connection.request(method, path, body=json.dumps(body), headers=headers)
        response = connection.getresponse()
        response.read()
        if response.status >= 400:
            failed.append(response.status)

start = time.perf_counter()
threads = [threading.Thread(target=send, args=(requests[i::connections],)) for i in range(connections)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
print(f"  (client: {len(requests)} requests on {connections} connections in {time.perf_counter() - start:.2f} s, "
      f"{len(failed)} failed)", flush=True)
"""


def client(server: RealServer, requests: list[tuple[str, str, object]], *, connections: int = 4) -> subprocess.Popen[bytes]:
    """Send the requests from another process, over `connections` HTTPS connections at once (request
    i on connection i mod n): one connection to kube-apiserver creates pods more slowly than dralloc
    binds them, and the burst would measure the client."""
    import os

    process = subprocess.Popen([sys.executable, "-c", _CLIENT, str(server.port), server.ca, str(connections)],
                               stdin=subprocess.PIPE, env={**os.environ, "BENCH_TOKEN": server.plane.token})
    assert process.stdin is not None
    process.stdin.write(json.dumps(requests).encode())
    process.stdin.close()
    return process
