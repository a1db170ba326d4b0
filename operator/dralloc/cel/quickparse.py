"""A small parser for plain selectors that yields exactly the tree celpy's parser yields.

celpy builds its LALR parser (lark) once per process, which costs about a
quarter of a second: a noticeable stall on the first selector a controller
sees. Most selectors use a tiny part of the grammar (names, field access,
indexing, calls, string/int/bool literals, lists, comparisons, `in`, `!`,
`&&`, `||`, `?:`, parentheses), so this recursive-descent parser handles
exactly that part and builds the same `TranspilerTree` shape celpy's grammar
produces (`expr` -> `conditionalor` -> ... -> `primary`, same rule names and
token types). The checker, the transpiler and the fast path then cannot tell
the difference.

It gives up (returns None) on anything else, including every syntax error, so
that celpy's parser reports it: escapes, raw/bytes/triple-quoted strings,
floats, hex and unsigned ints, arithmetic, maps, comments, leading-dot names,
`null` and reserved words.
"""

from __future__ import annotations

import re
from typing import Any

from celpy.evaluation import TranspilerTree
from lark import Token

_TOKEN = re.compile(r"""
    (?P<space>[\t\n\f\r ]+)
  | (?P<string>"[^"\\\n]*"|'[^'\\\n]*')
  | (?P<int>-?(?:0|[1-9][0-9]*))
  | (?P<ident>[_a-zA-Z][_a-zA-Z0-9]*)
  | (?P<op>==|!=|<=|>=|&&|\|\||[<>!()\[\].,?:])
""", re.VERBOSE)

# Words the grammar gives another meaning (literals, `in`, reserved words).
_NOT_NAMES = frozenset({
    "in", "null", "as", "break", "const", "continue", "else", "for", "function", "if", "import",
    "let", "loop", "package", "namespace", "return", "var", "void", "while",
})
_RELATIONS = {"==": "relation_eq", "!=": "relation_ne", "<": "relation_lt", "<=": "relation_le",
              ">": "relation_gt", ">=": "relation_ge", "in": "relation_in"}


class _GiveUp(Exception):
    pass


def _lex(text: str) -> list[tuple[str, str]]:
    tokens: list[tuple[str, str]] = []
    position = 0
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None:
            raise _GiveUp
        kind = match.lastgroup
        value = match.group()
        position = match.end()
        if kind == "space":
            continue
        assert kind is not None
        follower = text[position:position + 1]
        if kind == "int":
            # `1.5`, `1e3`, `1u`, `0x1`, `1abc`, and `x -1` (subtraction) are not ours.
            if follower and (follower.isalnum() or follower in "._"):
                raise _GiveUp
            if value.startswith("-") and tokens and tokens[-1][0] in ("string", "int", "ident", ")", "]"):
                raise _GiveUp
        if kind == "string" and (text[position - len(value):position].startswith(('""', "''"))
                                 and follower == value[0]):
            raise _GiveUp  # a triple-quoted string
        if kind == "ident" and follower in ("'", '"'):
            raise _GiveUp  # r"..." / b"..." prefixes
        if kind == "op":
            kind = value
        elif kind == "ident":
            if value in ("true", "false"):
                kind = "bool"
            elif value == "in":
                kind = "in"
            elif value in _NOT_NAMES:
                raise _GiveUp
        tokens.append((kind, value))
    return tokens


def _rule(name: str, children: list[Any]) -> TranspilerTree:
    return TranspilerTree(Token("RULE", name), children)


class _Parser:
    def __init__(self, tokens: list[tuple[str, str]]) -> None:
        self.tokens = tokens
        self.position = 0

    def peek(self) -> str:
        return self.tokens[self.position][0] if self.position < len(self.tokens) else ""

    def take(self, kind: str) -> str:
        if self.peek() != kind:
            raise _GiveUp
        value = self.tokens[self.position][1]
        self.position += 1
        return value

    def expr(self) -> TranspilerTree:
        condition = self.conditionalor()
        if self.peek() != "?":
            return _rule("expr", [condition])
        self.take("?")
        left = self.conditionalor()
        self.take(":")
        return _rule("expr", [condition, left, self.expr()])

    def conditionalor(self) -> TranspilerTree:
        tree = _rule("conditionalor", [self.conditionaland()])
        while self.peek() == "||":
            self.take("||")
            tree = _rule("conditionalor", [tree, self.conditionaland()])
        return tree

    def conditionaland(self) -> TranspilerTree:
        tree = _rule("conditionaland", [self.relation()])
        while self.peek() == "&&":
            self.take("&&")
            tree = _rule("conditionaland", [tree, self.relation()])
        return tree

    def relation(self) -> TranspilerTree:
        tree = _rule("relation", [self.addition()])
        while self.peek() in _RELATIONS:
            operation = _RELATIONS[self.take(self.peek())]
            tree = _rule("relation", [_rule(operation, [tree]), self.addition()])
        return tree

    def addition(self) -> TranspilerTree:
        return _rule("addition", [_rule("multiplication", [self.unary()])])

    def unary(self) -> TranspilerTree:
        if self.peek() == "!":
            self.take("!")
            return _rule("unary", [_rule("unary_not", []), self.unary()])
        return _rule("unary", [self.member()])

    def member(self) -> TranspilerTree:
        tree = _rule("member", [self.primary()])
        while True:
            kind = self.peek()
            if kind == ".":
                self.take(".")
                name = Token("IDENT", self.take("ident"))
                if self.peek() == "(":
                    tree = _rule("member", [_rule("member_dot_arg", [tree, name, *self.arguments(")")])])
                else:
                    tree = _rule("member", [_rule("member_dot", [tree, name])])
            elif kind == "[":
                self.take("[")
                index = self.expr()
                self.take("]")
                tree = _rule("member", [_rule("member_index", [tree, index])])
            else:
                return tree

    def arguments(self, close: str) -> list[TranspilerTree]:
        """`(a, b)` or `[a, b]` after the opening token: [] or [exprlist]."""
        self.position += 1
        if self.peek() == close:
            self.take(close)
            return []
        items = [self.expr()]
        while self.peek() == ",":
            self.take(",")
            items.append(self.expr())
        self.take(close)
        return [_rule("exprlist", items)]

    def primary(self) -> TranspilerTree:
        kind = self.peek()
        if kind == "ident":
            name = Token("IDENT", self.take("ident"))
            if self.peek() == "(":
                return _rule("primary", [_rule("ident_arg", [name, *self.arguments(")")])])
            return _rule("primary", [_rule("ident", [name])])
        if kind == "(":
            self.take("(")
            inner = self.expr()
            self.take(")")
            return _rule("primary", [_rule("paren_expr", [inner])])
        if kind == "[":
            return _rule("primary", [_rule("list_lit", self.arguments("]"))])
        literal = {"string": "STRING_LIT", "int": "INT_LIT", "bool": "BOOL_LIT"}.get(kind)
        if literal is None:
            raise _GiveUp
        return _rule("primary", [_rule("literal", [Token(literal, self.take(kind))])])


def parse(text: str) -> TranspilerTree | None:
    """The tree celpy's parser would build for `text`, or None if this parser does not handle it."""
    try:
        parser = _Parser(_lex(text))
        tree = parser.expr()
        if parser.position != len(parser.tokens):
            return None
    except (_GiveUp, RecursionError):
        return None
    return tree
