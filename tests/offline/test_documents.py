"""User files are read as YAML streams or JSON texts, the same way by every reader (dralloc.documents)."""

from __future__ import annotations

import json

import pytest
import yaml
from bench import scale_snapshot
from hypothesis import given, settings
from hypothesis import strategies as st

from dralloc import documents


def test_a_yaml_stream_gives_every_document_and_null_for_empty_ones() -> None:
    assert documents.parse("a: 1\n---\n---\nb: [x, y]\n") == [{"a": 1}, None, {"b": ["x", "y"]}]


def test_json_as_kubectl_prints_it_is_one_document() -> None:
    text = '{"apiVersion": "v1", "kind": "List", "items": [{"kind": "Node", "metadata": {"name": "a"}}]}'
    assert documents.parse(text) == [yaml.safe_load(text)]


def test_yaml_flow_style_starting_with_a_brace_still_parses() -> None:
    assert documents.parse("{a: 1, b: two}\n") == [{"a": 1, "b": "two"}]


def test_only_plain_data_is_built() -> None:
    with pytest.raises(documents.Error):
        documents.parse("!!python/object/apply:os.system ['true']\n")


@pytest.mark.parametrize("text", ["a: [1, 2\n", '{"a": 1,,}', "key: value\n  bad indent: here\n"])
def test_malformed_text_raises_documents_error(text: str) -> None:
    with pytest.raises(documents.Error):
        documents.parse(text)


# JSON goes through msgspec's decoder with the json module behind it: the objects must be
# exactly json.loads's, types included (1 is not 1.0, -0.0 keeps its sign, big ints stay ints).
def _typed(value: object) -> object:
    if isinstance(value, dict):
        return ("dict", [(_typed(k), _typed(v)) for k, v in value.items()])
    if isinstance(value, list):
        return ("list", [_typed(v) for v in value])
    return (type(value).__name__, repr(value))


JSON_EDGES = [
    '{"a": 1, "a": 2, "b": {"c": [1, 2.0, -0.0, 1e5, 1E-7, 12.5e+3]}}',  # duplicates: the last wins
    "[18446744073709551615, 18446744073709551616, -9223372036854775809, 123456789012345678901234567890]",
    "[1e400, -1e400]",  # json reads these as infinities; msgspec refuses them
    "[NaN, Infinity, -Infinity]",
    '["\\ud800", "\\u00e9", "\\ud83d\\ude00", "tab\\t", "\\/"]',
    '{"unicode": "NVIDIA H100 \u2013 80GB", "empty": {}, "none": null, "t": true, "f": false}',
    '  \t\r\n[[[[]]], {}]\n\n',
    '["\udc80"]',  # a lone surrogate in the text (stdin read with surrogateescape)
]


@pytest.mark.parametrize("text", JSON_EDGES)
def test_json_is_exactly_what_json_loads_gives(text: str) -> None:
    assert _typed(documents.parse(text)[0]) == _typed(json.loads(text))


def _json_then_yaml(text: str) -> list[object]:
    """What parse did before msgspec: json.loads, else the YAML loader (YAML flow style starts with a brace too)."""
    try:
        return [json.loads(text)]
    except ValueError:
        return list(yaml.load_all(text, Loader=yaml.SafeLoader))


@pytest.mark.parametrize("text", ['{"a": 1,}', "[0123]", '{"a": 1} x', '[1, 2', '{"a": "\x01"}'])
def test_json_that_json_refuses_goes_to_the_yaml_loader_as_before(text: str) -> None:
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)
    try:
        expected = _json_then_yaml(text)
    except yaml.YAMLError:
        with pytest.raises(documents.Error):
            documents.parse(text)
    else:
        assert _typed(documents.parse(text)) == _typed(expected)


_JSON_SCALARS = (st.none() | st.booleans() | st.integers() | st.integers(min_value=-(2**80), max_value=2**80)
                 | st.floats(allow_nan=False) | st.text())
_JSON_VALUES = st.recursive(_JSON_SCALARS, lambda inner: st.lists(inner, max_size=5)
                            | st.dictionaries(st.text(max_size=8), inner, max_size=5), max_leaves=30)


@given(value=_JSON_VALUES, indent=st.sampled_from([None, 2, 4]), ascii_only=st.booleans())
@settings(max_examples=300, deadline=None)
def test_generated_json_is_exactly_what_json_loads_gives(value: object, indent: int | None,
                                                         ascii_only: bool) -> None:
    text = json.dumps({"kind": "List", "items": [value]}, indent=indent, ensure_ascii=ascii_only)
    assert _typed(documents.parse(text)[0]) == _typed(json.loads(text))


def test_a_kubectl_style_snapshot_reads_as_json_loads_reads_it() -> None:
    """bench/scale.py's snapshot (NVIDIA-like slices, claims with CEL), as kubectl -o json indents it."""
    text = json.dumps(scale_snapshot.objects(nodes=6, claims=12, seed=3), indent=4)
    assert _typed(documents.parse(text)[0]) == _typed(json.loads(text))
