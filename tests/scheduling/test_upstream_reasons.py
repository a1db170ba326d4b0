"""Every filter reason dralloc writes in kube-scheduler's words is kube-scheduler 1.37's text.

One row per reason: dralloc's constant, and the string in kube-scheduler v1.37.2's source (the file
under pkg/scheduler/framework/plugins/ named in the row id). A pod's PodScheduled condition reads
the same whichever scheduler wrote it; `make e2e-differential` compares the live messages too.
"""

from __future__ import annotations

import pytest

from dralloc.scheduling import nodefit, nodeports, podaffinity, topologyspread, volumes

UPSTREAM: dict[str, tuple[str, str]] = {
    "nodename/node_name.go ErrReason": (nodefit.REASON_NODE_NAME, "node(s) didn't match the requested node name"),
    "nodeunschedulable ErrReasonUnschedulable": (nodefit.REASON_UNSCHEDULABLE, "node(s) were unschedulable"),
    "tainttoleration Filter": (nodefit.REASON_TAINT, "node(s) had untolerated taint(s)"),
    "nodeaffinity ErrReasonPod": (nodefit.REASON_NODE_AFFINITY, "node(s) didn't match Pod's node affinity/selector"),
    "noderesources/fit.go Too many pods": (nodefit.REASON_TOO_MANY_PODS, "Too many pods"),
    "nodeports ErrReason": (nodeports.REASON, "node(s) didn't have free ports for the requested pod ports"),
    "interpodaffinity ErrReasonAffinityRulesNotMatch": (podaffinity.REASON_AFFINITY,
                                                        "node(s) didn't match pod affinity rules"),
    "interpodaffinity ErrReasonAntiAffinityRulesNotMatch": (podaffinity.REASON_ANTI_AFFINITY,
                                                            "node(s) didn't match pod anti-affinity rules"),
    "interpodaffinity ErrReasonExistingAntiAffinityRulesNotMatch": (
        podaffinity.REASON_EXISTING_ANTI_AFFINITY, "node(s) didn't satisfy existing pods anti-affinity rules"),
    "podtopologyspread ErrReasonConstraintsNotMatch": (topologyspread.REASON,
                                                       "node(s) didn't match pod topology spread constraints"),
    "podtopologyspread ErrReasonNodeLabelNotMatch": (
        topologyspread.REASON_MISSING_LABEL, "node(s) didn't match pod topology spread constraints (missing required label)"),
    "volumerestrictions ErrReasonDiskConflict": (volumes.DISK_CONFLICT, "node(s) had no available disk"),
    "volumerestrictions ErrReasonReadWriteOncePodConflict": (
        volumes.READ_WRITE_ONCE_POD_CONFLICT,
        "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use by another pod"),
    "nodevolumelimits ErrReasonMaxVolumeCountExceeded": (volumes.MAX_VOLUME_COUNT, "node(s) exceed max volume count"),
    "volumebinding ErrReasonNodeConflict": (volumes.NODE_CONFLICT, "node(s) didn't match PersistentVolume's node affinity"),
    "volumebinding ErrReasonBindConflict": (volumes.BIND_CONFLICT,
                                            "node(s) didn't find available persistent volumes to bind"),
    "volumebinding ErrReasonPVNotExist": (volumes.PV_NOT_EXIST,
                                          "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"),
    "volumebinding ErrReasonNotEnoughSpace": (volumes.NOT_ENOUGH_SPACE, "node(s) did not have enough free storage"),
    "volumezone ErrReasonConflict": (volumes.ZONE_CONFLICT, "node(s) had no available volume zone"),
}


@pytest.mark.parametrize("ours, theirs", list(UPSTREAM.values()), ids=list(UPSTREAM))
def test_the_reason_is_kube_schedulers_text(ours: str, theirs: str) -> None:
    assert ours == theirs
