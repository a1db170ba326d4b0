"""The real OpenAPI definitions of Kubernetes 1.37, as kubernetes-validate ships them.

Three parts of the sandbox need the schema of a built-in kind: strategic-merge-patch
(list merge keys and patch strategies), admission (structural validation of
resource.k8s.io objects) and the OpenAPI documents kubectl reads. They all read the
same `$defs` table, loaded once per process on first use (about 2 MB of JSON), so
the sandbox never carries a hand-written schema.
"""

from __future__ import annotations

import functools
import json
from importlib import resources as importlib_resources
from typing import Any

Schema = dict[str, Any]
KUBERNETES_VERSION = "1.37.0"
_SCHEMA_DIR = f"kubernetes-json-schema/v{KUBERNETES_VERSION}-local"


def _load(strict: bool, name: str) -> Any:
    folder = _SCHEMA_DIR + ("-strict" if strict else "")
    ref = importlib_resources.files("kubernetes_validate").joinpath(f"{folder}/{name}")
    return json.loads(ref.read_text())


# 1.37 no longer serves scheduling.k8s.io/v1alpha2 (1.36's gang API, GenericWorkload): a sandbox
# running as 1.36 serves it (resources.builtin_types), with 1.36's own definitions of it.
OLDER_DEFINITIONS = {"1.36.0": "io.k8s.api.scheduling.v1alpha2."}


@functools.cache
def definitions(strict: bool = False) -> dict[str, Schema]:
    """Definition name (`io.k8s.api.core.v1.Pod`) -> JSON schema, refs as `#/$defs/NAME`."""
    loaded: dict[str, Schema] = _load(strict, "_definitions.json")["$defs"]
    for version, prefix in OLDER_DEFINITIONS.items():
        folder = f"kubernetes-json-schema/v{version}-local" + ("-strict" if strict else "")
        ref = importlib_resources.files("kubernetes_validate").joinpath(f"{folder}/_definitions.json")
        older: dict[str, Schema] = json.loads(ref.read_text())["$defs"]
        loaded.update({name: schema for name, schema in older.items() if name.startswith(prefix)})
    return loaded


@functools.cache
def _kinds() -> dict[tuple[str, str, str], str]:
    out = {}
    for name, schema in definitions().items():
        for gvk in schema.get("x-kubernetes-group-version-kind", []):
            out[(gvk.get("group", ""), gvk.get("version", ""), gvk.get("kind", ""))] = name
    return out


def definition_name(api_version: str, kind: str) -> str | None:
    group, _, version = api_version.rpartition("/")
    return _kinds().get((group, version, kind))


def resolve(schema: Schema | None) -> Schema | None:
    """Follow `$ref` (and a single-element `allOf`) to the schema it names."""
    seen = 0
    while schema is not None and seen < 16:
        seen += 1
        ref = schema.get("$ref")
        if ref is None and len(schema.get("allOf") or []) == 1:
            ref = schema["allOf"][0].get("$ref")
        if ref is None:
            return schema
        schema = definitions().get(ref.rsplit("/", 1)[-1])
    return schema


def for_kind(api_version: str, kind: str) -> Schema | None:
    name = definition_name(api_version, kind)
    return definitions().get(name) if name else None


def prop(schema: Schema | None, key: str) -> Schema | None:
    """The schema of field `key` of an object schema, resolved."""
    schema = resolve(schema)
    if schema is None:
        return None
    return resolve((schema.get("properties") or {}).get(key))


def items(schema: Schema | None) -> Schema | None:
    schema = resolve(schema)
    if schema is None:
        return None
    return resolve(schema.get("items")) if isinstance(schema.get("items"), dict) else None
