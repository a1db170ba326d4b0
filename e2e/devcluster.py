"""What `make e2e-up` adds to a bare control plane so that it is a dev cluster: objects, and nodes that stay.

There is no kubelet. A Node created on the control plane (by `--seed demo`, or by hand with kubectl)
would go NotReady and get the `node.kubernetes.io/unreachable` taint about 40 s later, when
kube-controller-manager's node lifecycle controller sees no heartbeat. `NodeAgent` does what a kubelet
would for every Node of the cluster, as long as it runs:

- gives `Ready=True` to a Node without a Ready condition, or whose Ready is Unknown (what the node
  controller writes when heartbeats stop); a Ready=False someone wrote is left as it is;
- creates its Lease in kube-node-lease and renews it every RENEW_SECONDS (the heartbeat the node
  lifecycle controller reads);
- finishes the deletion of pods terminating on it (a kubelet confirms their end; without it they stay
  Terminating forever).

`seed_demo` creates dralloc's CRDs and the demo cluster of `dralloc demo` (its Nodes with Ready, the
ResourceSlices of its GPU, partition and NIC drivers, its DeviceClasses), so `kubectl apply -f
examples/demo/` and `dralloc run` have something to work on.

Plain HTTP(S) with the admin token (stdlib only); the sandbox serves the same calls over http, which is
how tests/e2e_dev/test_devcluster.py checks the agent without a control plane.
"""

from __future__ import annotations

import datetime as dt
import json
import pathlib
import ssl
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable
from typing import Any

REPO = pathlib.Path(__file__).resolve().parents[1]
LEASES = "kube-node-lease"
RENEW_SECONDS = 10.0
LEASE_SECONDS = 40
Obj = dict[str, Any]


class ApiError(Exception):
    def __init__(self, status: int, text: str) -> None:
        super().__init__(f"HTTP {status}: {text[:300]}")
        self.status = status


