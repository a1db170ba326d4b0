"""Kubernetes' URLs CEL library (`k8s.io/apiserver/pkg/cel/library/urls.go`).

`url(s)` and `isURL(s)`, and the getters of a `kubernetes.URL`: `getScheme`, `getHost`,
`getHostname`, `getPort`, `getEscapedPath`, `getQuery`. Upstream accepts a string when Go's
`net/url.ParseRequestURI` does (an absolute URI or an absolute path), and `url()` then keeps
what `net/url.Parse` makes of it (which, unlike ParseRequestURI, splits off a fragment).
The error text reaches the user (a runtime error fails the claim), so the parser here
follows net/url (Go 1.26, which the 1.37 binaries are built with) step by step, messages
included: which byte is escaped where, which escapes a host may hold, the order of the
checks. Go strings are bytes: escaping and unescaping work on the UTF-8 bytes, and a value
that unescapes to bytes that are not UTF-8 reaches CEL with U+FFFD in their place.

Two of Go 1.26's GODEBUG defaults apply, as in binaries whose main module says go 1.26:
`urlstrictcolons` (an http/https host may hold only one colon, so `https://a:b:c/` fails) and
`urlmaxqueryparams` (a query of more than 10,000 parameters reads as empty).

`format.uri()` (library_format) validates with the same ParseRequestURI.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from celpy import celtypes

from dralloc.cel import cost, library_net, operators

# net/url's encoding modes: which bytes a part of a URL may hold unescaped.
_PATH, _PATH_SEGMENT, _HOST, _ZONE, _USER_PASSWORD, _QUERY_COMPONENT, _FRAGMENT = range(7)
_HOST_DELIMITERS = frozenset(b"!$&'()*+,;=:[]<>\"")
_RESERVED = frozenset(b"$&+,/:;=?@")
_HEX = frozenset(b"0123456789abcdefABCDEF")
_MAX_QUERY_PARAMETERS = 10_000  # net/url's defaultMaxParams

# celpy turns exactly ValueError (not subclasses) into a CEL error value.
_URLError = ValueError


def _should_escape(byte: int, mode: int) -> bool:
    """net/url's shouldEscape: whether `byte` must be %-escaped in this part of a URL."""
    if 0x30 <= byte <= 0x39 or 0x41 <= byte <= 0x5A or 0x61 <= byte <= 0x7A:
        return False
    if mode in (_HOST, _ZONE) and byte in _HOST_DELIMITERS:
        return False
    if byte in b"-_.~":
        return False
    if byte in _RESERVED:
        if mode == _PATH:
            return byte == ord("?")
        if mode == _PATH_SEGMENT:
            return byte in b"/;,?"
        if mode == _USER_PASSWORD:
            return byte in b"@/?:"
        if mode == _QUERY_COMPONENT:
            return True
        if mode == _FRAGMENT:
            return False
    return not (mode == _FRAGMENT and byte in b"!()*")


def _text(raw: bytes) -> str:
    # Go keeps the bytes; a CEL string must be text (see the module docstring).
    return raw.decode("utf-8", errors="replace")


def go_quote(raw: bytes) -> str:
    """Go's strconv.Quote of a byte string: bytes that are not UTF-8 as \\xNN."""
    out = []
    for char in raw.decode("utf-8", errors="surrogateescape"):
        code = ord(char)
        if 0xDC80 <= code <= 0xDCFF:  # a byte surrogateescape could not decode
            out.append(f"\\x{code - 0xDC00:02x}")
        elif char in _QUOTE_ESCAPES:
            out.append(_QUOTE_ESCAPES[char])
        elif char.isprintable():  # Python's printable is Go's unicode.IsPrint
            out.append(char)
        elif code < 0x80:
            out.append(f"\\x{code:02x}")
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    return '"' + "".join(out) + '"'


_QUOTE_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v",
                  "\\": "\\\\", '"': '\\"'}


def _quote(text: str) -> str:
    return go_quote(text.encode())


def _escape_error(raw: bytes) -> _URLError:
    return _URLError(f"invalid URL escape {go_quote(raw)}")


