"""`dralloc simulate` places PodGroups' gangs as the operator does (issue 32): all or none, when minCount
members exist, in one topology domain, with the operator's wording for gangs that do not fit or wait.

Inline inputs: node-a (zone-a) and node-b (zone-b) with 4 GPUs each; gang members take 2 GPUs each.
"""

from __future__ import annotations

import io
import pathlib
from typing import Any

import pytest
import yaml
from tests.offline.conftest import Invoke
from tests.offline.files import GPU_CLASS, documents, gpus, node
from tests.scheduling.objects import pod_raw

from dralloc.allocation import gangs
from dralloc.model import pods as model_pods
from dralloc.offline import simulating
from dralloc.sandbox import demo_objects

ZONE = "topology.kubernetes.io/zone"
TWO_GPUS = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": "two-gpus", "namespace": "default"},
            "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu",
                                                                                   "count": 2}}]}}}}


def pod_group(name: str, min_count: int, *, topology: str | None = None, basic: bool = False,
              api_version: str = "scheduling.k8s.io/v1beta1") -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulingPolicy": {"basic": {}} if basic else {"gang": {"minCount": min_count}}}
    if topology is not None:
        spec["schedulingConstraints"] = {"topology": [{"key": topology}]}
    return {"apiVersion": api_version, "kind": "PodGroup", "metadata": {"name": name, "namespace": "default"},
            "spec": spec}


def member(name: str, group: str = "train") -> dict[str, Any]:
    return pod_raw(name, claims=[{"name": "gpus", "resourceClaimTemplateName": "two-gpus"}],
                   spec_extra={"schedulingGroup": {"podGroupName": group}})


@pytest.fixture
def zones(tmp_path: pathlib.Path) -> str:
    """node-a in zone-a, node-b in zone-b, 4 GPUs each."""
    return documents(tmp_path / "zones.yaml", [
        GPU_CLASS, node("node-a", labels={ZONE: "zone-a"}), node("node-b", labels={ZONE: "zone-b"}),
        gpus("node-a", 4), gpus("node-b", 4)])


def workload(tmp_path: pathlib.Path, objects: list[Any], name: str = "workload.yaml") -> str:
    return documents(tmp_path / name, [TWO_GPUS, *objects])


def test_the_demo_gang_is_placed_all_in_one_zone(dralloc: Invoke, tmp_path: pathlib.Path) -> None:
    """The README's offline check of the demo: the PodGroup is read (no "kinds simulate does not read"
    note), its four trainers are placed as one gang, all in the zone the report names."""
    repo = pathlib.Path(__file__).resolve().parents[2]
    cluster = tmp_path / "demo-cluster.yaml"
    cluster.write_text(yaml.safe_dump_all(demo_objects()))
    files = sorted((repo / "examples" / "demo").glob("*.yaml"))
    run = dralloc("simulate", "-f", str(cluster), *(a for f in files for a in ("--workload", str(f))), "-o", "json")
    assert "not read" not in run.err, run.err
    report = run.json()
    [gang] = report["gangs"]
    assert gang | {"domain": None} == {"podGroup": "dralloc-demo/llm-finetune", "found": True, "minCount": 4,
                                       "topologyKey": ZONE, "members": 4, "placed": 4, "boundBefore": 0,
                                       "domain": None, "reason": ""}
    nodes = {line.split()[0]: line.split()[1] for line in report["placements"]}
    labels = {o["metadata"]["name"]: o["metadata"].get("labels", {}) for o in demo_objects() if o["kind"] == "Node"}
    assert {labels[nodes[f"trainer-{i}"]][ZONE] for i in range(4)} == {gang["domain"]}


