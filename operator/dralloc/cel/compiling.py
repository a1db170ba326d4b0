"""The steps of compiling CEL text into a celpy program that selectors and derived attributes share.

Device selectors (`selectors`) and derived attributes (`derived`) are compiled alike and differ
only in the result type their check allows; this module owns what both do:

- the errors: `CELError`, with `CELCompileError` and `CELRuntimeError` (`selectors`, the public
  entry points, re-exports them: callers catch them there);
- `MAX_EXPRESSION_LENGTH`, upstream's limit on the text;
- `parse`: celpy's parse tree of the text, a syntax error worded as upstream's;
- `transpile`: a checked tree into the Python entry point of its celpy program;
- upstream's wording of compile issues (`compile_failure`, `format_issue`) and of what goes wrong
  while evaluating (`describe_error`, `describe_exception`).

It calls `grammar` (the parser), `checking` (its `Issue`), `macros` and `functions` (the
transpiler's additions and function table), `cost` (the evaluation limit's exception) and celpy;
never `selectors` or `derived`, which call it. Caching, the checks themselves and evaluating stay
with the callers.
"""

from __future__ import annotations

import builtins
import functools
import operator
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any, cast

import celpy
import lark.exceptions
from celpy.evaluation import Activation, CELEvalError, Phase2Transpiler, Transpiler, TranspilerTree

# Binds `dralloc` for the generated code, which calls our helpers by full path (`dralloc.cel.macros.*`,
# the library functions' modules).
import dralloc.cel.macros
from dralloc.cel import checking, cost, functions, grammar, macros

# Upstream's CELSelectorExpressionMaxLength; longer selectors never pass API validation.
MAX_EXPRESSION_LENGTH = 10 * 1024


class CELError(Exception):
    """A selector (or derived attribute expression) that cannot be compiled or evaluated."""

    def __init__(self, message: str, *, expression: str) -> None:
        super().__init__(message)
        self.expression = expression


class CELCompileError(CELError):
    """The expression does not compile (syntax, undeclared reference, not a bool)."""


class CELRuntimeError(CELError):
    """Evaluation failed: missing key, type mismatch, non-bool result, bad device data."""


def parse(expression: str) -> TranspilerTree:
    """celpy's parse tree of the text (with source positions, which the checks' messages need).

    Raises CELCompileError worded as upstream's for an empty text, a syntax error, or nesting
    deeper than the parser can take.
    """
    if expression.strip() == "":
        raise CELCompileError(
            "compilation failed: ERROR: <input>:1:1: Syntax error: empty expression",
            expression=expression,
        )
    try:
        return grammar.parse(expression)
    except lark.exceptions.UnexpectedInput as exc:
        issue = checking.Issue(f"Syntax error: {_syntax_reason(exc, 'invalid syntax')}",
                               exc.line if exc.line > 0 else 1, exc.column if exc.column > 0 else 1)
        raise CELCompileError("compilation failed: " + format_issue(expression, issue),
                              expression=expression) from None
    except RecursionError:
        raise CELCompileError("compilation failed: expression nested too deeply",
                              expression=expression) from None


def _syntax_reason(exc: lark.exceptions.UnexpectedInput, fallback: str) -> str:
    token = getattr(exc, "token", None)
    if token is not None:
        text = "<EOF>" if getattr(token, "type", "") == "$END" else str(token)
        return f"mismatched input {text!r}"
    char = getattr(exc, "char", None)
    if char is not None:
        return f"token recognition error at: {char!r}"
    return fallback


def transpile(tree: TranspilerTree) -> Callable[[Any], Any]:
    """The entry point of the checked tree's celpy program: called (through celpy's `result`)
    with a device's activation, it returns the CEL value or a CELEvalError.

    celpy's transpiler with our first phase (`macros`); the generated definitions are executed
    once into a namespace of their own, so evaluating writes nothing shared. May raise
    RecursionError or SyntaxError for a tree nested too deeply: the callers word that.
    """
    # The phases only read `base_activation` from their facade.
    facade = cast(Transpiler, SimpleNamespace(base_activation=_function_activation()))
    phase_1 = macros.DraPhase1Transpiler(facade)
    phase_1.visit(tree)
    phase_2 = Phase2Transpiler(facade)
    phase_2.visit(tree)
    # celpy's last statement evaluates against a module global; we keep only the
    # definitions and build our own entry point from the root's code.
    statements = phase_1.constants + phase_2.statements(tree)[:-1]
    statements.append(f"__entry = lambda activation: {tree.transpiled}")
    namespace: dict[str, Any] = {
        "celpy": celpy, "operator": operator, "builtins": builtins, "dralloc": dralloc,
        "CELEvalError": CELEvalError,
    }
    exec(compile("\n".join(statements), "<cel selector>", "exec"), namespace)
    return cast(Callable[[Any], Any], namespace["__entry"])


@functools.cache
def _function_activation() -> Activation:
    # Only used while transpiling, to turn CEL function names into module paths.
    return Activation(functions=functions.FUNCTIONS)


def compile_failure(expression: str, issues: list[checking.Issue]) -> str:
    """The CELCompileError message for the check's issues (not empty), as upstream words it."""
    if not issues[0].positional:
        return issues[0].message  # the output type check, program instantiation: bare, as upstream
    return "compilation failed: " + "\n".join(format_issue(expression, i) for i in issues)


def format_issue(expression: str, issue: checking.Issue) -> str:
    """One positional issue as upstream prints it: "ERROR: <input>:L:C: reason", the source line
    and a caret under the column."""
    lines = expression.splitlines() or [""]
    source = lines[issue.line - 1] if 0 < issue.line <= len(lines) else lines[0]
    caret = "." * (issue.column - 1) + "^"
    return f"ERROR: <input>:{issue.line}:{issue.column}: {issue.message}\n | {source}\n | {caret}"


def describe_error(error: CELEvalError) -> str:
    """The CELRuntimeError message for an evaluation's error value, as upstream words it."""
    message = str(error.args[0]) if error.args else "evaluation error"
    kind = error.args[1] if len(error.args) > 1 else None
    details = error.args[2] if len(error.args) > 2 else ()
    detail = str(details[0]) if details else ""
    if kind is KeyError:
        return f"no such key: {detail}"
    if kind is NameError:
        return f"undeclared reference to '{detail}'"
    if kind is ZeroDivisionError:
        return "division by zero" if "modulus" not in detail else "modulus by zero"
    if kind is TypeError:
        return detail if detail.startswith("no such overload") else f"no such overload: {detail}".rstrip(": ")
    if detail:
        return detail
    return message


def describe_exception(exc: Exception) -> str:
    """The CELRuntimeError message for an exception raised while evaluating (an error value raised,
    the cost limit, anything else by its type)."""
    if isinstance(exc, CELEvalError):
        return describe_error(exc)
    if isinstance(exc, cost.CostLimitExceeded):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"
