"""dralloc's gang preemption against kube-scheduler's workload-aware preemption, for pods without claims
(issue 29): on one node the same victims; on two, victims no worse by kube-scheduler's own importance order.

Real cluster only (`--e2e-real`; part of `make e2e`). DRALLOC_GANG_PREEMPT_N scenarios (default 8) of the seed
DRALLOC_GANG_PREEMPT_SEED (default: the date) from tests/differential/gang_preemption_scenarios.py, each twice
side by side: once with a pending priority-1000 gang (a PodGroup wanting all its members at once) for
kube-scheduler, once for dralloc, on nodes full of priority-10 and priority-100 pods, lone or in PodGroups
(each pod its own victim, or an all-mode group removed as one).

Both take the same steps (kube-scheduler 1.37: framework/preemption/podgrouppreemption.go): the victims are
the units of lower priority; with all of them removed the gang must fit; then the units are given back most
important first while the gang still fits. kube-scheduler keeps each member on the node it chose with every
victim gone; dralloc searches the gang's placement again on every trial, so members may move. On one node
nothing can move: both remove exactly the same pods, and both place the gang or neither does (where removing
every lower-priority pod still leaves no room). On two nodes both place the gang or neither does, and where
the victims differ, the most important unit on which they differ is one dralloc gives back and kube-scheduler
removes: up to there both made the same choices, and a unit kube-scheduler can give back (its fixed
placement still fits) dralloc can too (that placement is one its search finds). That is not fewer pods: a
unit given back early may leave less room, so that more, less important ones go later (seed 2 scenario 2:
kube-scheduler removes 3 pods, one of them a PodGroup member; dralloc spares that member and removes 5 lone
pods). Every two-node scenario whose victims differ is printed (`-s` shows them).
"""

from __future__ import annotations

import datetime
import os
import threading
import time
from typing import Any

import pytest
from tests.differential import gang_preemption_scenarios as gen
from tests.handlers import helpers, realcluster
from tests.handlers.conftest import Cluster, wait_for
from tests.handlers.test_preemption import admitted
from tests.handlers.test_preemption_vs_kube_scheduler import _finish_terminating

from dralloc.running import OperatorThread
from dralloc.testing.cluster import crds
from dralloc.testing.settings import run_settings

pytestmark = pytest.mark.e2e
Obj = dict[str, Any]
# After every gang that can be placed is, and the others are reported unschedulable: how long a side still
# has to remove pods it should not (a late preemption for a gang nothing helps would show then).
QUIET_SECONDS = 5.0


def _verdict(cluster: realcluster.RealCluster, scenario: Obj, twin: gen.Twin) -> tuple[dict[str, str], frozenset[str]]:
    """(the gang's bound members -> their node by scenario name; the existing pods gone or going)."""
    found = {p["metadata"]["name"]: p for p in cluster.list_objects("v1", "Pod", twin.namespace)}
    bound = {}
    for name in gen.member_names(scenario):
        node = ((found.get(name) or {}).get("spec") or {}).get("nodeName")
        if node:
            bound[name] = node.removeprefix(f"{twin.key}-")
    gone = frozenset(p["name"] for p in scenario["pods"]
                     if p["name"] not in found or found[p["name"]]["metadata"].get("deletionTimestamp"))
    return bound, gone


def _reported_unschedulable(cluster: realcluster.RealCluster, scenario: Obj, twin: gen.Twin) -> bool:
    """Every member of the gang says PodScheduled=False, reason Unschedulable: the side has run a whole attempt
    (kube-scheduler writes it after its preemption, which found nothing to do; a failed attempt says
    SchedulerError and is retried)."""
    for name in gen.member_names(scenario):
        pod = cluster.get("v1", "Pod", name, twin.namespace) or {}
        condition = helpers.condition(pod, "PodScheduled") or {}
        if (condition.get("status"), condition.get("reason")) != ("False", "Unschedulable"):
            return False
    return True


def _split_unit(units: list[frozenset[str]], gone: frozenset[str]) -> frozenset[str] | None:
    """A unit only part of which is gone (an all-mode PodGroup must go as one), or None."""
    return next((u for u in units if u & gone and not u <= gone), None)


