"""Running the `dralloc` command in-process (`cli.main`) and as a subprocess (`python -m dralloc`)."""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest

from dralloc import cli

REPO = pathlib.Path(__file__).resolve().parents[2]


@dataclasses.dataclass(frozen=True)
class Run:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


Invoke = Callable[..., Run]


@pytest.fixture
def dralloc(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Invoke:
    """`dralloc(*argv)` runs `cli.main(argv)` in-process and returns exit code, stdout and stderr."""
    def invoke(*argv: str) -> Run:
        code = cli.main(list(argv))
        captured = capsys.readouterr()
        return Run(code, captured.out, captured.err)

    return invoke


def subprocess_dralloc(*argv: str, stdin: str | None = None, cwd: pathlib.Path = REPO) -> Run:
    """`python -m dralloc ...` with PYTHONPATH=<repo>/operator."""
    env = os.environ | {"PYTHONPATH": str(REPO / "operator")}
    done = subprocess.run([sys.executable, "-m", "dralloc", *argv], input=stdin, capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=120, check=False)
    return Run(done.returncode, done.stdout, done.stderr)