def test_the_readme_shows_the_demo_checks_gang_line(dralloc: Invoke, tmp_path: pathlib.Path) -> None:
    """The README's offline check of the demo shows the gang's lines the command prints."""
    repo = pathlib.Path(__file__).resolve().parents[2]
    readme = (repo / "README.md").read_text()
    shown = readme.split("the report says where:\n\n```text\n", 1)[1].split("```", 1)[0].splitlines()
    cluster = tmp_path / "demo-cluster.yaml"
    cluster.write_text(yaml.safe_dump_all(demo_objects()))
    files = sorted((repo / "examples" / "demo").glob("*.yaml"))
    run = dralloc("simulate", "-f", str(cluster), *(a for f in files for a in ("--workload", str(f))))
    assert run.code == 0 and run.out.startswith("placed 16 of 16 items"), run.out
    lines = run.out.splitlines()
    start = lines.index(shown[0])
    assert lines[start:start + len(shown)] == shown, run.out


def test_a_gang_that_cannot_fit_whole_places_none_of_its_members(dralloc: Invoke, tmp_path: pathlib.Path,
                                                                  zones: str) -> None:
    """Three members of 2 GPUs in one zone of 4 GPUs: none is placed, each told the operator's GangUnfit
    message; the same pods one by one (a basic PodGroup) place three of them across both zones."""
    pods = [member(f"w-{i}") for i in range(3)]
    gang = dralloc("simulate", "-f", zones, "--workload",
                   workload(tmp_path, [pod_group("train", 3, topology=ZONE), *pods]), "-o", "json")
    assert gang.code == 1, gang
    report = gang.json()
    assert report["placed"] == 0 and report["placements"] == []
    reasons = {u["name"]: u["reason"] for u in report["unplaced"]}
    assert set(reasons) == {"w-0", "w-1", "w-2"}
    [reason] = set(reasons.values())
    assert reason.startswith("PodGroup default/train: gang of 3 does not fit in domain zone-"), reason
    assert {u["podGroup"] for u in report["unplaced"]} == {"default/train"}
    assert report["gangs"][0]["placed"] == 0 and report["gangs"][0]["reason"] == reason

    one_by_one = dralloc("simulate", "-f", zones, "--workload",
                         workload(tmp_path, [pod_group("train", 3, basic=True), *pods], "basic.yaml"), "-o", "json")
    assert one_by_one.json()["placed"] == 3, one_by_one.out


def test_the_reason_is_the_operators_decision(tmp_path: pathlib.Path, zones: str) -> None:
    """Table case against `allocation.gangs.place_gang` called as the operator calls it, on simulate's own
    placer: the same outcome and the operator's message (`GangUnfit.message`), prefixed with the PodGroup."""
    pods = [member(f"w-{i}") for i in range(3)]
    request = simulating.Request(snapshot_files=[zones], workload_files=[
        workload(tmp_path, [pod_group("train", 3, topology=ZONE), *pods])])
    placer, items, templates, claims = simulating.prepare(request, io.StringIO())
    members = [simulating.pod_item(p, templates, claims, []) for p in items if isinstance(p, model_pods.Pod)]
    expected = gangs.place_gang(placer.snapshot, [gangs.Member(f"default/{m.name}", m.claims, placer.shape(m))
                                                  for m in members],
                                placer.views, features=placer.features, topology_key=ZONE)
    assert isinstance(expected, gangs.GangUnfit)
    results = simulating.place_workload(placer, items, templates, claims, request, io.StringIO())
    assert [r.reason for r in results] == [f"PodGroup default/train: {expected.message(3)}"] * 3


def test_a_gang_below_min_count_waits(dralloc: Invoke, tmp_path: pathlib.Path, zones: str) -> None:
    """Two members of a PodGroup of minCount 4: neither is placed (though both would fit), each told the
    operator's wait; the table's gang line says so."""
    run = dralloc("simulate", "-f", zones, "--workload",
                  workload(tmp_path, [pod_group("train", 4), member("w-0"), member("w-1")]))
    assert run.code == 1
    wait = "PodGroup default/train: waiting for the gang: 2 of its 4 pods (minCount) exist"
    assert f"  w-0: {wait}" in run.out.splitlines() and f"  w-1: {wait}" in run.out.splitlines(), run.out
    assert f"  default/train (minCount 4): 0 of 2 members placed: {wait}" in run.out.splitlines(), run.out
    assert run.out.startswith("placed 0 of 2 items")


