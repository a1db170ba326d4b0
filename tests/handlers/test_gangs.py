"""Gangs (issue 14): the pods of a PodGroup are placed all or nothing (handlers/ganging.py).

Against the sandbox, which serves scheduling.k8s.io/v1beta1 PodGroups. Every test checks
the invariants too: each device in at most one allocation, and no member bound unless
every member is.
"""

from __future__ import annotations

import fnmatch
import json
from typing import Any

import pytest
import yaml
from tests.handlers import helpers
from tests.handlers.conftest import (
    REPO,
    Cluster,
    OperatorThread,
    operator_settings,
    real_mode,
    wait_for,
)

from dralloc.sandbox import Faults
from dralloc.testing import cluster
from dralloc.testing.cluster import crds

Obj = dict[str, Any]
GATE = "dralloc.io/allocate"
STATUS = "/apis/resource.k8s.io/v1/namespaces/*/resourceclaims/*/status"


def pod_group(name: str, min_count: int, *, topology: str | None = None) -> Obj:
    spec: Obj = {"schedulingPolicy": {"gang": {"minCount": min_count}}}
    if topology:
        spec["schedulingConstraints"] = {"topology": [{"key": topology}]}
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": {"name": name}, "spec": spec}


def member(name: str, template: str, group: str, **kwargs: Any) -> Obj:
    obj = cluster.pod(name, template_name=template, **kwargs)
    obj["spec"]["schedulingGroup"] = {"podGroupName": group}
    return obj


def _setup(server: Cluster, gpus: dict[str, int], labels: dict[str, dict[str, str]] | None = None,
           counts: tuple[int, ...] = (1,)) -> dict[str, str]:
    """Nodes (test names -> GPUs), the class, and a template `gpus-N` per count; returns test name -> node name."""
    gpu = server.name("gpu")
    names = {short: server.name(short) for short in gpus}
    objs: list[Obj] = [cluster.gpu_class(gpu)]
    objs += [cluster.template(f"gpus-{n}", count=n, device_class=gpu) for n in counts]
    for short, count in gpus.items():
        objs += [cluster.node(names[short], labels=(labels or {}).get(short)), cluster.gpu_slice(names[short], count)]
    server.seed(objs)
    _wait_schedulable(server, list(names.values()))
    return names


def _wait_schedulable(server: Cluster, nodes: list[str]) -> None:
    """These tests check which nodes a gang lands on: its pods come once every node can take them."""
    wait_for(lambda: helpers.nodes_schedulable(server, nodes), timeout=90, what="the nodes ready")


def _nodes(server: Cluster, pods: list[str]) -> dict[str, str | None]:
    return {p: helpers.node_of(server, p) for p in pods}


def _all_bound(server: Cluster, pods: list[str]) -> bool:
    return all(_nodes(server, pods).values())


def _scheduled(server: Cluster, pod: str) -> Obj | None:
    return helpers.condition(helpers.pod(server, pod), "PodScheduled")


def _says(server: Cluster, pod: str, text: str) -> bool:
    found = _scheduled(server, pod)
    return bool(found and found.get("status") == "False" and text in (found.get("message") or ""))


def _allocated(server: Cluster) -> list[Obj]:
    return [c for c in helpers.claims(server) if (c.get("status") or {}).get("allocation")]


def _binds_after_claim_writes(server: Cluster, writes: str = "POST", what: str = "*/pods/*/binding") -> None:
    """No member was bound (or ungated) before the last allocation write of the gang.

    Read from the sandbox's request log; a real cluster keeps none, so there the rest of the
    test (every member bound, each device in one claim) is what it shows, and the order is
    shown by the same test on the sandbox, which runs the same operator code.
    """
    sandbox = getattr(server, "server", None)
    if sandbox is None:
        return
    log = sandbox.requests.all()
    allocations = [i for i, r in enumerate(log) if r.method == "PUT" and fnmatch.fnmatchcase(r.path, STATUS)
                   and r.status < 300]
    binds = [i for i, r in enumerate(log) if r.method == writes and fnmatch.fnmatchcase(r.path, what)]
    assert allocations and binds
    assert max(allocations) < min(binds), "a member was placed before every claim of the gang was written"


def test_a_gang_waits_for_min_count_then_is_placed_as_one(apiserver: Cluster, operator: OperatorThread) -> None:
    _setup(apiserver, {"node-a": 2, "node-b": 2})
    apiserver.seed([pod_group("trainers", 3)])
    apiserver.seed([member(f"trainer-{i}", "gpus-1", "trainers") for i in range(2)])
    for i in range(2):
        wait_for(lambda i=i: _says(apiserver, f"trainer-{i}", "2 of its 3 pods (minCount) exist"),
                 what=f"trainer-{i} waiting for the gang")
    assert not _allocated(apiserver) and not any(_nodes(apiserver, ["trainer-0", "trainer-1"]).values())
    # Waiting for members is a normal moment of a gang's life, not a warning (issue 32).
    # One Event per distinct message: a real API server creates the members one by one, so the operator
    # may first see "1 of its 3" and then "2 of its 3"; each is Normal.
    waiting = wait_for(lambda: [e for e in helpers.events(apiserver, "GangWaiting")
                                if "2 of its 3 pods (minCount) exist" in (e.get("note") or "")] and
                       helpers.events(apiserver, "GangWaiting"), what="the GangWaiting Event")
    assert {e["type"] for e in waiting} == {"Normal"}
    apiserver.seed([member("trainer-2", "gpus-1", "trainers")])
    pods = [f"trainer-{i}" for i in range(3)]
    wait_for(lambda: _all_bound(apiserver, pods), what="the whole gang bound")
    assert set(helpers.allocated_devices(apiserver).values()) == {1}
    assert len(_allocated(apiserver)) == 3
    _binds_after_claim_writes(apiserver)
    wait_for(lambda: helpers.events(apiserver, "GangPlaced"), what="the PodGroup's GangPlaced Event")


