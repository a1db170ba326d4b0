"""The `dralloc` command: the only place where flags become settings and work starts.

Subcommands:
  allocate   offline: allocate claims from saved objects, explain failures
  simulate   offline: place a whole workload on a snapshot (capacity planning)
  run        the operator: place pods, allocate claims, run the claim lifecycle
  demo       the sandbox + the operator + examples/demo, and where everything went
  sandbox    serve a Kubernetes-compatible API server for demos and tests

Every flag is documented in README.md.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from dralloc import __version__, pipes
from dralloc.state.coexistence import CHOICES, KCM_LEASE

if TYPE_CHECKING:
    from dralloc.allocation.features import Features
    from dralloc.settings import Settings


def _add_allocate(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "allocate",
        help="allocate ResourceClaims against saved cluster objects (offline)",
        description="Allocate ResourceClaims against DeviceClasses, ResourceSlices, ResourceClaims and Nodes "
        "read from files, with the semantics of the upstream DRA allocator. The nodes tried are the input's "
        "Nodes (without any: the nodes its ResourceSlices name). Exit code: 0 allocated (also when there is "
        "nothing to allocate), 1 unschedulable (no node fits, or the search budget ran out), 2 input error "
        "(message on stderr: unreadable or empty input, no node at all, malformed object, unknown class, "
        "CEL error, ...).",
    )
    p.add_argument("-f", "--filename", dest="files", action="append", required=True, metavar="FILE",
                   help="YAML/JSON file of Kubernetes objects (multi-document or kind: List); '-' reads stdin; "
                   "repeatable")
    p.add_argument("--node", help="allocate for this node only (default: try every node)")
    p.add_argument("--claim", dest="claims", action="append", default=[], metavar="NS/NAME",
                   help="claim to allocate, in order; repeatable (default: every unallocated claim, in file order)")
    _feature_flags(p)
    p.add_argument("--policy", default="first-fit", choices=("first-fit", "binpack", "spread"),
                   help="how to choose among nodes where the claims fit (default first-fit)")
    p.add_argument("--explain", action="store_true",
                   help="also report why the claims did not fit on the nodes that were rejected")
    p.add_argument("--budget", type=int, default=None, metavar="STEPS",
                   help="search step budget per node (default 1000000)")
    p.add_argument("-o", "--output", default="table", choices=("json", "yaml", "table"), help="output format")


def _feature_flags(p: argparse.ArgumentParser, *, discover: bool = False) -> None:
    # The choices are spelled here, not imported, so that `--help` loads no allocation code;
    # test_allocate_command checks they equal allocation.features.RELEASES.
    p.add_argument("--features", default="", metavar="GATE=true,...",
                   help="DRA feature gates; gates not named keep their Kubernetes defaults")
    if discover:
        p.add_argument("--kubernetes-version", default="auto", choices=("auto", "1.36", "1.37", "1.38"),
                       help="whose allocator semantics to follow where upstream changed them "
                       "(docs/allocation.md; default auto: the API server's version, from GET /version)")
    else:
        p.add_argument("--kubernetes-version", default="1.37", choices=("1.36", "1.37", "1.38"),
                       help="whose allocator semantics to follow where upstream changed them "
                       "(docs/allocation.md; default 1.37)")


def _features(args: argparse.Namespace) -> Features | None:
    """--features and --kubernetes-version as Features; None (after an error message naming the
    flag) when --features is malformed."""
    from dralloc.allocation import errors
    from dralloc.allocation.features import Features, parse_gates

    try:
        return Features.from_gates(parse_gates(args.features), release=args.kubernetes_version)
    except errors.AllocationInputError as exc:
        sys.stderr.write(f"error: --features: {exc}\n")
        return None


def _run_allocate(args: argparse.Namespace) -> int:
    from dralloc import allocation
    from dralloc.offline import allocating

    features = _features(args)
    if features is None:
        return allocating.EXIT_INPUT_ERROR
    request = allocating.Request(
        files=args.files,
        node=args.node,
        claims=args.claims,
        features=features,
        policy=args.policy,
        explain=args.explain,
        budget=args.budget if args.budget is not None else allocation.DEFAULT_BUDGET,
    )
    return allocating.run(request, args.output)


def _add_simulate(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "simulate",
        help="capacity what-if: place a workload on a cluster snapshot (offline)",
        description="Place workload items (unallocated ResourceClaims, Pods with claim templates or DRA extended "
        "resources, and the Pods of Deployments, ReplicaSets, StatefulSets, Jobs and JobSets) one at a time, "
        "in file order, with the operator's placement code, and report placements, leftovers, utilization and "
        "fragmentation. Pods of a scheduling.k8s.io PodGroup (spec.schedulingGroup.podGroupName) are placed as "
        "the operator places gangs: all or none, once minCount of them have arrived. With --batch N, single pods "
        "are decided N at a time (see --batch). The nodes are the snapshot's Nodes (without any: the nodes its ResourceSlices name). "
        "An invalid item (unknown class, CEL error, ...) is reported as an error and the others are still "
        "placed. Exit code: 0 all placed, 1 some not placed (no room), 2 input error: either nothing ran "
        "(message on stderr) or some items are invalid (the report lists them; stderr says how many).",
    )
    p.add_argument("-f", "--filename", dest="files", action="append", required=True, metavar="SNAPSHOT",
                   help="cluster objects: Nodes, DeviceClasses, ResourceSlices, ResourceClaims (allocated ones "
                   "are in use), bound Pods, PodGroups; repeatable")
    p.add_argument("--workload", action="append", default=[], metavar="FILE",
                   help="ResourceClaims, Pods and workload controllers (+ ResourceClaimTemplates, PodGroups) to place, in "
                   "file order; default: every unallocated claim of the snapshot")
    p.add_argument("--policy", default="first-fit", choices=("first-fit", "binpack", "spread", "fragmentation-aware"),
                   help="node choice (default first-fit: first node by name where the allocator succeeds; "
                   "fragmentation-aware: the node and devices that leave the least capacity unusable for the "
                   "workload's request shapes)")
    _feature_flags(p)
    p.add_argument("--placements-out", metavar="FILE",
                   help="write one line per placed item: NAME NODE REQUEST=DRIVER/POOL/DEVICE ...")
    p.add_argument("--budget", type=int, default=None, metavar="STEPS",
                   help="search step budget per node and item (default 1000000)")
    p.add_argument("-o", "--output", default="table", choices=("table", "json"), help="report format")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="progress bar on stderr (default: when stderr is a terminal)")
    p.add_argument("--compare-policies", action="store_true",
                   help="place the workload under every policy (--policy is not used) and print one row each: "
                   "items placed, placed before the first failure, decisions/s, devices and capacity in use")
    p.add_argument("--optimal", type=float, nargs="?", const=60.0, default=None, metavar="SECONDS",
                   help="also report how many items an exact solver (OR-Tools CP-SAT, pip install ortools) could "
                   "place together, proven or with its bound after SECONDS (default 60)")
    p.add_argument("--add-nodes", metavar="FILE",
                   help="a Node and its ResourceSlices: report the fewest such nodes that would let the unplaced "
                   "items fit (added to the cluster as the simulation leaves it)")
    p.add_argument("--batch", type=_positive, default=1, metavar="N",
                   help="decide single pods N at a time (a burst) instead of one by one (default 1: one by one). "
                   "Each burst is placed in a few orders (arrival order, then hardest first: most device "
                   "capacity, rarest shape, most CPU and memory), each by the policy, and the order that "
                   "allocates the most device capacity, then leaves the least expected fragmentation, is kept; "
                   "ties keep arrival order, so a burst is never worse than arrival order by that measure. "
                   "Gang members, claims, pods with shared claims or volumes are decided as they arrive, after "
                   "the burst before them. Needs --policy fragmentation-aware (docs/policies.md)")
    p.add_argument("--batch-orders", type=_positive, default=None, metavar="K",
                   help="orders tried per burst with --batch, arrival order included (default 4): the per-burst "
                   "budget, each order costing one placement and one undo per pod of the burst")
    p.add_argument("--consolidate", type=_positive, default=None, metavar="M",
                   help="a single pod that fits nowhere may take a node from which at most M pods annotated "
                   "dralloc.io/movable: \"true\" are moved to other nodes, each placed again by the policy; "
                   "when one of them finds no place, nothing moves. The report counts the moves. Needs "
                   "--policy fragmentation-aware, whose model ranks the nodes worth trying (docs/policies.md)")


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def _run_simulate(args: argparse.Namespace) -> int:
    from dralloc import allocation
    from dralloc.offline import simulating
    from dralloc.scheduling import batching

    features = _features(args)
    if features is None:
        return simulating.EXIT_INPUT_ERROR
    if args.batch > 1 and args.compare_policies:
        sys.stderr.write("error: --batch and --compare-policies cannot be combined: --batch needs --policy "
                         "fragmentation-aware, and --compare-policies runs every policy one by one\n")
        return simulating.EXIT_INPUT_ERROR
    if args.batch > 1 and args.policy != "fragmentation-aware":
        sys.stderr.write(f"error: --batch {args.batch} needs --policy fragmentation-aware (the bursts are "
                         f"scored by its fragmentation measure), not --policy {args.policy}\n")
        return simulating.EXIT_INPUT_ERROR
    if args.consolidate is not None and (args.compare_policies or args.policy != "fragmentation-aware"):
        sys.stderr.write(f"error: --consolidate {args.consolidate} needs --policy fragmentation-aware (its model "
                         "ranks the nodes worth making room on)"
                         + (", and --compare-policies runs every policy\n" if args.compare_policies else
                            f", not --policy {args.policy}\n"))
        return simulating.EXIT_INPUT_ERROR
    if args.batch_orders is not None and args.batch == 1:
        sys.stderr.write("error: --batch-orders applies to --batch N with N > 1 only\n")
        return simulating.EXIT_INPUT_ERROR
    request = simulating.Request(
        snapshot_files=args.files,
        workload_files=args.workload,
        policy=args.policy,
        features=features,
        placements_out=args.placements_out,
        output=args.output,
        progress=args.progress,
        budget=args.budget if args.budget is not None else allocation.DEFAULT_BUDGET,
        optimal=args.optimal,
        add_nodes=args.add_nodes,
        batch=args.batch,
        batch_orders=args.batch_orders if args.batch_orders is not None else batching.DEFAULT_ORDERS,
        consolidate=args.consolidate or 0,
    )
    if args.compare_policies:
        from dralloc.offline import comparing

        return comparing.run(request, sys.stdout, sys.stderr)
    return simulating.run(request)


def _add_run(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("run", help="run the operator (scheduler + claim lifecycle) against a cluster",
                       description="Run dralloc as a kopf operator: it places pods it owns (schedulerName or "
                       "scheduling gate), allocates their ResourceClaims, and runs the claim lifecycle.")
    p.add_argument("--kubeconfig", help="kubeconfig file (default: in-cluster in a pod, else KUBECONFIG)")
    p.add_argument("--context", help="kubeconfig context")
    p.add_argument("--in-cluster", action="store_true", default=None, help="use the pod's service account")
    p.add_argument("--scheduler-name", default="dralloc", help="pods with this spec.schedulerName are ours")
    p.add_argument("--gate", default="dralloc.io/allocate",
                   help="pods with this scheduling gate are allocated by us and bound by kube-scheduler")
    p.add_argument("--namespace", dest="namespaces", action="append", default=[], metavar="NS",
                   help="only handle pods and claims in these namespaces (repeatable; default all)")
    _feature_flags(p, discover=True)
    p.add_argument("--budget", type=int, default=1_000_000, metavar="STEPS",
                   help="allocator search steps per node and pod (default 1000000)")
    p.add_argument("--gang-budget", type=int, default=5_000, metavar="CALLS",
                   help="allocator calls per gang decision (default 5000)")
    p.add_argument("--decision-cpu-budget", type=float, default=0.5, metavar="SECONDS",
                   help="CPU seconds one decision (a pod, or a whole gang) may take before the pod is told it "
                   "is too costly to decide and backs off (default 0.5)")
    p.add_argument("--no-preemption", dest="preemption", action="store_false",
                   help="never remove lower-priority pods to make room for a pod that fits nowhere (priority "
                   "preemption is on by default, as kube-scheduler's DefaultPreemption)")
    p.add_argument("--pod-initial-backoff", type=float, default=1.0, metavar="SECONDS",
                   help="a pod's backoff after its first failed attempt, doubling per attempt "
                   "(kube-scheduler's podInitialBackoffSeconds; default 1)")
    p.add_argument("--cel-cache-results", type=int, default=1 << 21, metavar="N",
                   help="CEL selector results (one per expression and device) memoized at most, about 40 bytes "
                   "each; the least recently used expressions go first (default 2097152)")
    p.add_argument("--pod-max-backoff", type=float, default=10.0, metavar="SECONDS",
                   help="the longest backoff (kube-scheduler's podMaxBackoffSeconds; default 10)")
    p.add_argument("--metrics-port", type=int, default=None,
                   help="Prometheus /metrics port (default 8080, or a free port when 8080 is taken; 0: off)")
    p.add_argument("--metrics-address", default="127.0.0.1",
                   help="address for /metrics (default 127.0.0.1; the Deployment passes the pod IP)")
    p.add_argument("--health-port", type=int, default=None,
                   help="port for /healthz (default 8081, or a free port when 8081 is taken; 0: off)")
    p.add_argument("--health-address", default="127.0.0.1",
                   help="address for /healthz (default 127.0.0.1; the Deployment passes the pod IP)")
    p.add_argument("--log-format", default="plain", choices=("plain", "json"), help="log line format")
    p.add_argument("--log-level", default="INFO", help="DEBUG, INFO, WARNING, ERROR")
    p.add_argument("--standalone", action="store_true",
                   help="no leader election: this process always acts (one replica only)")
    p.add_argument("--leader-elect-lease-duration", type=float, default=15.0, metavar="SECONDS",
                   help="how long a Lease not renewed stays with its holder before others take it (default 15)")
    p.add_argument("--leader-elect-renew-deadline", type=float, default=10.0, metavar="SECONDS",
                   help="the holder stops acting when it could not renew for this long (default 10)")
    p.add_argument("--leader-elect-retry-period", type=float, default=2.0, metavar="SECONDS",
                   help="how often the holder renews and candidates try (default 2)")
    p.add_argument("--leader-elect-resource-name", default="dralloc", metavar="NAME",
                   help="the coordination.k8s.io Lease to hold (default dralloc)")
    p.add_argument("--leader-elect-resource-namespace", default=None, metavar="NS",
                   help="its namespace (default $POD_NAMESPACE, else dralloc-system)")
    p.add_argument("--identity", default=None,
                   help="this replica's name in the Lease, logs and Events (default <pod or host name>_<random>)")
    p.add_argument("--eviction-per-minute", type=int, default=None, metavar="N",
                   help="NoExecute device-taint evictions per minute, 0 = unlimited "
                   "(default: $DRALLOC_EVICTION_PER_MINUTE or 60)")
    p.add_argument("--eviction-max-percent", type=int, default=None, metavar="P",
                   help="at most this percent of one DeviceClass's pods evicted at once, at least one "
                   "(default: $DRALLOC_EVICTION_MAX_PERCENT or 50)")
    p.add_argument("--eviction-dry-run", action="store_true", default=None,
                   help="report evictions (Events, rule status, metrics) but never delete a pod")
    p.add_argument("--claim-lifecycle", default=None, choices=CHOICES,
                   help="who creates claims from templates and deallocates and deletes them: auto = "
                   "kube-controller-manager while its leader Lease is held, else dralloc "
                   "(default: $DRALLOC_CLAIM_LIFECYCLE or auto)")
    p.add_argument("--taint-eviction", default=None, choices=CHOICES,
                   help="who evicts pods from NoExecute-tainted devices: auto = kube-controller-manager while its "
                   "leader Lease is held, else dralloc (default: $DRALLOC_TAINT_EVICTION or auto)")
    p.add_argument("--controller-manager-lease", default=KCM_LEASE, metavar="NS/NAME",
                   help=f"the leader Lease that shows kube-controller-manager runs (default {KCM_LEASE})")


def settings_from_args(args: argparse.Namespace, features: Features) -> Settings:
    """The operator's settings from `dralloc run` flags and the already parsed --features."""
    from dralloc.settings import (
        CoexistenceSettings,
        ConnectionSettings,
        EvictionSettings,
        LeaderElectionSettings,
        RuntimeSettings,
        SchedulingSettings,
        Settings,
    )

    return Settings(
        connection=ConnectionSettings(kubeconfig=args.kubeconfig, context=args.context, in_cluster=args.in_cluster),
        scheduling=SchedulingSettings(scheduler_name=args.scheduler_name, gate=args.gate,
                                      namespaces=tuple(args.namespaces), features=features, budget=args.budget,
                                      gang_budget=args.gang_budget, decision_cpu_budget=args.decision_cpu_budget,
                                      backoff_initial=args.pod_initial_backoff, backoff_max=args.pod_max_backoff,
                                      cel_cache_results=args.cel_cache_results, preemption=args.preemption),
        eviction=EvictionSettings(per_minute=args.eviction_per_minute, max_percent=args.eviction_max_percent,
                                  dry_run=args.eviction_dry_run),
        coexistence=CoexistenceSettings(claim_lifecycle=args.claim_lifecycle, taint_eviction=args.taint_eviction,
                                        controller_manager_lease=args.controller_manager_lease),
        runtime=RuntimeSettings(
            metrics_port=8080 if args.metrics_port is None else args.metrics_port,
            metrics_address=args.metrics_address,
            health_port=8081 if args.health_port is None else args.health_port,
            health_address=args.health_address, metrics_port_may_move=args.metrics_port is None,
            health_port_may_move=args.health_port is None,
            log_format=args.log_format,
            log_level=args.log_level.upper(),
            leader_election=LeaderElectionSettings(
                enabled=not args.standalone, lease_duration=args.leader_elect_lease_duration,
                renew_deadline=args.leader_elect_renew_deadline, retry_period=args.leader_elect_retry_period,
                resource_name=args.leader_elect_resource_name,
                resource_namespace=args.leader_elect_resource_namespace, identity=args.identity)),
    )


