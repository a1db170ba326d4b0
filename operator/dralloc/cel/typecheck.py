"""The part of cel-go's type checker that decides whether a selector compiles.

Upstream type-checks every selector when it is compiled: `semver("1.0.0") >= semver("2.0.0")`
("no matching overload for '_>=_'"), `1 == "a"`, `size(1)`, `"a".charAt("b")` fail the claim
at once, with the same message for every device. We infer static types bottom-up over the
parse tree with cel-go's rules and report the same errors at the same positions.

Types are strings as cel-go prints them: `int`, `string`, `list(int)`, `map(string, int)`,
`kubernetes.Quantity`, `net.IP`, `optional_type(dyn)`, ... `dyn` is "unknown until run
time" and matches anything: every device attribute value is `dyn` (upstream declares them
so), and so is whatever we do not model (the element type of `orValue`, `value()`,
`min()`; comprehension results over dyn). Where we cannot know what cel-go would infer,
we say `dyn`, so that we may accept an expression upstream rejects (it then fails or
answers at run time, as before) but never reject one upstream accepts.

Not modelled: parameterised optionals (`optional.of(1).value()` is dyn here, int upstream),
message types, and the type of `type(x)` beyond `type`.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, cast

import lark
from celpy.evaluation import celstr

from dralloc.cel import library_format, library_strings, macros

DYN = "dyn"
# What we do not model: fits anything like dyn, but is never reported (we cannot know what
# cel-go would print) and never counts as `dyn` for the homogeneous-literal rule.
UNKNOWN = "?"
# The type of a subexpression with a type error: like dyn it fits everything (no error
# cascades from it), but cel-go prints it in later errors as !error!.
ERROR = "!error!"
# The element type of an empty literal (`[]`, `{}`): a free type parameter in cel-go, which
# later unifies with anything and prints as dyn.
FREE = "free"
_LOOSE = (DYN, UNKNOWN, FREE, ERROR)
BOOL, INT, UINT, DOUBLE, STRING, BYTES, NULL = "bool", "int", "uint", "double", "string", "bytes", "null"
QUANTITY, SEMVER, IP, CIDR = "kubernetes.Quantity", "kubernetes.Semver", "net.IP", "net.CIDR"
URL, FORMAT = "kubernetes.URL", "kubernetes.NamedFormat"
DURATION, TIMESTAMP, TYPE = "google.protobuf.Duration", "google.protobuf.Timestamp", "type"
OPTIONAL = "optional_type(?)"
# Type parameters in signatures (cel-go's TypeParamType("A")), bound per call.
_PARAMS = frozenset({"A", "B"})
LIST, MAP = "list(dyn)", "map(dyn, dyn)"
_NUMERIC = (INT, UINT, DOUBLE)

# The types of the `device` variable in the 1.37 stored-expressions environment.
_DEVICE_FIELDS = {"driver": STRING, "allowMultipleAllocations": BOOL,
                  "attributes": "map(string, map(string, dyn))",
                  "capacity": f"map(string, map(string, {QUANTITY}))"}
_TYPE_NAMES = frozenset({"int", "uint", "double", "bool", "string", "bytes", "list", "map",
                         "null_type", "type"})


@dataclass(frozen=True)
class Problem:
    """One type error: the message and the 0-based offset in the source it points at."""

    message: str
    offset: int


# --- type algebra -----------------------------------------------------------------------------


def parameters(kind: str) -> list[str]:
    """`map(string, list(int))` -> ["string", "list(int)"]; a type without parameters -> []."""
    start = kind.find("(")
    if start < 0 or not kind.endswith(")"):
        return []
    inner, depth, parts, current = kind[start + 1:-1], 0, [], ""
    for char in inner:
        if char == "," and depth == 0:
            parts.append(current.strip())
            current = ""
            continue
        depth += char == "("
        depth -= char == ")"
        current += char
    return [*parts, current.strip()]


def _base(kind: str) -> str:
    return kind.split("(", 1)[0]


def assignable(declared: str, actual: str) -> bool:
    """Whether a value of type `actual` fits `declared` (dyn fits and accepts everything)."""
    if declared in _LOOSE or actual in _LOOSE:
        return True
    if _base(declared) != _base(actual):
        return False
    return all(assignable(d, a) for d, a in zip(parameters(declared), parameters(actual), strict=False))


def _equivalent(first: str, second: str) -> bool:
    """cel-go's IsEquivalentType for the homogeneous-literal rule: same kinds all the way down
    (`dyn` only matches `dyn`); what we do not know, and free parameters, match anything."""
    if UNKNOWN in (first, second) or FREE in (first, second):
        return True
    if _base(first) != _base(second):
        return False
    return all(_equivalent(a, b) for a, b in zip(parameters(first), parameters(second), strict=False))


def shown(kind: str) -> str:
    """A type as cel-go prints it."""
    return kind.replace(FREE, DYN)


def _join(kinds: list[str]) -> str | None:
    """The common type of list elements / branches; None when they differ (dyn absorbs)."""
    if any(UNKNOWN in k for k in kinds):
        return UNKNOWN
    concrete = [k for k in kinds if k not in (DYN, FREE)]
    if not concrete:
        return DYN if DYN in kinds else FREE
    first = concrete[0]
    if all(k == first for k in concrete):
        return first if len(concrete) == len(kinds) else DYN
    if len(concrete) == len(kinds) and len({_base(k) for k in kinds}) == 1 and parameters(first):
        # list(int) with list(dyn): cel-go joins the parameters (list(dyn)).
        inner = [_join([parameters(k)[i] for k in kinds]) for i in range(len(parameters(first)))]
        if all(i is not None for i in inner):
            return f"{_base(first)}({', '.join(cast(list[str], inner))})"
    if all(assignable(first, k) and assignable(k, first) for k in concrete):
        return DYN
    return None


# --- function signatures ----------------------------------------------------------------------

# name -> [(receiver or None for a global call, argument types, result)]; "*" accepts anything.
_Sig = tuple[str | None, tuple[str, ...], str]
_ANY = "*"


def _members(receiver: str, table: Mapping[str, list[tuple[tuple[str, ...], str]]]) -> dict[str, list[_Sig]]:
    return {name: [(receiver, args, out) for args, out in forms] for name, forms in table.items()}


def _merge(*tables: Mapping[str, list[_Sig]]) -> dict[str, list[_Sig]]:
    merged: dict[str, list[_Sig]] = {}
    for table in tables:
        for name, forms in table.items():
            merged.setdefault(name, []).extend(forms)
    return merged


SIGNATURES: dict[str, list[_Sig]] = _merge(
    {  # CEL's standard functions and conversions (cel-go's overloads; string() also of IPs and CIDRs)
        "size": [(None, (STRING,), INT), (None, (BYTES,), INT), (None, (LIST,), INT), (None, (MAP,), INT),
                 (STRING, (), INT), (BYTES, (), INT), (LIST, (), INT), (MAP, (), INT)],
        "int": [(None, (kind,), INT) for kind in (INT, UINT, DOUBLE, STRING, DURATION, TIMESTAMP)],
        "uint": [(None, (kind,), UINT) for kind in (UINT, INT, DOUBLE, STRING)],
        "double": [(None, (kind,), DOUBLE) for kind in (DOUBLE, INT, UINT, STRING)],
        "string": [(None, (kind,), STRING)
                   for kind in (STRING, BOOL, INT, UINT, DOUBLE, BYTES, DURATION, TIMESTAMP, IP, CIDR)],
        "bytes": [(None, (kind,), BYTES) for kind in (BYTES, STRING)],
        "bool": [(None, (kind,), BOOL) for kind in (BOOL, STRING)],
        "duration": [(None, (STRING,), DURATION)], "timestamp": [(None, (_ANY,), TIMESTAMP)],
        "type": [(None, ("A",), "type(A)")], "dyn": [(None, (_ANY,), DYN)],
        "matches": [(None, (STRING, STRING), BOOL), (STRING, (STRING,), BOOL)],
        "contains": [(STRING, (STRING,), BOOL)], "startsWith": [(STRING, (STRING,), BOOL)],
        "endsWith": [(STRING, (STRING,), BOOL)],
        **{name: [(TIMESTAMP, (), INT), (TIMESTAMP, (STRING,), INT)]
           for name in ("getDate", "getDayOfMonth", "getDayOfWeek", "getDayOfYear", "getFullYear", "getMonth")},
        **{name: [(TIMESTAMP, (), INT), (TIMESTAMP, (STRING,), INT), (DURATION, (), INT)]
           for name in ("getHours", "getMilliseconds", "getMinutes", "getSeconds")},
    },
    {  # Kubernetes quantity and semver libraries
        "quantity": [(None, (STRING,), QUANTITY)], "isQuantity": [(None, (STRING,), BOOL)],
        "sign": [(None, (QUANTITY,), INT)],  # global upstream: sign(q), not q.sign()
        "semver": [(None, (STRING,), SEMVER), (None, (STRING, BOOL), SEMVER)],
        "isSemver": [(None, (STRING,), BOOL), (None, (STRING, BOOL), BOOL)],
    },
    _members(QUANTITY, {
        "isInteger": [((), BOOL)], "asInteger": [((), INT)],
        "asApproximateFloat": [((), DOUBLE)], "add": [((QUANTITY,), QUANTITY), ((INT,), QUANTITY)],
        "sub": [((QUANTITY,), QUANTITY), ((INT,), QUANTITY)], "isGreaterThan": [((QUANTITY,), BOOL)],
        "isLessThan": [((QUANTITY,), BOOL)], "compareTo": [((QUANTITY,), INT)],
    }),
    _members(SEMVER, {
        "major": [((), INT)], "minor": [((), INT)], "patch": [((), INT)],
        "isGreaterThan": [((SEMVER,), BOOL)], "isLessThan": [((SEMVER,), BOOL)], "compareTo": [((SEMVER,), INT)],
    }),
    _members(STRING, {  # cel-go strings extension v2 and Kubernetes' regex library
        "charAt": [((INT,), STRING)], "indexOf": [((STRING,), INT), ((STRING, INT), INT)],
        "lastIndexOf": [((STRING,), INT), ((STRING, INT), INT)], "lowerAscii": [((), STRING)],
        "upperAscii": [((), STRING)], "trim": [((), STRING)],
        "replace": [((STRING, STRING), STRING), ((STRING, STRING, INT), STRING)],
        "split": [((STRING,), "list(string)"), ((STRING, INT), "list(string)")],
        "substring": [((INT,), STRING), ((INT, INT), STRING)], "format": [((LIST,), STRING)],
        "find": [((STRING,), STRING)], "findAll": [((STRING,), "list(string)"), ((STRING, INT), "list(string)")],
    }),
    {"strings.quote": [(None, (STRING,), STRING)]},
    _members(LIST, {  # Kubernetes' list library, strings' join, sets, optionals on lists
        "isSorted": [((), BOOL)], "sum": [((), "A")], "min": [((), "A")], "max": [((), "A")],
    }),
    _members("list(A)", {
        "indexOf": [(("A",), INT)], "lastIndexOf": [(("A",), INT)],
        "first": [((), "optional_type(A)")], "last": [((), "optional_type(A)")],
    }),
    _members("list(string)", {"join": [((), STRING), ((STRING,), STRING)]}),
    _members("list(A)", {  # cel-go's lists extension, version 3
        "slice": [((INT, INT), "list(A)")], "reverse": [((), "list(A)")], "distinct": [((), "list(A)")],
    }),
    {"flatten": [("list(list(A))", (), "list(A)"), ("list(dyn)", (INT,), "list(dyn)")],
     "sort": [(f"list({kind})", (), f"list({kind})")
              for kind in (INT, UINT, DOUBLE, BOOL, STRING, BYTES, DURATION, TIMESTAMP)],
     "lists.range": [(None, (INT,), "list(int)")]},
    _members("list(optional_type(A))", {"unwrapOpt": [((), "list(A)")]}),
    {"includes": [(_ANY, (_ANY,), BOOL)]},  # DRA's includes takes any receiver
    {name: [(None, ("list(A)", "list(A)"), BOOL)] for name in ("sets.contains", "sets.equivalent", "sets.intersects")},
    {  # Kubernetes' IP and CIDR libraries
        "ip": [(None, (STRING,), IP), (CIDR, (), IP)], "cidr": [(None, (STRING,), CIDR)],
        "isIP": [(None, (STRING,), BOOL)], "isCIDR": [(None, (STRING,), BOOL)],
        "ip.isCanonical": [(None, (STRING,), BOOL)],
    },
    _members(IP, {name: [((), BOOL)] for name in (
        "isUnspecified", "isLoopback", "isLinkLocalMulticast", "isLinkLocalUnicast", "isGlobalUnicast")}),
    _members(IP, {"family": [((), INT)]}),
    _members(CIDR, {"containsIP": [((STRING,), BOOL), ((IP,), BOOL)],
                    "containsCIDR": [((STRING,), BOOL), ((CIDR,), BOOL)],
                    "prefixLength": [((), INT)], "masked": [((), CIDR)],
                    "isMask": [((), BOOL)]}),
    {  # Kubernetes' URLs library
        "url": [(None, (STRING,), URL)], "isURL": [(None, (STRING,), BOOL)],
    },
    _members(URL, {**{name: [((), STRING)] for name in (
        "getScheme", "getHost", "getHostname", "getPort", "getEscapedPath")},
        "getQuery": [((), "map(string, list(string))")]}),
    {  # Kubernetes' format library
        "format.named": [(None, (STRING,), f"optional_type({FORMAT})")],
        **{name: [(None, (), FORMAT)] for name in library_format.GLOBALS if name != "format.named"},
        "validate": [(FORMAT, (STRING,), "optional_type(list(string))")],
    },
    {  # optional types
        "optional.of": [(None, ("A",), "optional_type(A)")],
        "optional.ofNonZeroValue": [(None, ("A",), "optional_type(A)")],
        "optional.none": [(None, (), OPTIONAL)], "optional.unwrap": [(None, ("list(optional_type(A))",), "list(A)")],
    },
    _members("optional_type(A)", {"hasValue": [((), BOOL)], "value": [((), "A")],
                                  "or": [(("optional_type(A)",), "optional_type(A)")], "orValue": [(("A",), "A")]}),
)


# Functions whose every overload SIGNATURES lists, so that another argument count is a type
# error (for the rest an arity not listed is trusted).
_EVERY_ARITY = frozenset({"url", "isURL", "getScheme", "getHost", "getHostname", "getPort", "getEscapedPath",
                          "getQuery", "validate", *library_format.GLOBALS})


def _unify(declared: str, actual: str, bindings: dict[str, str]) -> bool:
    """Whether `actual` fits `declared`, binding its type parameters (first binding wins;
    a parameter bound to dyn stays dyn, so the result is never more precise than we know)."""
    if declared in (_ANY, DYN):
        return True
    if declared in _PARAMS:
        bound = bindings.get(declared)
        if bound is None:
            bindings[declared] = actual
            return True
        return assignable(bound, actual)
    if actual in _LOOSE:
        return True
    if _base(declared) != _base(actual):
        return False
    return all(_unify(d, a, bindings) for d, a in zip(parameters(declared), parameters(actual), strict=False))


def _substitute(kind: str, bindings: Mapping[str, str]) -> str:
    if kind in _PARAMS:
        return bindings.get(kind, UNKNOWN)
    inner = parameters(kind)
    if not inner:
        return kind
    return f"{_base(kind)}({', '.join(_substitute(p, bindings) for p in inner)})"


def call_result(name: str, receiver: str | None, args: list[str]) -> tuple[str, bool]:
    """(result type, whether some overload accepts these static types)."""
    declared = SIGNATURES.get(name, [])
    if declared and not any((f[0] is None) == (receiver is None) for f in declared):
        # A global function called as a method (`q.sign()`) or the reverse: no such overload.
        return UNKNOWN, False
    forms = [f for f in declared if (f[0] is None) == (receiver is None) and len(f[1]) == len(args)]
    if not forms and name in _EVERY_ARITY:
        return UNKNOWN, False
    if not forms:
        # An arity we do not model (the checker has already refused unknown names): trust it.
        return UNKNOWN, True
    results = set()
    for form_receiver, form_args, out in forms:
        bindings: dict[str, str] = {}
        if receiver is not None and not _unify(cast(str, form_receiver), receiver, bindings):
            continue
        if all(_unify(d, a, bindings) for d, a in zip(form_args, args, strict=True)):
            results.add(_substitute(out, bindings))
    if not results:
        return UNKNOWN, False
    return (results.pop() if len(results) == 1 else UNKNOWN), True


def _applied(receiver: str | None, args: list[str]) -> str:
    listed = ", ".join(args)
    return f"{receiver}.({listed})" if receiver is not None else f"({listed})"


# --- operators --------------------------------------------------------------------------------

_ORDERED = frozenset({INT, UINT, DOUBLE, STRING, BYTES, BOOL, TIMESTAMP, DURATION})


def _ordering(left: str, right: str) -> str | None:
    if UNKNOWN in (left, right) or ERROR in (left, right) or NULL in (left, right):
        return BOOL  # upstream lets null < null through to run time
    if DYN in (left, right):
        # dyn matches any overload's parameter, but the other operand must fit one.
        other = right if left == DYN else left
        return BOOL if other == DYN or other in _ORDERED else None
    if left in _NUMERIC and right in _NUMERIC:
        return BOOL  # cross-type numeric comparisons are on in upstream's environment
    return BOOL if left == right and left in _ORDERED else None


def _equality(left: str, right: str) -> str | None:
    return BOOL if assignable(left, right) else None


def _arithmetic(symbol: str) -> Callable[[str, str], str | None]:
    def rule(left: str, right: str) -> str | None:
        if UNKNOWN in (left, right) or ERROR in (left, right):
            return UNKNOWN
        if DYN in (left, right):
            other = right if left == DYN else left
            allowed = {"+": (*_NUMERIC, STRING, BYTES, DURATION, TIMESTAMP), "-": (*_NUMERIC, DURATION, TIMESTAMP),
                       "%": (INT, UINT)}.get(symbol, _NUMERIC)
            return UNKNOWN if other == DYN or other in allowed or (_base(other) == "list" and symbol == "+") else None
        if symbol == "+":
            if left == right and left in (INT, UINT, DOUBLE, STRING, BYTES, DURATION):
                return left
            if _base(left) == "list" and _base(right) == "list":
                joined = _join([parameters(left)[0], parameters(right)[0]])
                return f"list({joined})" if joined is not None else None
            if {left, right} == {TIMESTAMP, DURATION}:
                return TIMESTAMP
            return None
        if symbol == "-":
            if left == right and left in (INT, UINT, DOUBLE, DURATION):
                return left
            if left == TIMESTAMP and right in (TIMESTAMP, DURATION):
                return DURATION if right == TIMESTAMP else TIMESTAMP
            return None
        allowed = (INT, UINT) if symbol == "%" else _NUMERIC
        return left if left == right and left in allowed else None

    return rule


_BINARY: dict[str, tuple[str, str, Callable[[str, str], str | None]]] = {
    "relation_eq": ("==", "_==_", _equality), "relation_ne": ("!=", "_!=_", _equality),
    "relation_lt": ("<", "_<_", _ordering), "relation_le": ("<=", "_<=_", _ordering),
    "relation_gt": (">", "_>_", _ordering), "relation_ge": (">=", "_>=_", _ordering),
    "addition_add": ("+", "_+_", _arithmetic("+")), "addition_sub": ("-", "_-_", _arithmetic("-")),
    "multiplication_mul": ("*", "_*_", _arithmetic("*")), "multiplication_div": ("/", "_/_", _arithmetic("/")),
    "multiplication_mod": ("%", "_%_", _arithmetic("%")),
}

_LITERALS = {"INT_LIT": INT, "UINT_LIT": UINT, "FLOAT_LIT": DOUBLE, "STRING_LIT": STRING,
             "MLSTRING_LIT": STRING, "BYTES_LIT": BYTES, "BOOL_LIT": BOOL, "NULL_LIT": NULL}


# --- the inference ----------------------------------------------------------------------------


class _Inference:
    def __init__(self, text: str, removed: frozenset[str] = frozenset()) -> None:
        self.text = text
        # Functions the release lacks: undeclared (checking reports them), so never an overload error.
        self.removed = removed
        self.problems: list[Problem] = []
        # Mixed list/map literals: cel-go's AST validator, which runs only after the type
        # check succeeded, so these count only when there are no other problems.
        self.literal_problems: list[Problem] = []
        # Constant regexes of find/findAll/matches(s, re) that do not compile: upstream fails
        # when it builds the program, after everything else passed.
        self.program_problems: list[Problem] = []
        # Inside `format`'s arguments, which cel-go exempts from the homogeneous-literal rule.
        self.exempt = False

    # positions ---------------------------------------------------------------------------

    # Trees from `quickparse` carry no positions: their problems point at offset 0, and
    # the caller re-parses with positions before reporting anything.

    def start(self, node: Any) -> int:
        holder = node if isinstance(node, lark.Token) else getattr(node, "meta", None)
        return int(getattr(holder, "start_pos", None) or 0)

    def end(self, node: Any) -> int:
        holder = node if isinstance(node, lark.Token) else getattr(node, "meta", None)
        return int(getattr(holder, "end_pos", None) or 0)

    def find(self, symbol: str, after: Any) -> int:
        """The offset of `symbol` after a node (an operator, `(`, `[`, `?`)."""
        offset = self.text.find(symbol, self.end(after))
        return offset if offset >= 0 else self.start(after)

    def position(self, node: Any) -> int:
        """Where cel-go puts an expression: its operator, `(` of a call, `.` of a selection."""
        inner = _unwrapped(node)
        if not isinstance(inner, lark.Tree):
            return self.start(inner)
        data = str(inner.data)
        if data in ("ident_arg", "member_dot_arg"):
            return self.find("(", inner.children[0 if data == "ident_arg" else 1])
        if data in ("member_dot", "member_dot_opt"):
            return self.find(".", inner.children[0])
        if data == "member_index":
            return self.find("[", inner.children[0])
        if data in ("relation", "addition", "multiplication") and len(inner.children) == 2:
            operation = cast(lark.Tree[Any], inner.children[0])
            symbol = "in" if operation.data == "relation_in" else _BINARY[str(operation.data)][0]
            return self.find(symbol, operation.children[0])
        if data in ("conditionalor", "conditionaland") and len(inner.children) == 2:
            return self.find("||" if data == "conditionalor" else "&&", inner.children[0])
        if data == "expr" and len(inner.children) == 3:
            return self.find("?", inner.children[0])
        return self.start(inner)

    def report(self, message: str, offset: int) -> None:
        self.problems.append(Problem(message, offset))

    def no_overload(self, function: str, applied: str, offset: int) -> str:
        if UNKNOWN in applied:
            return UNKNOWN  # we could not word it as cel-go does; leave it to run time
        self.report(f"found no matching overload for '{function}' applied to '{shown(applied)}'", offset)
        return ERROR

    # walking -----------------------------------------------------------------------------

    def infer(self, node: Any, scope: Mapping[str, str]) -> str:
        if not isinstance(node, lark.Tree):
            return UNKNOWN
        data = str(node.data)
        if len(node.children) == 1 and data in ("expr", "conditionalor", "conditionaland", "relation",
                                                "addition", "multiplication", "unary", "member", "primary"):
            return self.infer(node.children[0], scope)
        handler = getattr(self, f"_{data}", None)
        if handler is None:
            for child in node.children:
                self.infer(child, scope)
            return UNKNOWN
        return cast(str, handler(node, scope))

    def _literal(self, node: lark.Tree[Any], scope: Mapping[str, str]) -> str:
        return _LITERALS.get(cast(lark.Token, node.children[0]).type, UNKNOWN)

    def _paren_expr(self, node: lark.Tree[Any], scope: Mapping[str, str]) -> str:
        return self.infer(node.children[0], scope)

    def _ident(self, node: lark.Tree[Any], scope: Mapping[str, str]) -> str:
        name = str(cast(lark.Token, node.children[0]).value)
        if name in scope:
            return scope[name]
        if name == "device":
            return "kubernetes.DRADevice"
        # `int` as a value is type(int); we do not model its parameter (never reported).
        return "type(?)" if name in _TYPE_NAMES else UNKNOWN

    def _expr(self, node: lark.Tree[Any], scope: Mapping[str, str]) -> str:
        if len(node.children) != 3:  # an optional element `?e` (the checker placed it)
            return self.infer(node.children[0], scope)
        kinds = [self.infer(c, scope) for c in node.children]
        if kinds[0] not in (BOOL, *_LOOSE) or _join(kinds[1:]) is None:
            return self.no_overload("_?_:_", f"({', '.join(kinds)})", self.find("?", node.children[0]))
        return cast(str, _join(kinds[1:]))

    def _logic(self, node: lark.Tree[Any], scope: Mapping[str, str]) -> str:
        for child in node.children:
            kind = self.infer(child, scope)
            if kind not in (BOOL, *_LOOSE) and UNKNOWN not in kind:
                self.report(f"expected type 'bool' but found '{kind}'", self.position(child))
        return BOOL

    _conditionalor = _logic
    _conditionaland = _logic

    def _binary(self, node: lark.Tree[Any], scope: Mapping[str, str]) -> str:
        operation, right_tree = node.children
        left_tree = cast(lark.Tree[Any], operation).children[0]
        left, right = self.infer(left_tree, scope), self.infer(right_tree, scope)
        op_name = str(cast(lark.Tree[Any], operation).data)
        if op_name == "relation_in":
            container = _base(right)
            ok = (right in _LOOSE or (container == "list" and assignable(parameters(right)[0], left))
                  or (container == "map" and assignable(parameters(right)[0], left)))
            if not ok:
                return self.no_overload("@in", f"({left}, {right})", self.find("in", left_tree))
            return BOOL
        symbol, function, rule = _BINARY[op_name]
        outcome = rule(left, right)
        if outcome is None:
            return self.no_overload(function, f"({left}, {right})", self.find(symbol, left_tree))
        return outcome

    _relation = _binary
    _addition = _binary
    _multiplication = _binary

    def _unary(self, node: lark.Tree[Any], scope: Mapping[str, str]) -> str:
        sign, operand = node.children
        kind = self.infer(operand, scope)
        if cast(lark.Tree[Any], sign).data == "unary_not":
            return BOOL if kind in (BOOL, *_LOOSE) else self.no_overload("!_", f"({kind})", self.start(node))
        if kind in (INT, DOUBLE, *_LOOSE):
            return kind
        return self.no_overload("-_", f"({kind})", self.start(node))

    def _list_lit(self, node: lark.Tree[Any], scope: Mapping[str, str]) -> str:
        elements = cast(list[Any], node.children[0].children) if node.children else []
        kinds = []
        for element in elements:
            inner = macros.optional_element(element)
            kind = self.infer(inner if inner is not None else element, scope)
            if inner is not None:
                kind = UNKNOWN  # the optional's value type is not modelled
            kinds.append(kind)
        return self._aggregate("list", [kinds], elements)

    def _map_lit(self, node: lark.Tree[Any], scope: Mapping[str, str]) -> str:
        inits = cast(list[Any], node.children[0].children) if node.children else []
        keys: list[str] = []
        values: list[str] = []
        optional_entry = False
        for position, child in enumerate(inits):
            if position % 2 == 0:
                inner = macros.optional_element(child)
                optional_entry = inner is not None
                keys.append(self.infer(inner if inner is not None else child, scope))
                continue
            kind = self.infer(child, scope)
            if optional_entry:  # `{?k: o}` holds o's value
                kind = parameters(kind)[0] if _base(kind) == "optional_type" else UNKNOWN
            values.append(kind)
        return self._aggregate("map", [keys, values], inits)

    def _aggregate(self, kind: str, columns: list[list[str]], nodes: list[Any]) -> str:
        joined = []
        for column_index, column in enumerate(columns):
            common = _join(column)
            first = column[0] if column else FREE
            mixed = next((i for i, other in enumerate(column) if not _equivalent(first, other)), None)
            if mixed is not None and not self.exempt:
                # cel-go's homogeneous aggregate literal rule: the first element sets the type.
                node = nodes[mixed * len(columns) + column_index]
                self.literal_problems.append(Problem(
                    f"expected type '{shown(first)}' but found '{shown(column[mixed])}'", self.position(node)))
            if common is None:
                common = DYN
            joined.append(common)
        return f"{kind}({', '.join(joined)})"

    def _member_dot(self, node: lark.Tree[Any], scope: Mapping[str, str]) -> str:
        target = self.infer(node.children[0], scope)
        field = str(cast(lark.Token, node.children[1]).value)
        if target == "kubernetes.DRADevice":
            return _DEVICE_FIELDS.get(field, UNKNOWN)
        if _base(target) == "map":
            return parameters(target)[1]
        if _base(target) == "optional_type":
            return OPTIONAL
        return DYN if target == DYN else UNKNOWN

    def _member_dot_opt(self, node: lark.Tree[Any], scope: Mapping[str, str]) -> str:
        target = self.infer(node.children[0], scope)
        if _base(target) == "map":
            return f"optional_type({parameters(target)[1]})"
        return OPTIONAL

    def _member_index(self, node: lark.Tree[Any], scope: Mapping[str, str]) -> str:
        target_tree, index_tree = node.children
        target = self.infer(target_tree, scope)
        inner = macros.optional_element(index_tree)
        key = self.infer(inner if inner is not None else index_tree, scope)
        base = _base(target)
        if inner is not None:
            return f"optional_type({parameters(target)[-1]})" if base in ("list", "map") else OPTIONAL
        if target in _LOOSE or key in _LOOSE:
            return parameters(target)[-1] if base in ("list", "map") else target if target in _LOOSE else UNKNOWN
        if base == "list" and key in (INT, UINT):
            return parameters(target)[0]
        if base == "map" and assignable(parameters(target)[0], key):
            return parameters(target)[1]
        if base == "optional_type":
            return OPTIONAL
        return self.no_overload("_[_]", f"({target}, {key})", self.find("[", target_tree))

    def _ident_arg(self, node: lark.Tree[Any], scope: Mapping[str, str]) -> str:
        token = cast(lark.Token, node.children[0])
        name = str(token.value)
        args = _arguments(node.children[1:])
        if name == "has":
            for arg in args:
                self.infer(arg, scope)
            return BOOL
        kinds = [self.infer(a, scope) for a in args]
        result, ok = call_result(name, None, kinds)
        if not ok:
            return self.no_overload(name, _applied(None, kinds), self.find("(", token))
        self._validate_literals(name, None, args)
        return result

    def _member_dot_arg(self, node: lark.Tree[Any], scope: Mapping[str, str]) -> str:
        member, token = node.children[0], cast(lark.Token, node.children[1])
        name = str(token.value)
        args = _arguments(node.children[2:])
        if macros.is_cel_bind(node) and "cel" not in scope and len(args) == 3:
            var = macros.simple_ident(args[0]) or ""
            return self.infer(args[2], {**scope, var: self.infer(args[1], scope)})
        qualified = macros.qualified_name(node)
        if qualified is not None and macros.simple_ident(member) not in scope:
            kinds = [self.infer(a, scope) for a in args]
            result, ok = call_result(qualified, None, kinds)
            return result if ok else self.no_overload(qualified, _applied(None, kinds), self.find("(", token))
        target = self.infer(member, scope)
        if (name in macros.CEL_MACROS and (len(args) == 2 or (name == "map" and len(args) == 3))) \
                or len(args) in macros.TWO_VARIABLE_MACROS.get(name, ()):
            return self._comprehension(name, member, target, args, scope, self.find("(", token))
        if name in macros.OPTIONAL_MACROS and len(args) == 2:
            var = macros.simple_ident(args[0]) or ""
            self.infer(args[1], {**scope, var: UNKNOWN})
            return OPTIONAL
        format_list = _list_literal(args[0]) if name == "format" and len(args) == 1 else None
        if format_list is not None:
            # `format`'s argument list is exempt from the homogeneous-literal rule, and a literal
            # format string with a literal list is checked clause by clause (cel-go's validator).
            outer, self.exempt = self.exempt, True
            kinds = [self._list_lit(format_list, scope)]
            self.exempt = outer
            template = _string_literal(member)
            if template is not None:
                self._check_format(template, format_list, scope, self.find("(", token))
        else:
            kinds = [self.infer(a, scope) for a in args]
        if name in self.removed:
            return UNKNOWN
        result, ok = call_result(name, target, kinds)
        if not ok:
            return self.no_overload(name, _applied(target, kinds), self.find("(", token))
        self._validate_literals(name, target, args)
        return result

    def _validate_literals(self, name: str, receiver: str | None, args: list[lark.Tree[Any]]) -> None:
        """cel-go's literal validators (duration, timestamp, matches) and the regex library's
        compile of constant patterns."""
        if receiver is None and name in ("duration", "timestamp") and len(args) == 1:
            text = _string_literal(args[0])
            if text is not None and not (_valid_duration(text) if name == "duration" else _valid_timestamp(text)):
                self.literal_problems.append(Problem(f"invalid {name} argument", self.position(args[0])))
            return
        pattern_at = {"matches": 1 if receiver is None else 0, "find": 0, "findAll": 0}.get(name)
        if pattern_at is None or len(args) <= pattern_at:
            return
        # The validator sees literals only; the program builder also sees through dyn().
        literal = _string_literal(args[pattern_at])
        pattern = literal if literal is not None else _constant_string(args[pattern_at])
        if pattern is None:
            return
        try:
            library_strings.compiled_regex(pattern)
        except ValueError as exc:
            if name == "matches" and receiver is not None and literal is not None:
                self.literal_problems.append(Problem("invalid matches argument", self.position(args[pattern_at])))
            else:
                self.program_problems.append(Problem(f"program instantiation failed: {exc}", -1))

    def _scratch(self) -> _Inference:
        """An inference whose problems are dropped (the main pass reports them)."""
        scratch = _Inference(self.text)
        scratch.exempt = True
        return scratch

    def _check_format(self, template: str, arguments: lark.Tree[Any], scope: Mapping[str, str],
                      call: int) -> None:
        elements = [cast(lark.Tree[Any], e) for e in arguments.children[0].children] if arguments.children else []
        i = index = 0
        while i < len(template):
            if template[i] != "%":
                i += 1
                continue
            if template[i + 1:i + 2] == "%":
                i += 2
                continue
            if i + 1 >= len(template):
                self.report("unexpected end of string", call)
                return
            if index >= len(elements):
                self.report(f"index {index} out of range", call)
                return
            try:
                i, verb, _ = library_strings.parse_clause(template, i)
            except ValueError as exc:
                self.report(str(exc), call)
                return
            problem = self._clause_problem(verb, elements[index], scope)
            if problem is not None:
                self.report(f"error during formatting: {problem[0]}", problem[1])
                return
            index += 1
        if len(elements) > index:
            self.report(f"too many arguments supplied to string.format (expected {index}, got {len(elements)})", call)

    def _clause_problem(self, verb: str, element: lark.Tree[Any], scope: Mapping[str, str]) -> tuple[str, int] | None:
        kind = self._scratch().infer(element, scope)
        if kind in _LOOSE:
            return None
        if verb == "s":
            return self._string_problem(element, kind, scope)
        allowed, message = _CLAUSE_KINDS[verb]
        return None if _base(kind) in allowed else (f"{message}, was given {_base(kind)}", self.position(element))

    def _string_problem(self, element: Any, kind: str, scope: Mapping[str, str]) -> tuple[str, int] | None:
        if kind not in _LOOSE and _base(kind) not in _STRING_KINDS:
            return f"{_STRING_CLAUSE}, was given {_base(kind)}", self.position(element)
        inner = _unwrapped(element)
        if isinstance(inner, lark.Tree) and inner.data in ("list_lit", "map_lit") and inner.children:
            for child in cast(lark.Tree[Any], inner.children[0]).children:
                child_kind = self._scratch().infer(child, scope)
                problem = self._string_problem(child, child_kind, scope)
                if problem is not None:
                    return problem
        return None

    def _comprehension(self, name: str, member: Any, target: str, args: list[lark.Tree[Any]],
                       scope: Mapping[str, str], call: int) -> str:
        base = _base(target)
        if base not in ("list", "map") and target not in _LOOSE:
            self.report(f"expression of type '{target}' cannot be range of a comprehension "
                        "(must be list, map, or dynamic)", self.position(member))
            return UNKNOWN
        one_variable = name in macros.CEL_MACROS and (len(args) == 2 or name == "map")
        if one_variable:  # the element of a list, the key of a map
            element = parameters(target)[0] if base in ("list", "map") else _loose(target)
            variables = {macros.simple_ident(args[0]) or "": element}
        else:
            first = INT if base == "list" else parameters(target)[0] if base == "map" else _loose(target)
            second = parameters(target)[-1] if base in ("list", "map") else _loose(target)
            variables = {macros.simple_ident(args[0]) or "": first, macros.simple_ident(args[1]) or "": second}
        inner = {**scope, **variables}
        kinds = [self.infer(a, inner) for a in args[len(variables):]]
        body = kinds[-1]
        known = body not in (BOOL, *_LOOSE) and UNKNOWN not in body
        if name == "filter":
            result = f"list({next(iter(variables.values()))})"
            if known:  # cel-go expands filter to `pred ? accu + [x] : accu`, placed at the call
                self.no_overload("_?_:_", f"({body}, {result}, {result})", call)
            return result
        if name in ("all", "exists", "exists_one", "existsOne"):
            if known:  # cel-go types the loop step `accu && pred` (or `||`, `?:`)
                self.report(f"expected type 'bool' but found '{body}'", self.position(args[-1]))
            return BOOL
        if name == "sortBy":
            return target
        if name in ("map", "transformList"):
            return f"list({body})"
        if name == "transformMap":
            return f"map({next(iter(variables.values()))}, {body})"
        return MAP  # transformMapEntry


_WRAPPERS = frozenset({"expr", "conditionalor", "conditionaland", "relation", "addition",
                       "multiplication", "unary", "member", "primary"})


# Go's time.ParseDuration syntax (cel-go's duration() literal check), and RFC 3339 as Go's
# time.Parse(time.RFC3339, ...) reads it (cel-go's timestamp() literal check).
_DURATION = re.compile(r"[-+]?(?:0|(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:ns|us|\u00b5s|\u03bcs|ms|s|m|h))+)")
_TIMESTAMP = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})(\.[0-9]+)?"
                        r"(Z|[+-]([0-9]{2}):([0-9]{2}))")


def _valid_duration(text: str) -> bool:
    return _DURATION.fullmatch(text) is not None


def _valid_timestamp(text: str) -> bool:
    match = _TIMESTAMP.fullmatch(text)
    if match is None:
        return False
    year, month, day, hour, minute, second = (int(g) for g in match.groups()[:6])
    try:
        datetime.datetime(year, month, day, hour, minute, second)
    except ValueError:
        return False
    return match.group(9) is None or (int(match.group(9)) < 24 and int(match.group(10)) < 60)


def _loose(target: str) -> str:
    """The element type of a collection we know nothing about: dyn's elements are dyn."""
    return DYN if target == DYN else UNKNOWN


