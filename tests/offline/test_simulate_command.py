"""`dralloc simulate`: known placements per policy, pods (node fit, templates, shared claims),
`--placements-out`, the JSON report, exit codes 0/1/2 and input errors (issue 6).

Hand-made inputs: `data/pods-snapshot.yaml` (three nodes differing in zone, cpu and memory, one GPU
each, one running and one finished bound pod) with `data/pods-workload.yaml` and
`data/claims-workload.yaml`, whose comments give the expected placements; and, inline, three nodes
of four GPUs where node-b has two in use.
"""

from __future__ import annotations

import io
import pathlib
import re
from typing import Any

import pytest
from tests.builders import claim, class_
from tests.offline.conftest import Invoke, subprocess_dralloc
from tests.offline.files import DATA, GPU_CLASS, documents, gpus, in_use, node
from tests.scheduling.objects import pod_raw

from dralloc.wording import plural

SNAPSHOT = str(DATA / "pods-snapshot.yaml")
PODS = str(DATA / "pods-workload.yaml")
CLAIMS = str(DATA / "claims-workload.yaml")
TEMPLATE = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": "one-gpu", "namespace": "default"},
            "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}}}


@pytest.fixture
def gpu_cluster(tmp_path: pathlib.Path) -> str:
    """node-a, node-b, node-c with 4 GPUs each, node-b's gpu-0 and gpu-1 in use; claims c1 (1), c2 (2), c3 (1)."""
    return documents(tmp_path / "gpus.yaml", [
        GPU_CLASS, node("node-c"), node("node-b"), node("node-a"),
        gpus("node-a", 4), gpus("node-b", 4), gpus("node-c", 4), in_use("old", "node-b", 0, 1),
        claim("c1").request("gpu", "gpu"), claim("c2").request("gpu", "gpu", count=2), claim("c3").request("gpu", "gpu"),
    ])


def placements(dralloc: Invoke, tmp_path: pathlib.Path, *argv: str) -> tuple[int, str]:
    out = tmp_path / "placements.txt"
    run = dralloc("simulate", *argv, "--placements-out", str(out))
    assert run.err == "", run.err
    return run.code, out.read_text()


class TestPolicies:
    def test_first_fit(self, dralloc: Invoke, tmp_path: pathlib.Path, gpu_cluster: str) -> None:
        """first-fit: the first node by name where the claim fits, devices in first-fit order."""
        assert placements(dralloc, tmp_path, "-f", gpu_cluster) == (0, (
            "c1 node-a gpu=gpu.example.com/node-a/gpu-0\n"
            "c2 node-a gpu=gpu.example.com/node-a/gpu-1 gpu=gpu.example.com/node-a/gpu-2\n"
            "c3 node-a gpu=gpu.example.com/node-a/gpu-3\n"))

    def test_binpack(self, dralloc: Invoke, tmp_path: pathlib.Path, gpu_cluster: str) -> None:
        """binpack: the most used node first (node-b), then, when it has no room, the next by use and name."""
        assert placements(dralloc, tmp_path, "-f", gpu_cluster, "--policy", "binpack") == (0, (
            "c1 node-b gpu=gpu.example.com/node-b/gpu-2\n"
            "c2 node-a gpu=gpu.example.com/node-a/gpu-0 gpu=gpu.example.com/node-a/gpu-1\n"
            "c3 node-b gpu=gpu.example.com/node-b/gpu-3\n"))

    def test_spread(self, dralloc: Invoke, tmp_path: pathlib.Path, gpu_cluster: str) -> None:
        """spread: the least used node first, ties by name, use updated after each placement."""
        assert placements(dralloc, tmp_path, "-f", gpu_cluster, "--policy", "spread") == (0, (
            "c1 node-a gpu=gpu.example.com/node-a/gpu-0\n"
            "c2 node-c gpu=gpu.example.com/node-c/gpu-0 gpu=gpu.example.com/node-c/gpu-1\n"
            "c3 node-a gpu=gpu.example.com/node-a/gpu-1\n"))

    def test_unknown_policy(self, dralloc: Invoke, gpu_cluster: str) -> None:
        """--policy outside first-fit/binpack/spread is a usage error (exit 2)."""
        with pytest.raises(SystemExit) as info:
            dralloc("simulate", "-f", gpu_cluster, "--policy", "worst-fit")
        assert info.value.code == 2


