"""The Dockerfile's structure (no Docker engine runs here, so it is never built in tests).

Multi-stage: a builder that makes wheels of dralloc and its runtime dependencies, and a
python:3.11-slim runtime that installs them offline, runs as uid 65532 and starts
`dralloc run --in-cluster`. The test extra and compilers never reach the runtime stage.
"""

from __future__ import annotations

import json
import re
import shlex
import tomllib
from dataclasses import dataclass, field

import pytest
from tests.manifests.rendered import REPO


@dataclass
class Stage:
    base: str
    name: str | None
    instructions: list[tuple[str, str]] = field(default_factory=list)  # (INSTRUCTION, arguments)

    def all(self, instruction: str) -> list[str]:
        return [args for ins, args in self.instructions if ins == instruction]


def parse(text: str) -> list[Stage]:
    """Dockerfile instructions per stage: comments dropped, `\\` continuations joined."""
    lines: list[str] = []
    pending = ""
    for raw in text.splitlines():
        stripped = raw.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        lines.append(pending + stripped)
        pending = ""
    stages: list[Stage] = []
    for line in lines:
        instruction, _, args = line.partition(" ")
        instruction = instruction.upper()
        if instruction == "FROM":
            words = args.split()
            name = words[2] if len(words) >= 3 and words[1].upper() == "AS" else None
            stages.append(Stage(words[0], name))
        else:
            assert stages, f"{instruction} before the first FROM"
            stages[-1].instructions.append((instruction, args.strip()))
    return stages


@pytest.fixture(scope="module")
def stages() -> list[Stage]:
    return parse((REPO / "Dockerfile").read_text())


def test_two_stages_from_python_3_11_slim(stages: list[Stage]) -> None:
    assert [(s.base, s.name) for s in stages] == [("python:3.11-slim", "builder"),
                                                  ("python:3.11-slim", "runtime")]


def test_builder_makes_wheels_of_the_project(stages: list[Stage]) -> None:
    builder = stages[0]
    runs = " ".join(builder.all("RUN"))
    assert re.search(r"pip wheel\b.*--wheel-dir[ =]/wheels\s+\.(\s|$)", runs), runs
    copied = " ".join(builder.all("COPY"))
    for path in ("pyproject.toml", "README.md", "operator/"):
        assert path in copied


def test_runtime_installs_only_the_wheels_without_test_extras(stages: list[Stage]) -> None:
    runtime = stages[1]
    runs = " ".join(runtime.all("RUN"))
    assert "--no-index" in runs and "--find-links=/wheels" in runs
    assert re.search(r"pip install [^&]*\bdralloc(\s|$)", runs), runs
    assert "[test]" not in runs and "test" not in re.findall(r"dralloc\[([^\]]*)\]", runs)
    assert "--mount=type=bind,from=builder" in runs  # the wheels never become a layer
    for tool in ("gcc", "build-essential", "apt-get install", "pytest", "hypothesis", "ruff", "mypy"):
        assert tool not in runs, tool
    assert not runtime.all("COPY"), "the runtime stage copies nothing: it installs the wheels"


def test_the_test_extra_is_what_the_image_leaves_out() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert "pytest" in " ".join(project["optional-dependencies"]["test"])
    assert not any("pytest" in d for d in project["dependencies"])


def test_runs_as_uid_65532_with_the_dralloc_entrypoint(stages: list[Stage]) -> None:
    runtime = stages[1]
    assert runtime.all("USER") == ["65532:65532"]
    assert [ins for ins, _ in runtime.instructions][-3:] == ["EXPOSE", "ENTRYPOINT", "CMD"]
    assert json.loads(runtime.all("ENTRYPOINT")[0]) == ["dralloc"]
    assert json.loads(runtime.all("CMD")[0]) == ["run", "--in-cluster"]
    useradd = next(r for r in runtime.all("RUN") if "useradd" in r)
    assert "--uid 65532" in useradd
    # USER comes after every RUN: nothing runs as root once the user is set.
    names = [ins for ins, _ in runtime.instructions]
    assert names.index("USER") > max(i for i, n in enumerate(names) if n == "RUN")


def test_entrypoint_is_the_installed_console_script() -> None:
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["dralloc"] == "dralloc.cli:main"


def test_dockerignore_sends_only_what_the_build_needs() -> None:
    lines = [ln.strip() for ln in (REPO / ".dockerignore").read_text().splitlines()
             if ln.strip() and not ln.startswith("#")]
    assert lines[0] == "*"
    allowed = {ln[1:] for ln in lines if ln.startswith("!")}
    assert allowed == {"pyproject.toml", "README.md", "operator/"}
    copied = {word for stage in parse((REPO / "Dockerfile").read_text()) for args in stage.all("COPY")
              for word in shlex.split(args)[:-1] if not word.startswith("--")}
    assert copied <= allowed, copied - allowed
