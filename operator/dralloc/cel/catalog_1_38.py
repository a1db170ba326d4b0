"""The names cel-go v0.33.2's checker (Kubernetes 1.38) suggests from when a selector names something
undeclared: the catalog cel.Env builds (functions, standard types, macros, variables) for the DRA
allocator's environment, listed by `oracle/bin/oracle-v0.38 cel-symbols` (v0.38.0-beta.0)."""

from __future__ import annotations

SYMBOLS_1_38: frozenset[str] = frozenset({
    "!_", "-_", "@in", "@not_strictly_false", "@sortByAssociatedKeys", "_!=_", "_%_", "_&&_", "_*_", "_+_",
    "_-_", "_/_", "_<=_", "_<_", "_==_", "_>=_", "_>_", "_?._", "_?_:_", "_[?_]", "_[_]",
    "__not_strictly_false__", "_in_", "_||_", "add", "all", "allowed", "asApproximateFloat", "asInteger",
    "bind", "bool", "bytes", "cel.@mapInsert", "charAt", "check", "cidr", "compareTo", "contains",
    "containsCIDR", "containsIP", "device", "distinct", "double", "duration", "dyn", "endsWith", "error",
    "errored", "exists", "existsOne", "exists_one", "family", "fieldSelector", "filter", "find", "findAll",
    "first", "flatten", "format", "format.byte", "format.date", "format.datetime", "format.dns1035Label",
    "format.dns1035LabelPrefix", "format.dns1123Label", "format.dns1123LabelPrefix",
    "format.dns1123Subdomain", "format.dns1123SubdomainPrefix", "format.labelValue", "format.named",
    "format.qualifiedName", "format.uri", "format.uuid", "getDate", "getDayOfMonth", "getDayOfWeek",
    "getDayOfYear", "getEscapedPath", "getFullYear", "getHost", "getHostname", "getHours", "getMilliseconds",
    "getMinutes", "getMonth", "getPort", "getQuery", "getScheme", "getSeconds", "google.protobuf.Duration",
    "google.protobuf.Timestamp", "group", "has", "hasValue", "in", "includes", "indexOf", "int", "ip",
    "ip.isCanonical", "isCIDR", "isGlobalUnicast", "isGreaterThan", "isIP", "isInteger", "isLessThan",
    "isLinkLocalMulticast", "isLinkLocalUnicast", "isLoopback", "isMask", "isQuantity", "isSemver",
    "isSorted", "isURL", "isUnspecified", "join", "labelSelector", "last", "lastIndexOf", "list",
    "lists.range", "lowerAscii", "major", "map", "masked", "matches", "max", "min", "minor", "name",
    "namespace", "null_type", "optFlatMap", "optMap", "optional.none", "optional.of",
    "optional.ofNonZeroValue", "optional.unwrap", "or", "orValue", "patch", "path", "prefixLength",
    "quantity", "reason", "replace", "resource", "reverse", "semver", "serviceAccount", "sets.contains",
    "sets.equivalent", "sets.intersects", "sign", "size", "slice", "sort", "sortBy", "split", "startsWith",
    "string", "strings.quote", "sub", "subresource", "substring", "sum", "timestamp", "transformList",
    "transformMap", "transformMapEntry", "trim", "type", "uint", "unwrapOpt", "upperAscii", "url", "validate",
    "value",
})
