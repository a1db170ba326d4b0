"""Kubeconfig files pointing at a sandbox, so kubectl, kopf and both Python clients log in
the way they would to any cluster (`KUBECONFIG=PATH kubectl get resourceslices`)."""

from __future__ import annotations

import os
import pathlib
from typing import Any

import yaml

NAME = "dralloc-sandbox"


def document(url: str, token: str | None = None, namespace: str = "default") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": NAME, "cluster": {"server": url}}],
        "users": [{"name": NAME, "user": {"token": token} if token else {}}],
        "contexts": [{"name": NAME, "context": {"cluster": NAME, "user": NAME, "namespace": namespace}}],
        "current-context": NAME,
        "preferences": {},
    }


def write(path: str | os.PathLike[str], url: str, token: str | None = None) -> pathlib.Path:
    """Write (replace) a kubeconfig at `path`, readable only by its owner when it holds a token."""
    target = pathlib.Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(yaml.safe_dump(document(url, token), sort_keys=False))
    if token:
        tmp.chmod(0o600)
    tmp.replace(target)
    return target
