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


def _wait_for_time_wait(port: int, *, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not _time_wait_on(port):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def _scrape(port: int) -> bytes:
    with urllib.request.urlopen(f"http://{ADDRESS}:{port}/metrics", timeout=10) as answer:
        return bytes(answer.read())


@pytest.mark.skipif(not pathlib.Path("/proc/net/tcp").exists(), reason="needs Linux's /proc/net/tcp to see TIME_WAIT")
def test_restart_right_after_a_scrape_listens_on_the_same_port() -> None:
    port = running.usable_port(ADDRESS, _free_port(), may_move=False, what="/metrics")
    first = metrics.serve(port, ADDRESS)
    try:
        # The server usually closes an exchange first, so its end waits in TIME_WAIT; on a loaded machine
        # the client may close first now and then: scrape again until one left the server's end waiting.
        for _ in range(100):
            assert b"dralloc_" in _scrape(port)
            if _wait_for_time_wait(port, seconds=0.5):
                break
        else:
            raise AssertionError("100 scrapes left no server-side TIME_WAIT to test against")
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
