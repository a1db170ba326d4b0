"""`kubectl apply` of the rendered manifests, against the sandbox API server.

CRDs go first (as a fresh cluster needs them before our custom objects), then every
object of a kind the sandbox serves. The sandbox serves the core, DRA, CRD, Event, Lease
and ConfigMap types but no apps/v1, rbac, ServiceAccount or Service, and the Prometheus
Operator's types are CRDs it does not have: those objects are skipped here and checked
offline instead (test_kustomize_renders validates the built-in ones against the
Kubernetes 1.32 schemas; test_monitoring checks the monitoring ones).
"""

from __future__ import annotations

import json
import pathlib
import subprocess
import urllib.request
from typing import Any

import pytest
import yaml
from tests.manifests.rendered import KUBECTL, MONITORING, is_crd, needs_kubectl, render

from dralloc.sandbox import ThreadedApiServer
from dralloc.sandbox.pytest_plugin import apiserver, pytest_configure

__all__ = ["apiserver", "pytest_configure"]

pytestmark = needs_kubectl

MUST_APPLY = {"Namespace", "CustomResourceDefinition", "ConfigMap"}
# Kinds this sandbox does not serve (see the module docstring); anything else must apply.
NOT_SERVED = {"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Deployment", "Service", "ServiceMonitor",
              "PrometheusRule"}

Obj = dict[str, Any]


def _get(server: ThreadedApiServer, path: str) -> Obj:
    request = urllib.request.Request(server.url + path)
    if server.token:
        request.add_header("Authorization", f"Bearer {server.token}")
    with urllib.request.urlopen(request, timeout=10) as response:
        result: Obj = json.loads(response.read())
        return result


def served(server: ThreadedApiServer) -> set[tuple[str, str]]:
    """(apiVersion, kind) of every type discovery lists."""
    versions = ["/api/v1"] + [f"/apis/{v['groupVersion']}" for g in _get(server, "/apis")["groups"]
                              for v in g["versions"]]
    out = set()
    for path in versions:
        doc = _get(server, path)
        out |= {(doc["groupVersion"], r["kind"]) for r in doc["resources"] if "/" not in r["name"]}
    return out


def kubectl(server: ThreadedApiServer, tmp_path: pathlib.Path, *args: str, objs: list[Obj] | None = None) -> str:
    assert KUBECTL is not None
    command = [KUBECTL, "--kubeconfig", str(server.kubeconfig), *args]
    if objs is not None:
        path = tmp_path / "objects.yaml"
        path.write_text(yaml.safe_dump_all(objs))
        command += ["-f", str(path)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, f"kubectl {' '.join(args)} failed:\n{done.stderr}"
    return done.stdout


def _key(obj: Obj) -> str:
    return f"{obj['kind']}/{obj['metadata']['name']}"


def _generation(server: ThreadedApiServer, obj: Obj) -> int:
    meta = obj["metadata"]
    stored = server.get(obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace", ""))
    assert stored is not None, _key(obj)
    return int(stored["metadata"]["generation"])


def test_rendered_manifests_apply(apiserver: ThreadedApiServer, tmp_path: pathlib.Path) -> None:
    objs = render()
    crds = [o for o in objs if is_crd(o)]
    out = kubectl(apiserver, tmp_path, "apply", objs=crds)
    assert out.count(" created") == len(crds) == 2, out
    kubectl(apiserver, tmp_path, "wait", "--for=condition=Established", "--timeout=20s",
            *(f"crd/{c['metadata']['name']}" for c in crds))

    kinds = served(apiserver)
    rest = [o for o in objs if not is_crd(o)]
    applied = [o for o in rest if (o["apiVersion"], o["kind"]) in kinds]
    skipped = {o["kind"] for o in rest if (o["apiVersion"], o["kind"]) not in kinds}
    assert skipped <= NOT_SERVED, f"the sandbox serves these but they were not applied: {skipped - NOT_SERVED}"
    assert MUST_APPLY <= {o["kind"] for o in [*crds, *applied]}
    out = kubectl(apiserver, tmp_path, "apply", objs=applied)
    assert out.count(" created") == len(applied), out

    for obj in [*crds, *applied]:
        meta = obj["metadata"]
        stored = apiserver.get(obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace", ""))
        assert stored is not None, f"{_key(obj)} was not stored"
        assert (meta.get("labels") or {}).items() <= (stored["metadata"].get("labels") or {}).items(), _key(obj)
        assert stored.get("data") == obj.get("data"), _key(obj)

    # Applying the same manifests again changes nothing. kubectl still sends (and prints "configured" for)
    # a PodDisruptionBudget: its spec.selector's patch strategy is "replace", so the patch it computes is
    # never empty, on any API server; the object stays at its generation.
    budgets = [o for o in applied if o["kind"] == "PodDisruptionBudget"]
    generations = {_key(o): _generation(apiserver, o) for o in budgets}
    again = kubectl(apiserver, tmp_path, "apply", objs=[*crds, *applied])
    assert again.count(" unchanged") == len(crds) + len(applied) - len(budgets), again
    assert again.count(" configured") == len(budgets), again
    assert {_key(o): _generation(apiserver, o) for o in budgets} == generations


@pytest.mark.parametrize("kind", sorted(NOT_SERVED))
def test_kinds_the_sandbox_does_not_serve_are_still_rendered(kind: str) -> None:
    """Skipped above, so at least present (the Prometheus Operator's kinds in manifests-monitoring/) and
    checked offline elsewhere."""
    assert any(o["kind"] == kind for o in render(MONITORING))
