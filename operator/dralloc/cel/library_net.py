"""Kubernetes' IP and CIDR CEL libraries (`k8s.io/apiserver/pkg/cel/library/ip.go`, `cidr.go`).

Upstream parses with Go's `net/netip` and then refuses zones and IPv4-mapped IPv6
addresses. Python's `ipaddress` accepts other spellings and words its errors
differently, and the error text reaches the user (a runtime error fails the claim),
so `parse_addr`/`parse_prefix` follow `netip.ParseAddr`/`ParsePrefix` step by step,
messages included. Formatting is `netip.Addr.String` (RFC 5952 for IPv6).

Values: `IP` (type name `net.IP`) and `CIDR` (`net.CIDR`, which keeps the address as
written: `cidr("10.0.0.1/8").ip()` is 10.0.0.1, `masked()` zeroes the host bits).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from celpy import celtypes

from dralloc.cel import operators

_V4_BITS = 32
_V6_BITS = 128


# celpy turns exactly ValueError (not subclasses) into a CEL error value.
_ParseError = ValueError


def _quote(text: str) -> str:
    # Go's strconv.Quote for the printable ASCII that addresses consist of.
    return json.dumps(text, ensure_ascii=False)


def _addr_error(text: str, message: str, at: str = "") -> _ParseError:
    suffix = f" (at {_quote(at)})" if at else ""
    return _ParseError(f"ParseAddr({_quote(text)}): {message}{suffix}")


@dataclass(frozen=True, slots=True)
class IP:
    """An address as netip.Addr holds it: 4 or 16 bytes as an int, and a zone (always empty here)."""

    bits: int  # 32 or 128
    value: int
    zone: str = ""

    def __str__(self) -> str:
        if self.bits == _V4_BITS:
            return ".".join(str((self.value >> shift) & 0xFF) for shift in (24, 16, 8, 0))
        return _format_v6(self.value) + (f"%{self.zone}" if self.zone else "")

    @property
    def is4in6(self) -> bool:
        return self.bits == _V6_BITS and self.value >> 32 == 0xFFFF


@dataclass(frozen=True, slots=True)
class CIDR:
    """A prefix as netip.Prefix holds it: the address as written and the prefix length."""

    addr: IP
    length: int

    def __str__(self) -> str:
        return f"{self.addr}/{self.length}"

    def masked(self) -> CIDR:
        return CIDR(IP(self.addr.bits, self.addr.value & _mask(self.addr.bits, self.length)), self.length)


def _mask(bits: int, length: int) -> int:
    return ((1 << length) - 1) << (bits - length)


def _format_v6(value: int) -> str:
    fields = [(value >> (112 - 16 * i)) & 0xFFFF for i in range(8)]
    if value >> 32 == 0xFFFF:  # netip prints IPv4-mapped addresses with the IPv4 part dotted
        return "::ffff:" + str(IP(_V4_BITS, value & 0xFFFFFFFF))
    # The longest run of two or more zero fields (the first of equal runs) becomes "::".
    best_start, best_length, start = -1, 1, None
    for i, field in enumerate([*fields, 1]):
        if field == 0 and start is None:
            start = i
        elif field != 0 and start is not None:
            if i - start > best_length:
                best_start, best_length = start, i - start
            start = None
    if best_start < 0:
        return ":".join(f"{f:x}" for f in fields)
    head = ":".join(f"{f:x}" for f in fields[:best_start])
    tail = ":".join(f"{f:x}" for f in fields[best_start + best_length:])
    return f"{head}::{tail}"


def _parse_v4_fields(text: str, part: str) -> int:
    """netip's parseIPv4Fields over `part` (a suffix of `text`, which errors name)."""
    value = digits = position = 0
    octets: list[int] = []
    for i, char in enumerate(part):
        if "0" <= char <= "9":
            if digits == 1 and value == 0:
                raise _addr_error(text, "IPv4 field has octet with leading zero")
            value = value * 10 + int(char)
            digits += 1
            if value > 255:
                raise _addr_error(text, "IPv4 field has value >255")
        elif char == ".":
            if i == 0 or i == len(part) - 1 or part[i - 1] == ".":
                raise _addr_error(text, "IPv4 field must have at least one digit", part[i:])
            if position == 3:
                raise _addr_error(text, "IPv4 address too long")
            octets.append(value)
            position += 1
            value = digits = 0
        else:
            raise _addr_error(text, "unexpected character", part[i:])
    if position < 3:
        raise _addr_error(text, "IPv4 address too short")
    octets.append(value)
    return int.from_bytes(bytes(octets), "big")


