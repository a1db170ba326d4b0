"""`dralloc allocate`: where would these claims go, and if nowhere, why?

Reads saved objects (DeviceClass, ResourceSlice, ResourceClaim, Node), treats
claims that have `status.allocation` as in use, and allocates the chosen
claims together: on `--node`, or on every known node (the Node objects, else the
nodes the slices name), reporting the best one per `--policy`. Output is JSON,
YAML or a table; the exit code is 0 (allocated, also with nothing to allocate),
1 (unschedulable) or 2 (input error, message on stderr: also an input without a
single object read, or without any node; without --claim, a claim that cannot be
allocated as written is left out and named, and the others are decided).
"""

from __future__ import annotations

import dataclasses
import json
import re
import sys
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

import yaml

from dralloc import allocation
from dralloc.allocation import errors, outcomes, requests, scoring
from dralloc.allocation.features import Features
from dralloc.allocation.pools import NodeView
from dralloc.model import claims as model_claims
from dralloc.model import conversion
from dralloc.offline import inputs

EXIT_ALLOCATED, EXIT_UNSCHEDULABLE, EXIT_INPUT_ERROR = 0, 1, 2


@dataclasses.dataclass(frozen=True)
class Request:
    """What the user asked `dralloc allocate` for."""

    files: Sequence[str]
    node: str | None = None
    claims: Sequence[str] = ()
    features: Features = dataclasses.field(default_factory=Features)
    policy: str = "first-fit"
    explain: bool = False
    budget: int | None = allocation.DEFAULT_BUDGET


def _pick_claims(cluster: inputs.Cluster, wanted: Sequence[str]) -> list[model_claims.ResourceClaim]:
    if not wanted:
        return [c for c in cluster.resource_claims if c.status.allocation is None]
    by_ref: dict[str, list[model_claims.ResourceClaim]] = {}
    for c in cluster.resource_claims:
        by_ref.setdefault(c.ref() if c.metadata.namespace else f"default/{c.metadata.name}", []).append(c)
    chosen = []
    for ref in wanted:
        key = ref if "/" in ref else f"default/{ref}"
        found = by_ref.get(key, [])
        if not found:
            raise inputs.InputError(f"--claim {ref}: no ResourceClaim {key} in the input")
        if len(found) > 1:
            raise inputs.InputError(f"--claim {ref}: ResourceClaim {key} appears {len(found)} times in the input")
        claim = found[0]
        if claim.status.allocation is not None:
            raise inputs.InputError(f"ResourceClaim {key}: status.allocation: already allocated")
        chosen.append(claim)
    return chosen


def _candidate_nodes(cluster: inputs.Cluster, request: Request) -> tuple[list[NodeView], str]:
    """The nodes to try, and a note for stderr when they were made up from slices."""
    node = request.node
    if node is not None:
        known = {n.metadata.name: NodeView.of(n) for n in cluster.nodes}
        if known and node not in known:
            raise inputs.InputError(f"--node {node}: no Node {node} in the input")
        return [known.get(node, NodeView(node, {}))], ""
    found = inputs.nodes_of(cluster, request.files, flag_hint="pass --node NAME")
    return [NodeView.of(n) for n in found.nodes], found.note()


@dataclasses.dataclass
class Answer:
    status: str
    node: str | None
    claims: list[model_claims.ResourceClaim]
    results: tuple[model_claims.AllocationResult, ...] = ()
    reasons: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    message: str = ""
    note: str = ""  # for stderr, not part of the document
    # Without --claim: the claims left out because they cannot be allocated as written (claim, message).
    invalid: list[tuple[str, str]] = dataclasses.field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"status": self.status, "node": self.node, "claims": []}
        results: list[model_claims.AllocationResult | None] = list(self.results) or [None] * len(self.claims)
        for claim, result in zip(self.claims, results, strict=True):
            out["claims"].append({
                "namespace": claim.metadata.namespace or "default",
                "name": claim.metadata.name,
                "allocation": conversion.to_raw(result) if result is not None else None,
            })
        out["reasons"] = self.reasons
        out["message"] = self.message
        if self.invalid:
            out["invalid"] = [{"claim": ref, "message": message} for ref, message in self.invalid]
        return out


