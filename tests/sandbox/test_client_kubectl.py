"""kubectl (1.32 on our machines), unchanged, against a threaded sandbox.

kubectl reads discovery and OpenAPI v3 (to learn that the server validates fields and
to build strategic merge patches for resource.k8s.io/v1, which it has no types for),
asks for Tables, and watches for `wait`. Skipped where kubectl is not installed.
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess

import pytest

from dralloc.sandbox import ThreadedApiServer, demo_objects, load_files

KUBECTL = shutil.which("kubectl")
MANIFEST = pathlib.Path(__file__).with_name("manifests") / "claim-and-pod.yaml"
pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed on this machine")


class Kubectl:
    def __init__(self, kubeconfig: pathlib.Path) -> None:
        self.env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
        self.env.pop("HTTPS_PROXY", None)
        self.env.pop("HTTP_PROXY", None)

    def __call__(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        assert KUBECTL is not None
        done = subprocess.run([KUBECTL, *args], env=self.env, capture_output=True, text=True, timeout=60)
        if check and done.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed: {done.stderr}")
        return done

    def json(self, *args: str) -> dict[str, object]:
        return json.loads(self(*args, "-o", "json").stdout)  # type: ignore[no-any-return]


@pytest.fixture
def kubectl(apiserver: ThreadedApiServer, tmp_path: pathlib.Path) -> Kubectl:
    apiserver.seed(demo_objects())
    return Kubectl(apiserver.kubeconfig)


def test_get_resource_slices_and_classes(kubectl: Kubectl) -> None:
    out = kubectl("get", "resourceslices").stdout
    assert "node-0-gpus" in out and "NAME" in out
    listed = kubectl.json("get", "deviceclasses")
    assert [i["metadata"]["name"] for i in listed["items"]] == ["gpu", "gpu-partition", "nic"]  # type: ignore[index]


def test_apply_twice_then_get_json(kubectl: Kubectl, apiserver: ThreadedApiServer) -> None:
    first = kubectl("apply", "-f", str(MANIFEST)).stdout
    assert "resourceclaimtemplate.resource.k8s.io/one-gpu created" in first
    kubectl("apply", "-f", str(MANIFEST))
    claim = kubectl.json("get", "resourceclaim", "shared-gpu")
    assert claim["metadata"]["generation"] == 1  # type: ignore[index]
    pod = apiserver.get("v1", "Pod", "trainer", "default")
    assert pod is not None and pod["spec"]["schedulerName"] == "dralloc"


def test_patch_status_subresource_and_wait(kubectl: Kubectl) -> None:
    kubectl("apply", "-f", str(MANIFEST))
    allocation = {"devices": {"results": [{"request": "gpu", "driver": "gpu.dralloc.dev", "pool": "node-0",
                                           "device": "gpu-0"}]}}
    kubectl("patch", "resourceclaim", "shared-gpu", "--subresource=status", "--type=merge",
            "-p", json.dumps({"status": {"allocation": allocation}}))
    claim = kubectl.json("get", "resourceclaim", "shared-gpu")
    assert claim["status"]["allocation"] == allocation  # type: ignore[index]
    kubectl("patch", "pod", "trainer", "--subresource=status",
            "-p", json.dumps({"status": {"conditions": [{"type": "Ready", "status": "True"}]}}))
    done = kubectl("wait", "--for=condition=Ready", "pod/trainer", "--timeout=20s")
    assert "condition met" in done.stdout


def test_invalid_object_is_reported(kubectl: Kubectl, tmp_path: pathlib.Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: broken}\n"
                   "spec:\n  selectors:\n  - cel: {expression: 'device.driver =='}\n")
    done = kubectl("apply", "-f", str(bad), check=False)
    assert done.returncode != 0 and "spec.selectors[0].cel.expression" in done.stderr


def test_delete_and_wait_for_deletion(kubectl: Kubectl) -> None:
    kubectl("apply", "-f", str(MANIFEST))
    kubectl("delete", "-f", str(MANIFEST), "--wait=true", "--timeout=20s")
    done = kubectl("get", "resourceclaims,pods", "-o", "name")
    assert done.stdout.strip() == ""


EXAMPLES = sorted((pathlib.Path(__file__).parents[2] / "examples").glob("*.yaml"))


@pytest.mark.parametrize("example", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_apply_examples(apiserver: ThreadedApiServer, example: pathlib.Path) -> None:
    """The repository's examples apply cleanly to an empty sandbox (once their namespaces exist)."""
    kubectl = Kubectl(pathlib.Path(str(apiserver.kubeconfig)))
    for ns in sorted({(o.get("metadata") or {}).get("namespace") for o in load_files([example])} - {None, "default"}):
        kubectl("create", "namespace", str(ns))
    kubectl("apply", "-f", str(example))
    listed = kubectl.json("get", "-f", str(example))
    assert listed["items"]


