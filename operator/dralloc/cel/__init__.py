"""The DRA CEL environment: compile and evaluate device selectors.

Pure: expression text and a device in, a bool (or a typed error) out. No I/O, no
clock, no randomness, no logging of our own, no kopf or Kubernetes clients. The
only dralloc module imported is `dralloc.model.quantities`.

It reproduces upstream's `k8s.io/dynamic-resource-allocation/cel` environment
(Kubernetes 1.36) on top of cel-python (`celpy`): celpy parses, our checker
rejects what upstream's type checker would reject at compile time, celpy's
transpiler (extended with `cel.bind` and short-circuiting operators) turns the
tree into Python, and our function table supplies CEL's heterogeneous equality
and the Kubernetes libraries (quantity, semver, strings, lists, regex).

Modules are imported as modules; nothing is re-exported here:
`selectors` (the public entry points), `devices` (the `device` variable),
`checking`, `macros`, `operators`, `functions`, `library_*`, `scopes`.
"""
