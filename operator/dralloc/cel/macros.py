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
- Namespaced functions (`sets.contains(a, b)`, `optional.of(x)`) parse as a method
  on an identifier; they become plain calls of the function so named.
- cel-go's two-variable comprehensions (`ext.TwoVarComprehensions`): `all`,
  `exists`, `existsOne`/`exists_one` with three arguments, `transformList`,
  `transformMap`, `transformMapEntry` (`comprehension`), and the optional macros
  `optMap`/`optFlatMap`; optional syntax (`x.?f`, `x[?k]`, `[?o]`, `{?k: o}`) and
  the short-circuiting `or`/`orValue` of optionals.

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

from dralloc.cel import cost, functions, library_lists, library_optional, operators, scopes
from dralloc.cel.devices import DomainMap, is_invalid

# One-variable macros: CEL's own, and the lists extension's `sortBy(x, key)`.
CEL_MACROS = frozenset({"all", "exists", "exists_one", "map", "filter", "sortBy"})
# Macro name -> the argument counts that make it a two-variable comprehension.
TWO_VARIABLE_MACROS = {"all": (3,), "exists": (3,), "existsOne": (3,), "exists_one": (3,),
                       "transformList": (3, 4), "transformMap": (3, 4), "transformMapEntry": (3, 4)}
OPTIONAL_MACROS = frozenset({"optMap", "optFlatMap"})

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


def qualified_name(tree: lark.Tree[Any]) -> str | None:
    """`ns.f` for a member_dot_arg node that calls a namespaced function (`sets.contains(...)`)."""
    namespace = simple_ident(tree.children[0])
    if namespace is None:
        return None
    name = f"{namespace}.{cast(lark.Token, tree.children[1]).value}"
    return name if name in functions.QUALIFIED_FUNCTIONS else None


def optional_element(tree: Any) -> lark.Tree[Any] | None:
    """The expression `e` of an optional element `?e` (a list element, map key or index), else None."""
    node = tree
    while isinstance(node, lark.Tree) and node.data == "expr" and len(node.children) == 1:
        node = node.children[0]
        if isinstance(node, lark.Tree) and node.data == "optional_element":
            return cast(lark.Tree[Any], node.children[0])
    return None


def _bool_step(accumulated: Any, value: Any, conjunction: bool) -> Any:
    """cel-go's `accu && pred` / `accu || pred` inside a comprehension, errors absorbed as there."""
    decisive = not conjunction
    for operand in (accumulated, value):
        if isinstance(operand, celtypes.BoolType) and bool(operand) is decisive:
            return operand
    for operand in (accumulated, value):
        if isinstance(operand, CELEvalError):
            return operand
    for operand in (accumulated, value):
        if not isinstance(operand, celtypes.BoolType):
            raise TypeError("no such overload")  # as cel-go's && / || on a non-bool
    return value


# cel-go's Go type names, which its "not iterable" errors print (%T of the value).
_GO_TYPES = {"int": "types.Int", "uint": "types.Uint", "double": "types.Double", "string": "types.String",
             "bool": "types.Bool", "bytes": "types.Bytes", "null_type": "types.Null",
             "kubernetes.Semver": "cel.Semver", "kubernetes.Quantity": "cel.Quantity", "net.IP": "cel.IP",
             "net.CIDR": "cel.CIDR", "optional_type": "*types.Optional"}


def _entries(target: Any, two_variables: bool) -> list[tuple[Any, Any]]:
    """(first, second) per iteration: (index, element) / (key, value); one variable: (element or key, None)."""
    if isinstance(target, list):
        return [(operators.cel_int(i), v) if two_variables else (v, None) for i, v in enumerate(target)]
    if isinstance(target, dict):
        return list(target.items()) if two_variables else [(k, None) for k in target]
    go_type = _GO_TYPES.get(operators.type_name(target), type(target).__name__)
    if two_variables:
        raise ValueError(f"unsupported comprehension range type: {go_type}")
    raise ValueError(f"got '{go_type}', expected iterable type")


