"""Transpiling additions to celpy: `cel.bind`, short-circuit logic, method calls.

celpy's `Phase1Transpiler` decorates each parse-tree node with Python source;
node types that need deferred evaluation get a template of `ex_N = lambda ...`
statements that its `Phase2Transpiler` collects. We extend the first phase:

- `cel.bind(v, init, body)` (cel-go's `ext.Bindings`, which upstream enables) is
  not known to celpy. It becomes a lambda that evaluates `body` in a child scope
  where `v` is bound lazily to `init` (see `scopes.LazyScope`). Working on the
  tree, not the text, keeps nesting and shadowing right.
- `&&`, `||` and `?:` evaluate every operand in celpy and combine afterwards;
  that is correct CEL (errors are absorbed where CEL says so) but wasteful.
  Ours evaluate the left side first and skip the right side when the left
  already decides the result, with the same error-absorbing outcome.
- celpy treats every method named `min` or `reduce` as a macro; the Kubernetes
  list library has a `min()` method, so only the real CEL macros (`all`,
  `exists`, `exists_one`, `map`, `filter`) are treated as macros here.

The helpers called by the generated code live in this module, which the
generated code reaches as `dralloc.cel.macros`.
"""

from __future__ import annotations

from collections.abc import Mapping
from string import Template
from textwrap import dedent
from typing import Any, cast

import lark
from celpy import celtypes
from celpy.evaluation import CELEvalError, Phase1Transpiler, TranspilerTree, result

from dralloc.cel import scopes
from dralloc.cel.devices import DomainMap

CEL_MACROS = frozenset({"all", "exists", "exists_one", "map", "filter"})

_HELPERS = "dralloc.cel.macros"


def simple_ident(tree: Any) -> str | None:
    """The identifier an expression consists of, if it is just one (the `x` of `all(x, ...)`)."""
    node = tree
    while isinstance(node, lark.Tree):
        if node.data == "ident":
            return str(cast(lark.Token, node.children[0]).value)
        if len(node.children) != 1 or node.data not in {
            "expr", "conditionalor", "conditionaland", "relation", "addition",
            "multiplication", "unary", "member", "primary",
        }:
            return None
        node = node.children[0]
    return None


def innermost(node: Any) -> lark.Tree[Any] | None:
    """The first node below the single-child wrappers (expr -> ... -> primary)."""
    last = None
    while isinstance(node, lark.Tree):
        last = node
        if len(node.children) != 1:
            return last
        node = node.children[0]
    return last


def is_cel_bind(tree: lark.Tree[Any]) -> bool:
    """Whether a member_dot_arg node is `cel.bind(...)` (with `cel` not a variable)."""
    member, name = tree.children[0], tree.children[1]
    return cast(lark.Token, name).value == "bind" and simple_ident(member) == "cel"


def logical_and(activation: Any, left: Any, right: Any) -> Any:
    value = result(activation, left)
    if isinstance(value, celtypes.BoolType) and not value:
        return value
    other = result(activation, right)
    if isinstance(other, celtypes.BoolType):
        if not other:
            return other
        if isinstance(value, celtypes.BoolType):
            return other
    return _non_bool(value, other, "&&")


def logical_or(activation: Any, left: Any, right: Any) -> Any:
    value = result(activation, left)
    if isinstance(value, celtypes.BoolType) and value:
        return value
    other = result(activation, right)
    if isinstance(other, celtypes.BoolType):
        if other:
            return other
        if isinstance(value, celtypes.BoolType):
            return other
    return _non_bool(value, other, "||")


def _non_bool(value: Any, other: Any, operator: str) -> Any:
    # An error on either side wins over a non-deciding bool; otherwise it is a type error.
    for operand in (value, other):
        if isinstance(operand, CELEvalError):
            return operand
    bad = value if not isinstance(value, celtypes.BoolType) else other
    raise TypeError(f"no such overload: {type(bad).__name__} {operator} bool")


def conditional(activation: Any, condition: Any, left: Any, right: Any) -> Any:
    value = result(activation, condition)
    if isinstance(value, CELEvalError):
        return value
    if not isinstance(value, celtypes.BoolType):
        raise TypeError(f"no such overload: {type(value).__name__} ? _ : _")
    return result(activation, left if value else right)


def has(activation: Any, member: Any, field: str) -> Any:
    """`has(m.f)`: is `f` present in the map `m`? Errors evaluating `m` propagate."""
    value = result(activation, member)
    if isinstance(value, CELEvalError):
        return value
    if isinstance(value, DomainMap):
        # Upstream's domain map "finds" every domain (as the empty map).
        return celtypes.BoolType(True)
    if isinstance(value, Mapping):
        return celtypes.BoolType(field in value)
    raise TypeError(f"no such overload: has() on {type(value).__name__}")


