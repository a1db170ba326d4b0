"""Plain-Python closures for the common selectors, equivalent to the celpy program.

Most selectors are a handful of comparisons over one device's attributes and
capacity joined by `&&`/`||`. Running them through celpy costs more than the
allocator can spend per device: the device must first be converted to celtypes
values and a scope, and every operation goes through celpy's dispatch. This
module compiles the checked parse tree of such an expression into nested
closures that read the device's *plain* form (`DeviceEnv.attributes` etc.).

The celpy program stays the reference; the closures are built to compute
exactly what it computes, errors included, by one rule: a closure handles
only the case where its operands have the exact plain types it expects
(`str == str`, `Quantity.compareTo(Quantity)`, ...) and otherwise converts its
operands with `devices.to_cel` and calls the *same* function the transpiled
program would call (`operators.equal`, `functions.FUNCTIONS[name]`, ...), then
converts the result back with `from_cel`. So heterogeneous equality, type
mismatches and their "no such overload" messages come from the reference code
itself. Errors are exceptions raised in the same order as in the transpiled
code; where that code turns them into error *values* (`&&`, `||`, `?:`,
`has`) the closures do too, with celpy's own `result` so the values are the
same, and error values reaching an operator are handed to the reference
function unchanged, as they would be there.

Supported: `device.driver`, `device.allowMultipleAllocations`,
`device.attributes["d"].id` and `["d"]["id"]` (likewise `capacity`), string,
int, double and bool literals, lists of literals, `==`, `!=`, `<`, `<=`, `>`,
`>=`, `in` (with a domain map, `device.attributes`, a list), `&&`, `||`, `!`,
`?:`, parentheses, `has(device.attributes["d"].id)`, `dyn(x)`, `quantity("...")`,
`semver("...")` (also with a bool literal), `isQuantity`, `isSemver`, `size`,
`matches`, and the members `compareTo`, `isGreaterThan`, `isLessThan`, `sign`,
`isInteger`, `asInteger`, `asApproximateFloat`, `add`, `sub`, `major`, `minor`,
`patch`, `includes`, `startsWith`, `endsWith`, `contains`, `matches`,
`lowerAscii`, `upperAscii`, `size`; the URLs library (`url`, `isURL`, `getScheme`,
`getHost`, `getHostname`, `getPort`, `getEscapedPath`, `getQuery`) and the Format library
(`format.named`, `format.<name>()`, `validate`) with the optional's `hasValue` and `value`.
Anything else (macros, `cel.bind`, arithmetic, uint/bytes/null literals, maps, other
optional functions and syntax, the IP/CIDR, sets, strings' format and lists-extension
functions, other functions) is not compiled and the selector runs on celpy.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import lark
from celpy import celtypes
from celpy.evaluation import CELEvalError, celstr, result

from dralloc.cel import functions, macros, operators
from dralloc.cel.devices import DeviceEnv, from_cel, to_cel
from dralloc.cel.library_semver import Semver
from dralloc.model.quantities import Quantity

Closure = Callable[[DeviceEnv], Any]

# What celpy's `result` turns into error values; anything else propagates.
CAUGHT = (ValueError, KeyError, TypeError, ZeroDivisionError, OverflowError, IndexError, NameError)

_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1

_MISSING = object()
_EMPTY: dict[str, Any] = {}

# Operand types for which Python's operator is CEL's: same exact type on both sides.
_EQUALITY_TYPES = frozenset({str, int, bool, float, Semver, Quantity})
_ORDERING_TYPES = frozenset({str, int, bool, float})

_DEVICE_FIELDS = {"driver": "driver", "allowMultipleAllocations": "allow_multiple_allocations"}
_DOMAIN_FIELDS = frozenset({"attributes", "capacity"})

_GLOBALS = frozenset({"quantity", "semver", "isQuantity", "isSemver", "size", "matches", "sign", "url", "isURL"})
_MEMBERS = frozenset({
    "compareTo", "isGreaterThan", "isLessThan", "isInteger", "asInteger", "asApproximateFloat",
    "add", "sub", "major", "minor", "patch", "includes", "startsWith", "endsWith", "contains", "matches",
    "lowerAscii", "upperAscii", "size",
    "getScheme", "getHost", "getHostname", "getPort", "getEscapedPath", "getQuery", "validate", "hasValue", "value",
})
# Namespaced functions compiled as calls: the format library's (`format.dns1123Label()`, `format.named(s)`).
_QUALIFIED = frozenset(name for name in functions.QUALIFIED_FUNCTIONS if name.startswith("format."))

_WRAPPERS = frozenset({"expr", "conditionalor", "conditionaland", "relation", "addition",
                       "multiplication", "unary", "member", "primary"})


class Unsupported(Exception):
    """The expression uses something outside the compiled subset."""


def error_value(exc: BaseException) -> Any:
    """The CELEvalError celpy's `result` makes of an exception (or what it raises instead)."""

    def reraise(_: Any) -> Any:
        raise exc

    return result(cast(Any, None), reraise)