class Client:
    """JSON requests to one API server: https with a CA file and a bearer token, or plain http."""

    def __init__(self, url: str, *, token: str = "", ca_file: pathlib.Path | None = None) -> None:
        self.url = url.rstrip("/")
        self.token = token
        self.context = ssl.create_default_context(cafile=str(ca_file)) if ca_file is not None else None

    def request(self, method: str, path: str, body: Obj | None = None,
                content_type: str = "application/json") -> Obj:
        # Compact, as kubectl and client-go send: kube-apiserver 1.37 keeps an opaque config's parameters
        # as sent and refuses every later patch of a claim whose spelling differs from the compact one.
        data = json.dumps(body, separators=(",", ":")).encode() if body is not None else None
        headers = {"Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = content_type
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        request = urllib.request.Request(self.url + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=10, context=self.context) as response:
                text = response.read().decode()
        except urllib.error.HTTPError as exc:
            raise ApiError(exc.code, exc.read().decode(errors="replace")) from exc
        return json.loads(text) if text else {}


def _now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _micro_now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _path(obj: Obj) -> str:
    """The collection an object is created in (the kinds seed_demo and the CRDs use)."""
    api_version, kind = obj["apiVersion"], obj["kind"]
    plural = {"Node": "nodes", "Lease": "leases", "DeviceClass": "deviceclasses", "ResourceSlice": "resourceslices",
              "CustomResourceDefinition": "customresourcedefinitions", "Namespace": "namespaces"}[kind]
    prefix = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    namespace = (obj.get("metadata") or {}).get("namespace")
    return f"{prefix}/namespaces/{namespace}/{plural}" if namespace else f"{prefix}/{plural}"


def _ready(status: Obj) -> Obj:
    now = _now()
    ready = {"type": "Ready", "status": "True", "reason": "KubeletReady", "lastHeartbeatTime": now,
             "lastTransitionTime": now, "message": "a node of the dev cluster (no kubelet: e2e/devcluster.py)"}
    return {**status, "conditions": [*(c for c in status.get("conditions") or [] if c.get("type") != "Ready"), ready]}


def _needs_ready(node: Obj) -> bool:
    ready = [c for c in (node.get("status") or {}).get("conditions") or [] if c.get("type") == "Ready"]
    return not ready or ready[0].get("status") == "Unknown"


def mark_ready(client: Client, node: Obj) -> None:
    name = node["metadata"]["name"]
    client.request("PATCH", f"/api/v1/nodes/{urllib.parse.quote(name)}/status",
                   {"status": {"conditions": _ready(node.get("status") or {})["conditions"]}},
                   content_type="application/strategic-merge-patch+json")


def create_all(client: Client, objects: Iterable[Obj]) -> int:
    """Create each object (an existing one is left as it is); Nodes are made Ready. How many were created."""
    created = 0
    for obj in objects:
        try:
            stored = client.request("POST", _path(obj), obj)
        except ApiError as exc:
            if exc.status != 409:
                raise
            continue
        created += 1
        if obj["kind"] == "Node":
            mark_ready(client, {**stored, "status": {**(stored.get("status") or {}), **(obj.get("status") or {})}})
    return created


def _crds() -> list[Obj]:
    import yaml  # PyYAML: a dependency of dralloc, in .venv

    return [doc for path in sorted((REPO / "crds").glob("*.yaml")) for doc in yaml.safe_load_all(path.read_text())
            if doc]


def seed_demo(client: Client) -> int:
    """dralloc's CRDs and `dralloc demo`'s cluster (Nodes, slices, classes; not its workloads: those are
    examples/demo/, for `kubectl apply -f`)."""
    sys.path.insert(0, str(REPO / "operator"))
    from dralloc.sandbox import demo_objects  # the operator's sandbox seeds the same cluster

    objects = [o for o in demo_objects() if o["kind"] != "Lease"]  # NodeAgent makes the Leases
    return create_all(client, [*_crds(), *objects])


class NodeAgent:
    """Heartbeats for every Node, Ready for new ones, and the end of pods terminating on them."""

    def __init__(self, client: Client, *, renew_seconds: float = RENEW_SECONDS, log: Any = None) -> None:
        self.client = client
        self.renew_seconds = renew_seconds
        self.log = log or (lambda text: print(text, file=sys.stderr, flush=True))
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.renewals = 0

    def start(self) -> NodeAgent:
        self._thread = threading.Thread(target=self._run, name="dev-cluster-nodes", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=15)

    def _run(self) -> None:
        while True:
            try:
                self.once()
            except (ApiError, OSError) as exc:  # a hiccup of the API must not end the heartbeats
                self.log(f"e2e: node agent: {exc}")
            if self._stop.wait(self.renew_seconds):
                return

    def once(self) -> None:
        nodes = self.client.request("GET", "/api/v1/nodes").get("items") or []
        names = set()
        for node in nodes:
            meta = node["metadata"]
            names.add(meta["name"])
            if _needs_ready(node):
                mark_ready(self.client, node)
            self._renew(meta["name"], meta.get("uid", ""))
        self.renewals += 1
        pods = self.client.request("GET", "/api/v1/pods").get("items") or []
        for pod in pods:
            meta = pod["metadata"]
            if meta.get("deletionTimestamp") and (pod.get("spec") or {}).get("nodeName") in names:
                path = (f"/api/v1/namespaces/{meta['namespace']}/pods/{urllib.parse.quote(meta['name'])}"
                        "?gracePeriodSeconds=0")
                try:
                    self.client.request("DELETE", path, {"apiVersion": "v1", "kind": "DeleteOptions",
                                                         "gracePeriodSeconds": 0,
                                                         "preconditions": {"uid": meta["uid"]}})
                except ApiError as exc:
                    if exc.status not in (404, 409):
                        raise

    def _renew(self, node: str, uid: str) -> None:
        path = f"/apis/coordination.k8s.io/v1/namespaces/{LEASES}/leases"
        spec = {"holderIdentity": node, "leaseDurationSeconds": LEASE_SECONDS, "renewTime": _micro_now()}
        try:
            self.client.request("PATCH", f"{path}/{urllib.parse.quote(node)}", {"spec": spec},
                                content_type="application/merge-patch+json")
        except ApiError as exc:
            if exc.status != 404:
                raise
            self.client.request("POST", path, {
                "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": node, "namespace": LEASES,
                             "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": node, "uid": uid}]},
                "spec": spec})


def wait_for(check: Any, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise RuntimeError(f"e2e: {what} not done after {timeout:.0f} s")
        time.sleep(0.2)