def _require_bool(value: Any) -> Any:
    if not isinstance(value, celtypes.BoolType | CELEvalError):
        raise TypeError("no such overload")
    return value


def comprehension(activation: Any, kind: str, first: str, second: str | None,
                  target: Any, condition: Any, body: Any) -> Any:
    """A comprehension as cel-go expands it: over a list (index, element) or a map (key, value)
    with two variables; over elements or keys with one (`second` None)."""
    collection = result(activation, target)
    if isinstance(collection, CELEvalError):
        return collection
    entries = _entries(collection, second is not None)

    def run(function: Any, a: Any, b: Any) -> Any:
        cost.charge(1)
        variables = {first: a} if second is None else {first: a, second: b}
        return result(activation.nested_activation(vars=variables), function)

    if kind in ("all", "exists"):
        conjunction = kind == "all"
        accumulated: Any = celtypes.BoolType(conjunction)
        for a, b in entries:
            if isinstance(accumulated, celtypes.BoolType) and bool(accumulated) is not conjunction:
                break  # decided: cel-go's loop condition stops here
            accumulated = _bool_step(accumulated, run(body, a, b), conjunction)
        return accumulated
    if kind == "sortBy":
        if not isinstance(collection, list):
            raise TypeError("no such overload")
        keys = []
        for a, b in entries:
            key = run(body, a, b)
            if isinstance(key, CELEvalError):
                return key
            keys.append(key)
        return library_lists.sort_by_keys(collection, celtypes.ListType(keys))
    if kind == "filter":
        kept = []
        for a, b in entries:
            keep = _require_bool(run(body, a, b))
            if isinstance(keep, CELEvalError):
                return keep
            if keep:
                kept.append(a)
        return celtypes.ListType(kept)
    if kind in ("existsOne", "exists_one"):
        count = 0
        for a, b in entries:
            value = run(body, a, b)
            if isinstance(value, CELEvalError):
                return value
            if not isinstance(value, celtypes.BoolType):
                raise TypeError("no such overload")  # cel-go's ?: on a non-bool
            count += bool(value)
        return celtypes.BoolType(count == 1)
    items: list[Any] = []
    mapping: dict[Any, Any] = {}
    for a, b in entries:
        if condition is not None:
            keep = run(condition, a, b)
            if isinstance(keep, CELEvalError):
                return keep
            if not isinstance(keep, celtypes.BoolType):
                raise TypeError("no such overload")
            if not keep:
                continue
        value = run(body, a, b)
        if isinstance(value, CELEvalError):
            return value
        if kind in ("transformList", "map"):
            items.append(value)
        elif kind == "transformMap":
            mapping[a] = value
        else:  # transformMapEntry: the body gives map entries to merge
            if not isinstance(value, dict):
                raise TypeError(f"no such overload: transformMapEntry of {operators.type_name(value)}")
            for key, entry in value.items():
                if key in mapping:
                    raise ValueError(f"insert failed: key {key} already exists")
                mapping[key] = entry
    return celtypes.ListType(items) if kind in ("transformList", "map") else celtypes.MapType(mapping)


def optional_macro(activation: Any, kind: str, name: str, target: Any, body: Any) -> Any:
    """`opt.optMap(v, expr)` / `opt.optFlatMap(v, expr)`."""
    value = result(activation, target)
    if isinstance(value, CELEvalError):
        return value
    if not isinstance(value, library_optional.Optional):
        raise TypeError(f"no such overload: {operators.type_name(value)}.{kind}()")
    if not value.has_value:
        return library_optional.NONE
    mapped = result(activation.nested_activation(vars={name: value.value}), body)
    if isinstance(mapped, CELEvalError) or kind == "optFlatMap":
        if kind == "optFlatMap" and not isinstance(mapped, library_optional.Optional | CELEvalError):
            raise TypeError(f"no such overload: optFlatMap of {operators.type_name(mapped)}")
        return mapped
    return library_optional.Optional(mapped)


