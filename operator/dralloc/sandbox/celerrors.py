"""CEL compile errors worded as kube-apiserver returns them (cel-go's issue format).

kube-apiserver compiles every DRA CEL selector with cel-go and, when that fails, puts
`compilation failed: ` + cel-go's issues into a FieldValueInvalid cause. cel-go prints
an issue as

    ERROR: <input>:LINE:COLUMN: REASON
     | the source line (tabs shown as spaces)
     | ..........^

with a 1-based column and a caret line of one `.` per character before the error
(fullwidth dot and caret, U+FF0E and U+FF3E, for multi-byte characters). Several issues are joined by newlines.

We parse with celpy (lark), not ANTLR, so the reason is rebuilt from lark's error in
ANTLR's words for the cases people hit: an expression that ends too early
(`mismatched input '<EOF>' expecting {'[', '{', '(', ...}` at the end of the input),
a missing `)` or `]`, an unexpected token (`mismatched input '==' expecting ...`) and a
character no token starts with (`token recognition error at: '#'`). ANTLR's follow-up
recovery errors are not reproduced. An expression that parses is type-checked
(`celchecking.py`): its issues are worded and placed the same way, and one that checks
but is not a bool gets upstream's `must evaluate to bool or the unknown type, not T`
(a derived attribute's: `must evaluate to a primitive scalar ... or a list of these scalars, not T`).
"""

from __future__ import annotations

import functools
from typing import Any

from celpy.celparser import CELParseError, CELParser

from dralloc.sandbox import celchecking, celenv

# The tokens an expression may start with, in ANTLR's order and spelling.
EXPRESSION_START = ("{'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, "
                    "STRING, BYTES, IDENTIFIER}")


def _at(expression: str, index: int) -> tuple[int, int]:
    """(1-based line, 0-based column) of a string index, as ANTLR counts them."""
    before = expression[:index]
    line = before.count("\n") + 1
    return line, index - (before.rfind("\n") + 1)


def _end(expression: str) -> tuple[int, int]:
    return _at(expression, len(expression))


def _index(expression: str, line: int, column: int) -> int:
    """String index of lark's 1-based (line, column)."""
    lines = expression.split("\n")
    return sum(len(text) + 1 for text in lines[:line - 1]) + column - 1


def issue(expression: str, line: int, column: int, message: str) -> str:
    """One cel-go issue: `ERROR: <input>:L:C: message` plus the snippet and caret lines."""
    text = f"ERROR: <input>:{line}:{column + 1}: {message}"
    lines = expression.split("\n")
    if not 0 < line <= len(lines):
        return text
    snippet = lines[line - 1].replace("\t", " ")
    marks = "".join("\uff0e" if len(ch.encode()) > 1 else "." for ch in snippet[:column])
    under = snippet[column:column + 1]
    marks += "\uff3e" if under and len(under.encode()) > 1 else "^"
    return f"{text}\n | {snippet}\n | {marks}"


