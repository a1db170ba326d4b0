"""The paths the documents name exist: README.md's and docs/*.md's relative markdown links, every
backticked word that starts with a top-level folder of the repository (`tests/e2e/`,
`operator/dralloc/handlers/leading.py`, `examples/demo/` in `kubectl apply -f examples/demo/`) or
leaves it (`../shared/...`, which only its authors have), and the folders of docs/design.md's layout.

Skipped: words with glob characters or placeholders (`e2e/run/logs/<name>.log`,
`tests/*/__init__.py`, `operator/dralloc/...`), and paths under the git-ignored output folders
of .gitignore (`e2e/bin/`, `e2e/run/`, `out/`, `oracle/bin/`), which a fresh clone does not have.
"""

from __future__ import annotations

import fnmatch
import os
import pathlib
import re

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
DOCUMENTS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
TOP_FOLDERS = (
    "operator",
    "tests",
    "bench",
    "docs",
    "e2e",
    "oracle",
    "manifests",
    "manifests-monitoring",
    "crds",
    "examples",
)

FENCE = re.compile(r"^[ \t]*(```|~~~).*?^[ \t]*\1", flags=re.S | re.M)
LINK = re.compile(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)", flags=re.M)
CODE = re.compile(r"(`+)(.+?)\1", flags=re.S)
REPO_PATH = re.compile(r"^(?:\./)?(?:" + "|".join(re.escape(name) for name in TOP_FOLDERS) + r")/")
DESCRIPTION_COLUMN = 24  # where the descriptions of docs/design.md's layout start
# Glob characters, placeholders (<name>, ..., …, $VAR, {a,b}) and Makefile variables.
UNCHECKABLE = re.compile(r"[*?\[\]{}<>$…]|\.\.\.")


def _ignored_patterns() -> list[str]:
    lines = (REPO / ".gitignore").read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith(("#", "!"))]


IGNORED = _ignored_patterns()


def _git_ignored(path: str) -> bool:
    """Whether `path` (relative to the repository) lies under what .gitignore leaves out."""
    parts = path.strip("/").split("/")
    for pattern in IGNORED:
        pattern = pattern.rstrip("/")
        if pattern.startswith("/") or "/" in pattern:
            pattern_parts = pattern.lstrip("/").split("/")
            if len(parts) >= len(pattern_parts) and fnmatch.fnmatchcase(
                "/".join(parts[: len(pattern_parts)]), "/".join(pattern_parts)
            ):
                return True
        elif any(fnmatch.fnmatchcase(part, pattern) for part in parts):
            return True
    return False


def _prose(text: str) -> str:
    """The text without its fenced code blocks (their words are commands and output, not links)."""
    return FENCE.sub("", text)


def _clean(word: str) -> str:
    """A path as written, without a pytest node id, a line number or trailing punctuation."""
    word = word.split("::", 1)[0]
    word = re.sub(r":\d+(?:-\d+)?$", "", word)
    word = word.rstrip(".,;:)'\"")
    return word.removeprefix("./")


def links(document: pathlib.Path) -> list[str]:
    """The document's relative link targets, relative to the repository root."""
    text = _prose(document.read_text())
    found: list[str] = []
    for target in LINK.findall(text) + REFERENCE.findall(text):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, flags=re.I) or target.startswith(("#", "/")):
            continue  # a URL, an anchor in the same document, or an absolute path
        target = target.split("#", 1)[0].split("?", 1)[0]
        if not target or UNCHECKABLE.search(target):
            continue
        found.append(_from_root(document.parent / target))
    return found


def _from_root(path: pathlib.Path) -> str:
    """`path` relative to the repository root, `../...` when it lies outside."""
    return os.path.relpath(os.path.normpath(path), REPO)


def code_paths(document: pathlib.Path) -> list[str]:
    """The backticked words of the document that start with a top-level folder of the repository."""
    found: list[str] = []
    for _, span in CODE.findall(_prose(document.read_text())):
        for word in span.split():
            word = word.split("=", 1)[1] if re.match(r"^-*[\w.-]+=", word) else word  # --flag=path, VAR=path
            if "..." in word or "…" in word:  # `operator/dralloc/...`: before _clean takes the dots away
                continue
            word = _clean(word)
            if UNCHECKABLE.search(word):
                continue
            if REPO_PATH.match(word):
                found.append(word)
            elif word.startswith("../"):  # backticked paths are written from the repository root
                found.append(_from_root(REPO / word))
    return found


