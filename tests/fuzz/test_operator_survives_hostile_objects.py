"""One bad object must never stop the cluster: the running operator against hostile objects.

Each round starts a fresh sandbox API server and a real operator (kopf, in-process),
seeds nodes with good GPUs (only valid pods use them, and there is room for all of
them), then creates, in a random order, valid pods and hostile cases from
`tests/fuzz/hostile.py` (wrong types, huge counts, deep CEL, unknown classes,
non-compiling and runtime-failing CEL, duplicate devices in a pool, incomplete pools,
absurd quantities, claims reserved for or owned by themselves, 256+ reservations,
pods with many claims). It then asserts:

- the operator never died: its thread and each control loop's task are alive, and
  `dralloc_loop_pass_failures_total` did not grow for any loop (a whole pass never
  failed), scrapes included;
- every valid pod ends placed (bound or ungated onto a node, its claims allocated and
  reserved for it), and no device is in two claims;
- every bad pod the API accepted is either placed (when the case allows it: the "bad"
  object turned out valid) or carries `PodScheduled=False` (reason `SchedulerError` or
  `Unschedulable`) whose message names the claim, class, template or field, never
  "internal error in dralloc".

Objects the sandbox rejects at admission count as "rejected by the API".

Reproducible: the generator is seeded (the default suite always uses `CI_SEED`; `make fuzz`
draws a fresh seed). The seed is printed (and part of every failure message); rerun with
`DRALLOC_FUZZ_SEED=<seed>`. Size: `DRALLOC_FUZZ_ROUNDS` rounds
(default 3) of `DRALLOC_FUZZ_CASES` hostile cases each (default 24); `make fuzz` runs a
longer campaign. `-s` shows the summary line.
"""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import json
import logging
import os
import pathlib
import random
import sys
import time
import traceback
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import pytest
from tests.fuzz import hostile
from tests.handlers.conftest import OperatorThread, SandboxCluster, operator_settings

from dralloc import metrics
from dralloc.sandbox import ThreadedApiServer
from dralloc.testing.cluster import crds

T = TypeVar("T")
Obj = dict[str, Any]

# The default suite (CI) replays one fixed seed, so a red run always means a change broke something;
# `make fuzz` sets DRALLOC_FUZZ_SEED (empty: a fresh seed each campaign, printed) to look for new cases.
CI_SEED = 3594597017
_SEED_TEXT = os.environ.get("DRALLOC_FUZZ_SEED")
SEED = CI_SEED if _SEED_TEXT is None else int(_SEED_TEXT or random.SystemRandom().randrange(2**32))
ROUNDS = int(os.environ.get("DRALLOC_FUZZ_ROUNDS") or 3)
CASES = int(os.environ.get("DRALLOC_FUZZ_CASES") or 24)
SETTLE = float(os.environ.get("DRALLOC_FUZZ_SETTLE") or 30.0)  # seconds to wait for the cluster to settle
VERBOSE = bool(os.environ.get("DRALLOC_FUZZ_VERBOSE"))  # print every case and what became of it
NODES = 3
GPUS_PER_NODE = 8
VALID_GPUS = 18  # of NODES * GPUS_PER_NODE: room for every valid pod whatever the order
LOOP_TASKS = ("dralloc-scheduling", "dralloc-lifecycle", "dralloc-eviction", "dralloc-health",
              "dralloc-taint-rules", "dralloc-feed-pods", "dralloc-feed-resourceclaims")
GATE = "dralloc.io/allocate"
INVALID_POOLS = "invalid resource pools were encountered: "
LOOP_STALL = 10.0  # seconds the operator's event loop may be busy before it counts as stalled


class Stalled(AssertionError):
    """The operator's event loop is blocked: every control loop stands still."""