def compile_tree(tree: lark.Tree[Any]) -> Closure | None:
    """A closure computing what the checked tree's celpy program computes, or None."""
    try:
        node = _compile(tree)
    except Exception:
        # Unsupported, too deep, or anything unforeseen: the celpy program is always correct.
        return None
    if node.kind != "value":
        return None
    return node.fn


# What of a device a compiled selector reads: ("device", field) for `device.driver` and
# `device.allowMultipleAllocations`, (field, domain, id) for `device.attributes["d"].id`
# (likewise `capacity`).
Read = tuple[str, ...]


def device_reads(tree: lark.Tree[Any]) -> tuple[Read, ...] | None:
    """Every part of the device the checked tree reads, sorted, or None when it reads more than
    single fields and attributes (`device` or a domain map as a whole: `"d" in
    device.attributes`, `device.attributes["d"]` as a value).

    Meaningful for a tree `compile_tree` compiles (no macros or `cel.bind`, which could rename
    `device`): then the closures' result, errors included, depends on these values only,
    and devices that agree on them (and convert at all) get the same result.
    """
    reads: set[Read] = set()

    def visit(node: lark.Tree[Any] | lark.Token) -> bool:
        if not isinstance(node, lark.Tree):
            return True
        read = _device_read(node)
        if read is not None:
            reads.add(read)
            return True
        if str(node.data) == "ident" and _is_device(node):
            return False  # `device` consumed in some other way
        return all(visit(child) for child in node.children)

    try:
        return tuple(sorted(reads)) if visit(tree) else None
    except (RecursionError, Unsupported):
        return None


def _unwrapped(tree: lark.Tree[Any] | lark.Token) -> lark.Tree[Any] | lark.Token:
    while isinstance(tree, lark.Tree) and str(tree.data) in _WRAPPERS and len(tree.children) == 1:
        tree = tree.children[0]
    return tree


def _is_device(tree: lark.Tree[Any] | lark.Token) -> bool:
    tree = _unwrapped(tree)
    return (isinstance(tree, lark.Tree) and str(tree.data) == "ident" and len(tree.children) == 1
            and isinstance(tree.children[0], lark.Token) and str(tree.children[0].value) == "device")


def _string_key(tree: lark.Tree[Any] | lark.Token) -> str | None:
    try:
        node = _compile(tree)
    except Exception:
        return None
    return node.value if node.constant and type(node.value) is str else None


def _domain_of(tree: lark.Tree[Any] | lark.Token) -> tuple[str, str] | None:
    """(field, domain) when the tree is `device.attributes["d"]` or `device.capacity["d"]`."""
    tree = _unwrapped(tree)
    if not isinstance(tree, lark.Tree) or str(tree.data) != "member_index" or len(tree.children) != 2:
        return None
    target = _unwrapped(tree.children[0])
    if not isinstance(target, lark.Tree) or str(target.data) != "member_dot" or len(target.children) != 2:
        return None
    if not _is_device(target.children[0]) or not isinstance(target.children[1], lark.Token):
        return None
    field = str(target.children[1].value)
    domain = _string_key(tree.children[1])
    return (field, domain) if field in _DOMAIN_FIELDS and domain is not None else None


def _device_read(tree: lark.Tree[Any]) -> Read | None:
    tree = cast(lark.Tree[Any], _unwrapped(tree))
    if not isinstance(tree, lark.Tree) or len(tree.children) != 2:
        return None
    data = str(tree.data)
    if data == "member_dot" and isinstance(tree.children[1], lark.Token):
        name = str(tree.children[1].value)
        if _is_device(tree.children[0]):
            return ("device", name) if name in _DEVICE_FIELDS else None
        domain = _domain_of(tree.children[0])
        return (domain[0], domain[1], name) if domain is not None else None
    if data == "member_index":
        domain = _domain_of(tree.children[0])
        key = _string_key(tree.children[1]) if domain is not None else None
        return (domain[0], domain[1], key) if domain is not None and key is not None else None
    return None