def _parse_v6(text: str) -> IP:
    s, zone = text, ""
    if "%" in s:
        s, zone = s.split("%", 1)
        if zone == "":
            raise _addr_error(text, "zone must be a non-empty string")
    ip = bytearray(16)
    ellipsis = -1
    if s.startswith("::"):
        ellipsis = 0
        s = s[2:]
        if s == "":
            return IP(_V6_BITS, 0, zone)
    i = 0
    while i < 16:
        off, acc = 0, 0
        while off < len(s):
            char = s[off]
            if char in "0123456789abcdefABCDEF":
                acc = (acc << 4) + int(char, 16)
            else:
                break
            if off > 3:
                raise _addr_error(text, "each group must have 4 or less digits", s)
            if acc > 0xFFFF:
                raise _addr_error(text, "IPv6 field has value >=2^16", s)
            off += 1
        if off == 0:
            raise _addr_error(text, "each colon-separated field must have at least one digit", s)
        if off < len(s) and s[off] == ".":
            if ellipsis < 0 and i != 12:
                raise _addr_error(text, "embedded IPv4 address must replace the final 2 fields of the address", s)
            if i + 4 > 16:
                raise _addr_error(text, "too many hex fields to fit an embedded IPv4 at the end of the address", s)
            v4 = _parse_v4_fields(text, s)
            ip[i:i + 4] = v4.to_bytes(4, "big")
            s = ""
            i += 4
            break
        ip[i], ip[i + 1] = acc >> 8, acc & 0xFF
        i += 2
        s = s[off:]
        if s == "":
            break
        if s[0] != ":":
            raise _addr_error(text, "unexpected character, want colon", s)
        if len(s) == 1:
            raise _addr_error(text, "colon must be followed by more characters", s)
        s = s[1:]
        if s[0] == ":":
            if ellipsis >= 0:
                raise _addr_error(text, "multiple :: in address", s)
            ellipsis = i
            s = s[1:]
            if s == "":
                break
    if s != "":
        raise _addr_error(text, "trailing garbage after address", s)
    if i < 16:
        if ellipsis < 0:
            raise _addr_error(text, "address string too short")
        n = 16 - i
        ip[ellipsis + n:16] = ip[ellipsis:i]
        ip[ellipsis:ellipsis + n] = bytes(n)
    elif ellipsis >= 0:
        raise _addr_error(text, "the :: must expand to at least one field of zeros")
    return IP(_V6_BITS, int.from_bytes(ip, "big"), zone)


def netip_parse_addr(text: str) -> IP:
    """netip.ParseAddr itself (zones and IPv4-mapped addresses allowed); net/url parses IP literals so."""
    for char in text:
        if char == ".":
            return IP(_V4_BITS, _parse_v4_fields(text, text))
        if char == ":":
            return _parse_v6(text)
        if char == "%":
            raise _addr_error(text, "missing IPv6 address")
    raise _addr_error(text, "unable to parse IP")


def parse_addr(text: str) -> IP:
    """upstream's parseIPAddr: netip.ParseAddr without zones or IPv4-mapped IPv6."""
    try:
        addr = netip_parse_addr(text)
    except _ParseError as exc:
        raise _ParseError(f"IP Address {_quote(text)} parse error during conversion from string: {exc}") from None
    if addr.zone:
        raise _ParseError(f"IP address {_quote(text)} with zone value is not allowed")
    if addr.is4in6:
        raise _ParseError(f"IPv4-mapped IPv6 address {_quote(text)} is not allowed")
    return addr


