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
NAMESPACE = "dralloc-system"
KUBECTL = shutil.which("kubectl")

needs_kubectl = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed: cannot render the kustomization")

Obj = dict[str, Any]


def load(name: str) -> list[Obj]:
    """The documents of one file under manifests/."""
    return [doc for doc in yaml.safe_load_all((MANIFESTS / name).read_text()) if doc]


def find(objs: list[Obj], kind: str, name: str | None = None) -> Obj:
    found = [o for o in objs if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)]
    assert len(found) == 1, f"expected one {kind} {name or ''}, found {len(found)}"
    return found[0]


@functools.cache
def _render() -> tuple[Obj, ...]:
    assert KUBECTL is not None
    done = subprocess.run([KUBECTL, "kustomize", str(MANIFESTS)], capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise AssertionError(f"kubectl kustomize manifests/ failed:\n{done.stderr}")
    return tuple(doc for doc in yaml.safe_load_all(done.stdout) if doc)


def render() -> list[Obj]:
    """Every object `kubectl apply -k manifests/` would send (a fresh copy per call)."""
    return copy.deepcopy(list(_render()))


def is_crd(obj: Obj) -> bool:
    return obj["kind"] == "CustomResourceDefinition"
