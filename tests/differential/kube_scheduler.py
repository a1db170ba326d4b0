"""Differential testing against kube-scheduler itself, on a real cluster (`make e2e-differential`).

    python -m tests.differential.kube_scheduler [-n N] [--seed S] [--batch B] [--out DIR]
                                                [--timeout T] [--only I,J,...] [--per-node] [-v]

(with KUBECONFIG set: `e2e/controlplane.py run -- ...` does that; the Makefile target runs it
so). Scenarios come from tests/differential/kube_scheduler_scenarios.py (`scenario(S, i)`, a
pure function of the seed and the index). Each is instantiated three times side by side, every
copy in its own namespace on its own nodes (see that module for why they cannot see one another):

  k  its pending pod has the default schedulerName: kube-scheduler decides;
  d  its pending pod has `schedulerName: dralloc`: dralloc (in this process, restricted to the
     d namespaces) decides;
  p  once dralloc has bound its pod to node n<j>, the same pod for kube-scheduler, asking for the
     extended resource only the p copy of n<j> advertises (`pin.dralloc.io/n<j>`): kube-scheduler
     must accept dralloc's node. A copy of its own, not the k twin: once kube-scheduler has
     placed the k pod there, that pod changes what the filters see (ports, anti-affinity, spread).

With `--per-node`, each node n<j> of a scenario also gets two copies of its own, k<j> and d<j>,
whose pending pods ask for n<j>'s pin resource: both schedulers judge every node alone, and must
agree on each (a node dralloc wrongly refuses shows here even when another node takes the pod).

The pods already there are created bound; the pending pods are created once every node is
ready (the API server's not-ready taint gone). A pod's verdict is "bound" (spec.nodeName) or
"unschedulable" (PodScheduled=False, reason Unschedulable), read once no verdict has changed
for `settle` seconds (a scheduler may retry a pod it found unschedulable). A verdict difference:
one side binds and the other finds the pod unschedulable, kube-scheduler refuses the node dralloc
chose, they disagree on one node alone (--per-node), or a pod got no verdict in time. Scenarios
run in batches (every batch one RealCluster scope of tests/handlers/realcluster.py and one
dralloc operator for its d namespaces).

Prints `N scenarios, K verdict differences` (and how many of each kind); each difference is
saved as DIR/<seed>/s<index>.yaml (default DIR: out/kube-scheduler-differential, git-ignored):
the scenario (with its `$` placeholders), both verdicts with their messages, the pinned pod's,
and the pending pod dralloc got. `--only 3,17` reruns those scenarios of the seed. Exit status 1
when there is a difference.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import dataclasses
import datetime
import logging
import os
import pathlib
import random
import re
import secrets
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import yaml
from tests.differential import kube_scheduler_scenarios as scenarios
from tests.handlers import realcluster

from dralloc.running import OperatorThread
from dralloc.testing.cluster import crds
from dralloc.testing.settings import run_settings

Obj = dict[str, Any]
ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "out" / "kube-scheduler-differential"
NOT_READY_TAINTS = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")
SIDES = ("k", "d", "p")
log = logging.getLogger(__name__)


@dataclasses.dataclass
class Verdict:
    kind: str = "undecided"  # bound, unschedulable, undecided; refused: the API server refused the pod
    node: str | None = None  # the scenario's node name (n0, ...) when bound
    message: str = ""
    at: float = 0.0  # seconds after the pending pods were created

    def summary(self) -> Obj:
        found: Obj = {"verdict": self.kind}
        if self.node:
            found["node"] = self.node
        if self.message:
            found["message"] = self.message
        found["seconds"] = round(self.at, 1)
        return found


@dataclasses.dataclass
class Outcome:
    scenario: Obj
    kube_scheduler: Verdict
    dralloc: Verdict
    pinned: Verdict | None = None  # kube-scheduler on dralloc's node (when dralloc bound)
    dralloc_pod: Obj | None = None
    # --per-node: node name -> (kube-scheduler's, dralloc's) verdict on the pod pinned to that node
    per_node: dict[str, tuple[Verdict, Verdict]] = dataclasses.field(default_factory=dict)
    # Where both refused: a reason in kube-scheduler's words dralloc gave for one of its nodes that
    # kube-scheduler's message does not have ("n1: Insufficient cpu"); see `reason_differences`.
    reasons: list[str] = dataclasses.field(default_factory=list)

    @property
    def difference(self) -> str | None:
        """None, or which kind of difference this is."""
        k, d = self.kube_scheduler.kind, self.dralloc.kind
        if "refused" in (k, d):
            return "the API server refused the pending pod (a generator bug)"
        if "undecided" in (k, d):
            return "undecided"
        if k != d:
            return f"kube-scheduler {k}, dralloc {d}"
        if d == "bound" and (self.pinned is None or self.pinned.kind != "bound"):
            return "kube-scheduler refuses dralloc's node"
        for k_node, d_node in self.per_node.values():
            if "refused" in (k_node.kind, d_node.kind):
                return "the API server refused the pending pod (a generator bug)"
            if k_node.kind != d_node.kind:
                return f"on one node: kube-scheduler {k_node.kind}, dralloc {d_node.kind}"
        return None

    def node_differences(self) -> list[str]:
        return sorted(n for n, (k, d) in self.per_node.items() if k.kind != d.kind)

    def record(self) -> Obj:
        found: Obj = {"difference": self.difference, "kube-scheduler": self.kube_scheduler.summary(),
                      "dralloc": self.dralloc.summary()}
        if self.pinned is not None:
            found["kube-scheduler on dralloc's node"] = self.pinned.summary()
        for node in self.node_differences():
            k, d = self.per_node[node]
            found[f"pinned to {node}"] = {"kube-scheduler": k.summary(), "dralloc": d.summary()}
        if self.per_node:
            found["pinned, agreed"] = {n: k.kind for n, (k, d) in sorted(self.per_node.items()) if k.kind == d.kind}
        if self.reasons:
            found["reasons kube-scheduler did not give"] = list(self.reasons)
        found["scenario"] = self.scenario
        if self.dralloc_pod is not None:
            found["dralloc's pending pod"] = self.dralloc_pod
        return found


_COUNTED = re.compile(r"^\d+ ")
# What every other twin's node fails first (NodeUnschedulable, TaintToleration, NodeAffinity run before
# the rest): these say nothing about a scenario's own nodes.
ANY_TWIN = ("node(s) were unschedulable", "node(s) had untolerated taint(s)",
            "node(s) didn't match Pod's node affinity/selector")


def reasons(message: str) -> list[str]:
    """The reasons of a scheduler's "0/N nodes are available: A, B." message without their counts
    (the preemption part left out)."""
    head = message.split(" preemption:")[0].partition("available: ")[2].rstrip(".")
    return [_COUNTED.sub("", part.strip()) for part in head.split(", ") if part.strip()]


# The reasons dralloc words as kube-scheduler does (nodefit, nodeports, the volume and inter-pod filters);
# its device explanations are its own (kube-scheduler's DynamicResources says "cannot allocate all claims").
KUBE_WORDED = ("node(s) ", "Insufficient ", "Too many pods", "pvc(s) ")


def dralloc_node_reasons(message: str) -> dict[str, list[str]]:
    """The reasons dralloc's "0/N nodes are available: n1: A; 2 nodes (n2, n3): B" message gives for each
    node it names (a group of more than three is named in part), a list of reasons in kube-scheduler's
    words ("Insufficient cpu, Insufficient memory"; VolumeBinding's) split up."""
    found: dict[str, list[str]] = {}
    for part in message.partition("available: ")[2].split("; "):
        where, _, reason = part.partition(": ")
        if where.endswith(")") and " nodes (" in where:
            names = [n.strip() for n in where.split(" nodes (", 1)[1].rstrip(")").split(", ") if n.strip() != "..."]
        else:
            names = [where.strip()]
        pieces = reason.split(", ")
        listed = pieces if all(p.startswith(KUBE_WORDED) for p in pieces) else [reason]
        for name in names:
            found.setdefault(name, []).extend(listed)
    return found


def reason_differences(kube_scheduler: Verdict, dralloc: Verdict, position: Callable[[str], str | None],
                       only: str | None = None) -> list[str]:
    """Where both refused the pod: each reason in kube-scheduler's words that dralloc gave for a node of its
    twin (`position` names it in the scenario; `only`: that node alone) and kube-scheduler's message lacks."""
    if kube_scheduler.kind != "unschedulable" or dralloc.kind != "unschedulable":
        return []
    theirs = set(reasons(kube_scheduler.message))
    missing = []
    for name, given in sorted(dralloc_node_reasons(dralloc.message).items()):
        node = position(name)
        if node is None or (only is not None and node != only):
            continue
        missing += [f"{node}: {r}" for r in given if r.startswith(KUBE_WORDED) and r not in theirs]
    return missing


def coverage(outcomes: Sequence[Outcome]) -> dict[str, int]:
    """How many scenarios kube-scheduler's message gave each reason (the filters the run exercised; the
    ones in ANY_TWIN may be other twins' nodes only)."""
    found: dict[str, int] = {}
    for outcome in outcomes:
        for verdict in (outcome.kube_scheduler, outcome.pinned, *(k for k, _ in outcome.per_node.values())):
            if verdict is not None and verdict.kind == "unschedulable":
                for reason in set(reasons(verdict.message)):
                    if not reason.startswith(f"Insufficient {scenarios.PIN_PREFIX}"):  # the pinning itself
                        found[reason] = found.get(reason, 0) + 1
    return found


def _verdict_of(pod: Obj, started: float) -> Verdict | None:
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    if spec.get("nodeName"):
        return Verdict("bound", str(spec["nodeName"]), at=time.monotonic() - started)
    for condition in status.get("conditions") or []:
        if (condition.get("type") == "PodScheduled" and condition.get("status") == "False"
                and condition.get("reason") == "Unschedulable"):
            return Verdict("unschedulable", message=str(condition.get("message") or ""),
                           at=time.monotonic() - started)
    return None


class Batch:
    """Scenarios run together on one cluster scope: seed, wait, judge, clean up."""

    def __init__(self, cluster: realcluster.RealCluster, scenarios_: Sequence[Obj], run: str, *,
                 timeout: float = 120.0, settle: float = 4.0, workers: int = 4, per_node: bool = False,
                 say: Callable[[str], None] = print) -> None:
        self.cluster = cluster
        self.scenarios = list(scenarios_)
        self.run_id = run
        self.timeout, self.settle, self.workers = timeout, settle, workers
        self.say = say
        self.class_name = f"diff-gpu-{run}"
        self.twins: dict[tuple[str, int], scenarios.Twin] = {}
        # side -> (scheduler name, the node its pod is pinned to): k and d free, then with --per-node
        # k<j> and d<j> pinned to node n<j> (p, pinned to dralloc's node, is created when it binds)
        self.pods: dict[tuple[str, int], tuple[str | None, str | None]] = {}
        for s in self.scenarios:
            index = s["index"]
            sides: dict[str, tuple[str | None, str | None]] = {"k": (None, None), "d": ("dralloc", None)}
            if per_node:
                for node in s["nodes"]:
                    j = node["name"].removeprefix("n")
                    sides[f"k{j}"] = (None, node["name"])
                    sides[f"d{j}"] = ("dralloc", node["name"])
            for side, how in sides.items():
                self.twins[(side, index)] = scenarios.Twin(side, run, index)
                self.pods[(side, index)] = how
            self.twins[("p", index)] = scenarios.Twin("p", run, index)

    # ---- setting up -------------------------------------------------------------------------------

    def _seed_all(self, objects: list[Obj]) -> None:
        if not objects:
            return
        # The first Node starts the cluster scope's heartbeat thread: alone, then the rest in parallel.
        first = next((i for i, o in enumerate(objects) if o["kind"] == "Node"), None)
        if first is not None:
            self.cluster.seed([objects[first]])
            objects = objects[:first] + objects[first + 1:]
        with concurrent.futures.ThreadPoolExecutor(self.workers) as pool:
            list(pool.map(lambda o: self.cluster.seed([o]), objects))

    def _seed_each(self, objects: list[Obj]) -> list[str]:
        """Seed each object; per object the API server's refusal ('' when created)."""
        def one(obj: Obj) -> str:
            try:
                self.cluster.seed([obj])
            except Exception as exc:
                body = getattr(exc, "body", None) or str(exc)
                return str(body)[:2000]
            return ""

        with concurrent.futures.ThreadPoolExecutor(self.workers) as pool:
            return list(pool.map(one, objects))

    def set_up(self) -> None:
        started = time.monotonic()
        namespaces: list[Obj] = []
        nodes: list[Obj] = []
        rest: list[Obj] = []
        by_index = {s["index"]: s for s in self.scenarios}
        for (_, index), twin in self.twins.items():
            s = by_index[index]
            for obj in scenarios.setup_objects(s, twin, self.class_name):
                {"Namespace": namespaces, "Node": nodes}.get(obj["kind"], rest).append(obj)
        self.cluster.seed([scenarios.device_class(self.class_name)])
        self._seed_all(namespaces)
        self._seed_all(nodes)
        self._seed_all(rest)
        pods = self.cluster.conn.resource("v1", "Pod")
        doomed = [key for (_, index), twin in self.twins.items()
                  for key in scenarios.terminating(by_index[index], twin)]
        with concurrent.futures.ThreadPoolExecutor(self.workers) as pool:
            list(pool.map(lambda key: pods.delete(name=key[1], namespace=key[0], body={"gracePeriodSeconds": 0}),
                          doomed))
        self._wait_nodes_ready(len(nodes))
        self._wait_claims_bound(sum(1 for o in rest if o["kind"] == "PersistentVolumeClaim"
                                    and o["metadata"]["labels"].get(scenarios.PREBOUND_LABEL) == "true"))
        self.say(f"  set up {len(nodes)} nodes and {len(namespaces) + len(rest)} other objects "
                 f"in {time.monotonic() - started:.1f} s")

    def _wait_nodes_ready(self, count: int, timeout: float = 90.0) -> None:
        """Until no node of the run has the taint the API server gives a new node (the node lifecycle
        controller removes it once it sees the node Ready)."""
        self._wait_all("Node", f"{scenarios.RUN_LABEL}={self.run_id}", count, "nodes still not ready", timeout,
                       lambda n: any(t.get("key") in NOT_READY_TAINTS for t in (n.get("spec") or {}).get("taints") or []))

    def _wait_claims_bound(self, count: int, timeout: float = 90.0) -> None:
        """Until the PV controller has bound every pre-bound claim of the run (the scenarios' bound
        volumes: a claim not bound yet would be "unbound immediate" to both schedulers)."""
        if count:
            self._wait_all("PersistentVolumeClaim", f"{scenarios.RUN_LABEL}={self.run_id},{scenarios.PREBOUND_LABEL}=true",
                           count, "claims still not bound", timeout,
                           lambda c: (c.get("status") or {}).get("phase") != "Bound")

    def _wait_all(self, kind: str, selector: str, count: int, what: str, timeout: float,
                  waits: Callable[[Obj], bool]) -> None:
        """Until `count` objects of the core/v1 `kind` match `selector` and none `waits`."""
        resource = self.cluster.conn.resource("v1", kind)
        deadline = time.monotonic() + timeout
        while True:
            found = resource.get(label_selector=selector).to_dict().get("items") or []
            waiting = ["/".join(filter(None, (o["metadata"].get("namespace"), o["metadata"]["name"])))
                       for o in found if waits(o)]
            if len(found) == count and not waiting:
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"{what} after {timeout:.0f} s: {waiting[:5]} ({len(found)} of {count} seen)")
            time.sleep(0.5)

    # ---- running ----------------------------------------------------------------------------------

    @property
    def dralloc_namespaces(self) -> tuple[str, ...]:
        return tuple(twin.namespace for (side, _), twin in self.twins.items() if side.startswith("d"))

    def _pending(self) -> dict[str, Obj]:
        """The run's pending and pinned pods by namespace/name."""
        pods = self.cluster.conn.resource("v1", "Pod")
        found = pods.get(label_selector=f"{scenarios.RUN_LABEL}={self.run_id},{scenarios.ROLE_LABEL}")
        return {f"{p['metadata']['namespace']}/{p['metadata']['name']}": p
                for p in found.to_dict().get("items") or []}

    def decide(self) -> list[Outcome]:
        """Create the pending pods, follow them until their verdicts settle, judge."""
        by_index = {s["index"]: s for s in self.scenarios}
        pods = [scenarios.pending_pod(by_index[index], self.twins[(side, index)], scheduler=scheduler, pin=pin)
                for (side, index), (scheduler, pin) in self.pods.items()]
        started = time.monotonic()
        verdicts: dict[tuple[str, int], Verdict] = {}
        for pod, error in zip(pods, self._seed_each(pods), strict=True):
            if error:  # a scenario the API server refuses: the generator's fault, reported as such
                side, index = _twin_of(pod["metadata"]["namespace"], self.run_id)
                verdicts[(side, index)] = Verdict("refused", message=error)
        pinned: set[int] = set()
        last_change = time.monotonic()
        while True:
            now = time.monotonic()
            for key, pod in self._pending().items():
                namespace = key.split("/")[0]
                side, index = _twin_of(namespace, self.run_id)
                twin = self.twins[(side, index)]
                verdict = _verdict_of(pod, started)
                if verdict is None:
                    continue
                if verdict.node is not None:
                    verdict.node = twin.position(verdict.node) or f"(not its twin's node: {verdict.node})"
                old = verdicts.get((side, index))
                if old is None or (old.kind, old.node, old.message) != (verdict.kind, verdict.node, verdict.message):
                    verdicts[(side, index)] = verdict
                    last_change = now
                if side == "d" and verdict.kind == "bound" and index not in pinned and verdict.node in {
                        n["name"] for n in by_index[index]["nodes"]}:
                    pinned.add(index)
                    s = by_index[index]
                    self.cluster.seed([scenarios.pending_pod(s, self.twins[("p", index)], scheduler=None,
                                                             name=scenarios.PINNED, pin=verdict.node)])
                    last_change = now
            expected = len(self.pods) + len(pinned)
            if len(verdicts) == expected and now - last_change >= self.settle:
                break
            if now - started > self.timeout:
                self.say(f"  timed out after {self.timeout:.0f} s: {expected - len(verdicts)} pods without a verdict")
                break
            time.sleep(0.5)
        self.say(f"  decided in {time.monotonic() - started:.1f} s")
        outcomes = []
        for s in self.scenarios:
            index = s["index"]
            outcome = Outcome(s, verdicts.get(("k", index), Verdict()), verdicts.get(("d", index), Verdict()),
                              verdicts.get(("p", index), Verdict()) if index in pinned else None)
            outcome.reasons += reason_differences(outcome.kube_scheduler, outcome.dralloc,
                                                  self.twins[("d", index)].position)
            for (side, at), (scheduler, pin) in self.pods.items():
                if at == index and pin is not None and scheduler is None:
                    pair = (verdicts.get((side, index), Verdict()), verdicts.get(("d" + side[1:], index), Verdict()))
                    outcome.per_node[pin] = pair
                    outcome.reasons += [f"alone: {r}" for r in reason_differences(
                        *pair, self.twins[("d" + side[1:], index)].position, only=pin)]
            if outcome.difference:
                outcome.dralloc_pod = scenarios.pending_pod(s, self.twins[("d", index)], scheduler="dralloc")
            outcomes.append(outcome)
        return outcomes

    def run(self, kubeconfig: pathlib.Path | None) -> list[Outcome]:
        try:
            self.cluster.seed(crds())
            self.set_up()
            operator = OperatorThread(run_settings(kubeconfig, namespaces=self.dralloc_namespaces))
            operator.start(60)
            try:
                return self.decide()
            finally:
                operator.stop(60)
        finally:
            self.clean_up()

    # ---- cleaning up ------------------------------------------------------------------------------

    def clean_up(self) -> None:
        """Delete the batch's pods at once and free its claims' finalizers, so that its namespaces go
        when the cluster scope deletes them (with its nodes, slices and class)."""
        pods = self.cluster.conn.resource("v1", "Pod")
        claims = self.cluster.conn.resource("resource.k8s.io/v1", "ResourceClaim")

        def empty(namespace: str) -> None:
            with contextlib.suppress(Exception):
                for item in pods.get(namespace=namespace).to_dict().get("items") or []:
                    if item["metadata"].get("finalizers"):
                        pods.patch(name=item["metadata"]["name"], namespace=namespace,
                                   body={"metadata": {"finalizers": None}}, content_type="application/merge-patch+json")
                pods.delete(namespace=namespace, body={"gracePeriodSeconds": 0})
            with contextlib.suppress(Exception):
                for item in claims.get(namespace=namespace).to_dict().get("items") or []:
                    name = item["metadata"]["name"]
                    if item["metadata"].get("finalizers"):
                        claims.patch(name=name, namespace=namespace, body={"metadata": {"finalizers": None}},
                                     content_type="application/merge-patch+json")
                    claims.delete(name=name, namespace=namespace)

        with concurrent.futures.ThreadPoolExecutor(self.workers) as pool:
            list(pool.map(empty, [ns for twin in self.twins.values()
                                  for ns in (twin.namespace, twin.second_namespace)]))