def test_a_gang_first_fit_would_miss_is_placed(apiserver: Cluster, operator: OperatorThread) -> None:
    """Two nodes of 4 GPUs; members want 1, 1, 3, 3. Member by member (kube-scheduler's way) both small ones
    go to the first node and the second large one fits nowhere; the joint search puts one of each per node."""
    names = _setup(apiserver, {"node-a": 4, "node-b": 4}, counts=(1, 3))
    apiserver.seed([pod_group("mixed", 4)])
    apiserver.seed([member("m0", "gpus-1", "mixed"), member("m1", "gpus-1", "mixed"),
                    member("m2", "gpus-3", "mixed"), member("m3", "gpus-3", "mixed")])
    pods = ["m0", "m1", "m2", "m3"]
    wait_for(lambda: _all_bound(apiserver, pods), what="the whole gang bound")
    where = _nodes(apiserver, pods)
    assert {where["m0"], where["m1"]} == {where["m2"], where["m3"]} == set(names.values())
    assert sum(helpers.allocated_devices(apiserver).values()) == 8
    assert set(helpers.allocated_devices(apiserver).values()) == {1}


def test_a_gang_that_cannot_fit_leaves_nothing_reserved_and_every_member_says_why(
        apiserver: Cluster, operator: OperatorThread) -> None:
    _setup(apiserver, {"node-a": 2, "node-b": 2}, counts=(2,))
    apiserver.seed([pod_group("big", 3)])
    pods = [f"big-{i}" for i in range(3)]
    apiserver.seed([member(p, "gpus-2", "big") for p in pods])
    for p in pods:
        wait_for(lambda p=p: _says(apiserver, p, "gang of 3 does not fit"), what=f"{p} says why")
        assert (_scheduled(apiserver, p) or {}).get("reason") == "Unschedulable"
    (event,) = wait_for(lambda: helpers.events(apiserver, "GangUnfit"), what="the GangUnfit Event")
    assert event["regarding"]["kind"] == "PodGroup" and event["regarding"]["name"] == "big"
    assert "PodGroup" in event["note"] and "gang of 3" in event["note"]
    assert not _allocated(apiserver)
    assert not any(_nodes(apiserver, pods).values())
    # Room for the third member: the gang is retried on the change, and placed whole.
    node_c = apiserver.name("node-c")
    apiserver.seed([cluster.node(node_c), cluster.gpu_slice(node_c, 2)])
    wait_for(lambda: _all_bound(apiserver, pods), what="the gang placed once it fits")
    assert set(helpers.allocated_devices(apiserver).values()) == {1}


def _group_scheduled(server: Cluster, name: str) -> Obj:
    """The PodGroup's condition kube-scheduler writes (`PodGroupInitiallyScheduled` in v1beta1)."""
    group = server.get("scheduling.k8s.io/v1beta1", "PodGroup", name, server.namespace) or {}
    found = helpers.condition(group, "PodGroupInitiallyScheduled") or {}
    return {**found, "generation": (group.get("metadata") or {}).get("generation")}


def test_the_pod_group_says_whether_the_gang_was_scheduled_as_kube_scheduler_writes_it(
        apiserver: Cluster, operator: OperatorThread) -> None:
    """kube-scheduler 1.37 records a gang's scheduling on its PodGroup: `PodGroupInitiallyScheduled` False
    (reason Unschedulable, why, observedGeneration) while it does not fit, True (reason Scheduled) once it
    is placed, and never False again: a member leaving later does not undo it."""
    _setup(apiserver, {"node-a": 1})
    apiserver.seed([pod_group("pair", 2)])
    pods = ["pair-0", "pair-1"]
    apiserver.seed([member(p, "gpus-1", "pair") for p in pods])
    wait_for(lambda: _group_scheduled(apiserver, "pair").get("reason") == "Unschedulable",
             what="the PodGroup told the gang does not fit")
    said = _group_scheduled(apiserver, "pair")
    assert said["status"] == "False" and "gang of 2" in said["message"], said
    assert said.get("observedGeneration") == said["generation"]  # a PodGroup has no generation in 1.37
    node_b = apiserver.name("node-b")
    apiserver.seed([cluster.node(node_b), cluster.gpu_slice(node_b, 2)])
    wait_for(lambda: _all_bound(apiserver, pods), what="the gang placed once it fits")
    wait_for(lambda: _group_scheduled(apiserver, "pair").get("status") == "True", what="the PodGroup told it is placed")
    placed = _group_scheduled(apiserver, "pair")
    assert placed["reason"] == "Scheduled" and "gang of 2 placed" in placed["message"], placed
    helpers.delete_pod(apiserver, "pair-1")
    apiserver.seed([member("pair-2", "gpus-1", "pair")])
    wait_for(lambda: helpers.node_of(apiserver, "pair-2"), what="the replacement member placed")
    assert _group_scheduled(apiserver, "pair")["status"] == "True"


