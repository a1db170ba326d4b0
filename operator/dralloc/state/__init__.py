"""In-memory state the operator decides on: the cluster view fed by watches, and
the ledger of decisions written (or being written) but not yet seen back.

Plain Python, no kopf, no awaits, no I/O. Handlers feed it; the scheduler reads
a consistent view of it between two awaits.
"""
