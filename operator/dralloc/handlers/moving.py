"""Making room by moving movable pods: the operator's side of issue 34's consolidation.

With the `default` AllocationPolicy's `spec.consolidationMoves: M` (1 to 4; strategy
FragmentationAware), a single pod that fits nowhere, and for which priority preemption finds
nothing to remove (or may not look: preemption off, its policy Never), may get a node by
moving at most M pods off it. Only pods whose owners said they may be moved qualify: annotated
`dralloc.io/movable: "true"`, with a controller to re-create them, of the pod's priority or
lower, in no PodGroup, without volumes and with claims of their own
(`scheduling.consolidating.placed_pod`), and only as many as their PodDisruptionBudgets allow.

The search is `dralloc simulate --consolidate M`'s (`scheduling.consolidating`), run in the
decider's thread under the pod's CPU budget and undone (`Consolidator.plan_room`): the node is
chosen only when every pod moved off it has room on another node at that moment, the allocator
deciding each placement. Then, on the loop, as preemption does (handlers/preempting.py):

1. the pod's `status.nominatedNodeName` is set to the node, which is then held for it (no pod of
   its priority or lower is placed there: the moved pods' replacements go elsewhere);
2. each moved pod gets the condition `DisruptionTarget` (reason `ConsolidationByDralloc`) and is
   deleted with its own grace period, and a Normal Event `Moved` naming the pod it makes room for;
   the pod gets a Normal Event `MakingRoom` naming them.

Their controllers re-create them; the replacements are placed as any pod (elsewhere: the node is
held). Once the moved pods' claims are released, the pod fits and is placed; meanwhile it does
not make room again (`preempting.waiting_for_room`). What this cannot promise: that the
replacements still find room when they come (the cluster may have changed in between), as a
preempted pod's replacement may not either.

A decision-pass helper (layer 5): calls the runtime and `preempting`'s writes.
"""

from __future__ import annotations

import dataclasses
import logging

from dralloc import metrics
from dralloc.allocation import interruption
from dralloc.handlers import committing, preempting
from dralloc.handlers.runtime import Runtime
from dralloc.kube import errors as kube_errors
from dralloc.model import claims as model_claims
from dralloc.model import pods
from dralloc.scheduling import batching, consolidating, placement, preemption

logger = logging.getLogger(__name__)

MAX_MOVES = 4  # the CRD's maximum for spec.consolidationMoves


@dataclasses.dataclass(frozen=True)
class Inputs:
    """What the search reads besides the placer: every movable pod of the view with its claims (frozen
    models, safe to read in the decider's thread), and how many may be moved for one pod."""

    candidates: tuple[tuple[pods.Pod, tuple[model_claims.ResourceClaim, ...]], ...]
    max_moves: int
    budgets: tuple[preemption.DisruptionBudget, ...] = ()
    # The consolidators built from them, by placer and priority: every pod of a run that fits nowhere
    # shares one (built once: a cluster may hold thousands of movable pods). Read in the decider's thread.
    built: dict[tuple[int, int], consolidating.Consolidator] = dataclasses.field(default_factory=dict, compare=False)


_cache: dict[int, tuple[tuple[int, ...], Inputs]] = {}


def inputs(rt: Runtime) -> Inputs:
    """The movable pods bound in the view, each with the claims its status names (a pod whose claims are
    not all in the view is left out); gathered on the loop, so kept while the pods, claims and budgets are
    the same (a tenant's thousands of movable pods are not walked again for every run of a pass)."""
    key = (rt.cluster.pods.version, rt.cluster.claims.version, rt.cluster.disruption_budgets.version,
           rt.consolidation_moves)
    known = _cache.get(id(rt))
    if known is not None and known[0] == key:
        return known[1]
    found: list[tuple[pods.Pod, tuple[model_claims.ResourceClaim, ...]]] = []
    for pod in rt.movable_pods():
        if not pod.spec.node_name:
            continue
        namespace = pod.metadata.namespace or ""
        claims = [rt.cluster.claims.get(namespace, status.resource_claim_name)
                  for status in pod.status.resource_claim_statuses if status.resource_claim_name]
        if all(claim is not None for claim in claims):
            found.append((pod, tuple(c for c in claims if c is not None)))
    given = Inputs(tuple(found), rt.consolidation_moves, preempting.inputs(rt).budgets)
    _cache.clear()  # one runtime per process; tests build many
    _cache[id(rt)] = (key, given)
    return given


def enabled(rt: Runtime, placer: placement.Placer) -> bool:
    """Whether pods may be moved in this pass: spec.consolidationMoves above 0, under the
    fragmentation-aware policy (its model ranks the nodes worth trying)."""
    return rt.consolidation_moves > 0 and placer.model is not None


