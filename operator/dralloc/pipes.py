"""What a command-line tool does when the reader of its output goes away (`dralloc simulate ... | head`,
`kubectl dralloc status | head -3`): it ends quietly with the status a shell shows for a Unix tool that
SIGPIPE ended, not with a BrokenPipeError traceback."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

# 141 = 128 + SIGPIPE. Not 1, which allocate, simulate and `kubectl dralloc why` already use for
# "unschedulable" and "some items not placed".
EXIT_BROKEN_PIPE = 141


def ending_quietly(command: Callable[[], int]) -> int:
    """Run `command` (it writes to sys.stdout) and return its exit code, or EXIT_BROKEN_PIPE when the reader
    closed the pipe before everything was written."""
    try:
        code = command()
        sys.stdout.flush()  # output still buffered meets the closed pipe here, not at interpreter exit
    except BrokenPipeError:
        # Python's recipe (the signal module's "Note on SIGPIPE"): point stdout at devnull, so that the flush
        # at exit does not fail again and print "Exception ignored ..." after all.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    return code
