"""bench/scale.py's snapshot through the fast input paths gives what the slow ones give, byte for byte.

JSON is read with msgspec (documents.parse), YAML with dralloc.blockyaml; the slow paths are
json.loads and PyYAML's SafeLoader. The models built from either must be equal field for
field, dump to the same API JSON, and `dralloc simulate` must write the same report and
placements from the JSON and the YAML file.
"""

from __future__ import annotations

import json
import pathlib

import pytest
import yaml
from bench import scale_snapshot
from tests.offline.conftest import Invoke

from dralloc import documents
from dralloc.model import conversion


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, pathlib.Path]:
    return scale_snapshot.write(tmp_path_factory.mktemp("scale"), nodes=12, claims=24, seed=4, formats=("json", "yaml"))


def _models(decoded: list[object]) -> list[object]:
    return [conversion.parse(raw) for raw in conversion.flatten(decoded)]


def test_models_from_the_fast_paths_equal_those_from_json_loads_and_pyyaml(files: dict[str, pathlib.Path]) -> None:
    text_json, text_yaml = files["json"].read_text(), files["yaml"].read_text()
    slow = _models([json.loads(text_json)])
    assert _models(documents.parse(text_json)) == slow
    assert _models(list(yaml.load_all(text_yaml, Loader=yaml.SafeLoader))) == slow
    assert _models(documents.parse(text_yaml)) == slow
    dumped = [json.dumps(conversion.to_raw(m), sort_keys=True) for m in slow]  # type: ignore[arg-type]
    assert [json.dumps(conversion.to_raw(m), sort_keys=True)  # type: ignore[arg-type]
            for m in _models(documents.parse(text_json))] == dumped


def test_simulate_writes_the_same_from_json_and_yaml(dralloc: Invoke, files: dict[str, pathlib.Path],
                                                     tmp_path: pathlib.Path) -> None:
    reports, placed = [], []
    for fmt in ("json", "yaml"):
        out = tmp_path / f"{fmt}.txt"
        run = dralloc("simulate", "-f", str(files[fmt]), "-o", "json", "--placements-out", str(out))
        assert run.code in (0, 1), run.err
        report = run.json()
        assert report["placed"] > 0
        report.pop("seconds"), report.pop("placementsPerSecond")
        reports.append(report)
        placed.append(out.read_bytes())
    assert reports[0] == reports[1]
    assert placed[0] == placed[1]
