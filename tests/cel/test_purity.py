"""dralloc.cel stays pure: no I/O, clock, randomness, logging or cluster clients."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import dralloc.cel

_PACKAGE = Path(dralloc.cel.__file__).parent
_FORBIDDEN = {"asyncio", "time", "random", "logging", "socket", "kopf", "kubernetes_asyncio", "aiohttp",
              "prometheus_client", "os", "subprocess"}
_ALLOWED_DRALLOC = ("dralloc.cel", "dralloc.model.quantities")


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


@pytest.mark.parametrize("path", sorted(_PACKAGE.glob("*.py")), ids=lambda p: p.name)
def test_module_is_pure(path: Path) -> None:
    """Each module imports nothing impure and nothing of dralloc beyond quantities."""
    for name in _imports(path):
        assert name.split(".")[0] not in _FORBIDDEN, name
        if name.startswith("dralloc.") :
            assert name.startswith(_ALLOWED_DRALLOC), name
