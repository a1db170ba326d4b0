"""The pure packages stay pure, checked on their source (AST), including imports inside functions.

`dralloc.model`, `dralloc.cel` and `dralloc.allocation` never import I/O, clock,
randomness, logging or framework libraries and never read the clock; each
imports only its own layer and the layers below it. `dralloc.sandbox` imports
nothing else of dralloc. `dralloc.testing` (tools for tests and benchmarks) is
imported by no other dralloc package and imports neither pytest nor tests/.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

import dralloc

ROOT = pathlib.Path(dralloc.__file__).parent
FORBIDDEN = {"kopf", "kubernetes_asyncio", "kubernetes", "aiohttp", "prometheus_client", "asyncio", "socket",
             "time", "random", "logging", "secrets"}
PURE = {"model": {"model"}, "cel": {"cel", "model"}, "allocation": {"allocation", "cel", "model"}}
CLOCK_CALLS = {"now", "utcnow", "today", "time", "monotonic", "perf_counter"}


def sources(package: str) -> list[pathlib.Path]:
    return sorted((ROOT / package).rglob("*.py"))


def imported(path: pathlib.Path) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import in the file; relative imports resolved."""
    found: list[tuple[int, str]] = []
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    package = parts[:-1]  # for __init__.py too: its package is its directory
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            found.append((node.lineno, module))
            found += [(node.lineno, f"{module}.{alias.name}") for alias in node.names if module == "dralloc"]
    return found


def test_sources_are_found() -> None:
    """The checks below really look at files (guards against a wrong root)."""
    assert all(len(sources(package)) > 3 for package in PURE) is True


@pytest.mark.parametrize("package", sorted(PURE))
def test_pure_package_imports_no_io_clock_random_or_framework(package: str) -> None:
    """No module of the package imports kopf, kubernetes clients, aiohttp, prometheus, asyncio, socket, time, random or logging."""
    offenders = [
        f"{path.relative_to(ROOT)}:{line}: {module}"
        for path in sources(package) for line, module in imported(path)
        if module.split(".")[0] in FORBIDDEN
    ]
    assert offenders == []


@pytest.mark.parametrize("package", sorted(PURE))
def test_pure_package_never_reads_the_clock(package: str) -> None:
    """No module calls datetime.now()/utcnow()/today() or similar clock reads."""
    offenders = []
    for path in sources(package):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in CLOCK_CALLS and isinstance(node.func.value, (ast.Name, ast.Attribute))):
                base = node.func.value.id if isinstance(node.func.value, ast.Name) else node.func.value.attr
                if base in {"datetime", "date", "time"}:
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}: {base}.{node.func.attr}()")
    assert offenders == []


@pytest.mark.parametrize("package", sorted(PURE))
def test_pure_package_imports_only_lower_layers(package: str) -> None:
    """model imports no other dralloc package; cel only model; allocation only cel and model."""
    allowed = PURE[package]
    offenders = [
        f"{path.relative_to(ROOT)}:{line}: {module}"
        for path in sources(package) for line, module in imported(path)
        if module.startswith("dralloc.") and module.split(".")[1] not in allowed
    ]
    assert offenders == []


def test_sandbox_imports_nothing_else_of_dralloc() -> None:
    """dralloc.sandbox is independent of every other dralloc package."""
    offenders = [
        f"{path.relative_to(ROOT)}:{line}: {module}"
        for path in sources("sandbox") for line, module in imported(path)
        if module.startswith("dralloc.") and not module.startswith("dralloc.sandbox")
    ]
    assert offenders == []


def test_testing_is_imported_by_no_other_package_and_imports_no_test_code() -> None:
    """dralloc.testing sits on top of dralloc: the operator never loads it, and it never loads pytest
    or tests/ (bench/ uses it without either)."""
    offenders = [
        f"{path.relative_to(ROOT)}:{line}: {module}"
        for path in sorted(ROOT.rglob("*.py")) for line, module in imported(path)
        if (module == "dralloc.testing" or module.startswith("dralloc.testing."))
        and path.relative_to(ROOT).parts[0] != "testing"
    ]
    offenders += [
        f"{path.relative_to(ROOT)}:{line}: {module}"
        for path in sources("testing") for line, module in imported(path)
        if module.split(".")[0] in {"pytest", "_pytest", "tests"}
    ]
    assert sources("testing")
    assert offenders == []