def _served_release(args: argparse.Namespace) -> str:
    """--kubernetes-version auto: the API server's release (GET /version), or 1.37 with a warning
    when the server cannot be asked now (the operator then reports the connection itself). Which
    and why is logged (`_run_operator` holds it until the operator's log format is set up)."""
    import asyncio
    import logging

    from dralloc.allocation.features import DEFAULT_RELEASE, release_of_server
    from dralloc.kube import errors as kube_errors
    from dralloc.kube.session import Session

    async def ask() -> tuple[int, int]:
        session = await Session.connect(kubeconfig=args.kubeconfig, context=args.context,
                                        in_cluster=args.in_cluster, request_timeout=10.0)
        try:
            return await session.server_minor()
        finally:
            await session.close()

    log = logging.getLogger(__name__)
    try:
        major, minor = asyncio.run(ask())
    except (kube_errors.KubeError, kube_errors.ConfigError) as exc:
        log.warning("--kubernetes-version auto: cannot read the API server's version (%s); following %s",
                    exc, DEFAULT_RELEASE)
        return DEFAULT_RELEASE
    release, warning = release_of_server(major, minor)
    log.log(logging.WARNING if warning else logging.INFO,
            "--kubernetes-version auto: the API server is Kubernetes %d.%d: following its allocator (%s)%s",
            major, minor, release, f"; {warning}" if warning else "")
    return release