def _unescape(text: str | bytes, mode: int) -> bytes:
    """net/url's unescape: %XX to bytes ('+' to a space in a query); raises on a bad escape."""
    raw = text.encode() if isinstance(text, str) else text
    escapes, plus = 0, False
    i = 0
    while i < len(raw):
        byte = raw[i]
        if byte == 0x25:  # '%'
            escapes += 1
            if i + 2 >= len(raw) or raw[i + 1] not in _HEX or raw[i + 2] not in _HEX:
                raise _escape_error(raw[i:i + 3])
            # A host may %-escape only non-ASCII bytes, and "%25" (RFC 6874's zone separator).
            if mode == _HOST and int(raw[i + 1:i + 2], 16) < 8 and raw[i:i + 3] != b"%25":
                raise _escape_error(raw[i:i + 3])
            if mode == _ZONE:
                value = int(raw[i + 1:i + 3], 16)
                if raw[i:i + 3] != b"%25" and value != 0x20 and _should_escape(value, _HOST):
                    raise _escape_error(raw[i:i + 3])
            i += 3
        elif byte == 0x2B:  # '+'
            plus = mode == _QUERY_COMPONENT
            i += 1
        else:
            if mode in (_HOST, _ZONE) and byte < 0x80 and _should_escape(byte, mode):
                raise _URLError(f"invalid character {go_quote(raw[i:i + 1])} in host name")
            i += 1
    if escapes == 0 and not plus:
        return raw
    out = bytearray()
    i = 0
    while i < len(raw):
        byte = raw[i]
        if byte == 0x25:
            out.append(int(raw[i + 1:i + 3], 16))
            i += 3
            continue
        out.append(0x20 if byte == 0x2B and mode == _QUERY_COMPONENT else byte)
        i += 1
    return bytes(out)


def _escape(raw: bytes, mode: int) -> str:
    """net/url's escape: the bytes a part may not hold as %XX (a query's spaces as '+')."""
    out = []
    for byte in raw:
        if byte == 0x20 and mode == _QUERY_COMPONENT:
            out.append("+")
        elif _should_escape(byte, mode):
            out.append(f"%{byte:02X}")
        else:
            out.append(chr(byte))
    return "".join(out)


def _valid_encoded(text: str, mode: int) -> bool:
    """net/url's validEncoded: `text` holds no byte its part would have to escape."""
    for byte in text.encode():
        if byte in b"!$&'()*+,;=:@[]%":
            continue
        if _should_escape(byte, mode):
            return False
    return True


def _valid_optional_port(port: str) -> bool:
    """Empty, or ':' followed by ASCII digits only."""
    if port == "":
        return True
    return port[0] == ":" and all("0" <= c <= "9" for c in port[1:])


@dataclass(frozen=True)
class _User:
    username: bytes
    password: bytes | None  # None: no password given (`user@host`), unlike an empty one (`user:@host`)

    def __str__(self) -> str:
        text = _escape(self.username, _USER_PASSWORD)
        if self.password is not None:
            text += ":" + _escape(self.password, _USER_PASSWORD)
        return text


@dataclass(frozen=True, eq=False)
class URL:
    """A parsed URL as net/url.URL holds it; CEL type `kubernetes.URL`.

    Upstream compares two URLs by their String() forms, and so does `==` here.
    """

    scheme: str = ""
    opaque: str = ""
    user: _User | None = None
    host: bytes = b""
    path: bytes = b""
    raw_path: str = ""
    raw_query: str = ""
    force_query: bool = False
    omit_host: bool = False
    fragment: bytes = b""
    raw_fragment: str = ""

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, URL):
            return NotImplemented
        return self.string() == other.string()

    def __hash__(self) -> int:
        return hash(self.string())

    def escaped_path(self) -> str:
        """net/url's EscapedPath: the path as written when that is a valid escaping of it."""
        if self.raw_path and _valid_encoded(self.raw_path, _PATH):
            try:
                if _unescape(self.raw_path, _PATH) == self.path:
                    return self.raw_path
            except _URLError:
                pass
        if self.path == b"*":
            return "*"  # net/url leaves a lone * alone (Go issue 11202)
        return _escape(self.path, _PATH)

    def escaped_fragment(self) -> str:
        if self.raw_fragment and _valid_encoded(self.raw_fragment, _FRAGMENT):
            try:
                if _unescape(self.raw_fragment, _FRAGMENT) == self.fragment:
                    return self.raw_fragment
            except _URLError:
                pass
        return _escape(self.fragment, _FRAGMENT)

    def string(self) -> str:
        """net/url's URL.String: the URL reassembled."""
        return self._assembled

    @functools.cached_property
    def _assembled(self) -> str:  # computed once: equality and hashing read it
        out = f"{self.scheme}:" if self.scheme else ""
        if self.opaque:
            out += self.opaque
        else:
            if (self.scheme or self.host or self.user is not None) \
                    and not (self.omit_host and not self.host and self.user is None):
                if self.host or self.path or self.user is not None:
                    out += "//"
                if self.user is not None:
                    out += f"{self.user}@"
                if self.host:
                    out += _escape(self.host, _HOST)
            path = self.escaped_path()
            if path and path[0] != "/" and self.host:
                out += "/"
            if out == "" and ":" in path.split("/", 1)[0]:
                out += "./"  # RFC 3986 4.2: a first segment with a colon would read as a scheme
            out += path
        if self.force_query or self.raw_query:
            out += "?" + self.raw_query
        if self.fragment:
            out += "#" + self.escaped_fragment()
        return out