def test_a_pod_naming_a_missing_pod_group_waits_for_it(dralloc: Invoke, tmp_path: pathlib.Path, zones: str) -> None:
    """A pod naming a PodGroup in neither input is not placed: it waits for the PodGroup, as in the operator."""
    run = dralloc("simulate", "-f", zones, "--workload", workload(tmp_path, [member("w-0", "ghost")]), "-o", "json")
    assert run.code == 1
    report = run.json()
    assert report["unplaced"] == [{"name": "w-0", "podGroup": "default/ghost", "reason": (
        "waiting for PodGroup default/ghost to be created (it is in neither -f nor --workload)")}]
    assert report["gangs"][0]["found"] is False
    table = io.StringIO()
    simulating._print_table(report, table)
    assert "  default/ghost: not placed, no such PodGroup in the input (1 pod names it)" in table.getvalue()


def test_the_snapshot_pod_group_is_read_and_the_json_report_lists_gangs(dralloc: Invoke, tmp_path: pathlib.Path,
                                                                        zones: str) -> None:
    """A PodGroup of the snapshot (-f, 1.36's v1alpha2) gathers workload pods; JSON: a gang field, members
    among the placements as other pods."""
    snapshot = documents(tmp_path / "groups.yaml", [pod_group("train", 2, topology=ZONE,
                                                              api_version="scheduling.k8s.io/v1alpha2")])
    run = dralloc("simulate", "-f", zones, "-f", snapshot, "--workload",
                  workload(tmp_path, [member("w-0"), member("w-1")]), "-o", "json")
    assert run.code == 0, run
    report = run.json()
    assert report["gangs"] == [{"podGroup": "default/train", "found": True, "minCount": 2, "topologyKey": ZONE,
                                "members": 2, "placed": 2, "boundBefore": 0, "domain": "zone-a", "reason": ""}]
    assert [line.split()[:2] for line in report["placements"]] == [["w-0", "node-a"], ["w-1", "node-a"]]


def test_a_member_beyond_min_count_joins_the_gangs_domain(dralloc: Invoke, tmp_path: pathlib.Path,
                                                          zones: str) -> None:
    """minCount 2 of 3 members: the first two are placed together when the second arrives (zone-a, the
    tightest that fits); the third then must join zone-a, which is full, as a member created late is in the
    operator, though zone-b has room."""
    run = dralloc("simulate", "-f", zones, "--workload",
                  workload(tmp_path, [pod_group("train", 2, topology=ZONE), *(member(f"w-{i}") for i in range(3))]),
                  "-o", "json")
    report = run.json()
    assert [line.split()[:2] for line in report["placements"]] == [["w-0", "node-a"], ["w-1", "node-a"]]
    [unplaced] = report["unplaced"]
    assert unplaced["name"] == "w-2"
    assert unplaced["reason"].startswith("PodGroup default/train: gang of 1 does not fit"), unplaced
    assert report["gangs"][0]["domain"] == "zone-a" and report["gangs"][0]["placed"] == 2


def test_other_modes_say_what_they_do_with_gangs(dralloc: Invoke, tmp_path: pathlib.Path, zones: str) -> None:
    """--compare-policies places gangs whole under every policy; --add-nodes leaves an unplaced gang's
    members out and says so."""
    pods = [member(f"w-{i}") for i in range(3)]
    files = ("-f", zones, "--workload", workload(tmp_path, [pod_group("train", 3, topology=ZONE), *pods]))
    rows = dralloc("simulate", *files, "--compare-policies", "-o", "json").json()["policies"]
    assert {(r["policy"], r["placed"]) for r in rows} == {(r["policy"], 0) for r in rows}
    template = documents(tmp_path / "template.yaml", [node("node-c"), gpus("node-c", 4)])
    run = dralloc("simulate", *files, "--add-nodes", template)
    assert "3 unplaced gang members left out (added nodes are tried for single items only)" in run.out, run.out


