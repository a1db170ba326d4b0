"""Compile-time checks that upstream's CEL type checker would fail.

celpy has no type checker: an undeclared variable or an unknown function only
shows up when evaluated, and then only on the branch that runs. Upstream
rejects these when the selector is compiled, so the whole claim fails at once
with the same message for every device. We walk the parse tree and report:

- references to anything but `device`, a macro's loop variable or a
  `cel.bind` variable ("undeclared reference to 'x'");
- fields of `device` other than driver, attributes, capacity and
  allowMultipleAllocations ("undefined field 'x'");
- functions and methods the environment does not declare;
- malformed macros: `has()` of something other than a field selection, a loop
  or bind variable that is not a plain identifier, wrong argument counts;
- message construction (`T{...}`), which selectors cannot use;
- type errors cel-go's checker finds (`typecheck`): operators and functions applied to
  types they have no overload for, non-bool operands of `&&`/`||`, mixed list and map
  literals, and a result that is not a bool (or dyn).

Device attribute values are `dyn` upstream too, so what depends on them is checked at
run time ("no such overload").
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import lark

from dralloc.cel import functions, macros, scopes, suggestions, typecheck

DEVICE_FIELDS = frozenset({"driver", "attributes", "capacity", "allowMultipleAllocations"})
# Type names CEL lets an expression mention as values, e.g. `type(x) == int`.
_TYPE_NAMES = frozenset({"int", "uint", "double", "bool", "string", "bytes", "list", "map",
                         "null_type", "type"})


@dataclass(frozen=True)
class Issue:
    """One compile error, with its 1-based position in the expression.

    `positional` False: an error about the whole expression (its result type), which upstream
    reports as the bare message, without "compilation failed: ERROR: <input>:L:C:".
    """

    message: str
    line: int
    column: int
    positional: bool = True


class _Checker:
    def __init__(self, removed: frozenset[str] = frozenset(), wording_1_38: bool = False) -> None:
        # Functions the release being compiled for does not have (yet).
        self.removed = removed
        # Undeclared references worded by 1.38's cel-go (`suggestions`), not 1.37's.
        self.wording_1_38 = wording_1_38
        self.issues: list[Issue] = []

    def undeclared(self, name: str) -> str:
        if self.wording_1_38:
            return suggestions.undeclared(name)
        return f"undeclared reference to '{name}' (in container '')"

    def _namespace_call(self, member: lark.Tree[Any] | lark.Token, name: str, token: lark.Token,
                        bound: frozenset[str]) -> bool:
        """1.38: `ns.f(...)` whose `ns` is no declared name is one error naming `ns.f` at the call,
        when cel-go's catalog has something near that (else the usual errors, as cel-go does)."""
        if not self.wording_1_38:
            return False
        path = _ident_path(member)
        if path is None or path.split(".")[0] in bound or path.split(".")[0] in ("device", *_TYPE_NAMES):
            return False
        qualified = f"{path}.{name}"
        if not suggestions.near(qualified):
            return False
        self.report_call(token, suggestions.undeclared(qualified))
        return True

    def report(self, node: lark.Tree[Any] | lark.Token, message: str) -> None:
        line, column = _position(node)
        self.issues.append(Issue(message, line, column))

    def report_before(self, token: lark.Tree[Any] | lark.Token, message: str, back: int = 1) -> None:
        """At the `.` before a field name (`back` 2: before `?name`), where cel-go puts a selection."""
        line, column = _position(token)
        self.issues.append(Issue(message, line, max(1, column - back)))

    def report_call(self, token: lark.Token, message: str) -> None:
        """At the `(` after a function name, where cel-go puts a call."""
        line, column = _position(token)
        self.issues.append(Issue(message, line, column + len(str(token.value))))

    def visit(self, node: lark.Tree[Any] | lark.Token, bound: frozenset[str]) -> None:
        if not isinstance(node, lark.Tree):
            return
        handler = getattr(self, f"_{node.data}", None)
        if handler is not None:
            handler(node, bound)
            return
        for child in node.children:
            self.visit(child, bound)

    def _ident(self, node: lark.Tree[Any], bound: frozenset[str]) -> None:
        name = str(cast(lark.Token, node.children[0]).value)
        if name != "device" and name not in bound and name not in _TYPE_NAMES:
            self.report(node, self.undeclared(name))

    def _dot_ident(self, node: lark.Tree[Any], bound: frozenset[str]) -> None:
        name = str(cast(lark.Token, node.children[0]).value)
        if name != "device":
            self.report(node, self.undeclared(name))

    def _dot_ident_arg(self, node: lark.Tree[Any], bound: frozenset[str]) -> None:
        self._call(node, str(cast(lark.Token, node.children[0]).value), node.children[1:], bound)

    def _member_object(self, node: lark.Tree[Any], bound: frozenset[str]) -> None:
        self.report(node, "message construction is not supported in device selectors")

    def _member_dot(self, node: lark.Tree[Any], bound: frozenset[str]) -> None:
        member, field = node.children
        name = str(cast(lark.Token, field).value)
        if _is_device(member, bound) and name not in DEVICE_FIELDS:
            self.report_before(field, f"undefined field '{name}'")
        self.visit(member, bound)

    def _ident_arg(self, node: lark.Tree[Any], bound: frozenset[str]) -> None:
        name = str(cast(lark.Token, node.children[0]).value)
        args = _arguments(node.children[1:])
        if name == "has":
            if len(args) != 1 or not _is_field_selection(args[0]):
                self.report(node, "invalid argument to has() macro")
            for arg in args:
                self.visit(arg, bound)
            return
        if name == "dyn":
            if len(args) != 1:
                self.report(node, "found no matching overload for 'dyn'")
            for arg in args:
                self.visit(arg, bound)
            return
        self._call(node, name, node.children[1:], bound)

    def _call(self, node: lark.Tree[Any], name: str, rest: list[lark.Tree[Any] | lark.Token],
              bound: frozenset[str]) -> None:
        # A method called as a function is declared, just without that overload (typecheck).
        if (name not in functions.GLOBAL_FUNCTIONS and name not in functions.MEMBER_FUNCTIONS) or name in self.removed:
            self.report_call(cast(lark.Token, node.children[0]), self.undeclared(name))
        for arg in _arguments(rest):
            self.visit(arg, bound)

    def _optional_element(self, node: lark.Tree[Any], bound: frozenset[str]) -> None:
        # Reached only outside a list element, map key or index (those unwrap it first).
        self.report(node, "Syntax error: mismatched input '?'")
        self.visit(node.children[0], bound)

    def _visit_element(self, node: lark.Tree[Any] | lark.Token, bound: frozenset[str]) -> None:
        """A list element, map key or index, where `?e` is allowed."""
        inner = macros.optional_element(node)
        self.visit(node if inner is None else inner, bound)

    def _list_lit(self, node: lark.Tree[Any], bound: frozenset[str]) -> None:
        for element in _arguments(node.children):
            self._visit_element(element, bound)

    def _mapinits(self, node: lark.Tree[Any], bound: frozenset[str]) -> None:
        for position, child in enumerate(node.children):
            if position % 2 == 0:
                self._visit_element(child, bound)
            else:
                self.visit(child, bound)

    def _member_index(self, node: lark.Tree[Any], bound: frozenset[str]) -> None:
        self.visit(node.children[0], bound)
        self._visit_element(node.children[1], bound)

    def _member_dot_opt(self, node: lark.Tree[Any], bound: frozenset[str]) -> None:
        member, field = node.children
        name = str(cast(lark.Token, field).value)
        if _is_device(member, bound) and name not in DEVICE_FIELDS:
            self.report_before(field, f"undefined field '{name}'", back=2)
        self.visit(member, bound)

    def _member_dot_arg(self, node: lark.Tree[Any], bound: frozenset[str]) -> None:
        member, token = node.children[0], cast(lark.Token, node.children[1])
        name = str(token.value)
        args = _arguments(node.children[2:])
        if macros.is_cel_bind(node) and "cel" not in bound:
            self._bind_like(node, "cel.bind", args, 3, bound, scoped=(2,))
            return
        if macros.qualified_name(node) is not None and macros.simple_ident(member) not in bound:
            for arg in args:
                self.visit(arg, bound)
            return
        if len(args) in macros.TWO_VARIABLE_MACROS.get(name, ()):
            self.visit(member, bound)
            self._two_variables(node, name, args, bound)
            return
        if name in macros.OPTIONAL_MACROS:
            self.visit(member, bound)
            self._bind_like(node, name, args, 2, bound, scoped=(1,))
            return
        if name in macros.CEL_MACROS:
            self.visit(member, bound)
            if name == "map" and len(args) == 3:  # map(x, keep, value)
                self._bind_like(node, name, args, 3, bound, scoped=(1, 2))
            else:
                self._bind_like(node, name, args, 2, bound, scoped=(1,))
            return
        if self._namespace_call(member, name, token, bound):
            for arg in args:
                self.visit(arg, bound)
            return
        if (name not in functions.MEMBER_FUNCTIONS and name not in functions.GLOBAL_FUNCTIONS) or name in self.removed:
            self.report_call(token, self.undeclared(name))
        self.visit(member, bound)
        for arg in args:
            self.visit(arg, bound)

    def _two_variables(self, node: lark.Tree[Any], name: str, args: list[lark.Tree[Any]],
                       bound: frozenset[str]) -> None:
        names = [macros.simple_ident(arg) for arg in args[:2]]
        for arg, var in zip(args[:2], names, strict=True):
            if var is None:
                self.report(arg, "argument must be a simple name")
                return
            if var in scopes.RESERVED_NAMES or var.startswith("_"):
                self.report(arg, f"{name}() variable name '{var}' is reserved")
        if names[0] == names[1]:
            self.report(args[1], f"duplicate variable name: {names[1]}")
        for arg in args[2:]:
            self.visit(arg, bound | {n for n in names if n is not None})

    def _bind_like(self, node: lark.Tree[Any], what: str, args: list[lark.Tree[Any]], count: int,
                   bound: frozenset[str], *, scoped: tuple[int, ...]) -> None:
        if len(args) != count:
            self.report(node, f"{what}() takes {count} arguments, got {len(args)}")
            return
        var = macros.simple_ident(args[0])
        if var is None:
            self.report(args[0], f"{what}() variable name must be a simple identifier")
            return
        if var in scopes.RESERVED_NAMES or var.startswith("_"):
            self.report(args[0], f"{what}() variable name '{var}' is reserved")
        for position, arg in enumerate(args[1:], start=1):
            self.visit(arg, bound | {var} if position in scoped else bound)


