"""A gang's binds made restart-safe: the intent recorded before the first bind, completed after a crash.

`ganging.commit` writes every claim of a gang, then binds (or ungates) every member. The
claims alone are not enough of a record for the binds: after a crash with some members
bound, the others still hold their claims, and deciding them again may find their node no
longer fits (a taint, another pod's cpu), which would leave the gang partly bound for good.
So, once every claim is written and before the first bind, the decision is recorded on the
PodGroup: the annotation `dralloc.io/gang-binds` lists every member (pod name, uid) with its
node. After every member is bound it is removed.

A pass that meets a PodGroup carrying the annotation (after a restart, or after a bind of
unknown outcome) does not decide the gang again; it completes the recorded binds (`complete`):

- a member bound already, or gone (deleted, replaced by a pod of another uid, finished),
  needs nothing;
- a member whose claims are still allocated and reserved for it (or for the PodGroup) and
  whose node still exists is bound to that node, without a new node-fit check: the decision
  was made whole, its devices are held there, and binding finishes it (as kube-scheduler's
  binding cycle finishes an assumed pod);
- a member that cannot be completed (its node is gone, a claim of it lost its allocation,
  the bind is refused) has what it holds given back (its reservations removed, allocations
  with nobody left deallocated), and is then placed again like any pending member of a gang
  whose other members run: in their domain, counting toward minCount.

The annotation is removed once no recorded member is left to bind; a bind whose outcome
stays unknown keeps it, and the next pass looks again.

"All or nothing" for binds: Kubernetes cannot unbind a pod, so once one member is bound the
gang can only go forward. dralloc therefore binds only after every claim of the gang is
written (nothing can fail for lack of devices afterwards), and after a crash it completes the
binds rather than re-deciding them; only a member that can no longer run where it was placed
is given back and placed anew, while the bound ones keep running (stopping them is the
workload's business, e.g. its controller or the PodGroup's disruptionMode).
"""

from __future__ import annotations

import dataclasses
import json
import logging
from typing import Any

from dralloc.handlers import committing, ganging, scheduling
from dralloc.handlers.runtime import Runtime
from dralloc.kube import errors as kube_errors
from dralloc.kube import writing
from dralloc.model import claims as model_claims
from dralloc.model import pods
from dralloc.scheduling import placement

logger = logging.getLogger(__name__)

ANNOTATION = "dralloc.io/gang-binds"
Raw = dict[str, Any]


@dataclasses.dataclass(frozen=True)
class Bind:
    pod: str  # name, in the PodGroup's namespace
    uid: str
    node: str


@dataclasses.dataclass(frozen=True)
class Intent:
    binds: tuple[Bind, ...]

    def encode(self) -> str:
        return json.dumps({"members": [{"pod": b.pod, "uid": b.uid, "node": b.node} for b in self.binds]},
                          separators=(",", ":"))


def intent_of(rt: Runtime, key: ganging.Key) -> Intent | None:
    """The PodGroup's recorded binds; None when it has none. An annotation that does not parse (edited by
    hand) is logged and taken as none: the gang is then decided from what its claims show, as before."""
    raw = rt.cluster.pod_groups.raw(*key)
    text = (((raw or {}).get("metadata") or {}).get("annotations") or {}).get(ANNOTATION)
    if text is None:
        return None
    try:
        members = json.loads(text)["members"]
        return Intent(tuple(Bind(str(m["pod"]), str(m["uid"]), str(m["node"])) for m in members))
    except (ValueError, KeyError, TypeError) as exc:
        logger.warning("podgroup=%s/%s: annotation %s does not parse (%s): ignored", *key, ANNOTATION, exc)
        return None


def intent_for(decided: ganging.Decided) -> Intent:
    return Intent(tuple(Bind(m.pod.metadata.name, m.pod.metadata.uid or "", m.placement.node)
                        for m in decided.members))


async def _patch(rt: Runtime, key: ganging.Key, value: str | None) -> Raw:
    resource = rt.pod_group_resource
    if resource is None:
        raise committing.Refused(f"PodGroup {key[0]}/{key[1]}: this cluster no longer serves PodGroups")
    stored = await writing.merge_patch(rt.require_session(), resource, key[1],
                                       {"metadata": {"annotations": {ANNOTATION: value}}}, key[0] or "default")
    committing.into_view(rt, "PodGroup", stored)
    return stored


def _recorded(raw: Raw | None) -> str | None:
    return (((raw or {}).get("metadata") or {}).get("annotations") or {}).get(ANNOTATION)