def test_members_sharing_a_node_fit_its_cpu_together(apiserver: Cluster, operator: OperatorThread) -> None:
    """node-a (the tightest: 2 GPUs) has cpu for one member, node-b (4 GPUs) for four: the search must
    not put both members on node-a for its GPUs, it puts the second on node-b (before, the gang was
    reported unfit after the search had filled node-a)."""
    gpu = apiserver.name("gpu")
    names = {short: apiserver.name(short) for short in ("node-a", "node-b")}
    apiserver.seed([cluster.gpu_class(gpu), cluster.template("gpus-1", device_class=gpu),
                    cluster.node(names["node-a"], cpu="1"), cluster.gpu_slice(names["node-a"], 2),
                    cluster.node(names["node-b"], cpu="4"), cluster.gpu_slice(names["node-b"], 4),
                    pod_group("cpus", 2)])
    _wait_schedulable(apiserver, list(names.values()))
    pods = ["c0", "c1"]
    apiserver.seed([member(p, "gpus-1", "cpus", cpu="1") for p in pods])
    wait_for(lambda: _all_bound(apiserver, pods), what="the gang bound")
    assert set(_nodes(apiserver, pods).values()) == set(names.values())
    assert set(helpers.allocated_devices(apiserver).values()) == {1}


def test_a_gang_lands_in_one_topology_domain(apiserver: Cluster, operator: OperatorThread) -> None:
    """Rack a has one node of 2 GPUs, rack b two such nodes: a gang of two 2-GPU members needs rack b,
    though first-fit by name would put one member on the node of rack a."""
    rack = "topology.example.com/rack"
    names = _setup(apiserver, {"node-a0": 2, "node-b0": 2, "node-b1": 2}, counts=(2,),
                   labels={"node-a0": {rack: "a"}, "node-b0": {rack: "b"}, "node-b1": {rack: "b"}})
    apiserver.seed([pod_group("racked", 2, topology=rack)])
    apiserver.seed([member("r0", "gpus-2", "racked"), member("r1", "gpus-2", "racked")])
    wait_for(lambda: _all_bound(apiserver, ["r0", "r1"]), what="the gang bound")
    assert set(_nodes(apiserver, ["r0", "r1"]).values()) == {names["node-b0"], names["node-b1"]}


def test_gate_mode_ungates_every_member_after_every_claim_is_written(
        apiserver: Cluster, operator: OperatorThread) -> None:
    names = _setup(apiserver, {"node-a": 1, "node-b": 1})
    apiserver.seed([pod_group("gated", 2)])
    pods = ["g0", "g1"]
    apiserver.seed([member(p, "gpus-1", "gated", scheduler=None, gate=GATE) for p in pods])

    def ungated() -> bool:
        return all(not (helpers.pod(apiserver, p)["spec"].get("schedulingGates")) for p in pods)

    wait_for(ungated, what="both members ungated")
    pinned = {helpers.pod(apiserver, p)["spec"]["nodeSelector"]["kubernetes.io/hostname"] for p in pods}
    assert pinned == set(names.values())
    assert len(_allocated(apiserver)) == 2
    _binds_after_claim_writes(apiserver, "PATCH", f"/api/v1/namespaces/{apiserver.namespace}/pods/g?")


def test_a_refused_claim_write_rolls_the_gang_back(
        apiserver: Cluster, faults: Faults, operator: OperatorThread) -> None:
    """Every allocation write of the second member's claim is refused (403, as an admission webhook
    denies it): the first member's claim, written already, is rolled back each time, no member is ever
    bound, and every member says why; once the writes go through, the whole gang is placed."""
    _setup(apiserver, {"node-a": 2})
    rule = faults.next("PUT", f"/apis/resource.k8s.io/v1/namespaces/{apiserver.namespace}/resourceclaims/w1-*/status",
                       403, times=10_000, message="denied by the injected webhook")
    apiserver.seed([pod_group("pair", 2)])
    pods = ["w0", "w1"]
    apiserver.seed([member(p, "gpus-1", "pair") for p in pods])
    wait_for(lambda: faults.counters()["rules"].get(str(rule.id), 0) >= 2, what="the write refused twice")
    sandbox = getattr(apiserver, "server")  # noqa: B009
    rollbacks = [r for r in sandbox.requests.matching("PUT", STATUS) if "/resourceclaims/w0-" in r.path
                 and r.status == 200 and b'"allocation"' not in (r.raw or b"")]
    assert rollbacks, "the first member's claim was never rolled back"
    wait_for(lambda: not _allocated(apiserver), what="nothing left allocated between attempts")
    assert not any(_nodes(apiserver, pods).values())
    assert not sandbox.requests.matching("POST", "*/binding")
    for p in pods:
        wait_for(lambda p=p: _says(apiserver, p, "denied by the injected webhook"), what=f"{p} says why")
    faults.clear()
    wait_for(lambda: _all_bound(apiserver, pods), what="the gang placed once writes go through")
    assert set(helpers.allocated_devices(apiserver).values()) == {1}
    assert len(sandbox.requests.matching("POST", "*/binding")) == 2


def test_a_claim_write_of_unknown_outcome_is_read_back_not_rolled_back(
        apiserver: Cluster, faults: Faults, operator: OperatorThread) -> None:
    """The second member's allocation is applied but answered 504: the write is read back and counts as
    done; the gang is placed with each device once."""
    _setup(apiserver, {"node-a": 2})
    faults.watch_lag(2.0, path="*resourceclaims*")
    rule = faults.applied_then("PUT", f"/apis/resource.k8s.io/v1/namespaces/{apiserver.namespace}/resourceclaims/"
                                      "u1-*/status", 504, times=1)
    apiserver.seed([pod_group("unsure", 2)])
    pods = ["u0", "u1"]
    apiserver.seed([member(p, "gpus-1", "unsure") for p in pods])
    wait_for(lambda: _all_bound(apiserver, pods), what="the gang bound")
    assert faults.counters()["rules"].get(str(rule.id)) == 1
    assert set(helpers.allocated_devices(apiserver).values()) == {1}
    assert len(_allocated(apiserver)) == 2
    _binds_after_claim_writes(apiserver)


