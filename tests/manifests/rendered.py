"""The install manifests as files and as `kubectl kustomize manifests/` renders them.

Rendering needs kubectl (1.32 here, with kustomize v5 built in); tests that render
skip with `needs_kubectl` where it is not installed. The raw files are read with PyYAML
alone, so checks on one file (the ClusterRole, the Deployment) run everywhere.
"""

from __future__ import annotations

import copy
import functools
import pathlib
import shutil
import subprocess
from typing import Any

import pytest
import yaml

REPO = pathlib.Path(__file__).resolve().parents[2]
MANIFESTS = REPO / "manifests"
# The overlay that adds the Prometheus Operator's objects (outside manifests/: kustomize refuses an
# overlay inside its base).
MONITORING = REPO / "manifests-monitoring"
NAMESPACE = "dralloc-system"
KUBECTL = shutil.which("kubectl")

needs_kubectl = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed: cannot render the kustomization")

Obj = dict[str, Any]


def load(name: str, folder: pathlib.Path = MANIFESTS) -> list[Obj]:
    """The documents of one file under manifests/ (or `folder`)."""
    return [doc for doc in yaml.safe_load_all((folder / name).read_text()) if doc]


def load_monitoring() -> list[Obj]:
    """The ServiceMonitor and PrometheusRule of manifests-monitoring/monitoring.yaml."""
    return load("monitoring.yaml", MONITORING)


def find(objs: list[Obj], kind: str, name: str | None = None) -> Obj:
    found = [o for o in objs if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)]
    assert len(found) == 1, f"expected one {kind} {name or ''}, found {len(found)}"
    return found[0]


@functools.cache
def _render(folder: pathlib.Path) -> tuple[Obj, ...]:
    assert KUBECTL is not None
    done = subprocess.run([KUBECTL, "kustomize", str(folder)], capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise AssertionError(f"kubectl kustomize {folder.name}/ failed:\n{done.stderr}")
    return tuple(doc for doc in yaml.safe_load_all(done.stdout) if doc)


def render(folder: pathlib.Path = MANIFESTS) -> list[Obj]:
    """Every object `kubectl apply -k manifests/` (or `folder`) would send (a fresh copy per call)."""
    return copy.deepcopy(list(_render(folder)))


def is_crd(obj: Obj) -> bool:
    return obj["kind"] == "CustomResourceDefinition"
