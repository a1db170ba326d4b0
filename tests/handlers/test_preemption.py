"""Priority preemption through the operator (issue 29): a pod that fits nowhere removes lower-priority pods
holding the devices it needs, as kube-scheduler's preemption does for cpu and memory.

On the sandbox and on the real control plane (`--e2e-real`): PriorityClasses resolve into the pods'
priorities (the Priority admission plugin), the victims' claims are released by the claim lifecycle
(dralloc's or kube-controller-manager's), and terminating victims are finished by the sandbox or the
real cluster's stand-in node agent, as a kubelet would.
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.handlers import helpers
from tests.handlers.conftest import Cluster, OperatorThread, operator_settings, wait_for
from tests.handlers.test_gangs import member, pod_group

from dralloc.sandbox import Faults
from dralloc.testing import cluster
from dralloc.testing.cluster import crds

Obj = dict[str, Any]


def priority_class(name: str, value: int) -> Obj:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value}


def gpu_pod(name: str, priority_class_name: str, **spec: Any) -> Obj:
    found = cluster.pod(name, template_name="one-gpu")
    found["spec"]["priorityClassName"] = priority_class_name
    found["spec"]["terminationGracePeriodSeconds"] = 1
    found["spec"].update(spec)
    return found


def admitted(apiserver: Cluster, objs: list[Obj]) -> None:
    """Seed pods (or PodGroups) naming PriorityClasses just created: kube-apiserver's Priority admission
    reads the classes from an informer, which may not have seen them yet (403 "no PriorityClass with
    name"). Each object is created once, in order; the one refused is tried again."""
    pending = list(objs)

    def attempt() -> bool:
        while pending:
            try:
                apiserver.seed(pending[:1])
            except Exception as exc:
                if "no PriorityClass with name" in f"{exc} {getattr(exc, 'body', '')}":
                    return False
                raise
            pending.pop(0)
        return True

    wait_for(attempt, timeout=30, what="the objects admitted (their PriorityClasses known to admission)")


def seed_gang(apiserver: Cluster, group: str, priority_class_name: str, *, timeout: float = 30.0,
              **group_spec: Any) -> None:
    """A PodGroup (gang policy, minCount 2) of the PriorityClass, `group_spec` added to its spec, and its two
    one-GPU members; waits until both are bound."""
    found = pod_group(group, 2)
    found["spec"].update(priorityClassName=priority_class_name, **group_spec)
    admitted(apiserver, [found])
    members = []
    for i in range(2):
        pod = member(f"{group}-{i}", "one-gpu", group)
        pod["spec"].update(priorityClassName=priority_class_name, terminationGracePeriodSeconds=1)
        members.append(pod)
    admitted(apiserver, members)
    wait_for(lambda: all(helpers.node_of(apiserver, f"{group}-{i}") for i in range(2)), timeout=timeout,
             what=f"the gang {group} bound")


def seed_full_node(apiserver: Cluster, gpus: int = 2) -> tuple[str, str, str]:
    """One node of `gpus` GPUs, the classes `low` (10) and `high` (1000); every GPU taken by a low pod.
    The node's name and the two PriorityClasses' names."""
    node, gpu = apiserver.name("node"), apiserver.name("gpu")
    low, high = apiserver.name("low"), apiserver.name("high")
    apiserver.seed([cluster.node(node), cluster.gpu_slice(node, gpus), cluster.gpu_class(gpu),
                    cluster.template("one-gpu", device_class=gpu), priority_class(low, 10), priority_class(high, 1000)])
    admitted(apiserver, [gpu_pod(f"low-{i}", low) for i in range(gpus)])
    wait_for(lambda: all(helpers.node_of(apiserver, f"low-{i}") == node for i in range(gpus)), what="the low pods bound")
    return node, low, high


def condition(pod: Obj, kind: str) -> Obj | None:
    return helpers.condition(pod, kind)


def test_a_higher_priority_pod_removes_one_lower_priority_pod_and_takes_its_gpu(
        apiserver: Cluster, operator: OperatorThread) -> None:
    """Every GPU is held by a priority-10 pod; a priority-1000 pod asking for one removes exactly one of them
    (the victim gets DisruptionTarget, is deleted, and a Preempted Event says by whom and where), is
    nominated to the node, and is bound there once the victim's claim is released."""
    node, _, high = seed_full_node(apiserver)
    admitted(apiserver, [gpu_pod("important", high)])
    assert wait_for(lambda: helpers.node_of(apiserver, "important"), timeout=60, what="the important pod bound") == node
    remaining = [f"low-{i}" for i in range(2) if helpers.pod(apiserver, f"low-{i}")]
    assert len(remaining) == 1, remaining
    (event,) = wait_for(lambda: helpers.events(apiserver, "Preempted"), what="the victim's Preempted Event")
    assert f"on node {node}" in event["note"] and "important" in event["note"]
    assert event["regarding"]["name"] not in remaining
    assert helpers.events(apiserver, "Preempting")
    allocated = [c for c in helpers.claims(apiserver) if (c.get("status") or {}).get("allocation")]
    assert len(allocated) == 2  # the survivor's and the important pod's: no device in two claims


def test_a_pod_that_may_not_preempt_waits_and_says_why(apiserver: Cluster, operator: OperatorThread) -> None:
    """`preemptionPolicy: Never` (here from its PriorityClass) and equal priority remove nobody."""
    _, low, _ = seed_full_node(apiserver)
    patient = apiserver.name("patient")
    apiserver.seed([{**priority_class(patient, 1000), "preemptionPolicy": "Never"}])
    admitted(apiserver, [gpu_pod("patient", patient), gpu_pod("peer", low)])
    for name in ("patient", "peer"):
        wait_for(lambda name=name: (condition(helpers.pod(apiserver, name), "PodScheduled") or {}).get("reason")
                 == "Unschedulable", what=f"{name} told it waits")
    assert all(helpers.pod(apiserver, f"low-{i}") for i in range(2))
    assert not helpers.events(apiserver, "Preempted")
    peer = condition(helpers.pod(apiserver, "peer"), "PodScheduled") or {}
    assert "removing lower-priority pods would not make room" in (peer.get("message") or "")


def _preemption(apiserver: Cluster, value: str) -> None:
    apiserver.request("PATCH", "/apis/dralloc.io/v1alpha1/allocationpolicies/default",
                      {"spec": {"preemption": value}}, content_type="application/merge-patch+json")


def _in_effect(apiserver: Cluster, said: str) -> bool:
    policy = apiserver.get("dralloc.io/v1alpha1", "AllocationPolicy", "default") or {}
    return any(c.get("type") == "Accepted" and said in (c.get("message") or "")
               for c in (policy.get("status") or {}).get("conditions") or [])


def test_the_allocation_policy_turns_preemption_off_and_on(apiserver: Cluster, operator: OperatorThread) -> None:
    """`spec.preemption: Disabled` on the default AllocationPolicy: the important pod waits and nobody is
    removed (the policy's Accepted condition says so); `Enabled` again: it preempts."""
    wait_for(lambda: apiserver.get("dralloc.io/v1alpha1", "AllocationPolicy", "default"), what="the default policy")
    _preemption(apiserver, "Disabled")
    try:
        wait_for(lambda: _in_effect(apiserver, "preemption off"), what="the policy accepted")
        node, _, high = seed_full_node(apiserver)
        admitted(apiserver, [gpu_pod("important", high)])
        wait_for(lambda: (condition(helpers.pod(apiserver, "important"), "PodScheduled") or {}).get("reason")
                 == "Unschedulable", what="the important pod told it waits")
        assert all(helpers.pod(apiserver, f"low-{i}") for i in range(2)) and not helpers.events(apiserver, "Preempted")
    finally:
        _preemption(apiserver, "Enabled")
    wait_for(lambda: _in_effect(apiserver, "preemption on"), what="the policy accepted")
    assert wait_for(lambda: helpers.node_of(apiserver, "important"), timeout=60, what="the important pod bound") == node


def test_a_gang_preempts_as_one_for_all_its_members(apiserver: Cluster, operator: OperatorThread) -> None:
    """Four GPUs on two nodes, all held by priority-10 pods; a priority-1000 gang of 2 one-GPU members.
    The gang preempts as one: exactly two pods go, chosen for the gang's joint placement, every member is
    nominated and then bound, and no device is in two claims."""
    gpu, low, high = apiserver.name("gpu"), apiserver.name("low"), apiserver.name("high")
    nodes = [apiserver.name("node-a"), apiserver.name("node-b")]
    objs: list[Obj] = [cluster.gpu_class(gpu), cluster.template("one-gpu", device_class=gpu),
                       priority_class(low, 10), priority_class(high, 1000)]
    for node in nodes:
        objs += [cluster.node(node), cluster.gpu_slice(node, 2)]
    apiserver.seed(objs)
    admitted(apiserver, [gpu_pod(f"low-{i}", low) for i in range(4)])
    wait_for(lambda: all(helpers.node_of(apiserver, f"low-{i}") for i in range(4)), what="the low pods bound")
    seed_gang(apiserver, "big", high, timeout=60)
    assert sum(1 for i in range(4) if helpers.pod(apiserver, f"low-{i}")) == 2
    assert len(helpers.events(apiserver, "Preempted")) == 2
    allocated = [c for c in helpers.claims(apiserver) if (c.get("status") or {}).get("allocation")]
    assert len(allocated) == 4


@pytest.mark.parametrize("why", ["policy-never", "preemption-off"])
def test_a_gang_that_may_not_preempt_is_not_overtaken_by_lower_priority_pods(
        apiserver: Cluster, operator: OperatorThread, why: str) -> None:
    """No starvation: both GPUs of the node are held by priority-10 pods, and a priority-1000 gang of two
    one-GPU members may not preempt (its PriorityClass says `preemptionPolicy: Never`, or the AllocationPolicy
    turns preemption off). The node is reserved for it: both members are nominated there and nobody is
    removed. When one low pod finishes, a new low pod that asks for its GPU waits rather than take it (without
    the reservation it would, again and again, and the gang would never fit); when the second finishes, the
    gang is placed."""
    if why == "preemption-off":
        wait_for(lambda: apiserver.get("dralloc.io/v1alpha1", "AllocationPolicy", "default"), what="the default policy")
        _preemption(apiserver, "Disabled")
    try:
        if why == "preemption-off":
            wait_for(lambda: _in_effect(apiserver, "preemption off"), what="the policy accepted")
        node, low, high = seed_full_node(apiserver)
        if why == "policy-never":
            high = apiserver.name("patient")
            apiserver.seed([{**priority_class(high, 1000), "preemptionPolicy": "Never"}])
        group = pod_group("big", 2)
        group["spec"]["priorityClassName"] = high
        admitted(apiserver, [group])
        members = [member(f"big-{i}", "one-gpu", "big") for i in range(2)]
        for pod in members:
            pod["spec"]["priorityClassName"] = high
        admitted(apiserver, members)
        wait_for(lambda: all(helpers.pod(apiserver, f"big-{i}").get("status", {}).get("nominatedNodeName") == node
                             for i in range(2)), timeout=60, what="both members nominated to the node")
        wait_for(lambda: f"node(s) {node} reserved for the gang" in (
            (condition(helpers.pod(apiserver, "big-0"), "PodScheduled") or {}).get("message") or ""),
            what="the member told the node is reserved for its gang")
        assert helpers.events(apiserver, "NodesReserved")
        helpers.set_pod_phase(apiserver, "low-0", "Succeeded")
        wait_for(lambda: len([c for c in helpers.claims(apiserver) if (c.get("status") or {}).get("allocation")]) == 1,
                 timeout=60, what="the finished pod's GPU released")
        admitted(apiserver, [gpu_pod("latecomer", low)])
        wait_for(lambda: "held for a nominated pod" in ((condition(helpers.pod(apiserver, "latecomer"), "PodScheduled")
                                                         or {}).get("message") or ""),
                 what="the latecomer told the node is held")
        assert not helpers.node_of(apiserver, "latecomer")
        helpers.set_pod_phase(apiserver, "low-1", "Succeeded")
        wait_for(lambda: all(helpers.node_of(apiserver, f"big-{i}") == node for i in range(2)), timeout=60,
                 what="the gang placed on its reserved node")
        assert not helpers.node_of(apiserver, "latecomer")
        assert not helpers.events(apiserver, "Preempted")
    finally:
        if why == "preemption-off":
            _preemption(apiserver, "Enabled")
            wait_for(lambda: _in_effect(apiserver, "preemption on"), what="the policy accepted")


def test_a_pod_a_disruption_budget_protects_is_spared_before_a_more_important_one(
        apiserver: Cluster, operator: OperatorThread) -> None:
    """kube-scheduler spares first the victims whose removal would break a PodDisruptionBudget: the
    priority-5 pod a budget protects stays, the priority-10 pod goes instead."""
    node, gpu = apiserver.name("node"), apiserver.name("gpu")
    lowest, low, high = apiserver.name("lowest"), apiserver.name("low"), apiserver.name("high")
    apiserver.seed([cluster.node(node), cluster.gpu_slice(node, 2), cluster.gpu_class(gpu),
                    cluster.template("one-gpu", device_class=gpu), priority_class(lowest, 5),
                    priority_class(low, 10), priority_class(high, 1000)])
    guarded = gpu_pod("guarded", lowest)
    guarded["metadata"]["labels"] = {"app": "db"}
    admitted(apiserver, [guarded, gpu_pod("free", low),
                    {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "db"},
                     "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "db"}}}}])
    wait_for(lambda: helpers.node_of(apiserver, "guarded") and helpers.node_of(apiserver, "free"),
             what="both pods bound")
    wait_for(lambda: (apiserver.get("policy/v1", "PodDisruptionBudget", "db", apiserver.namespace) or {}).get(
        "status", {}).get("expectedPods") == 1, what="the budget counting the guarded pod")
    admitted(apiserver, [gpu_pod("important", high)])
    assert wait_for(lambda: helpers.node_of(apiserver, "important"), timeout=60, what="the important pod bound") == node
    assert helpers.pod(apiserver, "guarded") and not helpers.pod(apiserver, "free")


def test_a_pod_group_disrupted_as_one_is_removed_whole(apiserver: Cluster, operator: OperatorThread) -> None:
    """A low-priority gang of two (one GPU on each of two nodes) whose PodGroup says `disruptionMode:
    {all: {}}`: a priority-1000 pod that needs one GPU removes both members, never one alone."""
    gpu, low, high = apiserver.name("gpu"), apiserver.name("low"), apiserver.name("high")
    nodes = [apiserver.name("node-a"), apiserver.name("node-b")]
    objs: list[Obj] = [cluster.gpu_class(gpu), cluster.template("one-gpu", device_class=gpu),
                       priority_class(low, 10), priority_class(high, 1000)]
    for node in nodes:
        objs += [cluster.node(node), cluster.gpu_slice(node, 1)]
    apiserver.seed(objs)
    seed_gang(apiserver, "train", low, disruptionMode={"all": {}})
    admitted(apiserver, [gpu_pod("important", high)])
    assert wait_for(lambda: helpers.node_of(apiserver, "important"), timeout=60, what="the important pod bound")
    assert not any(helpers.pod(apiserver, f"train-{i}") for i in range(2))
    assert sorted(e["regarding"]["name"] for e in helpers.events(apiserver, "Preempted")) == ["train-0", "train-1"]


def test_a_gang_whose_members_priority_is_not_its_pod_groups_is_not_scheduled(
        apiserver: Cluster, operator: OperatorThread) -> None:
    """kube-scheduler 1.37 refuses a PodGroup whose pods' priority differs from the PodGroup's (both come
    from their priorityClassName): the members name the class `high`, the PodGroup none (priority 0).
    Neither member is placed, and each says why in kube-scheduler's words, naming the pod."""
    node, gpu, high = apiserver.name("node"), apiserver.name("gpu"), apiserver.name("high")
    apiserver.seed([cluster.node(node), cluster.gpu_slice(node, 2), cluster.gpu_class(gpu),
                    cluster.template("one-gpu", device_class=gpu), priority_class(high, 1000),
                    pod_group("mixed", 2)])
    members = []
    for i in range(2):
        pod = member(f"mixed-{i}", "one-gpu", "mixed")
        pod["spec"]["priorityClassName"] = high
        members.append(pod)
    admitted(apiserver, members)
    wanted = "all pods in a single pod group should have the same priority as the pod group's priority, got 1000"
    for i in range(2):
        wait_for(lambda i=i: wanted in ((condition(helpers.pod(apiserver, f"mixed-{i}"), "PodScheduled") or {})
                                        .get("message") or ""), what=f"mixed-{i} saying its priority differs")
    assert not any(helpers.node_of(apiserver, f"mixed-{i}") for i in range(2))


def test_at_one_priority_a_lone_pod_goes_before_a_pod_groups_member(
        apiserver: Cluster, operator: OperatorThread) -> None:
    """kube-scheduler 1.37 ranks a PodGroup's pods above a lone pod of the same priority (MoreImportantVictim,
    before start time), and spares the more important first: a node of 3 GPUs holds a lone priority-10 pod,
    placed first, and a priority-10 gang of two. A priority-1000 pod that needs one GPU removes the lone pod."""
    node, gpu = apiserver.name("node"), apiserver.name("gpu")
    low, high = apiserver.name("low"), apiserver.name("high")
    apiserver.seed([cluster.node(node), cluster.gpu_slice(node, 3), cluster.gpu_class(gpu),
                    cluster.template("one-gpu", device_class=gpu), priority_class(low, 10), priority_class(high, 1000)])
    admitted(apiserver, [gpu_pod("lone", low)])
    assert wait_for(lambda: helpers.node_of(apiserver, "lone"), what="the lone pod bound") == node
    seed_gang(apiserver, "team", low)
    admitted(apiserver, [gpu_pod("important", high)])
    assert wait_for(lambda: helpers.node_of(apiserver, "important"), timeout=60, what="the important pod bound") == node
    assert [e["regarding"]["name"] for e in helpers.events(apiserver, "Preempted")] == ["lone"]
    assert all(helpers.pod(apiserver, f"team-{i}") for i in range(2))


@pytest.mark.parametrize("fault", ["refused-before", "applied-then-lost"])
def test_a_victims_deletion_of_unknown_outcome_is_read_back_not_repeated_blindly(
        apiserver: Cluster, faults: Faults, fault: str) -> None:
    """The victim's DELETE answers 500 without deleting it, or deletes it and the answer is lost (504):
    dralloc reads the pod back before going on. Either way exactly one low pod is removed and the
    important pod runs (sandbox only: it injects the faults)."""
    apiserver.seed(crds())
    running = OperatorThread(operator_settings(apiserver)).start()
    try:
        node, _, high = seed_full_node(apiserver)
        path = f"/api/v1/namespaces/{apiserver.namespace}/pods/low-*"
        if fault == "refused-before":
            faults.next("DELETE", path, 500)
        else:
            faults.applied_then("DELETE", path, 504)
        admitted(apiserver, [gpu_pod("important", high)])
        assert wait_for(lambda: helpers.node_of(apiserver, "important"), timeout=60, what="the important pod bound") \
            == node
        assert sum(1 for i in range(2) if helpers.pod(apiserver, f"low-{i}")) == 1
    finally:
        running.stop()
