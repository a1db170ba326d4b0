"""One chaos run: replicas, faults, kills, handovers and a workload, then quiescence and the audit.

Timeline: the sandbox and two replicas start; once one holds the Lease the fault rules
go in through `/_faults` and the workload starts. Every few seconds (seeded) one action:

- **kill**: kill -9 of the Lease holder; the Lease shows how long the other took over
  (its `acquireTime` minus the dead holder's last `renewTime`); a new replica starts;
- **handover**: a surge replica starts, the holder gets SIGTERM (a clean stop gives the
  Lease up) and someone else takes it;
- **brownout**: the holder's own Lease renewals fail (a `token=` rule aimed at it) until
  it steps down at its renew deadline.

Each action also moves a watch-lag rule to a random live replica (`token=`). A monitor
checks the safety invariants all along. At the end: faults cleared, workload stopped,
finishing pods finished, then the full audit must come out clean (polled until it does,
or the settle timeout).
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
import random
import threading
import time
from typing import Any

from tests.chaos import audit
from tests.chaos.processes import REPO, Replica, Sandbox, parse_time, seed_yaml
from tests.chaos.workload import CLAIMS, NAMESPACE, PODS, Workload, cluster_objects, pod_object

Obj = dict[str, Any]
DEFAULT_TIMING = (15.0, 10.0, 2.0)
SHORT_TIMING = (3.0, 2.0, 0.5)
LEAK_LIMIT = 20.0  # seconds a leak may last during the chaos (faults, failovers and backoffs included)

CLAIM = "/apis/resource.k8s.io/v1/namespaces/*/resourceclaims"
BINDING = "/api/v1/namespaces/*/pods/*/binding"
LEASES = "/apis/coordination.k8s.io/v1/namespaces/*/leases/*"
EVENTS = f"/apis/events.k8s.io/v1/namespaces/{NAMESPACE}/events?fieldSelector=reason%3DAllocated"


def fault_spec(p: float) -> str:
    """Random faults on the operator's write paths at level p, periodic watch closes and compactions."""
    half, quarter = p / 2, p / 4
    rules = [
        f"PUT {CLAIM}/*/status 409 p={p:g}",
        f"PUT {CLAIM}/*/status 500 p={half:g}",
        f"PUT {CLAIM}/*/status applied-then=504 p={p:g}",
        f"POST {CLAIM} 500 p={half:g}",
        f"POST {CLAIM} applied-then=504 p={p:g}",
        f"PATCH {CLAIM}/* 409 p={p:g}",
        f"PATCH {CLAIM}/* 500 p={half:g}",
        f"DELETE {CLAIM}/* 500 p={half:g}",
        f"POST {BINDING} 500 p={half:g}",
        f"POST {BINDING} applied-then=504 p={p:g}",
        f"PATCH /api/v1/namespaces/*/pods/* 409 p={p:g}",
        f"PATCH /api/v1/namespaces/*/pods/* 500 p={half:g}",
        f"PATCH /api/v1/namespaces/*/pods/*/status applied-then=504 p={half:g}",
        f"PATCH {CLAIM}/* applied-then=504 p={half:g}",
        f"DELETE {CLAIM}/* applied-then=504 p={half:g}",
        f"PUT {LEASES} 500 p={quarter:g}",
        "watch-lag delay=0.2 path=*resourceclaims*",
        "close-watches every=4",
        "compact every=6",
    ]
    return "; ".join(rules)


@dataclasses.dataclass
class Config:
    seed: int
    seconds: float  # how long the chaos lasts (then quiescence)
    p: float = 0.1  # fault level
    nodes: int = 4
    timing: tuple[float, float, float] = SHORT_TIMING
    action_every: tuple[float, float] = (5.0, 9.0)
    settle_timeout: float = 120.0


@dataclasses.dataclass
class Failover:
    kind: str  # "kill" or "handover" or "brownout"
    old: str
    new: str = ""
    takeover: float | None = None  # seconds, from the Lease: new acquireTime - old holder's last renewTime
    placed: float | None = None  # seconds from that renewTime to the new holder's first Allocated Event
    acquired_at: str = ""
    renewed_at: str = ""


