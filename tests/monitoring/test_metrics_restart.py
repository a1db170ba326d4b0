"""A restart binds the metrics port again at once, though the last scrapes left it in TIME_WAIT (issue 26)."""

from __future__ import annotations

import pathlib
import socket
import time
import urllib.request

import pytest

from dralloc import metrics, running

ADDRESS = "127.0.0.1"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind((ADDRESS, 0))
        return int(probe.getsockname()[1])


def _time_wait_on(port: int) -> bool:
    """A connection whose local end is `port` is in TIME_WAIT (Linux's /proc/net/tcp; state 06)."""
    text = pathlib.Path("/proc/net/tcp").read_text()
    for line in text.splitlines()[1:]:
        fields = line.split()
        if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "06":
            return True
    return False


def _scrape(port: int) -> bytes:
    with urllib.request.urlopen(f"http://{ADDRESS}:{port}/metrics", timeout=10) as answer:
        return bytes(answer.read())


@pytest.mark.skipif(not pathlib.Path("/proc/net/tcp").exists(), reason="needs Linux's /proc/net/tcp to see TIME_WAIT")
def test_restart_right_after_a_scrape_listens_on_the_same_port() -> None:
    port = running.usable_port(ADDRESS, _free_port(), may_move=False, what="/metrics")
    first = metrics.serve(port, ADDRESS)
    try:
        assert b"dralloc_" in _scrape(port)
        deadline = time.monotonic() + 5
        while not _time_wait_on(port):  # the server closes an HTTP/1.0 exchange first: its end waits
            assert time.monotonic() < deadline, "the scrape left no server-side TIME_WAIT to test against"
            time.sleep(0.05)
    finally:
        first.shutdown()
        first.server_close()

    # What `dralloc run` does on start: probe the port, then listen on it.
    assert running.usable_port(ADDRESS, port, may_move=False, what="/metrics") == port
    second = metrics.serve(port, ADDRESS)
    try:
        assert b"dralloc_" in _scrape(port)
        # A live listener (another replica) still makes the port taken.
        with pytest.raises(OSError, match=r"cannot listen on 127\.0\.0\.1"):
            running.usable_port(ADDRESS, port, may_move=False, what="/metrics")
        assert running.usable_port(ADDRESS, port, may_move=True, what="/metrics") not in (0, port)
    finally:
        second.shutdown()
        second.server_close()