def test_a_gang_half_written_when_the_operator_died_is_completed_or_rolled_back(
        apiserver: Cluster, faults: Faults) -> None:
    """The first operator writes the first member's claim, then every write of the second one fails with an
    unknown outcome (500) and it dies. A new operator finds the first claim allocated for an unbound
    member: with its node tainted the gang cannot fit, so the reservation is given back (rolled back);
    once the taint is gone the gang is completed."""
    apiserver.seed(crds())
    names = _setup(apiserver, {"node-a": 2})
    faults.next("PUT", f"/apis/resource.k8s.io/v1/namespaces/{apiserver.namespace}/resourceclaims/h1-*/status",
                500, times=10_000)
    apiserver.seed([pod_group("half", 2)])
    pods = ["h0", "h1"]
    first = OperatorThread(operator_settings(apiserver)).start()
    try:
        apiserver.seed([member(p, "gpus-1", "half") for p in pods])
        (written,) = wait_for(lambda: _allocated(apiserver), timeout=60, what="the first member's claim written")
    finally:
        first.stop()
    assert written["metadata"]["name"].startswith("h0-")
    assert not any(_nodes(apiserver, pods).values())
    faults.clear()
    node_path = f"/api/v1/nodes/{names['node-a']}"
    apiserver.request("PATCH", node_path, {"spec": {"taints": [{"key": "maintenance", "effect": "NoSchedule"}]}})
    second = OperatorThread(operator_settings(apiserver)).start()
    try:
        wait_for(lambda: not _allocated(apiserver), timeout=60, what="the half-written gang rolled back")
        for p in pods:
            wait_for(lambda p=p: _says(apiserver, p, "gang of 2"), what=f"{p} says why")
        assert not any(_nodes(apiserver, pods).values())
        apiserver.request("PATCH", node_path, {"spec": {"taints": None}})
        wait_for(lambda: _all_bound(apiserver, pods), timeout=60, what="the gang completed")
    finally:
        second.stop()
    assert set(helpers.allocated_devices(apiserver).values()) == {1}


INTENT = "dralloc.io/GangBinds"  # the PodGroup status condition recording a gang's binds


def _intent(server: Cluster, group: str) -> Obj | None:
    stored = server.get("scheduling.k8s.io/v1beta1", "PodGroup", group, server.namespace) or {}
    for condition in (stored.get("status") or {}).get("conditions") or []:
        if condition.get("type") == INTENT and condition.get("status") == "True":
            return dict(json.loads(condition["message"]))
    return None


def _die_during_the_binds(server: Cluster, faults: Faults, group: str, pods: list[str]) -> Obj:
    """An operator writes every claim of the gang and binds the first member; every bind of the second
    fails with an unknown outcome (500) until the operator is stopped there: a crash during the binds.
    The recorded binds (the PodGroup's status condition), as the dead operator left them."""
    rule = faults.next("POST", f"/api/v1/namespaces/{server.namespace}/pods/{pods[1]}/binding", 500, times=10_000)
    server.seed([pod_group(group, 2)])
    first = OperatorThread(operator_settings(server)).start()
    try:
        server.seed([member(p, "gpus-1", group) for p in pods])
        wait_for(lambda: helpers.node_of(server, pods[0]), timeout=60, what="the first member bound")
        wait_for(lambda: faults.counters()["rules"].get(str(rule.id), 0) >= 1, what="the second bind tried")
    finally:
        first.stop()
    faults.clear()
    assert helpers.node_of(server, pods[1]) is None
    assert len(_allocated(server)) == 2, "every claim was written before the first bind"
    intent = _intent(server, group)
    assert intent is not None, "the binds were not recorded before the first one"
    assert [m["pod"] for m in intent["members"]] == pods
    return intent


def test_a_gang_whose_operator_died_during_the_binds_is_completed_as_recorded(
        apiserver: Cluster, faults: Faults) -> None:
    """After the crash the node gets a NoSchedule taint, so deciding the second member again would find
    no node for it and leave the gang partly bound for good. The new operator instead completes the
    recorded binds (the devices are held there for it), then removes the record."""
    apiserver.seed(crds())
    names = _setup(apiserver, {"node-a": 2})
    pods = ["d0", "d1"]
    intent = _die_during_the_binds(apiserver, faults, "dying", pods)
    assert {m["node"] for m in intent["members"]} == {names["node-a"]}
    apiserver.request("PATCH", f"/api/v1/nodes/{names['node-a']}",
                      {"spec": {"taints": [{"key": "maintenance", "effect": "NoSchedule"}]}})
    second = OperatorThread(operator_settings(apiserver)).start()
    try:
        wait_for(lambda: helpers.node_of(apiserver, "d1") == names["node-a"], timeout=60,
                 what="the second member bound as recorded")
        wait_for(lambda: _intent(apiserver, "dying") is None, what="the record removed")
    finally:
        second.stop()
    assert helpers.node_of(apiserver, "d0") == names["node-a"]
    assert set(helpers.allocated_devices(apiserver).values()) == {1}
    assert len(_allocated(apiserver)) == 2


