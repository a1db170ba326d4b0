"""A real Prometheus scrapes a running dralloc while a scripted scenario runs; every alert fires in its
scenario, and every panel of the dashboard shows data.

The cluster is the sandbox API server (in this process); dralloc is a separate `dralloc run`
process (standalone, `/metrics` on a free loopback port); Prometheus (Debian's package,
installed by the test setup when absent) scrapes it every second with the rules of
manifests-monitoring/monitoring.yaml. The rules are used as shipped except their `for:` durations,
which a copy shortens to FOR (a test cannot wait 15 minutes); the expressions, with their
5-minute rate windows, are unchanged. The scrape target carries the labels the
ServiceMonitor's relabelling gives a dralloc pod (namespace, service, pod), which
`DrallocDown` selects on.

The scenario, in order, each phase waiting (with a generous deadline) for the alert meant
for it to be `firing` in Prometheus's /api/v1/alerts:

1. fill: pods take every GPU, half of a partitioned GPU and a share of a NIC; nothing is pending
   or firing;
2. an unschedulable pod (no GPU left): DrallocPodsUnschedulable;
3. bad claims: a gang (PodGroup) one of whose members has a claim naming a DeviceClass that
   does not exist: DrallocAllocationErrors, DrallocPodsInError (before the fix of issue 16 the
   gang's errors never reached the first); then a single pod with such a claim;
4. a broken GPU: a NoExecute DeviceTaintRule on a GPU in use; its pod is evicted;
5. 409 Conflicts on every claim status write while many pods are placed:
   DrallocApiConflictsHigh (more than one a second over the rule's 5-minute window);
6. claim creates refused by the API server: DrallocClaimCreateFailures, and the pod queued as
   `waiting-for-claim`;
7. a bug: the claim lifecycle's passes raise (the one stand-in for a bug of ours, switched on
   by a file the operator process checks; every other phase is real behaviour):
   DrallocLoopFailing;
8. recovery: faults cleared, the class created, the taint removed: every pod placed, the
   queue empty in Prometheus, the queue alerts resolved;
9. every dashboard query returns data over the run (each metric it names exists, each label
   it groups or matches by occurs with the value it wants), and so does every query README.md
   offers SREs;
10. the operator stopped: DrallocDown.
"""

from __future__ import annotations

import pathlib
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from tests.handlers.conftest import SandboxCluster, wait_for
from tests.monitoring import prometheus

from dralloc.sandbox import ThreadedApiServer
from dralloc.testing import cluster
from dralloc.testing.cluster import crds

Obj = dict[str, Any]
FOR = "5s"
# DrallocDown (`absent(up == 1)`) waits longer: on a loaded 2-core machine a few 1 s scrapes of a
# busy operator can time out, which is not the operator being down (CI saw it fire once while
# the cluster filled). Stopped, the operator misses every scrape, and the alert fires after this.
DOWN_FOR = "20s"
DEADLINE = 150.0  # seconds an alert may take to fire (a rate needs two scrapes, then FOR)
REPO = pathlib.Path(__file__).resolve().parents[2]
# The operator process: `dralloc run`, plus the stand-in for a bug of ours (phase 7): while the
# file argv[1] exists, a claim lifecycle pass raises, as a bug in it would.
LAUNCHER = """
import pathlib, sys
from dralloc import cli
from dralloc.handlers import lifecycle
bug, real = pathlib.Path(sys.argv[1]), lifecycle.run_pass
async def run_pass(rt, **kwargs):
    if bug.exists():
        raise RuntimeError("a bug (the test's stand-in: " + str(bug) + " exists)")
    return await real(rt, **kwargs)
lifecycle.run_pass = run_pass
sys.exit(cli.main(sys.argv[2:]))
"""
GPUS_PER_NODE, FILL_NODES = 2, 3
SPARE_PODS = 24  # the conflict phase's pods, on a node of their own (one device more: phase 6's pod)


class Operator:
    def __init__(self, kubeconfig: pathlib.Path, workdir: pathlib.Path) -> None:
        self.port = prometheus.free_port()
        self.bug = workdir / "bug"
        self.log = workdir / "operator.log"
        self.args = [sys.executable, "-c", LAUNCHER, str(self.bug), "run", "--kubeconfig", str(kubeconfig),
                     "--standalone", "--metrics-port", str(self.port), "--health-port", "0"]
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> Operator:
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(self.args, stdout=log, stderr=subprocess.STDOUT, cwd=REPO)
        return self

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-3000:] if self.log.exists() else ""


def wait(condition: Callable[[], Any], what: str, *, timeout: float = DEADLINE, extra: Callable[[], str] = str) -> Any:
    return wait_for(condition, timeout=timeout, what=what, interval=0.5, extra=extra)