def _first_difference(units: list[frozenset[str]], k_gone: frozenset[str], d_gone: frozenset[str]
                      ) -> tuple[frozenset[str], bool] | None:
    """The most important unit one side removes and the other does not, and whether kube-scheduler removes it."""
    for unit in units:
        if (unit <= k_gone) != (unit <= d_gone):
            return unit, unit <= k_gone
    return None


def test_dralloc_gang_preemption_removes_what_kube_scheduler_removes(apiserver: Cluster) -> None:
    assert isinstance(apiserver, realcluster.RealCluster)
    began = time.monotonic()
    seed = int(os.environ.get("DRALLOC_GANG_PREEMPT_SEED") or datetime.date.today().strftime("%Y%m%d"))
    count = int(os.environ.get("DRALLOC_GANG_PREEMPT_N") or 8)
    run = apiserver.name("r").rsplit("-", 1)[-1][:6]
    scenarios = [gen.scenario(seed, i) for i in range(count)]
    twins = {(side, s["index"]): gen.Twin(side, run, s["index"]) for s in scenarios for side in ("k", "d")}
    placeable = {s["index"]: gen.placeable(s) for s in scenarios}
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
        for (side, index), twin in twins.items():  # the PodGroup first, then its members
            admitted(apiserver, gen.pending(scenarios[index], twin, "dralloc" if side == "d" else None))

        def settled() -> bool:
            for (_, index), twin in twins.items():
                scenario = scenarios[index]
                if placeable[index]:
                    bound, _ = _verdict(apiserver, scenario, twin)
                    if len(bound) < len(scenario["gang"]):
                        return False
                elif not _reported_unschedulable(apiserver, scenario, twin):
                    return False
            return True

        try:
            wait_for(settled, timeout=180, what="every gang placed (or, where nothing helps, reported unschedulable)")
        except AssertionError:
            pass  # the comparison below says which scenario differs
        time.sleep(QUIET_SECONDS)
        differences: list[str] = []
        preempted = two_node_differences = more_pods = 0
        for s in scenarios:
            index, single, units = s["index"], len(s["nodes"]) == 1, gen.units(s)
            k_bound, k_gone = _verdict(apiserver, s, twins[("k", index)])
            d_bound, d_gone = _verdict(apiserver, s, twins[("d", index)])
            k_placed, d_placed = len(k_bound) == len(s["gang"]), len(d_bound) == len(s["gang"])
            preempted += bool(k_gone or d_gone)
            where = (f"seed {seed} s{index} ({len(s['nodes'])} node(s), {s['flavour']}, gang {s['gang']}, "
                     f"placeable {placeable[index]})")
            sides = (f"kube-scheduler {k_bound or 'not placed'} removing {sorted(k_gone)}, "
                     f"dralloc {d_bound or 'not placed'} removing {sorted(d_gone)}")
            same = k_placed == d_placed == placeable[index]
            for side, gone in (("kube-scheduler", k_gone), ("dralloc", d_gone)):
                split = _split_unit(units, gone)
                if split is not None:
                    same = False
                    sides += f"; {side} removes only part of {sorted(split)}"
                if not gone <= frozenset().union(*units):  # a pod of the gang's own priority is no victim
                    same = False
                    sides += f"; {side} removes a pod of the gang's priority"
            if single:
                same = same and k_gone == d_gone
            elif k_gone != d_gone:
                two_node_differences += 1
                more_pods += len(d_gone) > len(k_gone)
                first = _first_difference(units, k_gone, d_gone)
                if first is not None:
                    unit, kube_removes = first
                    same = same and kube_removes
                    sides += (f"; the most important unit they differ on, {sorted(unit)}: "
                              f"{'kube-scheduler' if kube_removes else 'dralloc'} removes it")
                print(f"\n{where}: {sides}")
            if not same:
                differences.append(f"{where}: {sides}; scenario {s}")
        ones = sum(1 for s in scenarios if len(s["nodes"]) == 1)
        print(f"\nseed {seed}: {count} scenarios ({ones} on one node, {count - ones} on two), {preempted} with "
              f"pods removed; {two_node_differences} two-node with other victims, {more_pods} of them with more "
              f"pods removed by dralloc; {time.monotonic() - began:.0f} s")
        assert not differences, f"seed {seed}:\n" + "\n".join(differences)
    finally:
        operator.stop(60)
        stop.set()
        finisher.join(5)
