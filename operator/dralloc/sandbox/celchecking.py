"""Type checks of DRA CEL selectors that cel-go's checker refuses at compile time.

celpy only parses; kube-apiserver also type-checks every selector against the DRA
environment (one variable, `device`, and the Kubernetes CEL libraries) and refuses
what does not check. This walker infers types over celpy's parse tree, in cel-go's
names (`int`, `list(dyn)`, `map(string, kubernetes.Quantity)`, `kubernetes.DRADevice`),
and reports, at cel-go's positions:

- `undeclared reference to 'x' (in container '')`: a name that is not `device`, a
  macro's or `cel.bind`'s variable or a type name (at the name), a function or method
  the environment does not declare (at its `(`);
- `undefined field 'x'` of `device` (at the `.`);
- `found no matching overload for '_==_' applied to '(string, int)'`: operators,
  indexing and the declared functions given operands of types no overload takes;
- `expected type 'bool' but found 'int'` for `&&`, `||` and the bodies of `all`,
  `exists`, `exists_one` and `filter`;
- `invalid argument to has() macro`, `argument must be a simple name`, and `invalid
  matches argument` for a constant pattern that is not a regular expression;
- and, when all of that checks, a result that cannot be a bool (`must evaluate to bool
  or the unknown type, not string`).

Anything of unknown type is `dyn`, which every overload takes: the check only refuses
what cel-go surely refuses, so an expression the real server accepts is never refused
here. Not modelled: the cost limit ("too complex"), constant folding at program
instantiation (`int('seven')`), and optional syntax (`a.?b`, which celpy does not parse).
"""

from __future__ import annotations

import dataclasses
import re
import warnings
from typing import Any, cast

import lark

from dralloc.sandbox import celenv

_LITERALS = {"INT_LIT": "int", "UINT_LIT": "uint", "FLOAT_LIT": "double", "STRING_LIT": "string",
             "MLSTRING_LIT": "string", "BYTES_LIT": "bytes", "BOOL_LIT": celenv.BOOL, "NULL_LIT": "null_type"}

Node = lark.Tree[Any]
Env = dict[str, str]


@dataclasses.dataclass(frozen=True)
class Issue:
    index: int  # position in the expression, as cel-go places the error
    message: str


def _elem(kind: str) -> str | None:
    return kind[5:-1] if kind.startswith("list(") else None


def _map_parts(kind: str) -> tuple[str, str] | None:
    if not kind.startswith("map("):
        return None
    inner, depth = kind[4:-1], 0
    for i, ch in enumerate(inner):
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            return inner[:i], inner[i + 2:]
    return None


def compatible(a: str, b: str) -> bool:
    """Whether one type parameter can stand for both (dyn and null go with anything)."""
    if a == b or celenv.DYN in (a, b) or "null_type" in (a, b):
        return True
    ea, eb = _elem(a), _elem(b)
    if ea is not None and eb is not None:
        return compatible(ea, eb)
    ma, mb = _map_parts(a), _map_parts(b)
    if ma is not None and mb is not None:
        return compatible(ma[0], mb[0]) and compatible(ma[1], mb[1])
    return False


def _matches(pattern: str, kind: str) -> bool:
    if kind == celenv.DYN or pattern == "any":
        return True
    if pattern == "list":
        return kind.startswith("list(")
    if pattern == "map":
        return kind.startswith("map(")
    return compatible(pattern, kind)


def _unwrap(node: Any) -> Any:
    """Below the single-child wrappers and parentheses, where the expression's own node is."""
    while isinstance(node, lark.Tree) and (len(node.children) == 1 and node.data in {
            "expr", "conditionalor", "conditionaland", "relation", "addition", "multiplication", "unary",
            "member", "primary", "paren_expr"}):
        node = node.children[0]
    return node


def _start(node: Any) -> int:
    if isinstance(node, lark.Token):
        return int(node.start_pos or 0)
    if not node.meta.empty and node.meta.start_pos is not None:
        return int(node.meta.start_pos)
    tokens = list(node.scan_values(lambda v: isinstance(v, lark.Token)))
    return int(tokens[0].start_pos or 0) if tokens else 0


def _end(node: Any) -> int:
    if isinstance(node, lark.Token):
        return int(node.end_pos or 0)
    if not node.meta.empty and node.meta.end_pos is not None:
        return int(node.meta.end_pos)
    tokens = list(node.scan_values(lambda v: isinstance(v, lark.Token)))
    return int(tokens[-1].end_pos or 0) if tokens else 0


