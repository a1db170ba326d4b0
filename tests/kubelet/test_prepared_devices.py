"""What dralloc allocates, a real kubelet and a real DRA driver prepare, and the container sees (#33).

Each test checks what the container printed against the claim's `status.allocation`: the driver's
device-metadata files name exactly the allocated devices (request, driver, pool, device), and its
environment variable `claim_<claim>_<request>=true` names the claim it prepared.
"""

from __future__ import annotations

import time
from typing import Any

from tests.handlers.conftest import wait_for
from tests.kubelet.conftest import (
    DRIVER,
    NAMESPACE,
    Api,
    ApiError,
    Node,
    Obj,
    Printed,
    allocated,
    create_claim,
    create_pod,
    create_template,
    delete_pod,
    env_name,
    explain,
    pod_claim_name,
    printed,
)


def _check_prepared(api: Api, node: Node, pod_name: str) -> tuple[Printed, Obj]:
    """The pod runs on the node; its container saw exactly the devices of its claim's allocation,
    and the claim is reserved for it: the state the kubelet accepted."""
    seen = printed(api, pod_name)
    pod = api.pod(pod_name)
    assert pod is not None
    assert pod["spec"]["nodeName"] == node.name
    assert pod["status"]["phase"] == "Running", explain(api, pod_name)()
    claim_name = pod_claim_name(api, pod_name)
    claim = api.claim(claim_name)
    assert claim is not None
    results = claim["status"]["allocation"]["devices"]["results"]
    assert results and all(r["driver"] == DRIVER and r["pool"] == node.name for r in results), results
    assert seen.devices() == allocated(claim), (seen.text, results)
    assert seen.env.get(env_name(claim_name)) == "true", seen.text
    assert {"resource": "pods", "name": pod_name, "uid": pod["metadata"]["uid"]} in claim["status"]["reservedFor"]
    return seen, claim


def test_scheduler_mode_template_claim_prepared_and_seen(cluster: Api, node: Node) -> None:
    """schedulerName: dralloc, a claim from a template: dralloc places and binds the pod, the kubelet
    prepares the claim through the driver and the container sees exactly the allocated device."""
    create_template(cluster, "one-dev")
    create_pod(cluster, "sched", template="one-dev")
    seen, claim = _check_prepared(cluster, node, "sched")
    assert claim["metadata"]["annotations"].get("resource.kubernetes.io/pod-claim-name") == "dev"
    print(f"container of {NAMESPACE}/sched printed:\n{seen.text}")


def test_gate_mode_claim_prepared_and_seen(cluster: Api, node: Node) -> None:
    """A kube-scheduler pod with dralloc's gate: dralloc allocates and lifts the gate, kube-scheduler
    binds, the kubelet prepares and the container sees exactly the allocated devices (two here)."""
    create_template(cluster, "two-devs", count=2)
    create_pod(cluster, "gated", template="two-devs", scheduler="default-scheduler", gate=True)
    seen, _ = _check_prepared(cluster, node, "gated")
    pod = cluster.pod("gated")
    assert pod is not None and not pod["spec"].get("schedulingGates")
    assert pod["spec"]["nodeSelector"] == {"kubernetes.io/hostname": node.name}
    assert len(seen.devices()) == 2


def test_shared_claim_both_containers_see_the_same_device(cluster: Api, node: Node) -> None:
    """One ResourceClaim named by two pods: allocated once, reserved for both, both containers see
    the same device."""
    create_claim(cluster, "shared")
    create_pod(cluster, "share-a", claim="shared")
    create_pod(cluster, "share-b", claim="shared")
    seen_a, _ = _check_prepared(cluster, node, "share-a")
    seen_b, claim = _check_prepared(cluster, node, "share-b")
    assert seen_a.devices() == seen_b.devices() == allocated(claim)
    assert len(claim["status"]["reservedFor"]) == 2


def test_opaque_config_reaches_the_container(cluster: Api, node: Node) -> None:
    """The claim's opaque config for the driver: the driver reads it from the allocation (which
    dralloc copies into status.allocation.devices.config) and the container sees user_<key>=<value>."""
    create_claim(cluster, "configured", parameters={"color": "blue", "size": "large"})
    create_pod(cluster, "config", claim="configured")
    seen, claim = _check_prepared(cluster, node, "config")
    config = claim["status"]["allocation"]["devices"]["config"]
    assert [c["opaque"]["parameters"] for c in config] == [{"color": "blue", "size": "large"}]
    assert (seen.env.get("user_color"), seen.env.get("user_size")) == ("blue", "large"), seen.text


