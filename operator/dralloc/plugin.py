"""`kubectl dralloc`: the offline tools' reports on the live cluster, as a kubectl plugin.

kubectl runs an executable named `kubectl-dralloc` found on PATH for `kubectl dralloc ...`
(krew's convention); the package installs it (pyproject `[project.scripts]`). The objects
are listed through the kubeconfig (`--kubeconfig`, `--context`, else $KUBECONFIG or
~/.kube/config) with dralloc's own API client, parsed as `dralloc simulate` parses a saved
snapshot, and given to the same code:

- `status`: per DeviceClass and per pool, devices in use, shared counters and consumable
  capacity (`offline.simulating.utilization`), and fragmentation: how many nodes could still
  take 1, 2, 4 or 8 devices of each class (`offline.simulating.fragmentation`);
- `why POD`: where the pod would go against the live snapshot, or why it fits nowhere,
  grouped by node and reason (the explanation `dralloc run` writes into PodScheduled,
  recomputed now with `scheduling.placement.Placer`); for a gate-mode pod dralloc pinned
  and its own scheduler refuses, that scheduler's verdict.

Flags go before or after the command, as kubectl users type them (`kubectl dralloc -n NS why POD`,
`kubectl dralloc why POD -n NS`); given on both sides, the value after the command wins. `-n`,
`--scheduler-name` and `--gate` are `why`'s: `status` refuses them (it reports the whole cluster).

Exit codes: 0 (status shown; the pod fits or is bound), 1 (the pod fits nowhere, or its
own scheduler refuses it where dralloc pinned it), 2 (an input error: no such pod, the
cluster unreachable, a flag malformed; the message names it).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence
from typing import Any, TextIO

from dralloc import pipes
from dralloc.allocation import errors as allocation_errors
from dralloc.allocation.features import Features, parse_gates
from dralloc.kube import errors as kube_errors
from dralloc.kube import reading, resources
from dralloc.kube.session import Session
from dralloc.model import conversion
from dralloc.model import pods as model_pods
from dralloc.offline import inputs, simulating
from dralloc.scheduling import placement
from dralloc.settings import SchedulingSettings

EXIT_OK, EXIT_UNSCHEDULABLE, EXIT_ERROR = 0, 1, 2
# Which pods are dralloc's (`dralloc run --scheduler-name/--gate`): `why` takes the same flags.
DEFAULT_SCHEDULER = SchedulingSettings().scheduler_name
DEFAULT_GATE = SchedulingSettings().gate
# What the reports read; DeviceTaintRules only where the cluster serves them (1.37 and later).
KINDS = (resources.DEVICE_CLASSES, resources.RESOURCE_SLICES, resources.RESOURCE_CLAIMS,
         resources.RESOURCE_CLAIM_TEMPLATES, resources.NODES, resources.PODS)
OPTIONAL = (resources.DEVICE_TAINT_RULES,)


class PluginError(Exception):
    """Something the user can fix: the message names the object, flag or connection."""


async def _list_all(kubeconfig: str | None, context: str | None) -> tuple[list[dict[str, Any]], str]:
    """Every object the reports read, and the API server's address."""
    try:
        session = await Session.connect(kubeconfig=kubeconfig, context=context, in_cluster=False)
    except kube_errors.ConfigError as exc:
        raise PluginError(str(exc)) from exc
    try:
        found: list[dict[str, Any]] = []
        for resource in (*KINDS, *OPTIONAL):
            try:
                items, _ = await reading.list_objects(session, resource)
            except kube_errors.NotFoundError:
                if resource in OPTIONAL:
                    continue  # not served by this cluster's release
                raise
            found.extend(items)
        return found, session.server
    except kube_errors.KubeError as exc:
        raise PluginError(f"cannot list objects from {session.server}: {exc}") from exc
    finally:
        await session.close()


def cluster_of(raws: Sequence[dict[str, Any]], err: TextIO) -> inputs.Cluster:
    """The objects as `dralloc simulate` reads a snapshot; one that does not parse is left out, named."""
    cluster = inputs.Cluster()
    for raw in raws:
        try:
            parsed = conversion.parse(raw)
        except conversion.ObjectError as exc:
            err.write(f"note: left out: {exc}\n")
            continue
        if parsed is not None:
            cluster.add(parsed)
    return cluster


