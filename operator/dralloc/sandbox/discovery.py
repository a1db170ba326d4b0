"""Discovery and OpenAPI documents: how clients learn what the sandbox serves.

kopf walks `/api`, `/api/v1`, `/apis` and `/apis/{group}/{version}`; kubectl does the
same and then reads `/openapi/v3` to decide whether the server validates fields itself
(`fieldValidation` on the PATCH operations) and to build strategic merge patches for
kinds it has no Go types for (resource.k8s.io/v1 is newer than kubectl 1.32). The
OpenAPI documents are built from the real 1.37 definitions (`schemas.py`): JSON-schema
type lists become single types and `$defs` references become `components/schemas`.
CRD group versions are not listed in OpenAPI (kubectl then treats them as CRDs, as it
does against a real server for CRDs without a published schema).
"""

from __future__ import annotations

import functools
import hashlib
import json
from typing import Any

from dralloc.sandbox import resources, schemas

Obj = dict[str, Any]
VERSION_INFO: Obj = {
    "major": "1", "minor": "37", "gitVersion": "v1.37.0-dralloc-sandbox", "gitCommit": "sandbox",
    "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.25",
    "compiler": "gc", "platform": "linux/amd64",
}


def version_info(release: str) -> Obj:
    """GET /version of a sandbox running as `release` ("1.36", "1.37", "1.38")."""
    minor = release.split(".")[1]
    return {**VERSION_INFO, "minor": minor, "gitVersion": f"v1.{minor}.0-dralloc-sandbox"}


def api_versions(host: str) -> Obj:
    return {"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": host}]}


def _group(name: str, versions: list[str]) -> Obj:
    entries = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
    return {"name": name, "versions": entries, "preferredVersion": entries[0]}


def api_group_list(registry: resources.Registry) -> Obj:
    groups = [_group(g, vs) for g, vs in registry.groups().items() if g]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(registry: resources.Registry, group: str) -> Obj | None:
    versions = registry.groups().get(group)
    if not versions or not group:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group(group, versions)}


def resource_list(registry: resources.Registry, group: str, version: str) -> Obj | None:
    found = [t for t in registry if t.group == group and t.version == version]
    if not found:
        return None
    items: list[Obj] = []
    for t in found:
        entry: Obj = {"name": t.plural, "singularName": t.singular, "namespaced": t.namespaced,
                      "kind": t.kind, "verbs": list(resources.VERBS)}
        if t.short_names:
            entry["shortNames"] = list(t.short_names)
        if t.categories:
            entry["categories"] = list(t.categories)
        items.append(entry)
        if t.status:
            items.append({"name": f"{t.plural}/status", "singularName": "", "namespaced": t.namespaced,
                          "kind": t.kind, "verbs": ["get", "patch", "update"]})
        for sub in t.subresources:
            kind = {"binding": "Binding", "eviction": "Eviction"}.get(sub, t.kind)
            group_of = {"eviction": "policy"}.get(sub)
            extra: Obj = {"group": group_of, "version": "v1"} if group_of else {}
            items.append({"name": f"{t.plural}/{sub}", "singularName": "", "namespaced": t.namespaced,
                          "kind": kind, "verbs": ["create"] if sub != "finalize" else ["update"], **extra})
    gv = f"{group}/{version}" if group else version
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": items}


# ---- OpenAPI v3 -----------------------------------------------------------------------------

