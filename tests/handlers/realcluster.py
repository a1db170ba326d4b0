"""tests/handlers/ against a real cluster: `pytest --e2e-real` with KUBECONFIG set.

`RealCluster` offers what the operator tests use of the sandbox handle (`seed`, `get`,
`list_objects`, `request`, `kubeconfig`) plus the per-test scope both modes share
(`namespace`, `name()`), built on the official `kubernetes` client's DynamicClient.

What one test does to the cluster:

- creates a Namespace `dralloc-e2e-<token>` labelled `dralloc.io/e2e-test=<token>` (and
  its `default` ServiceAccount, unless the cluster's controller is faster); namespaced
  objects seeded without a namespace land there, as with `kubectl apply`;
- cluster-scoped objects get unique names through `name("node-a")` -> `node-a-<token>`,
  carry the same label, and are deleted at teardown (in reverse order);
- CRDs (crds/, kopf's peering CRDs) are created when missing, waited for until
  Established, and left in place: other tests and a deployed dralloc share them;
- at teardown finalizers are stripped from the namespace's pods and claims, the pods
  are deleted with gracePeriodSeconds=0 and the namespace is deleted (not waited for).
  Leftovers of an interrupted run: `kubectl delete ns,nodes,resourceslices,deviceclasses,
  devicetaintrules,devicehealthpolicies -l dralloc.io/e2e-test`.

Nodes are fake: nothing runs on them (no kubelet). Pods bound to them stay Pending in
kubelet terms (no containers start, no phase change unless a test writes one); the
tests only check API state: bindings, claims, conditions, events. To keep such a node
usable for the length of a test, seeding one adds a Ready condition and a heartbeat
Lease in kube-node-lease (renewed every 10 s, as a kubelet would, so the node lifecycle
controller does not taint it unreachable), and a stand-in for the kubelet's last step
deletes pods of the test's namespace that are terminating on such a node
(gracePeriodSeconds=0) once their finalizers are gone. DaemonSets of the cluster may
still create pods for the fake nodes; they stay Pending and go with the nodes.

The operator under test runs in-process, standalone, restricted to the test's
namespace (it must not place or clean up anybody else's pods and claims). Server-side
fault injection does not exist here: tests that need it skip (`faults` fixture).
"""

from __future__ import annotations

import contextlib
import datetime
import logging
import os
import pathlib
import secrets
import threading
import time
from collections.abc import Iterable
from typing import Any

from kubernetes import config as kube_config
from kubernetes import dynamic
from kubernetes.client import api_client
from kubernetes.dynamic import exceptions as kube_errors

from dralloc.kube import protowire

Obj = dict[str, Any]
LABEL = "dralloc.io/e2e-test"
LEASES = "kube-node-lease"
log = logging.getLogger(__name__)


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _micro_now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Connection:
    """One API client and discovery cache for the whole session (discovery is slow on big clusters).

    `kubeconfig` is KUBECONFIG as pytest found it at startup: one file, or several joined
    by os.pathsep (merged, as kubectl does)."""

    def __init__(self, kubeconfig: str, cache_file: pathlib.Path) -> None:
        self.kubeconfig = kubeconfig
        client = kube_config.new_client_from_config(config_file=kubeconfig)
        self.api: api_client.ApiClient = client
        self.client = dynamic.DynamicClient(client, cache_file=str(cache_file))
        self._resources: dict[tuple[str, str], Any] = {}

    def resource(self, api_version: str, kind: str) -> Any | None:
        """The served resource for apiVersion/kind, or None (misses are not cached: CRDs appear)."""
        key = (api_version, kind)
        if key not in self._resources:
            try:
                self._resources[key] = self.client.resources.get(api_version=api_version, kind=kind)
            except kube_errors.ResourceNotFoundError:
                return None
        return self._resources[key]

    def close(self) -> None:
        self.api.close()