def layout_paths() -> list[str]:
    """The files and folders of docs/design.md's layout: each entry (`  cli.py, __main__.py`, under
    `operator/dralloc/`), and the folders a top-level entry's description names (`tests/` ...
    `allocation/, scheduling/`), which are its own."""
    text = (REPO / "docs" / "design.md").read_text()
    block = re.search(r"^## 2\. Layout.*?^```\n(.*?)^```", text, flags=re.S | re.M)
    assert block, "docs/design.md has no layout block under '## 2. Layout'"
    found: list[str] = []
    parent = ""
    for line in block.group(1).splitlines():
        entry, description = line[:DESCRIPTION_COLUMN], line[DESCRIPTION_COLUMN:]
        if entry.strip():
            names = [name.strip() for name in entry.strip().split(",")]
            if entry.startswith(" "):
                found += [parent + name for name in names]
            else:
                parent = names[0]
                found += names
        if parent.count("/") == 1:  # a top-level folder: the folders its description names are its own
            found += [parent + name for name in re.findall(r"(?<![\w./-])([a-z_][\w-]*/)(?=[\s,;)]|$)", description)]
    return found


def _missing(paths: list[str]) -> list[str]:
    return sorted({path for path in paths if path.startswith("../") or not (_git_ignored(path) or (REPO / path).exists())})


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: str(path.relative_to(REPO)))
def test_every_relative_link_points_into_the_repository(document: pathlib.Path) -> None:
    assert _missing(links(document)) == []


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: str(path.relative_to(REPO)))
def test_every_backticked_repository_path_exists(document: pathlib.Path) -> None:
    assert _missing(code_paths(document)) == []


def test_the_layout_of_design_md_names_what_exists() -> None:
    assert _missing(layout_paths()) == []


def test_the_scan_flags_what_is_missing_and_skips_placeholders_and_ignored_output(tmp_path: pathlib.Path) -> None:
    document = tmp_path / "doc.md"
    document.write_text(
        "See [it](https://example.com), [here](#anchor) and [there](missing.md).\n"
        "`tests/e2e/`, `make e2e PYTEST_ARGS=-x tests/handlers/test_gangs.py::test_x`, `e2e/run/logs/<name>.log`,\n"
        "`e2e/bin/kube-apiserver`, `kubectl apply -f examples/demo/`, `operator/dralloc/...` and `../elsewhere/`.\n"
        "```sh\ncat tests/nothing/\n```\n"
    )
    assert [link.endswith("missing.md") and link.startswith("../") for link in links(document)] == [True]
    assert code_paths(document) == [
        "tests/e2e/", "tests/handlers/test_gangs.py", "e2e/bin/kube-apiserver", "examples/demo/", "../elsewhere",
    ]
    assert _missing(code_paths(document)) == ["../elsewhere", "tests/e2e/"]
    readme = REPO / "README.md"
    assert "manifests/rbac.yaml" in code_paths(readme)
    assert "tests/handlers/test_admission.py" in code_paths(REPO / "docs" / "development.md")
    assert _git_ignored("e2e/bin/kube-apiserver") and _git_ignored("e2e/bin-1.38/")
    assert _git_ignored("out/differential/x.yaml") and _git_ignored("oracle/bin/")
    assert not _git_ignored("e2e/build.sh")
    assert UNCHECKABLE.search("e2e/run/logs/<name>.log") and UNCHECKABLE.search("operator/dralloc/...")
    assert _missing(["../shared/conformance/SPEC.md", "tests/e2e/", "tests/handlers/"]) == [
        "../shared/conformance/SPEC.md",
        "tests/e2e/",
    ]
    layout = layout_paths()
    assert {"operator/dralloc/cli.py", "operator/dralloc/__main__.py", "operator/dralloc/kube/"} <= set(layout)
    assert {"tests/allocation/", "tests/handlers/", "bench/"} <= set(layout)
