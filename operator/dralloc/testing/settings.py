"""Settings for an operator that a test or a benchmark runs in its own process.

Owns `run_settings()`: `dralloc run`'s Settings logged in through a kubeconfig, with no
metrics or health server (port 0) and, unless asked for, no leader election. Run them
with `dralloc.running.OperatorThread`.

Imports: dralloc.settings only.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from dralloc.settings import (
    ConnectionSettings,
    LeaderElectionSettings,
    RuntimeSettings,
    SchedulingSettings,
    Settings,
)


def run_settings(kubeconfig: str | os.PathLike[str] | None, *, namespaces: Sequence[str] = (),
                 leader_election: LeaderElectionSettings | None = None, **scheduling: Any) -> Settings:
    """Settings for `dralloc run` on the API server `kubeconfig` names (None: the default login).

    `namespaces`: the pods' namespaces it handles (empty: all). `leader_election`: None runs it
    standalone. `scheduling`: more SchedulingSettings fields (`namespaces` among them wins).
    """
    election = leader_election if leader_election is not None else LeaderElectionSettings(enabled=False)
    return Settings(
        connection=ConnectionSettings(kubeconfig=os.fspath(kubeconfig) if kubeconfig else None),
        scheduling=SchedulingSettings(**{"namespaces": tuple(namespaces), **scheduling}),
        runtime=RuntimeSettings(metrics_port=0, health_port=0, leader_election=election),
    )