def optional_or(activation: Any, receiver: Any, other: Any, function: str) -> Any:
    """`o.or(p)` / `o.orValue(v)`: the argument is evaluated only when `o` is empty."""
    value = result(activation, receiver)
    if isinstance(value, CELEvalError):
        return value
    if not isinstance(value, library_optional.Optional):
        raise TypeError("no such overload")  # cel-go's decorator words it so
    if value.has_value:
        return value if function == "or" else value.value
    alternative = result(activation, other)
    if function == "or" and not isinstance(alternative, library_optional.Optional | CELEvalError):
        raise TypeError("no such overload")
    return alternative


def optional_list(*elements: tuple[bool, Any]) -> celtypes.ListType:
    """A list literal with optional elements `[a, ?b]`: `?b` contributes b's value if any."""
    items = []
    for optional, value in elements:
        if not optional:
            items.append(value)
            continue
        if not isinstance(value, library_optional.Optional):
            raise TypeError(f"no such overload: optional element of type {operators.type_name(value)}")
        if value.has_value:
            items.append(value.value)
    return celtypes.ListType(items)


def optional_map(*entries: tuple[bool, Any, Any]) -> celtypes.MapType:
    """A map literal with optional entries `{?k: v}`: the entry is there only if v has a value."""
    pairs = []
    for optional, key, value in entries:
        if optional:
            if not isinstance(value, library_optional.Optional):
                raise TypeError(f"no such overload: optional entry of type {operators.type_name(value)}")
            if not value.has_value:
                continue
            value = value.value
        pairs.append((key, value))
    return celtypes.MapType(pairs)


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
    return non_bool_outcome(value, other, "&&")


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
    return non_bool_outcome(value, other, "||")


def non_bool_outcome(value: Any, other: Any, operator: str) -> Any:
    """The outcome of `&&` or `||` (`operator`, unused) when neither side decided it and not both
    are bools: as cel-go's evalAnd/evalOr, the first operand that is not a bool gives it, its own
    error value (returned) or "no such overload" for a non-bool value (raised TypeError).

    Shared with the fast path (`fastpath`), whose `&&` and `||` closures end the same way.
    """
    for operand in (value, other):
        if isinstance(operand, CELEvalError):
            return operand
        if not isinstance(operand, celtypes.BoolType):
            break
    raise TypeError("no such overload")


def conditional(activation: Any, condition: Any, left: Any, right: Any) -> Any:
    value = result(activation, condition)
    if isinstance(value, CELEvalError):
        return value
    if not isinstance(value, celtypes.BoolType):
        raise TypeError("no such overload")  # cel-go's ?: on a non-bool condition
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
        if field not in value:
            return celtypes.BoolType(False)
        found: Any = dict.get(cast(dict[str, Any], value), field) if isinstance(value, dict) else None
        # An attribute 1.38 could not convert: testing it is an error, as reading it is.
        return found if is_invalid(found) else celtypes.BoolType(True)
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


_COMPREHENSION = Template(dedent("""\
    ex_${n}_t = lambda activation: ${target}
    ex_${n}_f = ${condition}
    ex_${n}_b = lambda activation: ${body}
    ex_${n} = lambda activation: ${helpers}.comprehension(activation, ${kind}, ${first}, ${second}, ex_${n}_t, ex_${n}_f, ex_${n}_b)"""))

_OPTIONAL_MACRO = Template(dedent("""\
    ex_${n}_t = lambda activation: ${target}
    ex_${n}_b = lambda activation: ${body}
    ex_${n} = lambda activation: ${helpers}.optional_macro(activation, ${kind}, ${name}, ex_${n}_t, ex_${n}_b)"""))

_OPTIONAL_OR = Template(dedent("""\
    ex_${n}_l = lambda activation: ${left}
    ex_${n}_r = lambda activation: ${right}
    ex_${n} = lambda activation: ${helpers}.optional_or(activation, ex_${n}_l, ex_${n}_r, ${function})"""))

