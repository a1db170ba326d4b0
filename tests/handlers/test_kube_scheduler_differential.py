"""dralloc against kube-scheduler itself: random scenarios, each twice side by side on a real cluster.

The CI-sized run of tests/differential/kube_scheduler.py (`make e2e-differential` is the long
one): DRALLOC_KSDIFF_N scenarios (default 16) of the seed DRALLOC_KSDIFF_SEED (default: the
date, one seed a day as `make differential-ci` does), in one batch. For each, kube-scheduler's
verdict on its twin (bound, or PodScheduled=False Unschedulable) and dralloc's on its own must
agree, and when dralloc binds, kube-scheduler must accept the node it chose (a third copy of the
scenario, its pod able to go to that node only). Each difference is also saved as
out/kube-scheduler-differential/<seed>/s<index>.yaml. Real cluster only (`--e2e-real`): the
sandbox has no kube-scheduler.
"""

from __future__ import annotations

import datetime
import os

import pytest
import yaml
from tests.differential import kube_scheduler, kube_scheduler_scenarios
from tests.handlers import realcluster
from tests.handlers.conftest import Cluster

pytestmark = pytest.mark.e2e


def test_dralloc_and_kube_scheduler_agree_on_random_scenarios(apiserver: Cluster) -> None:
    seed = int(os.environ.get("DRALLOC_KSDIFF_SEED") or datetime.date.today().strftime("%Y%m%d"))
    count = int(os.environ.get("DRALLOC_KSDIFF_N") or 16)
    scenarios = [kube_scheduler_scenarios.scenario(seed, index) for index in range(count)]
    assert isinstance(apiserver, realcluster.RealCluster)
    outcomes = kube_scheduler.run_scenarios(apiserver, scenarios)
    differences = [o for o in outcomes if o.difference]
    for outcome in differences:
        kube_scheduler.save(outcome, kube_scheduler.OUT / str(seed))
    decided = sum(1 for o in outcomes if o.kube_scheduler.kind == "bound")
    assert not differences, (
        f"seed {seed}: {len(differences)} of {count} scenarios differ (kube-scheduler bound {decided}); "
        f"replay: make e2e-differential N={count} SEED={seed} ARGS=--only={differences[0].scenario['index']}\n"
        + yaml.safe_dump(differences[0].record(), sort_keys=False, width=110))
    assert all(o.pinned is not None and o.pinned.kind == "bound" for o in outcomes if o.dralloc.kind == "bound")
