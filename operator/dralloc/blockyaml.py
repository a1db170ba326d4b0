"""A fast reader for the plain block-style YAML that Kubernetes tools write.

PyYAML builds its Python objects in Python even with libyaml's C parser (a node object and
several method calls per scalar), which made YAML parsing most of `dralloc simulate`'s
start-up on a large snapshot. The files users hand dralloc (`kubectl get -o yaml`,
`yaml.safe_dump`, generators, hand-written manifests) almost always stay in a small subset
of YAML: block mappings and sequences, plain scalars (also folded over several lines),
one-line quoted scalars without escapes, empty `[]`/`{}`, anchors and aliases, whole-line
comments. `load_all` reads exactly that subset with str methods, one line at a time (a
line seen before is not looked at again: Kubernetes files repeat most of their lines),
and returns None for anything else (tabs, flow collections, block scalars, tags, escapes,
multi-line quoted scalars, inline comments, non-ASCII, directives, odd indentation,
anything malformed), so the caller hands the text to PyYAML, which answers or raises as
it always did.

Within the subset the result is exactly `yaml.load_all(text, Loader=SafeLoader)`'s: plain
scalars are resolved with the loader's own implicit resolver table (YAML 1.1: `yes`/`on`
are booleans, `012` is octal, `1:20` is sexagesimal, `1e3` is a string, dates are dates)
and built by SafeConstructor's own constructors; mappings keep PyYAML's key order and its
"last duplicate wins"; an alias is the anchored object itself. tests/documents/ checks
this against PyYAML.
"""

from __future__ import annotations

import re
from typing import Any

from yaml.constructor import SafeConstructor
from yaml.nodes import ScalarNode

# Anything but printable ASCII and newlines (tabs, CR, control and non-ASCII characters)
# is left to PyYAML: its reader checks and normalises those.
_OUTSIDE = re.compile(r"[^\n\x20-\x7e]")
# Characters a block-context plain scalar cannot start with (PyYAML's Scanner.check_plain).
_INDICATORS = frozenset("-?:,[]{}#&*!|>'\"%@`")
_ANCHOR = re.compile(r"[0-9A-Za-z_-]+\Z")
# Tags of SafeConstructor whose constructors read only the scalar's text; any other
# resolved tag (merge `<<`, value `=`) goes to PyYAML.
_SCALAR_TAGS = frozenset(f"tag:yaml.org,2002:{t}" for t in ("null", "bool", "int", "float", "timestamp"))

# What a line is (the first element of a classified line).
_SKIP, _DOCUMENT, _ENTRY, _ITEM = range(4)
# What a value is: (kind, payload, anchor). _PLAIN's payload is (value, text).
_PLAIN, _QUOTED, _EMPTY_LIST, _EMPTY_MAP, _ALIAS, _NESTED = range(6)

_Value = tuple[int, Any, str | None]
_MISSING = object()


class _Unsupported(Exception):
    """The text leaves the subset: the caller falls back to PyYAML."""


class _Scalars:
    """Plain scalar text -> value, as the loader's Resolver and SafeConstructor make it."""

    def __init__(self, loader: type) -> None:
        self._resolvers: dict[Any, list[tuple[str, re.Pattern[str]]]] = getattr(loader, "yaml_implicit_resolvers")  # noqa: B009
        self._constructor = SafeConstructor()

    def plain(self, text: str) -> Any:
        # Resolver.resolve for a plain scalar: candidates by first character, then wildcards.
        candidates = self._resolvers.get(text[:1], []) + self._resolvers.get(None, [])
        for tag, pattern in candidates:
            if pattern.match(text):
                if tag not in _SCALAR_TAGS:
                    raise _Unsupported(tag)
                build = SafeConstructor.yaml_constructors[tag]
                return build(self._constructor, ScalarNode(tag, text))
        return text


def _plain_start(text: str) -> bool:
    # `-`, `?` and `:` start a plain scalar when a non-space follows (`-1`, `:x`).
    return text[0] in "-?:" and len(text) > 1 and text[1] != " "


def _quoted(text: str) -> str:
    """A one-line quoted scalar without escapes; raises _Unsupported for anything else."""
    quote, inner = text[0], text[1:-1]
    if len(text) < 2 or text[-1] != quote:
        raise _Unsupported("quoted scalar not closed on its line")
    if quote == '"':
        if '"' in inner or "\\" in inner:
            raise _Unsupported("escapes")
        return inner
    if "'" in inner.replace("''", ""):
        raise _Unsupported("single quote inside")
    return inner.replace("''", "'")


