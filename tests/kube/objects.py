"""Raw API objects for the kube tests, as a user would write them."""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]


def claim(name: str, namespace: str = "default", **meta: Any) -> Obj:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": namespace, **meta},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}}


def pod(name: str, namespace: str = "default", **spec: Any) -> Obj:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace},
            "spec": {"containers": [{"name": "c", "image": "i"}], **spec}}


ALLOCATION: Obj = {"devices": {"results": [
    {"request": "gpu", "driver": "gpu.dralloc.dev", "pool": "node-0", "device": "gpu-0"}]}}


def configmap(name: str, namespace: str = "default", labels: dict[str, str] | None = None) -> Obj:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace, "labels": labels or {}}, "data": {"k": name}}