class RealCluster:
    """One test's view of the cluster KUBECONFIG points at; `close()` removes what it created."""

    real = True

    def __init__(self, connection: Connection, token: str | None = None) -> None:
        self.conn = connection
        self.token_ = token or secrets.token_hex(3)
        self.namespace = f"dralloc-e2e-{self.token_}"
        self.operator_namespaces: tuple[str, ...] = (self.namespace,)
        self._created: list[tuple[str, str, str]] = []  # cluster-scoped (apiVersion, kind, name)
        self._nodes: set[str] = set()
        self._leases = False
        self._stop = threading.Event()
        self._agent: threading.Thread | None = None

    # ---- the interface the tests use --------------------------------------------------------

    def name(self, base: str) -> str:
        """A cluster-scoped name unique to this test."""
        return f"{base}-{self.token_}"

    @property
    def kubeconfig(self) -> pathlib.Path | None:
        """For the operator: the file, or None when there are several (it then reads KUBECONFIG)."""
        value = self.conn.kubeconfig
        return pathlib.Path(value) if os.pathsep not in value else None

    @property
    def faults(self) -> Any:
        raise RuntimeError("a real cluster has no fault injection: request the `faults` fixture to skip")

    def serves(self, api_version: str, kind: str) -> bool:
        return self.conn.resource(api_version, kind) is not None

    def seed(self, objects: Iterable[Obj]) -> list[Obj]:
        """Create each object, or replace it when it exists; a given status is written through
        the status subresource. Namespaced objects without a namespace go to the test's."""
        return [self._seed_one(obj) for obj in objects]

    def get(self, api_version: str, kind: str, name: str, namespace: str = "") -> Obj | None:
        res = self._resource(api_version, kind)
        try:
            found = res.get(name=name, namespace=(namespace or None) if res.namespaced else None)
        except kube_errors.NotFoundError:
            return None
        return self._plain(found, api_version, kind)

    def list_objects(self, api_version: str, kind: str, namespace: str | None = None) -> list[Obj]:
        res = self._resource(api_version, kind)
        found = res.get(namespace=namespace if res.namespaced else None)
        return [self._plain(item, api_version, kind) for item in found.to_dict().get("items") or []]

    def request(self, method: str, path: str, body: Obj | None = None,
                content_type: str = "application/merge-patch+json") -> Obj:
        """Any API call by path, as the sandbox handle's raw HTTP does."""
        if method.upper() in ("GET", "DELETE"):
            result = self.conn.client.request(method, path, body=body)
        else:
            result = self.conn.client.request(method, path, body=body, content_type=content_type)
        return result.to_dict() if hasattr(result, "to_dict") else {}

    # ---- lifecycle ----------------------------------------------------------------------------

    def open(self) -> RealCluster:
        namespaces = self._resource("v1", "Namespace")
        namespaces.create(body={"metadata": {"name": self.namespace, "labels": {LABEL: self.token_}}})
        # Pods need the namespace's `default` ServiceAccount; its controller may lag behind us.
        accounts = self.conn.resource("v1", "ServiceAccount")
        if accounts is not None:
            with contextlib.suppress(kube_errors.ConflictError):
                accounts.create(body={"metadata": {"name": "default"}}, namespace=self.namespace)
        leases = self.conn.resource("coordination.k8s.io/v1", "Lease")
        self._leases = leases is not None and self.get("v1", "Namespace", LEASES) is not None
        return self

    def close(self) -> None:
        """Undo the test: stop the node agent, empty and delete the namespace, delete what we created."""
        self._stop.set()
        if self._agent is not None:
            self._agent.join(10)
        errors: list[str] = []
        for api_version, kind in (("v1", "Pod"), ("resource.k8s.io/v1", "ResourceClaim")):
            res = self.conn.resource(api_version, kind)
            if res is None:
                continue
            for item in self.list_objects(api_version, kind, self.namespace):
                name = item["metadata"]["name"]
                try:
                    if item["metadata"].get("finalizers"):
                        self._drop_finalizers(res, name)
                    res.delete(name=name, namespace=self.namespace, grace_period_seconds=0)
                except kube_errors.NotFoundError:
                    pass
                except kube_errors.DynamicApiError as exc:
                    errors.append(f"{kind} {name}: {exc.status} {exc.reason}")
        # Events about our cluster-scoped objects live in `default`: they would only expire in an hour.
        for event in self.list_objects("events.k8s.io/v1", "Event", "default"):
            if (event.get("regarding") or {}).get("name", "").endswith(f"-{self.token_}"):
                with contextlib.suppress(kube_errors.NotFoundError):
                    self._resource("events.k8s.io/v1", "Event").delete(name=event["metadata"]["name"],
                                                                       namespace="default")
        targets = [("v1", "Namespace", self.namespace), *reversed(self._created)]
        if self._leases:
            targets += [("coordination.k8s.io/v1", "Lease", f"{LEASES}/{node}") for node in self._nodes]
        for api_version, kind, name in targets:
            res = self._resource(api_version, kind)
            namespace, _, name = name.rpartition("/")
            try:
                res.delete(name=name, namespace=namespace or None)
            except kube_errors.NotFoundError:
                pass
            except kube_errors.DynamicApiError as exc:
                errors.append(f"{kind} {name}: {exc.status} {exc.reason}")
        if errors:
            raise AssertionError("cleaning up the test's objects failed: " + "; ".join(errors))

    # ---- inside -------------------------------------------------------------------------------

    def _drop_finalizers(self, res: Any, name: str) -> None:
        """Remove every finalizer: by a JSON merge patch, or, for an object kube-apiserver refuses every JSON
        write of (a claim whose opaque parameters were stored with blanks: dralloc/kube/protowire.py), by a
        protobuf update of exactly its bytes minus the finalizers, as kube-controller-manager would."""
        try:
            res.patch(name=name, namespace=self.namespace, body={"metadata": {"finalizers": None}},
                      content_type="application/merge-patch+json")
            return
        except kube_errors.UnprocessibleEntityError as exc:  # (the library spells it so)
            if "immutable" not in str(exc):
                raise
        path = f"{res.path(namespace=self.namespace)}/{name}"
        stored = self._raw("GET", path, {"Accept": protowire.PROTOBUF})
        for finalizer in protowire.finalizers(stored):
            stored = protowire.with_finalizer(stored, finalizer, present=False)
        self._raw("PUT", path, {"Content-Type": protowire.PROTOBUF, "Accept": "application/json"}, stored)

    def _raw(self, method: str, path: str, headers: dict[str, str], body: bytes | None = None) -> bytes:
        api = self.conn.api
        method, url, headers, body, _ = api.param_serialize(method, path, header_params=headers, body=body,
                                                            auth_settings=["BearerToken"])
        response = api.call_api(method, url, header_params=headers, body=body)
        response.read()
        if not 200 <= response.status < 300:
            raise AssertionError(f"{method} {path}: {response.status} {response.data[:300]!r}")
        return bytes(response.data)

    def _resource(self, api_version: str, kind: str) -> Any:
        res = self.conn.resource(api_version, kind)
        if res is None:
            raise LookupError(f"the cluster does not serve {api_version} {kind}")
        return res

    @staticmethod
    def _plain(found: Any, api_version: str, kind: str) -> Obj:
        obj: Obj = found.to_dict() if hasattr(found, "to_dict") else dict(found)
        obj.setdefault("apiVersion", api_version)  # list items come without them
        obj.setdefault("kind", kind)
        return obj

    def _seed_one(self, given: Obj) -> Obj:
        api_version, kind = given.get("apiVersion", ""), given.get("kind", "")
        if kind == "CustomResourceDefinition":
            return self._ensure_crd(given)
        res = self._resource(api_version, kind)
        obj: Obj = {**given, "metadata": dict(given.get("metadata") or {})}
        meta = obj["metadata"]
        meta.pop("resourceVersion", None)
        status = obj.pop("status", None)
        namespace = None
        if res.namespaced:
            namespace = meta.setdefault("namespace", self.namespace)
        else:
            meta["labels"] = {**(meta.get("labels") or {}), LABEL: self.token_}
            if (api_version, kind, meta["name"]) not in self._created:
                self._created.append((api_version, kind, meta["name"]))
        if kind == "Node":
            status = self._fake_node_status(status or {})
        try:
            stored = res.create(body=obj, namespace=namespace)
        except kube_errors.ConflictError:
            current = res.get(name=meta["name"], namespace=namespace)
            meta["resourceVersion"] = current.metadata.resourceVersion
            stored = res.replace(body=obj, namespace=namespace)
        if status is not None and "status" in (res.subresources or {}):
            stored = res.status.patch(name=meta["name"], namespace=namespace, body={"status": status},
                                      content_type="application/merge-patch+json")
        if kind == "Node":
            self._adopt_node(meta["name"], stored.metadata.uid)
        return self._plain(stored, api_version, kind)

    def _ensure_crd(self, crd: Obj, timeout: float = 30.0) -> Obj:
        res = self._resource(crd["apiVersion"], crd["kind"])
        name = crd["metadata"]["name"]
        with contextlib.suppress(kube_errors.ConflictError):
            res.create(body=crd)
        deadline = time.monotonic() + timeout
        while True:
            stored = self.get(crd["apiVersion"], crd["kind"], name) or {}
            conditions = (stored.get("status") or {}).get("conditions") or []
            if any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions):
                return stored
            if time.monotonic() > deadline:
                raise AssertionError(f"CRD {name} not Established after {timeout} s")
            time.sleep(0.1)

    # ---- fake nodes ---------------------------------------------------------------------------

    @staticmethod
    def _fake_node_status(status: Obj) -> Obj:
        now = _now()
        ready = {"type": "Ready", "status": "True", "reason": "KubeletReady", "lastHeartbeatTime": now,
                 "lastTransitionTime": now, "message": "fake node of dralloc's e2e tests (no kubelet)"}
        others = [c for c in status.get("conditions") or [] if c.get("type") != "Ready"]
        return {**status, "conditions": [*others, ready]}

    def _adopt_node(self, name: str, uid: str) -> None:
        self._nodes.add(name)
        if self._leases:
            lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                     "metadata": {"name": name, "namespace": LEASES, "ownerReferences": [
                         {"apiVersion": "v1", "kind": "Node", "name": name, "uid": uid}]},
                     "spec": {"holderIdentity": name, "leaseDurationSeconds": 40, "renewTime": _micro_now()}}
            res = self._resource("coordination.k8s.io/v1", "Lease")
            try:
                res.create(body=lease, namespace=LEASES)
            except kube_errors.ConflictError:
                self._renew(name)
        if self._agent is None:
            self._agent = threading.Thread(target=self._node_agent, name=f"fake-kubelet-{self.token_}",
                                           daemon=True)
            self._agent.start()

    def _renew(self, node: str) -> None:
        self._resource("coordination.k8s.io/v1", "Lease").patch(
            name=node, namespace=LEASES, body={"spec": {"renewTime": _micro_now()}},
            content_type="application/merge-patch+json")

    def _node_agent(self) -> None:
        """Heartbeats for our nodes; finishes the deletion of pods terminating on them."""
        pods = self._resource("v1", "Pod")
        renewed = time.monotonic()
        while not self._stop.wait(0.25):
            try:
                if self._leases and time.monotonic() - renewed > 10:
                    renewed = time.monotonic()
                    for node in list(self._nodes):
                        self._renew(node)
                for pod in pods.get(namespace=self.namespace).to_dict().get("items") or []:
                    meta = pod["metadata"]
                    if (meta.get("deletionTimestamp") and not meta.get("finalizers")
                            and (pod.get("spec") or {}).get("nodeName") in self._nodes):
                        with contextlib.suppress(kube_errors.NotFoundError):
                            pods.delete(name=meta["name"], namespace=self.namespace, grace_period_seconds=0)
            except Exception:  # a hiccup of the API must not end the heartbeats
                log.warning("fake node agent of %s", self.namespace, exc_info=True)