def _arguments(rest: list[lark.Tree[Any] | lark.Token]) -> list[lark.Tree[Any]]:
    if not rest:
        return []
    exprlist = rest[0]
    assert isinstance(exprlist, lark.Tree) and exprlist.data == "exprlist"
    return [cast(lark.Tree[Any], c) for c in exprlist.children]


def _is_field_selection(node: lark.Tree[Any]) -> bool:
    inner = macros.innermost(node)
    return inner is not None and inner.data == "member_dot"


def _ident_path(node: lark.Tree[Any] | lark.Token) -> str | None:
    """`a` or `a.b.c` when the node is just identifiers and field selections, else None."""
    name = macros.simple_ident(node)
    if name is not None:
        return name
    if isinstance(node, lark.Tree) and node.data == "member_dot":
        base = _ident_path(node.children[0])
        return None if base is None else f"{base}.{cast(lark.Token, node.children[1]).value}"
    if isinstance(node, lark.Tree) and len(node.children) == 1 and node.data in ("member", "primary", "expr"):
        return _ident_path(node.children[0])
    return None


def _is_device(node: lark.Tree[Any] | lark.Token, bound: frozenset[str]) -> bool:
    return macros.simple_ident(node) == "device" and "device" not in bound


def _position(node: lark.Tree[Any] | lark.Token) -> tuple[int, int]:
    if isinstance(node, lark.Token):
        return node.line or 1, node.column or 1
    meta = getattr(node, "meta", None)
    if meta is not None and not meta.empty:
        return meta.line, meta.column
    for child in node.children:
        line, column = _position(child)
        if (line, column) != (1, 1) or isinstance(child, lark.Token):
            return line, column
    return 1, 1


