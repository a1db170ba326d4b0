"""The three PATCH formats of the API server, applied to plain JSON values.

- merge-patch (RFC 7386): objects merge, `null` deletes, everything else replaces.
- JSON patch (RFC 6902): a list of operations; a failed `test` (kopf uses one on
  `metadata.resourceVersion` around finalizer changes) is a 422, as upstream answers.
- strategic-merge-patch, for built-in kinds only: like merge-patch, except that lists
  whose schema says `x-kubernetes-patch-strategy: merge` merge element by element on
  their `x-kubernetes-patch-merge-key` (containers by name, conditions by type), and
  the `$patch`, `$deleteFromPrimitiveList/...`, `$setElementOrder/...` and
  `$retainKeys` directives are understood. Merge keys come from the real 1.37 schemas
  (`schemas.py`), so any built-in list behaves as upstream declares it.

Every function returns a new value and leaves its inputs untouched.
"""

from __future__ import annotations

import copy
from typing import Any

from dralloc.sandbox import errors, schemas

Json = Any


def merge_patch(target: Json, patch: Json) -> Json:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


# ---- JSON patch -----------------------------------------------------------------------------

def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise errors.ApiError(422, f"invalid JSON pointer {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _index(container: list[Any], token: str, *, adding: bool) -> int:
    if token == "-" and adding:
        return len(container)
    if not token.isdigit():
        raise errors.ApiError(422, f"invalid array index {token!r}")
    idx = int(token)
    if idx > len(container) or (idx == len(container) and not adding):
        raise errors.ApiError(422, f"array index {idx} out of bounds")
    return idx


def _parent(doc: Json, tokens: list[str]) -> Json:
    cur = doc
    for token in tokens[:-1]:
        if isinstance(cur, dict):
            if token not in cur:
                raise errors.ApiError(422, f"path element {token!r} does not exist")
            cur = cur[token]
        elif isinstance(cur, list):
            cur = cur[_index(cur, token, adding=False)]
        else:
            raise errors.ApiError(422, f"path element {token!r} does not exist")
    return cur


def _get(doc: Json, path: str) -> Json:
    tokens = _pointer(path)
    if not tokens:
        return doc
    parent = _parent(doc, tokens)
    last = tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise errors.ApiError(422, f"path {path!r} does not exist")
        return parent[last]
    if isinstance(parent, list):
        return parent[_index(parent, last, adding=False)]
    raise errors.ApiError(422, f"path {path!r} does not exist")


def _remove(doc: Json, path: str) -> Json:
    tokens = _pointer(path)
    parent = _parent(doc, tokens)
    last = tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise errors.ApiError(422, f"unable to remove nonexistent key {last!r}")
        return parent.pop(last)
    if isinstance(parent, list):
        return parent.pop(_index(parent, last, adding=False))
    raise errors.ApiError(422, f"path {path!r} does not exist")


def _add(doc: Json, path: str, value: Json, *, replace: bool = False) -> Json:
    tokens = _pointer(path)
    if not tokens:
        return value
    parent = _parent(doc, tokens)
    last = tokens[-1]
    if isinstance(parent, dict):
        if replace and last not in parent:
            raise errors.ApiError(422, f"replace operation does not apply: doc is missing key {path!r}")
        parent[last] = value
    elif isinstance(parent, list):
        if replace:
            parent[_index(parent, last, adding=False)] = value
        else:
            parent.insert(_index(parent, last, adding=True), value)
    else:
        raise errors.ApiError(422, f"path {path!r} does not exist")
    return doc


def json_patch(target: Json, operations: Json) -> Json:
    if not isinstance(operations, list):
        raise errors.ApiError(400, "a JSON patch must be a list of operations")
    doc = copy.deepcopy(target)
    for op in operations:
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise errors.ApiError(400, f"invalid JSON patch operation: {op!r}")
        kind, path = op["op"], op["path"]
        if kind == "test":
            if _get(doc, path) != op.get("value"):
                raise errors.ApiError(422, f"testing value {path} failed", reason="Invalid")
        elif kind == "remove":
            _remove(doc, path)
        elif kind in ("add", "replace"):
            if "value" not in op:
                raise errors.ApiError(400, f"{kind} operation needs a value")
            doc = _add(doc, path, copy.deepcopy(op["value"]), replace=kind == "replace")
        elif kind in ("move", "copy"):
            value = _get(doc, op.get("from", ""))
            if kind == "move":
                _remove(doc, op.get("from", ""))
            doc = _add(doc, path, copy.deepcopy(value))
        else:
            raise errors.ApiError(400, f"unknown JSON patch operation {kind!r}")
    return doc


# ---- strategic merge patch ------------------------------------------------------------------

def strategic_merge_patch(target: Json, patch: Json, api_version: str, kind: str) -> Json:
    return _smp(target, patch, schemas.for_kind(api_version, kind))


def _smp(target: Json, patch: Json, schema: schemas.Schema | None) -> Json:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if patch.get("$patch") == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    if patch.get("$patch") == "delete":
        return None
    result = dict(target) if isinstance(target, dict) else {}
    retain = patch.get("$retainKeys")
    for key, value in patch.items():
        if key.startswith("$setElementOrder/") or key in ("$retainKeys", "$patch"):
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            result[field] = [v for v in result.get(field) or [] if v not in value]
            continue
        if value is None:
            result.pop(key, None)
            continue
        sub = schemas.prop(schema, key)
        if isinstance(value, list):
            result[key] = _smp_list(result.get(key), value, sub)
        else:
            merged = _smp(result.get(key), value, sub)
            if merged is None:
                result.pop(key, None)
            else:
                result[key] = merged
    if isinstance(retain, list):
        result = {k: v for k, v in result.items() if k in retain or k not in (target or {})}
    return result


def _smp_list(current: Json, patch: list[Any], schema: schemas.Schema | None) -> list[Any]:
    strategy = (schema or {}).get("x-kubernetes-patch-strategy", "")
    if "merge" not in strategy.split(","):
        return [v for v in copy.deepcopy(patch) if not (isinstance(v, dict) and "$patch" in v)]
    if any(isinstance(v, dict) and v.get("$patch") == "replace" for v in patch):
        return [copy.deepcopy(v) for v in patch if not (isinstance(v, dict) and "$patch" in v)]
    existing = list(current) if isinstance(current, list) else []
    key = (schema or {}).get("x-kubernetes-patch-merge-key")
    if key is None:  # a set of primitives
        return existing + [v for v in patch if v not in existing]
    item_schema = schemas.items(schema)
    for item in patch:
        if not isinstance(item, dict):
            continue
        pos = next((i for i, e in enumerate(existing)
                    if isinstance(e, dict) and e.get(key) == item.get(key)), None)
        if item.get("$patch") == "delete":
            if pos is not None:
                existing.pop(pos)
        elif pos is None:
            existing.append(_smp({}, item, item_schema))
        else:
            existing[pos] = _smp(existing[pos], item, item_schema)
    return existing