def _twin_of(namespace: str, run: str) -> tuple[str, int]:
    """(side, scenario index) of a twin's namespace `diff-<side>-<run>-s<index>`."""
    rest = namespace.removeprefix("diff-")
    side, _, tail = rest.partition(f"-{run}-s")
    return side, int(tail)


def run_scenarios(cluster: realcluster.RealCluster, scenarios_: Sequence[Obj], *, run: str | None = None,
                  say: Callable[[str], None] = print, **options: Any) -> list[Outcome]:
    """One batch on `cluster` (a RealCluster scope: the caller closes it)."""
    batch = Batch(cluster, scenarios_, run or secrets.token_hex(3), say=say, **options)
    return batch.run(cluster.kubeconfig)


# ---- the command line -------------------------------------------------------------------------------


@contextlib.contextmanager
def _connection(kubeconfig: str) -> Iterator[realcluster.Connection]:
    with tempfile.TemporaryDirectory(prefix="dralloc-kube-scheduler-differential-") as folder:
        connection = realcluster.Connection(kubeconfig, pathlib.Path(folder) / "discovery.json")
        try:
            yield connection
        finally:
            connection.close()


def save(outcome: Outcome, folder: pathlib.Path) -> pathlib.Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"s{outcome.scenario['index']}.yaml"
    path.write_text(yaml.safe_dump(outcome.record(), sort_keys=False, width=110))
    return path


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.differential.kube_scheduler",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=200, help="how many scenarios (default 200)")
    parser.add_argument("--seed", type=int, default=None, help="the run's seed (default: a new one, printed)")
    parser.add_argument("--batch", type=int, default=25, help="scenarios at once on the cluster (default 25)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds a batch may take to decide")
    parser.add_argument("--out", type=pathlib.Path, default=OUT, help=f"where differences go (default {OUT})")
    parser.add_argument("--only", default="", help="comma-separated scenario indexes of the seed to run")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every scenario's verdicts")
    parser.add_argument("--per-node", action="store_true",
                        help="also ask both schedulers about every node alone (two more copies per node)")
    args = parser.parse_args(argv)
    kubeconfig = os.environ.get("KUBECONFIG")
    if not kubeconfig:
        parser.error("KUBECONFIG must name the cluster (e2e/controlplane.py run -- ... sets it)")
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1, 10**6)
    indexes = [int(i) for i in args.only.split(",") if i.strip()] or list(range(args.n))
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("kopf").setLevel(logging.ERROR)
    print(f"kube-scheduler differential: seed {seed}, {len(indexes)} scenarios, batches of {args.batch} "
          f"(replay: make e2e-differential N={args.n} SEED={seed})", flush=True)
    folder = args.out / str(seed)
    outcomes: list[Outcome] = []
    started = time.monotonic()
    with _connection(kubeconfig) as connection:
        for first in range(0, len(indexes), args.batch):
            chunk = [scenarios.scenario(seed, i) for i in indexes[first:first + args.batch]]
            print(f"batch {first // args.batch + 1}: scenarios {chunk[0]['index']}..{chunk[-1]['index']}", flush=True)
            cluster = realcluster.RealCluster(connection).open()
            try:
                found = run_scenarios(cluster, chunk, timeout=args.timeout, per_node=args.per_node,
                                      say=lambda text: print(text, flush=True))
            finally:
                cluster.close()
            for outcome in found:
                if args.verbose:
                    print(f"  s{outcome.scenario['index']}: kube-scheduler {outcome.kube_scheduler.kind} "
                          f"{outcome.kube_scheduler.node or outcome.kube_scheduler.message}; dralloc "
                          f"{outcome.dralloc.kind} {outcome.dralloc.node or outcome.dralloc.message}", flush=True)
                if outcome.difference:
                    path = save(outcome, folder)
                    shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
                    print(f"  s{outcome.scenario['index']}: {outcome.difference} -> {shown}", flush=True)
            outcomes += found
    differences = [o for o in outcomes if o.difference]
    kinds: dict[str, int] = {}
    for outcome in differences:
        kinds[outcome.difference or ""] = kinds.get(outcome.difference or "", 0) + 1
    bound = sum(1 for o in outcomes if o.kube_scheduler.kind == "bound")
    print(f"{len(outcomes)} scenarios, {len(differences)} verdict differences")
    for kind, count in sorted(kinds.items(), key=lambda kv: -kv[1]):
        print(f"  {count:4d}  {kind}")
    print("kube-scheduler's reasons (scenarios):")
    for reason, count in sorted(coverage(outcomes).items(), key=lambda kv: -kv[1]):
        print(f"  {count:4d}  {reason}")
    pins = [o for o in outcomes if o.pinned is not None]
    print(f"kube-scheduler bound {bound} of {len(outcomes)}; checked dralloc's node {len(pins)} times, "
          f"accepted {sum(1 for o in pins if o.pinned and o.pinned.kind == 'bound')}; "
          f"{time.monotonic() - started:.0f} s; {datetime.datetime.now():%H:%M:%S}")
    worded = [o for o in outcomes if o.reasons]
    print(f"reasons: {sum(len(o.reasons) for o in worded)} node reasons in kube-scheduler's words that "
          f"kube-scheduler did not give, in {len(worded)} scenarios")
    for outcome in worded:
        print(f"  s{outcome.scenario['index']}: {'; '.join(outcome.reasons)}")
    nodes = [pair for o in outcomes for pair in o.per_node.values()]
    if nodes:
        print(f"per node: {len(nodes)} nodes asked alone, kube-scheduler accepted {sum(1 for k, _ in nodes if k.kind == 'bound')},"
              f" dralloc {sum(1 for _, d in nodes if d.kind == 'bound')}, "
              f"{sum(1 for k, d in nodes if k.kind != d.kind)} disagreements")
    if differences:
        print(f"differences saved under {folder}")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
