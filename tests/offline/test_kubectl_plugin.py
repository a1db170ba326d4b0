"""`kubectl dralloc status` and `kubectl dralloc why POD` against a live API server (the sandbox).

The plugin is run as kubectl runs it: the `kubectl-dralloc` executable the package installs,
found on PATH by `kubectl dralloc ...` (when kubectl is installed; else called directly).
The cluster: two nodes of two GPUs each, one GPU of node-a allocated to a bound pod; a
pending pod that wants two GPUs (it fits only on node-b), one that wants three (it fits
nowhere) and one whose claim names a class that does not exist.
"""

from __future__ import annotations

import io
import json
import os
import pathlib
import shutil
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from dralloc import plugin as plugin_module
from dralloc.allocation.features import Features
from dralloc.model import conversion, pods
from dralloc.offline import inputs
from dralloc.sandbox import ThreadedApiServer
from dralloc.testing import cluster

Obj = dict[str, Any]
BIN = pathlib.Path(sys.executable).parent
PLUGIN = BIN / "kubectl-dralloc"
KUBECTL = shutil.which("kubectl")
NAMESPACE = "team-a"


def _allocated_claim(name: str, node: str, device: str, pod: Obj) -> Obj:
    claim = cluster.claim(name, namespace_=NAMESPACE)
    claim["status"] = {
        "allocation": {"devices": {"results": [{"request": "gpu", "driver": cluster.DRIVER, "pool": node,
                                                "device": device}]},
                       "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                           {"key": "metadata.name", "operator": "In", "values": [node]}]}]}},
        "reservedFor": [{"resource": "pods", "name": pod["metadata"]["name"], "uid": pod["metadata"]["uid"]}],
    }
    return claim


@pytest.fixture(scope="module")
def kubeconfig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[pathlib.Path]:
    server = ThreadedApiServer().start()
    try:
        path = server.write_kubeconfig(tmp_path_factory.mktemp("plugin") / "kubeconfig")
        server.seed([cluster.namespace(NAMESPACE), cluster.gpu_class("gpu"),
                     cluster.node("node-a"), cluster.gpu_slice("node-a", 2),
                     cluster.node("node-b"), cluster.gpu_slice("node-b", 2),
                     cluster.template("two", count=2, namespace_=NAMESPACE),
                     cluster.template("three", count=3, namespace_=NAMESPACE),
                     cluster.template("nowhere", namespace_=NAMESPACE, device_class="no-such-class")])
        busy = cluster.pod("busy", claim_name="busy-gpu", namespace_=NAMESPACE, scheduler=None)
        busy["spec"]["nodeName"] = "node-a"
        (busy,) = server.seed([busy])
        server.seed([_allocated_claim("busy-gpu", "node-a", "gpu-0", busy),
                     cluster.pod("wants-two", template_name="two", namespace_=NAMESPACE),
                     cluster.pod("wants-three", template_name="three", namespace_=NAMESPACE),
                     cluster.pod("bad-class", template_name="nowhere", namespace_=NAMESPACE)])
        member = cluster.pod("trainer-0", template_name="two", namespace_=NAMESPACE)
        member["spec"]["schedulingGroup"] = {"podGroupName": "training"}
        member["status"] = {"conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                            "message": "gang of 4 does not fit: 2 members wait for devices"}]}
        server.seed([member])
        pinned = cluster.pod("pinned", template_name="two", namespace_=NAMESPACE, scheduler=None)
        pinned["spec"]["nodeSelector"] = {"kubernetes.io/hostname": "node-b"}
        pinned["metadata"]["annotations"] = {pods.PINNED_NODE_ANNOTATION: "node-b"}  # as dralloc pins
        pinned["status"] = {"conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                            "message": "0/2 nodes are available: 1 node(s) didn't match pod "
                                                       "anti-affinity rules."}]}
        server.seed([pinned])
        queued = cluster.pod("queued", template_name="two", namespace_=NAMESPACE, scheduler=None,
                             gate="dralloc.io/allocate")
        queued["spec"]["schedulingGates"].append({"name": "kueue.x-k8s.io/admission"})
        server.seed([cluster.pod("someone-elses", template_name="two", namespace_=NAMESPACE, scheduler=None),
                     queued])
        yield path
    finally:
        server.stop()


