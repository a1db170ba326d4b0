"""The scenarios of the differential test against kube-scheduler, without a cluster: a pure function of
the seed, objects the API server takes (the rules it would refuse them for), twins that share nothing."""

from __future__ import annotations

import json
from typing import Any

import pytest
from tests.differential import kube_scheduler
from tests.differential import kube_scheduler_scenarios as gen

from dralloc.model import conversion, pods
from dralloc.scheduling import nodefit

SEEDS = range(3)
INDEXES = range(40)


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*_strings(k), *_strings(v))]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _objects(scenario: dict[str, Any], twin: gen.Twin) -> list[dict[str, Any]]:
    return [*gen.setup_objects(scenario, twin, "gpu"), gen.pending_pod(scenario, twin, scheduler=None),
            gen.pending_pod(scenario, twin, scheduler=None, name=gen.PINNED, pin=scenario["nodes"][0]["name"])]


def test_a_scenario_is_a_pure_function_of_seed_and_index() -> None:
    assert gen.scenario(7, 3) == gen.scenario(7, 3)
    assert json.dumps(gen.scenario(7, 3)) != json.dumps(gen.scenario(7, 4))
    assert json.dumps(gen.scenario(7, 3)) != json.dumps(gen.scenario(8, 3))


@pytest.mark.parametrize("seed", SEEDS)
def test_no_placeholder_is_left_and_twins_share_no_name(seed: int) -> None:
    for index in INDEXES:
        scenario = gen.scenario(seed, index)
        seen: dict[str, set[str]] = {}
        for side in kube_scheduler.SIDES:
            twin = gen.Twin(side, "r", index)
            objects = _objects(scenario, twin)
            assert not [s for s in _strings(objects) if s.startswith("$")]
            names = set()
            for obj in objects:
                meta = obj["metadata"]
                names.add(meta.get("namespace") or meta["name"])
                if obj["kind"] == "Node":
                    names.add(meta["labels"][gen.HOSTNAME])
                    names.add(meta["labels"].get(gen.ZONE, meta["name"]))
                    assert meta["labels"][gen.TWIN_LABEL] == twin.key
            seen[side] = names
        assert not (seen["k"] & seen["d"]) and not (seen["k"] & seen["p"]) and not (seen["d"] & seen["p"])


