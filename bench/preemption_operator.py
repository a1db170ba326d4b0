"""Priority preemption through the operator and an API server: what a priority-1000 pod waits (issue 29).

The operator (`dralloc run`, in a thread of this process) against the sandbox API server (in another
thread): --nodes nodes x 8 GPUs, DeviceClass `gpu`, templates of 1, 2, 4 and 8 GPUs, PriorityClasses of
100 and 1000. The cluster is filled by priority-100 pods of 1, 2, 4 and 8 GPUs (seeded: --seed) that the
operator places; then --arrivals priority-1000 pods of 1, 2 or 4 GPUs are created one every --interval
seconds, and each one's wait is measured from just before its create request until this process sees it
bound (spec.nodeName, polled every 0.05 s): what its user waits for, through nomination, the victims'
deletion, the claim lifecycle releasing their devices, and the placement. Measured in the same run, the
baseline: the same arrivals on a cluster with room for them (a fresh sandbox, the fill left out), where no
one is preempted. Prints p50 / p99 / max waits, pods bound, victims (Preempted Events). Asserts nothing.

Usage: .venv/bin/python bench/preemption_operator.py [--nodes 50] [--arrivals 30] [--interval 0.2] [--seed 1]
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from dralloc.running import OperatorThread
from dralloc.sandbox import ThreadedApiServer
from dralloc.testing import cluster
from dralloc.testing.cluster import crds
from dralloc.testing.settings import run_settings

GPUS = 8
Obj = dict[str, Any]


def _pod(name: str, size: int, priority_class: str) -> Obj:
    found = cluster.pod(name, template_name=f"gpus-{size}")
    found["spec"]["priorityClassName"] = priority_class
    found["spec"]["terminationGracePeriodSeconds"] = 0
    return found


def _bound(server: ThreadedApiServer, names: set[str]) -> set[str]:
    return {p["metadata"]["name"] for p in server.list_objects("v1", "Pod", "default")
            if p["metadata"]["name"] in names and (p.get("spec") or {}).get("nodeName")}


def run(nodes: int, arrivals: int, interval: float, seed: int, *, fill: bool) -> dict[str, Any]:
    rng = random.Random(seed)
    server = ThreadedApiServer().start()
    with tempfile.TemporaryDirectory() as folder:
        kubeconfig = server.write_kubeconfig(Path(folder) / "kubeconfig")
        server.seed(crds())
        objs: list[Obj] = [cluster.gpu_class("gpu"), *[cluster.template(f"gpus-{n}", count=n) for n in (1, 2, 4, 8)],
                           {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "low"},
                            "value": 100},
                           {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"},
                            "value": 1000}]
        for i in range(nodes):
            objs += [cluster.node(f"node-{i:04d}", cpu="64"), cluster.gpu_slice(f"node-{i:04d}", GPUS)]
        server.seed(objs)
        operator = OperatorThread(run_settings(kubeconfig)).start(60)
        try:
            residents: set[str] = set()
            if fill:
                for _ in range(nodes):
                    left = GPUS
                    while left:
                        size = rng.choice([s for s in (1, 2, 4, 8) if s <= left])
                        left -= size
                        name = f"low-{len(residents)}"
                        residents.add(name)
                        server.seed([_pod(name, size, "low")])
                deadline = time.monotonic() + 600
                while len(_bound(server, residents)) < len(residents) and time.monotonic() < deadline:
                    time.sleep(0.2)
            waits: dict[str, float] = {}
            created: dict[str, float] = {}
            pending: set[str] = set()
            for number in range(arrivals):
                name = f"high-{number}"
                created[name] = time.monotonic()
                server.seed([_pod(name, rng.choice((1, 2, 4)), "high")])
                pending.add(name)
                end = time.monotonic() + interval
                while time.monotonic() < end:
                    for done in _bound(server, pending):
                        waits[done] = time.monotonic() - created[done]
                        pending.discard(done)
                    time.sleep(0.05)
            deadline = time.monotonic() + 120
            while pending and time.monotonic() < deadline:
                for done in _bound(server, pending):
                    waits[done] = time.monotonic() - created[done]
                    pending.discard(done)
                time.sleep(0.05)
            victims = sum(1 for e in server.list_objects("events.k8s.io/v1", "Event", "default")
                          if e.get("reason") == "Preempted")
        finally:
            operator.stop(60)
            server.stop()
    ordered = sorted(waits.values())
    return {"bound": len(waits), "victims": victims,
            "p50": statistics.median(ordered) if ordered else float("nan"),
            "p99": ordered[max(0, int(len(ordered) * 0.99) - 1)] if ordered else float("nan"),
            "max": ordered[-1] if ordered else float("nan")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=50)
    parser.add_argument("--arrivals", type=int, default=30)
    parser.add_argument("--interval", type=float, default=0.2)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    print(f"{args.nodes} nodes x {GPUS} GPUs; {args.arrivals} priority-1000 pods of 1/2/4 GPUs, one every "
          f"{args.interval} s; wait = create request to bound, as this process sees it")
    print(f"{'cluster':<26} {'bound':>6} {'victims':>8} {'p50 s':>7} {'p99 s':>7} {'max s':>7}")
    for label, fill in (("room for them (baseline)", False), ("full, priority-100 pods", True)):
        found = run(args.nodes, args.arrivals, args.interval, args.seed, fill=fill)
        print(f"{label:<26} {found['bound']:>6} {found['victims']:>8} {found['p50']:>7.2f} {found['p99']:>7.2f} "
              f"{found['max']:>7.2f}")


if __name__ == "__main__":
    main()
