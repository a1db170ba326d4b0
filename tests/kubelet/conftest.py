"""A real node for the tests of tests/kubelet (#33): `make e2e-kubelet`, or `pytest --e2e-kubelet tests/kubelet` as root.

One control plane and one node for the session (e2e/kubelet.py's `real_node`: etcd, kube-apiserver,
kube-scheduler and kube-controller-manager 1.37.2 with its DRA controllers on, then containerd 2.4, a
kubelet v1.37.2 and k8s.io/kubernetes's DRA test driver `test-driver.cdi.k8s.io` as its kubelet plugin,
publishing device-00..device-03 in pool <node>). dralloc runs as the tests' operator does in
tests/handlers (an OperatorThread in this process, standalone, handling only the session's namespace),
so both its modes are on: pods with `schedulerName: dralloc`, and pods of kube-scheduler carrying the
gate `dralloc.io/allocate`. Its claim lifecycle and taint eviction are `auto`: they defer to
kube-controller-manager, which runs them here.

The driver tells a container what it prepared in two ways: the environment (`claim_<claim>_<request>=true`,
an opaque config's parameters as `user_<key>=<value>`) and, with --enable-device-metadata, a JSON file per
request under /var/run/kubernetes.io/dra-device-attributes/ naming each device (driver, pool, name).
The pods here print both (`env`, then each metadata file between markers) and sleep; `Printed` reads
that back from the container's log, through the API server and the kubelet.
"""

from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import sys
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from tests.handlers.conftest import OperatorThread, wait_for

from dralloc.testing.cluster import crds
from dralloc.testing.settings import run_settings

REPO = pathlib.Path(__file__).resolve().parents[2]
if str(REPO / "e2e") not in sys.path:
    sys.path.insert(0, str(REPO / "e2e"))

import devcluster  # noqa: E402  (e2e/, put on sys.path above)


