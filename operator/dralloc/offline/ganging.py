"""`dralloc simulate`'s gangs: the pods of a PodGroup placed all or nothing, as the operator places them.

A workload pod joins a gang through `spec.schedulingGroup.podGroupName`, naming a
scheduling.k8s.io PodGroup (v1beta1, or 1.36's v1alpha2) of its namespace, read from
the snapshot (`-f`) or the workload files (`--workload`) with the operator's model. A
PodGroup with the `basic` policy leaves its pods to the single-pod path, as in the
operator (`handlers/ganging.py`; both decide with `scheduling/gangsearch.py`).

Members arrive in the workload's order, like any other item. The gang is decided when
its minCount-th member arrives (members the snapshot shows bound count toward minCount,
and with a topology key hold the gang to their domain): every member that has arrived and
is not placed is placed with `scheduling.gangsearch.search`, the operator's own search
(`allocation.gangs.place_gang` with the Placer's node fit for each member, the members'
cpu/memory/pods summed per node, and what relates members on different nodes), against
simulate's placer, all or none. A member arriving after the gang is placed is decided
alone, in the gang's domain, as the operator decides a member created late. A gang that
does not fit is decided again, whole, when its next member arrives.

What members are told is what the operator writes in their PodScheduled condition: the
gang's `GangUnfit` message, the wait for minCount members ("N of its M pods (minCount)
exist"), or the wait for a PodGroup that is in neither input. Not simulated: PodGroup
claims (a member listing an entry of the PodGroup's `spec.resourceClaims`): such a gang
is an input error on its members, reported like an invalid item.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from dralloc.allocation import errors, requests
from dralloc.lifecycle import templates
from dralloc.model import pods as model_pods
from dralloc.model import scheduling as model_scheduling
from dralloc.offline import inputs
from dralloc.scheduling import gangsearch, placement

Key = tuple[str, str]  # the PodGroup: (namespace, name), the namespace defaulted


class Entry(Protocol):
    """A member's line of the report (simulate's ItemResult)."""

    item: placement.Item
    placement: placement.Placement | None
    reason: str
    error: bool


def group_key(pod: model_pods.Pod) -> Key | None:
    """The PodGroup the pod names (`spec.schedulingGroup.podGroupName`), if any."""
    group = pod.spec.scheduling_group
    if group is None or not group.pod_group_name:
        return None
    return (pod.metadata.namespace or "default", group.pod_group_name)


@dataclasses.dataclass
class Gang:
    key: Key
    group: model_scheduling.PodGroup | None
    bound: list[tuple[model_pods.Pod, str]] = dataclasses.field(default_factory=list)  # in the snapshot
    placed: list[tuple[model_pods.Pod, str]] = dataclasses.field(default_factory=list)  # by this run
    waiting: list[tuple[model_pods.Pod, Entry]] = dataclasses.field(default_factory=list)  # arrived, not placed
    members: int = 0  # workload pods naming it, arrived so far
    domain: str | None = None
    reason: str = ""  # why the waiting members are not placed
    error: bool = False  # the reason is an input error

    @property
    def ref(self) -> str:
        return f"{self.key[0]}/{self.key[1]}"

    def min_count(self) -> int:
        return self.group.spec.min_count() if self.group is not None else 0

    def topology(self) -> str | None:
        return self.group.spec.topology_key() if self.group is not None else None

    def summary(self) -> dict[str, Any]:
        return {"podGroup": self.ref, "found": self.group is not None, "minCount": self.min_count(),
                "topologyKey": self.topology(), "members": self.members, "placed": len(self.placed),
                "boundBefore": len(self.bound), "domain": self.domain, "reason": self.reason}


class Gangs:
    """The workload's gangs, decided as their members arrive (`arrive`), against the caller's placer."""

    def __init__(self, groups: Iterable[model_scheduling.PodGroup], bound: Iterable[tuple[model_pods.Pod, str]],
                 node_labels: dict[str, dict[str, str]], committed: Callable[[placement.Item, placement.Placement],
                                                                            None]) -> None:
        """`groups`: the PodGroups of both inputs (InputError for two of one name); `bound`: the
        snapshot's pods with their nodes (members bound already); `node_labels`: per node name, for their domain;
        `committed`: told of each member placed, after the placer holds it."""
        self.groups: dict[Key, model_scheduling.PodGroup] = {}
        for group in groups:
            key = (group.metadata.namespace or "default", group.metadata.name)
            if key in self.groups:
                raise inputs.InputError(f"PodGroup {key[0]}/{key[1]}: metadata.name: duplicate object in the input")
            self.groups[key] = group
        self.bound = list(bound)
        self.node_labels = node_labels
        self.committed = committed
        self.gangs: dict[Key, Gang] = {}  # in the order their first member arrived

    def key_of(self, pod: model_pods.Pod) -> Key | None:
        """The gang the pod is placed with; None: the single-pod path (no PodGroup named, or a basic one)."""
        key = group_key(pod)
        if key is None:
            return None
        group = self.groups.get(key)
        if group is not None and group.spec.scheduling_policy.gang is None:
            return None  # basic scheduling: one by one
        return key

    def _gang(self, key: Key) -> Gang:
        gang = self.gangs.get(key)
        if gang is None:
            gang = self.gangs[key] = Gang(key, self.groups.get(key))
            gang.bound = [(pod, node) for pod, node in self.bound if group_key(pod) == key]
            topology = gang.topology()
            if topology is not None:
                for _, node in gang.bound:
                    value = self.node_labels.get(node, {}).get(topology)
                    if value is not None:
                        gang.domain = value
                        break
        return gang

    def arrive(self, key: Key, pod: model_pods.Pod, entry: Entry, placer: placement.Placer) -> None:
        """A member arrives (`pod` as defaulted, `entry` its report line, unplaced): decided with the others
        waiting once the gang has minCount members."""
        gang = self._gang(key)
        gang.members += 1
        gang.waiting.append((pod, entry))
        if gang.group is None:
            self._tell(gang, f"{gangsearch.waiting_for_group(gang.ref)} (it is in neither -f nor --workload)")
            return
        claims = self._group_claims(gang)
        if claims is not None:
            self._tell(gang, claims, error=True)
            return
        present = len(gang.waiting) + len(gang.placed) + len(gang.bound)
        if present < gang.min_count():
            self._tell(gang, gangsearch.waiting_for_members(gang.ref, present, gang.min_count()))
            return
        self._decide(gang, placer)

    def _group_claims(self, gang: Gang) -> str | None:
        for pod, _ in gang.waiting:
            for entry in pod.spec.resource_claims:
                if templates.group_entry_for(entry, gang.group) is not None:
                    return (f"PodGroup {gang.ref}: pod {pod.metadata.namespace or 'default'}/{pod.metadata.name} "
                            f"uses the PodGroup's claim {entry.name} (spec.resourceClaims): simulate does not "
                            "place PodGroup claims")
        return None

    def _tell(self, gang: Gang, reason: str, *, error: bool = False) -> None:
        gang.reason, gang.error = reason, error
        for _, entry in gang.waiting:
            entry.reason, entry.error = (f"error: {reason}" if error else reason), error

    def _decide(self, gang: Gang, placer: placement.Placer) -> None:
        assert gang.group is not None
        pending = [pod for pod, _ in gang.waiting]
        items = [entry.item for _, entry in gang.waiting]
        mismatch = gangsearch.priorities_differ(gang.group, [*pending, *(p for p, _ in gang.bound + gang.placed)])
        if mismatch is not None:
            self._tell(gang, f"PodGroup {gang.ref} cannot be scheduled: {mismatch}", error=True)
            return
        shared = gangsearch.shared_unallocated(gang.ref, pending, items)
        if shared is not None:
            self._tell(gang, shared)
            return
        prepared = gangsearch.Prepared(gang.key, gang.ref, tuple(pending), tuple(items), frozenset(), gang.topology(),
                                     gang.domain, (), bool(gang.bound or gang.placed),
                                     gang.group.consumer_reference())
        try:
            outcome = gangsearch.search(placer, prepared)
        except errors.AllocationInputError as exc:
            self._invalid(gang, placer, exc)
            return
        placer.allocator_calls += outcome.steps or 0
        if isinstance(outcome, gangsearch.NotPlaced):
            self._tell(gang, outcome.message)
            return
        for member, (pod, entry) in zip(outcome.members, gang.waiting, strict=True):
            placer.commit(member.item, member.placement)
            self.committed(member.item, member.placement)
            entry.placement, entry.reason, entry.error = member.placement, "", False
            gang.placed.append((pod, member.placement.node))
        gang.waiting, gang.reason, gang.error = [], "", False
        if outcome.domain is not None:
            gang.domain = outcome.domain

    def _invalid(self, gang: Gang, placer: placement.Placer, exc: errors.AllocationInputError) -> None:
        """A member is invalid (a class that does not exist, CEL that does not compile, ...): an error on it,
        and the others wait for it, as the operator reports a member's error."""
        culprit = None
        for index, (_, entry) in enumerate(gang.waiting):
            try:
                requests.plan_claims(list(entry.item.claims), device_classes=placer.snapshot.classes,
                                     features=placer.features, all_devices=lambda plan: [])
            except errors.AllocationInputError as found:
                culprit, exc = index, found
                break
        text = errors.for_users(exc)
        if culprit is None:
            self._tell(gang, f"PodGroup {gang.ref}: {text}", error=True)
            return
        pod = gang.waiting[culprit][0]
        gang.reason, gang.error = (f"PodGroup {gang.key[1]}: member {pod.metadata.namespace or 'default'}/"
                                   f"{pod.metadata.name} cannot be placed: {text}"), True
        for index, (_, entry) in enumerate(gang.waiting):
            entry.reason, entry.error = (f"error: {text}", True) if index == culprit else (gang.reason, False)

    def summaries(self) -> list[dict[str, Any]]:
        return [gang.summary() for gang in self.gangs.values()]
