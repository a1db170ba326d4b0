"""kube/protowire.py: a finalizer added to or removed from a protobuf-encoded object, every other byte kept
(the stored spelling of a RawExtension is the reason dralloc writes protobuf at all)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dralloc.kube import protowire


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _field(number: int, value: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(value)) + value


def _number(number: int, value: int) -> bytes:
    return _varint(number << 3) + _varint(value)


def _envelope(meta: bytes, spec: bytes = b"", status: bytes = b"") -> bytes:
    """A ResourceClaim as kube-apiserver sends it: magic, runtime.Unknown{typeMeta, raw, contentType}."""
    type_meta = _field(1, b"resource.k8s.io/v1") + _field(2, b"ResourceClaim")
    obj = _field(1, meta) + _field(2, spec) + _field(3, status)
    return protowire.MAGIC + _field(1, type_meta) + _field(2, obj) + _field(3, b"") + _field(4, b"")


# metadata: name(1), namespace(3), uid(5), resourceVersion(6), generation(7), labels(11), finalizers(14),
# managedFields(17): written in field order, as Go's marshaller does.
_META = (_field(1, b"c1") + _field(3, b"t1") + _field(5, b"b79c") + _field(6, b"285") + _number(7, 1)
         + _field(11, _field(1, b"app") + _field(2, b"x")))
_MANAGED = _field(17, _field(1, b"kubectl"))
# The spec holds the opaque parameters as they were sent, blanks and all: the bytes that must not change.
_SPEC = _field(1, _field(2, _field(1, _field(1, b"gpu.example.com") + _field(2, b'{"a": 1, "b": {"c": "d"}}'))))


def test_the_resource_version_and_finalizers_are_read_from_the_metadata() -> None:
    envelope = _envelope(_META + _field(14, b"a/one") + _field(14, b"b/two") + _MANAGED, _SPEC)
    assert protowire.resource_version(envelope) == "285"
    assert protowire.finalizers(envelope) == ["a/one", "b/two"]


def test_an_added_finalizer_goes_after_the_others_and_nothing_else_changes() -> None:
    before = _envelope(_META + _field(14, b"a/one") + _MANAGED, _SPEC, b"")
    after = protowire.with_finalizer(before, "resource.kubernetes.io/delete-protection", present=True)
    assert after == _envelope(_META + _field(14, b"a/one") + _field(14, b"resource.kubernetes.io/delete-protection")
                              + _MANAGED, _SPEC, b"")


def test_the_first_finalizer_goes_where_go_would_write_it() -> None:
    after = protowire.with_finalizer(_envelope(_META + _MANAGED, _SPEC), "x/y", present=True)
    assert after == _envelope(_META + _field(14, b"x/y") + _MANAGED, _SPEC)
    assert protowire.with_finalizer(_envelope(_META, _SPEC), "x/y", present=True) == _envelope(
        _META + _field(14, b"x/y"), _SPEC)


def test_adding_a_finalizer_that_is_there_changes_nothing() -> None:
    envelope = _envelope(_META + _field(14, b"x/y") + _MANAGED, _SPEC)
    assert protowire.with_finalizer(envelope, "x/y", present=True) == envelope


def test_a_removed_finalizer_leaves_the_others_in_order() -> None:
    before = _envelope(_META + _field(14, b"a/one") + _field(14, b"x/y") + _field(14, b"b/two") + _MANAGED, _SPEC)
    after = protowire.with_finalizer(before, "x/y", present=False)
    assert after == _envelope(_META + _field(14, b"a/one") + _field(14, b"b/two") + _MANAGED, _SPEC)
    assert protowire.with_finalizer(after, "x/y", present=False) == after


def test_long_fields_keep_their_multi_byte_lengths() -> None:
    big_spec = _field(1, b"p" * 70_000)  # a length that needs three varint bytes, and so does the object's
    after = protowire.with_finalizer(_envelope(_META, big_spec), "x/y", present=True)
    assert after == _envelope(_META + _field(14, b"x/y"), big_spec)


@pytest.mark.parametrize(("data", "message"), [
    (b'{"kind": "ResourceClaim"}', "no k8s"),
    (protowire.MAGIC + _field(1, b"typemeta only"), "carries no object"),
    (protowire.MAGIC + _field(2, _field(2, b"spec only")), "no metadata"),
    (protowire.MAGIC + b"\x12\x05ab", "truncated"),
    (protowire.MAGIC + b"\x13", "wire type 3"),
])
def test_what_is_not_an_enveloped_object_is_refused_with_why(data: bytes, message: str) -> None:
    with pytest.raises(protowire.WireError, match=message):
        protowire.with_finalizer(data, "x/y", present=True)


@given(st.lists(st.sampled_from(["a/one", "b/two", "x/y", "resource.kubernetes.io/delete-protection"]), max_size=5),
       st.sampled_from(["x/y", "resource.kubernetes.io/delete-protection"]), st.binary(max_size=300))
def test_adding_then_removing_keeps_the_others_and_the_spec(existing: list[str], finalizer: str, spec: bytes) -> None:
    envelope = _envelope(_META + b"".join(_field(14, f.encode()) for f in existing) + _MANAGED, _field(1, spec))
    added = protowire.with_finalizer(envelope, finalizer, present=True)
    assert protowire.finalizers(added) == existing + ([finalizer] if finalizer not in existing else [])
    removed = protowire.with_finalizer(added, finalizer, present=False)
    assert protowire.finalizers(removed) == [f for f in existing if f != finalizer]
    assert _field(2, _field(1, spec)) in removed  # the spec's bytes, untouched