@pytest.mark.parametrize("seed", SEEDS)
def test_pods_are_what_the_api_server_takes(seed: int) -> None:
    """The rules the generator must keep: one value for a field selector's In/NotIn, spread constraints
    unique by key and policy, a labelSelector beside matchLabelKeys and mismatchLabelKeys, pod-level requests at least
    the containers' (upstream's PodRequests, which nodefit.pod_requests follows), and the pending pod on
    its twin's nodes only."""
    for index in INDEXES:
        scenario = gen.scenario(seed, index)
        twin = gen.Twin("d", "r", index)
        for raw in (o for o in _objects(scenario, twin) if o["kind"] == "Pod"):
            pod = conversion.parse_as(pods.Pod, raw)
            spec = raw["spec"]
            node_affinity = (spec.get("affinity") or {}).get("nodeAffinity") or {}
            for term in (node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get(
                    "nodeSelectorTerms", []):
                assert all(len(f["values"]) == 1 for f in term.get("matchFields", []))
            for group in ("podAffinity", "podAntiAffinity"):
                for term in ((spec.get("affinity") or {}).get(group) or {}).get(
                        "requiredDuringSchedulingIgnoredDuringExecution", []):
                    assert "labelSelector" in term or not (term.get("matchLabelKeys") or term.get("mismatchLabelKeys"))
            keys = [(c["topologyKey"], c["whenUnsatisfiable"]) for c in spec.get("topologySpreadConstraints", [])]
            assert len(keys) == len(set(keys))
            assert all("labelSelector" in c for c in spec.get("topologySpreadConstraints", []) if "matchLabelKeys" in c)
            pod_level = (spec.get("resources") or {}).get("requests", {}).get("cpu")
            if pod_level:
                containers = conversion.parse_as(pods.Pod, {**raw, "spec": {k: v for k, v in spec.items()
                                                                            if k != "resources"}})
                assert nodefit.pod_requests(containers).get("cpu", 0) <= nodefit.pod_requests(pod)["cpu"]
            if "nodeName" not in spec:
                assert spec["nodeSelector"][gen.TWIN_LABEL] == twin.key


def test_aggregate_cpu_is_upstreams_pod_requests() -> None:
    workload = {"cpu": 500, "init": [{"cpu": 1000, "sidecar": True}, {"cpu": 2500}, {"cpu": 500, "sidecar": True}]}
    # containers + sidecars 2000; the init container beside the first sidecar 3500
    assert gen.aggregate_cpu(workload) == 3500


def test_kube_schedulers_reasons_are_read_without_their_counts() -> None:
    message = ("0/9 nodes are available: 1 Insufficient cpu, 2 node(s) didn't match pod anti-affinity rules, "
               "6 node(s) didn't match Pod's node affinity/selector. preemption: 0/9 nodes are available: ...")
    assert kube_scheduler.reasons(message) == ["Insufficient cpu", "node(s) didn't match pod anti-affinity rules",
                                               "node(s) didn't match Pod's node affinity/selector"]


def test_dralloc_reasons_are_read_per_named_node() -> None:
    message = ("0/9 nodes are available: d-r-s1-n0: Insufficient cpu, Insufficient memory; d-r-s1-n3: node(s) "
               "didn't match PersistentVolume's node affinity, node(s) didn't find available persistent volumes to "
               "bind; 2 nodes (d-r-s1-n1, "
               "d-r-s1-n2): node(s) didn't match pod anti-affinity rules; 4 nodes (a, b, c, ...): claim ns/c, "
               "request r: 0 of 1 devices of class gpu usable, 1 needed")
    assert kube_scheduler.dralloc_node_reasons(message) == {
        "d-r-s1-n0": ["Insufficient cpu", "Insufficient memory"],
        "d-r-s1-n1": ["node(s) didn't match pod anti-affinity rules"],
        "d-r-s1-n2": ["node(s) didn't match pod anti-affinity rules"],
        "d-r-s1-n3": ["node(s) didn't match PersistentVolume's node affinity",
                      "node(s) didn't find available persistent volumes to bind"],
        **{n: ["claim ns/c, request r: 0 of 1 devices of class gpu usable, 1 needed"] for n in "abc"}}


def test_a_reason_kube_scheduler_did_not_give_is_a_reason_difference() -> None:
    """Only reasons in kube-scheduler's words, for the twin's own nodes, count."""
    twin = gen.Twin("d", "r", 1)
    kube = kube_scheduler.Verdict("unschedulable", message=(
        "0/9 nodes are available: 1 Insufficient cpu, 8 node(s) had untolerated taint(s). preemption: ..."))
    dralloc = kube_scheduler.Verdict("unschedulable", message=(
        "0/9 nodes are available: d-r-s1-n0: Insufficient cpu, Insufficient memory; d-r-s1-n1: claim ns/c, "
        "request r: no device; other-n0: node(s) didn't match Pod's node affinity/selector"))
    assert kube_scheduler.reason_differences(kube, dralloc, twin.position) == ["n0: Insufficient memory"]
    assert kube_scheduler.reason_differences(kube, dralloc, twin.position, only="n1") == []
    assert kube_scheduler.reason_differences(kube_scheduler.Verdict("bound", "n0"), dralloc, twin.position) == []


@pytest.mark.parametrize("seed", SEEDS)
def test_volumes_are_what_the_api_server_takes_and_bind_within_the_twin(seed: int) -> None:
    """A local PV has node affinity (the API requires it); every pre-bound PV and claim name each other;
    the pods' volumes name claims of their namespace; a twin's claims can bind only its own PVs (its
    StorageClasses); and the generator does write volumes."""
    with_storage = 0
    for index in range(40):
        scenario = gen.scenario(seed, index)
        if "storage" not in scenario:
            continue
        with_storage += 1
        twin = gen.Twin("d", "r", index)
        objects = _objects(scenario, twin)
        volumes = {o["metadata"]["name"]: o for o in objects if o["kind"] == "PersistentVolume"}
        claims = {o["metadata"]["name"]: o for o in objects if o["kind"] == "PersistentVolumeClaim"}
        classes = {o["metadata"]["name"] for o in objects if o["kind"] == "StorageClass"}
        for name, volume in volumes.items():
            spec = volume["spec"]
            assert "csi" in spec or spec["nodeAffinity"]["required"]["nodeSelectorTerms"], name
            assert spec["storageClassName"] in classes and spec["storageClassName"].startswith(twin.key)
            ref = spec.get("claimRef")
            if ref:
                assert ref["namespace"] == twin.namespace
                assert claims[ref["name"]]["spec"]["volumeName"] == name
        for claim in claims.values():
            assert claim["spec"]["storageClassName"] in classes
            if claim["spec"].get("volumeName"):
                assert claim["spec"]["volumeName"] in volumes
        for pod in (o for o in objects if o["kind"] == "Pod"):
            for volume in pod["spec"].get("volumes", []):
                assert pod["metadata"]["namespace"] == twin.namespace
                assert volume["persistentVolumeClaim"]["claimName"] in claims
    assert with_storage >= 5