@pytest.fixture
def stack(prometheus_binaries: prometheus.Binaries, tmp_path: pathlib.Path) -> Iterator[tuple[SandboxCluster,
                                                                                                  Operator,
                                                                                                  prometheus.Prometheus]]:
    server = ThreadedApiServer().start()
    operator: Operator | None = None
    try:
        server.kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig")
        sandbox = SandboxCluster(server)
        sandbox.seed(crds())
        operator = Operator(server.kubeconfig, tmp_path).start()
        rules = prometheus.with_for(prometheus.rule_file(),
                                    {a["alert"]: DOWN_FOR if a["alert"] == "DrallocDown" else FOR
                                     for a in prometheus.alerts(prometheus.rule_file())})
        rules_file = prometheus.write_rules(rules, tmp_path / "rules.yaml")
        labels = {"namespace": "dralloc-system", "service": "dralloc-metrics", "pod": "dralloc-0"}
        with prometheus.running(prometheus_binaries.prometheus, tmp_path, targets=[f"127.0.0.1:{operator.port}"],
                                rules=rules_file, labels=labels) as prom:
            yield sandbox, operator, prom
    finally:
        if operator is not None:
            operator.stop()
        server.stop()


def _pod_group(name: str, min_count: int) -> Obj:
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": {"name": name},
            "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}}}


def _member(name: str, template: str, group: str) -> Obj:
    obj = cluster.pod(name, template_name=template)
    obj["spec"]["schedulingGroup"] = {"podGroupName": group}
    return obj


def _class(name: str, driver: str) -> Obj:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]}}


def _partitions_and_nic() -> list[Obj]:
    """A node whose GPU is shared out as two halves (a 40Gi counter set, 20Gi each) and whose NIC allows
    multiple allocations (10G of bandwidth), their classes, and templates for one half and a 2G share:
    what the counter and consumable-capacity panels show."""
    pool = {"name": "node-parts", "generation": 1, "resourceSliceCount": 2}
    halves = [{"name": f"half-{i}", "consumesCounters": [{"counterSet": "gpu-0", "counters": {"memory": {"value": "20Gi"}}}]}
              for i in range(2)]
    nic = {"name": "nic-0", "allowMultipleAllocations": True,
           "capacity": {"bandwidth": {"value": "10G", "requestPolicy": {"default": "1G", "validRange": {"min": "1G"}}}}}
    share = cluster.template("share", device_class="nic")
    share["spec"]["spec"]["devices"]["requests"][0]["exactly"]["capacity"] = {"requests": {"bandwidth": "2G"}}
    return [
        cluster.node("node-parts"), _class("half", "parts.example.com"), _class("nic", "nic.example.com"),
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "parts-counters"},
         "spec": {"driver": "parts.example.com", "nodeName": "node-parts", "pool": pool,
                  "sharedCounters": [{"name": "gpu-0", "counters": {"memory": {"value": "40Gi"}}}]}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "parts-devices"},
         "spec": {"driver": "parts.example.com", "nodeName": "node-parts", "pool": pool, "devices": halves}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "nic"},
         "spec": {"driver": "nic.example.com", "nodeName": "node-parts",
                  "pool": {"name": "node-parts", "generation": 1, "resourceSliceCount": 1}, "devices": [nic]}},
        cluster.template("half", device_class="half"), share,
    ]


def _node_of(sandbox: SandboxCluster, name: str) -> str | None:
    pod = sandbox.get("v1", "Pod", name, sandbox.namespace) or {}
    return (pod.get("spec") or {}).get("nodeName")


def _scalar(prom: prometheus.Prometheus, expr: str) -> float | None:
    result = prom.query(expr)
    return float(result[0]["value"][1]) if result else None


def _firing(prom: prometheus.Prometheus, name: str) -> bool:
    return prom.alert_states().get(name) == "firing"


def _checks(expr: str) -> list[str]:
    """Queries that must each return a series for `expr` to show what it means: every metric it names
    exists, every label it groups by is on one of its metrics, every value it matches occurs."""
    names = sorted(set(re.findall(r"\b(dralloc_\w+)", expr)) | ({"up"} if re.search(r"\bup\s*\{", expr) else set()))
    if not names:
        return []
    selector = "|".join(names)
    out = [f'count({{__name__="{name}"}})' for name in names]
    for group in re.findall(r"\b(?:by|without)\s*\(([^)]*)\)", expr):
        out += [f'count({{__name__=~"{selector}", {label.strip()}!=""}})' for label in group.split(",") if label.strip()]
    for label, op, value in re.findall(r'(\w+)\s*(=~|=)\s*"([^"]*)"', expr):
        if op == "=":
            out.append(f'count({{__name__=~"{selector}", {label}="{value}"}})')
        else:
            out += [f'count({{__name__=~"{selector}", {label}="{v}"}})' for v in value.split("|")]
    return out


