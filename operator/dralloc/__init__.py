"""dralloc: a control-plane allocator for Kubernetes Dynamic Resource Allocation.

Layers, top to bottom (each may import only the ones below it):
cli -> handlers -> {kube, state, metrics} -> lifecycle -> scheduling -> allocation -> cel -> model.
`dralloc.sandbox` is independent of all of them. `dralloc.testing` (tools for tests and
benchmarks) may import any of them, and none of them imports it.
"""

__version__ = "0.1.0"