class TestPods:
    def test_node_selectors_and_resource_fit(self, dralloc: Invoke, tmp_path: pathlib.Path) -> None:
        """Pods land per nodeSelector, affinity, cpu and memory fit; bound pods count unless finished."""
        assert placements(dralloc, tmp_path, "-f", SNAPSHOT, "--workload", PODS) == (1, (
            "p1 node-a\np2 node-b\np3 node-b\np4 node-b\np7 node-c\n"))

    def test_unplaced_pods_and_reasons(self, dralloc: Invoke) -> None:
        """Pods that fit nowhere are listed with the node-fit reason, grouped over nodes."""
        report = dralloc("simulate", "-f", SNAPSHOT, "--workload", PODS, "-o", "json").json()
        assert (report["items"], report["placed"]) == (7, 5)
        assert report["unplaced"] == [
            {"name": "p5", "reason": "3 nodes (node-a, node-b, node-c): Insufficient cpu"},
            {"name": "p6", "reason": "3 nodes (node-a, node-b, node-c): node(s) didn't match Pod's node affinity/selector"},
        ]

    def test_template_and_shared_claims(self, dralloc: Invoke, tmp_path: pathlib.Path) -> None:
        """Template claims are created per pod; a shared claim is allocated once and pins its other pods."""
        assert placements(dralloc, tmp_path, "-f", SNAPSHOT, "--workload", CLAIMS) == (1, (
            "t1 node-a gpu=gpu.example.com/node-a/gpu-0\n"
            "s1 node-b gpu=gpu.example.com/node-b/gpu-0\n"
            "s2 node-b\n"
            "t2 node-c gpu=gpu.example.com/node-c/gpu-0\n"))

    def test_template_and_shared_claims_report(self, dralloc: Invoke) -> None:
        """The shared claim is no item of its own; pods that cannot follow it, or find no GPU, are unplaced."""
        report = dralloc("simulate", "-f", SNAPSHOT, "--workload", CLAIMS, "-o", "json").json()
        assert (report["items"], report["placed"]) == (6, 4)
        assert report["unplaced"] == [
            {"name": "s3", "reason": "2 nodes (node-b, node-c): node(s) didn't match Pod's node affinity/selector; "
                                     "node-a: a shared claim is allocated for other nodes"},
            {"name": "t3", "reason": "3 nodes (node-a, node-b, node-c): claim default/t3-gpu, request gpu: "
                                     "0 of 1 devices of class gpu usable, 1 needed (removed: 1 in use)"},
        ]
        assert report["utilization"]["classes"] == {"gpu": {"devices": 3, "inUse": 3, "percent": 100.0, "counters": {}, "capacity": {}}}

    def test_pod_with_two_template_claims(self, dralloc: Invoke, tmp_path: pathlib.Path) -> None:
        """A pod's claims are allocated together on one node; the line lists every device in order."""
        snapshot = documents(tmp_path / "s.yaml", [GPU_CLASS, node("node-a"), node("node-b"),
                                                   gpus("node-a", 1), gpus("node-b", 2)])
        workload = documents(tmp_path / "w.yaml", [TEMPLATE, pod_raw("p", claims=[
            {"name": "first", "resourceClaimTemplateName": "one-gpu"},
            {"name": "second", "resourceClaimTemplateName": "one-gpu"}])])
        assert placements(dralloc, tmp_path, "-f", snapshot, "--workload", workload) == (
            0, "p node-b gpu=gpu.example.com/node-b/gpu-0 gpu=gpu.example.com/node-b/gpu-1\n")

    def test_shared_claim_already_allocated_in_snapshot(self, dralloc: Invoke, tmp_path: pathlib.Path) -> None:
        """A pod sharing a claim the snapshot shows allocated goes to that claim's node, taking no devices."""
        shared = claim("shared").request("gpu", "gpu").raw()
        shared["status"] = {"allocation": {
            "devices": {"results": [{"request": "gpu", "driver": "gpu.example.com", "pool": "node-b",
                                     "device": "gpu-0"}]},
            "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": ["node-b"]}]}]}}}
        snapshot = documents(tmp_path / "s.yaml", [GPU_CLASS, node("node-a"), node("node-b"),
                                                   gpus("node-a", 1), gpus("node-b", 1), shared])
        workload = documents(tmp_path / "w.yaml", [pod_raw("p", claims=[{"name": "s", "resourceClaimName": "shared"}])])
        assert placements(dralloc, tmp_path, "-f", snapshot, "--workload", workload) == (0, "p node-b\n")

    def test_objects_without_namespace_are_in_default(self, dralloc: Invoke, tmp_path: pathlib.Path) -> None:
        """A pod and its template written without metadata.namespace are both in 'default' and found."""
        template = {**TEMPLATE, "metadata": {"name": "one-gpu"}}
        pod = pod_raw("p", claims=[{"name": "g", "resourceClaimTemplateName": "one-gpu"}])
        del pod["metadata"]["namespace"]
        workload = documents(tmp_path / "w.yaml", [template, pod])
        run = dralloc("simulate", "-f", SNAPSHOT, "--workload", workload)
        assert (run.code, run.err) == (0, "")


