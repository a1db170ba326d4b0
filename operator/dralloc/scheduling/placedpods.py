"""The pods on each node, as kube-scheduler's inter-pod filters and scores see them.

kube-scheduler's InterPodAffinity, PodTopologySpread and NodePorts filters (and the first two's
scores, `preferences`) read the pods
already on each node: bound ones (`spec.nodeName`, not terminated: its informer leaves
Succeeded and Failed pods out) and the ones it assumed (placed, the bind still in flight).
`PlacedPods` holds both for dralloc: the cluster view's bound pods, plus the pods a
placement pass places (`add`), so that a pass that places replica 1 counts it when it
decides replica 2. It also holds the namespaces' labels (namespaceSelector) and the nodes
(their labels are the topology domains; spread's node policies read their taints and
labels).

A `Placer` works on a `fork()`: the view's index is shared and a node's list is copied the
first time the fork changes it, so building a placer per pass costs one dict copy, not one
list per node.

Pure: imports only the model.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence

from dralloc.model import nodes, pods


def has_required_anti_affinity(pod: pods.Pod) -> bool:
    affinity = pod.spec.affinity
    anti = affinity.pod_anti_affinity if affinity is not None else None
    return bool(anti is not None and anti.required_during_scheduling_ignored_during_execution)


def has_required_affinity(pod: pods.Pod) -> bool:
    affinity = pod.spec.affinity
    terms = affinity.pod_affinity if affinity is not None else None
    return bool(terms is not None and terms.required_during_scheduling_ignored_during_execution)


def scores_others(pod: pods.Pod) -> bool:
    """Whether the pod's own terms score nodes for pods that come after it (kube-scheduler's
    InterPodAffinity score): required pod affinity (hardPodAffinityWeight), preferred pod affinity or
    anti-affinity."""
    affinity = pod.spec.affinity
    if affinity is None:
        return False
    together, apart = affinity.pod_affinity, affinity.pod_anti_affinity
    return bool((together is not None and (together.required_during_scheduling_ignored_during_execution
                                           or together.preferred_during_scheduling_ignored_during_execution))
                or (apart is not None and apart.preferred_during_scheduling_ignored_during_execution))


def host_ports(pod: pods.Pod) -> list[tuple[str, str, int]]:
    """(protocol, hostIP, hostPort) of every port the pod's regular containers ask of their node;
    protocol TCP and hostIP 0.0.0.0 when absent. What NodePorts counts adds the sidecars' ports
    (restartable init containers): use `nodeports.host_ports`."""
    found = []
    for container in pod.spec.containers:
        for port in container.ports:
            if port.host_port:
                found.append((port.protocol or "TCP", port.host_ip or "0.0.0.0", port.host_port))
    return found


class PlacedPods:
    """Pods by node name (bound, or placed by the pass), node labels, namespace labels."""

    def __init__(self, node_list: Sequence[nodes.Node] | Mapping[str, nodes.Node], bound: Iterable[pods.Pod] = (),
                 namespaces: Mapping[str, Mapping[str, str]] | None = None) -> None:
        # By name; a mapping given is shared, never written to (placement.NodeTable.by_name).
        self.nodes: Mapping[str, nodes.Node] = (node_list if isinstance(node_list, Mapping)
                                                else {n.metadata.name: n for n in node_list})
        self.namespace_labels: Mapping[str, Mapping[str, str]] = namespaces or {}
        self.by_node: dict[str, list[pods.Pod]] = {}
        # Pods with required anti-affinity terms: every incoming pod is checked against them
        # (kube-scheduler's "existing pods' anti-affinity"); few in most clusters.
        self.anti_affinity: list[tuple[pods.Pod, str]] = []
        # Pods whose terms score nodes for every incoming pod (`scores_others`): what the preference
        # scores read when the incoming pod has no preferred terms of its own; few in most clusters.
        self.preferring: list[tuple[pods.Pod, str]] = []
        self.count = 0
        self._own: set[str] | None = None  # None: owns every list (not a fork)
        for pod in bound:
            node = pod.spec.node_name
            if node and node in self.nodes and not pod.finished():
                self._append(pod, node)

    def _append(self, pod: pods.Pod, node: str) -> None:
        self.by_node.setdefault(node, []).append(pod)
        if has_required_anti_affinity(pod):
            self.anti_affinity.append((pod, node))
        if scores_others(pod):
            self.preferring.append((pod, node))
        self.count += 1

    def fork(self) -> PlacedPods:
        """A copy to add to and remove from without changing this one (lists copied on first write)."""
        copy = PlacedPods.__new__(PlacedPods)
        copy.nodes = self.nodes
        copy.namespace_labels = self.namespace_labels
        copy.by_node = dict(self.by_node)
        copy.anti_affinity = list(self.anti_affinity)
        copy.preferring = list(self.preferring)
        copy.count = self.count
        copy._own = set()
        return copy

    def _writable(self, node: str) -> list[pods.Pod]:
        if self._own is not None and node not in self._own:
            self.by_node[node] = list(self.by_node.get(node, ()))
            self._own.add(node)
        return self.by_node.setdefault(node, [])

    def add(self, pod: pods.Pod, node: str) -> None:
        """A pod placed on the node (by this pass): the filters count it from now on."""
        self._writable(node)
        self._append(pod, node)

    def remove(self, pod: pods.Pod, node: str) -> None:
        """A pod that left the node (released): the filters no longer count it."""
        uid = pod.metadata.uid
        on_node = self._writable(node)
        kept = [p for p in on_node if p.metadata.uid != uid]
        self.count -= len(on_node) - len(kept)
        self.by_node[node] = kept
        self.anti_affinity = [(p, n) for p, n in self.anti_affinity if not (n == node and p.metadata.uid == uid)]
        if self.preferring:
            self.preferring = [(p, n) for p, n in self.preferring if not (n == node and p.metadata.uid == uid)]

    def on(self, node: str) -> Sequence[pods.Pod]:
        return self.by_node.get(node, ())

    def all(self) -> Iterator[tuple[pods.Pod, str]]:
        """Every pod with its node, by node name order then as added."""
        for node in sorted(self.by_node):
            for pod in self.by_node[node]:
                yield pod, node