class Checker:
    def __init__(self, source: str) -> None:
        self.source = source
        self.issues: list[Issue] = []

    def report(self, index: int, message: str) -> str:
        self.issues.append(Issue(index, message))
        return celenv.DYN

    def find(self, text: str, start: int) -> int:
        """The next `text` after an operand: the operator, '(' or '.' that follows it (celpy's tree
        drops those tokens, and keyword literals carry no position)."""
        found = self.source.find(text, start)
        return found if found >= 0 else start

    def position(self, node: Any) -> int:
        """Where cel-go places an expression: its operator, call parenthesis, '.' or '['."""
        node = _unwrap(node)
        if not isinstance(node, lark.Tree):
            return _start(node)
        data, kids = node.data, node.children
        if data == "expr" and len(kids) == 3:
            return self.find("?", _end(kids[0]))
        if data in ("conditionalor", "conditionaland") and len(kids) == 2:
            return self.find("||" if data == "conditionalor" else "&&", _end(kids[0]))
        if data in ("relation", "addition", "multiplication") and len(kids) == 2:
            return self.find(_OPERATORS[kids[0].data][0], _end(kids[0].children[0]))
        if data in ("ident_arg", "member_dot_arg"):
            name = kids[0] if data == "ident_arg" else kids[1]
            return self.find("(", _end(name))
        if data == "member_dot":
            return self.find(".", _end(kids[0]))
        if data == "member_index":
            return self.find("[", _end(kids[0]))
        return _start(node)

    # ---- inference --------------------------------------------------------------------------

    def infer(self, node: Any, env: Env) -> str:
        node = _unwrap(node)
        if isinstance(node, lark.Token):
            return celenv.DYN
        handler = getattr(self, f"_{node.data}", None)
        if handler is None:  # message construction and the like: not judged here
            for child in node.children:
                if isinstance(child, lark.Tree):
                    self.infer(child, env)
            return celenv.DYN
        return cast(str, handler(node, env))

    def _literal(self, node: Node, env: Env) -> str:
        return _LITERALS.get(cast(lark.Token, node.children[0]).type, celenv.DYN)

    def _homogeneous(self, nodes: list[Any], kinds: list[str]) -> str:
        """Kubernetes compiles with cel-go's homogeneous aggregate literals: every element has the
        first one's type exactly (dyn included); the first that does not is reported."""
        for child, kind in zip(nodes, kinds, strict=True):
            if kind != kinds[0]:
                found = "null" if kind == "null_type" else shown(kind)
                self.report(self.position(child), f"expected type '{shown(kinds[0])}' but found '{found}'")
                return celenv.DYN
        return kinds[0]

    def _list_lit(self, node: Node, env: Env) -> str:
        children = list(node.children[0].children) if node.children else []
        kinds = [self.infer(c, env) for c in children]
        return f"list({self._homogeneous(children, kinds)})" if kinds else "list(dyn)"

    def _map_lit(self, node: Node, env: Env) -> str:
        children = list(node.children[0].children) if node.children else []
        items = [self.infer(c, env) for c in children]
        key = self._homogeneous(children[0::2], items[0::2]) if items else celenv.DYN
        value = self._homogeneous(children[1::2], items[1::2]) if items else celenv.DYN
        return f"map({key}, {value})"

    def _ident(self, node: Node, env: Env) -> str:
        name = str(cast(lark.Token, node.children[0]).value)
        if name in env:
            return env[name]
        if name == "device":
            return celenv.DEVICE
        if name in celenv.TYPE_NAMES:
            return "type"
        return self.report(_start(node), f"undeclared reference to '{name}' (in container '')")

    _dot_ident = _ident

    def _expr(self, node: Node, env: Env) -> str:
        cond, then, other = (self.infer(c, env) for c in node.children)
        if cond not in (celenv.BOOL, celenv.DYN) or not compatible(then, other):
            return self.report(self.position(node), f"found no matching overload for '_?_:_' applied to "
                                                     f"'({shown(cond)}, {shown(then)}, {shown(other)})'")
        return then if then == other else celenv.DYN

    def _conditionalor(self, node: Node, env: Env) -> str:
        for operand in node.children:
            kind = self.infer(operand, env)
            if kind not in (celenv.BOOL, celenv.DYN):
                self.report(self.position(operand), f"expected type 'bool' but found '{shown(kind)}'")
        return celenv.BOOL

    _conditionaland = _conditionalor

    def _unary(self, node: Node, env: Env) -> str:
        op, operand = node.children
        kind = self.infer(operand, env)
        if op.data == "unary_not":
            if kind not in (celenv.BOOL, celenv.DYN):
                return self.report(_start(node), f"found no matching overload for '!_' applied to '({shown(kind)})'")
            return celenv.BOOL
        if kind not in ("int", "double", celenv.DURATION, celenv.DYN):
            return self.report(_start(node), f"found no matching overload for '-_' applied to '({shown(kind)})'")
        return kind

    def _binary(self, node: Node, env: Env) -> str:
        op_node, right = node.children
        function = _OPERATORS[op_node.data][1]
        a, b = self.infer(op_node.children[0], env), self.infer(right, env)
        result = _operator_result(function, a, b)
        if result is None:
            return self.report(self.position(node), f"found no matching overload for '{function}' applied to "
                                                     f"'({shown(a)}, {shown(b)})'")
        return result

    _relation = _addition = _multiplication = _binary

    def _member_dot(self, node: Node, env: Env) -> str:
        target, field = node.children
        kind = self.infer(target, env)
        name = str(cast(lark.Token, field).value)
        if kind == celenv.DEVICE:
            if name not in celenv.DEVICE_FIELDS:
                return self.report(self.position(node), f"undefined field '{name}'")
            return celenv.DEVICE_FIELDS[name]
        parts = _map_parts(kind)
        return parts[1] if parts is not None else celenv.DYN

    def _member_index(self, node: Node, env: Env) -> str:
        target, index = node.children
        kind, key = self.infer(target, env), self.infer(index, env)
        elem, parts = _elem(kind), _map_parts(kind)
        if kind == celenv.DYN:
            return celenv.DYN
        if elem is not None and key in ("int", "uint", celenv.DYN):
            return elem
        if parts is not None and compatible(parts[0], key):
            return parts[1]
        return self.report(self.position(node), f"found no matching overload for '_[_]' applied to "
                                                 f"'({shown(kind)}, {shown(key)})'")

    def _ident_arg(self, node: Node, env: Env) -> str:
        name = str(cast(lark.Token, node.children[0]).value)
        args = _arguments(node.children[1:])
        if name == "has":
            if len(args) != 1 or not (isinstance(_unwrap(args[0]), lark.Tree)
                                      and _unwrap(args[0]).data == "member_dot"):
                for arg in args:
                    self.infer(arg, env)
                return self.report(self.position(args[0]) if args else self.position(node),
                                   "invalid argument to has() macro")
            self.infer(args[0], env)
            return celenv.BOOL
        return self._call(node, name, [self.infer(a, env) for a in args], args)

    def _call(self, node: Node, name: str, kinds: list[str], args: list[Node]) -> str:
        overloads = celenv.GLOBALS.get(name)
        if overloads is None and name in celenv.METHODS:
            # A method called as a function is declared, just without such an overload (cel-go).
            overloads = []
        if overloads is None:
            return self.report(self.position(node), f"undeclared reference to '{name}' (in container '')")
        for params, result in overloads:
            if len(params) == len(kinds) and all(_matches(p, k) for p, k in zip(params, kinds, strict=True)):
                return result
        return self.report(self.position(node), f"found no matching overload for '{name}' applied to "
                                                 f"'({', '.join(map(shown, kinds))})'")

    def _member_dot_arg(self, node: Node, env: Env) -> str:
        target, token = node.children[0], cast(lark.Token, node.children[1])
        name = str(token.value)
        args = _arguments(node.children[2:])
        plain = _simple_ident(target)
        if plain == "cel" and name == "bind" and "cel" not in env:
            return self._bind(args, env)
        if plain in celenv.NAMESPACES and plain not in env and f"{plain}.{name}" in celenv.GLOBALS:
            return self._call(node, f"{plain}.{name}", [self.infer(a, env) for a in args], args)
        kind = self.infer(target, env)
        if name in celenv.MACROS:
            return self._macro(node, name, kind, args, env)
        kinds = [self.infer(a, env) for a in args]
        methods = celenv.METHODS.get(name)
        if methods is None:
            return self.report(self.position(node), f"undeclared reference to '{name}' (in container '')")
        for receiver, params, result in methods:
            if _matches(receiver, kind) and len(params) == len(kinds) and all(
                    _matches(p, k) for p, k in zip(params, kinds, strict=True)):
                if name == "matches":
                    self._check_pattern(args[0])
                return result
        return self.report(self.position(node), f"found no matching overload for '{name}' applied to "
                                                 f"'{shown(kind)}.({', '.join(map(shown, kinds))})'")

    def _check_pattern(self, arg: Node) -> None:
        literal = _unwrap(arg)
        if not (isinstance(literal, lark.Tree) and literal.data == "literal"):
            return
        text = str(cast(lark.Token, literal.children[0]).value)
        if text[:1] not in "'\"" or text.startswith(("'''", '"""')) or "\\" in text:
            return  # raw, multi-line or escaped strings: not worth decoding here
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                re.compile(text[1:-1])
            except re.error as exc:
                if "bad escape" not in str(exc) and "unknown extension" not in str(exc):  # RE2 has more syntax
                    self.report(_start(literal), "invalid matches argument")

    def _macro(self, node: Node, name: str, kind: str, args: list[Node], env: Env) -> str:
        if len(args) not in (2, 3) or (len(args) == 3 and name != "map"):
            for arg in args:
                self.infer(arg, env)
            return self.report(self.position(node), f"found no matching overload for '{name}'")
        var = _simple_ident(args[0])
        if var is None:
            return self.report(self.position(args[0]), "argument must be a simple name")
        parts = _map_parts(kind)
        item = _elem(kind) or (parts[0] if parts is not None else celenv.DYN)
        inner = {**env, var: item}
        if name == "map":
            if len(args) == 3:
                self._bool_body(args[1], inner)
            return f"list({self.infer(args[-1], inner)})"
        self._bool_body(args[1], inner)
        return f"list({item})" if name == "filter" else celenv.BOOL

    def _bool_body(self, body: Node, env: Env) -> None:
        kind = self.infer(body, env)
        if kind not in (celenv.BOOL, celenv.DYN):
            self.report(self.position(body), f"expected type 'bool' but found '{shown(kind)}'")

    def _bind(self, args: list[Node], env: Env) -> str:
        if len(args) != 3:
            return self.report(_start(args[0]) if args else 0, "cel.bind() takes 3 arguments")
        var = _simple_ident(args[0])
        if var is None:
            return self.report(self.position(args[0]), "argument must be a simple name")
        return self.infer(args[2], {**env, var: self.infer(args[1], env)})


