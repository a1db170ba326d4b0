"""The README's offline transcripts are true: every `$ .venv/bin/dralloc ...` line in a text block,
run from the repository root, prints what the README shows after it and exits as `$ echo $?` says;
`$ cat FILE` shows the file the command wrote. Only the timing in simulate's first line may differ.
"""

from __future__ import annotations

import pathlib
import re
import shlex

import pytest
from tests.offline.conftest import REPO, Run, subprocess_dralloc

COMMAND = "$ .venv/bin/dralloc "
TIMING = re.compile(r"^(placed \d+ of \d+ items(?:, \d+ invalid)?) in [0-9.]+ s \(\d+ placements/s, (\d+) allocator calls\)$")


def _transcripts() -> list[list[str]]:
    """The ```text blocks of README.md that run dralloc, as lists of lines."""
    blocks = re.findall(r"```text\n(.*?)```", (REPO / "README.md").read_text(), flags=re.S)
    return [block.splitlines() for block in blocks if COMMAND in block]


def _steps(lines: list[str]) -> list[tuple[str, list[str]]]:
    steps: list[tuple[str, list[str]]] = []
    for line in lines:
        if line.startswith("$ "):
            steps.append((line[2:], []))
        else:
            steps[-1][1].append(line)
    return steps


def _normal(line: str) -> str:
    match = TIMING.match(line)
    return f"{match.group(1)} (allocator calls: {match.group(2)})" if match else line


TRANSCRIPTS = _transcripts()


def test_the_readme_has_offline_transcripts() -> None:
    """Both commands have transcripts (allocate: the snapshot examples; simulate: capacity planning)."""
    commands = [step for lines in TRANSCRIPTS for step, _ in _steps(lines) if step.startswith(".venv/bin/dralloc")]
    assert any(c.startswith(".venv/bin/dralloc allocate ") for c in commands)
    assert any(c.startswith(".venv/bin/dralloc simulate ") for c in commands)


@pytest.mark.parametrize("lines", TRANSCRIPTS, ids=[f"block{i}" for i in range(len(TRANSCRIPTS))])
def test_transcript(lines: list[str], tmp_path: pathlib.Path) -> None:
    last: Run | None = None
    files: dict[str, pathlib.Path] = {}
    for command, shown in _steps(lines):
        if command == "echo $?":
            assert last is not None and [str(last.code)] == shown, (last, shown)
            continue
        if command.startswith("cat "):
            written = files[command[4:]]
            assert written.read_text().splitlines() == shown
            continue
        argv = shlex.split(command)
        assert argv[0] == ".venv/bin/dralloc", command
        args = argv[1:]
        for i, arg in enumerate(args):
            if arg.startswith("/tmp/"):  # files the example writes go to the test's own directory
                files[arg] = tmp_path / pathlib.Path(arg).name
                args[i] = str(files[arg])
        last = subprocess_dralloc(*args, "--no-progress") if args[0] == "simulate" else subprocess_dralloc(*args)
        assert [_normal(x) for x in last.out.splitlines()] == [_normal(x) for x in shown], last.out