def _placer(cluster: inputs.Cluster, features: Features, *, leave_out: str | None = None) -> placement.Placer:
    """The placement view of the live cluster: claims with an allocation in use, bound pods on their nodes."""
    found = inputs.nodes_of(cluster, ["the cluster"])
    bound = [p for p in cluster.pods if p.spec.node_name and not p.finished() and p.metadata.uid != leave_out]
    return placement.Placer(node_list=found.nodes, snapshot=inputs.snapshot_of(cluster, features), features=features,
                            policy="first-fit", bound_pods=bound)


def status(cluster: inputs.Cluster, features: Features) -> dict[str, Any]:
    """Utilization per class and pool, and fragmentation per class (simulate's report, without placements)."""
    placer = _placer(cluster, features)
    return {"nodes": len(placer.nodes),
            "utilization": simulating.utilization(placer.snapshot, placer.views, features),
            "fragmentation": simulating.fragmentation(placer)}


def print_status(report: dict[str, Any], server: str, out: TextIO) -> None:
    out.write(f"cluster {server}: {report['nodes']} nodes\n")
    simulating.print_use_and_fragmentation(report, out)


def _pod_item(cluster: inputs.Cluster, pod: model_pods.Pod) -> placement.Item:
    """The pod's claims as the scheduler sees them: the claim generated for a template entry when it
    exists (pod.status.resourceClaimStatuses), else one made from the template, as simulate does
    (`simulating.pod_item`)."""
    namespace = pod.metadata.namespace or "default"
    recorded = {s.name: s.resource_claim_name for s in pod.status.resource_claim_statuses if s.resource_claim_name}
    entries = []
    for entry in pod.spec.resource_claims:
        name = recorded.get(entry.name)
        if entry.resource_claim_template_name and name:
            entry = entry.model_copy(update={"resource_claim_name": name, "resource_claim_template_name": None})
        entries.append(entry)
    as_seen = pod.model_copy(update={"spec": pod.spec.model_copy(update={"resource_claims": tuple(entries)})})
    templates = {f"{t.metadata.namespace or 'default'}/{t.metadata.name}": t for t in cluster.claim_templates}
    claims = {f"{c.metadata.namespace or 'default'}/{c.metadata.name}": c for c in cluster.resource_claims}
    try:
        item = simulating.pod_item(as_seen, templates, claims, cluster.device_classes)
    except inputs.InputError as exc:
        raise PluginError(str(exc).replace("in the input", f"in namespace {namespace}")) from exc
    return placement.Item(name=f"{namespace}/{pod.metadata.name}", claims=item.claims, pod=pod,
                          allocated=item.allocated)


