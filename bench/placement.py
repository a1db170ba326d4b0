"""Pod placement throughput: pure decisions, and end to end through the operator on the sandbox.

  decisions   the scheduling layer alone (Placer: node fit + allocator + commit), placing pods
              with one GPU claim each on 500 nodes x 10 GPUs until full
  end-to-end  the real operator (kopf) against the sandbox API server: create N pods with a
              claim template, time until all are bound with allocated claims (filling the cluster);
              then the steady-state churn case: pods finish and new ones arrive

Prints numbers, asserts nothing. Targets (issue 4): >= 1,000 decisions/s pure, >= 100 pods/s end
to end. Usage: .venv/bin/python bench/placement.py [decisions] [end-to-end] [--pods N] [--nodes N]
"""

from __future__ import annotations

import argparse
import pathlib
import subprocess
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "operator"))

from dralloc.allocation.features import Features  # noqa: E402
from dralloc.allocation.snapshots import Snapshot  # noqa: E402
from dralloc.model import claims, classes, conversion, devices, nodes, pods  # noqa: E402
from dralloc.scheduling import placement  # noqa: E402
from dralloc.testing import cluster  # noqa: E402


def decisions(node_count: int, gpus: int) -> None:
    node_objs = [cluster.node(f"node-{i:03d}") for i in range(node_count)]
    slices = [cluster.gpu_slice(f"node-{i:03d}", gpus) for i in range(node_count)]
    features = Features()
    snapshot = Snapshot.build(
        device_classes=[conversion.parse_as(classes.DeviceClass, cluster.gpu_class())],
        resource_slices=[conversion.parse_as(devices.ResourceSlice, s) for s in slices],
        features=features,
    )
    placer = placement.Placer(node_list=[conversion.parse_as(nodes.Node, n) for n in node_objs],
                              snapshot=snapshot, features=features)
    total = node_count * gpus
    items = []
    for i in range(total):
        pod = conversion.parse_as(pods.Pod, {**cluster.pod(f"p-{i}", template_name="one-gpu"),
                                             "metadata": {"name": f"p-{i}", "namespace": "default"}})
        claim = conversion.parse_as(claims.ResourceClaim, cluster.claim(f"p-{i}-gpus"))
        items.append(placement.Item(name=f"p-{i}", claims=(claim,), pod=pod))
    start = time.perf_counter()
    placed = 0
    for item in items:
        decision = placer.place(item)
        if isinstance(decision, placement.Placement):
            placer.commit(item, decision)
            placed += 1
    elapsed = time.perf_counter() - start
    print(f"decisions    {placed} pods placed in {elapsed:.3f} s = {placed / elapsed:8.0f} decisions/s "
          f"({placer.allocator_calls} allocator calls)")


class _Server:
    """The sandbox in its own process: the operator must not share a GIL with the API server."""

    def __init__(self, directory: pathlib.Path, seed: list[dict[str, object]]) -> None:
        import json
        import socket
        import subprocess

        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        seed_file = directory / "seed.json"
        seed_file.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": seed}))
        self.kubeconfig = directory / "kubeconfig"
        self.process = subprocess.Popen(
            [sys.executable, "-m", "dralloc.sandbox", "--port", str(self.port), "--seed", str(seed_file),
             "--kubeconfig", str(self.kubeconfig)],
            env={**__import__("os").environ, "PYTHONPATH": str(REPO / "operator")},
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 30
        while not self.kubeconfig.exists() or not self._ready():
            if time.monotonic() > deadline:
                raise RuntimeError("sandbox did not start")
            time.sleep(0.1)

    def _ready(self) -> bool:
        try:
            self.request("GET", "/version")
            return True
        except OSError:
            return False

    def request(self, method: str, path: str, body: object = None,
                content_type: str = "application/json") -> dict[str, object]:
        import json
        import urllib.request

        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=data, method=method)
        request.add_header("Content-Type", content_type)
        with urllib.request.urlopen(request, timeout=30) as response:
            result: dict[str, object] = json.loads(response.read() or b"{}")
            return result

    def pods(self) -> list[dict[str, object]]:
        items = self.request("GET", "/api/v1/namespaces/default/pods")["items"]
        assert isinstance(items, list)
        return items

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(30)


