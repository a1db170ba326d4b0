"""Reading the sandbox's state in operator tests."""

from __future__ import annotations

from collections import Counter
from typing import Any

from dralloc.sandbox import ThreadedApiServer

Obj = dict[str, Any]


def pod(server: ThreadedApiServer, name: str, namespace: str = "default") -> Obj:
    return server.get("v1", "Pod", name, namespace) or {}


def node_of(server: ThreadedApiServer, name: str) -> str | None:
    return (pod(server, name).get("spec") or {}).get("nodeName")


def claims(server: ThreadedApiServer, namespace: str = "default") -> list[Obj]:
    return server.list_objects("resource.k8s.io/v1", "ResourceClaim", namespace)


def claim(server: ThreadedApiServer, name: str, namespace: str = "default") -> Obj:
    return server.get("resource.k8s.io/v1", "ResourceClaim", name, namespace) or {}


def allocated_devices(server: ThreadedApiServer) -> Counter[tuple[str, str, str]]:
    """How often each device appears in any allocation (admin/shared results excluded)."""
    seen: Counter[tuple[str, str, str]] = Counter()
    for c in claims(server):
        allocation = (c.get("status") or {}).get("allocation") or {}
        for r in (allocation.get("devices") or {}).get("results") or []:
            if not r.get("adminAccess") and not r.get("shareID"):
                seen[(r["driver"], r["pool"], r["device"])] += 1
    return seen


def events(server: ThreadedApiServer, reason: str, namespace: str = "default") -> list[Obj]:
    found = server.list_objects("events.k8s.io/v1", "Event", namespace)
    return [e for e in found if e.get("reason") == reason]


def condition(obj: Obj, kind: str) -> Obj | None:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == kind:
            return dict(c)
    return None


def _request(server: ThreadedApiServer, method: str, path: str, body: Obj | None = None,
             content_type: str = "application/merge-patch+json") -> Obj:
    import json
    import urllib.request

    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(server.url + path, data=data, method=method)
    request.add_header("Content-Type", content_type)
    if server.token:
        request.add_header("Authorization", f"Bearer {server.token}")
    with urllib.request.urlopen(request, timeout=10) as response:
        result: Obj = json.loads(response.read() or b"{}")
        return result


def set_pod_phase(server: ThreadedApiServer, name: str, phase: str, namespace: str = "default") -> Obj:
    """What the kubelet does when a pod ends: write status.phase."""
    return _request(server, "PATCH", f"/api/v1/namespaces/{namespace}/pods/{name}/status",
                    {"status": {"phase": phase}})


def delete(server: ThreadedApiServer, path: str) -> Obj:
    return _request(server, "DELETE", path)