def _load_e2e_kubelet() -> Any:
    """e2e/kubelet.py, as module `e2e_kubelet`: plain `import kubelet` would find this package."""
    if "e2e_kubelet" in sys.modules:  # this conftest is also imported as tests.kubelet.conftest
        return sys.modules["e2e_kubelet"]
    spec = importlib.util.spec_from_file_location("e2e_kubelet", REPO / "e2e" / "kubelet.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["e2e_kubelet"] = module
    spec.loader.exec_module(module)
    return module


kubelet = _load_e2e_kubelet()
Node = Any  # Node: the running node (its plane, name, cdi folder, logs)

Obj = dict[str, Any]
ApiError = devcluster.ApiError
NAMESPACE = "kubelet-e2e"
DEVICE_CLASS = "test-driver"
DRIVER = kubelet.DRIVER
METADATA_DIR = "/var/run/kubernetes.io/dra-device-attributes"
# What the pods run: the environment, each device-metadata file between markers, then sleep (a pod
# that runs on shows that the kubelet keeps it; the eviction and deletion tests need it running).
PRINT = (f"env | sort; for f in $(find {METADATA_DIR} -name '*.json' 2>/dev/null | sort); do echo \"== $f\"; "
         "cat \"$f\"; echo; echo '== end'; done; echo '== done'; exec sleep 3600")


class Api:
    """The admin's JSON calls (devcluster.Client: compact bodies, as kubectl sends) with the paths the tests use."""

    def __init__(self, node: Node) -> None:
        plane = node.plane
        self.client = devcluster.Client(plane.url, token=plane.token, ca_file=plane.pki / "ca.crt")
        self.plane = plane

    def request(self, method: str, path: str, body: Obj | None = None, content_type: str = "application/json") -> Obj:
        return self.client.request(method, path, body, content_type)

    def create(self, path: str, obj: Obj) -> Obj:
        return self.request("POST", path, obj)

    def get(self, path: str) -> Obj | None:
        try:
            return self.request("GET", path)
        except devcluster.ApiError as exc:
            if exc.status == 404:
                return None
            raise

    def log(self, pod: str) -> str:
        return str(self.plane._get(f"/api/v1/namespaces/{NAMESPACE}/pods/{pod}/log"))

    def pod(self, name: str) -> Obj | None:
        return self.get(f"/api/v1/namespaces/{NAMESPACE}/pods/{name}")

    def claim(self, name: str) -> Obj | None:
        return self.get(f"/apis/resource.k8s.io/v1/namespaces/{NAMESPACE}/resourceclaims/{name}")

    def events(self, pod: str) -> list[Obj]:
        selector = urllib.parse.quote(f"involvedObject.name={pod}")
        items: list[Obj] = self.request("GET", f"/api/v1/namespaces/{NAMESPACE}/events?fieldSelector={selector}")["items"]
        return items


@dataclass
class Printed:
    """What a pod's container printed: its environment and the device-metadata files the driver mounted."""

    env: dict[str, str]
    metadata: dict[str, list[Obj]]  # file path in the container -> the JSON objects in it (a stream, one per version)
    text: str

    @classmethod
    def parse(cls, text: str) -> Printed:
        env: dict[str, str] = {}
        metadata: dict[str, list[Obj]] = {}
        lines = iter(text.splitlines())
        for line in lines:
            if line == "== done":
                break
            if line.startswith("== "):
                path, body = line[3:], []
                for inner in lines:
                    if inner == "== end":
                        break
                    body.append(inner)
                decoder, raw, objects, at = json.JSONDecoder(), "\n".join(body).strip(), [], 0
                while at < len(raw):
                    obj, at = decoder.raw_decode(raw, at)
                    objects.append(obj)
                    while at < len(raw) and raw[at].isspace():
                        at += 1
                metadata[path] = objects
            elif "=" in line:
                key, value = line.split("=", 1)
                env[key] = value
        return cls(env, metadata, text)

    def devices(self) -> set[tuple[str, str, str, str]]:
        """(request, driver, pool, device) of every device the metadata files name (their first, newest version)."""
        found = set()
        for objects in self.metadata.values():
            for request in objects[0].get("requests") or []:
                for device in request.get("devices") or []:
                    found.add((request["name"], device["driver"], device["pool"], device["name"]))
        return found


def allocated(claim: Obj) -> set[tuple[str, str, str, str]]:
    """(request, driver, pool, device) of every result in the claim's allocation."""
    return {(r["request"], r["driver"], r["pool"], r["device"])
            for r in claim["status"]["allocation"]["devices"]["results"]}


@pytest.fixture(scope="session")
def node() -> Iterator[Node]:
    """The control plane and the real node, for the whole session; kube-controller-manager runs the
    controllers $E2E_KCM_CONTROLLERS names (default all: `make e2e-kubelet`'s second pass leaves its DRA
    controllers out, and dralloc does their work)."""
    controllers = os.environ.get("E2E_KCM_CONTROLLERS") or kubelet.controlplane.KCM_CONTROLLERS
    with kubelet.real_node(run_dir=REPO / "e2e" / "run" / "kubelet", kcm_controllers=controllers) as running:
        yield running


@pytest.fixture(scope="session")
def api(node: Node) -> Api:
    api = Api(node)
    api.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    wait_for(lambda: api.get(f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/default"), timeout=60,
             what=f"ServiceAccount {NAMESPACE}/default (kube-controller-manager makes it)")
    api.create("/apis/resource.k8s.io/v1/deviceclasses", {
        "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": DEVICE_CLASS},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}})
    for crd in crds():
        api.create("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    return api


@pytest.fixture(scope="session")
def operator(node: Node, api: Api) -> Iterator[OperatorThread]:
    """dralloc, as in tests/handlers: in this process, standalone, on the session's namespace."""
    running = OperatorThread(run_settings(node.plane.kubeconfig, namespaces=(NAMESPACE,))).start()
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def cluster(node: Node, api: Api, operator: OperatorThread) -> Iterator[Api]:
    """The API, dralloc running, and the node's processes checked after the test; the test's pods deleted."""
    before = {p["metadata"]["name"] for p in api.request("GET", f"/api/v1/namespaces/{NAMESPACE}/pods")["items"]}
    yield api
    node.check()
    assert operator.alive, f"the operator died: {operator.error!r}"
    for pod in api.request("GET", f"/api/v1/namespaces/{NAMESPACE}/pods")["items"]:
        if pod["metadata"]["name"] not in before:
            delete_pod(api, pod["metadata"]["name"], wait=False)


# ---- objects -----------------------------------------------------------------------------------------

def claim_spec(*, parameters: dict[str, str] | None = None, count: int = 1) -> Obj:
    request: Obj = {"name": "dev", "exactly": {"deviceClassName": DEVICE_CLASS}}
    if count != 1:
        request["exactly"] |= {"allocationMode": "ExactCount", "count": count}
    spec: Obj = {"devices": {"requests": [request]}}
    if parameters:
        spec["devices"]["config"] = [{"opaque": {"driver": DRIVER, "parameters": parameters}}]
    return spec


def create_claim(api: Api, name: str, **kwargs: Any) -> Obj:
    return api.create(f"/apis/resource.k8s.io/v1/namespaces/{NAMESPACE}/resourceclaims", {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name},
        "spec": claim_spec(**kwargs)})


