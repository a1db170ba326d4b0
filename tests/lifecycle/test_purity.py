"""The lifecycle package stays pure: it imports only dralloc.model and a few standard modules.

Read from the source (AST), so a forbidden import fails here even on a code path no
other test runs. The layering of all packages is checked by tests/architecture/test_import_layers.py.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

import dralloc.lifecycle

PACKAGE = pathlib.Path(dralloc.lifecycle.__file__).parent
ALLOWED = {"__future__", "collections", "dataclasses", "datetime", "typing", "dralloc"}
ALLOWED_DRALLOC = ("dralloc.model", "dralloc.lifecycle", "dralloc.allocation")


def _imports(path: pathlib.Path) -> list[str]:
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
    return names


@pytest.mark.parametrize("path", sorted(PACKAGE.glob("*.py")), ids=lambda p: p.name)
def test_only_pure_imports(path: pathlib.Path) -> None:
    """No I/O, clock, randomness, logging or Kubernetes clients: only the model and plain data modules."""
    for name in _imports(path):
        assert name.split(".")[0] in ALLOWED, f"{path.name} imports {name}"
        if name.startswith("dralloc"):
            assert name.startswith(ALLOWED_DRALLOC), f"{path.name} imports {name}"


@pytest.mark.parametrize("path", sorted(PACKAGE.glob("*.py")), ids=lambda p: p.name)
def test_no_clock_reads(path: pathlib.Path) -> None:
    """Time only comes in as an argument: nothing asks the clock."""
    source = path.read_text()
    for call in ("datetime.now", "dt.datetime.now", "utcnow", "date.today", "time.time"):
        assert call not in source, f"{path.name} calls {call}"