class WatchedOperator(OperatorThread):
    """The operator's thread, and a look at the tasks of its control loops.

    The loops are asyncio tasks named `dralloc-<loop>` in the operator's event loop; they
    are found among live objects (no handle on the loop needed), and the scrape runs in
    that loop, as every other reader of the operator's state does.
    """

    def loop_tasks(self) -> dict[str, asyncio.Task[Any]]:
        return {t.get_name(): t for t in gc.get_objects()
                if isinstance(t, asyncio.Task) and t.get_name().startswith("dralloc-") and not t.done()}

    def in_loop(self, fn: Callable[[], T]) -> T:
        """Run `fn` in the operator's event loop (where its state lives) and return its result."""
        tasks = self.loop_tasks()
        assert tasks, "no task of the operator is running"
        loop = next(iter(tasks.values())).get_loop()

        async def call() -> T:
            return fn()
        future = asyncio.run_coroutine_threadsafe(call(), loop)
        try:
            return future.result(LOOP_STALL)
        except TimeoutError:
            future.cancel()
            raise Stalled(f"the operator's event loop did not answer within {LOOP_STALL:g} s; its thread is at:\n"
                          + self.where()) from None

    def where(self) -> str:
        frame = sys._current_frames().get(self.thread.ident or 0)
        return "".join(traceback.format_stack(frame)[-25:]) if frame is not None else "(thread gone)"

    def scrape(self) -> None:
        """What Prometheus does: collect every metric, the cluster gauges computed from the view."""
        if self.loop_tasks():
            self.in_loop(lambda: list(metrics.REGISTRY.collect()))


def pass_failures() -> dict[str, float]:
    return {loop: metrics.REGISTRY.get_sample_value("dralloc_loop_pass_failures_total", {"loop": loop}) or 0.0
            for loop in metrics.LOOPS}


# --- talking to the API as a client would ----------------------------------------------------------

_PATHS = {
    "Namespace": ("/api/v1", "namespaces", False), "Node": ("/api/v1", "nodes", False),
    "Pod": ("/api/v1", "pods", True),
    "ResourceClaim": ("/apis/resource.k8s.io/v1", "resourceclaims", True),
    "ResourceClaimTemplate": ("/apis/resource.k8s.io/v1", "resourceclaimtemplates", True),
    "ResourceSlice": ("/apis/resource.k8s.io/v1", "resourceslices", False),
    "DeviceClass": ("/apis/resource.k8s.io/v1", "deviceclasses", False),
}


def collection(obj: Obj) -> str:
    prefix, plural, namespaced = _PATHS[obj["kind"]]
    ns = obj["metadata"].get("namespace")
    return f"{prefix}/namespaces/{ns}/{plural}" if namespaced else f"{prefix}/{plural}"


def call(server: ThreadedApiServer, method: str, path: str, body: Obj | None = None,
         content_type: str = "application/json") -> tuple[int, Obj]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(server.url + path, data=data, method=method)
    request.add_header("Content-Type", content_type)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as exc:
        raw = exc.read()
        try:
            return exc.code, json.loads(raw or b"{}")
        except ValueError:
            return exc.code, {"message": raw.decode(errors="replace")}