def _unwrapped(node: Any) -> Any:
    """Below the single-child rule wrappers and parentheses (cel-go's tree has neither)."""
    while isinstance(node, lark.Tree) and (node.data in _WRAPPERS or node.data == "paren_expr") \
            and len(node.children) == 1:
        node = node.children[0]
    return node


def _list_literal(node: Any) -> lark.Tree[Any] | None:
    inner = _unwrapped(node)
    return inner if isinstance(inner, lark.Tree) and inner.data == "list_lit" else None


def _string_literal(node: Any) -> str | None:
    inner = _unwrapped(node)
    if isinstance(inner, lark.Tree) and inner.data == "literal":
        token = cast(lark.Token, inner.children[0])
        if token.type in ("STRING_LIT", "MLSTRING_LIT"):
            return str(celstr(token))
    return None


def _constant_string(node: Any) -> str | None:
    """A string literal, possibly inside dyn(): what cel-go's planner treats as a constant."""
    inner = _unwrapped(node)
    if isinstance(inner, lark.Tree) and inner.data == "ident_arg" and len(inner.children) == 2 \
            and str(cast(lark.Token, inner.children[0]).value) == "dyn":
        arguments = cast(lark.Tree[Any], inner.children[1]).children
        return _constant_string(arguments[0]) if len(arguments) == 1 else None
    if isinstance(inner, lark.Tree) and inner.data == "paren_expr":
        return _constant_string(inner.children[0])
    return _string_literal(inner)


