"""celpy's CEL grammar plus cel-go's optional syntax, which upstream enables (`cel.OptionalTypes`).

celpy 0.5's grammar has no `.?field`, `[?index]`, `[?elem]` or `{?key: value}`. We build our
own lark parser from celpy's grammar file with three additions, so every tree celpy's
parser builds is built the same (same rule names and token types; the transpiler and the
checker cannot tell), and the optional forms get rules of their own:

- `member_dot_opt : member "." "?" IDENT` (`x.?f`);
- `optional_element : "?" expr`, an alternative of `expr`: the `?k` of `x[?k]`,
  `[?e, ...]` and `{?k: v}`. The grammar accepts it anywhere an expression may start; the
  checker (`checking`) rejects it outside those three places, as cel-go's parser does.

The parser is built on first use (about a quarter of a second, like celpy's own). Like
celpy's CELParser, it reads the grammar from celpy's package files once: no other I/O.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import cast

import celpy
import lark
from celpy.evaluation import TranspilerTree

_ADDITIONS = {
    "expr           : conditionalor [\"?\" conditionalor \":\" expr]":
        "expr           : conditionalor [\"?\" conditionalor \":\" expr] | optional_element\n"
        "optional_element : \"?\" expr",
    "member         : member_dot | member_dot_arg | member_index | member_object | primary":
        "member         : member_dot | member_dot_opt | member_dot_arg | member_index | member_object | primary\n"
        "member_dot_opt : member \".\" \"?\" IDENT",
}


def _grammar() -> str:
    text = (Path(celpy.__file__).parent / "cel.lark").read_text()
    for old, new in _ADDITIONS.items():
        if old not in text:  # a celpy upgrade changed the grammar: fail loudly, not subtly
            raise RuntimeError(f"celpy grammar changed; cannot extend rule {old.split(':')[0].strip()!r}")
        text = text.replace(old, new)
    return text


def _ambiguous_literals(token: lark.Token) -> lark.Token:
    # celpy's lexer callback: `true`/`false` lex as identifiers, then become literals.
    if token.value in ("true", "false"):
        return lark.Token("BOOL_LIT", token.value)
    return token


@functools.cache
def _parser() -> lark.Lark:
    # The options of celpy's CELParser, with TranspilerTree nodes built directly.
    return lark.Lark(
        _grammar(), parser="lalr", start="expr", g_regex_flags=re.M,
        lexer_callbacks={"IDENT": _ambiguous_literals}, propagate_positions=True,
        maybe_placeholders=False, priority="invert", tree_class=TranspilerTree,
    )


def parse(text: str) -> TranspilerTree:
    """The parse tree; raises lark's UnexpectedInput (token / character errors) on bad syntax."""
    return cast(TranspilerTree, _parser().parse(text))
