"""`make e2e-up`'s dev cluster (e2e/devcluster.py) against the sandbox, which serves the same calls.

The node lifecycle controller that would taint a silent node only runs on the real control plane; what
the agent does about it (a Ready condition, a Lease renewed every few seconds, pods on its nodes
finished when deleted) is what is checked here, on the sandbox's real HTTP API.
"""

from __future__ import annotations

import pathlib
import sys
import time

from dralloc.sandbox import ThreadedApiServer

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "e2e"))
import devcluster  # e2e/devcluster.py

NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "by-hand"}, "spec": {},
        "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}}}


def _client(server: ThreadedApiServer) -> devcluster.Client:
    return devcluster.Client(server.url, token=server.token or "")


def test_a_node_made_by_hand_is_ready_and_heartbeats() -> None:
    with ThreadedApiServer().start() as server:
        client = _client(server)
        client.request("POST", "/api/v1/nodes", NODE)  # as `kubectl apply` of a bare Node would
        agent = devcluster.NodeAgent(client, renew_seconds=0.2).start()
        try:
            devcluster.wait_for(lambda: agent.renewals >= 2, "two heartbeats", timeout=20)
            lease = client.request("GET", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/by-hand")
            first = lease["spec"]["renewTime"]
            devcluster.wait_for(lambda: client.request(
                "GET", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/by-hand")["spec"]["renewTime"]
                != first, "a renewal", timeout=20)
        finally:
            agent.stop()
        node = client.request("GET", "/api/v1/nodes/by-hand")
        (ready,) = [c for c in node["status"]["conditions"] if c["type"] == "Ready"]
        assert ready["status"] == "True"
        assert lease["spec"]["holderIdentity"] == "by-hand"
        assert lease["metadata"]["ownerReferences"][0]["uid"] == node["metadata"]["uid"]


def test_a_node_set_not_ready_by_hand_stays_so_and_unknown_becomes_ready() -> None:
    """Only the node controller's "no heartbeat" value (Unknown) is answered; a False someone wrote stays."""
    with ThreadedApiServer().start() as server:
        client = _client(server)
        for name, status in (("down", "False"), ("silent", "Unknown")):
            client.request("POST", "/api/v1/nodes", {**NODE, "metadata": {"name": name}})
            client.request("PATCH", f"/api/v1/nodes/{name}/status", {"status": {"conditions": [
                {"type": "Ready", "status": status, "reason": "Test", "message": "",
                 "lastHeartbeatTime": "2026-01-01T00:00:00Z", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}},
                content_type="application/strategic-merge-patch+json")
        devcluster.NodeAgent(client).once()
        states = {name: [c["status"] for c in client.request("GET", f"/api/v1/nodes/{name}")["status"]["conditions"]
                         if c["type"] == "Ready"] for name in ("down", "silent")}
        assert states == {"down": ["False"], "silent": ["True"]}


def test_a_pod_deleted_on_a_node_is_finished() -> None:
    """No kubelet confirms a pod's end: the agent does, so `kubectl delete pod` returns."""
    with ThreadedApiServer().start() as server:
        client = _client(server)
        client.request("POST", "/api/v1/nodes", NODE)
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
               "spec": {"nodeName": "by-hand", "containers": [{"name": "c", "image": "busybox"}]}}
        client.request("POST", "/api/v1/namespaces/default/pods", pod)
        client.request("DELETE", "/api/v1/namespaces/default/pods/p")
        devcluster.NodeAgent(client).once()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                client.request("GET", "/api/v1/namespaces/default/pods/p")
            except devcluster.ApiError as exc:
                assert exc.status == 404
                return
            time.sleep(0.1)
        raise AssertionError("the pod is still there")


def test_the_demo_seed_creates_the_crds_nodes_slices_and_classes_once() -> None:
    with ThreadedApiServer().start() as server:
        client = _client(server)
        created = devcluster.seed_demo(client)
        assert devcluster.seed_demo(client) == 0  # a second seed leaves what is there
        kinds = {path: len(client.request("GET", path)["items"]) for path in (
            "/api/v1/nodes", "/apis/resource.k8s.io/v1/resourceslices", "/apis/resource.k8s.io/v1/deviceclasses",
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions")}
        assert kinds == {"/api/v1/nodes": 4, "/apis/resource.k8s.io/v1/resourceslices": 20,
                         "/apis/resource.k8s.io/v1/deviceclasses": 3,
                         "/apis/apiextensions.k8s.io/v1/customresourcedefinitions": 2}
        assert created == sum(kinds.values())
        for node in client.request("GET", "/api/v1/nodes")["items"]:
            assert [c["status"] for c in node["status"]["conditions"] if c["type"] == "Ready"] == ["True"]