def _split_scheme(raw: str) -> tuple[str, str]:
    """net/url's getScheme: (scheme, rest), or ("", raw) when `raw` does not start with one."""
    for i, char in enumerate(raw):
        if "a" <= char <= "z" or "A" <= char <= "Z":
            continue
        if "0" <= char <= "9" or char in "+-.":
            if i == 0:
                return "", raw
            continue
        if char == ":":
            if i == 0:
                raise _URLError("missing protocol scheme")
            return raw[:i], raw[i + 1:]
        return "", raw
    return "", raw


def _valid_userinfo(text: str) -> bool:
    return all("A" <= c <= "Z" or "a" <= c <= "z" or "0" <= c <= "9" or c in "-._:~!$&'()*+,;=%@" for c in text)


def _parse_host(scheme: str, host: str) -> bytes:
    """net/url's parseHost: `host[:port]`, unescaped; an IP literal must be IPv6."""
    open_bracket = host.rfind("[")
    if open_bracket > 0:
        raise _URLError("invalid IP-literal")
    if open_bracket == 0:
        close_bracket = host.rfind("]")
        if close_bracket < 0:
            raise _URLError("missing ']' in host")
        colon_port = host[close_bracket + 1:]
        if not _valid_optional_port(colon_port):
            raise _URLError(f"invalid port {_quote(colon_port)} after host")
        port = _unescape(colon_port, _HOST)
        hostname = host[1:close_bracket]
        zone = hostname.find("%25")
        if zone >= 0:
            address = _unescape(hostname[:zone], _HOST) + _unescape(hostname[zone:], _ZONE)
        else:
            address = _unescape(hostname, _HOST)
        try:
            parsed = library_net.netip_parse_addr(_text(address))
        except ValueError as exc:
            raise _URLError(f"invalid host: {exc}") from None
        if parsed.bits == 32:
            raise _URLError("invalid IP-literal")
        return b"[" + address + b"]" + port
    first_colon = host.find(":")
    if first_colon >= 0:
        last_colon = host.rfind(":")
        # Go 1.26 allows several colons (a list of hosts, as databases write them) only
        # outside http and https (GODEBUG urlstrictcolons, on by default).
        colon = first_colon if scheme in ("http", "https") else last_colon
        colon_port = host[colon:]
        if not _valid_optional_port(colon_port):
            raise _URLError(f"invalid port {_quote(colon_port)} after host")
    return _unescape(host, _HOST)


def _parse_authority(scheme: str, authority: str) -> tuple[_User | None, bytes]:
    at = authority.rfind("@")
    host = _parse_host(scheme, authority if at < 0 else authority[at + 1:])
    if at < 0:
        return None, host
    userinfo = authority[:at]
    if not _valid_userinfo(userinfo):
        raise _URLError("net/url: invalid userinfo")
    if ":" not in userinfo:
        return _User(_unescape(userinfo, _USER_PASSWORD), None), host
    username, password = userinfo.split(":", 1)
    return _User(_unescape(username, _USER_PASSWORD), _unescape(password, _USER_PASSWORD)), host


def _parse(raw: str, *, via_request: bool) -> dict[str, Any]:
    """net/url's parse: the fields of a URL (without fragment); raises with net/url's reason."""
    if any(c < " " or c == "\x7f" for c in raw):
        raise _URLError("net/url: invalid control character in URL")
    if raw == "" and via_request:
        raise _URLError("empty url")
    if raw == "*":
        return {"path": b"*"}
    scheme, rest = _split_scheme(raw)
    parts: dict[str, Any] = {"scheme": scheme.lower()}
    if rest.endswith("?") and rest.count("?") == 1:
        parts["force_query"] = True
        rest = rest[:-1]
    else:
        rest, _, parts["raw_query"] = rest.partition("?")
    if not rest.startswith("/"):
        if parts["scheme"]:
            parts["opaque"] = rest  # a rootless path (RFC 3986): opaque
            return parts
        if via_request:
            raise _URLError("invalid URI for request")
        if ":" in rest.split("/", 1)[0]:
            raise _URLError("first path segment in URL cannot contain colon")
    if (parts["scheme"] or (not via_request and not rest.startswith("///"))) and rest.startswith("//"):
        authority, slash, path = rest[2:].partition("/")
        parts["user"], parts["host"] = _parse_authority(parts["scheme"], authority)
        rest = slash + path
    elif parts["scheme"] and rest.startswith("/"):
        parts["omit_host"] = True
    path_bytes = _unescape(rest, _PATH)
    parts["path"] = path_bytes
    parts["raw_path"] = "" if _escape(path_bytes, _PATH) == rest else rest
    return parts