@dataclasses.dataclass
class Report:
    seed: int
    p: float
    faults: dict[str, Any] = dataclasses.field(default_factory=dict)
    failovers: list[Failover] = dataclasses.field(default_factory=list)
    pods_created: int = 0
    pods_placed: int = 0
    finished_deleted: int = 0
    deleted_running: int = 0
    unplaced_at_end: int = 0
    safety_checks: int = 0
    safety: dict[str, list[str]] = dataclasses.field(default_factory=dict)
    crashes: list[str] = dataclasses.field(default_factory=list)  # replicas that exited unasked
    audit: dict[str, list[str]] = dataclasses.field(default_factory=dict)
    settle_seconds: float = 0.0
    longest_leak: float = 0.0  # seconds, the longest a leak lasted during the run
    workdir: str = ""

    def count(self, kind: str) -> int:
        return sum(1 for f in self.failovers if f.kind == kind)

    def worst(self, kind: str | None = None) -> float | None:
        times = [f.takeover for f in self.failovers if f.takeover is not None and (kind is None or f.kind == kind)]
        return max(times) if times else None

    def clean(self) -> bool:
        return audit.clean(self.safety) and audit.clean(self.audit) and not self.crashes

    def text(self) -> str:
        kinds = self.faults.get("kinds", {})
        statuses = self.faults.get("statuses", {})

        def fmt(value: float | None) -> str:
            return "-" if value is None else f"{value:.2f}s"
        lines = [
            f"chaos seed={self.seed} p={self.p:g} (reproduce: DRALLOC_CHAOS_SEED={self.seed} DRALLOC_CHAOS_P={self.p:g})",
            "faults injected: " + (", ".join(f"{k}={v}" for k, v in kinds.items()) or "none")
            + (" (statuses: " + ", ".join(f"{k}={v}" for k, v in statuses.items()) + ")" if statuses else ""),
            f"kills: {self.count('kill')}, handovers: {self.count('handover')}, brownouts: {self.count('brownout')}",
            f"pods: {self.pods_created} created, {self.pods_placed} placed, {self.finished_deleted} finished and "
            f"deleted, {self.deleted_running} deleted running or pending, {self.unplaced_at_end} unplaced at the end "
            "(no room)",
            f"worst takeover by the Lease: kill {fmt(self.worst('kill'))}, handover {fmt(self.worst('handover'))}, "
            f"brownout {fmt(self.worst('brownout'))}",
        ]
        for f in self.failovers:
            lines.append(f"  {f.kind:9} {f.old} -> {f.new or '?'}: takeover {fmt(f.takeover)}, next pod placed "
                         f"{fmt(f.placed)} after the old holder's last renewal")
        lines.append(f"safety during the run ({self.safety_checks} checks): {audit.summary(self.safety)}; "
                     f"longest-lived leak {self.longest_leak:.1f}s (limit {LEAK_LIMIT:g}s)")
        lines.append(f"replicas that exited unasked: {', '.join(self.crashes) or 'none'}")
        lines.append(f"audit after quiescence ({self.settle_seconds:.1f}s to settle): {audit.summary(self.audit)}")
        for check, found in {**self.safety, **self.audit}.items():
            for line in found[:10]:
                lines.append(f"  {check}: {line}")
        lines.append(f"logs: {self.workdir}")
        return "\n".join(lines)


def _seconds(later: str | None, earlier: str | None) -> float | None:
    a, b = parse_time(later), parse_time(earlier)
    return None if a is None or b is None else (a - b).total_seconds()