def _run_operator(args: argparse.Namespace) -> int:
    import os

    from dralloc import running
    from dralloc.handlers import duties
    from dralloc.state.leadership import Timing

    # What is logged before the settings are made (which --kubernetes-version auto decides) waits for the
    # operator's log format: with --log-format json, its first line is JSON too.
    with running.holding_logs() as held:
        if args.kubernetes_version == "auto":
            args.kubernetes_version = _served_release(args)
    features = _features(args)
    if features is None:
        return 2
    settings = settings_from_args(args, features)
    election = settings.runtime.leader_election
    problems = Timing(election.lease_duration, election.renew_deadline, election.retry_period).problems() \
        if election.enabled else []
    try:
        duties.choices(settings.coexistence, os.environ)  # $DRALLOC_CLAIM_LIFECYCLE, $DRALLOC_TAINT_EVICTION
    except ValueError as exc:
        problems.append(str(exc))
    lease = settings.coexistence.controller_manager_lease
    if lease.count("/") != 1 or not all(lease.split("/")):
        problems.append(f"--controller-manager-lease: {lease!r} is not NAMESPACE/NAME "
                        "(e.g. kube-system/kube-controller-manager)")
    problems += scheduling_problems(args)
    if problems:
        # Refused before the operator starts, as argparse refuses a flag: plain lines, whatever --log-format
        # (what holding_logs held is left out: the flags are the news).
        for problem in problems:
            print(f"dralloc run: {problem}", file=sys.stderr)
        return 2
    return running.run(settings, held)


