"""YAML and JSON documents as users hand them to dralloc (files, stdin, `kubectl get -o json`).

One parser for every reader of user files. JSON (what `kubectl get -o json` writes) is read
by the json module, the fastest. YAML in the block style Kubernetes tools write is read by
dralloc.blockyaml (several times faster than PyYAML, with exactly PyYAML's result); any
other YAML by libyaml's C loader when PyYAML was built with it (about 8x faster than the
pure-Python one on a 1 MB snapshot), else the pure-Python loader. All of them resolve the
same safe types; only the C and Python loaders' error wording differs slightly.
"""

from __future__ import annotations

import json

import yaml

from dralloc import blockyaml

_SafeLoader: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
Error = (yaml.YAMLError, ValueError)  # what a malformed text raises (json.JSONDecodeError is a ValueError)


def parse(text: str) -> list[object]:
    """Every document of a YAML stream (`---` separated), or the one JSON value of a JSON text."""
    stripped = text.lstrip()
    if stripped[:1] in ("{", "["):
        try:
            return [json.loads(text)]
        except ValueError:
            pass  # YAML flow style can start with a brace too: let the YAML loader answer
    fast = blockyaml.load_all(text, _SafeLoader)
    if fast is not None:
        return fast
    return list(yaml.load_all(text, Loader=_SafeLoader))
