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
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "operator"))
sys.path.insert(0, str(REPO))

from dralloc.allocation.features import Features  # noqa: E402
from dralloc.allocation.snapshots import Snapshot  # noqa: E402
from dralloc.model import claims, classes, conversion, devices, nodes, pods  # noqa: E402
from dralloc.scheduling import placement  # noqa: E402
from tests.handlers import cluster  # noqa: E402


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


def end_to_end(node_count: int, gpus: int, pod_count: int) -> None:
    from dralloc.sandbox import run_in_thread
    from tests.handlers import helpers
    from tests.handlers.conftest import OperatorThread, crds, operator_settings

    with run_in_thread() as server, tempfile.TemporaryDirectory() as tmp:
        server.kubeconfig = server.write_kubeconfig(pathlib.Path(tmp) / "kubeconfig")
        server.seed(crds())
        objs = [cluster.gpu_class(), cluster.template("one-gpu")]
        for i in range(node_count):
            objs += [cluster.node(f"node-{i:03d}"), cluster.gpu_slice(f"node-{i:03d}", gpus)]
        server.seed(objs)
        operator = OperatorThread(operator_settings(server)).start()
        try:
            start = time.perf_counter()
            server.seed([cluster.pod(f"fill-{i:05d}", template_name="one-gpu") for i in range(pod_count)])
            created = time.perf_counter() - start

            def bound() -> int:
                return sum(1 for p in server.list_objects("v1", "Pod", "default") if p["spec"].get("nodeName"))

            done = 0
            while done < pod_count and time.perf_counter() - start < 600:
                time.sleep(0.25)
                done = bound()
            elapsed = time.perf_counter() - start
            print(f"end-to-end   {done} of {pod_count} pods bound in {elapsed:.2f} s = {done / elapsed:6.0f} pods/s "
                  f"(creating them took {created:.2f} s)")
            # Churn: half the pods finish, as many new ones arrive; time until all new ones are bound.
            churn = pod_count // 2
            start = time.perf_counter()
            for i in range(churn):
                helpers.set_pod_phase(server, f"fill-{i:05d}", "Succeeded")
            server.seed([cluster.pod(f"churn-{i:05d}", template_name="one-gpu") for i in range(churn)])

            def churned() -> int:
                return sum(1 for p in server.list_objects("v1", "Pod", "default")
                           if p["metadata"]["name"].startswith("churn-") and p["spec"].get("nodeName"))

            done = 0
            while done < churn and time.perf_counter() - start < 600:
                time.sleep(0.25)
                done = churned()
            elapsed = time.perf_counter() - start
            print(f"churn        {done} of {churn} replacement pods bound in {elapsed:.2f} s = "
                  f"{done / elapsed:6.0f} pods/s (old pods finishing, claims released, new ones placed)")
        finally:
            operator.stop()


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