def _netip_parse_prefix(text: str) -> CIDR:
    def error(message: str) -> _ParseError:
        return _ParseError(f"netip.ParsePrefix({_quote(text)}): {message}")

    slash = text.rfind("/")
    if slash < 0:
        raise error("no '/'")
    try:
        addr = netip_parse_addr(text[:slash])
    except _ParseError as exc:
        raise error(str(exc)) from None
    if addr.bits == _V6_BITS and addr.zone:
        raise error("IPv6 zones cannot be present in a prefix")
    bits_text = text[slash + 1:]
    # strconv.Atoi would take a sign or leading zeros; netip does not.
    if (len(bits_text) > 1 and not "1" <= bits_text[0] <= "9") or not bits_text.isascii() \
            or not bits_text.lstrip("+-").isdigit():
        raise error(f"bad bits after slash: {_quote(bits_text)}")
    length = int(bits_text)
    if length < 0 or length > addr.bits:
        raise error("prefix length out of range")
    return CIDR(addr, length)


def parse_prefix(text: str) -> CIDR:
    """upstream's parseCIDR, with stringToCIDR's wording around its errors."""
    try:
        prefix = _netip_parse_prefix(text)
    except _ParseError as exc:
        raise _ParseError("network address parse error during conversion from string: "
                          f"network address parse error during conversion from string: {exc}") from None
    if prefix.addr.is4in6:
        raise _ParseError("network address parse error during conversion from string: "
                          f"IPv4-mapped IPv6 address {_quote(text)} is not allowed")
    return prefix


def _string(value: Any, function: str) -> str:
    if not isinstance(value, str):
        raise operators.no_such_overload(function, value)
    return str(value)


def _ip(value: Any, function: str) -> IP:
    if not isinstance(value, IP):
        raise operators.no_such_overload(function, value)
    return value


def _cidr(value: Any, function: str, *args: Any) -> CIDR:
    if not isinstance(value, CIDR):
        raise operators.no_such_overload(function, value, *args)
    return value


@operators.propagates_errors
def ip(value: Any) -> IP:
    """`ip(string)`, and the member `cidr.ip()` (celpy calls both as `ip(x)`)."""
    if isinstance(value, CIDR):
        return value.addr
    return parse_addr(_string(value, "ip"))


@operators.propagates_errors
def cidr(value: Any) -> CIDR:
    return parse_prefix(_string(value, "cidr"))


def _parses(parse: Callable[[str], object], value: Any, function: str) -> celtypes.BoolType:
    """isIP/isCIDR: whether the string parses (a non-string is still an error)."""
    try:
        parse(_string(value, function))
    except _ParseError:
        return operators.cel_bool(False)
    return operators.cel_bool(True)


@operators.propagates_errors
def isIP(value: Any) -> celtypes.BoolType:
    return _parses(parse_addr, value, "isIP")


@operators.propagates_errors
def isCIDR(value: Any) -> celtypes.BoolType:
    return _parses(parse_prefix, value, "isCIDR")


@operators.propagates_errors
def ip_is_canonical(value: Any) -> celtypes.BoolType:
    """`ip.isCanonical(string)`: parses (errors if it does not) and compares with the canonical form."""
    text = _string(value, "ip.isCanonical")
    return operators.cel_bool(str(parse_addr(text)) == text)


@operators.propagates_errors
def family(value: Any) -> celtypes.IntType:
    return operators.cel_int(4 if _ip(value, "family").bits == _V4_BITS else 6)


def _first(addr: IP, bits: int) -> int:
    return addr.value >> (addr.bits - bits)


@operators.propagates_errors
def isUnspecified(value: Any) -> celtypes.BoolType:
    return operators.cel_bool(_ip(value, "isUnspecified").value == 0)


def _loopback(addr: IP) -> bool:
    return _first(addr, 8) == 127 if addr.bits == _V4_BITS else addr.value == 1


def _multicast(addr: IP) -> bool:
    return _first(addr, 4) == 0xE if addr.bits == _V4_BITS else _first(addr, 8) == 0xFF


def _link_local_unicast(addr: IP) -> bool:
    return _first(addr, 16) == 0xA9FE if addr.bits == _V4_BITS else _first(addr, 10) == 0xFE80 >> 6


@operators.propagates_errors
def isLoopback(value: Any) -> celtypes.BoolType:
    return operators.cel_bool(_loopback(_ip(value, "isLoopback")))


