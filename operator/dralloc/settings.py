"""Operator settings, grouped by concern; built by cli.py from flags and environment.

"Settings" are what the operator process is told at start (flags). The
allocation *policy* (FirstFit/BinPack/Spread) is cluster configuration and
lives in the `AllocationPolicy` object named `default`.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from dralloc.allocation.features import Features


class _Settings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)


class ConnectionSettings(_Settings):
    kubeconfig: str | None = None  # None: in-cluster when running in a pod, else KUBECONFIG / ~/.kube/config
    context: str | None = None
    in_cluster: bool | None = None


class SchedulingSettings(_Settings):
    scheduler_name: str = "dralloc"
    gate: str = "dralloc.io/allocate"
    namespaces: tuple[str, ...] = ()  # empty: all namespaces
    features: Features = Field(default_factory=Features)
    budget: int = 1_000_000
    backoff_initial: float = 0.5
    backoff_max: float = 30.0
    resync_seconds: float = 300.0


class EvictionSettings(_Settings):
    """NoExecute device-taint eviction limits (None: DRALLOC_EVICTION_* environment, else built-in defaults)."""

    per_minute: int | None = None
    max_percent: int | None = None
    dry_run: bool | None = None


class RuntimeSettings(_Settings):
    metrics_port: int = 8080  # 0 disables the metrics endpoint
    metrics_address: str = "0.0.0.0"
    health_port: int = 8081  # kopf liveness endpoint; 0 disables it
    log_format: str = "plain"  # plain | json
    log_level: str = "INFO"
    standalone: bool = False  # no kopf peering: this replica is always active
    peering_name: str = "dralloc"
    priority: int | None = None  # kopf peering priority; None: derived from the pod name


class Settings(_Settings):
    connection: ConnectionSettings = Field(default_factory=ConnectionSettings)
    scheduling: SchedulingSettings = Field(default_factory=SchedulingSettings)
    eviction: EvictionSettings = Field(default_factory=EvictionSettings)
    runtime: RuntimeSettings = Field(default_factory=RuntimeSettings)