class TestPlacementsOut:
    def test_nothing_placed_writes_empty_file(self, dralloc: Invoke, tmp_path: pathlib.Path) -> None:
        """No placements: the file exists and is empty (no header, no trailing text)."""
        workload = documents(tmp_path / "w.yaml", [claim("huge").request("gpu", "gpu", count=9)])
        assert placements(dralloc, tmp_path, "-f", SNAPSHOT, "--workload", workload) == (1, "")

    def test_request_names_as_in_result(self, dralloc: Invoke, tmp_path: pathlib.Path) -> None:
        """Each device is REQ=POOL/DEVICE with the request name from the result, in result order."""
        two = claim("two").request("a", "gpu").request("b", "gpu")
        workload = documents(tmp_path / "w.yaml", [two])
        snapshot = documents(tmp_path / "s.yaml", [GPU_CLASS, node("n1"), gpus("n1", 2)])
        assert placements(dralloc, tmp_path, "-f", snapshot, "--workload", workload) == (
            0, "two n1 a=gpu.example.com/n1/gpu-0 b=gpu.example.com/n1/gpu-1\n")

    def test_subprocess_writes_the_file(self, tmp_path: pathlib.Path) -> None:
        """Run as `python -m dralloc simulate`, the placements file has the same lines."""
        out = tmp_path / "placements.txt"
        run = subprocess_dralloc("simulate", "-f", SNAPSHOT, "--workload", PODS, "--placements-out", str(out),
                                 "--no-progress")
        assert (run.code, out.read_text()) == (1, "p1 node-a\np2 node-b\np3 node-b\np4 node-b\np7 node-c\n")

    def test_unwritable_file_is_an_input_error(self, dralloc: Invoke, tmp_path: pathlib.Path) -> None:
        """A placements file that cannot be written: exit 2, naming the flag."""
        run = dralloc("simulate", "-f", SNAPSHOT, "--workload", PODS, "--placements-out",
                      str(tmp_path / "no" / "such" / "dir.txt"))
        assert run.code == 2 and run.err.startswith("error: --placements-out ")


