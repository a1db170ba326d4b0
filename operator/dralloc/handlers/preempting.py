"""Making room: priority preemption for a pod that fits nowhere (issue 29), carried out as kube-scheduler does.

When a pod dralloc owns fits no node, the decision (in the decider's thread, under its CPU budget)
also looks for lower-priority pods whose removal would let it fit (`scheduling/preemption.py`:
kube-scheduler's DefaultPreemption, with the devices their claims hold counted exactly). Here, on the
loop, the chosen victims are removed the way kube-scheduler's preemption removes them:

1. the preemptor's `status.nominatedNodeName` is set to the node: from then on the node is held for
   it (`Placer.hold`: no pod of equal or lower priority is placed there), so the devices and the
   room its victims free wait for it;
2. each victim gets the condition `DisruptionTarget` (reason `PreemptionByScheduler`), is deleted
   with its own grace period, and gets a Normal Event `Preempted` naming the preemptor and the node;
   the preemptor gets a Normal Event `Preempting` naming its victims.

Then the victims terminate; their claims are released (dralloc's claim lifecycle or
kube-controller-manager's), which wakes the preemptor, placed as soon as it fits. A pod whose
nominated node still has victims of its preemption terminating does not preempt again (`eligible`,
upstream's PodEligibleToPreemptOthers), nor while a claim usable there is still reserved for a victim
already gone (its devices are on their way back: the claim lifecycle lags the pod's deletion, where
kube-scheduler's cpu and memory free at once). A write whose outcome is unknown is read back: a victim is
taken as removed once it is gone or terminating, never before.

A gang that may not preempt (preemption off, or its policy Never) gets its nodes reserved instead
(`reserve_for_gang`): its members are nominated to the nodes preemption would choose, nobody is
removed, and the hold keeps lower-priority pods off those nodes until the pods there finish and the
gang fits (no starvation: otherwise pods of one device each keep taking what a gang needs at once).

A decision-pass helper (layer 5): calls the runtime, `committing` (reading back) and `clock`.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
from collections.abc import Callable, Sequence
from typing import Any

from dralloc import metrics
from dralloc.allocation import nodeaffinity
from dralloc.handlers import clock, committing
from dralloc.handlers.runtime import Runtime
from dralloc.kube import errors as kube_errors
from dralloc.kube import resources, writing
from dralloc.model import claims as model_claims
from dralloc.model import pods
from dralloc.scheduling import nodefit, placement, preemption

logger = logging.getLogger(__name__)

Raw = dict[str, Any]
DISRUPTION_TARGET = "DisruptionTarget"
PREEMPTION_REASON = "PreemptionByScheduler"
MOVE_REASON = "ConsolidationByDralloc"  # a movable pod removed to make room (handlers/moving.py)
RESENDS = 3


@dataclasses.dataclass(frozen=True)
class Inputs:
    """What the preemption search reads besides the placer: the claims each pod holds, the budgets.

    The claims are taken from the view as they are (frozen models, safe to read in the decider's
    thread) and indexed by holder only when a search first asks: the scheduler gathers inputs for
    every batch of pods that may preempt, and most of them fit without (indexing 2,000 claims per
    batch was a sixth of the event loop's time while a burst of pods was placed, issue 31)."""

    claims: tuple[model_claims.ResourceClaim, ...]
    budgets: tuple[preemption.DisruptionBudget, ...]
    # The PodGroups' priorities, and those disrupted as one (disruptionMode all) with their members on nodes.
    groups: preemption.Groups = preemption.NO_GROUPS

    @functools.cached_property
    def held(self) -> dict[str, tuple[preemption.HeldClaim, ...]]:
        """The allocated claims by the uid of each pod reserving them."""
        held: dict[str, list[preemption.HeldClaim]] = {}
        for claim in self.claims:
            allocation = claim.status.allocation if claim.status is not None else None
            if allocation is None or not claim.status.reserved_for:
                continue
            entry = preemption.HeldClaim(allocation, frozenset(r.uid for r in claim.status.reserved_for))
            for reference in claim.status.reserved_for:
                if reference.resource == "pods":
                    held.setdefault(reference.uid, []).append(entry)
        return {uid: tuple(claims) for uid, claims in held.items()}

    def held_by(self, uid: str) -> Sequence[preemption.HeldClaim]:
        return self.held.get(uid, ())


_cache: dict[int, tuple[tuple[int, ...], Inputs]] = {}


def inputs(rt: Runtime) -> Inputs:
    """The allocated claims by the pods reserving them, the PodDisruptionBudgets, and the PodGroups
    disrupted as one with their members, from the view; rebuilt only when those changed."""
    all_groups = list(rt.cluster.pod_groups.all())
    whole = {(g.metadata.namespace or "", g.metadata.name) for g in all_groups if g.spec.disrupted_whole()}
    key = (rt.cluster.claims.version, rt.cluster.disruption_budgets.version, rt.cluster.pod_groups.version,
           rt.cluster.pods.version if whole else 0)
    known = _cache.get(id(rt))
    if known is not None and known[0] == key:
        return known[1]
    budgets = tuple(preemption.DisruptionBudget(
        namespace=b.metadata.namespace or "", selector=b.spec.selector,
        disruptions_allowed=b.status.disruptions_allowed, disrupted=frozenset(b.status.disrupted_pods))
        for b in rt.cluster.disruption_budgets.all())
    members: dict[tuple[str, str], list[pods.Pod]] = {}
    if whole:
        for pod in rt.cluster.pods.all():
            group = pod.spec.scheduling_group.pod_group_name if pod.spec.scheduling_group is not None else None
            if group and (pod.namespace, group) in whole and pod.spec.node_name and not pod.finished():
                members.setdefault((pod.namespace, group), []).append(pod)
    priorities = {(g.metadata.namespace or "", g.metadata.name): g.spec.priority or 0 for g in all_groups}
    groups = preemption.Groups(priorities, {key_: tuple(found_) for key_, found_ in members.items()})
    found = Inputs(tuple(rt.cluster.claims.all()), budgets, groups)
    _cache.clear()  # one runtime per process; tests build many
    _cache[id(rt)] = (key, found)
    return found


def terminating_by_preemption(pod: pods.Pod) -> bool:
    """Upstream's PodTerminatingByPreemption: being deleted, with the DisruptionTarget condition a
    scheduler's preemption wrote."""
    return _terminating_for(pod, PREEMPTION_REASON)


def terminating_by_move(pod: pods.Pod) -> bool:
    """Being deleted, with the DisruptionTarget condition dralloc's consolidation wrote (handlers/moving.py:
    a movable pod removed to make room, which frees its node for the pod nominated there as a victim does)."""
    return _terminating_for(pod, MOVE_REASON)


def _terminating_for(pod: pods.Pod, reason: str) -> bool:
    return pod.metadata.deletion_timestamp is not None and any(
        c.type == DISRUPTION_TARGET and c.status == "True" and c.reason == reason for c in pod.status.conditions)


def eligible(rt: Runtime, placer: placement.Placer, pod: pods.Pod) -> bool:
    """Whether the pod may look for victims now: preemption on, the pod's policy allows it, and it is not
    `waiting_for_room`."""
    if not (rt.settings.scheduling.preemption and rt.preemption) or not preemption.may_preempt(pod):
        return False
    return not waiting_for_room(rt, placer, pod)


def waiting_for_room(rt: Runtime, placer: placement.Placer, pod: pods.Pod) -> bool:
    """Whether room is being made for the pod on its nominated node: a pod removed there for it (of its
    priority or lower) is still terminating, or the devices of one gone are not back yet. It waits for
    them rather than making room again."""
    node = pod.status.nominated_node_name
    if node:
        mine = preemption.priority(pod)
        for other in placer.placed.on(node):
            theirs = preemption.priority(other)
            if (theirs < mine and terminating_by_preemption(other)) or (theirs <= mine and terminating_by_move(other)):
                return True
        if releasing_on(rt, placer, node):
            return True  # the victims are gone, their devices not yet: they are for this pod
    return False


def releasing_on(rt: Runtime, placer: placement.Placer, node: str) -> bool:
    """Whether a claim usable on the node is still reserved for a pod that is gone or being removed by
    preemption: its devices are on their way back (the claim lifecycle releases them), and a pod
    nominated there waits for them rather than preempting again."""
    index = placer.index.get(node)
    if index is None:
        return False
    view = placer.views[index]
    for uid, held in inputs(rt).held.items():
        key = rt.cluster.pod_keys.get(uid)
        holder = rt.cluster.pods.get(*key) if key is not None else None
        if holder is not None and not terminating_by_preemption(holder) and not terminating_by_move(holder):
            continue
        for claim in held:
            selector = claim.results.node_selector
            try:
                if selector is None or nodeaffinity.selector_matches(selector, view.name, view.labels):
                    return True
            except ValueError:
                continue
    return False


def summary(chosen: preemption.NodeVictims, node: str | None = None) -> str:
    """What the pod's condition says of its preemption (`node`: the pod's own, when its victims may be on
    several nodes: a gang's)."""
    names = ", ".join(f"{p.namespace or 'default'}/{p.metadata.name}" for p in chosen.pods[:5])
    more = f" and {len(chosen.pods) - 5} more" if len(chosen.pods) > 5 else ""
    where = "there" if not chosen.node == "" else "for its gang"
    return (f"preemption: nominated node {node or chosen.node}; removing {len(chosen.pods)} lower-priority pod(s) "
            f"{where}: {names}{more}")


async def carry_out(rt: Runtime, pod: pods.Pod, chosen: preemption.NodeVictims) -> bool:
    """Nominate the pod to the node, then mark and delete each victim. True when every write is done (or
    known done by reading back); False when one was refused (logged, counted; the rest not attempted)."""
    return await _carry_out(rt, [(pod, chosen.node)], chosen.pods)


async def carry_out_gang(rt: Runtime, placed: Sequence[tuple[pods.Pod, str]], chosen: preemption.NodeVictims) -> bool:
    """For a gang: nominate every member to the node its placement (with the victims gone) gives it, then
    remove the victims, on whichever nodes they are. As `carry_out`."""
    return await _carry_out(rt, placed, chosen.pods)


async def _carry_out(rt: Runtime, nominations: Sequence[tuple[pods.Pod, str]], victims: Sequence[pods.Pod]) -> bool:
    first = nominations[0][0]
    namespace, name = first.metadata.namespace or "default", first.metadata.name
    nodes = sorted({node for _, node in nominations})
    try:
        for pod, node in nominations:
            await nominate(rt, pod, node)
        for victim in victims:
            await _disrupt(rt, victim, first, victim.spec.node_name or "")
    except (committing.Refused, committing.Unknown, kube_errors.KubeError) as exc:
        logger.warning("pod=%s/%s: preemption on node(s) %s stopped: %s", namespace, name, ", ".join(nodes), exc)
        metrics.observe_preemption("error", 0)
        return False
    metrics.observe_preemption("preempted", len(victims))
    logger.info("pod=%s/%s: nominated to node(s) %s; preempting %d pod(s)", namespace, name, ", ".join(nodes),
                len(victims))
    listed = _listed(victims)
    await post_to_nominated(rt, nominations, "Preempting", "Preempting",
                             lambda node: f"Nominated to node {node}; removing {len(victims)} lower-priority pod(s) "
                                          f"to make room: {listed}")
    return True


def _listed(pods_: Sequence[pods.Pod]) -> str:
    """Pods as an Event names them: namespace/name on node (priority)."""
    return ", ".join(f"{p.namespace or 'default'}/{p.metadata.name} on {p.spec.node_name} "
                     f"(priority {preemption.priority(p)})" for p in pods_)


async def post_to_nominated(rt: Runtime, nominations: Sequence[tuple[pods.Pod, str]], reason: str, action: str,
                             message: Callable[[str], str]) -> None:
    """A Normal Event on each nominated pod, its message for the pod's node; a failure is logged only."""
    for pod, node in nominations:
        raw = rt.cluster.pods.raw(pod.metadata.namespace or "", pod.metadata.name) or {}
        try:
            await rt.events.post(rt.require_session(), regarding=raw, reason=reason, type_="Normal", action=action,
                                 message=message(node))
        except kube_errors.KubeError as exc:
            logger.warning("pod=%s/%s: cannot post the %s Event: %s", pod.metadata.namespace, pod.metadata.name,
                           reason, exc)


def reservation_of(placer: placement.Placer, members: Sequence[pods.Pod]) -> list[str] | None:
    """The nodes a waiting gang's members are nominated to, while each still admits its member (it exists,
    its own constraints allow it, no pod of higher priority is nominated there); None otherwise: the
    reservation is to be made (again)."""
    found: set[str] = set()
    for pod in members:
        node = pod.status.nominated_node_name
        index = placer.index.get(node) if node else None
        if node is None or index is None or nodefit.static_misfit(pod, placer.nodes[index]) is not None \
                or placer.held_against(pod, index):
            return None
        found.add(node)
    return sorted(found)


def reserved_summary(nodes: Sequence[str], why: str) -> str:
    """What a waiting gang's members say of the nodes reserved for it (the same on every pass, so the
    condition is not rewritten while the gang waits)."""
    return (f"node(s) {', '.join(nodes)} reserved for the gang ({why}): no pod of lower priority is placed there "
            "until it is")


async def reserve_for_gang(rt: Runtime, nominations: Sequence[tuple[pods.Pod, str]], waiting_for: Sequence[pods.Pod],
                           why: str) -> bool:
    """Nominate every member of a gang that may not preempt to the node its placement gives it once the
    lower-priority pods there (`waiting_for`) are gone, removing nobody: the nodes are then held for it
    (`Placer.hold`) and fill up only with what the gang needs as those pods finish. True when every
    nomination is written (or read back as written)."""
    first = nominations[0][0]
    nodes = sorted({node for _, node in nominations})
    try:
        for pod, node in nominations:
            await nominate(rt, pod, node)
    except (committing.Refused, committing.Unknown, kube_errors.KubeError) as exc:
        logger.warning("pod=%s/%s: reserving node(s) %s stopped: %s", first.metadata.namespace, first.metadata.name,
                       ", ".join(nodes), exc)
        return False
    metrics.observe_gang_reservation()
    listed = _listed(waiting_for[:10])
    more = f" and {len(waiting_for) - 10} more" if len(waiting_for) > 10 else ""
    await post_to_nominated(rt, nominations, "NodesReserved", "Reserving",
                             lambda node: f"Nominated to node {node}; {reserved_summary(nodes, why)}; waiting for "
                                          f"{len(waiting_for)} lower-priority pod(s) there to finish: {listed}{more}")
    return True


async def nominate(rt: Runtime, pod: pods.Pod, node: str) -> None:
    """status.nominatedNodeName, as kube-scheduler records the node it made room on."""
    namespace, name, uid = pod.metadata.namespace or "", pod.metadata.name, pod.metadata.uid or ""
    for _ in range(RESENDS + 1):
        try:
            stored = await writing.merge_patch(rt.require_session(), resources.PODS, name,
                                               {"metadata": {"uid": uid}, "status": {"nominatedNodeName": node}},
                                               namespace or "default", subresource="status")
            rt.cluster.apply("Pod", "MODIFIED", stored)
            return
        except kube_errors.KubeError as exc:
            if not kube_errors.outcome_unknown(exc):
                raise committing.Refused(f"pod {namespace}/{name}: nominating node {node}: {exc}") from exc
            got = await committing.read_back(rt, "Pod", resources.PODS, namespace, name)
            if got is None or (got.get("metadata") or {}).get("uid") != uid:
                raise committing.Refused(f"pod {namespace}/{name} is gone") from exc
            if (got.get("status") or {}).get("nominatedNodeName") == node:
                return
    raise committing.Unknown(f"pod {namespace}/{name}: nominating node {node} kept failing with an unknown outcome")


async def _disrupt(rt: Runtime, victim: pods.Pod, preemptor: pods.Pod, node: str) -> None:
    """The victim's DisruptionTarget condition, its deletion (its own grace period), its Event."""
    by = f"{preemptor.namespace or 'default'}/{preemptor.metadata.name}"
    await remove(rt, victim, PREEMPTION_REASON,
                 f"{rt.settings.scheduling.scheduler_name}: preempting to accommodate a higher priority pod",
                 "Preempted", f"Preempted by pod {by} (uid {preemptor.metadata.uid}) on node {node}")


async def remove(rt: Runtime, victim: pods.Pod, reason: str, message: str, event_reason: str, event: str) -> None:
    """A pod removed to make room: its DisruptionTarget condition (`reason`, `message`), its deletion (its own
    grace period), then a Normal Event (`event_reason`, `event`). Raises `committing.Refused` when a write
    is refused, `committing.Unknown` when the deletion's outcome stays unknown; a pod already gone (or
    replaced by a namesake) counts as removed."""
    namespace, name, uid = victim.metadata.namespace or "", victim.metadata.name, victim.metadata.uid or ""
    if not await _mark(rt, victim, reason, message):
        return  # gone already: nothing to remove
    try:
        await writing.delete_object(rt.require_session(), resources.PODS, name, namespace or "default", uid=uid)
    except (kube_errors.NotFoundError, kube_errors.ConflictError):
        pass  # gone, or replaced by a namesake: this victim is removed either way
    except kube_errors.KubeError as exc:
        if not kube_errors.outcome_unknown(exc):
            raise committing.Refused(f"pod {namespace}/{name}: deleting it: {exc}") from exc
        got = await committing.read_back(rt, "Pod", resources.PODS, namespace, name)
        if got is not None and (got.get("metadata") or {}).get("uid") == uid and \
                not (got.get("metadata") or {}).get("deletionTimestamp"):
            raise committing.Unknown(f"pod {namespace}/{name}: its deletion's outcome is unknown") from exc
    raw = rt.cluster.pods.raw(namespace, name) or {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": name, "namespace": namespace or "default", "uid": uid}}
    try:
        await rt.events.post(rt.require_session(), regarding=raw, reason=event_reason, type_="Normal",
                             action="Preempting", message=event)
    except kube_errors.KubeError as exc:
        logger.warning("pod=%s/%s: cannot post the %s Event: %s", namespace, name, event_reason, exc)


async def _mark(rt: Runtime, victim: pods.Pod, reason: str, message: str) -> bool:
    """Add (or refresh) the victim's DisruptionTarget condition; False when the victim is gone."""
    namespace, name, uid = victim.metadata.namespace or "", victim.metadata.name, victim.metadata.uid or ""
    condition = {"type": DISRUPTION_TARGET, "status": "True", "reason": reason, "message": message,
                 "lastTransitionTime": clock.stamp()}
    for _ in range(RESENDS + 1):
        raw = rt.cluster.pods.raw(namespace, name)
        if raw is None or (raw.get("metadata") or {}).get("uid") != uid:
            return False
        conditions = list((raw.get("status") or {}).get("conditions") or [])
        ops: list[Raw] = [{"op": "test", "path": "/metadata/resourceVersion",
                           "value": (raw.get("metadata") or {}).get("resourceVersion")}]
        at = next((i for i, c in enumerate(conditions) if c.get("type") == DISRUPTION_TARGET), None)
        if at is not None:
            ops.append({"op": "replace", "path": f"/status/conditions/{at}", "value": condition})
        elif conditions:
            ops.append({"op": "add", "path": "/status/conditions/-", "value": condition})
        else:
            ops.append({"op": "add", "path": "/status/conditions", "value": [condition]})
        try:
            stored = await writing.json_patch(rt.require_session(), resources.PODS, name, ops,
                                              namespace or "default", subresource="status")
            rt.cluster.apply("Pod", "MODIFIED", stored)
            return True
        except kube_errors.NotFoundError:
            return False
        except kube_errors.KubeError as exc:
            # A failed test (the pod changed since read: 422) or an unknown outcome: read it again.
            if not kube_errors.outcome_unknown(exc) and not isinstance(exc, kube_errors.InvalidError):
                raise committing.Refused(f"pod {namespace}/{name}: marking it DisruptionTarget: {exc}") from exc
            if await committing.read_back(rt, "Pod", resources.PODS, namespace, name) is None:
                return False
    raise committing.Unknown(f"pod {namespace}/{name}: marking it DisruptionTarget kept failing")
