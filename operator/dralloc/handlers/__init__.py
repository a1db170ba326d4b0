"""kopf glue: the only package that imports kopf.

Importing it registers the handlers: `watching` (feed the cluster view),
`operating` (startup, login, probes, the AllocationPolicy daemon that runs the
scheduling and claim-lifecycle loops on the active replica). The loops
themselves are in `scheduling` and `lifecycle`; `runtime` is their shared state.
"""

from dralloc.handlers import operating, watching

__all__ = ["operating", "watching"]