class TestReport:
    def test_json_keys(self, dralloc: Invoke, gpu_cluster: str) -> None:
        """The JSON report has items, placed, unplaced, placementsPerSecond, utilization and fragmentation."""
        report = dralloc("simulate", "-f", gpu_cluster, "-o", "json").json()
        assert {"items", "placed", "unplaced", "placementsPerSecond", "utilization", "fragmentation"} <= set(report)
        assert (report["items"], report["placed"], report["unplaced"]) == (3, 3, [])
        assert isinstance(report["placementsPerSecond"], float)

    def test_utilization_per_class_and_pool(self, dralloc: Invoke, gpu_cluster: str) -> None:
        """Utilization counts devices and devices in use per class and per pool, after the workload."""
        report = dralloc("simulate", "-f", gpu_cluster, "-o", "json").json()
        assert report["utilization"] == {
            "classes": {"gpu": {"devices": 12, "inUse": 6, "percent": 50.0, "counters": {}, "capacity": {}}},
            "pools": {"gpu.example.com/node-a": {"devices": 4, "inUse": 4, "percent": 100.0, "counters": {},
                                                 "capacity": {}},
                      "gpu.example.com/node-b": {"devices": 4, "inUse": 2, "percent": 50.0, "counters": {},
                                                 "capacity": {}},
                      "gpu.example.com/node-c": {"devices": 4, "inUse": 0, "percent": 0.0, "counters": {},
                                                 "capacity": {}}},
        }

    def test_fragmentation(self, dralloc: Invoke, gpu_cluster: str) -> None:
        """Fragmentation: per class, how many nodes could still take 1, 2, 4, 8 devices."""
        report = dralloc("simulate", "-f", gpu_cluster, "-o", "json").json()
        assert report["fragmentation"] == {"gpu": {"1": 2, "2": 2, "4": 1, "8": 0}}

    def test_placements_in_report(self, dralloc: Invoke, gpu_cluster: str) -> None:
        """The report's placements are the placements-out lines without newlines."""
        report = dralloc("simulate", "-f", gpu_cluster, "-o", "json").json()
        assert report["placements"] == ["c1 node-a gpu=gpu.example.com/node-a/gpu-0", "c2 node-a gpu=gpu.example.com/node-a/gpu-1 gpu=gpu.example.com/node-a/gpu-2",
                                        "c3 node-a gpu=gpu.example.com/node-a/gpu-3"]

    def test_table_summary(self, dralloc: Invoke) -> None:
        """The table starts with the placed count and lists unplaced items with reasons."""
        lines = dralloc("simulate", "-f", SNAPSHOT, "--workload", PODS).out.splitlines()
        assert lines[0].startswith("placed 5 of 7 items in ")
        assert "  p5: 3 nodes (node-a, node-b, node-c): Insufficient cpu" in lines


class TestExitCodes:
    def test_all_placed_is_zero(self, dralloc: Invoke, gpu_cluster: str) -> None:
        """Every item placed: exit 0."""
        assert dralloc("simulate", "-f", gpu_cluster).code == 0

    def test_some_unplaced_is_one(self, dralloc: Invoke) -> None:
        """Some item not placed: exit 1."""
        assert dralloc("simulate", "-f", SNAPSHOT, "--workload", PODS).code == 1

    def expect_error(self, dralloc: Invoke, *argv: str) -> str:
        run = dralloc("simulate", *argv)
        assert (run.code, run.out) == (2, ""), run
        return run.err

    def test_missing_template(self, dralloc: Invoke, tmp_path: pathlib.Path) -> None:
        """A pod naming a template that is not in the input: exit 2, naming pod, field and template."""
        workload = documents(tmp_path / "w.yaml", [pod_raw("p", claims=[
            {"name": "g", "resourceClaimTemplateName": "nope"}])])
        assert self.expect_error(dralloc, "-f", SNAPSHOT, "--workload", workload) == (
            "error: Pod default/p: spec.resourceClaims[g].resourceClaimTemplateName: "
            "no ResourceClaimTemplate default/nope in the input\n")

    def test_missing_shared_claim(self, dralloc: Invoke, tmp_path: pathlib.Path) -> None:
        """A pod naming a ResourceClaim that is not in the input: exit 2, naming pod and field."""
        workload = documents(tmp_path / "w.yaml", [pod_raw("p", claims=[{"name": "s", "resourceClaimName": "x"}])])
        assert self.expect_error(dralloc, "-f", SNAPSHOT, "--workload", workload) == (
            "error: Pod default/p: spec.resourceClaims[s].resourceClaimName: no ResourceClaim default/x in the input\n")

    def test_no_nodes(self, dralloc: Invoke, tmp_path: pathlib.Path) -> None:
        """A snapshot without Node objects and no slice naming a node: exit 2, naming the file."""
        snapshot = documents(tmp_path / "s.yaml", [GPU_CLASS, claim("c").request("gpu", "gpu")])
        assert self.expect_error(dralloc, "-f", snapshot) == (
            f"error: {snapshot}: no Node objects in the input and no ResourceSlice names a node, so there is "
            "nowhere to allocate devices\n")

    def test_bad_yaml_names_the_file(self, dralloc: Invoke, tmp_path: pathlib.Path) -> None:
        """Workload YAML that does not parse: exit 2, naming the file."""
        bad = tmp_path / "bad.yaml"
        bad.write_text("items: [\n")
        assert self.expect_error(dralloc, "-f", SNAPSHOT, "--workload", str(bad)).startswith(
            f"error: {bad}: malformed YAML/JSON: ")

    def test_malformed_pod_names_kind_and_field(self, dralloc: Invoke, tmp_path: pathlib.Path) -> None:
        """A pod of the wrong shape: exit 2, naming file, Pod namespace/name and field."""
        pod = pod_raw("p")
        pod["spec"]["nodeSelector"] = ["zone"]
        workload = documents(tmp_path / "w.yaml", [pod])
        assert self.expect_error(dralloc, "-f", SNAPSHOT, "--workload", workload).startswith(
            f"error: {workload}: Pod default/p: spec.nodeSelector: ")

    def test_unknown_device_class(self, dralloc: Invoke, tmp_path: pathlib.Path) -> None:
        """A claim for a DeviceClass not in the snapshot: exit 2, the report names the claim as an error."""
        workload = documents(tmp_path / "w.yaml", [claim("c").request("gpu", "tpu")])
        run = dralloc("simulate", "-f", SNAPSHOT, "--workload", workload, "-o", "json")
        assert run.code == 2
        assert [(u["name"], u.get("error")) for u in run.json()["unplaced"]] == [("c", True)]
        assert run.json()["unplaced"][0]["reason"].startswith("error: claim default/c, request gpu: ")


    def test_unknown_feature_gate(self, dralloc: Invoke) -> None:
        """An unknown feature gate: exit 2, naming it."""
        assert "DRANope" in self.expect_error(dralloc, "-f", SNAPSHOT, "--features", "DRANope=true")