def create_template(api: Api, name: str, **kwargs: Any) -> Obj:
    return api.create(f"/apis/resource.k8s.io/v1/namespaces/{NAMESPACE}/resourceclaimtemplates", {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": name},
        "spec": {"spec": claim_spec(**kwargs)}})


def create_pod(api: Api, name: str, *, claim: str = "", template: str = "", scheduler: str = "dralloc",
               gate: bool = False, node_name: str = "") -> Obj:
    """A pod with one pod claim `dev` (a ResourceClaim by name, or from a template) that prints what it sees."""
    source = {"resourceClaimName": claim} if claim else {"resourceClaimTemplateName": template}
    spec: Obj = {"schedulerName": scheduler, "restartPolicy": "Never", "terminationGracePeriodSeconds": 1,
                 "automountServiceAccountToken": False,
                 "containers": [{"name": "c", "image": kubelet.BUSYBOX, "imagePullPolicy": "Never",
                                 "command": ["sh", "-c", PRINT], "resources": {"claims": [{"name": "dev"}]}}],
                 "resourceClaims": [{"name": "dev", **source}]}
    if gate:
        spec["schedulingGates"] = [{"name": "dralloc.io/allocate"}]
    if node_name:
        spec["nodeName"] = node_name
    return api.create(f"/api/v1/namespaces/{NAMESPACE}/pods",
                      {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec})


def delete_pod(api: Api, name: str, *, wait: bool = True) -> None:
    try:
        api.request("DELETE", f"/api/v1/namespaces/{NAMESPACE}/pods/{name}",
                    {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 1})
    except devcluster.ApiError as exc:
        if exc.status != 404:
            raise
    if wait:
        wait_for(lambda: api.pod(name) is None, timeout=60, interval=0.5, what=f"pod {name} gone")


# ---- waiting -----------------------------------------------------------------------------------------

def explain(api: Api, pod: str) -> Callable[[], str]:
    def text() -> str:
        obj = api.pod(pod) or {}
        events = [f"{e.get('type')} {e.get('reason')} {e.get('source', {}).get('component', '')}: {e.get('message')}"
                  for e in api.events(pod)]
        return (f"pod {pod}: {json.dumps(obj.get('status', {}))[:1500]}\nspec.nodeName={obj.get('spec', {}).get('nodeName')}"
                f"\nevents:\n" + "\n".join(events))
    return text


def printed(api: Api, pod: str, timeout: float = 120) -> Printed:
    """Wait until the pod runs and its container has printed everything, then what it printed."""
    def done() -> str:
        obj = api.pod(pod)
        if not obj or obj.get("status", {}).get("phase") not in ("Running", "Succeeded", "Failed"):
            return ""
        text = api.log(pod)
        return text if "== done" in text.splitlines() else ""
    return Printed.parse(wait_for(done, timeout=timeout, interval=0.5, what=f"pod {pod} running and printing",
                                  extra=explain(api, pod)))


def pod_claim_name(api: Api, pod: str) -> str:
    """The name of the ResourceClaim behind the pod's claim `dev` (a template's generated claim, or the named one)."""
    def name() -> str:
        obj = api.pod(pod) or {}
        for status in obj.get("status", {}).get("resourceClaimStatuses") or []:
            if status["name"] == "dev" and status.get("resourceClaimName"):
                return str(status["resourceClaimName"])
        for claim in obj.get("spec", {}).get("resourceClaims") or []:
            if claim["name"] == "dev" and claim.get("resourceClaimName"):
                return str(claim["resourceClaimName"])
        return ""
    return str(wait_for(name, timeout=60, interval=0.5, what=f"the claim of pod {pod}"))


def cdi_specs(node: Node, claim_uid: str) -> list[pathlib.Path]:
    """The CDI spec files the driver wrote for a claim (its env, and its device-metadata mount)."""
    return sorted([*node.cdi.glob(f"{DRIVER}-{claim_uid}-*.json"),
                   *kubelet.METADATA_CDI.glob(f"{DRIVER}_metadata_{claim_uid}_*.json")])


def env_name(claim: str, request: str = "dev") -> str:
    """The variable the test driver sets for a prepared request: claim_<claim>_<request>, non-alphanumerics as _."""
    return "".join(c if c.isalnum() else "_" for c in f"claim_{claim}_{request}")