async def record(rt: Runtime, decided: ganging.Decided) -> None:
    """Write the intent before the first bind. Raises committing.Refused when the PodGroup refused it (or is
    gone), committing.Unknown when whether it was written cannot be told (no member is bound then)."""
    key, wanted = decided.key, intent_for(decided).encode()
    resource = rt.pod_group_resource
    for _ in range(committing.RESENDS + 1):
        try:
            await _patch(rt, key, wanted)
            return
        except kube_errors.KubeError as exc:
            if not kube_errors.outcome_unknown(exc):
                raise committing.Refused(f"PodGroup {key[0]}/{key[1]}: recording the gang's binds: {exc}") from exc
            assert resource is not None  # _patch raised Refused otherwise
            got = await committing.read_back(rt, "PodGroup", resource, *key)
            if got is None:
                raise committing.Refused(f"PodGroup {key[0]}/{key[1]} is gone") from exc
            if _recorded(got) == wanted:
                return
    raise committing.Unknown(f"PodGroup {key[0]}/{key[1]}: recording the gang's binds kept failing with an "
                             "unknown outcome")


async def clear(rt: Runtime, key: ganging.Key) -> None:
    """Remove the intent once nothing of it is left to bind. A failure only leaves it for the next pass,
    which finds every member bound and removes it then."""
    if _recorded(rt.cluster.pod_groups.raw(*key)) is None:
        return
    try:
        await _patch(rt, key, None)
    except (kube_errors.KubeError, committing.Refused) as exc:
        logger.warning("podgroup=%s/%s: cannot remove annotation %s (%s); removed on a later pass", *key,
                       ANNOTATION, exc)


def _done(rt: Runtime, pod: pods.Pod) -> bool:
    """Bound already (or, in gate mode, ungated: kube-scheduler binds it): nothing left to do for it."""
    if pod.spec.node_name:
        return True
    memory = rt.pods.get(pod.metadata.uid or "")
    if memory is not None and memory.bound_to is not None:
        return True
    settings = rt.settings.scheduling
    return pod.spec.scheduler_name != settings.scheduler_name and settings.gate not in [
        g.name for g in pod.spec.scheduling_gates]


def _why_not(rt: Runtime, pod: pods.Pod, bind: Bind, group_uid: str) -> str | None:
    """Why the recorded bind can no longer be completed; None when it can."""
    if rt.cluster.nodes.get("", bind.node) is None:
        return f"node {bind.node} is gone"
    item = scheduling._item_for(rt, pod)
    if item is None:
        return "its claims are not all there (or a write of them is not observed yet)"
    if isinstance(item, str):
        return item
    if item.claims:
        return "ResourceClaim " + ", ".join(c.ref() for c in item.claims) + " is no longer allocated"
    for claim in item.allocated:
        if not any(r.uid in (pod.metadata.uid, group_uid) for r in claim.status.reserved_for):
            return f"ResourceClaim {claim.ref()} is no longer reserved for it"
    return None


def _reservations(rt: Runtime, uid: str) -> list[tuple[model_claims.ResourceClaim, str]]:
    found = []
    for claim_key in sorted(rt.cluster.claims_of.get(uid, ())):
        claim = rt.cluster.claims.get(*claim_key)
        if claim is not None and claim.status.allocation is not None and any(
                r.uid == uid for r in claim.status.reserved_for):
            found.append((claim, uid))
    return found


async def complete(rt: Runtime, key: ganging.Key, intent: Intent) -> int:
    """Bind what the intent says and is not bound yet; give back what cannot be completed; remove the
    intent when nothing is left open. The number of members bound now."""
    namespace = key[0]
    group = rt.cluster.pod_groups.get(*key)
    group_uid = (group.metadata.uid or "") if group is not None else ""
    bound, still_open = 0, False
    for bind in intent.binds:
        pod = rt.cluster.pods.get(namespace, bind.pod)
        if pod is None or pod.metadata.uid != bind.uid or pod.finished() or pod.metadata.deletion_timestamp:
            continue  # gone: nothing to bind; its claims go the way of any deleted pod's
        if _done(rt, pod):
            continue
        ref = f"{namespace or 'default'}/{bind.pod}"
        why = _why_not(rt, pod, bind, group_uid)
        if why is None:
            item = scheduling._item_for(rt, pod)
            assert not isinstance(item, str) and item is not None  # _why_not said it is whole
            # Every claim is allocated already (item.claims is empty): nothing to write but the bind.
            member = ganging.Member(pod, item, placement.Placement(bind.node, ()))
            try:
                await ganging.bind_member(rt, member)
            except committing.Unknown as exc:
                still_open = True  # looked at again on a later pass
                committing.backoff(rt, pod, "bind", exc)
                continue
            except committing.Refused as exc:
                why = f"binding it was refused: {exc}"
            else:
                bound += 1
                logger.info("gang %s/%s: pod=%s bound to node %s, completing the recorded binds", *key, ref,
                            bind.node)
                await committing.placed(rt, pod, member.placement,
                                        f" (gang of {len(intent.binds)}, PodGroup {key[1]}, completed)")
                continue
        held = _reservations(rt, bind.uid)
        undone = await ganging._roll_back(rt, held)
        logger.warning("gang %s/%s: pod=%s cannot be bound to node %s as recorded (%s); gave back %d of %d "
                       "reservation(s): it is placed again", *key, ref, bind.node, why, undone, len(held))
        if undone < len(held):
            still_open = True
            committing.backoff(rt, pod, "claim-status", RuntimeError("giving back reservations failed"))
    if not still_open:
        await clear(rt, key)
    return bound