def plugin(kubeconfig: pathlib.Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`kubectl dralloc ARGS` (kubectl finds the plugin on PATH), or the plugin itself without kubectl."""
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", "KUBECONFIG": str(kubeconfig)}
    command = [KUBECTL, "dralloc", *args] if KUBECTL else [str(PLUGIN), *args]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)


def test_the_package_installs_the_plugin_executable() -> None:
    assert PLUGIN.is_file() and os.access(PLUGIN, os.X_OK)


def test_status_reports_use_and_fragmentation_per_class(kubeconfig: pathlib.Path) -> None:
    done = plugin(kubeconfig, "-o", "json", "status")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    gpu = report["utilization"]["classes"]["gpu"]
    assert (gpu["devices"], gpu["inUse"], gpu["percent"]) == (4, 1, 25.0)
    pools = report["utilization"]["pools"]
    assert {name: (p["devices"], p["inUse"]) for name, p in pools.items()} == {
        f"{cluster.DRIVER}/node-a": (2, 1), f"{cluster.DRIVER}/node-b": (2, 0)}
    # One free GPU on node-a, two on node-b: two nodes take 1, one node takes 2, none 4.
    assert report["fragmentation"]["gpu"] == {"1": 2, "2": 1, "4": 0, "8": 0}


def test_status_table_reads_like_simulate(kubeconfig: pathlib.Path) -> None:
    done = plugin(kubeconfig, "status")
    assert done.returncode == 0, done.stderr
    assert "utilization per class:" in done.stdout
    assert "gpu  1 / 4 devices in use  (25%)" in done.stdout
    assert "nodes that can still take N devices of a class:" in done.stdout


def test_why_a_pod_that_fits_names_its_node(kubeconfig: pathlib.Path) -> None:
    done = plugin(kubeconfig, "-o", "json", "why", "wants-two", "-n", NAMESPACE)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert (answer["status"], answer["node"]) == ("fits", "node-b")
    assert sorted(answer["devices"]) == [f"{cluster.DRIVER}/node-b/gpu-0", f"{cluster.DRIVER}/node-b/gpu-1"]


def test_why_a_pod_that_fits_nowhere_gives_the_reasons_per_node(kubeconfig: pathlib.Path) -> None:
    done = plugin(kubeconfig, "why", "wants-three", "--namespace", NAMESPACE)
    assert done.returncode == 1, done.stderr
    assert f"pod {NAMESPACE}/wants-three fits nowhere: 0/2 nodes are available" in done.stdout
    assert "node-a" in done.stdout and "node-b" in done.stdout and "request gpu" in done.stdout


def test_why_a_bound_pod_shows_its_devices(kubeconfig: pathlib.Path) -> None:
    done = plugin(kubeconfig, "why", "busy", "-n", NAMESPACE)
    assert done.returncode == 0, done.stderr
    assert "is bound to node node-a" in done.stdout
    assert f"busy-gpu: {cluster.DRIVER}/node-a/gpu-0" in done.stdout


def test_why_a_pod_with_a_bad_class_names_claim_and_class(kubeconfig: pathlib.Path) -> None:
    done = plugin(kubeconfig, "why", "bad-class", "-n", NAMESPACE)
    assert done.returncode == 2
    assert "no-such-class" in done.stderr and "request gpu" in done.stderr


def test_why_an_unknown_pod_is_an_error_naming_it(kubeconfig: pathlib.Path) -> None:
    done = plugin(kubeconfig, "why", "no-such-pod", "-n", NAMESPACE)
    assert done.returncode == 2
    assert f"pod {NAMESPACE}/no-such-pod: not found" in done.stderr


def test_an_unreachable_cluster_is_an_error_naming_it(tmp_path: pathlib.Path) -> None:
    config = tmp_path / "kubeconfig"
    config.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "gone",
        "clusters": [{"name": "gone", "cluster": {"server": "http://127.0.0.1:9"}}],
        "contexts": [{"name": "gone", "context": {"cluster": "gone", "user": "u"}}],
        "users": [{"name": "u", "user": {"token": "x"}}]}))
    done = plugin(config, "status")
    assert done.returncode == 2
    assert "127.0.0.1:9" in done.stderr


def test_why_a_gang_member_names_its_pod_group_and_the_last_gang_decision(kubeconfig: pathlib.Path) -> None:
    """The member fits alone (node-b), but it is placed with its gang: the answer says so and shows
    the decision dralloc recorded on the pod."""
    done = plugin(kubeconfig, "-o", "json", "why", "trainer-0", "-n", NAMESPACE)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert (answer["status"], answer["podGroup"]) == ("fits", "training")
    assert answer["gangDecision"] == "gang of 4 does not fit: 2 members wait for devices"
    text = plugin(kubeconfig, "why", "trainer-0", "-n", NAMESPACE).stdout
    assert "member of PodGroup training: placed with its gang, all members or none" in text
    assert "last gang decision: gang of 4 does not fit" in text


def test_why_a_pinned_pod_its_scheduler_refuses_reports_that_scheduler_s_blocker(kubeconfig: pathlib.Path) -> None:
    """Gate mode: once ungated and pinned, the pod is kube-scheduler's to bind; when kube-scheduler refuses it,
    that is the blocker, not whether dralloc would find a node now (it used to say "fits now")."""
    done = plugin(kubeconfig, "why", "pinned", "-n", NAMESPACE)
    assert done.returncode == 1, done.stderr
    text = done.stdout
    assert ("is waiting for default-scheduler, which refuses it on node node-b, where dralloc pinned it: "
            "0/2 nodes are available: 1 node(s) didn't match pod anti-affinity rules.") in text
    assert "fits now" not in text


def test_why_a_pod_dralloc_does_not_place_says_so_not_where_it_would_fit(kubeconfig: pathlib.Path) -> None:
    """No schedulerName dralloc, no dralloc gate: the pod is its own scheduler's (it used to say "fits now")."""
    done = plugin(kubeconfig, "why", "someone-elses", "-n", NAMESPACE)
    assert done.returncode == 0, done.stderr
    assert ("is not dralloc's to place: its schedulerName is default-scheduler and it has no dralloc.io/allocate "
            "scheduling gate") in done.stdout
    assert "fits now" not in done.stdout
    mine = plugin(kubeconfig, "-o", "json", "why", "someone-elses", "-n", NAMESPACE, "--scheduler-name",
                  "default-scheduler")
    assert json.loads(mine.stdout)["status"] == "fits"  # dralloc run --scheduler-name default-scheduler


def test_why_a_pod_another_gate_holds_names_the_gate(kubeconfig: pathlib.Path) -> None:
    """Gate mode with Kueue's gate still on: dralloc allocates nothing before it goes; `why` says so (exit 1:
    the pod goes nowhere now)."""
    done = plugin(kubeconfig, "why", "queued", "-n", NAMESPACE)
    assert done.returncode == 1, done.stderr
    assert ("is held by scheduling gate(s) kueue.x-k8s.io/admission: dralloc allocates its devices once "
            "dralloc.io/allocate is its only scheduling gate; nothing is allocated for it before") in done.stdout


def test_why_a_nominated_pod_names_its_node_and_the_victims_still_terminating() -> None:
    """Priority preemption made room on node-a: `why` says the pod is nominated there and which pods removed
    for it are still terminating (not the node's other pods, nor pods merely being deleted)."""
    def parsed(raw: Obj) -> pods.Pod:
        found: pods.Pod = conversion.parse_as(pods.Pod, raw)
        return found

    preempted = {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}
    victim = cluster.pod("victim", scheduler=None)
    victim["spec"]["nodeName"] = "node-a"
    victim["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    victim["status"] = {"conditions": [preempted]}
    leaving = cluster.pod("leaving", scheduler=None)
    leaving["spec"]["nodeName"] = "node-a"
    leaving["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    waiting = cluster.pod("important")
    waiting["status"] = {"nominatedNodeName": "node-a"}
    snapshot = inputs.Cluster()
    for raw in (cluster.node("node-a", cpu="1"), victim, leaving, waiting):
        snapshot.add(conversion.parse(raw) if raw["kind"] != "Pod" else parsed(raw))
    answer = plugin_module.why(snapshot, "default", "important", Features())
    assert (answer["nominated"], answer["preempting"]) == ("node-a", ["default/victim"])
    out = io.StringIO()
    plugin_module.print_why(answer, out)
    assert ("nominated to node node-a by priority preemption; 1 pod(s) removed for it are still terminating: "
            "default/victim") in out.getvalue()


# Flags before or after the command, as kubectl users type them. KUBECONFIG stands for the sandbox's
# kubeconfig: the run is in-process (`plugin.main`), so --kubeconfig is a flag like the others.
KUBECONFIG = "<kubeconfig>"


def run_main(kubeconfig: pathlib.Path, args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = plugin_module.main([a.replace(KUBECONFIG, str(kubeconfig)) for a in args], out=out, err=err)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("args", [
    ["--kubeconfig", KUBECONFIG, "-n", NAMESPACE, "-o", "json", "why", "wants-two"],
    ["-n", NAMESPACE, "why", "wants-two", "-o", "json", "--kubeconfig", KUBECONFIG],
    ["why", "-n", NAMESPACE, "-o", "json", "--kubeconfig", KUBECONFIG, "wants-two"],
    ["why", "wants-two", "-n", NAMESPACE, "-o", "json", "--kubeconfig", KUBECONFIG],
    ["-o", "json", "--kubeconfig", KUBECONFIG, "why", "wants-two", "--namespace", NAMESPACE],
    [f"--namespace={NAMESPACE}", "why", "--output=json", "wants-two", f"--kubeconfig={KUBECONFIG}"],
])
def test_namespace_and_output_flags_are_accepted_before_and_after_the_subcommand(
        kubeconfig: pathlib.Path, args: list[str]) -> None:
    code, out, err = run_main(kubeconfig, args)
    assert code == 0, err
    answer = json.loads(out)
    assert (answer["pod"], answer["status"], answer["node"]) == (f"{NAMESPACE}/wants-two", "fits", "node-b")


@pytest.mark.parametrize("args", [
    ["-o", "json", "--kubeconfig", KUBECONFIG, "status"],
    ["status", "-o", "json", "--kubeconfig", KUBECONFIG],
    ["--kubeconfig", KUBECONFIG, "status", "--output", "json"],
    ["--output=json", "status", f"--kubeconfig={KUBECONFIG}", "--kubernetes-version", "1.37"],
])
def test_status_takes_output_and_cluster_flags_before_and_after_the_subcommand(
        kubeconfig: pathlib.Path, args: list[str]) -> None:
    code, out, err = run_main(kubeconfig, args)
    assert code == 0, err
    gpu = json.loads(out)["utilization"]["classes"]["gpu"]
    assert (gpu["devices"], gpu["inUse"]) == (4, 1)


def test_a_flag_given_after_the_subcommand_wins_over_the_same_flag_before_it(kubeconfig: pathlib.Path) -> None:
    code, out, err = run_main(kubeconfig, ["-o", "json", "--kubeconfig", KUBECONFIG, "status", "-o", "table"])
    assert code == 0, err
    assert "utilization per class:" in out  # the table, not JSON
    code, out, err = run_main(kubeconfig, ["-n", "elsewhere", "-o", "table", "--kubeconfig", KUBECONFIG,
                                           "why", "wants-two", "-n", NAMESPACE, "-o", "json"])
    assert code == 0, err
    assert json.loads(out)["pod"] == f"{NAMESPACE}/wants-two"


@pytest.mark.parametrize(("argv", "expected"), [
    # Nothing given: the documented defaults.
    (["why", "p"], {"namespace": "default", "output": "table", "kubeconfig": None, "context": None,
                    "features": "", "kubernetes_version": "1.37",
                    "scheduler_name": plugin_module.DEFAULT_SCHEDULER, "gate": plugin_module.DEFAULT_GATE}),
    (["status"], {"output": "table", "kubeconfig": None, "context": None, "features": "",
                  "kubernetes_version": "1.37"}),
    # Given before the command only: not overwritten by the command's defaults.
    (["-n", "a", "-o", "json", "--context", "c", "--scheduler-name", "s", "--gate", "g", "why", "p"],
     {"namespace": "a", "output": "json", "context": "c", "scheduler_name": "s", "gate": "g"}),
    (["--kubeconfig", "k", "--features", "X=true", "--kubernetes-version", "1.38", "status"],
     {"kubeconfig": "k", "features": "X=true", "kubernetes_version": "1.38"}),
    # Given on both sides: the one after the command wins.
    (["-n", "a", "--context", "c1", "--gate", "g1", "why", "p", "-n", "b", "--context", "c2", "--gate", "g2"],
     {"namespace": "b", "context": "c2", "gate": "g2"}),
    (["--kubernetes-version", "1.36", "status", "--kubernetes-version", "1.38"], {"kubernetes_version": "1.38"}),
])
def test_parsed_flags_have_one_meaning_wherever_they_are_given(argv: list[str], expected: dict[str, Any]) -> None:
    args = plugin_module.parse_args(argv)
    assert {key: getattr(args, key) for key in expected} == expected
    if args.command == "status":
        assert not hasattr(args, "namespace")


@pytest.mark.parametrize("argv", [["-o", "yaml", "status"], ["status", "-o", "yaml"],
                                  ["why", "p", "--output", "yaml"]])
def test_a_bad_output_value_is_refused_naming_the_flag(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        plugin_module.parse_args(argv)
    assert exited.value.code == 2
    assert "argument -o/--output: invalid choice: 'yaml'" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["-n", "a", "status"], ["status", "-n", "a"], ["--gate", "g", "status"]])
def test_why_only_flags_with_status_are_refused_naming_the_flag(
        argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """status reports the whole cluster: a namespace there would be ignored, so it is refused, not dropped."""
    with pytest.raises(SystemExit) as exited:
        plugin_module.parse_args(argv)
    assert exited.value.code == 2
    message = capsys.readouterr().err
    assert ("-n/--namespace" if "-n" in argv else "--gate") in message and "why" in message


def test_help_says_flags_go_before_or_after_the_command(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["--help"], ["status", "--help"], ["why", "--help"]):
        with pytest.raises(SystemExit):
            plugin_module.parse_args(argv)
    top, status_help, why_help = capsys.readouterr().out.split("usage:")[1:]
    assert "before or after the command" in top and "-n NAMESPACE" in top and "-o {table,json}" in top
    assert "-o {table,json}" in status_help and "--namespace" not in status_help
    assert "-n NAMESPACE, --namespace NAMESPACE" in why_help and "-o {table,json}" in why_help
