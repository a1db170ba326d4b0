"""Offline commands: answer allocation questions from saved objects, without a cluster.

`inputs` reads `kubectl get -o yaml`-style files into model objects; `allocating`
is `dralloc allocate`. These modules do file I/O and printing; the decisions
come from `dralloc.allocation` (and later `dralloc.scheduling`).
"""