@operators.propagates_errors
def isLinkLocalMulticast(value: Any) -> celtypes.BoolType:
    addr = _ip(value, "isLinkLocalMulticast")
    if addr.bits == _V4_BITS:
        return operators.cel_bool(_first(addr, 24) == 0xE00000)
    return operators.cel_bool(_first(addr, 16) & 0xFF0F == 0xFF02)


@operators.propagates_errors
def isLinkLocalUnicast(value: Any) -> celtypes.BoolType:
    return operators.cel_bool(_link_local_unicast(_ip(value, "isLinkLocalUnicast")))


@operators.propagates_errors
def isGlobalUnicast(value: Any) -> celtypes.BoolType:
    addr = _ip(value, "isGlobalUnicast")
    if addr.bits == _V4_BITS and addr.value in (0, 0xFFFFFFFF):
        return operators.cel_bool(False)
    return operators.cel_bool(addr.value != 0 and not _loopback(addr) and not _multicast(addr)
                              and not _link_local_unicast(addr))


def _contains(prefix: CIDR, addr: IP) -> bool:
    # netip.Prefix.Contains: same family, equal under the prefix's mask.
    if addr.bits != prefix.addr.bits or addr.zone:
        return False
    mask = _mask(addr.bits, prefix.length)
    return addr.value & mask == prefix.addr.value & mask


@operators.propagates_errors
def containsIP(receiver: Any, other: Any) -> celtypes.BoolType:
    prefix = _cidr(receiver, "containsIP", other)
    if isinstance(other, str):
        try:
            other = parse_addr(other)
        except _ParseError:
            # upstream hands the parse error to the IP overload, which answers "no such overload"
            raise TypeError("no such overload") from None
    elif not isinstance(other, IP):
        raise operators.no_such_overload("containsIP", receiver, other)
    return operators.cel_bool(_contains(prefix, other))


@operators.propagates_errors
def containsCIDR(receiver: Any, other: Any) -> celtypes.BoolType:
    prefix = _cidr(receiver, "containsCIDR", other)
    if isinstance(other, str):
        other = parse_prefix(other)  # upstream passes this parse error through as it is
    elif not isinstance(other, CIDR):
        raise operators.no_such_overload("containsCIDR", receiver, other)
    # upstream: cidr.Overlaps(other) && cidr.Bits() <= other.Bits()
    if prefix.addr.bits != other.addr.bits:
        return operators.cel_bool(False)
    shortest = min(prefix.length, other.length)
    mask = _mask(prefix.addr.bits, shortest)
    overlaps = prefix.addr.value & mask == other.addr.value & mask
    return operators.cel_bool(overlaps and prefix.length <= other.length)


@operators.propagates_errors
def prefixLength(value: Any) -> celtypes.IntType:
    return operators.cel_int(_cidr(value, "prefixLength").length)


@operators.propagates_errors
def masked(value: Any) -> CIDR:
    return _cidr(value, "masked").masked()


@operators.propagates_errors
def isMask(value: Any) -> celtypes.BoolType:
    """CIDR library version 1 (Kubernetes 1.38): no bits set after the prefix length."""
    prefix = _cidr(value, "isMask")
    return operators.cel_bool(prefix == prefix.masked())


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "ip": ip,
    "cidr": cidr,
    "isIP": isIP,
    "isCIDR": isCIDR,
    "ip.isCanonical": ip_is_canonical,
    "family": family,
    "isUnspecified": isUnspecified,
    "isLoopback": isLoopback,
    "isLinkLocalMulticast": isLinkLocalMulticast,
    "isLinkLocalUnicast": isLinkLocalUnicast,
    "isGlobalUnicast": isGlobalUnicast,
    "containsIP": containsIP,
    "containsCIDR": containsCIDR,
    "prefixLength": prefixLength,
    "masked": masked,
    "isMask": isMask,
}
# Added by a later version of the library than some releases compile with (`checking.check`'s
# `removed`): CIDR version 1 came with Kubernetes 1.38.
CIDR_V1 = frozenset({"isMask"})
GLOBALS = frozenset({"ip", "cidr", "isIP", "isCIDR", "ip.isCanonical"})
