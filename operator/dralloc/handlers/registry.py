"""The kopf registry dralloc's handlers live in.

Not kopf's default registry: a process that imports dralloc (the test suite, the demo)
may run other kopf operators, which must not start dralloc's handlers, and dralloc's
operator must not pick up theirs. `running.run_in_loop` passes this registry to kopf.

The lowest layer of handlers/: imports only kopf.
"""

from __future__ import annotations

import kopf

REGISTRY = kopf.OperatorRegistry()