def readme_queries() -> list[str]:
    """The PromQL of README.md's ```promql blocks, one query per line or `;`-separated part."""
    text = (REPO / "README.md").read_text()
    blocks = re.findall(r"```promql\n(.*?)```", text, flags=re.S)
    return [part.strip() for block in blocks for line in block.splitlines()
            if line.strip() and not line.lstrip().startswith("#") for part in line.split(";") if part.strip()]


def _has_data(prom: prometheus.Prometheus, expr: str, start: float, end: float) -> bool:
    """Some series of the panel's query has a number (not NaN) somewhere in [start, end]."""
    data = prom.api("query_range", query=expr.replace("$__rate_interval", "1m"), start=f"{start:.3f}",
                    end=f"{end:.3f}", step="2s")
    return any(value != "NaN" for series in data["result"] for _, value in series["values"])


def test_alerts_fire_and_panels_show_data_on_a_live_operator(
        stack: tuple[SandboxCluster, Operator, prometheus.Prometheus]) -> None:
    sandbox, operator, prom = stack
    started = time.time()
    status = lambda: f"alerts: {prom.alert_states()}\noperator log:\n{operator.tail()}"  # noqa: E731
    wait(prom.targets_up, "Prometheus scraping the operator", extra=status)
    fired: dict[str, str] = {}

    def expect(name: str, phase: str) -> None:
        wait(lambda: _firing(prom, name), f"{name} firing ({phase})", extra=status)
        fired[name] = f"{phase} (firing {time.time() - started:.0f}s into the run)"

    # 1. fill: every GPU taken, nothing wrong.
    driver = cluster.DRIVER
    nodes = [f"node-{i}" for i in range(FILL_NODES)]
    sandbox.seed([cluster.gpu_class("gpu"), cluster.template("one"), _class("spare", "spare.example.com")])
    for node in nodes:
        sandbox.seed([cluster.node(node), cluster.gpu_slice(node, GPUS_PER_NODE)])
    sandbox.seed(_partitions_and_nic())
    fill = [f"fill-{i}" for i in range(FILL_NODES * GPUS_PER_NODE)]
    sandbox.seed([cluster.pod(name, template_name="one") for name in fill])
    sandbox.seed([cluster.pod("half", template_name="half"), cluster.pod("share", template_name="share")])
    wait(lambda: all(_node_of(sandbox, p) for p in [*fill, "half", "share"]), "every fill pod bound", extra=status)
    wait(lambda: _scalar(prom, 'max(dralloc_scheduling_queue_pods{state="pending"})') == 0, "the queue empty")
    # A 1 s scrape of the busy operator that times out on a loaded machine makes DrallocDown
    # pending for a moment (its `for:` is there for that; CI saw it once): pending is not firing.
    # Anything firing, or any other alert even pending, is a failure.
    states = prom.alert_states()
    assert {a: s for a, s in states.items() if (a, s) != ("DrallocDown", "pending")} == {}, (
        f"a healthy, full cluster fires nothing: {states}")

    # 2. an unschedulable pod: no GPU is left.
    sandbox.seed([cluster.pod("one-too-many", template_name="one")])
    expect("DrallocPodsUnschedulable", "unschedulable pod")

    # 3. bad claims: a class that does not exist, first for one member of a gang alone (gang decisions
    # are counted apart from single pods': the alert must see them), then for a single pod.
    sandbox.seed([cluster.template("no-class", device_class="no-such-class"), _pod_group("gang", 2)])
    sandbox.seed([_member("gang-0", "one", "gang"), _member("gang-1", "no-class", "gang")])
    expect("DrallocAllocationErrors", "bad claim of a gang member")
    expect("DrallocPodsInError", "bad claim of a gang member")
    sandbox.seed([cluster.claim("bad-claim", device_class="no-such-class")])
    sandbox.seed([cluster.pod("bad-pod", claim_name="bad-claim")])
    wait(lambda: "no-such-class" in str(sandbox.get("v1", "Pod", "bad-pod", sandbox.namespace) or {}),
         "the bad pod's PodScheduled naming the missing class", extra=status)

    # 4. a broken GPU: a NoExecute taint on a device in use evicts its pod.
    sandbox.seed([{"apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule", "metadata": {"name": "broken"},
                   "spec": {"deviceSelector": {"driver": driver, "pool": nodes[0], "device": "gpu-0"},
                            "taint": {"key": "example.com/broken", "value": "true", "effect": "NoExecute"}}}])
    wait(lambda: (_scalar(prom, "sum(dralloc_device_taint_pod_deletions_total)") or 0) >= 1,
         "the pod on the broken GPU evicted", extra=status)

    # 5. conflicts: every claim status write refused with 409 while SPARE_PODS pods are placed.
    sandbox.faults.load("PUT /apis/resource.k8s.io/v1/namespaces/*/resourceclaims/*/status 409; "
                        "PATCH /apis/resource.k8s.io/v1/namespaces/*/resourceclaims/*/status 409")
    spare = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "spare"},
             "spec": {"driver": "spare.example.com", "nodeName": "node-spare",
                      "pool": {"name": "node-spare", "generation": 1, "resourceSliceCount": 1},
                      "devices": [{"name": f"dev-{i}"} for i in range(SPARE_PODS + 1)]}}
    sandbox.seed([cluster.node("node-spare", pods="200"), spare, cluster.template("spare", device_class="spare")])
    sandbox.seed([cluster.pod(f"spare-{i}", template_name="spare") for i in range(SPARE_PODS)])
    expect("DrallocApiConflictsHigh", "409 conflicts")
    sandbox.faults.clear()

    # 6. claim creates refused.
    sandbox.faults.load("POST /apis/resource.k8s.io/v1/namespaces/*/resourceclaims 500 message=refused")
    sandbox.seed([cluster.pod("no-claim-yet", template_name="spare")])
    expect("DrallocClaimCreateFailures", "claim creates refused")
    wait(lambda: (_scalar(prom, 'max(dralloc_scheduling_queue_pods{state="waiting-for-claim"})') or 0) >= 1,
         "the pod queued as waiting for its claim", extra=status)
    sandbox.faults.clear()

    # 7. a bug in a loop.
    operator.bug.touch()
    expect("DrallocLoopFailing", "lifecycle passes raising")
    operator.bug.unlink()

    # 8. recovery: the GPU repaired, three fill pods done (room for the bad pod and the gang), the class created.
    sandbox.request("DELETE", "/apis/resource.k8s.io/v1/devicetaintrules/broken")
    for name in fill[-3:]:
        sandbox.request("DELETE", f"/api/v1/namespaces/{sandbox.namespace}/pods/{name}")
    sandbox.seed([cluster.gpu_class("no-such-class")])
    for name in ("one-too-many", "bad-pod"):
        wait(lambda name=name: _node_of(sandbox, name), f"{name} placed after recovery", extra=status)
    wait(lambda: all(_node_of(sandbox, p) for p in ("gang-0", "gang-1", "no-claim-yet")),
         "the gang and the late pod placed", extra=status)
    wait(lambda: _scalar(prom, 'max(dralloc_scheduling_queue_pods{state=~"unschedulable|error|backoff"})') == 0,
         "an empty queue in Prometheus", extra=status)
    wait(lambda: not {"DrallocPodsUnschedulable", "DrallocPodsInError"} & set(prom.alert_states()),
         "the queue alerts resolved", extra=status)

    # 9. the dashboard: every panel's queries.
    end = time.time()
    dead = [f"{title}: {expr}" for title, expr in prometheus.dashboard_queries() if not _has_data(prom, expr, started, end)]
    assert not dead, "panels without data:\n" + "\n".join(dead)
    missing = [f"{title}: {check}" for title, expr in prometheus.dashboard_queries() for check in _checks(expr)
               if not prom.query(check)]
    assert not missing, "metrics or labels the panels name that Prometheus never saw:\n" + "\n".join(missing)

    # The queries README.md offers SREs: each parses and has answered during the run.
    silent = [q for q in readme_queries() if not _has_data(prom, q, started, end)]
    assert not silent, "README queries without an answer:\n" + "\n".join(silent)

    # 10. the operator gone.
    operator.stop()
    expect("DrallocDown", "operator stopped")
    assert set(fired) == {a["alert"] for a in prometheus.alerts(prometheus.rule_file())}
    print("\n".join(f"{name}: fired in phase '{phase}'" for name, phase in fired.items()))


def test_readme_has_queries_to_check() -> None:
    assert len(readme_queries()) >= 8 and all("dralloc_" in q for q in readme_queries())


def test_the_panel_checks_catch_a_typo() -> None:
    """The label and metric checks find a misspelt label, label value and metric name."""
    checks = _checks('sum by (stat) (dralloc_scheduling_queue_pods{state="unschedulabel"}) + dralloc_nope_total')
    assert 'count({__name__="dralloc_nope_total"})' in checks
    assert any('stat!=""' in c for c in checks) and any('state="unschedulabel"' in c for c in checks)