def check(tree: lark.Tree[Any], text: str = "", *,
          result: Callable[[str], str | None] | None = None,
          removed: frozenset[str] = frozenset(), wording_1_38: bool = False) -> list[Issue]:
    """All compile errors in a parsed selector, in source order.

    `removed`: library functions the release compiled for lacks (undeclared references there).
    `wording_1_38`: undeclared references worded as 1.38's cel-go words them (`suggestions`).

    Name errors first (undeclared references, macro misuse); only a selector without them
    is type-checked (`typecheck`), which needs the source `text` for the positions of
    operators and calls (a tree without positions gets 1:1).
    """
    checker = _Checker(removed, wording_1_38)
    checker.visit(tree, frozenset())
    try:
        kind, problems = typecheck.infer(tree, text, checked=not checker.issues, removed=removed)
    except Exception:  # a construct the inference does not expect: never reject for that
        kind, problems = typecheck.UNKNOWN, []
    if checker.issues:
        # cel-go's checker reports name and type errors in one pass, in source order.
        typed = [Issue(p.message, *_line_column(text, p.offset)) for p in problems]
        return sorted([*checker.issues, *typed], key=lambda issue: (issue.line, issue.column))
    if problems:
        # A negative offset: a failure of the whole program, which upstream words without a position.
        issues = [Issue(p.message, *_line_column(text, p.offset)) if p.offset >= 0
                  else Issue(p.message, 1, 1, positional=False) for p in problems]
        return sorted(issues, key=lambda issue: (issue.line, issue.column))
    refused = (result or selector_result)(kind)
    if refused is not None:
        return [Issue(refused, 1, 1, positional=False)]
    return []


