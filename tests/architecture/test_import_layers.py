"""The operator's modules are layered, and each keeps its private names to itself.

Read from the source (AST, imports inside functions and under `TYPE_CHECKING` included), so
a change that breaks the layering fails here, in the default suite, whichever code path
it is on:

- no import cycle among the modules of `dralloc` (a module that needs one from above it
  is in the wrong layer, or what they share belongs lower down);
- no module uses another module's `_private` name (`from m import _x`, `m._x`): what two
  modules share is public and documented, or lives where both can own it;
- the packages form the layers the package docstrings describe (the pure core at the
  bottom, the handlers on top), and handlers/ itself is layered as its docstring shows.
"""

from __future__ import annotations

import ast
import collections
import dataclasses
import pathlib

import pytest

import dralloc

ROOT = pathlib.Path(dralloc.__file__).parent

# The packages, lowest first: a package may import its own modules and those of the packages
# before it in this list. The pure core (model .. state) never reaches the API.
PACKAGES = ("model", "cel", "allocation", "lifecycle", "scheduling", "state")
# handlers/, lowest first: a module may import modules of its own layer and of the layers
# before it. Every module of handlers/ is in exactly one layer (a new one must be placed).
HANDLER_LAYERS: tuple[tuple[str, ...], ...] = (
    # parts that know nothing of the runtime
    ("clock", "failures", "looping", "registry", "deciding", "batches", "recording", "duties", "leading"),
    ("runtime",),  # what every handler shares while the operator runs
    ("items", "committing"),  # a pod's claims read from the view; the API writes and their settlement
    ("intents", "reporting"),  # a gang's binds record; what pods and PodGroups are told
    ("ganging", "completing", "reclaiming", "preempting", "moving"),  # the gang passes (independent of each other), gate
    # refusals, priority preemption, moving movable pods
    ("scheduling",),  # the scheduling pass and loop
    ("lifecycle", "evicting", "health", "coexisting", "watching"),  # the other loops and the watches
    ("operating",),  # kopf's startup and the control loops' wiring
    ("__init__",),
)
INDEPENDENT = (("ganging", "completing"),)


@dataclasses.dataclass(frozen=True)
class Use:
    line: int
    module: str  # the dralloc module used
    name: str | None = None  # a name taken from it (from-import or attribute), if any


def module_name(path: pathlib.Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in sorted(ROOT.rglob("*.py"))}


def uses(path: pathlib.Path, name: str) -> list[Use]:
    """Every dralloc module the file of module `name` imports, and every name it takes from one (relative
    imports resolved; `import a.b as c` and `from a import b` followed by `c.x` / `b.x` count as uses of x)."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    tree = ast.parse(path.read_text(), str(path))
    found: list[Use] = []
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in MODULES:
                    found.append(Use(node.lineno, alias.name))
                    if alias.asname:
                        aliases[alias.asname] = alias.name
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            source = ".".join(base + ([node.module] if node.module else []))
            for alias in node.names:
                submodule = f"{source}.{alias.name}"
                if submodule in MODULES:
                    found.append(Use(node.lineno, submodule))
                    aliases[alias.asname or alias.name] = submodule
                elif source in MODULES:
                    found.append(Use(node.lineno, source, alias.name))
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
            found.append(Use(node.lineno, aliases[node.value.id], node.attr))
    return found


USES = {name: uses(path, name) for name, path in MODULES.items()}


def private(name: str | None) -> bool:
    return name is not None and name.startswith("_") and not name.startswith("__")


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def imports() -> dict[str, set[str]]:
    return {name: {use.module for use in found if use.module != name} for name, found in USES.items()}


# ---- the checks themselves look at something ------------------------------------------------------

def test_the_checks_read_the_operator_and_see_its_imports() -> None:
    """Guards against a wrong root or a parser that finds nothing: the handlers' known edges are seen."""
    graph = imports()
    assert len(MODULES) > 100
    assert "dralloc.handlers.runtime" in graph["dralloc.handlers.scheduling"]
    assert any(use.name == "give_back" for use in USES["dralloc.handlers.ganging"])


def test_cycle_finder_finds_a_cycle_and_only_that() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_private_use_finder_sees_from_imports_and_attributes(tmp_path: pathlib.Path) -> None:
    source = tmp_path / "probe.py"
    source.write_text("from dralloc.handlers import committing\nfrom dralloc.handlers.items import _claim_names\n"
                      "from . import ganging as g\ncommitting._rv({})\ng._held()\n")
    found = {(use.module, use.name) for use in uses(source, "dralloc.handlers.probe") if private(use.name)}
    assert found == {("dralloc.handlers.items", "_claim_names"), ("dralloc.handlers.committing", "_rv"),
                     ("dralloc.handlers.ganging", "_held")}


# ---- the rules -------------------------------------------------------------------------------------

def test_no_import_cycle_among_the_operators_modules() -> None:
    assert cycles(imports()) == []


def test_no_module_uses_another_modules_private_names() -> None:
    offenders = sorted(f"{ROOT.parent / MODULES[name].relative_to(ROOT.parent)}:{use.line}: {use.module}.{use.name}"
                       for name, found in USES.items() for use in found
                       if private(use.name) and use.module != name)
    assert offenders == []


def package_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


@pytest.mark.parametrize("package", PACKAGES)
def test_core_packages_import_only_the_packages_below_them(package: str) -> None:
    allowed = {"", *PACKAGES[: PACKAGES.index(package) + 1]}  # "": the root package (its version only)
    offenders = sorted(f"{name} imports {use.module}" for name, found in USES.items()
                       if package_of(name) == package for use in found if package_of(use.module) not in allowed)
    assert offenders == []


def handler_layer(module: str) -> int:
    short = module.removeprefix("dralloc.handlers").removeprefix(".") or "__init__"
    for position, layer in enumerate(HANDLER_LAYERS):
        if short in layer:
            return position
    raise AssertionError(f"{module} is in no layer of HANDLER_LAYERS: place it there (and in handlers/__init__.py)")


def test_every_handlers_module_has_a_layer() -> None:
    placed = [short for layer in HANDLER_LAYERS for short in layer]
    present = sorted(name.removeprefix("dralloc.handlers").removeprefix(".") or "__init__"
                     for name in MODULES if package_of(name) == "handlers")
    assert sorted(placed) == present


def test_handlers_import_only_their_own_layer_and_those_below() -> None:
    offenders = sorted(
        f"{name} (layer {handler_layer(name)}) imports {use.module} (layer {handler_layer(use.module)})"
        for name, found in USES.items() if package_of(name) == "handlers"
        for use in found if package_of(use.module) == "handlers" and handler_layer(use.module) > handler_layer(name))
    assert offenders == []


@pytest.mark.parametrize(("one", "other"), INDEPENDENT)
def test_the_gang_passes_do_not_know_each_other(one: str, other: str) -> None:
    graph = imports()
    assert f"dralloc.handlers.{other}" not in graph[f"dralloc.handlers.{one}"]
    assert f"dralloc.handlers.{one}" not in graph[f"dralloc.handlers.{other}"]


def test_nothing_below_handlers_imports_them() -> None:
    """Only the wiring (cli, running) reaches into handlers/: the core and the tools do not."""
    offenders = collections.Counter(
        name for name, found in USES.items() for use in found
        if package_of(use.module) == "handlers" and package_of(name) not in {"handlers", "cli", "running"})
    assert dict(offenders) == {}
