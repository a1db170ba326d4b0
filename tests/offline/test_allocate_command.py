"""`dralloc allocate`: input forms, flags, JSON shape, exit codes and input errors (README, DESIGN §4.2).

The standard cluster: DeviceClass `gpu`; node-a (2 GPUs, gpu-0 in use by claim `old`) and node-b
(4 GPUs); unallocated claims, in file order, `one` (1 GPU), `pair` (2) and `big` (5: fits nowhere).
"""

from __future__ import annotations

import contextlib
import io
import json
import pathlib
from typing import Any

import pytest
import yaml
from tests.builders import claim, device, slice_
from tests.offline.conftest import REPO, Invoke, subprocess_dralloc
from tests.offline.files import GPU_CLASS, as_list, documents, gpus, in_use, node

from dralloc import cli

ONE = claim("one").request("gpu", "gpu")
PAIR = claim("pair").request("gpu", "gpu", count=2)
BIG = claim("big").request("gpu", "gpu", count=5)
CLUSTER = [GPU_CLASS, node("node-a", labels={"zone": "x"}), node("node-b", labels={"zone": "y"}),
           gpus("node-a", 2), gpus("node-b", 4), in_use("old", "node-a", 0)]


@pytest.fixture
def cluster(tmp_path: pathlib.Path) -> str:
    return as_list(tmp_path / "cluster.yaml", [*CLUSTER, ONE, PAIR, BIG])