_CLIENT = """
import http.client, json, sys, time
port = int(sys.argv[1])
connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
start = time.perf_counter()
requests = json.load(sys.stdin)
for method, path, body in requests:
    kind = "application/merge-patch+json" if method == "PATCH" else "application/json"
    connection.request(method, path, body=json.dumps(body), headers={"Content-Type": kind})
    connection.getresponse().read()
print(f"  (client: {len(requests)} requests in {time.perf_counter() - start:.2f} s)", flush=True)
"""


def _client(port: int, requests: list[tuple[str, str, object]]) -> subprocess.Popen[bytes]:
    """Send the requests from another process, in order, so the operator keeps this one's GIL."""
    import json
    import subprocess

    process = subprocess.Popen([sys.executable, "-c", _CLIENT, str(port)], stdin=subprocess.PIPE)
    assert process.stdin is not None
    process.stdin.write(json.dumps(requests).encode())
    process.stdin.close()
    return process


def end_to_end(node_count: int, gpus: int, pod_count: int) -> None:
    from dralloc.running import OperatorThread  # loads kopf: not for the decisions case
    from dralloc.testing.settings import run_settings

    seed = [*cluster.crds(), cluster.gpu_class(), cluster.template("one-gpu")]
    for i in range(node_count):
        seed += [cluster.node(f"node-{i:03d}"), cluster.gpu_slice(f"node-{i:03d}", gpus)]
    with tempfile.TemporaryDirectory() as tmp:
        server = _Server(pathlib.Path(tmp), seed)
        operator = OperatorThread(run_settings(server.kubeconfig)).start()

        def bound(prefix: str) -> int:
            return sum(1 for p in server.pods()
                       if str(p["metadata"]["name"]).startswith(prefix) and p["spec"].get("nodeName"))  # type: ignore[index,union-attr]

        def wait(prefix: str, count: int, start: float) -> tuple[int, float]:
            done = 0
            while done < count and time.perf_counter() - start < 600:
                time.sleep(1.0)
                done = bound(prefix)
            return done, time.perf_counter() - start

        try:
            start = time.perf_counter()
            writer = _client(server.port, [("POST", "/api/v1/namespaces/default/pods",
                                            cluster.pod(f"fill-{i:05d}", template_name="one-gpu"))
                                           for i in range(pod_count)])
            done, elapsed = wait("fill-", pod_count, start)
            writer.wait()
            print(f"end-to-end   {done} of {pod_count} pods bound in {elapsed:.2f} s = {done / elapsed:6.0f} pods/s "
                  "(from the first create to the last bind; pods are created by another process)")
            # Churn: half the pods finish, as many new ones arrive; time until all new ones are bound.
            churn = pod_count // 2
            start = time.perf_counter()
            requests: list[tuple[str, str, object]] = []
            for i in range(churn):
                requests.append(("PATCH", f"/api/v1/namespaces/default/pods/fill-{i:05d}/status",
                                 {"status": {"phase": "Succeeded"}}))
                requests.append(("POST", "/api/v1/namespaces/default/pods",
                                 cluster.pod(f"churn-{i:05d}", template_name="one-gpu")))
            writer = _client(server.port, requests)
            done, elapsed = wait("churn-", churn, start)
            writer.wait()
            print(f"churn        {done} of {churn} replacement pods bound in {elapsed:.2f} s = "
                  f"{done / elapsed:6.0f} pods/s (pods finishing, claims released, new ones placed)")
        finally:
            operator.stop()
            server.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("cases", nargs="*", default=["decisions", "end-to-end"])
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--gpus", type=int, default=10)
    parser.add_argument("--pods", type=int, default=2000)
    args = parser.parse_args()
    if "decisions" in args.cases:
        decisions(args.nodes, args.gpus)
    if "end-to-end" in args.cases:
        end_to_end(args.nodes, args.gpus, args.pods)
    return 0


if __name__ == "__main__":
    sys.exit(main())