def budget_message(steps: int, budget: int | None) -> str:
    """What an offline command says when the search budget ran out (no "retry later": nothing
    changes between two runs on the same files)."""
    limit = f"{budget:,} steps per node" if budget is not None else "no limit"
    return (f"no decision within the search budget ({limit}, --budget): the search stopped after {steps:,} "
            f"steps; the claims may fit with a larger --budget")


def _budget_pattern() -> re.Pattern[str]:
    # The allocator's own wording (the operator's), with its step count as a group.
    prefix, suffix = outcomes.BudgetExhausted(steps=123456789).message().split("123456789")
    return re.compile(re.escape(prefix) + r"(\d+)" + re.escape(suffix))


_BUDGET_TEXT = _budget_pattern()


def offline_wording(text: str, budget: int | None) -> str:
    """A message of the allocator or Placer with budget exhaustion said as `budget_message` says it."""
    return _BUDGET_TEXT.sub(lambda m: budget_message(int(m.group(1)), budget), text)


def _reason_dicts(node: str, outcome: outcomes.Outcome, budget: int | None) -> list[dict[str, Any]]:
    if isinstance(outcome, outcomes.BudgetExhausted):
        return [{"node": node, "message": budget_message(outcome.steps, budget)}]
    if not isinstance(outcome, outcomes.Unsatisfiable):
        return []
    if not outcome.reasons:
        return [{"node": node, "message": outcome.message()}]
    return [
        {
            "node": node,
            "claim": r.claim,
            "request": r.request,
            "deviceClass": r.device_class,
            "needed": r.needed,
            "devices": r.devices,
            "candidates": r.candidates,
            "removed": {cause.value: count for cause, count in r.removed},
            **({"blockedBy": [c.text for c in r.culprits]} if r.culprits else {}),
            "message": r.message(),
        }
        for r in outcome.reasons
    ]


def decide(request: Request) -> Answer:
    """Run the allocation the request describes. Raises InputError / AllocationInputError."""
    cluster = inputs.load(request.files)
    inputs.check_not_empty(cluster, request.files)
    features = request.features
    chosen = _pick_claims(cluster, request.claims)
    candidates, note = _candidate_nodes(cluster, request)
    if not chosen:
        # Zero claims are allocated on any node, as upstream's allocator answers; say so plainly.
        return Answer("allocated", request.node, [], (), [],
                      "nothing to allocate: every ResourceClaim in the input has status.allocation"
                      if cluster.resource_claims else "nothing to allocate: no ResourceClaim in the input", note=note)
    snapshot = inputs.snapshot_of(cluster, features)
    invalid: list[tuple[str, str]] = []
    if not request.claims:
        chosen, invalid = _valid_alone(chosen, snapshot.classes, features)
    # Nodes in policy order (use before placing, ties by name: what the operator's Placer does);
    # the first node where the claims fit wins.
    candidates.sort(key=lambda n: scoring.sort_key(request.policy, n.name, scoring.node_use(snapshot, n, features)))
    best: tuple[NodeView, outcomes.Allocated] | None = None
    reasons: list[dict[str, Any]] = []
    for node in candidates:
        try:
            outcome = allocation.allocate(snapshot, chosen, node, features=features, budget=request.budget)
        except RecursionError as exc:
            # The search recurses once per device it picks: thousands of claims at once go past Python's
            # recursion limit (upstream's Go stack grows instead). Said plainly, not as a traceback.
            raise inputs.InputError(
                f"{len(chosen)} claims allocated together are more than dralloc's search takes at once (it "
                f"goes one device deeper per device it picks, past Python's recursion limit of "
                f"{sys.getrecursionlimit()}): allocate them in smaller groups with --claim") from exc
        except errors.InvalidPoolOnNodeError as exc:
            if len(candidates) == 1:
                raise  # the one node asked about: the error is the answer
            # Upstream's ErrFailedAllocationOnNode: this node does not fit, others may.
            reasons.append({"node": node.name, "message": f"node {node.name}: {exc}"})
            continue
        if isinstance(outcome, outcomes.Allocated):
            best = (node, outcome)
            break
        reasons.extend(_reason_dicts(node.name, outcome, request.budget))
    if best is None:
        summary = "; ".join(r["message"] if "claim" not in r else f"node {r['node']}: {r['message']}"
                            for r in reasons[:20])
        return Answer("unschedulable", request.node, chosen, (), reasons,
                      f"cannot allocate {len(chosen)} claim(s) on any node: {summary}", note=note, invalid=invalid)
    node, outcome = best
    return Answer("allocated", node.name, chosen, outcome.results,
                  reasons if request.explain else [], f"allocated on node {node.name}", note=note, invalid=invalid)