def why(cluster: inputs.Cluster, namespace: str, name: str, features: Features, *,
        scheduler_name: str = DEFAULT_SCHEDULER, gate: str = DEFAULT_GATE) -> dict[str, Any]:
    """The pod's placement now: bound (with its devices), where it would go, or why it fits nowhere; or
    that it is not dralloc's to place (neither `scheduler_name` nor `gate`), or that scheduling gates
    other than dralloc's hold it (dralloc allocates nothing for it before they are gone)."""
    pod = next((p for p in cluster.pods if p.metadata.name == name and (p.metadata.namespace or "default") == namespace),
               None)
    if pod is None:
        raise PluginError(f"pod {namespace}/{name}: not found")
    item = _pod_item(cluster, pod)
    devices = [f"{c.metadata.name}: " + ", ".join(f"{r.driver}/{r.pool}/{r.device}" for r in
                                                  c.status.allocation.devices.results)
               for c in item.allocated if c.status.allocation is not None]
    gang = _gang_of(pod)
    if pod.spec.node_name:
        return {"pod": f"{namespace}/{name}", "status": "bound", "node": pod.spec.node_name, "devices": devices,
                **gang}
    ours = pod.spec.scheduler_name == scheduler_name or gate in [g.name for g in pod.spec.scheduling_gates]
    pinned = (pod.metadata.annotations or {}).get(model_pods.PINNED_NODE_ANNOTATION)
    if not ours and not pinned:
        return {"pod": f"{namespace}/{name}", "status": "not-dralloc's",
                "scheduler": pod.spec.scheduler_name or "default-scheduler", "gate": gate, **gang}
    held = [g.name for g in pod.spec.scheduling_gates if g.name != gate]
    if ours and held:
        return {"pod": f"{namespace}/{name}", "status": "gated", "gates": held, "gate": gate,
                "gateMode": gate in [g.name for g in pod.spec.scheduling_gates], **gang}
    refused = _refused_by_its_scheduler(pod)
    if refused is not None:
        return {"pod": f"{namespace}/{name}", "status": "refused", "scheduler": refused[0], "message": refused[1],
                "pinned": pod.spec.node_selector.get("kubernetes.io/hostname"), "devices": devices, **gang}
    placer = _placer(cluster, features, leave_out=pod.metadata.uid)
    decision = placer.place(item)
    nominated = _nomination(cluster, pod)
    if isinstance(decision, placement.Placement):
        chosen = [f"{r.driver}/{r.pool}/{r.device}" for a in decision.results for r in a.devices.results]
        return {"pod": f"{namespace}/{name}", "status": "fits", "node": decision.node, "devices": chosen, **gang,
                **nominated}
    return {"pod": f"{namespace}/{name}", "status": "unschedulable", "nodes": len(placer.nodes),
            "reasons": [{"reason": reason, "nodes": list(where)} for reason, where in decision.reasons],
            "message": f"0/{len(placer.nodes)} nodes are available: {decision.message()}", **gang, **nominated}


def _nomination(cluster: inputs.Cluster, pod: model_pods.Pod) -> dict[str, Any]:
    """For a pod a scheduler nominated to a node (priority preemption is making room there): the node, and
    the pods of that node still terminating because a scheduler preempted them."""
    node = pod.status.nominated_node_name
    if not node:
        return {}
    victims = [f"{p.metadata.namespace or 'default'}/{p.metadata.name}" for p in cluster.pods
               if p.spec.node_name == node and p.metadata.deletion_timestamp is not None and any(
                   c.type == "DisruptionTarget" and c.status == "True" and c.reason == "PreemptionByScheduler"
                   for c in p.status.conditions)]
    return {"nominated": node, "preempting": sorted(victims)}


def _refused_by_its_scheduler(pod: model_pods.Pod) -> tuple[str, str] | None:
    """(scheduler, its message) when the pod is another scheduler's to bind (gate mode, after dralloc
    removed its gate) and that scheduler has said it cannot place it: what blocks the pod is then its
    scheduler's verdict, not whether dralloc would find a node now."""
    if pod.spec.scheduling_gates or (pod.spec.scheduler_name or "default-scheduler") == "dralloc":
        return None
    condition = next((c for c in pod.status.conditions if c.type == "PodScheduled"), None)
    if condition is None or condition.status != "False":
        return None
    return pod.spec.scheduler_name or "default-scheduler", condition.message or condition.reason or ""


def _gang_of(pod: model_pods.Pod) -> dict[str, Any]:
    """For a member of a PodGroup: the group, and the gang decision dralloc last recorded on the pod
    (its PodScheduled condition). The rest of the answer is for the pod alone: a gang is placed as a
    whole (all members or none), so a member that fits alone may still wait for the others."""
    group = pod.spec.scheduling_group.pod_group_name if pod.spec.scheduling_group else None
    if not group:
        return {}
    condition = next((c for c in pod.status.conditions if c.type == "PodScheduled"), None)
    decided = condition.message if condition is not None and condition.status == "False" else None
    return {"podGroup": group, "gangDecision": decided}