_OPTIONALS = "dralloc.cel.library_optional"


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
        qualified = qualified_name(tree)
        arguments_given = args.children if args is not None else []
        if is_cel_bind(tree):
            assert args is not None
            var, init, body = args.children
            self._defer(tree, _BIND, name=repr(simple_ident(var)), init=_code(init), body=_code(body))
        elif qualified is not None:
            tree.transpiled = f"{self.func_name(qualified)}({args.transpiled if args is not None else ''})"
        elif len(arguments_given) in TWO_VARIABLE_MACROS.get(name, ()):
            first, second, *rest = arguments_given
            condition = f"lambda activation: {_code(rest[0])}" if len(rest) == 2 else "None"
            self._defer(tree, _COMPREHENSION, target=_code(member), condition=condition, body=_code(rest[-1]),
                        kind=repr(name), first=repr(simple_ident(first)), second=repr(simple_ident(second)))
        elif name in OPTIONAL_MACROS and len(arguments_given) == 2:
            var, body = arguments_given
            self._defer(tree, _OPTIONAL_MACRO, target=_code(member), body=_code(body), kind=repr(name),
                        name=repr(simple_ident(var)))
        elif name in ("or", "orValue") and len(arguments_given) == 1:
            self._defer(tree, _OPTIONAL_OR, left=_code(member), right=_code(arguments_given[0]),
                        function=repr(name))
        elif name in CEL_MACROS:
            # One variable; `map` may have a filter: map(x, keep, value).
            var, *rest = arguments_given
            condition = f"lambda activation: {_code(rest[0])}" if len(rest) == 2 else "None"
            self._defer(tree, _COMPREHENSION, target=_code(member), condition=condition, body=_code(rest[-1]),
                        kind=repr(name), first=repr(simple_ident(var)), second="None")
        else:
            function = self.func_name(name)
            arguments = _code(member) + (", " + args.transpiled if args is not None else "")
            tree.transpiled = f"{function}({arguments})"

    def member_dot_opt(self, tree: TranspilerTree) -> None:
        member, field = tree.children
        tree.transpiled = f"{_OPTIONALS}.select({_code(member)}, {str(cast(lark.Token, field).value)!r})"

    def member_index(self, tree: TranspilerTree) -> None:
        member, index = tree.children
        key = optional_element(index)
        if key is None:
            super().member_index(tree)
            return
        tree.transpiled = f"{_OPTIONALS}.index({_code(member)}, {_code(key)})"

    def optional_element(self, tree: TranspilerTree) -> None:
        # Only meaningful where its parent reads it (list, map, index); the checker rejects the rest.
        tree.transpiled = _code(tree.children[0])

    def list_lit(self, tree: TranspilerTree) -> None:
        elements = cast(lark.Tree[Any], tree.children[0]).children if tree.children else []
        if not any(optional_element(e) is not None for e in elements):
            super().list_lit(tree)
            return
        parts = ", ".join(f"({optional_element(e) is not None}, {_code(e)})" for e in elements)
        tree.transpiled = f"{_HELPERS}.optional_list({parts})"

    def map_lit(self, tree: TranspilerTree) -> None:
        inits = cast(lark.Tree[Any], tree.children[0]).children if tree.children else []
        keys, values = inits[0::2], inits[1::2]
        if not any(optional_element(k) is not None for k in keys):
            super().map_lit(tree)
            return
        parts = ", ".join(f"({optional_element(k) is not None}, {_code(k)}, {_code(v)})"
                          for k, v in zip(keys, values, strict=True))
        tree.transpiled = f"{_HELPERS}.optional_map({parts})"

    def _defer(self, tree: TranspilerTree, template: Template, **values: str) -> None:
        text = template.substitute(n=str(tree.expr_number), helpers=_HELPERS, **values)
        # Phase 2 expects (template, {name: tree -> str}); ours is already complete.
        tree.checked_exception = (Template(text.replace("$", "$$")), {})
        tree.transpiled = f"ex_{tree.expr_number}(activation)"
