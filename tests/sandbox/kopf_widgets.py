"""A tiny kopf operator used by test_client_kopf.py: create/update/delete handlers,
finalizers (kopf adds its own for the delete handler) and an index.

Not a test module: KopfRunner loads it by path. It logs in through KUBECONFIG, which
the test points at the sandbox's kubeconfig.
"""

from __future__ import annotations

from typing import Any

import kopf

RESOURCE = ("example.dralloc.dev", "v1", "widgets")
deleted: list[str] = []


@kopf.on.login()
def login(**kwargs: Any) -> kopf.ConnectionInfo | None:
    return kopf.login_with_kubeconfig(**kwargs)  # reads KUBECONFIG now, not at import time


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    settings.posting.enabled = True
    settings.watching.server_timeout = 30
    settings.persistence.consistency_timeout = 10


@kopf.index(*RESOURCE)
def sizes(name: str, spec: kopf.Spec, **_: Any) -> dict[str, Any]:
    return {name: spec.get("size", 0)}


@kopf.on.create(*RESOURCE)
def created(spec: kopf.Spec, body: kopf.Body, **_: Any) -> dict[str, Any]:
    kopf.info(body, reason="Created", message="a widget appeared")
    return {"size": spec.get("size", 0)}


@kopf.on.update(*RESOURCE, field="spec.size")
def resized(new: Any, sizes: kopf.Index[str, Any], patch: kopf.Patch, **_: Any) -> None:
    patch.status["size"] = new
    patch.status["known"] = sorted(sizes.keys())


@kopf.on.delete(*RESOURCE)
def removed(name: str, **_: Any) -> None:
    deleted.append(name)
