"""dralloc's preemption against kube-scheduler's, for pods without claims (issue 29): the same victims.

Real cluster only (`--e2e-real`; part of `make e2e`). DRALLOC_PREEMPT_N scenarios (default 12) of the seed
DRALLOC_PREEMPT_SEED (default: the date) from tests/differential/preemption_scenarios.py, each twice side by
side: once with a pending priority-1000 pod for kube-scheduler, once for dralloc, on nodes full of
priority-10 and priority-100 pods. Where the pod fits without removing anyone, both place it without a
victim; where removing pods cannot help, neither removes any; else both remove pods, and when one node
ranks best (kube-scheduler breaks ties by where its sampling starts, at random), the same pods on the same
node, which is also what dralloc's pure core predicts for the scenario.
"""

from __future__ import annotations

import datetime
import os
import threading
from typing import Any

import pytest
from tests.differential import preemption_scenarios as gen
from tests.handlers import helpers, realcluster
from tests.handlers.conftest import Cluster, wait_for
from tests.handlers.test_preemption import admitted

from dralloc.running import OperatorThread
from dralloc.testing.cluster import crds
from dralloc.testing.settings import run_settings

pytestmark = pytest.mark.e2e
Obj = dict[str, Any]


def _finish_terminating(cluster: realcluster.RealCluster, namespaces: list[str], stop: threading.Event) -> None:
    """The kubelet's part for the twins' pods: a pod being deleted goes (the scope's own agent watches
    only the test's namespace)."""
    pods = cluster.conn.resource("v1", "Pod")
    while not stop.wait(0.25):
        for namespace in namespaces:
            try:
                for item in pods.get(namespace=namespace).to_dict().get("items") or []:
                    if item["metadata"].get("deletionTimestamp"):
                        pods.delete(name=item["metadata"]["name"], namespace=namespace, grace_period_seconds=0)
            except Exception:
                continue


def _verdict(cluster: realcluster.RealCluster, scenario: Obj, twin: gen.Twin) -> tuple[str | None, frozenset[str]]:
    """(the pending pod's node by scenario name, or None; the existing pods gone)."""
    pending = cluster.get("v1", "Pod", gen.PENDING, twin.namespace) or {}
    node = (pending.get("spec") or {}).get("nodeName")
    left = {p["metadata"]["name"] for p in cluster.list_objects("v1", "Pod", twin.namespace)}
    gone = frozenset(p["name"] for p in scenario["pods"] if p["name"] not in left)
    return (node.removeprefix(f"{twin.key}-") if node else None), gone


def test_dralloc_removes_the_pods_kube_scheduler_removes(apiserver: Cluster) -> None:
    assert isinstance(apiserver, realcluster.RealCluster)
    seed = int(os.environ.get("DRALLOC_PREEMPT_SEED") or datetime.date.today().strftime("%Y%m%d"))
    count = int(os.environ.get("DRALLOC_PREEMPT_N") or 12)
    run = apiserver.name("r").rsplit("-", 1)[-1][:6]
    scenarios = [gen.scenario(seed, i) for i in range(count)]
    twins = {(side, s["index"]): gen.Twin(side, run, s["index"]) for s in scenarios for side in ("k", "d")}
    apiserver.seed(crds())
    apiserver.seed(gen.priority_classes(run))
    for (_, index), twin in twins.items():
        admitted(apiserver, gen.objects(scenarios[index], twin))
    nodes = [twin.node(n) for (_, index), twin in twins.items() for n in scenarios[index]["nodes"]]

    wait_for(lambda: helpers.nodes_schedulable(apiserver, nodes), timeout=90, what="the twins' nodes ready")
    namespaces = [twin.namespace for twin in twins.values()]
    stop = threading.Event()
    finisher = threading.Thread(target=_finish_terminating, args=(apiserver, namespaces, stop), daemon=True)
    finisher.start()
    operator = OperatorThread(run_settings(apiserver.kubeconfig, namespaces=[
        t.namespace for (side, _), t in twins.items() if side == "d"])).start(60)
    try:
        for (side, index), twin in twins.items():
            admitted(apiserver, [gen.pending(scenarios[index], twin, "dralloc" if side == "d" else None)])
        expected = {s["index"]: gen.expected(s) for s in scenarios}

        def settled() -> bool:
            for (_, index), twin in twins.items():
                node, _ = _verdict(apiserver, scenarios[index], twin)
                if (node is None) != (expected[index].node is None and not expected[index].fits):
                    return False
            return True

        try:
            wait_for(settled, timeout=120, what="every pending pod placed (or, where nothing helps, left waiting)")
        except AssertionError:
            pass  # the comparison below says which scenario differs
        differences = []
        for s in scenarios:
            index, want = s["index"], expected[s["index"]]
            k_node, k_gone = _verdict(apiserver, s, twins[("k", index)])
            d_node, d_gone = _verdict(apiserver, s, twins[("d", index)])
            same = (k_node is None) == (d_node is None) and bool(k_gone) == bool(d_gone)
            if want.unique and want.node is not None:
                same = same and (k_node, k_gone) == (d_node, d_gone) == (want.node, want.victims)
            if not same:
                differences.append(f"s{index}: kube-scheduler {k_node} removing {sorted(k_gone)}, dralloc {d_node} "
                                   f"removing {sorted(d_gone)}, predicted {want}; scenario {s}")
        assert not differences, f"seed {seed}:\n" + "\n".join(differences)
    finally:
        operator.stop(60)
        stop.set()
        finisher.join(5)
