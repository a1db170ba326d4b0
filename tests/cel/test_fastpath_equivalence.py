"""The fast path computes what the celpy program computes, errors and messages included.

Random expressions come from a grammar over the compiled subset that mixes
types on purpose (so "no such overload" and heterogeneous equality are
exercised), reads attributes that may be missing, of any type, in known and
unknown domains, and nests `&&`/`||`/`!`/`?:` around erroring operands. Every
expression is evaluated by `compile_selector` (fast path) and by
`compile_reference` (celpy) on random devices; both must return the same bool
or both raise `CELRuntimeError` with the same message.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dralloc.cel import devices, selectors
from dralloc.model.quantities import Quantity

DRIVER = "gpu.example.com"
DOMAINS = (DRIVER, "nic.example.com", "unknown.example.com")
IDS = ("model", "numa", "ecc", "ver", "tags", "addr", "x")
CAPACITY_IDS = ("memory", "cores")

# --- devices ----------------------------------------------------------------------------------

_STRINGS = st.sampled_from(["a100", "A100", "", "gpu-a100", "fast", "x"])
_INTS = st.sampled_from([0, 1, -1, 2, 42, 2**63 - 1])
_VERSIONS = st.sampled_from(["1.2.3", "1.0.0-rc.1", "2.0.0", "1.2.3+build"])
# Addresses and prefixes as drivers publish them (strings), some malformed.
_ADDRESSES = st.sampled_from(["10.0.0.7", "192.168.130.7", "::1", "2001:db8::1", "fe80::1%eth0", "1.2.3.04",
                              "10.0.0.0/8", "2001:db8::/32", "nope"])
_ATTRIBUTE = st.one_of(
    st.builds(lambda v: {"string": v}, _STRINGS),
    st.builds(lambda v: {"int": v}, _INTS),
    st.builds(lambda v: {"bool": v}, st.booleans()),
    st.builds(lambda v: {"version": v}, _VERSIONS),
    st.builds(lambda v: {"strings": v}, st.lists(_STRINGS, max_size=3)),
    st.builds(lambda v: {"ints": v}, st.lists(_INTS, max_size=3)),
    st.builds(lambda v: {"bools": v}, st.lists(st.booleans(), max_size=2)),
    st.builds(lambda v: {"versions": v}, st.lists(_VERSIONS, max_size=2)),
)
# Each id usually has its typical type (so well-typed predicates get evaluated), sometimes any.
_TYPICAL = {
    "model": st.builds(lambda v: {"string": v}, _STRINGS),
    "numa": st.builds(lambda v: {"int": v}, _INTS),
    "ecc": st.builds(lambda v: {"bool": v}, st.booleans()),
    "ver": st.builds(lambda v: {"version": v}, _VERSIONS),
    "tags": st.builds(lambda v: {"strings": v}, st.lists(_STRINGS, max_size=3)),
    "addr": st.builds(lambda v: {"string": v}, _ADDRESSES),
    "x": _ATTRIBUTE,
}
_AMOUNT = st.sampled_from(["0", "1", "1500m", "40Gi", "80Gi", "10000P", "-3"])


def _qualified(domain: str, ident: str) -> str:
    return ident if domain == DRIVER else f"{domain}/{ident}"


@st.composite
def device_envs(draw: st.DrawFn) -> devices.DeviceEnv:
    attributes: dict[str, Any] = {}
    for domain in DOMAINS[:2]:
        for ident in IDS:
            if draw(st.integers(0, 3)):
                typical = _TYPICAL[ident] if draw(st.integers(0, 4)) else _ATTRIBUTE
                attributes[_qualified(domain, ident)] = draw(typical)
    capacity: dict[str, Quantity] = {}
    for domain in DOMAINS[:2]:
        for ident in CAPACITY_IDS:
            if draw(st.booleans()):
                capacity[_qualified(domain, ident)] = Quantity.parse(draw(_AMOUNT))
    return devices.device_env(driver=draw(st.sampled_from([DRIVER] * 4 + ["other.example.com"])),
                              attributes=attributes, capacity=capacity,
                              allow_multiple_allocations=draw(st.booleans()))


# --- expressions ------------------------------------------------------------------------------

# Mostly the driver's own domain, so that more lookups find something.
_DOMAIN = st.sampled_from((DRIVER, DRIVER, DRIVER, DRIVER, *DOMAINS))


def _attribute() -> st.SearchStrategy[str]:
    return st.one_of(
        st.builds(lambda d, i: f'device.attributes["{d}"].{i}', _DOMAIN, st.sampled_from(IDS)),
        st.builds(lambda d, i: f"device.attributes['{d}'][\"{i}\"]", _DOMAIN, st.sampled_from(IDS)),
        st.builds(lambda d, i: f'device.capacity["{d}"].{i}', _DOMAIN, st.sampled_from(CAPACITY_IDS)),
    )


_LITERALS = st.sampled_from([
    '"a100"', '"A100"', '""', "'fast'", '"x"', "0", "1", "-1", "42", "0x10", "1.5", "0.0", "-2.5e1",
    "true", "false", 'quantity("40Gi")', 'quantity("1.5")', 'quantity("0")', 'quantity("bad")',
    'semver("1.2.3")', 'semver("1.0.0-rc.1")', 'semver("v1", true)', 'semver("nope")',
    '["a100", "fast"]', "[1, 2]", "[dyn(1), dyn(2.0)]", "[]", '[dyn("x"), dyn(1)]', '"""tri"""', r'"esc\x41"',
])
# Mixed-type operands are compile errors upstream (and here); dyn() defers them to run time,
# where the heterogeneous semantics the fast path must reproduce apply.
_OPERANDS = st.one_of(_LITERALS, _LITERALS.map(lambda v: f"dyn({v})"))

def _attr(ident: str) -> st.SearchStrategy[str]:
    return st.builds(lambda d: f'device.attributes["{d}"].{ident}', _DOMAIN)


_OPS = st.sampled_from(("==", "!=", "<", "<=", ">", ">="))
# Predicates a selector author would write, so that most evaluations get past type errors.
_TYPED = st.one_of(
    st.builds(lambda a, op, v: f"{a} {op} {v}", _attr("model"), _OPS, _STRINGS.map(lambda v: f'"{v}"')),
    st.builds(lambda a, op, v: f"{a} {op} {v}", _attr("numa"), _OPS, _INTS.map(str)),
    _attr("ecc"),
    st.builds(lambda a, m, v: f'{a}.{m}(semver("{v}"))', _attr("ver"),
              st.sampled_from(["isGreaterThan", "isLessThan"]), _VERSIONS),
    st.builds(lambda a, op, n, v: f'{a}.compareTo(semver("{v}")) {op} {n}', _attr("ver"), _OPS,
              st.sampled_from(["-1", "0", "1"]), _VERSIONS),
    st.builds(lambda a, v: f'{a}.includes("{v}")', _attr("tags"), _STRINGS),
    st.builds(lambda a, v: f'"{v}" in {a}', _attr("tags"), _STRINGS),
    st.builds(lambda a, v: f'{a} in ["{v}", "a100"]', _attr("model"), _STRINGS),
    st.builds(lambda d, i, op, n, q: f'device.capacity["{d}"].{i}.compareTo(quantity("{q}")) {op} {n}',
              _DOMAIN, st.sampled_from(CAPACITY_IDS), _OPS, st.sampled_from(["-1", "0", "1"]), _AMOUNT),
    st.builds(lambda d, i, q: f'device.capacity["{d}"].{i}.isGreaterThan(quantity("{q}"))',
              _DOMAIN, st.sampled_from(CAPACITY_IDS), _AMOUNT),
    st.builds(lambda d: f'device.driver == "{d}"', st.sampled_from([DRIVER, "other.example.com"])),
)

_ATOMS = st.one_of(
    _OPERANDS, _attribute(), _TYPED, _TYPED,
    st.just("device.driver"), st.just("device.allowMultipleAllocations"),
)

_UNARY_METHODS = ("isInteger", "asInteger", "asApproximateFloat", "major", "minor", "patch",
                  "lowerAscii", "upperAscii", "size")
_BINARY_METHODS = ("compareTo", "isGreaterThan", "isLessThan", "add", "sub", "includes", "startsWith",
                   "endsWith", "contains", "matches")


def _extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    # Operands are parenthesized so that each rule keeps its shape whatever it wraps.
    return st.one_of(
        st.builds(lambda x, m: f"({x}).{m}()", inner, st.sampled_from(_UNARY_METHODS)),
        st.builds(lambda x, m, y: f"({x}).{m}({y})", inner, st.sampled_from(_BINARY_METHODS), inner),
        st.builds(lambda x: f"size({x})", inner),
        st.builds(lambda x: f"sign({x})", inner),
        st.builds(lambda x, y, op: f"({x}) {op} ({y})", inner, inner, _OPS),
        st.builds(lambda x, y, op: f"dyn({x}) {op} ({y})", inner, inner, _OPS),
        st.builds(lambda x, y, op: f"({x}) {op} ({y})", inner, inner, st.sampled_from(("&&", "||"))),
        st.builds(lambda x, y: f"{x} && {y} || !{x}", inner, inner),
        st.builds(lambda x: f"!({x})", inner),
        st.builds(lambda c, x, y: f"({c}) ? ({x}) : ({y})", inner, inner, inner),
        st.builds(lambda d, i: f'has(device.attributes["{d}"].{i})', _DOMAIN, st.sampled_from(IDS)),
        st.builds(lambda d, i: f'has(device.capacity["{d}"].{i})', _DOMAIN, st.sampled_from(CAPACITY_IDS)),
        st.builds(lambda i, d: f'"{i}" in device.attributes["{d}"]', st.sampled_from(IDS), _DOMAIN),
        st.builds(lambda x, d: f"({x}) in device.capacity[\"{d}\"]", inner, _DOMAIN),
        st.builds(lambda x: f"({x}) in device.attributes", inner),
        st.builds(lambda x, y: f"({x}) in ({y})", inner, inner),
        st.builds(lambda x: f'({x}).matches("(")', inner),
    )


EXPRESSIONS = st.recursive(_ATOMS, _extend, max_leaves=6)


def _logic(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.builds(lambda x, y, op: f"({x}) {op} ({y})", inner, inner, st.sampled_from(("&&", "||"))),
        st.builds(lambda x, y, z: f"{x} && {y} || {z}", inner, inner, inner),
        st.builds(lambda x: f"!({x})", inner),
        st.builds(lambda c, x, y: f"({c}) ? ({x}) : ({y})", inner, inner, inner),
    )


_PRESENCE = st.one_of(
    st.builds(lambda d, i: f'has(device.attributes["{d}"].{i})', _DOMAIN, st.sampled_from(IDS)),
    st.builds(lambda i, d: f'"{i}" in device.attributes["{d}"]', st.sampled_from(IDS), _DOMAIN),
)
# Well-typed selectors combined with logic: mostly values, with missing ids as the errors.
SELECTORS = st.recursive(st.one_of(_TYPED, _PRESENCE), _logic, max_leaves=5)


def _outcome(selector: selectors.CompiledSelector, env: devices.DeviceEnv) -> tuple[str, object]:
    try:
        return "value", selector.evaluate(env)
    except selectors.CELRuntimeError as exc:
        return "error", str(exc)


def _compiled(expression: str) -> selectors.CompiledSelector | None:
    try:
        return selectors.compile_selector(expression)
    except selectors.CELCompileError:
        return None


def _assert_same(expression: str, envs: list[devices.DeviceEnv]) -> None:
    selector = _compiled(expression)
    if selector is None:
        return
    assert selector.has_fast_path, expression
    reference = selectors.compile_reference(expression)
    assert not reference.has_fast_path
    for env in envs:
        assert _outcome(selector, env) == _outcome(reference, env), expression


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(expression=EXPRESSIONS, envs=st.lists(device_envs(), min_size=1, max_size=3))
def test_fast_path_matches_reference(expression: str, envs: list[devices.DeviceEnv]) -> None:
    """Same result, or the same CELRuntimeError message, as the celpy program."""
    _assert_same(expression, envs)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(expression=SELECTORS, envs=st.lists(device_envs(), min_size=1, max_size=3))
def test_typed_selectors_match_reference(expression: str, envs: list[devices.DeviceEnv]) -> None:
    """Selectors as people write them: same outcome as the celpy program."""
    _assert_same(expression, envs)


@settings(max_examples=100, deadline=None)
@given(env=device_envs())
def test_lazy_scope_holds_the_plain_values(env: devices.DeviceEnv) -> None:
    """The celpy scope built on demand is `to_cel` of the plain form, domain by domain."""
    device = env.scope.device
    for field, plain in (("attributes", env.attributes), ("capacity", env.capacity)):
        cel = device.get(field)
        assert set(cel) == set(plain)
        for domain, ids in plain.items():
            assert {str(k): devices.from_cel(v) for k, v in cel[domain].items()} == dict(ids)
    assert str(device.get("driver")) == env.driver
    assert bool(device.get("allowMultipleAllocations")) is env.allow_multiple_allocations


# --- the rest of the 1.37 environment ---------------------------------------------------------

_ADDR = _attr("addr")
_NEW_CONSTRUCTS = st.one_of(
    st.builds(lambda c, a: f'cidr("{c}").containsIP({a})', st.sampled_from(["10.0.0.0/8", "2001:db8::/32"]), _ADDR),
    st.builds(lambda a: f"isIP({a}) && ip({a}).isLoopback()", _ADDR),
    st.builds(lambda a: f"isCIDR({a}) && cidr({a}).containsCIDR(\"10.1.0.0/16\")", _ADDR),
    st.builds(lambda a: f"ip.isCanonical({a})", _ADDR),
    st.builds(lambda a, v: f'sets.contains({a}, ["{v}"])', _attr("tags"), _STRINGS),
    st.builds(lambda a, v: f'sets.intersects({a}, ["{v}", "fast"])', _attr("tags"), _STRINGS),
    st.builds(lambda d, i, v: f'device.attributes["{d}"].?{i}.orValue("{v}") == "{v}"',
              _DOMAIN, st.sampled_from(IDS), _STRINGS),
    st.builds(lambda d, i: f'device.attributes["{d}"][?"{i}"].hasValue()', _DOMAIN, st.sampled_from(IDS)),
    st.builds(lambda a: f'{a}.all(i, t, t.size() > i)', _attr("tags")),
    st.builds(lambda a: f'{a}.transformList(i, t, t + "!").exists(t, t == "a100!")', _attr("tags")),
    st.builds(lambda a: f'"%s/%d".format([{a}, 1]).startsWith("a")', _attr("model")),
    st.builds(lambda a: f"strings.quote({a}).size() > 2", _attr("model")),
    st.builds(lambda a: f"{a}.sort().distinct().size() <= {a}.size()", _attr("tags")),
)
# New constructs next to fast-path ones: the whole selector must fall back to celpy.
NEW_SELECTORS = st.recursive(st.one_of(_NEW_CONSTRUCTS, _TYPED), _logic, max_leaves=4)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(expression=NEW_SELECTORS, envs=st.lists(device_envs(), min_size=1, max_size=3))
def test_new_constructs_fall_back_to_the_reference(expression: str, envs: list[devices.DeviceEnv]) -> None:
    """A selector using what the fast path does not compile has no fast path, and whatever
    `evaluate` runs answers as the celpy program does."""
    selector = _compiled(expression)
    if selector is None:
        return
    if any(marker in expression for marker in ("cidr(", "ip(", "ip.", "sets.", ".?", "[?", "format(",
                                                 "strings.", ".all(i,", "transformList", ".sort(")):
        assert not selector.has_fast_path, expression
    reference = selectors.compile_reference(expression)
    for env in envs:
        assert _outcome(selector, env) == _outcome(reference, env), expression


# --- the URLs and Format libraries, which the fast path compiles ------------------------------

_LINKS = ("https://user:pw@example.com:8443/a%2Fb/c?x=1&x=2&y#frag", "/absolute/path?q", "http://[::1]:80/",
          "http://[fe80::1%25eth0]/", "mailto:ops@example.com", "http://h:1:2/", "../relative", "http://x/%zz",
          "", "*", "http://a b/", "postgres://h1:1,h2:2/db", "HTTP://Example.COM/A B")
_NAMES = ("gpu-0", "GPU-0", "gpu.example.com", "example.com/gpu", "-", "a" * 64, "", "2021-02-29",
          "2024-02-29T23:59:59Z", "123e4567-e89b-12d3-a456-426614174000", "aGVsbG8=")
_FORMATS = ("dns1123Label", "dns1123Subdomain", "dns1035Label", "qualifiedName", "dns1123LabelPrefix",
            "dns1123SubdomainPrefix", "dns1035LabelPrefix", "labelValue", "uri", "uuid", "byte", "date", "datetime")


@st.composite
def link_envs(draw: st.DrawFn) -> devices.DeviceEnv:
    """Devices whose `link` and `name` attributes are strings that may or may not parse (or absent,
    or of another type)."""
    attributes: dict[str, Any] = {}
    for ident, values in (("link", _LINKS), ("name", _NAMES)):
        kind = draw(st.integers(0, 5))
        if kind == 0:
            continue
        attributes[ident] = {"int": 7} if kind == 1 else {"string": draw(st.sampled_from(values))}
    return devices.device_env(driver=DRIVER, attributes=attributes, capacity={}, allow_multiple_allocations=False)


_LINK = st.sampled_from([f'device.attributes["{DRIVER}"].link', f"dyn(device.attributes[\"{DRIVER}\"].link)",
                         *(f'"{link}"' for link in _LINKS[:4])])
_NAME = st.sampled_from([f'device.attributes["{DRIVER}"].name', *(f'"{name}"' for name in _NAMES[:4])])
_GETTERS = st.sampled_from(("getScheme", "getHost", "getHostname", "getPort", "getEscapedPath"))
_FORMAT = st.one_of(st.sampled_from(_FORMATS).map(lambda f: f"format.{f}()"),
                    st.sampled_from((*_FORMATS, "nope")).map(lambda f: f'format.named("{f}").value()'))
_URL_FORMAT_CONSTRUCTS = st.one_of(
    st.builds(lambda a: f"isURL({a})", _LINK),
    st.builds(lambda a, g, v: f'url({a}).{g}() == "{v}"', _LINK, _GETTERS, st.sampled_from(("", "example.com", "80"))),
    st.builds(lambda a, g: f"url({a}).{g}().size() > 0", _LINK, _GETTERS),
    st.builds(lambda a: f'"x" in url({a}).getQuery()', _LINK),
    st.builds(lambda a, b: f"url({a}) == url({b})", _LINK, _LINK),
    st.builds(lambda f, n: f"{f}.validate({n}).hasValue()", _FORMAT, _NAME),
    st.builds(lambda f, n: f"{f}.validate({n}).value().size() >= 1", _FORMAT, _NAME),
    st.builds(lambda f: f'format.named("{f}").hasValue()', st.sampled_from((*_FORMATS, "nope"))),
    st.builds(lambda f, g: f"{f} == {g}", _FORMAT, _FORMAT),
)
URL_FORMAT_SELECTORS = st.recursive(st.one_of(_URL_FORMAT_CONSTRUCTS, _PRESENCE), _logic, max_leaves=4)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(expression=URL_FORMAT_SELECTORS, envs=st.lists(link_envs(), min_size=1, max_size=3))
def test_url_and_format_selectors_match_reference(expression: str, envs: list[devices.DeviceEnv]) -> None:
    """Selectors over the URLs and Format libraries get a fast path, and it answers (value, or
    the runtime error's message: parse errors, "no such overload", "optional.none() dereference")
    as the celpy program does."""
    _assert_same(expression, envs)
