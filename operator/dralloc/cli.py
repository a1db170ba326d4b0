"""The `dralloc` command: the only place where flags become settings and work starts.

Subcommands:
  allocate   offline: allocate claims from saved objects, explain failures
  simulate   offline: place a whole workload on a snapshot (capacity planning)
  sandbox    serve a Kubernetes-compatible API server for demos and tests

Every flag is documented in README.md.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from dralloc import __version__


def _add_allocate(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "allocate",
        help="allocate ResourceClaims against saved cluster objects (offline)",
        description="Allocate ResourceClaims against DeviceClasses, ResourceSlices, ResourceClaims and Nodes "
        "read from files, with the semantics of the upstream DRA allocator. Exit code: 0 allocated, "
        "1 unschedulable, 2 input error.",
    )
    p.add_argument("-f", "--filename", dest="files", action="append", required=True, metavar="FILE",
                   help="YAML/JSON file of Kubernetes objects (multi-document or kind: List); '-' reads stdin; "
                   "repeatable")
    p.add_argument("--node", help="allocate for this node only (default: try every node)")
    p.add_argument("--claim", dest="claims", action="append", default=[], metavar="NS/NAME",
                   help="claim to allocate, in order; repeatable (default: every unallocated claim, in file order)")
    p.add_argument("--features", default="", metavar="GATE=true,...",
                   help="feature gates; gates not named keep their Kubernetes 1.36 defaults")
    p.add_argument("--policy", default="first-fit", choices=("first-fit", "binpack", "spread"),
                   help="how to choose among nodes where the claims fit (default first-fit)")
    p.add_argument("--explain", action="store_true",
                   help="also report why the claims did not fit on the nodes that were rejected")
    p.add_argument("--budget", type=int, default=None, metavar="STEPS",
                   help="search step budget per node (default 1000000)")
    p.add_argument("-o", "--output", default="table", choices=("json", "yaml", "table"), help="output format")


def _run_allocate(args: argparse.Namespace) -> int:
    from dralloc import allocation
    from dralloc.allocation import errors
    from dralloc.allocation.features import Features, parse_gates
    from dralloc.offline import allocating

    try:
        features = Features.from_gates(parse_gates(args.features))
    except errors.AllocationInputError as exc:
        sys.stderr.write(f"error: --features: {exc}\n")
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
        description="Place workload items (unallocated ResourceClaims, Pods with claim templates) one at a time, "
        "in file order, with the operator's placement code, and report placements, leftovers, utilization and "
        "fragmentation. Exit code: 0 all placed, 1 some not placed, 2 input error.",
    )
    p.add_argument("-f", "--filename", dest="files", action="append", required=True, metavar="SNAPSHOT",
                   help="cluster objects: Nodes, DeviceClasses, ResourceSlices, ResourceClaims (allocated ones "
                   "are in use), bound Pods; repeatable")
    p.add_argument("--workload", action="append", default=[], metavar="FILE",
                   help="ResourceClaims and/or Pods (+ ResourceClaimTemplates) to place, in file order; "
                   "default: every unallocated claim of the snapshot")
    p.add_argument("--policy", default="first-fit", choices=("first-fit", "binpack", "spread"),
                   help="node choice (default first-fit: first node by name where the allocator succeeds)")
    p.add_argument("--features", default="", metavar="GATE=true,...",
                   help="feature gates; gates not named keep their Kubernetes 1.36 defaults")
    p.add_argument("--placements-out", metavar="FILE",
                   help="write one line per placed item: NAME NODE REQ=POOL/DEVICE ...")
    p.add_argument("-o", "--output", default="table", choices=("table", "json"), help="report format")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="progress bar on stderr (default: when stderr is a terminal)")


def _run_simulate(args: argparse.Namespace) -> int:
    from dralloc.allocation import errors
    from dralloc.allocation.features import Features, parse_gates
    from dralloc.offline import simulating

    try:
        features = Features.from_gates(parse_gates(args.features))
    except errors.AllocationInputError as exc:
        sys.stderr.write(f"error: --features: {exc}\n")
        return simulating.EXIT_INPUT_ERROR
    return simulating.run(simulating.Request(
        snapshot_files=args.files,
        workload_files=args.workload,
        policy=args.policy,
        features=features,
        placements_out=args.placements_out,
        output=args.output,
        progress=args.progress,
    ))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dralloc", description="A DRA allocator for Kubernetes.")
    parser.add_argument("--version", action="version", version=f"dralloc {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    _add_allocate(sub)
    _add_simulate(sub)
    sub.add_parser("sandbox", help="run the Kubernetes-compatible sandbox API server (see `dralloc sandbox -h`)",
                   add_help=False)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
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
    raise AssertionError(f"unhandled command {args.command}")
