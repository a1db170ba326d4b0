"""Operator settings, grouped by concern; built by cli.py from flags and environment.

"Settings" are what the operator process is told at start (flags). The
allocation *policy* (FirstFit/BinPack/Spread) is cluster configuration and
lives in the `AllocationPolicy` object named `default`.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from dralloc.allocation.features import Features
from dralloc.state.coexistence import KCM_LEASE


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
    budget: int = 1_000_000  # allocator search steps per node (allocation.DEFAULT_BUDGET)
    gang_budget: int = 5_000  # allocator calls per gang decision (allocation.gangs.DEFAULT_GANG_BUDGET)
    decision_cpu_budget: float = 0.5  # CPU seconds per decision (a pod, or a gang): handlers/deciding.py
    preemption: bool = True  # a pod that fits nowhere may remove lower-priority pods (handlers/preempting.py)
    backoff_initial: float = 1.0  # kube-scheduler's podInitialBackoffSeconds
    backoff_max: float = 10.0  # kube-scheduler's podMaxBackoffSeconds
    max_unschedulable_seconds: float = 300.0  # kube-scheduler's podMaxInUnschedulablePodsDuration
    cel_cache_results: int = 1 << 21  # CEL selector results memoized at most (allocation/selectors.py)
    resync_seconds: float = 300.0


class EvictionSettings(_Settings):
    """NoExecute device-taint eviction limits (None: DRALLOC_EVICTION_* environment, else built-in defaults)."""

    per_minute: int | None = None
    max_percent: int | None = None
    dry_run: bool | None = None


class CoexistenceSettings(_Settings):
    """Who does the duties kube-controller-manager's DRA controllers also do (state/coexistence.py):
    "auto", "dralloc" or "kube-controller-manager"; None: DRALLOC_CLAIM_LIFECYCLE /
    DRALLOC_TAINT_EVICTION environment, else "auto"."""

    claim_lifecycle: str | None = None
    taint_eviction: str | None = None
    controller_manager_lease: str = KCM_LEASE  # namespace/name


class LeaderElectionSettings(_Settings):
    """kube-scheduler's --leader-elect-* flags, with its defaults."""

    enabled: bool = True  # False (--standalone): this process always acts
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    resource_name: str = "dralloc"
    resource_namespace: str | None = None  # None: $POD_NAMESPACE, else "dralloc-system"
    identity: str | None = None  # None: <pod or host name>_<random>, unique per process


class RuntimeSettings(_Settings):
    metrics_port: int = 8080  # 0 disables the metrics endpoint
    metrics_address: str = "127.0.0.1"  # the Deployment passes the pod's IP
    health_port: int = 8081  # /healthz (liveness, readiness details); 0 disables it
    health_address: str = "127.0.0.1"
    # Ports not given explicitly: when taken (a second replica on the same host), use a free one.
    metrics_port_may_move: bool = False
    health_port_may_move: bool = False
    log_format: str = "plain"  # plain | json
    log_level: str = "INFO"
    leader_election: LeaderElectionSettings = Field(default_factory=LeaderElectionSettings)

    @property
    def standalone(self) -> bool:
        return not self.leader_election.enabled


class Settings(_Settings):
    connection: ConnectionSettings = Field(default_factory=ConnectionSettings)
    scheduling: SchedulingSettings = Field(default_factory=SchedulingSettings)
    eviction: EvictionSettings = Field(default_factory=EvictionSettings)
    coexistence: CoexistenceSettings = Field(default_factory=CoexistenceSettings)
    runtime: RuntimeSettings = Field(default_factory=RuntimeSettings)