class _Lines:
    """Classifies lines (memoised: Kubernetes files repeat most of their lines)."""

    def __init__(self, scalars: _Scalars) -> None:
        self.scalars = scalars
        self.memo: dict[str, tuple[Any, ...]] = {}

    def classify(self, line: str) -> tuple[Any, ...]:
        """(_SKIP,) | (_DOCUMENT,) | (_ENTRY, indent, key, value) | (_ITEM, indent, value)

        an item's value may be (_NESTED, (column, key, value), anchor) for `- key: value`.
        """
        content = line.lstrip(" ")
        if not content or content[0] == "#":
            return (_SKIP,)  # blank, or a whole-line comment
        if "#" in content:
            raise _Unsupported("comment after content")  # or a '#' inside a scalar: PyYAML tells
        indent = len(line) - len(content)
        content = content.rstrip(" ")
        if indent == 0 and content.startswith(("---", "...", "%")):
            if content != "---":
                raise _Unsupported("document marker with content, end marker or directive")
            return (_DOCUMENT,)
        if content == "-" or content.startswith("- "):
            rest = content[1:].lstrip(" ")
            if not rest:
                return (_ITEM, indent, (_NESTED, None, None))
            if rest == "-" or rest.startswith("- "):
                raise _Unsupported("nested sequence on one line")
            if rest[0] in "'\"" or (rest.find(": ") < 0 and not rest.endswith(":")):
                return (_ITEM, indent, self.value(rest))
            column = indent + len(content) - len(rest)
            _, _, key, value = self.entry(rest, column)
            return (_ITEM, indent, (_NESTED, (column, key, value), None))
        return self.entry(content, indent)

    def entry(self, content: str, indent: int) -> tuple[Any, ...]:
        split = content.find(": ")
        if split < 0:
            if not content.endswith(":"):
                raise _Unsupported("plain scalar line (multi-line scalar?)")
            return (_ENTRY, indent, self.key(content[:-1]), (_NESTED, None, None))
        rest = content[split + 2:].lstrip(" ")
        value: _Value = self.value(rest) if rest else (_NESTED, None, None)
        return (_ENTRY, indent, self.key(content[:split]), value)

    def value(self, text: str) -> _Value:
        """The value after `key: ` or `- ` (stripped, not empty)."""
        first = text[0]
        if first not in _INDICATORS or _plain_start(text):
            if ": " in text or text.endswith(":"):
                raise _Unsupported("mapping indicator inside a plain scalar")
            return (_PLAIN, (self.scalars.plain(text), text), None)
        if first in "'\"":
            return (_QUOTED, _quoted(text), None)
        if text == "[]":
            return (_EMPTY_LIST, None, None)
        if text == "{}":
            return (_EMPTY_MAP, None, None)
        if first == "*":
            if not _ANCHOR.match(text, 1):
                raise _Unsupported("alias")
            return (_ALIAS, text[1:], None)
        if first == "&":
            name, _, rest = text[1:].partition(" ")
            rest = rest.lstrip(" ")
            if not _ANCHOR.match(name) or rest[:1] in ("&", "*"):
                raise _Unsupported("anchor")
            kind, payload, _ = self.value(rest) if rest else (_NESTED, None, None)
            return (kind, payload, name)
        raise _Unsupported(f"value starts with {first!r}")

    def key(self, text: str) -> Any:
        if not text or (text[0] in _INDICATORS and not _plain_start(text)) or text[-1] == " ":
            raise _Unsupported("key")
        key = self.scalars.plain(text)
        if not isinstance(key, str | int | float | bool | type(None)):
            raise _Unsupported("key type")  # e.g. a date: leave the details to PyYAML
        return key


def load_all(text: str, loader: type) -> list[object] | None:
    """Every document of `text` exactly as `yaml.load_all(text, Loader=loader)` reads them
    (loader: SafeLoader or CSafeLoader), or None when the text leaves the subset."""
    if _OUTSIDE.search(text):
        return None
    try:
        return _Parser(_Lines(_Scalars(loader))).parse(text)
    except _Unsupported:
        return None


class _Document:
    """The state of the document being read."""

    def __init__(self, scalars: _Scalars) -> None:
        self.scalars = scalars
        self.root: object = None
        self.seen = False  # a `---` or content opened it
        # Open block collections, innermost last: (indent, container, compact); a compact
        # sequence hangs at its key's indentation (`key:` then `- item` below it).
        self.stack: list[tuple[int, Any, bool]] = []
        self.anchors: dict[str, Any] = {}
        # A key or dash whose value starts on a later line: (container, key, indent, anchor).
        self.pending: tuple[Any, Any, int, str | None] | None = None

    def close_pending(self) -> None:
        if self.pending is not None:
            container, key, _, anchor = self.pending
            self.pending = None
            self.store(container, key, None, anchor)  # nothing nested: an empty plain scalar, null

    def store(self, container: Any, key: Any, value: Any, anchor: str | None) -> Any:
        """Put value into container (key _MISSING: append); returns the key or index used."""
        if anchor is not None:
            if anchor in self.anchors:
                raise _Unsupported("duplicate anchor")
            self.anchors[anchor] = value
        if key is _MISSING:
            container.append(value)
            return len(container) - 1
        container[key] = value
        return key

    def materialise(self, value: _Value) -> Any:
        kind, payload, _ = value
        if kind == _PLAIN:
            return payload[0]
        if kind == _QUOTED:
            return payload
        if kind == _EMPTY_LIST:
            return []
        if kind == _EMPTY_MAP:
            return {}
        if payload not in self.anchors:
            raise _Unsupported("alias to an unknown anchor")
        target = self.anchors[payload]
        if any(container is target for _, container, _ in self.stack):
            raise _Unsupported("recursive alias")
        return target

    def open(self, indent: int, is_item: bool) -> tuple[int, Any, bool]:
        """The collection a line at `indent` belongs to, after opening or closing collections."""
        stack = self.stack
        if not stack:
            if indent != 0 or self.root is not None:
                raise _Unsupported("indented root")
            self.root = [] if is_item else {}
            stack.append((0, self.root, False))
            self.seen = True
        elif self.pending is not None:
            container, key, at, anchor = self.pending
            nested: dict[Any, Any] | list[Any] | None = None
            if is_item and (indent > at or (indent == at and key is not _MISSING)):
                nested = []
            elif indent > at:
                nested = {}
            if nested is None:
                self.close_pending()
            else:
                self.pending = None
                self.store(container, key, nested, anchor)
                stack.append((indent, nested, is_item and indent == at))
        top = stack[-1]
        while top[0] > indent or (top[2] and top[0] == indent and not is_item):
            stack.pop()
            if not stack:
                raise _Unsupported("dedent past the root")
            top = stack[-1]
        if top[0] != indent:
            raise _Unsupported("indentation")
        if is_item != isinstance(top[1], list):
            raise _Unsupported("sequence entry in a mapping or mapping entry in a sequence")
        return top


