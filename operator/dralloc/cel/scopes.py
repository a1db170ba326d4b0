"""Variable scopes that celpy's transpiled code reads as its `activation`.

celpy's own `Activation` clones a chain of name containers for every evaluation
and logs on each lookup, which dominated evaluation time. Transpiled code only
needs three things from its activation: `activation.<name>` for a variable,
`activation.resolve_variable(name)` for `.name`, and
`activation.nested_activation(vars=...)` for a macro's loop variable. A `Scope`
provides exactly those, is immutable, and is shared: each `DeviceEnv` builds its
root scope once, and macros chain short-lived child scopes onto it, so
concurrent evaluations never touch shared mutable state.

`cel.bind` uses `LazyScope`: like cel-go, the bound expression is evaluated at
most once and only if the body reads the variable, so an error in an unused
binding does not fail the selector.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

_MISSING = object()

# Names a CEL variable may not take, because transpiled code reaches them as
# attributes of the scope itself.
RESERVED_NAMES = frozenset({"nested_activation", "resolve_variable", "get"})


class Scope:
    """An immutable chain of variable bindings."""

    __slots__ = ("_parent", "_vars")

    def __init__(self, variables: Mapping[str, Any], parent: Scope | None = None) -> None:
        self._vars = variables
        self._parent = parent

    def _lookup(self, name: str) -> Any:
        scope: Scope | None = self
        while scope is not None:
            value = scope._local(name)
            if value is not _MISSING:
                return value
            scope = scope._parent
        # celpy's result() turns NameError into "undeclared reference to ...".
        raise NameError(name, "")

    def _local(self, name: str) -> Any:
        return self._vars.get(name, _MISSING)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return self._lookup(name)

    def resolve_variable(self, name: str) -> Any:
        return self._lookup(name)

    get = resolve_variable

    def nested_activation(self, annotations: Any = None, vars: Mapping[str, Any] | None = None) -> Scope:
        return Scope(vars or {}, self)


class LazyScope(Scope):
    """One variable whose value is computed on first read, then remembered."""

    __slots__ = ("_done", "_name", "_outcome", "_thunk")

    def __init__(self, name: str, thunk: Callable[[Scope], Any], parent: Scope) -> None:
        super().__init__({}, parent)
        self._name = name
        self._thunk = thunk
        self._done = False
        self._outcome: Any = None

    def _local(self, name: str) -> Any:
        if name != self._name:
            return _MISSING
        if not self._done:
            parent = self._parent
            assert parent is not None
            try:
                self._outcome = (True, self._thunk(parent))
            except Exception as exc:
                self._outcome = (False, exc)
            self._done = True
        ok, value = self._outcome
        if not ok:
            raise value
        return value
