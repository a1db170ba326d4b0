"""kopf glue and the operator's control loops: the only package that imports kopf or writes to the API.

Importing it registers the handlers: `watching` (feed the cluster view) and `operating`
(startup, login, probes, the AllocationPolicy, and the control loops of the active replica).

The modules are layers; each imports only modules of its own layer and of the layers
below it (tests/architecture/test_import_layers.py holds this table and checks it):

1. Parts that know nothing of the runtime: `clock` (wall time), `failures` (per-object
   backoff memory), `looping` (the shape of a pass loop), `registry` (dralloc's kopf
   registry), `deciding` (the worker thread decisions run in, under a CPU budget),
   `batches` (single pods decided as one batch: which pods, and what is recorded),
   `recording` (Warning Events as series), `duties` (who does the claim lifecycle and
   taint eviction: dralloc or kube-controller-manager), `leading` (leader election).
2. `runtime`: what every handler shares while the operator runs (settings, session,
   cluster view, ledger, pod queue, wake-ups).
3. Reads and writes: `items` (a pod's claims as a placement item, read from the view;
   what wakes it) and `committing` (the API writes of a placement and their settlement:
   allocate, reserve, bind, ungate, give back, read back, unknown outcomes).
4. `intents` (a gang's binds recorded on its PodGroup before the first one) and
   `reporting` (what a pod or a PodGroup is told when it is not placed).
5. The gang passes, independent of each other: `ganging` (decide a gang whole, write it,
   report it) and `completing` (finish a gang's recorded binds after a crash); and the
   pass helpers `reclaiming` (gate mode's refused pins give their devices back) and
   `preempting` (priority preemption's writes: nomination, DisruptionTarget, deletion)
   and `moving` (room made by moving pods marked movable, with those writes).
6. `scheduling`: the scheduling pass over the queue (single pods, alone or in batches
   decided as one; gangs) and its loop.
7. The other loops and the watches: `lifecycle` (claims from templates, reservedFor,
   deallocation), `evicting` (NoExecute device taints), `health` (health signals to
   taints), `coexisting` (reads kube-controller-manager's Lease), `watching` (the feeds).
8. `operating`: kopf's startup and cleanup, probes, the AllocationPolicy, and
   `ControlLoops`, which starts and stops every loop above.

Below handlers/ everything is pure or plain state (model, cel, allocation, lifecycle,
scheduling, state) or the API client (kube); nothing there imports handlers/.
"""

from dralloc.handlers import operating, watching

__all__ = ["operating", "watching"]