BROKEN_CLASS = class_("broken", 'device.attributes["gpu.example.com"].missing == 1')  # CEL runtime error


class TestInvalidItems:
    """One invalid item (bad class, bad CEL) is reported as an error; the items after it are still placed."""

    @pytest.fixture
    def report(self, dralloc: Invoke, tmp_path: pathlib.Path) -> tuple[int, dict[str, Any], str]:
        snapshot = documents(tmp_path / "s.yaml", [GPU_CLASS, BROKEN_CLASS, node("node-a"), gpus("node-a", 3)])
        tpu_template = {**TEMPLATE, "metadata": {"name": "one-tpu", "namespace": "default"},
                        "spec": {"spec": {"devices": {"requests": [
                            {"name": "tpu", "exactly": {"deviceClassName": "tpu"}}]}}}}
        workload = documents(tmp_path / "w.yaml", [
            claim("first").request("gpu", "gpu"),
            claim("no-class").request("gpu", "tpu"),
            claim("bad-cel").request("gpu", "gpu", selectors=["device.driver == 1 +"]),
            claim("bad-class-cel").request("gpu", "broken"),
            tpu_template, pod_raw("p", claims=[{"name": "t", "resourceClaimTemplateName": "one-tpu"}]),
            claim("second").request("gpu", "gpu", count=2),
        ])
        run = dralloc("simulate", "-f", snapshot, "--workload", workload, "-o", "json", "--placements-out",
                      str(tmp_path / "placed.txt"))
        return run.code, run.json(), run.err

    def test_the_others_are_placed(self, report: tuple[int, dict[str, Any], str]) -> None:
        _, doc, _ = report
        assert (doc["items"], doc["placed"], doc["errors"]) == (6, 2, 4)
        assert doc["placements"] == ["first node-a gpu=gpu.example.com/node-a/gpu-0",
                                     "second node-a gpu=gpu.example.com/node-a/gpu-1 gpu=gpu.example.com/node-a/gpu-2"]

    @pytest.mark.parametrize(("name", "fragments"), [
        ("no-class", ("claim default/no-class, request gpu", "device class tpu", "not found")),
        ("bad-cel", ("claim default/bad-cel, request gpu", "selector #0", "CEL compile error")),
        ("bad-class-cel", ("claim default/bad-class-cel, request gpu", "class broken", "selector #0",
                           "CEL runtime error")),
        ("p", ("claim default/p-t, request tpu", "device class tpu", "not found")),
    ])
    def test_each_error_names_claim_request_class_and_error(
            self, report: tuple[int, dict[str, Any], str], name: str, fragments: tuple[str, ...]) -> None:
        entry = {u["name"]: u for u in report[1]["unplaced"]}[name]
        assert entry["error"] is True and entry["reason"].startswith("error: ")
        for fragment in fragments:
            assert fragment in entry["reason"], entry["reason"]

    def test_exit_code_and_stderr(self, report: tuple[int, dict[str, Any], str]) -> None:
        """Invalid items make the exit code 2 (input error), even though a report was printed."""
        code, _, err = report
        assert code == 2
        assert err == ("error: 4 of 6 items are invalid and were not placed (listed in the report with "
                       "their error); the others were placed as reported\n")

    def test_errors_counted_apart_from_no_room(self, dralloc: Invoke, tmp_path: pathlib.Path) -> None:
        """An item without room is unplaced but no error: errors 0 and exit 1; the table shows both counts."""
        snapshot = documents(tmp_path / "s.yaml", [GPU_CLASS, node("node-a"), gpus("node-a", 1)])
        workload = documents(tmp_path / "w.yaml", [claim("big").request("gpu", "gpu", count=2),
                                                   claim("bad").request("gpu", "tpu")])
        run = dralloc("simulate", "-f", snapshot, "--workload", workload, "-o", "json")
        assert (run.code, run.json()["errors"], [u.get("error", False) for u in run.json()["unplaced"]]) == (
            2, 1, [False, True])
        table = dralloc("simulate", "-f", snapshot, "--workload", workload).out
        assert table.startswith("placed 0 of 2 items, 1 invalid in ")
        only_room = documents(tmp_path / "w2.yaml", [claim("big").request("gpu", "gpu", count=2)])
        run = dralloc("simulate", "-f", snapshot, "--workload", only_room, "-o", "json")
        assert (run.code, run.json()["errors"]) == (1, 0)


