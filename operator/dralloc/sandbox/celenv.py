"""The DRA CEL environment as kube-apiserver 1.37 declares it, for the type checker.

Types are named as cel-go prints them (`int`, `list(dyn)`, `kubernetes.Quantity`,
`kubernetes.DRADevice`). `device` is the one variable; `GLOBALS` and `METHODS` hold the
functions of the standard library and the Kubernetes libraries (quantity, semver, URL,
format, IP and CIDR, strings, lists, sets, optionals) that a selector may call, each with its
overloads: parameter patterns (a type, "list", "map" or "any") and the result type.
A name missing here is an undeclared reference to the checker, so the tables err on
the side of listing too much: `dyn` receivers and arguments match every overload.
"""

from __future__ import annotations

DYN = "dyn"
BOOL = "bool"
DEVICE = "kubernetes.DRADevice"
QUANTITY = "kubernetes.Quantity"
SEMVER = "kubernetes.Semver"
URL = "kubernetes.URL"
FORMAT = "kubernetes.NamedFormat"
# The Format library's constant formats: `format.dns1123Label()` and the others.
FORMAT_NAMES = ("dns1123Label", "dns1123Subdomain", "dns1035Label", "qualifiedName", "dns1123LabelPrefix",
                "dns1123SubdomainPrefix", "dns1035LabelPrefix", "labelValue", "uri", "uuid", "byte", "date", "datetime")
IP = "kubernetes.IP"
CIDR = "kubernetes.CIDR"
DURATION = "google.protobuf.Duration"
TIMESTAMP = "google.protobuf.Timestamp"
NUMBERS = ("int", "uint", "double")

DEVICE_FIELDS = {"driver": "string", "attributes": "map(string, map(string, dyn))",
                 "capacity": f"map(string, map(string, {QUANTITY}))", "allowMultipleAllocations": BOOL}
TYPE_NAMES = frozenset({"int", "uint", "double", "bool", "string", "bytes", "list", "map", "null_type", "type", "dyn"})
MACROS = frozenset({"all", "exists", "exists_one", "map", "filter"})

Overload = tuple[tuple[str, ...], str]  # (parameter patterns, result); patterns: a type, "list", "map", "any"
_S, _I = "string", "int"
GLOBALS: dict[str, list[Overload]] = {
    "size": [((_S,), _I), (("bytes",), _I), (("list",), _I), (("map",), _I)],
    # cel-go's conversion overloads (string() also of IPs and CIDRs): string(url(...)) does not compile.
    **{name: [((kind,), name) for kind in kinds] for name, kinds in {
        "int": ("int", "uint", "double", "string", DURATION, TIMESTAMP),
        "uint": ("uint", "int", "double", "string"),
        "double": ("double", "int", "uint", "string"),
        "string": ("string", BOOL, "int", "uint", "double", "bytes", DURATION, TIMESTAMP, IP, CIDR),
        "bool": (BOOL, "string"),
        "bytes": ("bytes", "string"),
    }.items()},
    "type": [(("any",), "type")],
    "dyn": [(("any",), DYN)],
    "duration": [((_S,), DURATION)],
    "timestamp": [((_S,), TIMESTAMP), ((_I,), TIMESTAMP)],
    "matches": [((_S, _S), BOOL)],
    "quantity": [((_S,), QUANTITY)], "isQuantity": [((_S,), BOOL)],
    "semver": [((_S,), SEMVER), ((_S, BOOL), SEMVER)], "isSemver": [((_S,), BOOL), ((_S, BOOL), BOOL)],
    "url": [((_S,), URL)], "isURL": [((_S,), BOOL)],
    "format.named": [((_S,), DYN)],  # an optional format; optionals are dyn here
    **{f"format.{name}": [((), FORMAT)] for name in FORMAT_NAMES},
    "ip": [((_S,), IP)], "isIP": [((_S,), BOOL)],
    "cidr": [((_S,), CIDR)], "isCIDR": [((_S,), BOOL)],
    "strings.quote": [((_S,), _S)],
    "sets.contains": [(("list", "list"), BOOL)], "sets.equivalent": [(("list", "list"), BOOL)],
    "sets.intersects": [(("list", "list"), BOOL)],
    "lists.range": [((_I,), "list(int)")],
    "optional.of": [(("any",), DYN)], "optional.ofNonZeroValue": [(("any",), DYN)], "optional.none": [((), DYN)],
}
NAMESPACES = frozenset(name.split(".")[0] for name in GLOBALS if "." in name)

