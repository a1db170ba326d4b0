"""dralloc.testing: tools for testing and benchmarking the operator, shipped with it (as kopf.testing is).

Charter: what both tests/ and bench/ need to build a cluster and run the operator on it,
so that neither imports the other:

- `cluster`: small clusters as raw API objects (nodes, GPU slices, the GPU class, claims,
  templates, pods) and our CRDs from the repository's crds/;
- `fleet`: a large GPU fleet as the allocator's Snapshot, and the capacity series it exports;
- `settings`: `dralloc run`'s settings for an operator run in the caller's process.

It holds no pytest fixtures (those stay in tests/' conftest.py files) and never imports
pytest or tests/. Each module may import any dralloc package it needs (its docstring says
which); no dralloc package outside dralloc.testing imports it. This `__init__` imports
nothing: `from dralloc.testing import cluster` loads that module alone.
"""