@dataclass(frozen=True)
class _Node:
    """A compiled subexpression.

    `kind` is "value" for ordinary values; "device", "domains" (with `field`) and
    "domain" (with `field` and `domain`) mark `device`, `device.attributes` and
    `device.attributes["d"]`, which only the lookups that consume them compile.
    """

    fn: Closure
    kind: str = "value"
    constant: bool = False
    value: Any = None
    field: str = ""
    domain: str = ""


def _constant(value: Any) -> _Node:
    return _Node(lambda env: value, constant=True, value=value)


def _value(node: _Node) -> _Node:
    if node.kind != "value":
        raise Unsupported(node.kind)
    return node


def _compile(tree: lark.Tree[Any] | lark.Token) -> _Node:
    if not isinstance(tree, lark.Tree):
        raise Unsupported("token")
    data = str(tree.data)
    if data in _WRAPPERS and len(tree.children) == 1:
        return _compile(tree.children[0])
    handler = _HANDLERS.get(data)
    if handler is None:
        raise Unsupported(data)
    return handler(tree)


def _children(tree: lark.Tree[Any]) -> list[lark.Tree[Any]]:
    if not all(isinstance(c, lark.Tree) for c in tree.children):
        raise Unsupported("token child")
    return cast(list[lark.Tree[Any]], tree.children)


def _arguments(tree: lark.Tree[Any] | None) -> list[_Node]:
    if tree is None:
        return []
    return [_value(_compile(c)) for c in _children(tree)]


def _token(tree: lark.Tree[Any], position: int) -> str:
    token = tree.children[position]
    if not isinstance(token, lark.Token):
        raise Unsupported("expected a token")
    return str(token.value)


# --- literals ---------------------------------------------------------------------------------


def _literal(tree: lark.Tree[Any]) -> _Node:
    token = cast(lark.Token, tree.children[0])
    kind, text = token.type, str(token.value)
    if kind in ("STRING_LIT", "MLSTRING_LIT"):
        return _constant(str(celstr(token)))
    if kind == "BOOL_LIT":
        return _constant(text == "true")
    if kind == "INT_LIT":
        try:
            number = int(text, 0)
        except ValueError:
            raise Unsupported(text) from None
        if not _INT64_MIN <= number <= _INT64_MAX:
            raise Unsupported(text)
        return _constant(number)
    if kind == "FLOAT_LIT":
        return _constant(float(text))
    raise Unsupported(kind)


def _list_lit(tree: lark.Tree[Any]) -> _Node:
    items = _arguments(tree.children[0] if tree.children else None)
    if not all(item.constant for item in items):
        raise Unsupported("list of non-constants")
    return _constant(tuple(item.value for item in items))


def _paren_expr(tree: lark.Tree[Any]) -> _Node:
    return _compile(tree.children[0])


# --- device -----------------------------------------------------------------------------------


def _ident(tree: lark.Tree[Any]) -> _Node:
    if _token(tree, 0) != "device":
        raise Unsupported("identifier")
    return _Node(lambda env: env, kind="device")


def _member_dot(tree: lark.Tree[Any]) -> _Node:
    target = _compile(tree.children[0])
    name = _token(tree, 1)
    if target.kind == "device":
        if name in _DOMAIN_FIELDS:
            return _Node(lambda env: getattr(env, name), kind="domains", field=name)
        attribute = _DEVICE_FIELDS.get(name)
        if attribute is None:
            raise Unsupported(name)
        return _Node(operator.attrgetter(attribute))
    if target.kind == "domain":
        return _lookup(target, name, name)
    raise Unsupported("field of a value")


def _member_index(tree: lark.Tree[Any]) -> _Node:
    target = _compile(tree.children[0])
    key = _compile(tree.children[1])
    if not key.constant or type(key.value) is not str:
        raise Unsupported("non-literal index")
    if target.kind == "domains":
        field, domain = target.field, key.value
        ids_of = operator.attrgetter(field)
        return _Node(lambda env: ids_of(env).get(domain, _EMPTY), kind="domain", field=field, domain=domain)
    if target.kind == "domain":
        # The transpiled index passes the celtypes key, which its KeyError carries.
        return _lookup(target, key.value, celtypes.StringType(key.value))
    raise Unsupported("index of a value")