def _open_bracket(prefix: str) -> tuple[str, bool]:
    """The innermost bracket still open in `prefix` ("" at top level) and whether it takes
    a list of things (a call's arguments, a list or map literal) rather than one expression."""
    stack: list[tuple[str, bool]] = []
    quote = ""
    previous = ""
    i = 0
    while i < len(prefix):
        ch = prefix[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch in "([{":
            operand = previous != "" and (previous.isalnum() or previous in "_)]}")
            stack.append((ch, ch == "{" or (ch == "(" and operand) or (ch == "[" and not operand)))
        elif ch in ")]}" and stack:
            stack.pop()
        if not ch.isspace():
            previous = ch
        i += 1
    return stack[-1] if stack else ("", False)


def _expecting(expected: Any, prefix: str) -> str:
    names = {str(n) for n in expected or ()}
    if {"IDENT", "LPAR", "LSQB"} <= names:
        return EXPRESSION_START
    if names == {"IDENT"}:  # after a '.': a field name (also `a.?b` and backquoted names in cel-go)
        return "{'?', IDENTIFIER, ESC_IDENTIFIER}"
    # After a complete expression lark's LALR look-ahead lists closers of every context; the
    # brackets actually open say which one the grammar wants.
    bracket, listing = _open_bracket(prefix)
    closer = {"(": "')'", "[": "']'", "{": "'}'"}.get(bracket)
    if closer is None:
        return "<EOF>"
    return "{" + f"{closer}, ','" + "}" if listing else closer


def _issues(expression: str, exc: CELParseError) -> list[str]:
    cause = exc.__context__
    token = getattr(cause, "token", None)
    expected = getattr(cause, "expected", None) or getattr(cause, "allowed", None)
    if token is not None:
        if getattr(token, "type", "") == "$END":
            line, column = _end(expression)
            return [issue(expression, line, column, f"Syntax error: mismatched input '<EOF>' expecting "
                                                    f"{_expecting(expected, expression)}")]
        line, column = int(token.line or 1), int(token.column or 1) - 1
        prefix = expression[:_index(expression, line, column + 1)]
        return [issue(expression, line, column, f"Syntax error: mismatched input '{token}' expecting "
                                                f"{_expecting(expected, prefix)}")]
    char = getattr(cause, "char", None)
    if char is not None:
        line, column = int(getattr(cause, "line", 1) or 1), int(getattr(cause, "column", 1) or 1) - 1
        start = _index(expression, line, column + 1)
        rest = expression[start:].split("\n", 1)[0]
        text = rest if char in "\"'" else char  # an unterminated string: ANTLR shows all it read
        found = [issue(expression, line, column, f"Syntax error: token recognition error at: '{text}'")]
        if char in "\"'" and "\n" not in expression[start:] and \
                _expecting(expected, expression[:start]) == EXPRESSION_START:
            end_line, end_column = _end(expression)
            found.append(issue(expression, end_line, end_column,
                               f"Syntax error: mismatched input '<EOF>' expecting {EXPRESSION_START}"))
        return found
    line, column = int(exc.line or 1), int(exc.column or 1) - 1
    return [issue(expression, line, column, "Syntax error: " + (str(exc).strip().splitlines() or ["invalid"])[0])]


# What a derived attribute (DRADerivedAttributes) may yield: these scalars, or a list of one of them.
DERIVED_SCALARS = frozenset({"bool", "int", "string", celenv.DYN, "any", celenv.SEMVER})


def _derivable(result: str) -> bool:
    element = result[5:-1] if result.startswith("list(") and result.endswith(")") else result
    return element in DERIVED_SCALARS


@functools.lru_cache(maxsize=4096)
def compile_error(expression: str, derived: bool = False) -> str | None:
    """None when the expression compiles, else upstream's detail: `compilation failed: ERROR: ...`,
    or `must evaluate to bool ...` for one that compiles to something else than a bool; a
    derived attribute's expression (`derived`) must yield a scalar or a list of scalars instead."""
    if not expression:
        # cel-go places the error of an empty source at column 0, and has no line to show.
        return ("compilation failed: ERROR: <input>:1:0: Syntax error: mismatched input '<EOF>' "
                f"expecting {EXPRESSION_START}")
    if not expression.strip():
        line, column = _end(expression)
        return "compilation failed: " + issue(expression, line, column, "Syntax error: mismatched input '<EOF>' "
                                                                        f"expecting {EXPRESSION_START}")
    try:
        tree = CELParser().parse(expression)
    except CELParseError as exc:
        return "compilation failed: " + "\n".join(_issues(expression, exc))
    except RecursionError:
        return "compilation failed: ERROR: <input>:-1:0: expression recursion limit exceeded"
    try:
        found, result = celchecking.check(expression, tree)
    except RecursionError:
        return None  # too deep to walk here; upstream's own limits decide
    if found:
        return "compilation failed: " + "\n".join(issue(expression, *_at(expression, i.index), i.message)
                                                   for i in found)
    if derived:
        if _derivable(result):
            return None
        return ("must evaluate to a primitive scalar (string, integer, boolean, semver) or a list of these scalars, "
                f"not {result}")
    if result not in (celenv.BOOL, celenv.DYN):
        return f"must evaluate to bool or the unknown type, not {result}"
    return None