def perform(server: ThreadedApiServer, step: hostile.Step) -> tuple[int, Obj]:
    obj = step.obj
    if step.action == "create":
        return call(server, "POST", collection(obj), obj)
    path = f"{collection(obj)}/{obj['metadata']['name']}"
    if step.action == "status":
        return call(server, "PATCH", f"{path}/status", {"status": obj["status"]}, "application/merge-patch+json")
    if step.action == "delete":
        return call(server, "DELETE", path)
    if step.action == "own-self":
        status, found = call(server, "GET", path)
        if status >= 300:
            return status, found
        owner = {"apiVersion": obj["apiVersion"], "kind": obj["kind"], "name": obj["metadata"]["name"],
                 "uid": found["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}
        return call(server, "PATCH", path, {"metadata": {"ownerReferences": [owner]}},
                    "application/merge-patch+json")
    raise AssertionError(f"unknown step {step.action}")


# --- what became of the pods -----------------------------------------------------------------------


def _condition(pod: Obj) -> Obj | None:
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c.get("type") == "PodScheduled":
            return dict(c)
    return None


def _claim_names(pod: Obj) -> list[str] | None:
    recorded = {s.get("name"): s.get("resourceClaimName") for s in (pod.get("status") or {}).get(
        "resourceClaimStatuses") or []}
    names = []
    for entry in (pod.get("spec") or {}).get("resourceClaims") or []:
        name = entry.get("resourceClaimName") or recorded.get(entry.get("name"))
        if not name:
            return None
        names.append(name)
    return names


def placed(server: ThreadedApiServer, pod: Obj) -> bool:
    """Bound (or ungated and pinned to a node) with every claim allocated and reserved for it."""
    spec = pod.get("spec") or {}
    gates = [g.get("name") for g in spec.get("schedulingGates") or []]
    if not spec.get("nodeName") and (GATE in gates or "kubernetes.io/hostname" not in (spec.get("nodeSelector")
                                                                                      or {})):
        return False
    names = _claim_names(pod)
    if names is None:
        return False
    uid = pod["metadata"]["uid"]
    for name in names:
        found = server.get("resource.k8s.io/v1", "ResourceClaim", name, pod["metadata"]["namespace"])
        status = (found or {}).get("status") or {}
        if status.get("allocation") is None or not any(r.get("uid") == uid for r in status.get("reservedFor") or []):
            return False
    return True


@dataclasses.dataclass
class Expectation:
    name: str
    case: hostile.Case | None  # None: a valid pod

    def verdict(self, server: ThreadedApiServer, pod: Obj | None) -> str | None:
        """None when the pod is where it should be; else what is wrong."""
        if pod is None:
            return "the pod is gone"
        if self.case is None:
            return None if placed(server, pod) else f"valid pod not placed (PodScheduled: {_condition(pod)})"
        if self.case.may_place and placed(server, pod):
            return None
        found = _condition(pod)
        if found is None or found.get("status") != "False" or found.get("reason") not in ("SchedulerError",
                                                                                          "Unschedulable"):
            return f"no PodScheduled=False condition (found {found})"
        message = str(found.get("message") or "")
        if "internal error in dralloc" in message:
            return f"internal error reported: {message}"
        # Upstream's answer for a node where nothing fits and some pool is invalid (any pool,
        # the case's own or another's): the pod is told that, node by node.
        if not any(cause in message for cause in (*self.case.causes, INVALID_POOLS)):
            return f"the message names none of {self.case.causes}: {message}"
        return None


@dataclasses.dataclass
class Tally:
    seed: int
    tried: int = 0
    rejected: int = 0
    accepted: int = 0
    server_errors: int = 0
    crashes: int = 0
    blocked_passes: int = 0
    valid_placed: int = 0
    valid_pods: int = 0
    bad_placed: int = 0
    bad_explained: int = 0
    by_kind: Counter[str] = dataclasses.field(default_factory=Counter)
    rejected_by_kind: Counter[str] = dataclasses.field(default_factory=Counter)

    def summary(self) -> str:
        return (f"hostile-object fuzz (seed {self.seed}): bad inputs tried {self.tried}, rejected by the API "
                f"{self.rejected}, accepted {self.accepted}, crashes {self.crashes}, blocked passes "
                f"{self.blocked_passes}, valid pods placed {self.valid_placed}/{self.valid_pods}; bad pods placed "
                f"{self.bad_placed}, explained {self.bad_explained}; sandbox 5xx {self.server_errors}")


class _Errors(logging.Handler):
    """ERROR records of the operator (dralloc.*) and of kopf while a round runs."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.name.startswith(("dralloc", "kopf")) and not record.name.startswith("dralloc.sandbox"):
            self.records.append(record)


@pytest.fixture
def logged_errors() -> Iterator[_Errors]:
    handler = _Errors()
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield handler
    finally:
        root.removeHandler(handler)


def run_round(seed: int, index: int, tally: Tally, errors: _Errors, workdir: pathlib.Path, *, cases: int,
              kinds: tuple[str, ...] = tuple(hostile.GENERATORS), extra: dict[str, hostile.Generator] | None = None,
              settle: float = SETTLE) -> list[str]:
    """One fresh sandbox + operator; the problems found (empty: all good)."""
    rng = random.Random(f"{seed}/{index}")
    server = ThreadedApiServer().start()
    problems: list[str] = []
    try:
        server.kubeconfig = server.write_kubeconfig(workdir / f"kubeconfig-{index}")
        cluster = SandboxCluster(server, token=f"r{index}{rng.randrange(16**4):04x}")
        scope = hostile.Scope(cluster.namespace, cluster.token_,
                              tuple(cluster.name(f"node-{i}") for i in range(NODES)))
        cluster.seed(crds())
        cluster.seed(hostile.base_objects(scope, GPUS_PER_NODE))
        generators = dict(hostile.GENERATORS, **(extra or {}))
        drawn = [generators[rng.choice(kinds)](hostile._Ctx(rng, scope, i)) for i in range(cases)]
        valid = hostile.valid_pods(rng, scope, VALID_GPUS - 1)
        sentinel = hostile.valid_pods(random.Random(0), scope, 1, first=len(valid) + 1000)
        work: list[hostile.Case | hostile.ValidPod] = [*drawn, *valid]
        rng.shuffle(work)
        before = pass_failures()
        operator = WatchedOperator(operator_settings(cluster)).start()
        expectations: list[Expectation] = []
        preallocated: set[str] = set()
        try:
            for item in [*work, *sentinel]:
                if isinstance(item, hostile.ValidPod):
                    for step in item.steps:
                        status, body = perform(server, step)
                        assert status < 300, f"seed {seed} round {index}: valid {item.name}: {status} {body}"
                    expectations.append(Expectation(item.name, None))
                    tally.valid_pods += 1
                    continue
                tally.tried += 1
                tally.by_kind[item.kind] += 1
                accepted = True
                for step in item.steps:
                    status, body = perform(server, step)
                    if status >= 500:
                        tally.server_errors += 1
                        problems.append(f"{item.describe()}: the sandbox answered {status}: {body.get('message')}")
                    if status >= 300:
                        if step.bad:
                            accepted = False
                            break
                        problems.append(f"{item.describe()}: scaffolding {step.obj['kind']} refused: "
                                        f"{status} {body.get('message')}")
                        accepted = False
                        break
                if not accepted:
                    if VERBOSE:
                        print(f"  rejected {item.describe()[:90]:90} -> {status} {str(body.get('message'))[:160]!r}")
                    tally.rejected += 1
                    tally.rejected_by_kind[item.kind] += 1
                    continue
                tally.accepted += 1
                preallocated.update(item.preallocated)
                expectations.extend(Expectation(p, item) for p in item.pods)
                if rng.random() < 0.1:
                    operator.scrape()
            problems += settle_and_check(server, operator, expectations, preallocated, tally, settle)
            operator.scrape()
            tasks = operator.loop_tasks()
            missing = [t for t in LOOP_TASKS if t not in tasks]
            if missing or not operator.alive:
                tally.crashes += 1
                problems.append(f"the operator died: thread alive={operator.alive}, loops not running: {missing}, "
                                f"error={operator.error!r}")
        except Stalled as exc:
            tally.crashes += 1
            problems.append(str(exc))
        finally:
            try:
                operator.stop()
            except AssertionError as exc:
                problems.append(f"{exc}; its thread is at:\n{operator.where()}")
        after = pass_failures()
        grown = {loop: after[loop] - before[loop] for loop in after if after[loop] > before[loop]}
        if grown:
            tally.blocked_passes += int(sum(grown.values()))
            problems.append(f"whole passes failed: {grown}")
        for record in errors.records:
            problems.append(f"logged error ({record.name}): {record.getMessage()}"
                            + (f" [{record.exc_info[1]!r}]" if record.exc_info else ""))
        errors.records.clear()
    finally:
        server.stop()
    return [f"seed {seed} round {index}: {p}" for p in problems]


def settle_and_check(server: ThreadedApiServer, operator: WatchedOperator, expectations: list[Expectation],
                     preallocated: set[str], tally: Tally, settle: float) -> list[str]:
    namespace = {e.name: e for e in expectations}
    ns = None
    deadline = time.monotonic() + settle
    verdicts: dict[str, str | None] = {}
    while True:
        pods = {}
        for p in server.list_objects("v1", "Pod"):
            if p["metadata"]["name"] in namespace:
                pods[p["metadata"]["name"]] = p
                ns = p["metadata"]["namespace"]
        verdicts = {e.name: e.verdict(server, pods.get(e.name)) for e in expectations}
        if not any(verdicts.values()) or time.monotonic() > deadline or not operator.alive:
            break
        time.sleep(0.25)
    problems = []
    for e in expectations:
        wrong = verdicts.get(e.name)
        if wrong:
            what = e.case.describe() if e.case else "valid pod"
            problems.append(f"pod {e.name} ({what}): {wrong}")
            continue
        if VERBOSE and e.case is not None:
            found = _condition(pods[e.name]) or {}
            print(f"  {e.name:8} {e.case.describe()[:90]:90} -> {found.get('reason')}: "
                  f"{str(found.get('message'))[:160]!r}")
        if e.case is None:
            tally.valid_placed += 1
        elif e.case.may_place and placed(server, pods[e.name]):
            tally.bad_placed += 1
        else:
            tally.bad_explained += 1
    seen: Counter[tuple[str, str, str]] = Counter()
    for c in server.list_objects("resource.k8s.io/v1", "ResourceClaim", ns):
        if c["metadata"]["name"] in preallocated:
            continue
        results = (((c.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results") or []
        for r in results:
            if not r.get("adminAccess") and not r.get("shareID"):
                seen[(r["driver"], r["pool"], r["device"])] += 1
    twice = {d: n for d, n in seen.items() if n > 1}
    if twice:
        problems.append(f"devices in more than one claim: {twice}")
    return problems


def test_operator_survives_hostile_objects(logged_errors: _Errors, tmp_path: pathlib.Path) -> None:
    tally = Tally(SEED)
    problems: list[str] = []
    for index in range(ROUNDS):
        problems += run_round(SEED, index, tally, logged_errors, tmp_path, cases=CASES)
    print(f"\n{tally.summary()}\n  tried by kind: {dict(sorted(tally.by_kind.items()))}"
          f"\n  rejected by kind: {dict(sorted(tally.rejected_by_kind.items()))}")
    assert not problems, f"{tally.summary()}\n" + "\n".join(problems)
    assert tally.crashes == 0 and tally.blocked_passes == 0
    assert tally.valid_placed == tally.valid_pods > 0


# What the fuzz found in handlers/scheduling.py (owned by another change): a pod whose claim
# does not exist, whose template is gone, or whose shared claim already has the maximum of 256
# reservations (of consumers nobody drops) waited forever without a PodScheduled condition, or
# retried a reservation the API refuses. Their cases run here on their own, two per round.


@pytest.mark.parametrize("kind", sorted(hostile.MISSING_OBJECTS))
def test_pods_waiting_for_missing_objects_are_told_why(kind: str, logged_errors: _Errors,
                                                       tmp_path: pathlib.Path) -> None:
    tally = Tally(SEED)
    problems = run_round(SEED, 0, tally, logged_errors, tmp_path, cases=2, kinds=(kind,),
                         extra=hostile.MISSING_OBJECTS, settle=SETTLE)
    assert not problems, "\n".join(problems)
    assert tally.accepted == tally.bad_explained == 2
