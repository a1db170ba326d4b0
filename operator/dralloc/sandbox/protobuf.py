"""Just enough Kubernetes protobuf to accept what kubectl sends that way.

kubectl's generators (`kubectl create namespace`, `kubectl create configmap`) post
built-in objects as `application/vnd.kubernetes.protobuf` and have no JSON fallback.
The envelope is the magic `k8s\\x00` followed by a `runtime.Unknown` message (typeMeta,
raw); `raw` holds the object. Only Namespace and ConfigMap are decoded (with the
ObjectMeta fields a client sets: name, generateName, namespace, labels, annotations,
finalizers); anything else is a 415, as for any unknown media type. Responses are JSON,
which clients accept.
"""

from __future__ import annotations

import base64
from collections import defaultdict
from typing import Any

from dralloc.sandbox import errors

MAGIC = b"k8s\x00"
Fields = dict[int, list[Any]]


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(data):
            raise errors.ApiError(400, "truncated protobuf message")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos


def fields(data: bytes) -> Fields:
    """Field number -> values (ints for varints, bytes for length-delimited) of one message."""
    out: Fields = defaultdict(list)
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(data, pos)
            out[number].append(value)
        elif wire == 2:
            length, pos = _varint(data, pos)
            out[number].append(data[pos:pos + length])
            pos += length
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            out[number].append(data[pos:pos + size])
            pos += size
        else:
            raise errors.ApiError(400, f"unsupported protobuf wire type {wire}")
    return out


def _text(values: list[Any]) -> str | None:
    return values[-1].decode() if values else None


def _map(entries: list[bytes], *, binary: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for entry in entries:
        f = fields(entry)
        value = f[2][-1] if f[2] else b""
        out[_text(f[1]) or ""] = value if binary else value.decode()
    return out


def _meta(data: bytes) -> dict[str, Any]:
    f = fields(data)
    meta: dict[str, Any] = {}
    for number, name in ((1, "name"), (2, "generateName"), (3, "namespace")):
        if f[number]:
            meta[name] = _text(f[number])
    if f[11]:
        meta["labels"] = _map(f[11])
    if f[12]:
        meta["annotations"] = _map(f[12])
    if f[14]:
        meta["finalizers"] = [v.decode() for v in f[14]]
    return meta


def decode(body: bytes) -> dict[str, Any]:
    """A JSON-shaped object from a protobuf request body (Namespace and ConfigMap only)."""
    if not body.startswith(MAGIC):
        raise errors.ApiError(400, "a protobuf body must start with the k8s magic number")
    envelope = fields(body[len(MAGIC):])
    type_meta = fields(envelope[1][-1]) if envelope[1] else {}
    api_version, kind = _text(type_meta.get(1, [])) or "", _text(type_meta.get(2, [])) or ""
    raw = fields(envelope[2][-1]) if envelope[2] else defaultdict(list)
    obj: dict[str, Any] = {"apiVersion": api_version, "kind": kind,
                           "metadata": _meta(raw[1][-1]) if raw[1] else {}}
    if (api_version, kind) == ("v1", "Namespace"):
        spec = fields(raw[2][-1]) if raw[2] else defaultdict(list)
        if spec[1]:
            obj["spec"] = {"finalizers": [v.decode() for v in spec[1]]}
    elif (api_version, kind) == ("v1", "ConfigMap"):
        if raw[2]:
            obj["data"] = _map(raw[2])
        if raw[3]:
            obj["binaryData"] = {k: base64.b64encode(v).decode() for k, v in _map(raw[3], binary=True).items()}
        if raw[4]:
            obj["immutable"] = bool(raw[4][-1])
    else:
        raise errors.ApiError(415, f"protobuf bodies are only understood for Namespace and ConfigMap, not "
                                   f"{api_version}/{kind}; send application/json")
    return obj