def plan(placer: placement.Placer, item: placement.Item, given: Inputs) -> consolidating.Room | None:
    """The room the item could get by moving movable pods of its priority or lower (in the decider's thread,
    under the decision's budget); the placer is left as it was."""
    mine = preemption.priority(item.pod) if item.pod is not None else 0
    key = (id(placer), mine)
    consolidator = given.built.get(key)
    if consolidator is None:
        consolidator = consolidating.Consolidator(placer, given.max_moves,
                                                  lambda moved, where: batching.as_bound(moved.pod, where),
                                                  lambda moved, where: None)
        for pod, claims in given.candidates:
            interruption.checkpoint()
            if preemption.priority(pod) > mine or _beyond_budget([pod], given.budgets):
                continue  # more important than the pod, or a PodDisruptionBudget allows no disruption of it now
            entry = consolidating.placed_pod(pod, claims)
            if entry is not None and entry.placement is not None and entry.placement.node in placer.index:
                consolidator.placed(entry)
        given.built.clear()  # one placer at a time: a renewed one makes the others useless
        given.built[key] = consolidator
    room = consolidator.plan_room(item)
    if room is not None and _beyond_budget([e.item.pod for e, _ in room.moves if e.item.pod is not None],
                                           given.budgets):
        return None  # each may go, not all of them together
    return room


def _beyond_budget(moved: list[pods.Pod], budgets: tuple[preemption.DisruptionBudget, ...]) -> bool:
    """Whether removing these pods together would disrupt more than a PodDisruptionBudget allows (the
    budgets' status as the disruption controller last wrote it; upstream's FilterVictimsWithPDBViolation)."""
    return bool(budgets) and bool(preemption.split_by_budget([preemption.Victim(tuple(moved))], budgets)[0])


def moved_pods(rt: Runtime, room: consolidating.Room) -> list[tuple[pods.Pod, str]]:
    """The moved pods as the view has them now, each with the node found for it elsewhere; those gone, being
    deleted or already marked for removal (another pod of the pass, decided on the same state, took them)
    are left out."""
    found = []
    for entry, elsewhere in room.moves:
        namespace, _, name = entry.item.name.partition("/")
        pod = rt.cluster.pods.get(namespace, name)
        if (pod is not None and entry.item.pod is not None and pod.metadata.uid == entry.item.pod.metadata.uid
                and pod.metadata.deletion_timestamp is None
                and not any(c.type == preempting.DISRUPTION_TARGET for c in pod.status.conditions)):
            found.append((pod, elsewhere.node))
    return found


def summary(room: consolidating.Room) -> str:
    """What the pod's condition says of the room made for it."""
    moved = ", ".join(f"{entry.item.name} (room on node {elsewhere.node})" for entry, elsewhere in room.moves)
    return (f"consolidation: nominated node {room.placed.node}; moving {len(room.moves)} movable pod(s) off it: "
            f"{moved}")


async def carry_out(rt: Runtime, pod: pods.Pod, room: consolidating.Room) -> bool:
    """Nominate the pod to the node, then mark and delete each moved pod. True when every write is done (or
    known done by reading back); False when one was refused (logged, counted; the rest not attempted)."""
    namespace, name = pod.metadata.namespace or "default", pod.metadata.name
    node = room.placed.node
    moving = moved_pods(rt, room)
    if len(moving) < len(room.moves):
        metrics.observe_consolidation("gone", 0)
        return False  # a pod to move left meanwhile: the next pass looks again
    scheduler = rt.settings.scheduling.scheduler_name
    try:
        await preempting.nominate(rt, pod, node)
        for moved, elsewhere in moving:
            await preempting.remove(
                rt, moved, preempting.MOVE_REASON,
                f"{scheduler}: moving this movable pod to make room for pod {namespace}/{name}",
                "Moved", f"Moved by {scheduler} to make room for pod {namespace}/{name} (uid {pod.metadata.uid}) on "
                         f"node {node}; it is annotated {consolidating.MOVABLE_ANNOTATION}, and node {elsewhere} "
                         "had room for it")
    except (committing.Refused, committing.Unknown, kube_errors.KubeError) as exc:
        logger.warning("pod=%s/%s: moving pods off node %s stopped: %s", namespace, name, node, exc)
        metrics.observe_consolidation("error", 0)
        return False
    metrics.observe_consolidation("moved", len(moving))
    logger.info("pod=%s/%s: nominated to node %s; moving %d movable pod(s)", namespace, name, node, len(moving))
    listed = ", ".join(f"{p.metadata.namespace or 'default'}/{p.metadata.name} (room on node {where})"
                       for p, where in moving)
    await preempting.post_to_nominated(rt, [(pod, node)], "MakingRoom", "Moving",
                                       lambda at: f"Nominated to node {at}; moving {len(moving)} movable pod(s) "
                                                  f"elsewhere to make room: {listed}")
    return True
