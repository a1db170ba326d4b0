"""dralloc: a control-plane allocator for Kubernetes Dynamic Resource Allocation.

Layers, top to bottom (each may import only the ones below it):
cli -> running -> handlers -> {kube, state, metrics} -> scheduling -> lifecycle -> allocation -> cel -> model.
(state holds the cluster view the scheduler decides on; scheduling's placement uses lifecycle's
extended-resource rules; tests/architecture/test_import_layers.py checks the order.)
`dralloc.sandbox` is independent of all of them. `dralloc.testing` (tools for tests and
benchmarks) may import any of them, and none of them imports it.
"""

__version__ = "0.1.0"