def test_claim_not_reserved_for_the_pod_is_refused_by_the_kubelet(cluster: Api, node: Node) -> None:
    """A claim allocated by the test but not reserved for the pod, the pod bound by the test (nodeName,
    a scheduler nobody runs): the kubelet refuses to prepare it, so the container never starts, and
    says why in an event. kube-controller-manager's resourceclaim controller would reserve an allocated
    claim for a bound pod at once; a ValidatingAdmissionPolicy refuses every reservation of this one
    claim, so it stays as the test wrote it."""
    policy = "keep-unreserved"
    path = f"/apis/resource.k8s.io/v1/namespaces/{NAMESPACE}/resourceclaims/unreserved/status"
    cluster.create("/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies", {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy", "metadata": {"name": policy},
        "spec": {"failurePolicy": "Fail",
                 "matchConstraints": {"resourceRules": [{"apiGroups": ["resource.k8s.io"], "apiVersions": ["*"],
                                                         "operations": ["UPDATE"], "resources": ["resourceclaims/status"]}]},
                 "validations": [{"expression": f"object.metadata.namespace != '{NAMESPACE}' || "
                                  "object.metadata.name != 'unreserved' || !has(object.status.reservedFor) || "
                                  "size(object.status.reservedFor) == 0",
                                  "message": "test: claim unreserved stays unreserved"}]}})
    cluster.create("/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings", {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": policy}, "spec": {"policyName": policy, "validationActions": ["Deny"]}})
    try:
        claim = create_claim(cluster, "unreserved")
        claim["status"] = {"allocation": {"devices": {"results": [
            {"request": "dev", "driver": DRIVER, "pool": node.name, "device": "device-03"}]},
            "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": [node.name]}]}]}}}
        claim = cluster.request("PUT", path, claim)

        def policy_active() -> bool:  # the API server loads admission policies asynchronously: a dry run shows it
            reserved = {**claim, "status": {**claim["status"], "reservedFor": [
                {"resource": "pods", "name": "probe", "uid": "00000000-0000-0000-0000-000000000000"}]}}
            try:
                cluster.request("PUT", path + "?dryRun=All", reserved)
            except ApiError as exc:
                return exc.status == 422 and f"ValidatingAdmissionPolicy '{policy}'" in str(exc)
            return False
        wait_for(policy_active, timeout=30, interval=0.5, what="the admission policy in force")
        create_pod(cluster, "refused", claim="unreserved", node_name=node.name, scheduler="nobody")

        def refusal() -> str:
            for event in cluster.events("refused"):
                if "is not allowed to use ResourceClaim unreserved" in event.get("message", ""):
                    return f"{event['type']} {event['reason']} ({event['source'].get('component')}): {event['message']}"
            return ""
        said = wait_for(refusal, timeout=60, interval=0.5, what="the kubelet's refusal", extra=explain(cluster, "refused"))
        print(f"the kubelet said: {said}")
        time.sleep(3)  # the kubelet retries: still refused, the container never started
        pod = cluster.pod("refused")
        assert pod is not None and pod["status"].get("phase") == "Pending", explain(cluster, "refused")()
        statuses = pod["status"].get("containerStatuses") or []
        assert not any("running" in s.get("state", {}) for s in statuses), statuses
        stored = cluster.claim("unreserved")
        assert stored is not None and stored["status"].get("allocation") and not stored["status"].get("reservedFor")
        assert "(kubelet)" in said
    finally:
        cluster.request("DELETE", f"/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings/{policy}")
        cluster.request("DELETE", f"/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies/{policy}")