def bind(activation: Any, name: str, init: Any, body: Any) -> Any:
    return body(scopes.LazyScope(name, init, activation))


_AND_OR = Template(dedent("""\
    ex_${n}_l = lambda activation: ${left}
    ex_${n}_r = lambda activation: ${right}
    ex_${n} = lambda activation: ${helpers}.${helper}(activation, ex_${n}_l, ex_${n}_r)"""))

_CONDITIONAL = Template(dedent("""\
    ex_${n}_c = lambda activation: ${cond}
    ex_${n}_l = lambda activation: ${left}
    ex_${n}_r = lambda activation: ${right}
    ex_${n} = lambda activation: ${helpers}.conditional(activation, ex_${n}_c, ex_${n}_l, ex_${n}_r)"""))

_HAS = Template(dedent("""\
    ex_${n}_m = lambda activation: ${member}
    ex_${n} = lambda activation: ${helpers}.has(activation, ex_${n}_m, ${field})"""))

_BIND = Template(dedent("""\
    ex_${n}_i = lambda activation: ${init}
    ex_${n}_b = lambda activation: ${body}
    ex_${n} = lambda activation: ${helpers}.bind(activation, ${name}, ex_${n}_i, ex_${n}_b)"""))


def _code(tree: Any) -> str:
    return cast(TranspilerTree, tree).transpiled


class DraPhase1Transpiler(Phase1Transpiler):
    """celpy's first transpiler phase with the additions described above.

    Literals are hoisted: celpy would rebuild `IntType(0)` or `StringType("a100")`
    on every evaluation; we build each once, as `_kN = ...` in `constants`, which
    the caller executes before the other definitions. CEL values are immutable.
    """

    def __init__(self, facade: Any) -> None:
        super().__init__(facade)
        self.constants: list[str] = []

    def literal(self, tree: TranspilerTree) -> None:
        super().literal(tree)
        name = f"_k{len(self.constants)}"
        self.constants.append(f"{name} = {tree.transpiled}")
        tree.transpiled = name

    def expr(self, tree: TranspilerTree) -> None:
        if len(tree.children) != 3:
            super().expr(tree)
            return
        cond, left, right = tree.children
        self._defer(tree, _CONDITIONAL, cond=_code(cond), left=_code(left), right=_code(right))

    def conditionalor(self, tree: TranspilerTree) -> None:
        self._and_or(tree, "logical_or")

    def conditionaland(self, tree: TranspilerTree) -> None:
        self._and_or(tree, "logical_and")

    def _and_or(self, tree: TranspilerTree, helper: str) -> None:
        if len(tree.children) == 1:
            tree.transpiled = _code(tree.children[0])
            return
        left, right = tree.children
        self._defer(tree, _AND_OR, helper=helper, left=_code(left), right=_code(right))

    def ident_arg(self, tree: TranspilerTree) -> None:
        name = str(cast(lark.Token, tree.children[0]).value)
        if name != "has":
            super().ident_arg(tree)
            return
        # The checker has made sure the one argument is a field selection `m.f`.
        selection = innermost(cast(lark.Tree[Any], tree.children[1]).children[0])
        assert selection is not None and selection.data == "member_dot"
        member, field = selection.children
        self._defer(tree, _HAS, member=_code(member), field=repr(str(cast(lark.Token, field).value)))

    def member_dot_arg(self, tree: TranspilerTree) -> None:
        member, name_token = tree.children[0], cast(lark.Token, tree.children[1])
        args = cast(TranspilerTree | None, tree.children[2] if len(tree.children) == 3 else None)
        name = str(name_token.value)
        if is_cel_bind(tree):
            assert args is not None
            var, init, body = args.children
            self._defer(tree, _BIND, name=repr(simple_ident(var)), init=_code(init), body=_code(body))
        elif name in CEL_MACROS:
            super().member_dot_arg(tree)
        else:
            function = self.func_name(name)
            arguments = _code(member) + (", " + args.transpiled if args is not None else "")
            tree.transpiled = f"{function}({arguments})"

    def _defer(self, tree: TranspilerTree, template: Template, **values: str) -> None:
        text = template.substitute(n=str(tree.expr_number), helpers=_HELPERS, **values)
        # Phase 2 expects (template, {name: tree -> str}); ours is already complete.
        tree.checked_exception = (Template(text.replace("$", "$$")), {})
        tree.transpiled = f"ex_{tree.expr_number}(activation)"
