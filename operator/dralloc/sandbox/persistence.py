"""`--state FILE`: the whole store as one JSON document, so a demo cluster survives a restart.

The document is `{"resourceVersion": N, "items": [...]}` with every object as stored
(uids, timestamps and resourceVersions included). Loading restores the counter too,
so versions keep growing across restarts; the watch history is not saved, and a client
resuming from a version of the previous run gets 410 Gone and relists, as it would
after an etcd compaction. Writes go to a temporary file first, then replace the target.
"""

from __future__ import annotations

import json
import os
import pathlib
from typing import Any

from dralloc.sandbox import store as store_

Obj = dict[str, Any]


def dump(store: store_.Store) -> Obj:
    items = [e.obj for bucket in store.objects.values() for e in bucket.values()]
    return {"resourceVersion": store.rv, "items": items}


def load(store: store_.Store, state: Obj) -> None:
    """Restore a `dump()`: CRDs first, so their resources are served when their objects load."""
    items = sorted(state.get("items") or [], key=lambda o: o.get("kind") != "CustomResourceDefinition")
    for obj in items:
        rt = store.registry.by_kind(obj.get("apiVersion", ""), obj.get("kind", ""))
        if rt is None:
            continue
        meta = obj["metadata"]
        key = (rt.storage, meta.get("namespace", "") if rt.namespaced else "", meta["name"])
        store.insert(key, obj)
        if rt.kind == "CustomResourceDefinition":
            store.registry.add_crd(obj)
    store.rv = max(store.rv, int(state.get("resourceVersion") or 0))
    store.hub.compact(store.rv)


def save_file(store: store_.Store, path: str | os.PathLike[str]) -> None:
    target = pathlib.Path(path)
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(json.dumps(dump(store)))
    tmp.replace(target)


def load_file(store: store_.Store, path: str | os.PathLike[str]) -> None:
    load(store, json.loads(pathlib.Path(path).read_text()))