class TestCountsAgreeWithTheirNouns:
    """1 item, 2 items: never "1 items" nor "1 unplaced items that fit" (#32)."""

    @pytest.fixture
    def snapshot(self, tmp_path: pathlib.Path) -> str:
        return documents(tmp_path / "s.yaml", [GPU_CLASS, node("node-a"), gpus("node-a", 1)])

    @staticmethod
    def _workload(tmp_path: pathlib.Path, *claims: Any) -> str:
        return documents(tmp_path / "w.yaml", list(claims))

    @pytest.mark.parametrize(("count", "noun", "nouns", "text"), [
        (1, "item", "", "1 item"), (2, "item", "", "2 items"), (0, "item", "", "0 items"),
        (1, "policy", "policies", "1 policy"), (2, "policy", "policies", "2 policies")])
    def test_plural(self, count: int, noun: str, nouns: str, text: str) -> None:
        assert plural(count, noun, nouns) == text

    def test_the_summary_line(self, dralloc: Invoke, tmp_path: pathlib.Path, snapshot: str) -> None:
        one = dralloc("simulate", "-f", snapshot, "--workload", self._workload(tmp_path, claim("a").request("gpu", "gpu")))
        assert re.fullmatch(r"placed 1 of 1 item in \S+ s \(\d+ placements/s, 1 allocator call\)",
                            one.out.splitlines()[0])
        two = dralloc("simulate", "-f", snapshot, "--workload", self._workload(
            tmp_path, claim("a").request("gpu", "gpu"), claim("b").request("gpu", "gpu")))
        assert re.fullmatch(r"placed 1 of 2 items in \S+ s \(\d+ placements/s, 2 allocator calls\)",
                            two.out.splitlines()[0])

    def test_the_add_nodes_line(self, dralloc: Invoke, tmp_path: pathlib.Path, snapshot: str) -> None:
        spare = documents(tmp_path / "spare.yaml", [node("spare"), gpus("spare", 1)])
        one = dralloc("simulate", "-f", snapshot, "--add-nodes", spare, "--workload", self._workload(
            tmp_path, claim("a").request("gpu", "gpu"), claim("b").request("gpu", "gpu"),
            claim("big").request("gpu", "gpu", count=2)))
        assert one.out.splitlines()[1] == ("1 more node like spare would let the 1 unplaced item that fits one be "
                                           "placed; 1 fits no empty spare at all (e.g. big)")
        two = dralloc("simulate", "-f", snapshot, "--add-nodes", spare, "--workload", self._workload(
            tmp_path, claim("a").request("gpu", "gpu"), claim("b").request("gpu", "gpu"),
            claim("c").request("gpu", "gpu"), claim("big").request("gpu", "gpu", count=2),
            claim("bigger").request("gpu", "gpu", count=3)))
        assert two.out.splitlines()[1] == ("2 more nodes like spare would let the 2 unplaced items that fit one be "
                                           "placed; 2 fit no empty spare at all (e.g. big)")

    def test_invalid_items_on_stderr(self, dralloc: Invoke, tmp_path: pathlib.Path, snapshot: str) -> None:
        one = self._workload(tmp_path, claim("a").request("gpu", "gpu"), claim("x").request("gpu", "tpu"))
        assert dralloc("simulate", "-f", snapshot, "--workload", one).err == (
            "error: 1 of 2 items is invalid and was not placed (listed in the report with its error); the others "
            "were placed as reported\n")
        assert dralloc("simulate", "-f", snapshot, "--workload", one, "--compare-policies").err == (
            "error: 1 item is invalid and was not placed (simulate without --compare-policies lists it)\n")
        two = self._workload(tmp_path, claim("a").request("gpu", "gpu"), claim("x").request("gpu", "tpu"),
                             claim("y").request("gpu", "tpu"))
        assert dralloc("simulate", "-f", snapshot, "--workload", two).err == (
            "error: 2 of 3 items are invalid and were not placed (listed in the report with their error); the "
            "others were placed as reported\n")
        assert dralloc("simulate", "-f", snapshot, "--workload", two, "--compare-policies").err == (
            "error: 2 items are invalid and were not placed (simulate without --compare-policies lists them)\n")


