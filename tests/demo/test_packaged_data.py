"""`dralloc demo` installed without the repository (`pip install .`) still has its objects and CRDs.

operator/dralloc/data/ holds copies of examples/demo/ and crds/ (package data, pyproject.toml); the demo
reads the repository's folders when it runs from a checkout and the copies otherwise (issue 32: after a
plain `pip install .` it could not find examples/demo or crds/).
"""

from __future__ import annotations

import fnmatch
import pathlib
import tomllib

import pytest

from dralloc import demo

REPO = pathlib.Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("checkout", "packaged"), [("examples/demo", "demo"), ("crds", "crds")])
def test_the_packaged_copies_are_the_repositorys_files(checkout: str, packaged: str) -> None:
    """Edit the files under examples/demo/ or crds/, then copy them to operator/dralloc/data/ too."""
    ours = sorted(p.name for p in (REPO / checkout).glob("*.yaml"))
    copies = sorted(p.name for p in (demo.PACKAGED / packaged).glob("*.yaml"))
    assert copies == ours, f"operator/dralloc/data/{packaged}/ must hold exactly {checkout}/*.yaml"
    for name in ours:
        assert (demo.PACKAGED / packaged / name).read_bytes() == (REPO / checkout / name).read_bytes(), name


def test_without_the_checkouts_folders_the_demo_reads_the_packaged_copies(tmp_path: pathlib.Path) -> None:
    assert demo._checkout_or_packaged(REPO / "crds", "crds") == REPO / "crds"
    assert demo._checkout_or_packaged(tmp_path / "missing", "crds") == demo.PACKAGED / "crds"
    assert any((demo.PACKAGED / "demo").glob("*.yaml"))


def test_the_package_data_patterns_cover_the_copies() -> None:
    """pyproject.toml's package data ships every copy (a file none of its patterns matches is left out of
    the wheel)."""
    patterns = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["dralloc"]
    files = [p.relative_to(demo.PACKAGED.parent).as_posix() for p in demo.PACKAGED.rglob("*") if p.is_file()]
    assert files and all(any(fnmatch.fnmatchcase(f, pattern) for pattern in patterns) for f in files), files