_OPERATORS = {
    "relation_eq": ("==", "_==_"), "relation_ne": ("!=", "_!=_"), "relation_lt": ("<", "_<_"),
    "relation_le": ("<=", "_<=_"), "relation_gt": (">", "_>_"), "relation_ge": (">=", "_>=_"),
    "relation_in": ("in", "@in"), "addition_add": ("+", "_+_"), "addition_sub": ("-", "_-_"),
    "multiplication_mul": ("*", "_*_"), "multiplication_div": ("/", "_/_"), "multiplication_mod": ("%", "_%_"),
}


_ORDERED = ("string", "bytes", celenv.BOOL, celenv.TIMESTAMP, celenv.DURATION)


def _operator_result(function: str, a: str, b: str) -> str | None:
    """The result type of a binary operator, None when no overload takes these operands."""
    if function in ("_==_", "_!=_"):
        return celenv.BOOL if compatible(a, b) else None
    if function == "@in":
        elem, parts = _elem(b), _map_parts(b)
        if b == celenv.DYN:
            return celenv.BOOL
        if elem is not None:
            return celenv.BOOL if compatible(a, elem) else None
        return celenv.BOOL if parts is not None and compatible(a, parts[0]) else None
    comparison = function in ("_<_", "_<=_", "_>_", "_>=_")
    if celenv.DYN in (a, b):
        return celenv.BOOL if comparison else celenv.DYN
    if comparison:
        ok = (a in celenv.NUMBERS and b in celenv.NUMBERS) or (a == b and a in _ORDERED)
        return celenv.BOOL if ok else None
    if function == "_+_":
        if a == b and a in (*celenv.NUMBERS, "string", "bytes", celenv.DURATION):
            return a
        if _elem(a) is not None and _elem(b) is not None:
            return a if a == b else "list(dyn)"
        return celenv.TIMESTAMP if {a, b} == {celenv.TIMESTAMP, celenv.DURATION} else None
    if function == "_-_":
        if a == b and a in (*celenv.NUMBERS, celenv.DURATION):
            return a
        differences = {(celenv.TIMESTAMP, celenv.TIMESTAMP): celenv.DURATION,
                       (celenv.TIMESTAMP, celenv.DURATION): celenv.TIMESTAMP}
        return differences.get((a, b))
    allowed = ("int", "uint") if function == "_%_" else celenv.NUMBERS
    return a if a == b and a in allowed else None


def shown(kind: str) -> str:
    """A type as cel-go prints it among an overload's arguments (well-known types by their CEL names)."""
    return kind.replace(celenv.DURATION, "duration").replace(celenv.TIMESTAMP, "timestamp")


def _arguments(rest: list[Any]) -> list[Node]:
    if not rest or not isinstance(rest[0], lark.Tree) or rest[0].data != "exprlist":
        return []
    return [cast(Node, c) for c in rest[0].children]


def _simple_ident(node: Any) -> str | None:
    inner = _unwrap(node)
    if isinstance(inner, lark.Tree) and inner.data == "ident":
        return str(cast(lark.Token, inner.children[0]).value)
    return None


def check(source: str, tree: Node) -> tuple[list[Issue], str]:
    """The compile errors of a parsed selector in source order, and its result type."""
    checker = Checker(source)
    result = checker.infer(tree, {})
    return sorted(checker.issues, key=lambda issue: issue.index), result