def test_culprit_names_each_items_own_claim(dralloc: Invoke, tmp_path: pathlib.Path) -> None:
    """Items of one shape share an explanation; the constraint it names is each item's own claim's."""
    from tests.builders import device, slice_

    numa = slice_("n1-gpus", pool="n1", node="n1", devices=[device("gpu-0").attr("numa", 0),
                                                            device("gpu-1").attr("numa", 1)])
    snapshot = documents(tmp_path / "s.yaml", [GPU_CLASS, node("n1"), numa])
    workload = documents(tmp_path / "w.yaml", [
        claim(name).request("gpu", "gpu", count=2).constraint_match("gpu.example.com/numa")
        for name in ("first", "second")])
    report = dralloc("simulate", "-f", snapshot, "--workload", workload, "-o", "json").json()
    assert [(u["name"], u["reason"].split("; ", 1)[1]) for u in report["unplaced"]] == [
        (name, "enough devices individually, but matchAttribute gpu.example.com/numa "
               f"(claim default/{name}, constraint #0) rules out every combination: without it the claims fit")
        for name in ("first", "second")]


class TestUtilizationAmounts:
    def test_consumable_capacity_is_printed_in_the_format_the_driver_wrote(self) -> None:
        """NICs of 1600G bandwidth (decimal, as drivers write it) with shares of 120G and 100G: 220G of
        3200G, not 214843750Ki of 3125000000Ki (issue 32: whole numbers were printed binary); a memory
        capacity written 80Gi stays binary."""
        from tests.builders import device, node, result, slice_, snapshot

        from dralloc.allocation.features import Features
        from dralloc.offline import simulating

        nics = [device(f"nic-{i}").shared().capacity("bandwidth", "1600G", min="1G").capacity("memory", "80Gi")
                for i in range(2)]
        snap = snapshot(classes=[class_("nic", 'device.driver == "gpu.example.com"')],
                        slices=[slice_("s", devices=nics)],
                        allocated=[claim("a").allocated(result("r", "nic-0", share_id="s1",
                                                               consumed={"bandwidth": "120G", "memory": "8Gi"})),
                                   claim("b").allocated(result("r", "nic-0", share_id="s2",
                                                               consumed={"bandwidth": "100G"}))])
        report = simulating.utilization(snap, [node()], Features())
        assert report["classes"]["nic"]["capacity"] == {
            "bandwidth": {"total": "3200G", "inUse": "220G", "percent": 6.9},
            "memory": {"total": "160Gi", "inUse": "8Gi", "percent": 5.0}}


    def test_the_table_prints_used_and_total_in_one_unit(self, dralloc: Invoke, tmp_path: pathlib.Path) -> None:
        """Two 1600G NICs on one node, shares of 120G and 100G in use: "bandwidth 220G/3200G" (issue 32:
        "214843750Ki/1562500000Ki"); memory of 80Gi each, 8Gi in use: "8Gi/160Gi"."""
        from tests.builders import device, result, slice_

        nics = [device(f"nic-{i}").shared().capacity("bandwidth", "1600G", min="1G").capacity("memory", "80Gi")
                for i in range(2)]
        snapshot_file = documents(tmp_path / "s.yaml", [
            node("node-a"), class_("nic", 'device.driver == "gpu.example.com"'),
            slice_("s", pool="node-a", node="node-a", devices=nics),
            claim("a").request("nic", "nic").allocated(result("nic", "nic-0", pool="node-a", share_id="s1",
                                                             consumed={"bandwidth": "120G", "memory": "8Gi"})),
            claim("b").request("nic", "nic").allocated(result("nic", "nic-0", pool="node-a", share_id="s2",
                                                             consumed={"bandwidth": "100G"}))])
        run = dralloc("simulate", "-f", snapshot_file)
        assert "  nic  1 / 2 devices in use  (50%); capacity bandwidth 220G/3200G (7%), memory 8Gi/160Gi (5%)" in (
            run.out.splitlines()), run.out


