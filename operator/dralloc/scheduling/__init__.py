"""Pure placement: which node a pod (or a bare claim) goes to, with which devices.

Node filtering (node name, node selector, required node affinity, node taints
vs. tolerations, unschedulable nodes, resource fit), then the allocator on the
remaining nodes, then scoring per policy. No I/O, no clock, no kopf; the
operator and `dralloc simulate` use the very same code. Imports only
`dralloc.allocation`, `dralloc.model` and `dralloc.lifecycle` (which pods' extended
resources are DRA-backed).
"""
