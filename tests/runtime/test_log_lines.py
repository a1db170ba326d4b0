"""A tenant's text in a log message cannot forge log lines (issue 26): one record is one line."""

from __future__ import annotations

import io
import json
import logging
import os
import pathlib
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator

import pytest

from dralloc import cli, running
from dralloc.allocation.features import Features, parse_gates

# A CEL string as a tenant could write it: whole forged records, a carriage return, a terminal
# escape sequence and a Unicode line separator.
FORGED = ("x\n2026-01-01 00:00:00 ERROR dralloc: forged\r\n"
          "2026-01-01 00:00:01 INFO    [r] dralloc: \x1b[2Kalso\u2028forged\x85")
RECORD_START = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d")
Configure = Callable[[str], io.StringIO]


def _settings(*argv: str):  # type: ignore[no-untyped-def]
    args = cli.build_parser().parse_args(["run", *argv])
    return cli.settings_from_args(args, Features.from_gates(parse_gates(args.features)))


@pytest.fixture
def configure() -> Iterator[Configure]:
    """configure_logging for a --log-format, its handler writing to the returned buffer; the root logger restored."""
    root, kopf_objects = logging.getLogger(), logging.getLogger("kopf.objects")
    saved_handlers, saved_level, saved_kopf_level = root.handlers[:], root.level, kopf_objects.level

    def configure(log_format: str) -> io.StringIO:
        running.configure_logging(_settings("--log-format", log_format), identity="r")
        handler = root.handlers[0]
        assert isinstance(handler, logging.StreamHandler)
        buffer = io.StringIO()
        handler.setStream(buffer)
        return buffer

    try:
        yield configure
    finally:
        root.handlers[:] = saved_handlers
        root.setLevel(saved_level)
        kopf_objects.setLevel(saved_kopf_level)


def _records(text: str) -> list[str]:
    return [line for line in text.splitlines() if RECORD_START.match(line)]


def test_plain_message_with_newlines_stays_one_line(configure: Configure) -> None:
    out = configure("plain")
    logging.getLogger("dralloc.cel").warning("selector %r failed: %s", "device.x", FORGED)
    text = out.getvalue()
    assert text.count("\n") == 1 and text.endswith("\n")
    assert len(text.splitlines()) == 1  # str.splitlines also splits on \x85, \u2028, \x1c..\x1e
    assert len(_records(text)) == 1
    assert "\\n2026-01-01 00:00:00 ERROR dralloc: forged\\r\\n2026" in text
    assert "\\x1b[2Kalso\\u2028forged\\x85" in text
    assert "\x1b" not in text and "\r" not in text


def test_plain_traceback_lines_are_marked_as_continuations(configure: Configure) -> None:
    out = configure("plain")
    try:
        raise ValueError(FORGED)
    except ValueError:
        logging.getLogger("dralloc.cel").exception("evaluating %s", FORGED)
    lines = out.getvalue().splitlines()
    assert len(_records(out.getvalue())) == 1
    assert RECORD_START.match(lines[0]) and "Traceback" not in lines[0]
    assert len(lines) > 2 and all(line.startswith(running.CONTINUATION) for line in lines[1:])
    assert any("Traceback (most recent call last):" in line for line in lines[1:])
    assert lines[-1] == running.CONTINUATION + "2026-01-01 00:00:01 INFO    [r] dralloc: \\x1b[2Kalso\\u2028forged\\x85"


def test_plain_stack_info_lines_are_marked_too(configure: Configure) -> None:
    out = configure("plain")
    logging.getLogger("dralloc").warning("here\nthere", stack_info=True)
    lines = out.getvalue().splitlines()
    assert len(_records(out.getvalue())) == 1 and lines[0].endswith("dralloc: here\\nthere")
    assert all(line.startswith(running.CONTINUATION) for line in lines[1:])


def test_plain_ordinary_message_is_unchanged(configure: Configure) -> None:
    out = configure("plain")
    logging.getLogger("dralloc").info("claim %s/%s allocated", "a", "gpu-0")
    assert re.fullmatch(r"\S+ \S+ INFO    \[r\] dralloc: claim a/gpu-0 allocated\n", out.getvalue())


def test_json_record_is_one_line_and_keeps_the_text(configure: Configure) -> None:
    out = configure("json")
    try:
        raise ValueError(FORGED)
    except ValueError:
        logging.getLogger("dralloc.cel").exception("evaluating %s", FORGED)
    text = out.getvalue()
    assert len(text.splitlines()) == 1
    entry = json.loads(text)
    assert entry["message"] == f"evaluating {FORGED}"
    assert entry["exception"].endswith(f"ValueError: {FORGED}")


def test_json_log_format_holds_what_is_logged_before_the_settings(tmp_path: pathlib.Path) -> None:
    """`dralloc run --log-format json` with a kubeconfig it cannot read: the kubeconfig library's warning and the
    `--kubernetes-version auto` one, logged before the operator's settings exist, come out as JSON records like
    the operator's (they were plain last-resort lines before the first JSON one, #32)."""
    repo = pathlib.Path(__file__).resolve().parents[2]
    stderr = tmp_path / "stderr"
    with open(stderr, "wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "dralloc", "run", "--kubeconfig", str(tmp_path / "missing"), "--log-format", "json",
             "--standalone", "--metrics-port", "0", "--health-port", "0"],
            stdout=subprocess.PIPE, stderr=err, cwd=repo, env=os.environ | {"PYTHONPATH": str(repo / "operator")})
    try:
        deadline = time.monotonic() + 60
        while '"logger": "kopf.' not in stderr.read_text() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)  # until kopf logs too: the held records came before
    finally:
        proc.kill()
        out, _ = proc.communicate(timeout=30)
    lines = stderr.read_text().splitlines()
    assert out == b"" and any('"logger": "kopf.' in line for line in lines), lines
    records = [json.loads(line) for line in lines]  # every line: one JSON record
    warning = next(record for record in records if record["logger"] == "dralloc.cli")
    assert warning["level"] == "WARNING" and "cannot read the API server's version" in warning["message"]
    assert warning["replica"] == records[-1]["replica"] != "-"  # held, then written by the operator's handler
