"""The auditor: what must hold of the cluster, read through the API.

Safety (`safety`), true at every moment, checked during the run as well: no device in two
allocations (admin-access and shared-capacity results excepted), at most one claim per
pod entry (owner uid + annotation `resource.kubernetes.io/pod-claim-name`).

After quiescence (`full`): also every bound pod's claims allocated (on its node) and
reserved for it; no leaks (no allocated claim reserved for nobody, for a gone pod or a
finished one; no claim of a finished or deleted pod left); and every pod that fits is
placed (the devices are identical GPUs, so "fits" is counting free devices per node,
with a shared claim's pod tied to the node of its allocation).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from tests.chaos.workload import GPUS, TEMPLATES

Obj = dict[str, Any]
POD_CLAIM_NAME = "resource.kubernetes.io/pod-claim-name"
Findings = dict[str, list[str]]


def _name(obj: Obj) -> str:
    return str(obj["metadata"]["name"])


def _allocation(claim: Obj) -> Obj | None:
    found: Obj | None = (claim.get("status") or {}).get("allocation")
    return found


def _results(claim: Obj) -> list[Obj]:
    results: list[Obj] = ((_allocation(claim) or {}).get("devices") or {}).get("results") or []
    return results


def _owner_pod(claim: Obj) -> str | None:
    for ref in claim["metadata"].get("ownerReferences") or []:
        if ref.get("kind") == "Pod":
            return str(ref.get("uid"))
    return None


def _finished(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def double_allocations(claims: list[Obj]) -> list[str]:
    holders: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    for claim in claims:
        for r in _results(claim):
            if not r.get("adminAccess") and not r.get("shareID"):
                holders[(r["driver"], r["pool"], r["device"])].append(_name(claim))
    return [f"device {pool}/{device} in {len(names)} allocations: {', '.join(sorted(names))}"
            for (_, pool, device), names in sorted(holders.items()) if len(names) > 1]


def duplicate_claims(claims: list[Obj]) -> list[str]:
    entries: dict[tuple[str, str], list[str]] = defaultdict(list)
    for claim in claims:
        owner = _owner_pod(claim)
        entry = (claim["metadata"].get("annotations") or {}).get(POD_CLAIM_NAME)
        if owner and entry:
            entries[(owner, entry)].append(_name(claim))
    return [f"pod uid {owner} entry {entry!r} has {len(names)} claims: {', '.join(sorted(names))}"
            for (owner, entry), names in sorted(entries.items()) if len(names) > 1]


def safety(claims: list[Obj]) -> Findings:
    return {"double allocation": double_allocations(claims), "duplicate claims": duplicate_claims(claims)}


def claim_of(pod: Obj, entry: Obj) -> str | None:
    if entry.get("resourceClaimName"):
        return str(entry["resourceClaimName"])
    for status in (pod.get("status") or {}).get("resourceClaimStatuses") or []:
        if status.get("name") == entry.get("name"):
            return status.get("resourceClaimName") or None
    return None


def bound_pods(pods: list[Obj], claims: list[Obj]) -> list[str]:
    by_name = {_name(c): c for c in claims}
    found = []
    for pod in pods:
        node = (pod.get("spec") or {}).get("nodeName")
        if not node or _finished(pod) or pod["metadata"].get("deletionTimestamp"):
            continue
        for entry in (pod.get("spec") or {}).get("resourceClaims") or []:
            name = claim_of(pod, entry)
            claim = by_name.get(name or "")
            where = f"pod {_name(pod)} (on {node}) entry {entry['name']!r}"
            if claim is None:
                found.append(f"{where}: claim {name!r} does not exist")
            elif _allocation(claim) is None:
                found.append(f"{where}: claim {name} is not allocated")
            elif pod["metadata"]["uid"] not in [r.get("uid") for r in (claim.get("status") or {}).get(
                    "reservedFor") or []]:
                found.append(f"{where}: claim {name} is not reserved for it")
            elif any(r["pool"] != node for r in _results(claim)):
                found.append(f"{where}: claim {name} is allocated on {sorted({r['pool'] for r in _results(claim)})}")
    return found


def leaks(pods: list[Obj], claims: list[Obj], deleted_uids: set[str]) -> list[str]:
    live = {p["metadata"]["uid"]: p for p in pods}
    found = []
    for claim in claims:
        name, reserved = _name(claim), (claim.get("status") or {}).get("reservedFor") or []
        if _allocation(claim) is not None and not reserved:
            found.append(f"claim {name} is allocated and reserved for nobody")
        for ref in reserved:
            pod = live.get(ref.get("uid"))
            if pod is None:
                found.append(f"claim {name} is reserved for gone pod {ref.get('name')}")
            elif _finished(pod):
                found.append(f"claim {name} is reserved for finished pod {ref.get('name')}")
        owner = _owner_pod(claim)
        if owner is not None and (owner in deleted_uids or owner not in live):
            found.append(f"claim {name} of deleted pod uid {owner} is left")
        elif owner is not None and _finished(live[owner]):
            found.append(f"claim {name} of finished pod {_name(live[owner])} is left")
        elif claim["metadata"].get("deletionTimestamp"):
            found.append(f"claim {name} is stuck deleting (finalizers {claim['metadata'].get('finalizers')})")
    return found


def unplaced_that_fit(pods: list[Obj], claims: list[Obj], nodes: int) -> list[str]:
    by_name = {_name(c): c for c in claims}
    used: dict[str, int] = defaultdict(int)
    for claim in claims:
        for r in _results(claim):
            used[r["pool"]] += 1
    found = []
    for pod in pods:
        if (pod.get("spec") or {}).get("nodeName") or pod["metadata"].get("deletionTimestamp") or _finished(pod):
            continue
        uid = pod["metadata"]["uid"]
        own: dict[str, int] = defaultdict(int)  # devices its own claims already hold, per node
        for claim in claims:
            reserved = [r.get("uid") for r in (claim.get("status") or {}).get("reservedFor") or []]
            if reserved == [uid]:
                for r in _results(claim):
                    own[r["pool"]] += 1
        need, pinned = 0, None
        for entry in (pod.get("spec") or {}).get("resourceClaims") or []:
            if entry.get("resourceClaimTemplateName"):
                need += TEMPLATES[entry["resourceClaimTemplateName"]]
                continue
            shared = by_name.get(entry.get("resourceClaimName") or "")
            if shared is None:
                need = -1_000  # its claim does not exist: it cannot fit
            elif _allocation(shared) is None:
                need += 1
            else:
                pinned = _results(shared)[0]["pool"]
        if need < 0:
            continue
        for node in (f"node-{i}" for i in range(nodes)):
            if pinned is not None and node != pinned:
                continue
            if GPUS - used[node] + own[node] >= need:
                message = ((pod.get("status") or {}).get("conditions") or [{}])
                found.append(f"pod {_name(pod)} fits on {node} ({need} GPUs needed, "
                             f"{GPUS - used[node] + own[node]} free) but is not placed: {message}")
                break
    return found


def full(pods: list[Obj], claims: list[Obj], deleted_uids: set[str], nodes: int) -> Findings:
    return {**safety(claims), "bound pods": bound_pods(pods, claims), "leaks": leaks(pods, claims, deleted_uids),
            "unplaced that fit": unplaced_that_fit(pods, claims, nodes)}


def clean(findings: Findings) -> bool:
    return not any(findings.values())


def summary(findings: Findings) -> str:
    return ", ".join(f"{check}: {'ok' if not found else len(found)}" for check, found in findings.items())
