"""A gang's recorded binds completed: after a crash, a restart or a bind of unknown outcome.

`ganging.commit` writes every claim of a gang, then binds (or ungates) every member. The
claims alone are not enough of a record for the binds: after a crash with some members
bound, the others still hold their claims, and deciding them again may find their node no
longer fits (a taint, another pod's cpu), which would leave the gang partly bound for good.
So, once every claim is written and before the first bind, the decision is recorded on the
PodGroup's status (handlers/intents.py), and removed after every member is bound.

A pass that meets a PodGroup carrying the record does not decide the gang again; it checks
(`check`, no await) and completes (`complete`) the recorded binds:

- a member bound already, or gone (deleted, replaced by a pod of another uid, finished),
  needs nothing;
- a member whose claims are still allocated and reserved for it (or for the PodGroup), whose
  node still exists and still fits it (the Placer's node fit: node name, selectors and
  affinity, NoExecute taints, resources, its shared claims' node selectors; a cordon or a
  NoSchedule taint that came since does not count, as in kube-scheduler's binding cycle) and
  lies in the gang's topology domain, is bound to that node: the decision was made whole, its devices
  are held there, and binding finishes it (as kube-scheduler's binding cycle finishes an
  assumed pod). The check is a second line of defence: whatever the record says, a member is
  never bound where the scheduler would not put it;
- a member that cannot be completed (its node is gone, a claim of it lost its allocation,
  the bind is refused) has what it holds given back (its reservations removed, allocations
  with nobody left deallocated), and is then placed again like any pending member of a gang
  whose other members run: in their domain, counting toward minCount.

The record is removed once no recorded member is left to bind; a bind whose outcome stays
unknown keeps it, and the next pass looks again.

"All or nothing" for binds: Kubernetes cannot unbind a pod, so once one member is bound the
gang can only go forward. dralloc therefore binds only after every claim of the gang is
written (nothing can fail for lack of devices afterwards), and after a crash it completes the
binds rather than re-deciding them; only a member that can no longer run where it was placed
is given back and placed anew, while the bound ones keep running (stopping them is the
workload's business, e.g. its controller or the PodGroup's disruptionMode).

A decision pass beside ganging.py (neither imports the other): calls `items`, `intents` and
`committing`; handlers/scheduling.py calls it.
"""

from __future__ import annotations

import dataclasses
import logging

from dralloc.handlers import committing, intents, items, reporting
from dralloc.handlers.intents import Bind, Intent
from dralloc.handlers.runtime import Runtime
from dralloc.model import claims as model_claims
from dralloc.model import pods
from dralloc.scheduling import placement

logger = logging.getLogger(__name__)

Key = tuple[str, str]  # the PodGroup: (namespace, name)


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


def _why_not(rt: Runtime, placer: placement.Placer, pod: pods.Pod, bind: Bind, group_uid: str,
             domain: tuple[str, str] | None) -> str | None:
    """Why the recorded bind can no longer be completed; None when it can. `domain`: the topology key
    and the value every member's node must have."""
    index = placer.index.get(bind.node)
    if rt.cluster.nodes.get("", bind.node) is None or index is None:
        return f"node {bind.node} is gone"
    item = items.item_for(rt, pod)
    if item is None:
        return "its claims are not all there (or a write of them is not observed yet)"
    if isinstance(item, str):
        return item
    if item.claims:
        return "ResourceClaim " + ", ".join(c.ref() for c in item.claims) + " is no longer allocated"
    for claim in item.allocated:
        if not any(r.uid in (pod.metadata.uid, group_uid) for r in claim.status.reserved_for):
            return f"ResourceClaim {claim.ref()} is no longer reserved for it"
    misfit = placer.misfit(item, index, binding=True)
    if misfit is not None:
        return f"node {bind.node} does not fit it: {misfit}"
    if domain is not None and placer.views[index].labels.get(domain[0]) != domain[1]:
        return f"node {bind.node} is not in the gang's topology domain {domain[0]}={domain[1]}"
    return None


def _domain(rt: Runtime, key: Key, intent: Intent) -> tuple[str, str] | None:
    """The gang's topology domain: its key and the value of the first member's node that has one."""
    group = rt.cluster.pod_groups.get(*key)
    topology = group.spec.topology_key() if group is not None else None
    if topology is None:
        return None
    for bind in intent.binds:
        node = rt.cluster.nodes.get("", bind.node)
        if node is not None and topology in node.metadata.labels:
            return topology, node.metadata.labels[topology]
    return topology, ""  # no recorded node carries the key: none of them is in a domain


def _reservations(rt: Runtime, namespace: str, uid: str) -> list[tuple[model_claims.ResourceClaim, str]]:
    """The member's claims (in the PodGroup's namespace: any tenant can write any uid into its claims)
    allocated and reserved for it."""
    found = []
    for claim_key in rt.cluster.claims_naming(namespace, uid):
        claim = rt.cluster.claims.get(*claim_key)
        if claim is not None and claim.status.allocation is not None and any(
                r.uid == uid for r in claim.status.reserved_for):
            found.append((claim, uid))
    return found


@dataclasses.dataclass(frozen=True)
class Checked:
    """A recorded gang's members still to bind, each with why it cannot be completed (None: it can)."""

    intent: Intent
    todo: tuple[tuple[Bind, pods.Pod, str | None], ...]


def check(rt: Runtime, placer: placement.Placer, key: Key, intent: Intent) -> Checked:
    """Which recorded members are left to bind, and whether each still fits where it was recorded
    (`placer`'s node fit, the gang's topology domain). No await: the pass goes on with the placer."""
    namespace = key[0]
    group = rt.cluster.pod_groups.get(*key)
    group_uid = (group.metadata.uid or "") if group is not None else ""
    domain = _domain(rt, key, intent)
    todo: list[tuple[Bind, pods.Pod, str | None]] = []
    for bind in intent.binds:
        pod = rt.cluster.pods.get(namespace, bind.pod)
        if pod is None or pod.metadata.uid != bind.uid or pod.finished() or pod.metadata.deletion_timestamp:
            continue  # gone: nothing to bind; its claims go the way of any deleted pod's
        if _done(rt, pod):
            continue
        todo.append((bind, pod, _why_not(rt, placer, pod, bind, group_uid, domain)))
    return Checked(intent, tuple(todo))


async def complete(rt: Runtime, key: Key, checked: Checked) -> int:
    """Bind the members `check` found completable; give back what cannot be completed; remove the intent
    when nothing is left open. The number of members bound now."""
    namespace, intent = key[0], checked.intent
    bound, still_open = 0, False
    for bind, pod, why in checked.todo:
        ref = f"{namespace or 'default'}/{bind.pod}"
        if why is None:
            # `check` found every claim allocated and reserved for it: nothing to write but the bind.
            try:
                await committing.bind_or_ungate(rt, pod, bind.node)
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
                await committing.placed(rt, pod, placement.Placement(bind.node, ()),
                                        f" (gang of {len(intent.binds)}, PodGroup {key[1]}, completed)")
                continue
        held = _reservations(rt, namespace, bind.uid)
        undone = await committing.give_back(rt, held)
        logger.warning("gang %s/%s: pod=%s cannot be bound to node %s as recorded (%s); gave back %d of %d "
                       "reservation(s): it is placed again", *key, ref, bind.node, why, undone, len(held))
        if undone < len(held):
            still_open = True
            committing.backoff(rt, pod, "claim-status", RuntimeError("giving back reservations failed"))
    if not still_open:
        await intents.clear(rt, key)
        await reporting.group_scheduled(rt, key, True, "Scheduled", f"gang of {len(intent.binds)} placed")
    return bound