class TestComparePolicies:
    @staticmethod
    def _rows(tmp_path: pathlib.Path) -> tuple[Any, list[str]]:
        from tests.offline.test_trace_converter import _trace_files

        from dralloc.offline import comparing, simulating

        snapshot_file, workload_file = _trace_files(tmp_path)
        request = simulating.Request(snapshot_files=[snapshot_file], workload_files=[workload_file])
        out = io.StringIO()
        comparing.print_table(comparing.compare(request, io.StringIO()), out)
        return request, out.getvalue().splitlines()

    def test_the_table_columns_line_up_under_their_headers(self, tmp_path: pathlib.Path) -> None:
        """Each right-aligned column ends where its header ends (issue 32: "placed" stood apart from 3/4)."""
        _, lines = self._rows(tmp_path)
        header, rows = lines[0], lines[1:]
        for title in ("placed", "before 1st failure", "decisions/s"):
            end = header.index(title) + len(title)
            for row in rows:
                assert row[end - 1] != " " and row[end] == " ", (title, header, row)

    def test_each_policy_starts_from_a_cold_selector_memo(self, tmp_path: pathlib.Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
        """What one policy's run memoized of the selectors is forgotten before the next policy's clock
        starts: each starts as the first does (issue 32: later policies reused the first one's results,
        and the first alone paid the CEL engine's import), and each leaves results behind."""
        from dralloc.allocation import selectors
        from dralloc.offline import simulating

        memo: list[tuple[str, int, int]] = []
        place = simulating.place_workload

        def recorded(placer: Any, *args: Any) -> Any:
            before = selectors.cache_usage()[0]
            results = place(placer, *args)
            memo.append((placer.policy, before, selectors.cache_usage()[0]))
            return results

        monkeypatch.setattr(simulating, "place_workload", recorded)
        self._rows(tmp_path)
        assert [(policy, before) for policy, before, _ in memo] == [
            ("first-fit", 0), ("binpack", 0), ("spread", 0), ("fragmentation-aware", 0)]
        assert all(after > 0 for _, _, after in memo)


def test_the_cel_engine_is_loaded_before_the_placement_clock_starts() -> None:
    """A fresh process: the CEL engine (about half a second of imports) is in when the timed loop starts,
    so "placed 1 of 3 items in N s (M placements/s)" times the placements (issue 32: README's 0.004 s
    read 0.5 s)."""
    import subprocess
    import sys

    script = (
        "import sys\n"
        "from dralloc.offline import simulating\n"
        "place = simulating.place_workload\n"
        "def seen(*args):\n"
        "    print('loaded' if 'dralloc.cel.selectors' in sys.modules else 'not loaded', file=sys.stderr)\n"
        "    return place(*args)\n"
        "simulating.place_workload = seen\n"
        f"simulating.simulate(simulating.Request(snapshot_files=[{str(pathlib.Path(__file__).parents[2] / 'examples' / 'snapshot.yaml')!r}]))\n")
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    assert run.stderr.splitlines()[-1] == "loaded", run.stderr
