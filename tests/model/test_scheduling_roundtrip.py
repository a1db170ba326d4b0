"""Workload and PodGroup models (model/scheduling.py) read what the API serves and write it back unchanged."""

from __future__ import annotations

from typing import Any

import pytest

from dralloc.model import conversion, pods, scheduling

V1BETA1_GROUP: dict[str, Any] = {
    "apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
    "metadata": {"name": "trainers", "namespace": "ml", "uid": "u-1"},
    "spec": {"workloadRef": {"workloadName": "job", "templateName": "workers"},
             "schedulingPolicy": {"gang": {"minCount": 4}},
             "schedulingConstraints": {"topology": [{"key": "topology.kubernetes.io/rack"}]},
             "resourceClaims": [{"name": "fabric", "resourceClaimTemplateName": "nvlink"}],
             "disruptionMode": {"single": {}}, "priority": 0},
    "status": {"conditions": [{"type": "PodGroupInitiallyScheduled", "status": "True", "reason": "Scheduled",
                               "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}],
               "resourceClaimStatuses": [{"name": "fabric", "resourceClaimName": "trainers-fabric-x1y2z"}],
               "futureField": {"kept": True}},
}
V1ALPHA2_GROUP: dict[str, Any] = {
    "apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup", "metadata": {"name": "g", "namespace": "ml"},
    "spec": {"podGroupTemplateRef": {"workload": {"workloadName": "job", "podGroupTemplateName": "workers"}},
             "schedulingPolicy": {"basic": {}}, "disruptionMode": "PodGroup"},
}
WORKLOAD: dict[str, Any] = {
    "apiVersion": "scheduling.k8s.io/v1beta1", "kind": "Workload", "metadata": {"name": "job", "namespace": "ml"},
    "spec": {"controllerRef": {"apiGroup": "batch", "kind": "Job", "name": "job"},
             "podGroupTemplates": [{"name": "workers", "schedulingPolicy": {"gang": {"minCount": 4}},
                                    "schedulingConstraints": {"topology": [{"key": "rack"}]},
                                    "resourceClaims": [{"name": "fabric", "resourceClaimName": "shared"}]}]},
}


@pytest.mark.parametrize(("model", "raw"), [(scheduling.PodGroup, V1BETA1_GROUP), (scheduling.PodGroup, V1ALPHA2_GROUP),
                                            (scheduling.Workload, WORKLOAD)], ids=["v1beta1-podgroup",
                                                                                   "v1alpha2-podgroup", "workload"])
def test_served_objects_round_trip(model: type[scheduling.PodGroup | scheduling.Workload], raw: dict[str, Any]) -> None:
    parsed = conversion.parse_as(model, raw)
    assert conversion.to_raw(parsed) == raw


def test_a_gang_reads_its_min_count_topology_and_claims() -> None:
    group = conversion.parse_as(scheduling.PodGroup, V1BETA1_GROUP)
    assert group.spec.min_count() == 4
    assert group.spec.topology_key() == "topology.kubernetes.io/rack"
    assert [c.resource_claim_template_name for c in group.spec.resource_claims] == ["nvlink"]
    assert group.status.resource_claim_statuses[0].resource_claim_name == "trainers-fabric-x1y2z"
    assert group.consumer_reference() == {"apiGroup": "scheduling.k8s.io", "resource": "podgroups",
                                          "name": "trainers", "uid": "u-1"}


def test_basic_scheduling_needs_one_pod_at_a_time() -> None:
    group = conversion.parse_as(scheduling.PodGroup, V1ALPHA2_GROUP)
    assert group.spec.min_count() == 1 and group.spec.topology_key() is None
    assert group.spec.disruption_mode == "PodGroup"


def test_a_pod_names_its_group() -> None:
    raw = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"schedulingGroup": {"podGroupName": "trainers"}}}
    pod = conversion.parse_as(pods.Pod, raw)
    assert pod.spec.scheduling_group is not None and pod.spec.scheduling_group.pod_group_name == "trainers"
    assert conversion.to_raw(pod) == raw