class Chaos:
    def __init__(self, config: Config, workdir: pathlib.Path) -> None:
        self.config = config
        self.workdir = workdir
        self.rng = random.Random(config.seed)
        seed = seed_yaml(sorted((REPO / "crds").glob("*.yaml"))) + cluster_objects(config.nodes)
        self.sandbox = Sandbox(workdir, seed, faults_seed=config.seed)
        self.replicas: list[Replica] = []
        self.all_replicas: list[Replica] = []
        self.report = Report(seed=config.seed, p=config.p, workdir=str(workdir))
        self.workload: Workload | None = None
        self._stop_monitor = threading.Event()
        self._stop_recorder = threading.Event()
        self._lease_lock = threading.Lock()
        self.lease_history: list[Obj] = []
        self._recorder = threading.Thread(target=self._record_lease, name="chaos-lease", daemon=True)
        self._lag_rule: int | None = None
        self._number = 0

    # ---- replicas ------------------------------------------------------------------------------

    def start_replica(self, timing: tuple[float, float, float] | None = None) -> Replica:
        self._number += 1
        replica = Replica(self.sandbox, self._number, namespace=NAMESPACE, timing=timing or self.config.timing)
        replica.start()
        self.replicas.append(replica)
        self.all_replicas.append(replica)
        return replica

    def check_crashes(self) -> None:
        for replica in list(self.replicas):
            if not replica.alive:
                code = replica.proc.returncode if replica.proc else None
                self.report.crashes.append(f"{replica.identity} (exit {code})")
                self.replicas.remove(replica)

    def holder(self) -> str:
        return str(self.sandbox.lease(NAMESPACE).get("holderIdentity") or "")

    def active(self) -> Replica | None:
        name = self.holder()
        return next((r for r in self.replicas if r.identity == name and r.alive), None)

    def wait_holder(self, timeout: float, *, other_than: str = "") -> Obj:
        deadline = time.monotonic() + timeout
        while True:
            lease = self.sandbox.lease(NAMESPACE)
            holder = lease.get("holderIdentity")
            if holder and holder != other_than:
                return lease
            if time.monotonic() > deadline:
                raise AssertionError(f"no replica took the Lease within {timeout:g}s (last: {lease})\n"
                                     + self.logs())
            time.sleep(0.05)

    def wait_started(self, replica: Replica, timeout: float = 60.0) -> None:
        """Until the replica runs its election loop (its kopf watches have begun)."""
        deadline = time.monotonic() + timeout
        while "leader election: candidate" not in replica.log_path.read_text(errors="replace"):
            if not replica.alive or time.monotonic() > deadline:
                raise AssertionError(f"{replica.identity} did not start\n{replica.log_tail()}")
            time.sleep(0.1)

    def logs(self) -> str:
        return "\n".join(f"--- {r.identity} ({r.exit_how or 'running'}) ---\n{r.log_tail(25)}"
                         for r in self.all_replicas)

    # ---- failovers -----------------------------------------------------------------------------

    def _record_lease(self) -> None:
        """Every distinct state of the Lease, polled every 50 ms for the whole run."""
        while not self._stop_recorder.wait(0.05):
            try:
                lease = self.sandbox.lease(NAMESPACE)
            except OSError:
                continue
            with self._lease_lock:
                if not self.lease_history or self.lease_history[-1] != lease:
                    self.lease_history.append(lease)

    def _takeover(self, kind: str, old: str, timeout: float, since: int) -> Failover:
        """Follow the Lease until someone other than `old` holds it; times from the Lease's own stamps:
        the new holder's acquireTime minus the old holder's last renewTime (or its release's)."""
        failover = Failover(kind, old)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lease_lock:
                history = self.lease_history[max(0, since - 1):]
            last_old: Obj = {}
            for lease in history:
                holder = lease.get("holderIdentity") or ""
                if holder == old or (not holder and last_old):
                    last_old = lease
                elif holder and last_old:
                    failover.new = holder
                    failover.acquired_at = str(lease.get("acquireTime") or "")
                    failover.renewed_at = str(last_old.get("renewTime") or "")
                    failover.takeover = _seconds(failover.acquired_at, failover.renewed_at)
                    self.report.failovers.append(failover)
                    return failover
            time.sleep(0.05)
        self.report.failovers.append(failover)
        return failover

    def mark(self) -> int:
        with self._lease_lock:
            return len(self.lease_history)

    def kill(self, timeout: float) -> Failover:
        victim = self.active()
        assert victim is not None, "nobody holds the Lease"
        since = self.mark()
        victim.kill9()
        self.replicas.remove(victim)
        return self._takeover("kill", victim.identity, timeout, since)

    def handover(self) -> Failover:
        surge = self.start_replica()
        self.wait_started(surge)
        time.sleep(1.0)  # its first relist
        victim = self.active()
        if victim is None:
            return Failover("handover", "?")
        since = self.mark()
        code = victim.terminate()
        self.replicas.remove(victim)
        assert code == 0, f"{victim.identity} did not stop cleanly on SIGTERM ({victim.exit_how})\n{victim.log_tail()}"
        return self._takeover("handover", victim.identity, 30.0, since)

    def brownout(self) -> Failover:
        victim = self.active()
        if victim is None:
            return Failover("brownout", "?")
        _, deadline, retry = self.config.timing
        times = int(deadline / retry) + 4  # more failed renewals than fit in the renew deadline
        since = self.mark()
        (rule,) = self.sandbox.add_faults(f"PUT {LEASES} 500 x{times} token={victim.token}")
        failover = self._takeover("brownout", victim.identity, 30.0, since)
        self.sandbox.remove_fault(int(rule["id"]))
        return failover

    def move_watch_lag(self) -> None:
        if self._lag_rule is not None:
            self.sandbox.remove_fault(self._lag_rule)
        target = self.rng.choice(self.replicas)
        (rule,) = self.sandbox.add_faults(f"watch-lag delay={self.rng.uniform(0.3, 2.0):.2f} "
                                          f"path=*resourceclaims* token={target.token}")
        self._lag_rule = int(rule["id"])

    # ---- monitoring ----------------------------------------------------------------------------

    def _monitor(self) -> None:
        """Safety on every look; and leaks that last: a claim stuck allocated for a gone or finished pod
        (or left after its pod) for LEAK_LIMIT seconds means the operator is not getting on with it."""
        seen: dict[str, list[str]] = {"double allocation": [], "duplicate claims": [], "lasting leaks": []}
        leaking: dict[str, float] = {}
        reported: set[str] = set()
        while not self._stop_monitor.wait(0.5):
            try:
                claims = self.sandbox.items(CLAIMS)
                pods = self.sandbox.items(PODS)
            except OSError:
                continue
            self.report.safety_checks += 1
            for check, found in audit.safety(claims).items():
                known = seen[check]
                known.extend(f for f in found if f not in known)
            now = time.monotonic()
            deleted = self.workload.deleted_uids if self.workload is not None else set()
            current = set(audit.leaks(pods, claims, deleted))
            leaking = {leak: leaking.get(leak, now) for leak in current}
            for leak, since in leaking.items():
                self.report.longest_leak = max(self.report.longest_leak, now - since)
                if now - since >= LEAK_LIMIT and leak not in reported:
                    reported.add(leak)
                    seen["lasting leaks"].append(f"{leak} (for {LEAK_LIMIT:g}s or more)")
        self.report.safety = seen

    def placements_after(self, failover: Failover, events: list[Obj]) -> None:
        if not failover.new or not failover.acquired_at:
            return
        acquired = parse_time(failover.acquired_at)
        mine = sorted(str(e.get("eventTime")) for e in events
                      if e.get("reportingInstance") == failover.new and (t := parse_time(e.get("eventTime")))
                      and acquired and t >= acquired)
        if mine:
            failover.placed = _seconds(mine[0], failover.renewed_at)

    # ---- the run -------------------------------------------------------------------------------

    def run(self) -> Report:
        config = self.config
        self.sandbox.start()
        self._recorder.start()
        monitor = threading.Thread(target=self._monitor, name="chaos-monitor", daemon=True)
        try:
            self.start_replica()
            self.start_replica()
            self.wait_holder(60.0)
            self.sandbox.add_faults(fault_spec(config.p))
            self.move_watch_lag()
            monitor.start()
            self.workload = Workload(self.sandbox, config.seed, nodes=config.nodes).start()
            end = time.monotonic() + config.seconds
            actions = ["kill", "handover", "brownout"]
            while time.monotonic() < end:
                time.sleep(self.rng.uniform(*config.action_every))
                self.check_crashes()
                if time.monotonic() >= end:
                    break
                while len(self.replicas) < 2:
                    self.start_replica()
                action = actions[len(self.report.failovers) % 3] if len(self.report.failovers) < 3 else \
                    self.rng.choice(actions)
                if action == "kill":
                    self.kill(config.timing[0] * 4 + 10)
                    time.sleep(self.rng.uniform(0.5, 2.0))
                    self.start_replica()
                elif action == "handover":
                    self.handover()
                else:
                    self.brownout()
                self.move_watch_lag()
            self.quiesce()
        finally:
            self._stop_monitor.set()
            self._stop_recorder.set()
            if monitor.is_alive():
                monitor.join(10)
            if self.workload is not None:
                self.workload.stop()
            for replica in self.replicas:
                if replica.alive:
                    replica.terminate(20)
            self.sandbox.stop()
        (self.workdir / "report.json").write_text(json.dumps(dataclasses.asdict(self.report), indent=1))
        return self.report

    def quiesce(self) -> None:
        assert self.workload is not None
        self.report.faults = self.sandbox.fault_state()["counters"]
        self.sandbox.clear_faults()
        self.workload.stop_creating()
        self.check_crashes()
        while len(self.replicas) < 2:
            self.start_replica()
        self.wait_holder(60.0)
        self.workload.finish(60.0)
        started = time.monotonic()
        findings: audit.Findings = {}
        clean_since: float | None = None
        while time.monotonic() - started < self.config.settle_timeout:
            pods, claims = self.sandbox.items(PODS), self.sandbox.items(CLAIMS)
            if (pods, claims) == (self.sandbox.items(PODS), self.sandbox.items(CLAIMS)):  # a still moment
                findings = audit.full(pods, claims, self.workload.deleted_uids, self.config.nodes)
                if audit.clean(findings):
                    clean_since = clean_since or time.monotonic()
                    if time.monotonic() - clean_since >= 2.0:
                        break
                else:
                    clean_since = None
            time.sleep(0.5)
        self.report.settle_seconds = time.monotonic() - started
        self.check_crashes()
        self.report.audit = findings
        self.workload.stop()
        stats = self.workload.stats
        self.report.pods_created = stats.created
        self.report.finished_deleted, self.report.deleted_running = stats.finished_deleted, stats.deleted_running
        events = self.sandbox.items(EVENTS)
        self.report.pods_placed = len({(e.get("regarding") or {}).get("uid") for e in events})
        self.report.unplaced_at_end = sum(1 for p in self.sandbox.items(PODS) if not (p.get("spec") or {}).get(
            "nodeName"))
        for failover in self.report.failovers:
            self.placements_after(failover, events)


