"""User files are read as YAML streams or JSON texts, the same way by every reader (dralloc.documents)."""

from __future__ import annotations

import pytest
import yaml

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