def print_why(answer: dict[str, Any], out: TextIO) -> None:
    pod = answer["pod"]
    if answer["status"] == "bound":
        out.write(f"pod {pod} is bound to node {answer['node']}\n")
    elif answer["status"] == "not-dralloc's":
        out.write(f"pod {pod} is not dralloc's to place: its schedulerName is {answer['scheduler']} and it has no "
                  f"{answer['gate']} scheduling gate; {answer['scheduler']} decides where it goes\n")
    elif answer["status"] == "gated":
        what = ("dralloc allocates its devices once " + answer["gate"] + " is its only scheduling gate"
                if answer["gateMode"] else "dralloc places it once it has no scheduling gates")
        out.write(f"pod {pod} is held by scheduling gate(s) {', '.join(answer['gates'])}: {what}; nothing is "
                  "allocated for it before\n")
    elif answer["status"] == "fits":
        out.write(f"pod {pod} fits now: node {answer['node']}\n")
    elif answer["status"] == "refused":
        pinned = f" on node {answer['pinned']}, where dralloc pinned it" if answer.get("pinned") else ""
        out.write(f"pod {pod} is waiting for {answer['scheduler']}, which refuses it{pinned}: {answer['message']}\n")
    else:
        out.write(f"pod {pod} fits nowhere: 0/{answer['nodes']} nodes are available\n")
        for entry in answer["reasons"]:
            where = entry["nodes"]
            shown = ", ".join(where[:5]) + (f", ... ({len(where)} nodes)" if len(where) > 5 else "")
            out.write(f"  {shown}: {entry['reason']}\n")
    for line in answer.get("devices", []):
        out.write(f"  {line}\n")
    if answer.get("nominated"):
        victims = answer.get("preempting") or []
        if victims:
            out.write(f"nominated to node {answer['nominated']} by priority preemption; {len(victims)} pod(s) "
                      f"removed for it are still terminating: {', '.join(victims)}\n")
        else:
            out.write(f"nominated to node {answer['nominated']}: priority preemption removed pods there for it "
                      "(they are gone: it goes there once their devices are released), or the node is reserved "
                      "for its gang until lower-priority pods there finish\n")
    if answer.get("podGroup"):
        out.write(f"the pod is a member of PodGroup {answer['podGroup']}: placed with its gang, all members or "
                  "none (the above is for the pod alone)\n")
        if answer.get("gangDecision"):
            out.write(f"  last gang decision: {answer['gangDecision']}\n")


# Flags every command takes, and those only `why` takes, with their defaults. Each is defined on the
# top-level parser and again on each command it applies to, with no argparse default (SUPPRESS): a
# command's parser would otherwise set its default over the value given before the command.
# `parse_args` fills in these defaults once, after parsing.
COMMON_DEFAULTS: dict[str, Any] = {"kubeconfig": None, "context": None, "features": "",
                                   "kubernetes_version": "1.37", "output": "table"}
WHY_DEFAULTS: dict[str, Any] = {"namespace": "default", "scheduler_name": DEFAULT_SCHEDULER, "gate": DEFAULT_GATE}
WHY_FLAGS = {"namespace": "-n/--namespace", "scheduler_name": "--scheduler-name", "gate": "--gate"}


def _add_common_flags(group: Any) -> None:
    """`group`: a parser or an argument group."""
    group.add_argument("--kubeconfig", default=argparse.SUPPRESS,
                       help="kubeconfig (default: $KUBECONFIG, else ~/.kube/config)")
    group.add_argument("--context", default=argparse.SUPPRESS, help="kubeconfig context (default: the current one)")
    group.add_argument("--features", default=argparse.SUPPRESS, metavar="GATE=true,...",
                       help="DRA feature gates; gates not named keep their Kubernetes defaults")
    group.add_argument("--kubernetes-version", default=argparse.SUPPRESS, choices=("1.36", "1.37", "1.38"),
                       help="whose allocator semantics to follow where upstream changed them (default: "
                            f"{COMMON_DEFAULTS['kubernetes_version']})")
    group.add_argument("-o", "--output", default=argparse.SUPPRESS, choices=("table", "json"),
                       help=f"output format (default: {COMMON_DEFAULTS['output']})")


def _add_why_flags(group: Any, *, hidden: bool = False) -> None:
    """`hidden`: parsed but not in the help (on `status`, so that `parse_args` refuses them by name)."""
    def shown(text: str) -> str:
        return argparse.SUPPRESS if hidden else text

    group.add_argument("-n", "--namespace", default=argparse.SUPPRESS,
                       help=shown(f"the pod's namespace (default: {WHY_DEFAULTS['namespace']})"))
    group.add_argument("--scheduler-name", default=argparse.SUPPRESS,
                       help=shown("the schedulerName dralloc places pods for (dralloc run --scheduler-name; "
                                  f"default: {DEFAULT_SCHEDULER})"))
    group.add_argument("--gate", default=argparse.SUPPRESS,
                       help=shown("the scheduling gate dralloc allocates for beside kube-scheduler (dralloc run "
                                  f"--gate; default: {DEFAULT_GATE})"))