def default_timing_failover(workdir: pathlib.Path, seed: int) -> Failover:
    """Kill -9 of the holder with kube-scheduler's timing (15/10/2 s), no other faults.

    Two replicas; a few pods placed first; then the holder dies and a new pod arrives at
    once: the Lease tells when the other replica took over, its first Allocated Event when
    the waiting pod was placed.
    """
    chaos = Chaos(Config(seed=seed, seconds=0.0, timing=DEFAULT_TIMING), workdir)
    sandbox = chaos.sandbox.start()
    chaos._recorder.start()
    rng = random.Random(seed)
    try:
        first = chaos.start_replica()
        chaos.wait_holder(60.0)
        chaos.wait_started(chaos.start_replica())
        for i in range(3):
            obj = pod_object(f"before-{i}", rng)
            obj["metadata"].pop("annotations", None)
            sandbox.create(PODS, obj)
        deadline = time.monotonic() + 60
        while not all((sandbox.get(f"{PODS}/before-{i}") or {}).get("spec", {}).get("nodeName") for i in range(3)):
            assert time.monotonic() < deadline, "the first pods were not placed\n" + chaos.logs()
            time.sleep(0.2)
        time.sleep(rng.uniform(0.0, DEFAULT_TIMING[2]))  # anywhere in the renewal cycle
        assert chaos.holder() == first.identity
        victim = chaos.active()
        assert victim is not None
        since = chaos.mark()
        victim.kill9()
        chaos.replicas.remove(victim)
        obj = pod_object("after", rng)
        obj["metadata"].pop("annotations", None)
        sandbox.create(PODS, obj)
        failover = chaos._takeover("kill", victim.identity, 60.0, since)
        deadline = time.monotonic() + 60
        while not (sandbox.get(f"{PODS}/after") or {}).get("spec", {}).get("nodeName"):
            assert time.monotonic() < deadline, "the pod after the kill was not placed\n" + chaos.logs()
            time.sleep(0.2)
        time.sleep(0.5)
        chaos.placements_after(failover, sandbox.items(EVENTS))
        return failover
    finally:
        chaos._stop_recorder.set()
        for replica in chaos.replicas:
            if replica.alive:
                replica.terminate(20)
        sandbox.stop()
