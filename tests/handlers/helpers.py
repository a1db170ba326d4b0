"""Reading and changing the cluster's state in operator tests, in either mode.

`server` is the `apiserver` fixture (`conftest.Cluster`: the sandbox or a real
cluster); `namespace=None` means the test's own namespace. A bare `ThreadedApiServer`
(tests/manifests/ uses these helpers with one) means `default`, over HTTP.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from tests.handlers.conftest import Cluster, sandbox_request

from dralloc.sandbox import ThreadedApiServer

Obj = dict[str, Any]
Server = Cluster | ThreadedApiServer


def _ns(server: Server, namespace: str | None) -> str:
    return namespace or getattr(server, "namespace", "default")


def pod(server: Server, name: str, namespace: str | None = None) -> Obj:
    return server.get("v1", "Pod", name, _ns(server, namespace)) or {}


def node_of(server: Server, name: str, namespace: str | None = None) -> str | None:
    return (pod(server, name, namespace).get("spec") or {}).get("nodeName")


def pods(server: Server, namespace: str | None = None) -> list[Obj]:
    return server.list_objects("v1", "Pod", _ns(server, namespace))


# A new Node is created with `node.kubernetes.io/not-ready` (kube-apiserver's TaintNodesByCondition
# admission) and kube-controller-manager lifts it once the node reports Ready; a lost node gets
# `unreachable`. The sandbox taints neither.
NOT_READY_TAINTS = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")


def nodes_schedulable(server: Server, names: list[str]) -> bool:
    """Every named node exists without a not-ready or unreachable taint: a test that expects one
    node of several to be chosen waits for this before creating its pods (on a real control plane,
    a node still tainted would be passed over, and the test would see another, valid, choice)."""
    found = {n["metadata"]["name"]: n for n in server.list_objects("v1", "Node")}
    return all(name in found and not any(t.get("key") in NOT_READY_TAINTS
                                         for t in (found[name].get("spec") or {}).get("taints") or [])
               for name in names)


def gone_or_deleting(server: Server, name: str, namespace: str | None = None) -> bool:
    """The pod no longer exists, or is terminating (on a real cluster that can take a while)."""
    found = server.get("v1", "Pod", name, _ns(server, namespace))
    return found is None or bool(found["metadata"].get("deletionTimestamp"))


def claims(server: Server, namespace: str | None = None) -> list[Obj]:
    return server.list_objects("resource.k8s.io/v1", "ResourceClaim", _ns(server, namespace))


def claim(server: Server, name: str, namespace: str | None = None) -> Obj:
    return server.get("resource.k8s.io/v1", "ResourceClaim", name, _ns(server, namespace)) or {}


def allocated_devices(server: Server, namespace: str | None = None) -> Counter[tuple[str, str, str]]:
    """How often each device appears in any allocation (admin/shared results excluded)."""
    seen: Counter[tuple[str, str, str]] = Counter()
    for c in claims(server, namespace):
        allocation = (c.get("status") or {}).get("allocation") or {}
        for r in (allocation.get("devices") or {}).get("results") or []:
            if not r.get("adminAccess") and not r.get("shareID"):
                seen[(r["driver"], r["pool"], r["device"])] += 1
    return seen


def events(server: Server, reason: str, namespace: str | None = None) -> list[Obj]:
    found = server.list_objects("events.k8s.io/v1", "Event", _ns(server, namespace))
    return [e for e in found if e.get("reason") == reason]


def cluster_events(server: Server, reason: str, regarding: str) -> list[Obj]:
    """Events about the cluster-scoped object `regarding`: they live in `default`, by convention."""
    return [e for e in events(server, reason, "default") if (e.get("regarding") or {}).get("name") == regarding]


def condition(obj: Obj, kind: str) -> Obj | None:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == kind:
            return dict(c)
    return None


def _request(server: Server, method: str, path: str, body: Obj | None = None,
             content_type: str = "application/merge-patch+json") -> Obj:
    """A raw API call by path, through the mode's client (HTTP to the sandbox, the kubernetes client)."""
    if isinstance(server, ThreadedApiServer):
        return sandbox_request(server, method, path, body, content_type)
    return server.request(method, path, body, content_type)


def server_release(server: Server) -> tuple[int, int]:
    """(major, minor) of the API server's release, from GET /version as `dralloc run --kubernetes-version
    auto` reads it (a minor like "38+" counts as 38): the sandbox's is the one it runs as (1.37 unless its
    marker says otherwise), `make e2e`'s 1.37 (v1.37.2) or, with E2E_KUBE_VERSION=1.38, 1.38 (v1.38.0-beta.0)."""
    from tests.handlers import realcluster

    if isinstance(server, realcluster.RealCluster):  # its `request` reads answers as API objects (with a kind)
        from kubernetes import client as kube_client

        code = kube_client.VersionApi(server.conn.api).get_code()
        major, minor = code.major, code.minor
    else:
        info = _request(server, "GET", "/version")
        major, minor = info["major"], info["minor"]
    return int(str(major).rstrip("+")), int(str(minor).rstrip("+"))


def set_pod_phase(server: Server, name: str, phase: str, namespace: str | None = None) -> Obj:
    """What the kubelet does when a pod ends: write status.phase."""
    return _request(server, "PATCH", f"/api/v1/namespaces/{_ns(server, namespace)}/pods/{name}/status",
                    {"status": {"phase": phase}})


def patch_pod_status(server: Server, name: str, status: Obj, namespace: str | None = None) -> Obj:
    """What a scheduler or the kubelet does: merge `status` into the pod's status."""
    return _request(server, "PATCH", f"/api/v1/namespaces/{_ns(server, namespace)}/pods/{name}/status",
                    {"status": status})


def patch_claim_status(server: Server, name: str, status: Obj, namespace: str | None = None) -> Obj:
    """What a DRA driver does: merge `status` into the claim's status."""
    path = f"/apis/resource.k8s.io/v1/namespaces/{_ns(server, namespace)}/resourceclaims/{name}/status"
    return _request(server, "PATCH", path, {"status": status})


def patch_claim(server: Server, name: str, patch: Obj, namespace: str | None = None) -> Obj:
    """What a user's `kubectl label` or `kubectl patch` does to a claim: a merge patch of the object."""
    return _request(server, "PATCH", f"/apis/resource.k8s.io/v1/namespaces/{_ns(server, namespace)}/resourceclaims/"
                    f"{name}", patch)


def delete(server: Server, path: str) -> Obj:
    return _request(server, "DELETE", path)


def delete_pod(server: Server, name: str, namespace: str | None = None) -> Obj:
    return delete(server, f"/api/v1/namespaces/{_ns(server, namespace)}/pods/{name}")