def build_parser() -> argparse.ArgumentParser:
    """The parser, without the defaults `parse_args` fills in: flags go before or after the command."""
    def placement_note(before: str, after: str) -> str:
        return (f"Flags go before or after the command, as with kubectl: `kubectl dralloc {before}` and "
                f"`kubectl dralloc {after}` are the same; a flag given on both sides takes the value given after "
                "the command.")

    parser = argparse.ArgumentParser(prog="kubectl dralloc",
                                     description="dralloc's capacity and placement reports on the live cluster",
                                     epilog=placement_note("-n NS why POD", "why POD -n NS"))
    _add_common_flags(parser.add_argument_group("options of every command"))
    _add_why_flags(parser.add_argument_group("options of why"))
    sub = parser.add_subparsers(dest="command", required=True, metavar="{status,why}")
    status_ = sub.add_parser("status", help="devices in use, counters, capacity and fragmentation per class and pool",
                             description="Devices in use, shared counters, consumable capacity and fragmentation "
                                         "per DeviceClass and pool, for the whole cluster.",
                             epilog=placement_note("-o json status", "status -o json"))
    _add_common_flags(status_)
    _add_why_flags(status_, hidden=True)
    why_ = sub.add_parser("why", help="where the pod would go now, or why it fits nowhere",
                          description="Where the pod would go now, or why it fits nowhere.",
                          epilog=placement_note("-n NS why POD", "why POD -n NS"))
    why_.add_argument("pod", metavar="POD", help="the pod's name")
    _add_common_flags(why_)
    _add_why_flags(why_)
    return parser


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command and its flags, from wherever they were given, defaults filled in; exits 2 (argparse's
    message naming the flag) on a malformed flag, or a flag of `why` given with `status`."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command != "why":
        given = [flag for dest, flag in WHY_FLAGS.items() if hasattr(args, dest)]
        if given:
            parser.error(f"{', '.join(given)}: a flag of why, not of {args.command} "
                         f"({args.command} reports the whole cluster)")
    for dest, value in {**COMMON_DEFAULTS, **(WHY_DEFAULTS if args.command == "why" else {})}.items():
        if not hasattr(args, dest):
            setattr(args, dest, value)
    return args


def main(argv: Sequence[str] | None = None, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """`kubectl dralloc`; its exit code. A reader that goes away ends it quietly (pipes.EXIT_BROKEN_PIPE)."""
    if out is None:
        return pipes.ending_quietly(lambda: _main(argv, sys.stdout, err))
    return _main(argv, out, err)


def _main(argv: Sequence[str] | None, out: TextIO, err: TextIO | None) -> int:
    err = err if err is not None else sys.stderr
    args = parse_args(argv)
    try:
        features = Features.from_gates(parse_gates(args.features), release=args.kubernetes_version)
    except allocation_errors.AllocationInputError as exc:
        err.write(f"error: --features: {exc}\n")
        return EXIT_ERROR
    try:
        raws, server = asyncio.run(_list_all(args.kubeconfig, args.context))
        cluster = cluster_of(raws, err)
        if args.command == "status":
            report = status(cluster, features)
            if args.output == "json":
                out.write(json.dumps(report, indent=2) + "\n")
            else:
                print_status(report, server, out)
            return EXIT_OK
        answer = why(cluster, args.namespace, args.pod, features, scheduler_name=args.scheduler_name,
                     gate=args.gate)
    except (PluginError, inputs.InputError, allocation_errors.AllocationInputError) as exc:
        err.write(f"error: {allocation_errors.for_users(exc)}\n")
        return EXIT_ERROR
    if args.output == "json":
        out.write(json.dumps(answer, indent=2) + "\n")
    else:
        print_why(answer, out)
    return EXIT_UNSCHEDULABLE if answer["status"] in ("unschedulable", "refused", "gated") else EXIT_OK