def test_a_recorded_bind_that_cannot_be_completed_gives_back_and_is_placed_anew(
        apiserver: Cluster, faults: Faults) -> None:
    """After the crash the second member's recorded node is deleted: it cannot be bound there, so its
    claim is given back (deallocated), the record removed, and the member placed again beside the bound
    one (here on a new node); the bound member stays where it is (a pod cannot be unbound)."""
    apiserver.seed(crds())
    names = _setup(apiserver, {"node-a": 1, "node-b": 1})
    pods = ["e0", "e1"]
    intent = _die_during_the_binds(apiserver, faults, "orphan", pods)
    recorded = {m["pod"]: m["node"] for m in intent["members"]}
    assert set(recorded.values()) == set(names.values())
    apiserver.request("DELETE", f"/api/v1/nodes/{recorded['e1']}")
    node_c = apiserver.name("node-c")
    second = OperatorThread(operator_settings(apiserver)).start()
    try:
        wait_for(lambda: _intent(apiserver, "orphan") is None, timeout=60, what="the record removed")
        apiserver.seed([cluster.node(node_c), cluster.gpu_slice(node_c, 1)])
        wait_for(lambda: helpers.node_of(apiserver, "e1") == node_c, timeout=60, what="the member placed anew")
    finally:
        second.stop()
    assert helpers.node_of(apiserver, "e0") == recorded["e0"]
    pools = {r["pool"] for c in _allocated(apiserver) if c["metadata"]["name"].startswith("e1-")
             for r in c["status"]["allocation"]["devices"]["results"]}
    assert pools == {node_c}
    assert set(helpers.allocated_devices(apiserver).values()) == {1}


def _cpu_member(name: str, group: str) -> Obj:
    """A gang member without claims (its node is chosen by node fit alone)."""
    obj = cluster.pod(name, cpu="1")
    obj["spec"]["schedulingGroup"] = {"podGroupName": group}
    return obj


def _forged_record(pods: list[Obj], node: str) -> str:
    return json.dumps({"members": [{"pod": p["metadata"]["name"], "uid": p["metadata"]["uid"], "node": node}
                                   for p in pods]})


def test_a_tenant_cannot_choose_its_gangs_nodes_with_an_annotation(
        apiserver: Cluster, operator: OperatorThread) -> None:
    """Issue 26: a tenant annotating its own PodGroup with a record of binds (where dralloc kept it before)
    made dralloc bind its pods there unchecked, onto a node with an untolerated NoSchedule taint. Records
    live in the PodGroup's status now, which tenants cannot write: the annotation is never read."""
    names = _setup(apiserver, {"node-a": 1, "node-b": 1})
    apiserver.request("PATCH", f"/api/v1/nodes/{names['node-a']}",
                      {"spec": {"taints": [{"key": "reserved", "effect": "NoSchedule"}]}})
    pods = apiserver.seed([_cpu_member(f"t{i}", "forged") for i in range(2)])
    group = pod_group("forged", 2)
    group["metadata"]["annotations"] = {"dralloc.io/gang-binds": _forged_record(pods, names["node-a"])}
    apiserver.seed([group])
    wait_for(lambda: _all_bound(apiserver, ["t0", "t1"]), timeout=60, what="the gang bound")
    assert set(_nodes(apiserver, ["t0", "t1"]).values()) == {names["node-b"]}


def test_a_recorded_bind_is_checked_for_fit_before_it_is_carried_out(
        apiserver: Cluster, operator: OperatorThread) -> None:
    """Whatever a record says (here one written into the status, as only the scheduler may), a member is
    never bound where node fit refuses it (its nodeSelector, here): the record is dropped and the gang
    placed where it fits."""
    names = _setup(apiserver, {"node-a": 1, "node-b": 1}, labels={"node-b": {"tier": "gpu"}})
    members = [_cpu_member(f"s{i}", "recorded") for i in range(2)]
    for obj in members:
        obj["spec"]["nodeSelector"] = {"tier": "gpu"}
    pods = apiserver.seed(members)
    group = pod_group("recorded", 2)
    group["status"] = {"conditions": [{"type": INTENT, "status": "True", "reason": "BindsRecorded",
                                       "message": _forged_record(pods, names["node-a"]),
                                       "lastTransitionTime": "2026-01-01T00:00:00Z"}]}
    apiserver.seed([group])
    wait_for(lambda: _all_bound(apiserver, ["s0", "s1"]), timeout=60, what="the gang bound")
    assert set(_nodes(apiserver, ["s0", "s1"]).values()) == {names["node-b"]}
    wait_for(lambda: _intent(apiserver, "recorded") is None, what="the record removed")


def test_pods_without_a_schedulinggroup_are_placed_one_by_one_beside_a_waiting_gang(
        apiserver: Cluster, operator: OperatorThread) -> None:
    _setup(apiserver, {"node-a": 2})
    apiserver.seed([pod_group("later", 3)])
    apiserver.seed([member("gang-0", "gpus-1", "later"), cluster.pod("single", template_name="gpus-1")])
    wait_for(lambda: helpers.node_of(apiserver, "single"), what="the single pod bound")
    wait_for(lambda: _says(apiserver, "gang-0", "minCount"), what="the member waiting")
    assert helpers.node_of(apiserver, "gang-0") is None


def _readme_example() -> list[Obj]:
    text = (REPO / "README.md").read_text()
    section = text[text.index("### Gangs: PodGroups placed all or nothing"):]
    block = section[section.index("```yaml\n") + len("```yaml\n"):]
    return [doc for doc in yaml.safe_load_all(block[:block.index("```")]) if doc]