def _fold(first: str, lines: list[str]) -> str:
    """A plain scalar's text over several lines: one space per line break, a newline per blank line."""
    parts = [first]
    blanks = 0
    for part in lines:
        if not part:
            blanks += 1
            continue
        parts.append(("\n" * blanks if blanks else " ") + part)
        blanks = 0
    return "".join(parts)


def _continuation(line: str) -> str:
    content = line.strip(" ")
    if ": " in content or content.endswith(":") or "#" in content:
        raise _Unsupported("continuation line")
    return content


class _Parser:
    def __init__(self, lines: _Lines) -> None:
        self.lines = lines

    def parse(self, text: str) -> list[object]:
        documents: list[object] = []
        scalars = self.lines.scalars
        classify, memo = self.lines.classify, self.lines.memo
        doc = _Document(scalars)
        # The last plain scalar stored, which more indented lines may continue:
        # (container, key, text, indent), and its continuation lines ("" for a blank line).
        plain: tuple[Any, Any, str, int] | None = None
        folded: list[str] = []

        for line in text.split("\n"):
            shape = memo.get(line)
            if plain is not None:
                if shape is None or (shape[0] != _DOCUMENT and (shape[0] == _SKIP or shape[1] > plain[3])):
                    content = line.strip(" ")
                    if not content:
                        folded.append("")
                        continue
                    if content[0] != "#" and len(line) - len(line.lstrip(" ")) > plain[3]:
                        folded.append(_continuation(line))
                        continue
                while folded and not folded[-1]:
                    folded.pop()  # blank lines after the scalar are not part of it
                if folded:
                    if line.strip(" ").startswith("#"):
                        raise _Unsupported("comment inside a plain scalar")
                    container, key, first, _ = plain
                    container[key] = scalars.plain(_fold(first, folded))
                    folded = []
                plain = None
            if shape is None:
                shape = memo[line] = classify(line)
            kind = shape[0]
            if kind == _SKIP:
                continue
            if kind == _DOCUMENT:
                doc.close_pending()
                if doc.seen:
                    documents.append(doc.root)
                doc = _Document(scalars)
                doc.seen = True
                continue
            indent = shape[1]
            if kind == _ENTRY:
                key, value = shape[2], shape[3]
                top = doc.stack[-1] if doc.pending is None and doc.stack else None
                if top is None or top[0] != indent or top[2] or type(top[1]) is not dict:
                    top = doc.open(indent, False)
            else:
                top = doc.open(indent, True)
                value = shape[2]
                if value[0] != _NESTED:
                    if value[0] == _PLAIN and value[2] is None:
                        top[1].append(value[1][0])
                        plain = (top[1], len(top[1]) - 1, value[1][1], indent)
                    else:
                        doc.store(top[1], _MISSING, doc.materialise(value), value[2])
                    continue
                if value[1] is None:
                    doc.pending = (top[1], _MISSING, indent, value[2])
                    continue
                mapping: dict[Any, Any] = {}
                top[1].append(mapping)
                indent, key, value = value[1]
                doc.stack.append((indent, mapping, False))
                top = doc.stack[-1]
            container = top[1]
            vkind = value[0]
            if vkind == _PLAIN and value[2] is None:
                container[key] = value[1][0]
                plain = (container, key, value[1][1], indent)
            elif vkind == _NESTED:
                doc.pending = (container, key, indent, value[2])
            else:
                doc.store(container, key, doc.materialise(value), value[2])
        if plain is not None:
            while folded and not folded[-1]:
                folded.pop()
            if folded:
                container, key, first, _ = plain
                container[key] = scalars.plain(_fold(first, folded))
        doc.close_pending()
        if doc.seen:
            documents.append(doc.root)
        return documents