def test_create_generators_send_protobuf(kubectl: Kubectl, apiserver: ThreadedApiServer) -> None:
    """`kubectl create namespace|configmap` post protobuf; the sandbox decodes those two kinds."""
    kubectl("create", "namespace", "team-a")
    kubectl("create", "configmap", "settings", "-n", "team-a", "--from-literal=mode=fast")
    stored = apiserver.get("v1", "ConfigMap", "settings", "team-a")
    assert stored is not None and stored["data"] == {"mode": "fast"}


def test_server_side_printing(kubectl: Kubectl, apiserver: ThreadedApiServer) -> None:
    """kubectl prints the server's Table columns: -o wide adds the priority-1 ones (NODE for pods)."""
    kubectl("apply", "-f", str(MANIFEST))
    apiserver.seed([{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "placed", "namespace": "default"},
                     "spec": {"nodeName": "node-2", "containers": [{"name": "c", "image": "i"}]}}])
    narrow = kubectl("get", "pods").stdout.splitlines()
    assert narrow[0].split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    wide = kubectl("get", "pods", "-o", "wide").stdout.splitlines()
    assert wide[0].split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE", "NOMINATED", "NODE",
                               "READINESS", "GATES"]
    placed = next(line.split() for line in wide if line.startswith("placed "))
    assert placed[1:4] == ["0/1", "Pending", "0"] and placed[5:7] == ["<none>", "node-2"]
    claims = kubectl("get", "resourceclaims").stdout.splitlines()
    assert claims[0].split() == ["NAME", "STATE", "AGE"] and claims[1].split()[:2] == ["shared-gpu", "pending"]
    slices = kubectl("get", "resourceslices", "--field-selector", "spec.nodeName=node-1").stdout.splitlines()
    assert slices[0].split() == ["NAME", "NODE", "DRIVER", "POOL", "AGE"]
    assert slices[1].split()[:4] == ["node-1-gpu-counters", "node-1", "gpu.dralloc.dev", "node-1"]
    nodes = kubectl("get", "nodes", "-o", "wide").stdout.splitlines()
    assert nodes[0].split()[:6] == ["NAME", "STATUS", "ROLES", "AGE", "VERSION", "INTERNAL-IP"]
    assert nodes[1].split()[:3] == ["node-0", "Ready", "<none>"]


VOLUMES = pathlib.Path(__file__).with_name("manifests") / "volumes.yaml"


def test_apply_volumes_classes_and_priority_classes(kubectl: Kubectl, apiserver: ThreadedApiServer,
                                                    tmp_path: pathlib.Path) -> None:
    """What kube-scheduler's volume filters read, and PriorityClasses, apply and print as on a real cluster."""
    first = kubectl("apply", "-f", str(VOLUMES)).stdout
    assert "priorityclass.scheduling.k8s.io/training created" in first
    assert "persistentvolumeclaim/scratch created" in first
    second = kubectl("apply", "-f", str(VOLUMES)).stdout
    assert "persistentvolumeclaim/scratch unchanged" in second
    claim = apiserver.get("v1", "PersistentVolumeClaim", "scratch", "default")
    assert claim is not None and claim["spec"]["storageClassName"] == "local-nvme"  # DefaultStorageClass
    claims = kubectl("get", "pvc").stdout.splitlines()
    assert claims[0].split() == ["NAME", "STATUS", "VOLUME", "CAPACITY", "ACCESS", "MODES", "STORAGECLASS",
                                 "VOLUMEATTRIBUTESCLASS", "AGE"]
    assert claims[1].split()[:3] == ["scratch", "Pending", "local-nvme"]
    classes = kubectl("get", "sc").stdout.splitlines()
    assert classes[1].split()[:5] == ["local-nvme", "(default)", "kubernetes.io/no-provisioner", "Delete",
                                      "WaitForFirstConsumer"]
    priorities = kubectl("get", "pc").stdout
    assert "system-node-critical" in priorities and "training" in priorities
    kubectl("get", "pv/node-0-nvme", "csinode/node-0")
    drivers = kubectl("get", "csidrivers").stdout.splitlines()
    assert drivers[0].split() == ["NAME", "ATTACHREQUIRED", "PODINFOONMOUNT", "STORAGECAPACITY", "TOKENREQUESTS",
                                  "REQUIRESREPUBLISH", "MODES", "AGE"]
    assert drivers[1].split()[:7] == ["csi.dralloc.dev", "false", "false", "true", "<unset>", "false", "Persistent"]
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: broken}\nspec: {accessModes: []}\n")
    done = kubectl("apply", "-f", str(bad), check=False)
    assert done.returncode != 0 and "spec.accessModes" in done.stderr and "spec.resources[storage]" in done.stderr
    kubectl("delete", "-f", str(VOLUMES), "--wait=true", "--timeout=20s")  # the protection finalizers are removed
    assert kubectl("get", "pvc,pv", "-o", "name").stdout.strip() == ""
