"""Kubernetes' protobuf encoding, only as far as one edit needs: a finalizer added to or removed from an
object's metadata, every other byte kept as the server sent it.

Why dralloc needs protobuf at all: kube-apiserver 1.37 stores a RawExtension field (a claim's
`spec.devices.config[].opaque.parameters`) as the bytes it was sent. A JSON client that created the object
with blanks in those parameters (the Python `kubernetes` client does) leaves a spelling that no JSON write can
reproduce: every PATCH or PUT of the object re-encodes it compactly, and the spec comparison refuses the write
with `spec: Invalid value: null: field is immutable` (even `kubectl label` does). kube-scheduler and
kube-controller-manager write such claims through protobuf, which carries the bytes through unchanged; dralloc
does the same for the one main-resource write allocation and deallocation need (the delete-protection
finalizer). Everything else it writes goes to the status subresource, which keeps the stored spec.

The format (k8s.io/apimachinery runtime/serializer/protobuf): the magic `k8s\\0`, then a `runtime.Unknown`
message whose field 2 (`raw`) is the object; field 1 of every object is its ObjectMeta, whose field 14 is
`finalizers` (repeated string) and field 6 `resourceVersion`. Pure: bytes in, bytes out.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

MAGIC = b"k8s\x00"
PROTOBUF = "application/vnd.kubernetes.protobuf"

_UNKNOWN_RAW = 2
_OBJECT_METADATA = 1
_META_RESOURCE_VERSION = 6
_META_FINALIZERS = 14
_LENGTH_DELIMITED = 2


class WireError(ValueError):
    """The bytes are not the protobuf encoding this module expects."""


@dataclass(frozen=True)
class _Field:
    number: int
    wire_type: int
    value: bytes  # a length-delimited field's content; any other field's encoded value
    encoded: bytes  # the whole field as it appeared (key, length, value)


def _varint(data: bytes, at: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if at >= len(data):
            raise WireError("truncated varint")
        byte = data[at]
        at += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, at
        shift += 7
        if shift > 63:
            raise WireError("varint longer than 64 bits")


def _encode_varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _fields(data: bytes) -> list[_Field]:
    fields: list[_Field] = []
    at = 0
    while at < len(data):
        start = at
        key, at = _varint(data, at)
        number, wire_type = key >> 3, key & 7
        if wire_type == 0:
            _, end = _varint(data, at)
            value = data[at:end]
        elif wire_type == 1:
            end = at + 8
            value = data[at:end]
        elif wire_type == _LENGTH_DELIMITED:
            length, at = _varint(data, at)
            end = at + length
            value = data[at:end]
        elif wire_type == 5:
            end = at + 4
            value = data[at:end]
        else:
            raise WireError(f"field {number}: unsupported wire type {wire_type}")
        if end > len(data):
            raise WireError(f"field {number}: truncated")
        fields.append(_Field(number, wire_type, value, data[start:end]))
        at = end
    return fields


def _delimited(number: int, value: bytes) -> bytes:
    return _encode_varint(number << 3 | _LENGTH_DELIMITED) + _encode_varint(len(value)) + value


def _replace(data: bytes, number: int, edit: Callable[[bytes], bytes]) -> bytes:
    """`data` with its (single) length-delimited field `number` replaced by `edit(content)`."""
    out, found = bytearray(), False
    for field in _fields(data):
        if field.number == number and field.wire_type == _LENGTH_DELIMITED and not found:
            out += _delimited(number, edit(field.value))
            found = True
        else:
            out += field.encoded
    if not found:
        raise WireError(f"no field {number}")
    return bytes(out)


def _unwrap(envelope: bytes) -> bytes:
    if not envelope.startswith(MAGIC):
        raise WireError("not a Kubernetes protobuf object (no k8s\\0 prefix)")
    for field in _fields(envelope[len(MAGIC):]):
        if field.number == _UNKNOWN_RAW and field.wire_type == _LENGTH_DELIMITED:
            return field.value
    raise WireError("the envelope carries no object")


def _metadata(envelope: bytes) -> bytes:
    for field in _fields(_unwrap(envelope)):
        if field.number == _OBJECT_METADATA and field.wire_type == _LENGTH_DELIMITED:
            return field.value
    raise WireError("the object has no metadata")


def resource_version(envelope: bytes) -> str:
    """metadata.resourceVersion of the enveloped object ("" when absent)."""
    for field in _fields(_metadata(envelope)):
        if field.number == _META_RESOURCE_VERSION and field.wire_type == _LENGTH_DELIMITED:
            return field.value.decode()
    return ""


def finalizers(envelope: bytes) -> list[str]:
    """metadata.finalizers of the enveloped object, in order."""
    return [f.value.decode() for f in _fields(_metadata(envelope))
            if f.number == _META_FINALIZERS and f.wire_type == _LENGTH_DELIMITED]


def with_finalizer(envelope: bytes, finalizer: str, *, present: bool) -> bytes:
    """The envelope with `finalizer` appended to metadata.finalizers (present=True; unchanged when it is
    there already) or every copy of it removed (present=False); every other byte as it was."""

    def edit_meta(meta: bytes) -> bytes:
        fields = _fields(meta)
        kept = [f for f in fields
                if present or not (f.number == _META_FINALIZERS and f.value == finalizer.encode())]
        if present and not any(f.number == _META_FINALIZERS and f.value == finalizer.encode() for f in fields):
            # After the last existing finalizer (repeated entries keep their order), else before the
            # first later field: the order Go's marshaller writes.
            position = max((i + 1 for i, f in enumerate(kept) if f.number == _META_FINALIZERS),
                           default=next((i for i, f in enumerate(kept) if f.number > _META_FINALIZERS), len(kept)))
            added = _Field(_META_FINALIZERS, _LENGTH_DELIMITED, finalizer.encode(),
                           _delimited(_META_FINALIZERS, finalizer.encode()))
            kept.insert(position, added)
        return b"".join(f.encoded for f in kept)

    _metadata(envelope)  # the same checks, with their messages
    return MAGIC + _replace(envelope[len(MAGIC):], _UNKNOWN_RAW,
                            lambda raw: _replace(raw, _OBJECT_METADATA, edit_meta))