def _lookup(target: _Node, ident: str, missing: str) -> _Node:
    """`device.<field>["domain"].ident`: the value, or "no such key" like the domain maps."""
    ids_of = operator.attrgetter(target.field)
    domain = target.domain

    def lookup(env: DeviceEnv) -> Any:
        value = ids_of(env).get(domain, _EMPTY).get(ident, _MISSING)
        if value is _MISSING:
            raise KeyError(missing)
        return value

    return _Node(lookup)


def _reference_map(env: DeviceEnv, target: _Node) -> Any:
    """The celpy map the transpiled program sees for a "domains" or "domain" node."""
    domains = env.scope.device.get(target.field)
    if target.kind == "domains":
        return domains
    return domains[celtypes.StringType(target.domain)]


# --- logic ------------------------------------------------------------------------------------


def _captured(fn: Closure, env: DeviceEnv) -> Any:
    try:
        return fn(env)
    except CAUGHT as exc:
        return error_value(exc)


def _non_bool(left: Any, right: Any, symbol: str) -> Any:
    # As the transpiled program's `&&`/`||` (`macros.non_bool_outcome`), on the values as celpy's.
    return macros.non_bool_outcome(to_cel(left), to_cel(right), symbol)


def _conditionaland(tree: lark.Tree[Any]) -> _Node:
    left, right = (_value(_compile(c)).fn for c in _children(tree))

    def logical_and(env: DeviceEnv) -> Any:
        a = _captured(left, env)
        if a is False:
            return False
        b = _captured(right, env)
        if b is False:
            return False
        if b is True and a is True:
            return True
        return _non_bool(a, b, "&&")

    return _Node(logical_and)


def _conditionalor(tree: lark.Tree[Any]) -> _Node:
    left, right = (_value(_compile(c)).fn for c in _children(tree))

    def logical_or(env: DeviceEnv) -> Any:
        a = _captured(left, env)
        if a is True:
            return True
        b = _captured(right, env)
        if b is True:
            return True
        if b is False and a is False:
            return False
        return _non_bool(a, b, "||")

    return _Node(logical_or)


def _expr(tree: lark.Tree[Any]) -> _Node:
    condition, left, right = (_value(_compile(c)).fn for c in _children(tree))

    def conditional(env: DeviceEnv) -> Any:
        value = _captured(condition, env)
        if value is True:
            return _captured(left, env)
        if value is False:
            return _captured(right, env)
        if isinstance(value, CELEvalError):
            return value
        raise TypeError("no such overload")  # as macros.conditional

    return _Node(conditional)


def _unary(tree: lark.Tree[Any]) -> _Node:
    sign, operand_tree = _children(tree)
    if sign.data != "unary_not":
        raise Unsupported(str(sign.data))
    operand = _value(_compile(operand_tree)).fn

    def logical_not(env: DeviceEnv) -> Any:
        value = operand(env)
        if value is True:
            return False
        if value is False:
            return True
        return from_cel(operators.logical_not(to_cel(value)))

    return _Node(logical_not)


def _has(argument: lark.Tree[Any]) -> _Node:
    selection = macros.innermost(argument)
    if selection is None or selection.data != "member_dot":
        raise Unsupported("has() argument")
    target = _compile(selection.children[0])
    ident = _token(selection, 1)
    if target.kind == "device":
        # The device map has all four fields (the checker rejected any other).
        return _constant(True)
    if target.kind != "domain":
        raise Unsupported("has() of a value")
    ids = target.fn
    return _Node(lambda env: ident in ids(env))


# --- relations --------------------------------------------------------------------------------


_RELATIONS: dict[str, tuple[Callable[[Any, Any], bool], Callable[..., Any], frozenset[type]]] = {
    "relation_eq": (operator.eq, operators.equal, _EQUALITY_TYPES),
    "relation_ne": (operator.ne, operators.not_equal, _EQUALITY_TYPES),
    "relation_lt": (operator.lt, operators.less, _ORDERING_TYPES),
    "relation_le": (operator.le, operators.less_equal, _ORDERING_TYPES),
    "relation_gt": (operator.gt, operators.greater, _ORDERING_TYPES),
    "relation_ge": (operator.ge, operators.greater_equal, _ORDERING_TYPES),
}