def test_the_readme_example_is_placed_as_it_says(apiserver: Cluster, operator: OperatorThread) -> None:
    names = _setup(apiserver, {"node-a": 4, "node-b": 4}, counts=())
    gpu = apiserver.name("gpu")
    objects = _readme_example()
    for obj in objects:
        if obj["kind"] == "ResourceClaimTemplate":
            for request in obj["spec"]["spec"]["devices"]["requests"]:
                request["exactly"]["deviceClassName"] = gpu
    apiserver.seed(objects)
    pods = [f"worker-{i}" for i in range(4)]
    wait_for(lambda: _all_bound(apiserver, pods), what="the README's gang bound")
    where = _nodes(apiserver, pods)
    assert where["worker-0"] == where["worker-2"] != where["worker-1"] == where["worker-3"]
    assert set(where.values()) == set(names.values())
    (event,) = wait_for(lambda: helpers.events(apiserver, "GangPlaced"), what="the GangPlaced Event")
    short = {node: short for short, node in names.items()}
    note = event["note"]
    for node, name in short.items():
        note = note.replace(node, name)
    assert note == "gang of 4 placed: worker-0=node-a, worker-1=node-b, worker-2=node-a, worker-3=node-b"


def test_a_member_with_a_bad_claim_stops_only_its_gang(apiserver: Cluster, operator: OperatorThread) -> None:
    """One member's claim names a DeviceClass that does not exist: every member of that gang says so
    (SchedulerError), nothing of it is reserved, and a pod outside the gang is placed as usual."""
    _setup(apiserver, {"node-a": 4})
    apiserver.seed([cluster.template("no-class", device_class=apiserver.name("missing")), pod_group("broken", 2)])
    apiserver.seed([member("b0", "gpus-1", "broken"), member("b1", "no-class", "broken"),
                    cluster.pod("single", template_name="gpus-1")])
    wait_for(lambda: helpers.node_of(apiserver, "single"), what="the pod outside the gang bound")
    for p in ("b0", "b1"):
        wait_for(lambda p=p: _says(apiserver, p, apiserver.name("missing")), what=f"{p} names the missing class")
        assert (_scheduled(apiserver, p) or {}).get("reason") == "SchedulerError"
    assert helpers.node_of(apiserver, "b0") is None and helpers.node_of(apiserver, "b1") is None
    assert len(_allocated(apiserver)) == 1


def test_a_podgroup_claim_is_allocated_once_and_reserved_for_the_group(
        apiserver: Cluster, operator: OperatorThread) -> None:
    """A claim the PodGroup lists (spec.resourceClaims) and every member lists under the same entry: a
    network-attached device (allNodes), allocated once with the gang, reserved for the PodGroup, while
    the members spread over two nodes of one GPU each."""
    _setup(apiserver, {"node-a": 1, "node-b": 1})
    fabric, driver = apiserver.name("fabric"), "fabric.example.com"
    apiserver.seed([
        {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": fabric},
         "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": apiserver.name("fabric")},
         "spec": {"driver": driver, "allNodes": True,
                  "pool": {"name": apiserver.name("fabric"), "generation": 1, "resourceSliceCount": 1},
                  "devices": [{"name": "link-0"}, {"name": "link-1"}]}},
        cluster.claim("group-link", device_class=fabric),
    ])
    group = pod_group("linked", 2)
    group["spec"]["resourceClaims"] = [{"name": "shared", "resourceClaimName": "group-link"}]
    apiserver.seed([group])
    pods = ["l0", "l1"]
    objs = []
    for p in pods:
        obj = cluster.pod(p, template_name="gpus-1", claim_name="group-link")
        obj["spec"]["schedulingGroup"] = {"podGroupName": "linked"}
        objs.append(obj)
    apiserver.seed(objs)
    wait_for(lambda: _all_bound(apiserver, pods), what="the gang bound")
    assert len(set(_nodes(apiserver, pods).values())) == 2
    link = helpers.claim(apiserver, "group-link")
    stored = apiserver.get("scheduling.k8s.io/v1beta1", "PodGroup", "linked", apiserver.namespace) or {}
    assert link["status"]["reservedFor"] == [{"apiGroup": "scheduling.k8s.io", "resource": "podgroups",
                                              "name": "linked", "uid": stored["metadata"]["uid"]}]
    assert len(link["status"]["allocation"]["devices"]["results"]) == 1
    assert set(helpers.allocated_devices(apiserver).values()) == {1}
    # The gang done (members deleted) and its PodGroup gone, the reservation goes and the link is
    # given back: kube-controller-manager 1.37 does this when it runs the claim lifecycle, dralloc
    # when it does. (kube-apiserver gives a PodGroup a protection finalizer that KCM removes once
    # no pod uses it; the sandbox, without KCM, deletes it at once.)
    for p in pods:
        apiserver.request("DELETE", f"/api/v1/namespaces/{apiserver.namespace}/pods/{p}", {"gracePeriodSeconds": 0})
    apiserver.request("DELETE", f"/apis/scheduling.k8s.io/v1beta1/namespaces/{apiserver.namespace}/podgroups/linked")
    wait_for(lambda: apiserver.get("scheduling.k8s.io/v1beta1", "PodGroup", "linked", apiserver.namespace) is None,
             timeout=90, what="the PodGroup gone")
    wait_for(lambda: not (helpers.claim(apiserver, "group-link").get("status") or {}).get("allocation"),
             what="the PodGroup's claim unreserved and deallocated")