def _valid_alone(chosen: list[model_claims.ResourceClaim], device_classes: Mapping[str, Any], features: Features
                 ) -> tuple[list[model_claims.ResourceClaim], list[tuple[str, str]]]:
    """Without --claim, every pending claim of the input is allocated together: one that cannot be allocated
    as written (a class that does not exist, a gate that is off for a field it uses, a limit) is left out
    and named, rather than failing the others; when every one is, the first one's error is the answer."""
    valid: list[model_claims.ResourceClaim] = []
    invalid: list[tuple[str, str]] = []
    first: errors.AllocationInputError | None = None
    for claim in chosen:
        try:
            requests.plan_claims([claim], device_classes=device_classes, features=features,
                                 all_devices=lambda plan: [])
        except errors.AllocationInputError as exc:
            invalid.append((claim.ref(), errors.for_users(exc)))
            first = first or exc
            continue
        valid.append(claim)
    if not valid and first is not None:
        raise first
    return valid, invalid


def _print_table(answer: Answer, out: TextIO) -> None:
    out.write(f"STATUS: {answer.status}" + (f"  NODE: {answer.node}" if answer.node else "") + "\n")
    rows = [(claim.ref(), entry.request, f"{entry.driver}/{entry.pool}/{entry.device}"
             + (" (admin)" if entry.admin_access else (f" share={entry.share_id}" if entry.share_id else "")))
            for claim, result in zip(answer.claims, answer.results, strict=False)
            for entry in result.devices.results]
    if rows:
        claim_width = max(len(r[0]) for r in rows)
        request_width = max(len(r[1]) for r in rows)
        out.writelines(f"  {ref:{claim_width}}  {request:{request_width}}  {device}\n" for ref, request, device in rows)
    for reason in answer.reasons:
        out.write(f"  - {('node ' + reason['node'] + ': ') if 'claim' in reason else ''}{reason['message']}\n")
    if not answer.reasons and (answer.status != "allocated" or not answer.results):
        out.write(f"{answer.message}\n")


def run(request: Request, output: str, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    try:
        answer = decide(request)
    except (inputs.InputError, errors.AllocationInputError) as exc:
        if output == "json":
            out.write(json.dumps({"status": "error", "node": request.node, "claims": [], "reasons": [],
                                  "message": errors.for_users(exc)}, indent=2) + "\n")
        err.write(f"error: {errors.for_users(exc)}\n")
        return EXIT_INPUT_ERROR
    err.write(answer.note)
    if output == "json":
        out.write(json.dumps(answer.as_dict(), indent=2) + "\n")
    elif output == "yaml":
        out.write(yaml.safe_dump(answer.as_dict(), sort_keys=False))
    else:
        _print_table(answer, out)
    for _ref, message in answer.invalid:
        err.write(f"error: {message} (left out: the other claims were decided without it)\n")
    if answer.invalid:
        return EXIT_INPUT_ERROR
    return EXIT_ALLOCATED if answer.status == "allocated" else EXIT_UNSCHEDULABLE