def scheduling_problems(args: argparse.Namespace) -> list[str]:
    """What is wrong with `dralloc run`'s budget and backoff flags, each naming the flag."""
    problems = []
    for flag, value in (("--budget", args.budget), ("--gang-budget", args.gang_budget),
                        ("--cel-cache-results", args.cel_cache_results)):
        if value < 1:
            problems.append(f"{flag}: {value} must be at least 1")
    for flag, seconds in (("--decision-cpu-budget", args.decision_cpu_budget),
                          ("--pod-initial-backoff", args.pod_initial_backoff)):
        if not seconds > 0:
            problems.append(f"{flag}: {seconds} must be a positive number of seconds")
    if args.pod_max_backoff < args.pod_initial_backoff:
        problems.append(f"--pod-max-backoff: {args.pod_max_backoff} must be at least --pod-initial-backoff "
                        f"({args.pod_initial_backoff})")
    return problems


def _add_demo(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "demo",
        help="run the sandbox demo cluster and the operator, apply examples/demo, show placements",
        description="Start the sandbox API server seeded with the demo GPU cluster and dralloc's CRDs, run the "
        "operator against it, apply examples/demo/*.yaml, wait until every demo pod is placed (or --timeout), "
        "print pod -> node -> devices per claim and every pod not placed with its reason, then keep running "
        "for kubectl until Ctrl-C. With --once: exit 0 when every demo pod is placed, 1 otherwise.",
    )
    p.add_argument("--kubeconfig", default="dralloc-demo.kubeconfig", metavar="PATH",
                   help="where to write the kubeconfig for the sandbox (default ./dralloc-demo.kubeconfig)")
    p.add_argument("--port", type=int, default=None,
                   help="sandbox API server port (default 6443 when free, else a free port; 0: a free port)")
    p.add_argument("--metrics-port", type=int, default=8080, help="operator /metrics port (0: off)")
    p.add_argument("--timeout", type=float, default=60.0, metavar="SECONDS",
                   help="how long to wait for every demo pod to be placed (default 60)")
    p.add_argument("--once", action="store_true", help="exit after the table: 0 all placed, 1 otherwise")
    p.add_argument("--examples", metavar="DIR", default=None,
                   help="directory of YAML to apply (default: the repository's examples/demo)")
    p.add_argument("--log-level", default="WARNING", help="operator log level (default WARNING; INFO shows more)")