def shown_type(kind: str) -> str:
    """A static type as cel-go prints it in the output type checks."""
    # What we did not model prints as dyn (cel-go would name it); the outcome is the same.
    # An empty literal's free element type prints as dyn; cel-go names null's type null_type.
    shown = kind.replace(typecheck.UNKNOWN, typecheck.DYN)
    shown = re.sub(rf"\b{typecheck.FREE}\b", typecheck.DYN, shown)
    return re.sub(rf"\b{typecheck.NULL}\b", "null_type", shown)


def selector_result(kind: str) -> str | None:
    """Why a selector of this static type is refused (it must give a bool), None when it is not."""
    if kind in (typecheck.BOOL, typecheck.DYN, typecheck.UNKNOWN):
        return None
    return f"must evaluate to bool or the unknown type, not {shown_type(kind)}"


def _line_column(text: str, offset: int) -> tuple[int, int]:
    line_start = text.rfind("\n", 0, offset) + 1
    return text.count("\n", 0, offset) + 1, offset - line_start + 1


def ranges_over_attribute_values(tree: lark.Tree[Any]) -> list[Issue]:
    """Macros (exists, all, ...) over a device attribute's value, which 1.36 cannot compile with
    DRAListTypeAttributes off.

    1.36 declares attribute values with the gate off as the type 'any', and cel-go refuses to
    range over that; with the gate on they are 'dyn' (lists allowed), and 1.37 declares them so
    whatever the gate. Only the plain forms `device.attributes[D].name` and
    `device.attributes[D]["name"]` are recognised: a value passed through `cel.bind` or `dyn()`
    is not.
    """
    issues: list[Issue] = []
    for node in tree.iter_subtrees():
        if node.data != "member_dot_arg" or macros.is_cel_bind(node):
            continue
        if str(cast(lark.Token, node.children[1]).value) not in macros.CEL_MACROS:
            continue
        target = macros.innermost(node.children[0])
        if target is not None and _is_attribute_value(target):
            line, column = _value_position(target)
            issues.append(Issue("expression of type 'any' cannot be range of a comprehension "
                                "(must be list, map, or dynamic)", line, column))
    return sorted(issues, key=lambda issue: (issue.line, issue.column))


def _is_attribute_value(node: lark.Tree[Any]) -> bool:
    """`device.attributes[D].name` or `device.attributes[D][K]`."""
    if node.data not in {"member_dot", "member_index"}:
        return False
    domain = macros.innermost(node.children[0])
    if domain is None or domain.data != "member_index":
        return False
    attributes = macros.innermost(domain.children[0])
    return (attributes is not None and attributes.data == "member_dot"
            and macros.simple_ident(attributes.children[0]) == "device"
            and str(cast(lark.Token, attributes.children[1]).value) == "attributes")


def _value_position(node: lark.Tree[Any]) -> tuple[int, int]:
    """Where cel-go puts the error: the '.' (or '[') before the attribute's name."""
    if node.data == "member_dot":
        line, column = _position(node.children[1])
        return line, max(1, column - 1)
    return _position(node)