Method = tuple[str, tuple[str, ...], str]  # (receiver pattern, parameter patterns, result)
_TIME_GETTERS = ("getDate", "getDayOfMonth", "getDayOfWeek", "getDayOfYear", "getFullYear", "getMonth", "getHours",
                 "getMinutes", "getSeconds", "getMilliseconds")
METHODS: dict[str, list[Method]] = {
    "size": [(_S, (), _I), ("bytes", (), _I), ("list", (), _I), ("map", (), _I)],
    **{name: [(_S, (_S,), BOOL)] for name in ("contains", "startsWith", "endsWith", "matches")},
    "charAt": [(_S, (_I,), _S)],
    **{name: [(_S, (_S,), _I), (_S, (_S, _I), _I), ("list", ("any",), _I)] for name in ("indexOf", "lastIndexOf")},
    **{name: [(_S, (), _S)] for name in ("lowerAscii", "upperAscii", "trim")},
    "replace": [(_S, (_S, _S), _S), (_S, (_S, _S, _I), _S)],
    "split": [(_S, (_S,), "list(string)"), (_S, (_S, _I), "list(string)")],
    "substring": [(_S, (_I,), _S), (_S, (_I, _I), _S)],
    "join": [("list", (), _S), ("list", (_S,), _S)],
    "format": [(_S, ("list",), _S)],
    "find": [(_S, (_S,), _S)], "findAll": [(_S, (_S,), "list(string)"), (_S, (_S, _I), "list(string)")],
    "reverse": [("list", (), "list(dyn)")], "distinct": [("list", (), "list(dyn)")],
    "sort": [("list", (), "list(dyn)")], "flatten": [("list", (), "list(dyn)"), ("list", (_I,), "list(dyn)")],
    "slice": [("list", (_I, _I), "list(dyn)")], "isSorted": [("list", (), BOOL)],
    **{name: [("list", (), DYN)] for name in ("sum", "min", "max", "first", "last")},
    "includes": [("any", ("any",), BOOL)],
    "compareTo": [(QUANTITY, (QUANTITY,), _I), (SEMVER, (SEMVER,), _I)],
    **{name: [(QUANTITY, (QUANTITY,), BOOL), (SEMVER, (SEMVER,), BOOL)] for name in ("isGreaterThan", "isLessThan")},
    **{name: [(QUANTITY, (QUANTITY,), QUANTITY), (QUANTITY, (_I,), QUANTITY)] for name in ("add", "sub")},
    "sign": [(QUANTITY, (), _I)], "asInteger": [(QUANTITY, (), _I)], "isInteger": [(QUANTITY, (), BOOL)],
    "asApproximateFloat": [(QUANTITY, (), "double")],
    **{name: [(SEMVER, (), _I)] for name in ("major", "minor", "patch")},
    **{name: [(URL, (), _S)] for name in ("getScheme", "getHost", "getHostname", "getPort", "getEscapedPath")},
    "getQuery": [(URL, (), "map(string, list(string))")],
    "validate": [(FORMAT, (_S,), DYN)],  # an optional list of errors
    "family": [(IP, (), _I)],
    **{name: [(IP, (), BOOL)] for name in ("isUnspecified", "isLoopback", "isLinkLocalMulticast",
                                           "isLinkLocalUnicast", "isGlobalUnicast", "isCanonical")},
    "containsIP": [(CIDR, ("any",), BOOL)], "containsCIDR": [(CIDR, ("any",), BOOL)],
    "ip": [(CIDR, (), IP)], "masked": [(CIDR, (), CIDR)], "prefixLength": [(CIDR, (), _I)],
    **{name: [(TIMESTAMP, (), _I), (TIMESTAMP, (_S,), _I), (DURATION, (), _I)] for name in _TIME_GETTERS},
    "hasValue": [("any", (), BOOL)], "value": [("any", (), DYN)], "orValue": [("any", ("any",), DYN)],
    "or": [("any", ("any",), DYN)],
}