def picks(report: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(claim, request, pool/device) for every device in a JSON report."""
    return [(c["name"], r["request"], f"{r['pool']}/{r['device']}")
            for c in report["claims"] for r in c["allocation"]["devices"]["results"]]


class TestInput:
    def test_kind_list(self, dralloc: Invoke, cluster: str) -> None:
        """A `kind: List` file, as `kubectl get -o yaml` writes, is read item by item."""
        run = dralloc("allocate", "-f", cluster, "--claim", "one", "-o", "json")
        assert (run.code, picks(run.json())) == (0, [("one", "gpu", "node-a/gpu-1")])

    def test_multi_document_same_as_list(self, dralloc: Invoke, tmp_path: pathlib.Path, cluster: str) -> None:
        """Multi-document YAML gives the same answer as the same objects in a `kind: List`."""
        multi = documents(tmp_path / "multi.yaml", [*CLUSTER, ONE, PAIR, BIG])
        assert dralloc("allocate", "-f", multi, "--claim", "pair", "-o", "json") == \
            dralloc("allocate", "-f", cluster, "--claim", "pair", "-o", "json")

    def test_objects_across_files(self, dralloc: Invoke, tmp_path: pathlib.Path) -> None:
        """Repeated -f reads every file; a claim in one file uses slices from another."""
        first = documents(tmp_path / "a.yaml", CLUSTER)
        second = documents(tmp_path / "b.yaml", [ONE])
        run = dralloc("allocate", "-f", first, "-f", second, "-o", "json")
        assert (run.code, picks(run.json())) == (0, [("one", "gpu", "node-a/gpu-1")])

    def test_json_input(self, dralloc: Invoke, tmp_path: pathlib.Path) -> None:
        """A JSON file (a List) is read like YAML."""
        import json
        path = tmp_path / "cluster.json"
        path.write_text(json.dumps({"kind": "List", "apiVersion": "v1",
                                    "items": [o if isinstance(o, dict) else o.raw() for o in [*CLUSTER, ONE]]}))
        assert dralloc("allocate", "-f", str(path)).code == 0

    def test_other_kinds_ignored(self, dralloc: Invoke, tmp_path: pathlib.Path) -> None:
        """Kinds the allocator does not read (a ConfigMap) are skipped."""
        config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"a": "b"}}
        path = documents(tmp_path / "c.yaml", [config_map, *CLUSTER, ONE])
        assert dralloc("allocate", "-f", path).code == 0

    def test_stdin(self, cluster: str) -> None:
        """`-f -` reads stdin (subprocess)."""
        run = subprocess_dralloc("allocate", "-f", "-", "--claim", "one", "-o", "json",
                                 stdin=pathlib.Path(cluster).read_text())
        assert (run.code, picks(run.json())) == (0, [("one", "gpu", "node-a/gpu-1")])

    def test_nodes_from_slices_without_node_objects(self, dralloc: Invoke, tmp_path: pathlib.Path) -> None:
        """Without Node objects, the nodes that slices name are tried, by name."""
        path = documents(tmp_path / "c.yaml", [GPU_CLASS, gpus("node-b", 1), gpus("node-a", 1), ONE])
        run = dralloc("allocate", "-f", path, "-o", "json")
        assert (run.code, run.json()["node"]) == (0, "node-a")


class TestOutput:
    def test_json_shape_allocated(self, dralloc: Invoke, cluster: str) -> None:
        """JSON: status, node, claims (namespace, name, allocation as the API writes it), reasons, message."""
        report = dralloc("allocate", "-f", cluster, "--claim", "one", "-o", "json").json()
        assert list(report) == ["status", "node", "claims", "reasons", "message"]
        assert report["status"] == "allocated" and report["node"] == "node-a" and report["reasons"] == []
        assert report["message"] == "allocated on node node-a"
        assert report["claims"] == [{"namespace": "default", "name": "one", "allocation": {
            "devices": {"results": [{"request": "gpu", "driver": "gpu.example.com", "pool": "node-a",
                                     "device": "gpu-1"}]},
            "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": ["node-a"]}]}]},
        }}]

    def test_json_shape_unschedulable(self, dralloc: Invoke, cluster: str) -> None:
        """Unschedulable JSON: allocation null, one reason per node and request with counts and causes."""
        run = dralloc("allocate", "-f", cluster, "--claim", "big", "-o", "json")
        report = run.json()
        assert (run.code, report["status"], report["node"]) == (1, "unschedulable", None)
        assert report["claims"] == [{"namespace": "default", "name": "big", "allocation": None}]
        assert report["reasons"] == [
            {"node": "node-a", "claim": "default/big", "request": "gpu", "deviceClass": "gpu", "needed": 5,
             "devices": 2, "candidates": 1, "removed": {"in use": 1},
             "message": "claim default/big, request gpu: 1 of 2 devices of class gpu usable, 5 needed "
                        "(removed: 1 in use)"},
            {"node": "node-b", "claim": "default/big", "request": "gpu", "deviceClass": "gpu", "needed": 5,
             "devices": 4, "candidates": 4, "removed": {},
             "message": "claim default/big, request gpu: 4 of 4 devices of class gpu usable, 5 needed"},
        ]
        assert report["message"].startswith("cannot allocate 1 claim(s) on any node: node node-a: claim default/big")

    def test_yaml_equals_json(self, dralloc: Invoke, cluster: str) -> None:
        """-o yaml carries the same document as -o json."""
        as_yaml = yaml.safe_load(dralloc("allocate", "-f", cluster, "--claim", "pair", "-o", "yaml").out)
        assert as_yaml == dralloc("allocate", "-f", cluster, "--claim", "pair", "-o", "json").json()

    def test_table(self, dralloc: Invoke, cluster: str) -> None:
        """The default table: a status line, then one line per device."""
        run = dralloc("allocate", "-f", cluster, "--claim", "pair")
        assert run.out.splitlines() == [
            "STATUS: allocated  NODE: node-b",
            "  default/pair  gpu  gpu.example.com/node-b/gpu-0",
            "  default/pair  gpu  gpu.example.com/node-b/gpu-1",
        ]

    def test_nothing_to_allocate(self, dralloc: Invoke, tmp_path: pathlib.Path) -> None:
        """With every claim allocated already, the answer is 'allocated' with no claims, exit 0 (as upstream
        allocates zero claims), and the message says there was nothing to allocate."""
        run = dralloc("allocate", "-f", documents(tmp_path / "c.yaml", CLUSTER), "-o", "json")
        assert (run.code, run.json()["status"], run.json()["claims"], run.json()["message"]) == (
            0, "allocated", [], "nothing to allocate: every ResourceClaim in the input has status.allocation")


class TestClaimsAndNodes:
    def test_default_claims_are_unallocated_ones_together(self, dralloc: Invoke, tmp_path: pathlib.Path) -> None:
        """Without --claim, every unallocated claim is allocated, in file order, together on one node."""
        path = documents(tmp_path / "c.yaml", [*CLUSTER, PAIR, ONE])
        run = dralloc("allocate", "-f", path, "-o", "json")
        assert (run.json()["node"], picks(run.json())) == (
            "node-b", [("pair", "gpu", "node-b/gpu-0"), ("pair", "gpu", "node-b/gpu-1"), ("one", "gpu", "node-b/gpu-2")])

    def test_default_claims_all_or_none(self, dralloc: Invoke, cluster: str) -> None:
        """Claims allocated together: one that fits nowhere makes them all unschedulable."""
        run = dralloc("allocate", "-f", cluster, "-o", "json")
        assert (run.code, [c["allocation"] for c in run.json()["claims"]]) == (1, [None, None, None])

    def test_claim_order_decides_devices(self, dralloc: Invoke, cluster: str) -> None:
        """--claim gives the order: the first claim named gets the first devices."""
        one_first = dralloc("allocate", "-f", cluster, "--claim", "one", "--claim", "default/pair", "-o", "json")
        pair_first = dralloc("allocate", "-f", cluster, "--claim", "default/pair", "--claim", "one", "-o", "json")
        assert picks(one_first.json()) == [
            ("one", "gpu", "node-b/gpu-0"), ("pair", "gpu", "node-b/gpu-1"), ("pair", "gpu", "node-b/gpu-2")]
        assert picks(pair_first.json()) == [
            ("pair", "gpu", "node-b/gpu-0"), ("pair", "gpu", "node-b/gpu-1"), ("one", "gpu", "node-b/gpu-2")]

    def test_node_flag_restricts_to_one_node(self, dralloc: Invoke, cluster: str) -> None:
        """--node allocates on that node only, even where first fit would choose another."""
        run = dralloc("allocate", "-f", cluster, "--claim", "one", "--node", "node-b", "-o", "json")
        assert (run.code, picks(run.json())) == (0, [("one", "gpu", "node-b/gpu-0")])

    def test_node_flag_unschedulable_names_the_node(self, dralloc: Invoke, cluster: str) -> None:
        """--node on a node without room: exit 1 and the reason is about that node only."""
        run = dralloc("allocate", "-f", cluster, "--claim", "pair", "--node", "node-a", "-o", "json")
        assert (run.code, run.json()["node"], [r["node"] for r in run.json()["reasons"]]) == (1, "node-a", ["node-a"])

    def test_explain_reports_nodes_tried_before(self, dralloc: Invoke, cluster: str) -> None:
        """--explain adds why the claims did not fit on the nodes tried before the chosen one."""
        run = dralloc("allocate", "-f", cluster, "--claim", "pair", "--explain", "-o", "json")
        assert (run.json()["node"], [(r["node"], r["candidates"]) for r in run.json()["reasons"]]) == (
            "node-b", [("node-a", 1)])

    def test_without_explain_no_reasons_when_allocated(self, dralloc: Invoke, cluster: str) -> None:
        """Without --explain, an allocated answer carries no reasons."""
        assert dralloc("allocate", "-f", cluster, "--claim", "pair", "-o", "json").json()["reasons"] == []

    def test_budget_exhausted_is_unschedulable(self, dralloc: Invoke, tmp_path: pathlib.Path) -> None:
        """Running out of --budget is exit 1 with its own message, per node."""
        path = documents(tmp_path / "c.yaml", [GPU_CLASS, node("node-b"), gpus("node-b", 4),
                                              claim("three").request("gpu", "gpu", count=3)])
        run = dralloc("allocate", "-f", path, "--budget", "1", "-o", "json")
        assert run.code == 1
        assert [list(r) for r in run.json()["reasons"]] == [["node", "message"]]
        assert run.json()["reasons"][0]["message"].startswith(
            "no decision within the search budget (1 steps per node, --budget): the search stopped after ")


class TestPolicy:
    @pytest.fixture
    def used(self, tmp_path: pathlib.Path) -> str:
        """node-a 1 of 4 GPUs in use, node-b 2 of 4, node-c none."""
        return documents(tmp_path / "used.yaml", [
            GPU_CLASS, node("node-a"), node("node-b"), node("node-c"),
            gpus("node-a", 4), gpus("node-b", 4), gpus("node-c", 4),
            in_use("old-a", "node-a", 0), in_use("old-b", "node-b", 0, 1), ONE])

    @pytest.mark.parametrize(("policy", "expect"), [("first-fit", "node-a"), ("binpack", "node-b"),
                                                    ("spread", "node-c")])
    def test_policy_choice(self, dralloc: Invoke, used: str, policy: str, expect: str) -> None:
        """first-fit: first by name; binpack: most used; spread: least used."""
        assert dralloc("allocate", "-f", used, "--policy", policy, "-o", "json").json()["node"] == expect

    def test_unknown_policy_is_a_usage_error(self, used: str, capsys: pytest.CaptureFixture[str]) -> None:
        """--policy accepts only first-fit, binpack and spread (exit 2 from argparse)."""
        with pytest.raises(SystemExit) as info:
            cli.main(["allocate", "-f", used, "--policy", "best-fit"])
        assert info.value.code == 2
        assert "invalid choice: 'best-fit'" in capsys.readouterr().err


class TestKubernetesVersion:
    """--kubernetes-version picks whose allocator semantics apply where 1.36 and 1.37 differ."""

    @pytest.mark.parametrize("command", ["allocate", "simulate", "run"])
    def test_choices_are_the_releases_the_allocator_reproduces(self, command: str) -> None:
        """The flag offers exactly allocation.features.RELEASES, default DEFAULT_RELEASE; `run`
        also `auto` (its default: the API server's version)."""
        from dralloc.allocation.features import DEFAULT_RELEASE, RELEASES

        sub = next(a for a in cli.build_parser()._actions if a.dest == "command")
        flag = next(a for a in sub.choices[command]._actions if a.dest == "kubernetes_version")  # type: ignore[union-attr]
        if command == "run":
            assert (tuple(flag.choices), flag.default) == (("auto", *RELEASES), "auto")
        else:
            assert (tuple(flag.choices), flag.default) == (RELEASES, DEFAULT_RELEASE)

    @pytest.mark.parametrize(("release", "requests"), [("1.36", ["gpu"]), ("1.37", None), ("1.38", None)])
    def test_a_config_for_every_request_lists_them_only_in_1_36(
            self, dralloc: Invoke, tmp_path: pathlib.Path, release: str, requests: list[str] | None) -> None:
        """1.37 gives a config entry that covers every request no `requests` ("empty means all")."""
        path = documents(tmp_path / "c.yaml", [*CLUSTER, claim("one").request("gpu", "gpu").config(
            "gpu.example.com", {"mode": "x"}, "gpu")])
        run = dralloc("allocate", "-f", path, "--kubernetes-version", release, "-o", "json")
        config = run.json()["claims"][0]["allocation"]["devices"]["config"]
        assert [c.get("requests") for c in config] == [requests]

    def test_a_locked_gate_is_refused_at_1_38(self, cluster: str, capsys: pytest.CaptureFixture[str]) -> None:
        """1.38 locks DRADeviceTaints on: turning it off is refused as kube-scheduler refuses it."""
        assert cli.main(["allocate", "-f", cluster, "--kubernetes-version", "1.38",
                         "--features", "DRADeviceTaints=false"]) == 2
        assert ("error: --features: cannot set feature gate DRADeviceTaints to false, feature is locked to true"
                in capsys.readouterr().err)

    def test_unknown_release_is_refused(self, cluster: str, capsys: pytest.CaptureFixture[str]) -> None:
        """A release dralloc does not reproduce: a usage error (exit 2) listing the choices."""
        with pytest.raises(SystemExit) as exited:
            cli.main(["allocate", "-f", cluster, "--kubernetes-version", "1.35"])
        assert exited.value.code == 2
        assert "--kubernetes-version: invalid choice: '1.35' (choose from '1.36', '1.37', '1.38')" in capsys.readouterr().err


class TestInputErrors:
    def expect_error(self, dralloc: Invoke, *argv: str) -> str:
        run = dralloc("allocate", *argv)
        assert (run.code, run.out) == (2, ""), run
        assert run.err.startswith("error: ") and run.err.endswith("\n")
        return run.err

    def test_unknown_claim(self, dralloc: Invoke, cluster: str) -> None:
        """--claim naming a claim that is not in the input: exit 2, naming it."""
        err = self.expect_error(dralloc, "-f", cluster, "--claim", "ml/nope")
        assert err == "error: --claim ml/nope: no ResourceClaim ml/nope in the input\n"

    def test_claim_already_allocated(self, dralloc: Invoke, cluster: str) -> None:
        """--claim naming an allocated claim: exit 2, naming the claim and status.allocation."""
        err = self.expect_error(dralloc, "-f", cluster, "--claim", "old")
        assert err == "error: ResourceClaim default/old: status.allocation: already allocated\n"

    def test_unknown_node(self, dralloc: Invoke, cluster: str) -> None:
        """--node naming a node that is not in the input: exit 2."""
        assert self.expect_error(dralloc, "-f", cluster, "--node", "zz") == "error: --node zz: no Node zz in the input\n"

    def test_unknown_feature_gate(self, dralloc: Invoke, cluster: str) -> None:
        """An unknown feature gate: exit 2, naming the gate."""
        err = self.expect_error(dralloc, "-f", cluster, "--features", "DRANoSuchThing=true")
        assert err.startswith("error: --features: unknown feature gate(s) DRANoSuchThing")

    def test_known_feature_gate_accepted(self, dralloc: Invoke, cluster: str) -> None:
        """Known gates set to true or false are accepted."""
        assert dralloc("allocate", "-f", cluster, "--claim", "one", "--features",
                       "DRAAdminAccess=false,DRAPrioritizedList=true").code == 0

    def test_malformed_feature_gate(self, dralloc: Invoke, cluster: str) -> None:
        """A gate without =true/=false: exit 2."""
        assert "DRAAdminAccess" in self.expect_error(dralloc, "-f", cluster, "--features", "DRAAdminAccess")

    def test_malformed_yaml_names_the_file(self, dralloc: Invoke, tmp_path: pathlib.Path) -> None:
        """YAML that does not parse: exit 2, the message names the file."""
        path = tmp_path / "broken.yaml"
        path.write_text("kind: [List\n")
        assert self.expect_error(dralloc, "-f", str(path)).startswith(f"error: {path}: malformed YAML/JSON: ")

    def test_missing_file(self, dralloc: Invoke, tmp_path: pathlib.Path) -> None:
        """A file that cannot be read: exit 2, naming it."""
        path = tmp_path / "absent.yaml"
        assert self.expect_error(dralloc, "-f", str(path)).startswith(f"error: {path}: cannot read: ")

    def test_malformed_object_names_kind_name_and_field(self, dralloc: Invoke, tmp_path: pathlib.Path) -> None:
        """An object of the wrong shape: exit 2, naming the file, kind, name and field path."""
        bad = slice_("bad-slice", devices=[{"name": "d0", "capacity": {"memory": {"value": "lots"}}}])
        path = documents(tmp_path / "c.yaml", [GPU_CLASS, bad])
        err = self.expect_error(dralloc, "-f", path)
        assert err.startswith(f"error: {path}: ResourceSlice bad-slice: spec.devices[0].capacity.memory.value: ")

    def test_malformed_claim_names_namespace(self, dralloc: Invoke, tmp_path: pathlib.Path) -> None:
        """A namespaced object of the wrong shape is named namespace/name."""
        bad = claim("x", namespace="ml").raw() | {"spec": {"devices": {"requests": "gpu"}}}
        path = documents(tmp_path / "c.yaml", [*CLUSTER, bad])
        assert self.expect_error(dralloc, "-f", path).startswith(
            f"error: {path}: ResourceClaim ml/x: spec.devices.requests: ")

    def test_unknown_device_class(self, dralloc: Invoke, tmp_path: pathlib.Path) -> None:
        """A request for a DeviceClass not in the input: exit 2, naming the claim, request and class."""
        path = documents(tmp_path / "c.yaml", [*CLUSTER, claim("x", namespace="ml").request("gpus", "tpu")])
        err = self.expect_error(dralloc, "-f", path)
        assert "claim ml/x, request gpus" in err and "tpu" in err

    def test_a_device_class_typo_gets_a_did_you_mean(self, dralloc: Invoke, tmp_path: pathlib.Path) -> None:
        """A request for "gpus" where the class is "gpu": upstream's message, then the class it was probably
        meant to name (issue 32); nothing is suggested for a name like none of them."""
        path = documents(tmp_path / "c.yaml", [*CLUSTER, claim("x", namespace="ml").request("gpus", "gpus")])
        assert self.expect_error(dralloc, "-f", path) == (
            "error: claim ml/x, request gpus: could not retrieve device class gpus: "
            "deviceclass.resource.k8s.io \"gpus\" not found (did you mean 'gpu'?)\n")
        path = documents(tmp_path / "d.yaml", [*CLUSTER, claim("x", namespace="ml").request("gpus", "fpga-card")])
        assert self.expect_error(dralloc, "-f", path).endswith('"fpga-card" not found\n')

    def test_without_claim_a_bad_claim_is_left_out_and_named_not_failing_the_others(
            self, dralloc: Invoke, tmp_path: pathlib.Path) -> None:
        """Every pending claim is allocated together when no --claim is given: one naming a class that does
        not exist is left out, named on stderr, and the run exits 2; the others get their answer (issue 32:
        the one bad claim failed the whole run)."""
        bad = claim("bad", namespace="ml").request("gpus", "fpga-card")
        path = documents(tmp_path / "c.yaml", [*CLUSTER, ONE, bad])
        run = dralloc("allocate", "-f", path)
        assert run.code == 2
        assert run.out.splitlines()[0] == "STATUS: allocated  NODE: node-a"
        assert run.err == ('error: claim ml/bad, request gpus: could not retrieve device class fpga-card: '
                           'deviceclass.resource.k8s.io "fpga-card" not found (left out: the other claims were '
                           'decided without it)\n')
        run = dralloc("allocate", "-f", path, "-o", "json")
        answer = json.loads(run.out)
        assert (answer["status"], [c["name"] for c in answer["claims"]]) == ("allocated", ["one"])
        assert [entry["claim"] for entry in answer["invalid"]] == ["ml/bad"]
        # Named with --claim, the claims are allocated together or not at all: the bad one is the answer.
        assert self.expect_error(dralloc, "-f", path, "--claim", "one", "--claim", "ml/bad").startswith(
            "error: claim ml/bad, request gpus: could not retrieve device class fpga-card")

    def test_more_claims_together_than_the_search_can_take_is_said_plainly(
            self, dralloc: Invoke, tmp_path: pathlib.Path) -> None:
        """1,100 one-GPU claims on a node of 1,100 GPUs, allocated together by default: the search goes a
        level deeper per device, past Python's recursion limit; exit 2 with what to do, no traceback."""
        count = 1100
        path = documents(tmp_path / "c.yaml", [
            GPU_CLASS, node("node-a"),
            slice_("s", pool="node-a", node="node-a", devices=[device(f"gpu-{i}") for i in range(count)]),
            *(claim(f"c{i}").request("gpu", "gpu") for i in range(count))])
        assert self.expect_error(dralloc, "-f", path).startswith(
            f"error: {count} claims allocated together are more than dralloc's search takes at once")

    def test_duplicate_node(self, dralloc: Invoke, tmp_path: pathlib.Path) -> None:
        """Two Nodes with one name: exit 2 (the answer would depend on file order)."""
        path = documents(tmp_path / "c.yaml", [*CLUSTER, node("node-a"), ONE])
        assert self.expect_error(dralloc, "-f", path) == \
            "error: Node node-a: metadata.name: duplicate object in the input\n"

    def test_no_nodes_at_all(self, dralloc: Invoke, tmp_path: pathlib.Path) -> None:
        """No Node objects and no slice naming a node: exit 2, asking for --node."""
        path = documents(tmp_path / "c.yaml", [GPU_CLASS, slice_("s", node=None, all_nodes=True), ONE])
        assert "pass --node NAME" in self.expect_error(dralloc, "-f", path)

    def test_json_error_document(self, dralloc: Invoke, cluster: str) -> None:
        """With -o json, an input error also prints a JSON document with status error."""
        run = dralloc("allocate", "-f", cluster, "--claim", "nope", "-o", "json")
        assert (run.code, run.json()) == (2, {"status": "error", "node": None, "claims": [], "reasons": [],
                                              "message": "--claim nope: no ResourceClaim default/nope in the input"})

    def test_input_error_as_subprocess(self, cluster: str) -> None:
        """As a subprocess, an input error is exit 2 with the message on stderr and nothing on stdout."""
        run = subprocess_dralloc("allocate", "-f", cluster, "--claim", "nope")
        assert (run.code, run.out, run.err) == (2, "", "error: --claim nope: no ResourceClaim default/nope in the input\n")


class TestReadmeExample:
    def test_big_trainer_does_not_fit(self) -> None:
        """`--claim ml/big-trainer-gpus` on examples/snapshot.yaml prints README's reasons, exit 1."""
        run = subprocess_dralloc("allocate", "-f", "examples/snapshot.yaml", "--claim", "ml/big-trainer-gpus")
        assert (run.code, run.out) == (1, (
            "STATUS: unschedulable\n"
            "  - node gpu-node-1: claim ml/big-trainer-gpus, request gpus: 2 of 4 devices of class gpu usable, "
            "4 needed (removed: 2 in use)\n"
            "  - node gpu-node-2: claim ml/big-trainer-gpus, request gpus: 2 of 4 devices of class gpu usable, "
            "4 needed "
            "(removed: 1 in use, 1 taint not tolerated)\n"))

    def test_trainer_binpack(self) -> None:
        """`--claim ml/trainer-1-gpus --policy binpack` prints README's table, exit 0."""
        run = subprocess_dralloc("allocate", "-f", "examples/snapshot.yaml", "--claim", "ml/trainer-1-gpus",
                                 "--policy", "binpack")
        assert (run.code, run.out) == (0, (
            "STATUS: allocated  NODE: gpu-node-1\n"
            "  ml/trainer-1-gpus  gpus  gpu.dralloc.dev/gpu-node-1/gpu-2\n"
            "  ml/trainer-1-gpus  gpus  gpu.dralloc.dev/gpu-node-1/gpu-3\n"))

    def test_readme_shows_these_commands(self) -> None:
        """README.md still shows exactly these two example commands."""
        readme = (REPO / "README.md").read_text()
        assert "$ .venv/bin/dralloc allocate -f examples/snapshot.yaml --claim ml/big-trainer-gpus\n" in readme
        assert ("$ .venv/bin/dralloc allocate -f examples/snapshot.yaml --claim ml/trainer-1-gpus --policy binpack\n"
                in readme)


def test_output_follows_redirected_stdout(cluster: str) -> None:
    """cli.main writes to the sys.stdout of the moment it runs (contextlib.redirect_stdout works)."""
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(io.StringIO()):
        cli.main(["allocate", "-f", cluster, "--claim", "one", "-o", "json"])
    assert '"status": "allocated"' in buffer.getvalue()


class TestInvalidPoolOnOneNode:
    """A pool that is invalid on one node (a device listed twice across its slices) rules out that node only."""

    @staticmethod
    def _cluster(tmp_path: pathlib.Path) -> str:
        broken = [slice_(f"node-a-gpus-{i}", pool="node-a", node="node-a", slice_count=2,
                         devices=[device("gpu-0")]) for i in range(2)]
        return as_list(tmp_path / "cluster.yaml", [GPU_CLASS, node("node-a"), node("node-b"), *broken,
                                                   gpus("node-b", 1), ONE])

    def test_another_node_is_chosen(self, dralloc: Invoke, tmp_path: pathlib.Path) -> None:
        run = dralloc("allocate", "-f", self._cluster(tmp_path), "-o", "json")
        assert (run.code, picks(run.json())) == (0, [("one", "gpu", "node-b/gpu-0")])

    def test_on_that_node_alone_it_is_the_error(self, dralloc: Invoke, tmp_path: pathlib.Path) -> None:
        run = dralloc("allocate", "-f", self._cluster(tmp_path), "--node", "node-a")
        assert run.code == 2 and "node-a" in run.err and "invalid" in run.err