def _v3(schema: Any) -> Any:
    if isinstance(schema, list):
        return [_v3(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out: Obj = {}
    for key, value in schema.items():
        if key == "$ref" and isinstance(value, str):
            out[key] = value.replace("#/$defs/", "#/components/schemas/")
        elif key == "type" and isinstance(value, list):
            types = [t for t in value if t != "null"]
            out[key] = types[0] if len(types) == 1 else types[0] if types else "object"
        elif key in ("$schema", "$id"):
            continue
        elif key == "properties" and isinstance(value, dict):
            out[key] = {k: _v3(v) for k, v in value.items()}
        else:
            out[key] = _v3(value)
    return out


def _refs(schema: Any, found: set[str]) -> None:
    if isinstance(schema, dict):
        ref = schema.get("$ref")
        if isinstance(ref, str):
            name = ref.rsplit("/", 1)[-1]
            if name not in found and name in schemas.definitions():
                found.add(name)
                _refs(schemas.definitions()[name], found)
        for value in schema.values():
            _refs(value, found)
    elif isinstance(schema, list):
        for value in schema:
            _refs(value, found)


_PARAMS = [{"name": n, "in": "query", "schema": {"type": "string"}, "uniqueItems": True}
           for n in ("dryRun", "fieldManager", "fieldValidation", "force", "pretty")]


def _paths(types: list[resources.ResourceType]) -> Obj:
    paths: Obj = {}
    for t in types:
        prefix = f"/apis/{t.group}/{t.version}" if t.group else f"/api/{t.version}"
        scope = f"{prefix}/namespaces/{{namespace}}" if t.namespaced else prefix
        gvk = {"group": t.group, "version": t.version, "kind": t.kind}
        item_ops = {verb: {"operationId": f"{verb}{t.kind}", "x-kubernetes-action": action,
                           "x-kubernetes-group-version-kind": gvk, "parameters": _PARAMS,
                           "responses": {"200": {"description": "OK"}}}
                    for verb, action in (("get", "get"), ("put", "put"), ("patch", "patch"),
                                         ("delete", "delete"))}
        paths[f"{scope}/{t.plural}/{{name}}"] = item_ops
        paths[f"{scope}/{t.plural}"] = {
            verb: {"operationId": f"{verb}{t.kind}List", "x-kubernetes-action": action,
                   "x-kubernetes-group-version-kind": gvk, "parameters": _PARAMS,
                   "responses": {"200": {"description": "OK"}}}
            for verb, action in (("get", "list"), ("post", "post"))}
        if t.status:
            paths[f"{scope}/{t.plural}/{{name}}/status"] = item_ops
    return paths


@functools.lru_cache(maxsize=64)
def _openapi_v3_cached(key: tuple[tuple[str, str, str, str, bool, bool], ...]) -> bytes:
    types = [resources.ResourceType(g, v, p, k, ns, status=st) for g, v, p, k, ns, st in key]
    names: set[str] = set()
    for t in types:
        name = schemas.definition_name(t.api_version, t.kind)
        if name:
            names.add(name)
            _refs(schemas.definitions()[name], names)
            list_name = schemas.definition_name(t.api_version, t.kind + "List")
            if list_name:
                names.add(list_name)
                _refs(schemas.definitions()[list_name], names)
    doc = {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": VERSION_INFO["gitVersion"]},
        "paths": _paths(types),
        "components": {"schemas": {n: _v3(schemas.definitions()[n]) for n in sorted(names)}},
    }
    return json.dumps(doc).encode()


def _builtin(registry: resources.Registry, group: str, version: str) -> list[resources.ResourceType]:
    return [t for t in registry if t.group == group and t.version == version and not t.crd]


def openapi_v3_gv(registry: resources.Registry, group: str, version: str) -> bytes | None:
    types = _builtin(registry, group, version)
    if not types:
        return None
    key = tuple((t.group, t.version, t.plural, t.kind, t.namespaced, t.status) for t in types)
    return _openapi_v3_cached(key)


def openapi_v3_index(registry: resources.Registry) -> Obj:
    paths = {}
    seen = set()
    for t in registry:
        if t.crd or (t.group, t.version) in seen:
            continue
        seen.add((t.group, t.version))
        rel = f"apis/{t.group}/{t.version}" if t.group else f"api/{t.version}"
        digest = hashlib.sha256(rel.encode()).hexdigest()[:32].upper()
        paths[rel] = {"serverRelativeURL": f"/openapi/v3/{rel}?hash={digest}"}
    return {"paths": paths}


@functools.cache
def openapi_v2() -> bytes:
    """A JSON swagger document with the definitions (clients wanting protobuf get 406)."""
    defs = {n: _v3(s) for n, s in schemas.definitions().items()}
    text = json.dumps({"swagger": "2.0", "info": {"title": "Kubernetes", "version": VERSION_INFO["gitVersion"]},
                       "paths": {}, "definitions": defs})
    return text.replace("#/components/schemas/", "#/definitions/").encode()