def test_a_podgroup_claim_from_a_template_is_created_for_the_group_and_shared_by_its_members(
        apiserver: Cluster, operator: OperatorThread) -> None:
    """A PodGroup entry by resourceClaimTemplateName, listed by both members under the same entry: one
    claim is generated for the PodGroup (as kube-controller-manager 1.37 names and owns it), recorded in
    the PodGroup's status and in each member's, allocated once and reserved for the PodGroup; the
    members get no claim of their own for that entry."""
    _setup(apiserver, {"node-a": 1, "node-b": 1})
    fabric, driver = apiserver.name("fabric"), "fabric.example.com"
    apiserver.seed([
        {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": fabric},
         "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": apiserver.name("fabric")},
         "spec": {"driver": driver, "allNodes": True,
                  "pool": {"name": apiserver.name("fabric"), "generation": 1, "resourceSliceCount": 1},
                  "devices": [{"name": "link-0"}, {"name": "link-1"}]}},
        cluster.template("fabric-link", device_class=fabric),
    ])
    group = pod_group("fabricated", 2)
    group["spec"]["resourceClaims"] = [{"name": "link", "resourceClaimTemplateName": "fabric-link"}]
    apiserver.seed([group])
    pods = ["f0", "f1"]
    objs = []
    for p in pods:
        obj = member(p, "gpus-1", "fabricated")
        obj["spec"]["resourceClaims"].append({"name": "link", "resourceClaimTemplateName": "fabric-link"})
        objs.append(obj)
    apiserver.seed(objs)
    wait_for(lambda: _all_bound(apiserver, pods), what="the gang bound")
    stored = apiserver.get("scheduling.k8s.io/v1beta1", "PodGroup", "fabricated", apiserver.namespace) or {}
    (recorded,) = stored["status"]["resourceClaimStatuses"]
    assert recorded["name"] == "link" and recorded["resourceClaimName"].startswith("fabricated-link-")
    link = helpers.claim(apiserver, recorded["resourceClaimName"])
    assert link["metadata"]["ownerReferences"] == [{
        "apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "name": "fabricated",
        "uid": stored["metadata"]["uid"], "controller": True}]
    assert link["metadata"]["annotations"]["resource.kubernetes.io/pod-claim-name"] == "link"
    assert link["status"]["reservedFor"] == [{"apiGroup": "scheduling.k8s.io", "resource": "podgroups",
                                              "name": "fabricated", "uid": stored["metadata"]["uid"]}]
    for p in pods:
        statuses = {s["name"]: s.get("resourceClaimName") for s in helpers.pod(apiserver, p)["status"]
                    ["resourceClaimStatuses"]}
        assert statuses["link"] == recorded["resourceClaimName"]
    assert not [c for c in helpers.claims(apiserver) if "-link-" in c["metadata"]["name"]
                and not c["metadata"]["name"].startswith("fabricated-")], "a member got its own claim for the entry"
    assert len(set(_nodes(apiserver, pods).values())) == 2
    assert set(helpers.allocated_devices(apiserver).values()) == {1}


@pytest.mark.sandbox(kubernetes_version="1.36")
def test_on_1_36_the_served_v1alpha2_podgroups_are_found_and_used(
        request: pytest.FixtureRequest, apiserver: Cluster, operator: OperatorThread) -> None:
    """A sandbox running as 1.36 serves scheduling.k8s.io/v1alpha2 only: the operator finds it by
    discovery, places a gang of a v1alpha2 PodGroup (topology key, a claim from its template) as one,
    and owns the PodGroup's claim by the served version."""
    if real_mode(request.config):
        pytest.skip("needs a Kubernetes 1.36 API server, which serves scheduling.k8s.io/v1alpha2; the e2e control "
                    "plane is 1.37 and serves v1beta1 (the other gang tests run on it)")
    rack = "topology.example.com/rack"
    names = _setup(apiserver, {"node-a0": 1, "node-b0": 1, "node-b1": 1},
                   labels={"node-a0": {rack: "a"}, "node-b0": {rack: "b"}, "node-b1": {rack: "b"}})
    fabric, driver = apiserver.name("fabric"), "fabric.example.com"
    apiserver.seed([
        {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": fabric},
         "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": apiserver.name("fabric")},
         "spec": {"driver": driver, "allNodes": True,
                  "pool": {"name": apiserver.name("fabric"), "generation": 1, "resourceSliceCount": 1},
                  "devices": [{"name": "link-0"}]}},
        cluster.template("fabric-link", device_class=fabric),
    ])
    group = pod_group("old", 2, topology=rack)
    group["apiVersion"] = "scheduling.k8s.io/v1alpha2"
    group["spec"]["resourceClaims"] = [{"name": "link", "resourceClaimTemplateName": "fabric-link"}]
    apiserver.seed([group])
    pods = ["o0", "o1"]
    objs = []
    for p in pods:
        obj = member(p, "gpus-1", "old")
        obj["spec"]["resourceClaims"].append({"name": "link", "resourceClaimTemplateName": "fabric-link"})
        objs.append(obj)
    apiserver.seed(objs)
    wait_for(lambda: _all_bound(apiserver, pods), what="the gang bound")
    assert set(_nodes(apiserver, pods).values()) == {names["node-b0"], names["node-b1"]}
    stored = apiserver.get("scheduling.k8s.io/v1alpha2", "PodGroup", "old", apiserver.namespace) or {}
    (recorded,) = stored["status"]["resourceClaimStatuses"]
    link = helpers.claim(apiserver, recorded["resourceClaimName"])
    assert link["metadata"]["ownerReferences"][0]["apiVersion"] == "scheduling.k8s.io/v1alpha2"
    assert link["status"]["reservedFor"] == [{"apiGroup": "scheduling.k8s.io", "resource": "podgroups",
                                              "name": "old", "uid": stored["metadata"]["uid"]}]
    wait_for(lambda: helpers.events(apiserver, "GangPlaced"), what="the PodGroup's GangPlaced Event")