# What each format clause accepts at compile time (cel-go's stringFormatChecker), by type kind.
_CLAUSE_KINDS = {
    "d": ((INT, UINT), "decimal clause can only be used on integers"),
    "f": ((DOUBLE, STRING), "fixed-point clause can only be used on doubles"),
    "e": ((DOUBLE, STRING), "scientific clause can only be used on doubles"),
    "b": ((INT, UINT, BOOL), "only integers and bools can be formatted as binary"),
    "x": ((INT, UINT, STRING, BYTES), "only integers, byte buffers, and strings can be formatted as hex"),
    "X": ((INT, UINT, STRING, BYTES), "only integers, byte buffers, and strings can be formatted as hex"),
    "o": ((INT, UINT), "octal clause can only be used on integers"),
}
_STRING_KINDS = frozenset({"list", "map", INT, UINT, DOUBLE, BOOL, STRING, TIMESTAMP, BYTES, DURATION, TYPE, NULL})
_STRING_CLAUSE = ("string clause can only be used on strings, bools, bytes, ints, doubles, maps, lists, types, "
                  "durations, and timestamps")


def _arguments(rest: list[Any]) -> list[lark.Tree[Any]]:
    if not rest:
        return []
    return [cast(lark.Tree[Any], c) for c in cast(lark.Tree[Any], rest[0]).children]


def infer(tree: lark.Tree[Any], text: str, *, checked: bool = True,
          removed: frozenset[str] = frozenset()) -> tuple[str, list[Problem]]:
    """The static type of a selector and the type errors in it.

    `checked` False: the selector has name errors (undeclared references), which cel-go's
    checker reports together with the type errors; the validators and the program builder,
    which run only after a successful check, are then left out.
    """
    inference = _Inference(text, removed)
    kind = inference.infer(tree, {})
    if not checked:
        return kind, inference.problems
    return kind, inference.problems or inference.literal_problems or inference.program_problems
