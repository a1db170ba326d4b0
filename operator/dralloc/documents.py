"""YAML and JSON documents as users hand them to dralloc (files, stdin, `kubectl get -o json`).

One parser for every reader of user files. JSON (what `kubectl get -o json` writes) is read
by msgspec's decoder (about twice as fast as the json module on a large snapshot, and it
reads integers of any size exactly, as json does); what msgspec refuses goes to the json
module, which answers or raises as it always did (it also reads NaN, Infinity, 1e400 and
lone surrogate escapes, which msgspec rejects). YAML in the block style Kubernetes tools write is read by
dralloc.blockyaml (several times faster than PyYAML, with exactly PyYAML's result); any
other YAML by libyaml's C loader when PyYAML was built with it (about 8x faster than the
pure-Python one on a 1 MB snapshot), else the pure-Python loader. All of them resolve the
same safe types; only the C and Python loaders' error wording differs slightly.
"""

from __future__ import annotations

import json

import msgspec
import yaml

from dralloc import blockyaml

_SafeLoader: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
Error = (yaml.YAMLError, ValueError)  # what a malformed text raises (json.JSONDecodeError is a ValueError)


def parse(text: str) -> list[object]:
    """Every document of a YAML stream (`---` separated), or the one JSON value of a JSON text."""
    stripped = text.lstrip()
    if stripped[:1] in ("{", "["):
        try:
            return [_json(text)]
        except ValueError:
            pass  # YAML flow style can start with a brace too: let the YAML loader answer
    fast = blockyaml.load_all(text, _SafeLoader)
    if fast is not None:
        return fast
    return list(yaml.load_all(text, Loader=_SafeLoader))


_DECODER = msgspec.json.Decoder()


def _json(text: str) -> object:
    """The value of a JSON text, exactly as json.loads gives it (tests/offline/test_documents.py)."""
    try:
        return _DECODER.decode(text)
    except (msgspec.DecodeError, UnicodeEncodeError):  # UnicodeEncodeError: lone surrogates in the str
        return json.loads(text)  # json's own answer, or its ValueError, for what msgspec refuses
