"""`dralloc sandbox`: run the API server in the foreground until interrupted.

    dralloc sandbox [--port N] [--listen ADDR] [--seed demo|empty|FILE ...]
                    [--kubeconfig PATH] [--faults SPEC] [--faults-seed N] [--state FILE]
                    [--simulate-pods] [--token T]

With `--state FILE` the cluster is loaded from FILE when it exists (seeds are then
skipped) and saved to it on exit, so a demo cluster survives a restart.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import logging
import signal
import sys

from dralloc.sandbox import apiserver, errors, resources, seeds


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="dralloc sandbox",
                                description="A Kubernetes-compatible API server for DRA demos and tests.")
    p.add_argument("--port", type=int, default=6443, help="port to listen on (0 = any free port)")
    p.add_argument("--listen", default="127.0.0.1", help="address to listen on (default 127.0.0.1 only)")
    p.add_argument("--seed", action="extend", nargs="+", default=[], metavar="demo|empty|FILE",
                   help="objects to start with: the demo cluster (default), nothing, or YAML/JSON files "
                        "(several, and repeatable: --seed demo extra.yaml)")
    p.add_argument("--kubeconfig", metavar="PATH", help="write a kubeconfig for this server to PATH")
    p.add_argument("--faults", metavar="SPEC", help="fault rules, e.g. 'PATCH /apis/* 409 x3; compact every=60' "
                                                    "(see docs/sandbox.md; change them at run time via /_faults)")
    p.add_argument("--faults-seed", type=int, metavar="N", help="seed of the fault rules' random draws (p=)")
    p.add_argument("--state", metavar="FILE", help="load the cluster from FILE at start, save it there on exit")
    p.add_argument("--simulate-pods", action="store_true", help="bound pods become Running; "
                                                                "dralloc.io/sim-duration makes them finish")
    p.add_argument("--token", action="append", metavar="T",
                   help="require this bearer token (repeatable: any of them; the kubeconfig gets the first)")
    p.add_argument("--kubernetes-version", default="1.37", choices=resources.RELEASES,
                   help="the release to answer as (default 1.37; 1.36 serves scheduling.k8s.io/v1alpha2, "
                        "1.38 validates DRA objects and PodGroups by 1.38's rules)")
    p.add_argument("--bookmark-interval", type=float, default=30.0, help=argparse.SUPPRESS)
    return p


async def serve(args: argparse.Namespace) -> None:
    objects = []
    for seed in args.seed or ["demo"]:
        if seed == "demo":
            objects.extend(seeds.demo_objects())
        elif seed != "empty":
            objects.extend(seeds.load_files([seed]))
    stop = asyncio.Event()  # handlers first: a signal right after the "listening" line must stop us cleanly
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    server = apiserver.ApiServer(host=args.listen, port=args.port, token=args.token, seed=objects,
                                 state_file=args.state, simulate_pods=args.simulate_pods, faults=args.faults,
                                 faults_seed=args.faults_seed, bookmark_interval=args.bookmark_interval,
                                 kubernetes_version=args.kubernetes_version)
    await server.start()
    # A long-lived server holds many small dicts: fewer full collections keep writes steady.
    gc.freeze()
    gc.set_threshold(50_000, 50, 100)
    try:
        if args.kubeconfig:
            server.write_kubeconfig(args.kubeconfig)
        print(f"sandbox API server listening on {server.url}", flush=True)
        if args.kubeconfig:
            print(f"kubeconfig: {args.kubeconfig}  (export KUBECONFIG={args.kubeconfig})", flush=True)
        await stop.wait()
    finally:
        await server.stop()


def main(argv: list[str] | None = None) -> int:
    """Entry point of `dralloc sandbox` (and `python -m dralloc.sandbox`); returns the exit code."""
    args = parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        asyncio.run(serve(args))
    except (OSError, ValueError) as exc:
        print(f"dralloc sandbox: {exc}", file=sys.stderr)
        return 2
    except errors.ApiError as exc:  # a seed object the server refuses
        print(f"dralloc sandbox: cannot seed: {exc.message}", file=sys.stderr)
        return 2
    return 0