def _parse_error(raw: str, reason: str) -> _URLError:
    return _URLError(f"parse {_quote(raw)}: {reason}")


def parse_request_uri(raw: str) -> URL:
    """net/url.ParseRequestURI: an absolute URI or an absolute path, the rest never a fragment."""
    try:
        return URL(**_parse(raw, via_request=True))
    except _URLError as exc:
        raise _parse_error(raw, str(exc)) from None


def parse(raw: str) -> URL:
    """net/url.Parse: any URI reference, with the fragment split off."""
    before, hash_sign, fragment = raw.partition("#")
    try:
        parts = _parse(before, via_request=False)
    except _URLError as exc:
        raise _parse_error(before, str(exc)) from None
    if hash_sign and fragment:
        try:
            parts["fragment"] = _unescape(fragment, _FRAGMENT)
        except _URLError as exc:
            raise _parse_error(raw, str(exc)) from None
        parts["raw_fragment"] = "" if _escape(parts["fragment"], _FRAGMENT) == fragment else fragment
    return URL(**parts)


def _split_host_port(host: str) -> tuple[str, str]:
    """net/url's splitHostPort: a valid numeric port off the end, brackets off an IPv6 host."""
    port = ""
    colon = host.rfind(":")
    if colon >= 0 and _valid_optional_port(host[colon:]):
        host, port = host[:colon], host[colon + 1:]
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host, port


def query(raw_query: str) -> dict[str, list[str]]:
    """net/url's URL.Query: the parameters, malformed pairs silently left out."""
    values: dict[str, list[str]] = {}
    if raw_query.count("&") + 1 > _MAX_QUERY_PARAMETERS:
        return values
    for pair in raw_query.split("&"):
        if ";" in pair or pair == "":
            continue
        key, _, value = pair.partition("=")
        try:
            name, text = _unescape(key, _QUERY_COMPONENT), _unescape(value, _QUERY_COMPONENT)
        except _URLError:
            continue
        values.setdefault(_text(name), []).append(_text(text))
    return values


def _string(value: Any, function: str) -> str:
    if not isinstance(value, str):
        raise operators.no_such_overload(function, value)
    return str(value)


def _url(value: Any, function: str) -> URL:
    if not isinstance(value, URL):
        raise operators.no_such_overload(function, value)
    return value


@operators.propagates_errors
def url(value: Any) -> URL:
    text = _string(value, "url")
    cost.charge(cost.string_traversal(len(text)))
    try:
        parse_request_uri(text)
        # ParseRequestURI decides; Parse gives the parts (ParseRequestURI would read a
        # fragment as part of the path or query).
        return parse(text)
    except _URLError as exc:
        raise _URLError(f"URL parse error during conversion from string: {exc}") from None


@operators.propagates_errors
def isURL(value: Any) -> celtypes.BoolType:
    text = _string(value, "isURL")
    try:
        parse_request_uri(text)
    except _URLError:
        return operators.cel_bool(False)
    return operators.cel_bool(True)


@operators.propagates_errors
def getScheme(value: Any) -> celtypes.StringType:
    return celtypes.StringType(_url(value, "getScheme").scheme)


@operators.propagates_errors
def getHost(value: Any) -> celtypes.StringType:
    return celtypes.StringType(_text(_url(value, "getHost").host))


@operators.propagates_errors
def getHostname(value: Any) -> celtypes.StringType:
    return celtypes.StringType(_split_host_port(_text(_url(value, "getHostname").host))[0])


@operators.propagates_errors
def getPort(value: Any) -> celtypes.StringType:
    return celtypes.StringType(_split_host_port(_text(_url(value, "getPort").host))[1])


@operators.propagates_errors
def getEscapedPath(value: Any) -> celtypes.StringType:
    return celtypes.StringType(_url(value, "getEscapedPath").escaped_path())


@operators.propagates_errors
def getQuery(value: Any) -> celtypes.MapType:
    parameters = query(_url(value, "getQuery").raw_query)
    return celtypes.MapType({
        celtypes.StringType(key): celtypes.ListType([celtypes.StringType(v) for v in values])
        for key, values in parameters.items()
    })


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "url": url,
    "isURL": isURL,
    "getScheme": getScheme,
    "getHost": getHost,
    "getHostname": getHostname,
    "getPort": getPort,
    "getEscapedPath": getEscapedPath,
    "getQuery": getQuery,
}
GLOBALS = frozenset({"url", "isURL"})
