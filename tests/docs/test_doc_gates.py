"""The README names every feature gate `--features` takes: in `dralloc allocate`'s flag table and as a
row of the per-release table ("Kubernetes 1.36, 1.37 and 1.38"), with each release's default there."""

from __future__ import annotations

import pathlib
import re

import pytest

from dralloc.allocation import features

README = (pathlib.Path(__file__).resolve().parents[2] / "README.md").read_text()
GATES = sorted({gate for release in features.RELEASES for gate in features.DEFAULTS[release]})


def _features_row() -> str:
    rows = [line for line in README.splitlines() if line.startswith("| `--features G=true,...` | DRA feature gates")]
    assert len(rows) == 1, "dralloc allocate's --features row"
    return rows[0]


def _release_rows() -> dict[str, list[str]]:
    """The per-release table's rows by gate: the cells after the first."""
    table = README.split("### Kubernetes 1.36, 1.37 and 1.38", 1)[1].split("\n\n| gate / field |", 1)[1]
    rows: dict[str, list[str]] = {}
    for line in table.split("\n\n", 1)[0].splitlines()[2:]:
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        for gate in re.findall(r"\bDRA\w+", cells[0].split(":", 1)[0]):
            rows[gate] = cells[1:]
    return rows


@pytest.mark.parametrize("gate", GATES)
def test_the_features_flag_row_names_the_gate(gate: str) -> None:
    assert re.search(rf"\b{gate}\b", _features_row())


@pytest.mark.parametrize("gate", GATES)
def test_the_release_table_gives_the_gate_its_default_at_each_release(gate: str) -> None:
    cells = _release_rows()[gate]
    for release, cell in zip(features.RELEASES, cells, strict=False):
        default = features.DEFAULTS[release].get(gate)
        if default is None:
            assert cell.split()[0] == "—", (release, cell)
        else:
            assert cell.split()[0] == ("on" if default else "off"), (release, cell)
