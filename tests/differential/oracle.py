"""A client for `oracle batch`: the upstream allocator (oracle/, Go) answering cases.

One process answers any number of cases: each case is one JSON line on its stdin, each
answer one JSON line on its stdout, in order. `ask` writes from a thread while it reads,
so a long batch cannot dead-lock on full pipes.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import threading
from collections.abc import Iterable, Sequence
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parents[2]
BINARIES = {"v0.37": ROOT / "oracle" / "bin" / "oracle", "v0.36": ROOT / "oracle" / "bin" / "oracle-v0.36",
            "v0.38": ROOT / "oracle" / "bin" / "oracle-v0.38"}


def binary(version: str | None = None) -> pathlib.Path:
    """The oracle binary for a release ('v0.37' default, 'v0.36', 'v0.38'; also $ORACLE, a path)."""
    if version is None and os.environ.get("ORACLE"):
        return pathlib.Path(os.environ["ORACLE"])
    key = (version or os.environ.get("ORACLE_DRA_VERSION") or "v0.37").removeprefix("1.")
    key = next((k for k in ("v0.36", "v0.38") if key.startswith((k, k[3:]))), "v0.37")
    return BINARIES[key]


def oracle_case(case: dict[str, Any]) -> dict[str, Any]:
    """A case as the oracle reads it: the vector fields it knows, nothing else."""
    keep = ("name", "features", "node", "objects")
    return {k: case[k] for k in keep if k in case}


class Session:
    """One long-running `oracle batch` asked one case at a time (for shrinking: many small asks)."""

    def __init__(self, *, version: str | None = None, timeout: str = "10s", allocator: str = "") -> None:
        exe = binary(version)
        if not exe.exists():
            raise FileNotFoundError(f"{exe}: not built; run `make oracle`")
        args = [str(exe), "batch", "--timeout", timeout] + (["--allocator", allocator] if allocator else [])
        self._proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)

    def ask(self, case: dict[str, Any]) -> dict[str, Any]:
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._proc.stdin.write(json.dumps(oracle_case(case), separators=(",", ":")) + "\n")
        self._proc.stdin.flush()
        line = self._proc.stdout.readline()
        if not line:
            raise RuntimeError(f"oracle batch ended (exit {self._proc.wait()})")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def close(self) -> None:
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        self._proc.wait()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def ask(cases: Iterable[dict[str, Any]], *, version: str | None = None, timeout: str = "10s",
        jobs: int = 1, path: pathlib.Path | None = None, allocator: str = "") -> list[dict[str, Any]]:
    """Every case's outcome, in order (status allocated/unschedulable/error/timeout/input-error)."""
    exe = path or binary(version)
    if not exe.exists():
        raise FileNotFoundError(f"{exe}: not built; run `make oracle`")
    lines: Sequence[str] = [json.dumps(oracle_case(c), separators=(",", ":")) + "\n" for c in cases]
    proc = subprocess.Popen([str(exe), "batch", "--timeout", timeout, "-j", str(jobs)]
                            + (["--allocator", allocator] if allocator else []),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None

    def feed() -> None:
        assert proc.stdin is not None
        try:
            proc.stdin.writelines(lines)
        finally:
            proc.stdin.close()

    # stderr is drained while the answers are read: the 1.38 allocator logs every version it
    # cannot parse there, and a full pipe would stop the oracle mid-batch.
    errors: list[str] = []
    writer = threading.Thread(target=feed, daemon=True)
    drainer = threading.Thread(target=lambda: errors.append(proc.stderr.read() if proc.stderr else ""), daemon=True)
    writer.start()
    drainer.start()
    answers = [json.loads(line) for line in proc.stdout]
    writer.join()
    drainer.join()
    err = "".join(errors)
    if proc.wait() != 0 or len(answers) != len(lines):
        raise RuntimeError(f"oracle batch: exit {proc.returncode}, {len(answers)} answers for {len(lines)} cases: {err}")
    return answers


def version_of(version: str | None = None) -> str:
    """The dynamic-resource-allocation release the binary links ('v0.37.2')."""
    out = subprocess.run([str(binary(version)), "version"], capture_output=True, text=True, check=True).stdout
    return str(json.loads(out)["dynamicResourceAllocation"])
