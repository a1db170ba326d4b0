"""Reads: get one object, list all of a type (every page), watch from a resourceVersion.

Lists are paginated (`limit`/`continue`) so a cluster with many ResourceSlices is not
sent in one response; all pages belong to the snapshot of the first one, whose
resourceVersion is returned so the caller can watch from exactly there. The API server
leaves `apiVersion`/`kind` out of list items; they are filled in so an object looks the
same whether it came from a get, a list or a watch.

`watch_objects` yields events until the server ends the stream (its `timeoutSeconds`
or a restart); resuming is the caller's job, from the resourceVersion of the last
event it saw (BOOKMARK events carry one too). A resourceVersion the server no longer
remembers raises `GoneError`, whether it comes as the HTTP status or as an ERROR event
inside the stream: the caller must list again. Consume it with
`contextlib.aclosing(...)` so breaking out of the loop closes the connection at once.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from typing import Any

import aiohttp

from dralloc.kube import errors
from dralloc.kube.resources import Resource
from dralloc.kube.session import Session

Obj = dict[str, Any]

PAGE_SIZE = 500  # objects per list page: the apiserver's own default chunk size for informers
WATCH_EVENT_TYPES = ("ADDED", "MODIFIED", "DELETED", "BOOKMARK")
# How long a watch may stay silent beyond its own timeoutSeconds before we give up on
# the connection (bookmarks arrive about once a minute on a real cluster).
WATCH_READ_SLACK = 30.0


async def get_object(session: Session, resource: Resource, name: str, namespace: str | None = None) -> Obj:
    """The object as stored; `NotFoundError` if there is none."""
    obj = await session.request("GET", resource.object_path(name, namespace))
    return fill_type(resource, obj)


async def list_objects(
    session: Session,
    resource: Resource,
    *,
    namespace: str | None = None,  # None: all namespaces (or a cluster-scoped type)
    label_selector: str | None = None,
    field_selector: str | None = None,
    page_size: int = PAGE_SIZE,
) -> tuple[list[Obj], str]:
    """Every matching object (all pages) and the list's resourceVersion, to watch from."""
    items: list[Obj] = []
    list_rv = ""
    token: str | None = None
    while True:
        page = await session.request("GET", resource.collection_path(namespace), query={
            "labelSelector": label_selector, "fieldSelector": field_selector,
            "limit": page_size, "continue": token,
        })
        meta = page.get("metadata") or {}
        # Every page of one list is served from the same snapshot; keep the first's version.
        list_rv = list_rv or str(meta.get("resourceVersion") or "")
        items.extend(fill_type(resource, item) for item in page.get("items") or [])
        token = meta.get("continue") or None
        if not token:
            return items, list_rv


async def watch_objects(
    session: Session,
    resource: Resource,
    *,
    resource_version: str,
    namespace: str | None = None,
    label_selector: str | None = None,
    field_selector: str | None = None,
    timeout_seconds: int = 300,
) -> AsyncGenerator[tuple[str, Obj], None]:
    """Events after `resource_version`: ("ADDED"|"MODIFIED"|"DELETED"|"BOOKMARK", object)."""
    query: dict[str, str | int | bool | None] = {
        "watch": True, "resourceVersion": resource_version, "allowWatchBookmarks": True,
        "timeoutSeconds": timeout_seconds, "labelSelector": label_selector, "fieldSelector": field_selector,
    }
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=30.0, sock_read=timeout_seconds + WATCH_READ_SLACK)
    response = await session.stream(resource.collection_path(namespace), query=query, timeout=timeout)
    try:
        while True:
            try:
                line = await response.content.readline()
            except (aiohttp.ClientError, TimeoutError) as exc:
                raise errors.TransportError(f"watch {resource.plural}: {exc!r}") from exc
            if not line:
                return  # the server ended the stream: resume from the last resourceVersion
            if not line.strip():
                continue
            try:
                event = json.loads(line)
            except ValueError as exc:
                raise errors.ServerError(500, "BadResponse", f"watch {resource.plural}: not a JSON event: "
                                         f"{line[:errors.MAX_RAW_BODY]!r}") from exc
            kind, obj = event.get("type"), event.get("object") or {}
            if kind == "ERROR":
                raise errors.from_status_object(obj)
            if kind not in WATCH_EVENT_TYPES:
                continue  # an event type newer than this code: skip rather than misread it
            yield kind, fill_type(resource, obj)
    finally:
        response.close()


def fill_type(resource: Resource, obj: Obj) -> Obj:
    """`obj` with apiVersion/kind set from `resource` where the server left them out."""
    obj.setdefault("apiVersion", resource.api_version)
    obj.setdefault("kind", resource.kind)
    return obj