def test_a_pod_group_of_another_api_group_is_not_read(dralloc: Invoke, tmp_path: pathlib.Path, zones: str) -> None:
    """scheduler-plugins' PodGroup (scheduling.x-k8s.io) is not a gang simulate reads: noted with its version."""
    other = {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
             "metadata": {"name": "x", "namespace": "default"}, "spec": {"minMember": 2}}
    run = dralloc("simulate", "-f", zones, "--workload", workload(tmp_path, [other, pod_raw("p")]))
    assert "of kinds simulate does not read: 1 PodGroup (scheduling.x-k8s.io/v1alpha1)" in run.err, run.err


def test_members_bound_in_the_snapshot_count_toward_min_count_and_hold_the_domain(
        dralloc: Invoke, tmp_path: pathlib.Path) -> None:
    """A member the snapshot shows bound on node-b (zone-b) and one workload member make minCount 2: the
    workload member is placed at once, in zone-b, though node-a comes first by name."""
    bound = member("b-0") | {"spec": member("b-0")["spec"] | {"nodeName": "node-b"}}
    snapshot = documents(tmp_path / "bound.yaml", [
        GPU_CLASS, node("node-a", labels={ZONE: "zone-a"}), node("node-b", labels={ZONE: "zone-b"}),
        gpus("node-a", 4), gpus("node-b", 4), bound])
    run = dralloc("simulate", "-f", snapshot, "--workload",
                  workload(tmp_path, [pod_group("train", 2, topology=ZONE), member("w-0")]))
    assert run.code == 0, run
    assert "  default/train (minCount 2): 1 of 1 member placed (1 bound before) in topology.kubernetes.io/zone=zone-b" \
        in run.out.splitlines(), run.out


def test_an_invalid_member_is_an_error_and_the_others_are_told_why_the_gang_waits(
        dralloc: Invoke, tmp_path: pathlib.Path, zones: str) -> None:
    """A member whose claim names a DeviceClass that does not exist: an error on it (exit 2), and the other
    member is not placed, told the operator's words for a member's error."""
    bad = {**TWO_GPUS, "metadata": {"name": "bad", "namespace": "default"},
           "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "nope"}}]}}}}
    broken = member("w-1")
    broken["spec"]["resourceClaims"] = [{"name": "gpus", "resourceClaimTemplateName": "bad"}]
    run = dralloc("simulate", "-f", zones, "--workload",
                  workload(tmp_path, [bad, pod_group("train", 2), member("w-0"), broken]), "-o", "json")
    assert run.code == 2, run
    reasons = {u["name"]: (u["reason"], u.get("error", False)) for u in run.json()["unplaced"]}
    assert reasons["w-1"][1] and reasons["w-1"][0].startswith("error: claim default/w-1-gpus"), reasons
    assert reasons["w-0"] == (f"PodGroup train: member default/w-1 cannot be placed: {reasons['w-1'][0][7:]}",
                              False), reasons


def test_optimal_leaves_gang_members_out_and_says_so(dralloc: Invoke, tmp_path: pathlib.Path, zones: str) -> None:
    """--optimal models items one by one: a gang's members are among the items left out, and counted."""
    pytest.importorskip("ortools")
    run = dralloc("simulate", "-f", zones, "--workload",
                  workload(tmp_path, [pod_group("train", 2), member("w-0"), member("w-1"), pod_raw("lone")]),
                  "--optimal", "5")
    assert ("an exact solver places 1 (optimal) of the 1 modelled item together; 2 items not modelled, left out "
            "(2 of them gang members: the model places no gang all or none)") in run.out.splitlines(), run.out