def test_partitions_on_shared_counters_prepared_and_seen(cluster: Api, node: Node) -> None:
    """Partitionable devices: a GPU of 40Gi as a counter set and three 20Gi partitions drawing on it, so
    two fit at once. Two pods get one partition each (different ones), the driver prepares them and each
    container sees exactly its claim's partition; the third pod is told the counters are used up.

    The test driver publishes only plain devices (no flag gives them counters), so the test publishes
    these slices itself, for the driver's name and this node: what the kubelet and the driver are asked
    to prepare is what dralloc allocated from them. They select the node with `nodeSelector`, not
    `nodeName`: the driver's ResourceSlice controller owns the slices of its driver whose `nodeName` is
    its node and deletes the pools it does not publish."""
    pool = f"{node.name}-partitioned"
    on_node = {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In",
                                                       "values": [node.name]}]}]}

    def piece(name: str, **spec: Any) -> Obj:
        return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": name},
                "spec": {"driver": DRIVER, "nodeSelector": on_node,
                         "pool": {"name": pool, "generation": 1, "resourceSliceCount": 2}, **spec}}

    partitions = [{"name": f"gpu-0-20g-{k}", "attributes": {"partition": {"bool": True}},
                   "capacity": {"memory": {"value": "20Gi"}},
                   "consumesCounters": [{"counterSet": "gpu-0", "counters": {"memory": {"value": "20Gi"}}}]}
                  for k in range(3)]
    slices = [piece(f"{pool}-counters", sharedCounters=[{"name": "gpu-0", "counters": {"memory": {"value": "40Gi"}}}]),
              piece(f"{pool}-devices", devices=partitions)]
    partition_class = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "test-partition"},
                       "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}" && '
                                                                    f'has(device.attributes["{DRIVER}"].partition)'}}]}}
    cluster.create("/apis/resource.k8s.io/v1/deviceclasses", partition_class)
    for obj in slices:
        cluster.create("/apis/resource.k8s.io/v1/resourceslices", obj)
    try:
        cluster.create(f"/apis/resource.k8s.io/v1/namespaces/{NAMESPACE}/resourceclaimtemplates", {
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": "half-gpu"},
            "spec": {"spec": {"devices": {"requests": [{"name": "dev", "exactly": {"deviceClassName": "test-partition"}}]}}}})
        for k in range(3):
            create_pod(cluster, f"half-{k}", template="half-gpu")
        running: dict[str, Printed] = {}

        def two_running() -> bool:
            for k in range(3):
                pod = cluster.pod(f"half-{k}") or {}
                if f"half-{k}" not in running and pod.get("status", {}).get("phase") == "Running":
                    running[f"half-{k}"] = printed(cluster, f"half-{k}")
            return len(running) == 2
        wait_for(two_running, timeout=120, interval=0.5, what="two of the three pods running")
        seen_devices = []
        for name, seen in running.items():
            claim = cluster.claim(pod_claim_name(cluster, name))
            assert claim is not None
            assert seen.devices() == allocated(claim), (seen.text, claim["status"]["allocation"])
            ((_, driver, from_pool, device),) = allocated(claim)
            assert (driver, from_pool) == (DRIVER, pool) and device.startswith("gpu-0-20g-")
            assert seen.env.get(env_name(claim["metadata"]["name"])) == "true", seen.text
            seen_devices.append(device)
        assert len(set(seen_devices)) == 2, seen_devices
        (waiting,) = {f"half-{k}" for k in range(3)} - set(running)

        def told() -> str:
            pod = cluster.pod(waiting) or {}
            for condition in pod.get("status", {}).get("conditions") or []:
                if condition["type"] == "PodScheduled" and condition.get("reason") == "Unschedulable":
                    return str(condition.get("message") or "")
            return ""
        message = wait_for(lambda: "counters used up" in told() and told(), timeout=60, interval=0.5,
                           what="the third pod told why it waits", extra=explain(cluster, waiting))
        print(f"{waiting} was told: {message}")
        for name in running:
            print(f"container of {NAMESPACE}/{name} saw {sorted(running[name].devices())}")
    finally:
        for k in range(3):
            delete_pod(cluster, f"half-{k}", wait=False)
        for k in range(3):
            wait_for(lambda k=k: cluster.pod(f"half-{k}") is None, timeout=60, interval=0.5, what=f"pod half-{k} gone")
        cluster.request("DELETE", f"/apis/resource.k8s.io/v1/namespaces/{NAMESPACE}/resourceclaimtemplates/half-gpu")
        for obj in slices:
            cluster.request("DELETE", f"/apis/resource.k8s.io/v1/resourceslices/{obj['metadata']['name']}")
        cluster.request("DELETE", "/apis/resource.k8s.io/v1/deviceclasses/test-partition")