def _relation(tree: lark.Tree[Any]) -> _Node:
    operation, right_tree = _children(tree)
    left_tree = _children(operation)[0]
    if operation.data == "relation_in":
        return _in(_compile(left_tree), _compile(right_tree))
    entry = _RELATIONS.get(str(operation.data))
    if entry is None:
        raise Unsupported(str(operation.data))
    fast, reference, types = entry
    left = _value(_compile(left_tree))
    right = _value(_compile(right_tree))
    return _Node(_binary(fast, reference, types, left, right))


def _binary(fast: Callable[[Any, Any], bool], reference: Callable[..., Any], types: frozenset[type],
            left: _Node, right: _Node) -> Closure:
    first = left.fn
    if right.constant and type(right.value) in types:
        constant, constant_type, cel_constant = right.value, type(right.value), to_cel(right.value)

        def with_constant(env: DeviceEnv) -> Any:
            a = first(env)
            if type(a) is constant_type:
                return fast(a, constant)
            return from_cel(reference(to_cel(a), cel_constant))

        return with_constant
    second = right.fn

    def general(env: DeviceEnv) -> Any:
        a = first(env)
        b = second(env)
        if type(a) is type(b) and type(a) in types:
            return fast(a, b)
        return from_cel(reference(to_cel(a), to_cel(b)))

    return general


def _in(item_node: _Node, container: _Node) -> _Node:
    item = _value(item_node).fn
    contained_in = operators.contained_in
    if container.kind in ("domains", "domain"):
        # A string is looked up in the dict; dict.__contains__ never sees a domain map's default.
        keys = container.fn

        def in_map(env: DeviceEnv) -> Any:
            value = item(env)
            if type(value) is str:
                return value in keys(env)
            return from_cel(contained_in(to_cel(value), _reference_map(env, container)))

        return _Node(in_map)
    container = _value(container)
    if container.constant and type(container.value) is tuple:
        elements: tuple[Any, ...] = container.value
        cel_elements = to_cel(elements)
        kinds = {type(e) for e in elements}
        # A set answers exactly only when every element has the item's type (no 1 == 1.0 etc.).
        homogeneous = next(iter(kinds)) if len(kinds) == 1 and kinds <= {str, int} else None
        members = frozenset(elements)

        def in_list(env: DeviceEnv) -> Any:
            value = item(env)
            if type(value) is homogeneous:
                return value in members
            return from_cel(contained_in(to_cel(value), cel_elements))

        return _Node(in_list)
    values = container.fn

    def in_value(env: DeviceEnv) -> Any:
        value = item(env)
        found = values(env)
        if type(value) is str and type(found) is tuple:
            return _includes_string(found, value)
        return from_cel(contained_in(to_cel(value), to_cel(found)))

    return _Node(in_value)


def _includes_string(values: tuple[Any, ...], item: str) -> bool:
    # Only a string equals a string under CEL's heterogeneous equality.
    for value in values:
        if type(value) is str and value == item:
            return True
    return False


# --- calls ------------------------------------------------------------------------------------


def _ident_arg(tree: lark.Tree[Any]) -> _Node:
    name = _token(tree, 0)
    rest = cast(lark.Tree[Any] | None, tree.children[1] if len(tree.children) > 1 else None)
    if name == "has":
        if rest is None or len(rest.children) != 1:
            raise Unsupported("has() arity")
        return _has(cast(lark.Tree[Any], rest.children[0]))
    if name == "dyn":
        # dyn(x) only changes what the checker knows; the transpiled program evaluates x.
        if rest is None or len(rest.children) != 1:
            raise Unsupported("dyn() arity")
        return _value(_compile(cast(lark.Tree[Any], rest.children[0])))
    if name not in _GLOBALS:
        raise Unsupported(name)
    args = _arguments(rest)
    if name in ("quantity", "semver") and args and all(a.constant for a in args):
        return _literal_call(name, args)
    return _call(name, args)


def _literal_call(name: str, args: list[_Node]) -> _Node:
    """`quantity("40Gi")`: parsed once here; a literal that fails keeps failing at run time."""
    function = functions.FUNCTIONS[name]
    cel_args = [to_cel(a.value) for a in args]
    try:
        value = function(*cel_args)
    except CAUGHT:
        return _Node(lambda env: function(*cel_args))
    if isinstance(value, CELEvalError) or not isinstance(value, Quantity | Semver):
        raise Unsupported("unexpected literal value")
    return _constant(value)