def _run_demo(args: argparse.Namespace) -> int:
    import pathlib

    from dralloc import demo

    options = demo.Options(kubeconfig=args.kubeconfig, port=args.port, metrics_port=args.metrics_port,
                           timeout=args.timeout, once=args.once, log_level=args.log_level.upper(),
                           examples=pathlib.Path(args.examples) if args.examples else demo.DEFAULT_EXAMPLES)
    return demo.run(options)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dralloc", description="A DRA allocator for Kubernetes.")
    parser.add_argument("--version", action="version", version=f"dralloc {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    _add_allocate(sub)
    _add_simulate(sub)
    _add_run(sub)
    _add_demo(sub)
    sub.add_parser("sandbox", help="run the Kubernetes-compatible sandbox API server (see `dralloc sandbox -h`)",
                   add_help=False)
    return parser


EXIT_BROKEN_PIPE = pipes.EXIT_BROKEN_PIPE


def main(argv: Sequence[str] | None = None) -> int:
    """The `dralloc` command; its exit code. A reader that goes away ends it quietly (EXIT_BROKEN_PIPE)."""
    return pipes.ending_quietly(lambda: _main(argv))


def _main(argv: Sequence[str] | None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "sandbox":
        # The sandbox owns its flags; it imports nothing else of dralloc.
        from dralloc.sandbox import cli as sandbox_cli

        return sandbox_cli.main(argv[1:])
    args = build_parser().parse_args(argv)
    if args.command == "allocate":
        return _run_allocate(args)
    if args.command == "simulate":
        return _run_simulate(args)
    if args.command == "run":
        return _run_operator(args)
    if args.command == "demo":
        return _run_demo(args)
    raise AssertionError(f"unhandled command {args.command}")
