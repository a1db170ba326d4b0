"""The DRA CEL environment: compile and evaluate device selectors.

Pure: expression text and a device in, a bool (or a typed error) out. No I/O, no
clock, no randomness, no logging of our own, no kopf or Kubernetes clients. The
only dralloc module imported is `dralloc.model.quantities`.

It reproduces upstream's `k8s.io/dynamic-resource-allocation/cel` environment
(Kubernetes 1.37: the allocator's stored-expressions environment, docs/cel.md) on top of
cel-python (`celpy`): our grammar (celpy's plus optional syntax) parses, our checker
(`checking`, `typecheck`) rejects what upstream's type checker and validators reject at
compile time, celpy's transpiler (extended in `macros`: `cel.bind`, comprehensions,
optionals, short-circuiting operators) turns the tree into Python, and our function table
supplies CEL's heterogeneous equality and the Kubernetes and cel-go libraries (quantity,
semver, IP/CIDR, URLs, the Format library, strings, format, lists, sets, optionals, regex).
`cost` bounds the work of one evaluation. `attributes` and `versions` convert device
attribute values without celpy, so that a caller checking a device before any selector is
compiled does not load the engine.

Modules are imported as modules; nothing is re-exported here:
`selectors` (the public entry points), `derived` (derived attributes), `compiling` (the
compile steps both share: parse, transpile, the errors and their wording), `devices` (the
`device` variable), `attributes` and `versions` (plain attribute values), `grammar`,
`quickparse`, `checking`, `typecheck`, `macros`, `operators`, `functions`, `library_*`,
`scopes`, `cost`, `fastpath`, `lru` (the bounded least-recently-used map of the
expression-keyed caches).
"""