def _member_dot_arg(tree: lark.Tree[Any]) -> _Node:
    name = _token(tree, 1)
    rest = cast(lark.Tree[Any] | None, tree.children[2] if len(tree.children) > 2 else None)
    qualified = macros.qualified_name(tree)
    if qualified is not None:
        # No variable can shadow the namespace here: the fast path compiles no macro or bind.
        if qualified not in _QUALIFIED:
            raise Unsupported(qualified)
        return _call(qualified, _arguments(rest))
    if name not in _MEMBERS:
        raise Unsupported(name)
    receiver = _value(_compile(tree.children[0]))
    return _call(name, [receiver, *_arguments(rest)])


def _call(name: str, args: list[_Node]) -> _Node:
    """A function call with the receiver (if any) as first argument, as celpy calls it."""
    fast = _FAST_CALLS.get((name, len(args)))
    if fast is not None:
        return _Node(fast(functions.FUNCTIONS[name], *(a.fn for a in args)))
    return _Node(_generic_call(functions.FUNCTIONS[name], [a.fn for a in args]))


def _generic_call(function: Callable[..., Any], args: list[Closure]) -> Closure:
    if not args:
        return lambda env: from_cel(function())
    if len(args) == 1:
        only = args[0]
        return lambda env: from_cel(function(to_cel(only(env))))
    return lambda env: from_cel(function(*[to_cel(a(env)) for a in args]))


def _comparison(kinds: tuple[type, ...], accept: Callable[[int], bool] | None) -> Callable[..., Closure]:
    """compareTo / isGreaterThan / isLessThan: exact on two Quantities or two Semvers."""

    def build(reference: Callable[..., Any], receiver: Closure, other: Closure) -> Closure:
        def compare(env: DeviceEnv) -> Any:
            a = receiver(env)
            b = other(env)
            kind = type(a)
            if kind is type(b) and kind in kinds:
                order: int = a.compare(b)
                return order if accept is None else accept(order)
            return from_cel(reference(to_cel(a), to_cel(b)))

        return compare

    return build


def _strings(method: Callable[[str, str], bool]) -> Callable[..., Closure]:
    """startsWith / endsWith / contains on two strings."""

    def build(reference: Callable[..., Any], receiver: Closure, other: Closure) -> Closure:
        def call(env: DeviceEnv) -> Any:
            a = receiver(env)
            b = other(env)
            if type(a) is str and type(b) is str:
                return method(a, b)
            return from_cel(reference(to_cel(a), to_cel(b)))

        return call

    return build


def _includes(reference: Callable[..., Any], receiver: Closure, other: Closure) -> Closure:
    def includes(env: DeviceEnv) -> Any:
        a = receiver(env)
        b = other(env)
        if type(b) is str:
            if type(a) is tuple:
                return _includes_string(a, b)
            if type(a) is str:
                return a == b
        return from_cel(reference(to_cel(a), to_cel(b)))

    return includes


def _size(reference: Callable[..., Any], receiver: Closure) -> Closure:
    def size(env: DeviceEnv) -> Any:
        a = receiver(env)
        if type(a) is str or type(a) is tuple:
            return len(a)
        return from_cel(reference(to_cel(a)))

    return size


_ORDERED = (Quantity, Semver)

_FAST_CALLS: dict[tuple[str, int], Callable[..., Closure]] = {
    ("compareTo", 2): _comparison(_ORDERED, None),
    ("isGreaterThan", 2): _comparison(_ORDERED, lambda order: order > 0),
    ("isLessThan", 2): _comparison(_ORDERED, lambda order: order < 0),
    ("startsWith", 2): _strings(str.startswith),
    ("endsWith", 2): _strings(str.endswith),
    ("contains", 2): _strings(lambda text, part: part in text),
    ("includes", 2): _includes,
    ("size", 1): _size,
}


_HANDLERS: dict[str, Callable[[lark.Tree[Any]], _Node]] = {
    "expr": _expr,
    "conditionalor": _conditionalor,
    "conditionaland": _conditionaland,
    "relation": _relation,
    "unary": _unary,
    "member_dot": _member_dot,
    "member_index": _member_index,
    "member_dot_arg": _member_dot_arg,
    "ident": _ident,
    "ident_arg": _ident_arg,
    "paren_expr": _paren_expr,
    "literal": _literal,
    "list_lit": _list_lit,
}