def test_a_gang_with_anti_affinity_between_its_members_spreads_over_nodes(apiserver: Cluster,
                                                                         operator: OperatorThread) -> None:
    """Members placed together must not repel each other: with room for all on one node, a gang of 3 whose
    members keep apart (required anti-affinity on the hostname) takes 3 nodes, jointly."""
    names = _setup(apiserver, {"a": 4, "b": 4, "c": 4})
    apiserver.seed([pod_group("ring", 3)])
    pods = [f"ring-{i}" for i in range(3)]
    members = []
    for p in pods:
        obj = member(p, "gpus-1", "ring")
        obj["metadata"]["labels"] = {"gang": "ring"}
        obj["spec"]["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"gang": "ring"}}, "topologyKey": "kubernetes.io/hostname"}]}}
        members.append(obj)
    apiserver.seed(members)
    wait_for(lambda: _all_bound(apiserver, pods), what="the gang bound")
    assert sorted(_nodes(apiserver, pods).values()) == sorted(names.values())  # type: ignore[type-var]


def _related_members(group: str, count: int, rule: Obj) -> tuple[list[str], list[Obj]]:
    """`count` members of `group`, labelled gang=<group>, each with the affinity or spread fields `rule`."""
    pods = [f"{group}-{i}" for i in range(count)]
    members = []
    for p in pods:
        obj = member(p, "gpus-1", group)
        obj["metadata"]["labels"] = {"gang": group}
        obj["spec"].update(json.loads(json.dumps(rule)))
        members.append(obj)
    return pods, members


def _zones_of(server: Cluster, pods: list[str], zone_of: dict[str, str]) -> list[str]:
    return sorted(zone_of[node] for node in _nodes(server, pods).values() if node is not None)


ZONE = "topology.kubernetes.io/zone"


def test_a_gang_with_zone_anti_affinity_puts_each_member_in_its_own_zone(apiserver: Cluster,
                                                                         operator: OperatorThread) -> None:
    """Anti-affinity over a zone relates members on different nodes: two members that keep apart by zone
    take one node in each zone, though one zone has room for both on two nodes."""
    labels = {"a1": {ZONE: "a"}, "a2": {ZONE: "a"}, "b1": {ZONE: "b"}}
    names = _setup(apiserver, {"a1": 1, "a2": 1, "b1": 4}, labels=labels)
    zone_of = {names[k]: v[ZONE] for k, v in labels.items()}
    apiserver.seed([pod_group("apart", 2)])
    pods, members = _related_members("apart", 2, {"affinity": {"podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"gang": "apart"}}, "topologyKey": ZONE}]}}})
    apiserver.seed(members)
    wait_for(lambda: _all_bound(apiserver, pods), what="the gang bound")
    assert _zones_of(apiserver, pods, zone_of) == ["a", "b"]


def test_a_gang_with_zone_affinity_between_its_members_lands_in_one_zone(apiserver: Cluster,
                                                                         operator: OperatorThread) -> None:
    """Required pod affinity over a zone among members (no other pod matches): the first member placed goes
    anywhere, as kube-scheduler's first pod of a series, and the others must join its zone; the search
    moves the first member when its zone cannot hold them all."""
    labels = {"a1": {ZONE: "a"}, "b1": {ZONE: "b"}, "b2": {ZONE: "b"}}
    names = _setup(apiserver, {"a1": 1, "b1": 2, "b2": 1}, labels=labels)
    zone_of = {names[k]: v[ZONE] for k, v in labels.items()}
    apiserver.seed([pod_group("together", 3)])
    pods, members = _related_members("together", 3, {"affinity": {"podAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"gang": "together"}}, "topologyKey": ZONE}]}}})
    apiserver.seed(members)
    wait_for(lambda: _all_bound(apiserver, pods), what="the gang bound")
    assert _zones_of(apiserver, pods, zone_of) == ["b", "b", "b"]


def test_a_gang_with_a_spread_constraint_counts_the_members_placed_before(apiserver: Cluster,
                                                                          operator: OperatorThread) -> None:
    """A DoNotSchedule spread over zones (maxSkew 1) between members: a gang of 4 that would fit on one node
    takes two in each zone, as kube-scheduler placing them one by one would count the earlier ones."""
    labels = {"a1": {ZONE: "a"}, "b1": {ZONE: "b"}}
    names = _setup(apiserver, {"a1": 4, "b1": 4}, labels=labels)
    zone_of = {names[k]: v[ZONE] for k, v in labels.items()}
    apiserver.seed([pod_group("even", 4)])
    pods, members = _related_members("even", 4, {"topologySpreadConstraints": [
        {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
         "labelSelector": {"matchLabels": {"gang": "even"}}}]})
    apiserver.seed(members)
    wait_for(lambda: _all_bound(apiserver, pods), what="the gang bound")
    assert _zones_of(apiserver, pods, zone_of) == ["a", "a", "b", "b"]


def test_a_gang_whose_members_cannot_keep_apart_is_not_placed_and_says_so(apiserver: Cluster,
                                                                          operator: OperatorThread) -> None:
    """Three members that keep apart by zone, two zones: no placement holds, nothing is bound or reserved, and
    every member's condition says the gang does not fit."""
    labels = {"a1": {ZONE: "a"}, "b1": {ZONE: "b"}}
    _setup(apiserver, {"a1": 4, "b1": 4}, labels=labels)
    apiserver.seed([pod_group("crowd", 3)])
    pods, members = _related_members("crowd", 3, {"affinity": {"podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"gang": "crowd"}}, "topologyKey": ZONE}]}}})
    apiserver.seed(members)
    wait_for(lambda: all(_says(apiserver, p, "does not fit") for p in pods), what="every member says why")
    assert not any(_nodes(apiserver, pods).values())
    assert not _allocated(apiserver)
