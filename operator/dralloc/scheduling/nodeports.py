"""kube-scheduler's NodePorts filter: a node whose pods hold a host port the pod asks for does not fit.

A host port is (protocol, hostIP, port), protocol TCP and hostIP 0.0.0.0 when absent. Two
conflict when protocol and port are equal and either hostIP is 0.0.0.0 or both are the same
(kube-scheduler's HostPortInfo.CheckConflict). The ports with a hostPort of the regular
containers and of the sidecars (init containers with `restartPolicy: Always`, which run as long
as the pod) count, on both sides, as upstream's GetHostPorts reads them; other init containers'
ports do not. The pods on the node are `PlacedPods`'s: bound, or placed by
the current pass.

Pure: imports only the model and `placedpods`.
"""

from __future__ import annotations

from dralloc.model import nodes, pods
from dralloc.scheduling import placedpods

REASON = "node(s) didn't have free ports for the requested pod ports"
WILDCARD = "0.0.0.0"

Port = tuple[str, str, int]  # protocol, hostIP, port


def host_ports(pod: pods.Pod) -> list[Port]:
    """(protocol, hostIP, hostPort) of every port the pod holds on its node: its sidecars' and its
    containers' (`placedpods.host_ports` reads the containers only)."""
    found = []
    for container in pod.spec.init_containers:
        if (container.model_extra or {}).get("restartPolicy") != "Always":
            continue
        for port in container.ports:
            if port.host_port:
                found.append((port.protocol or "TCP", port.host_ip or WILDCARD, port.host_port))
    return found + placedpods.host_ports(pod)


def conflicts(wanted: Port, used: Port) -> bool:
    protocol, ip, port = wanted
    other_protocol, other_ip, other_port = used
    if protocol != other_protocol or port != other_port:
        return False
    return ip == WILDCARD or other_ip == WILDCARD or ip == other_ip


class Check:
    """The pod's host ports, checked against each node's pods."""

    def __init__(self, pod: pods.Pod, wanted: list[Port], placed: placedpods.PlacedPods) -> None:
        self.uid = pod.metadata.uid
        self.wanted = wanted
        self.placed = placed
        self.ports = {port for _, _, port in wanted}

    def reject(self, node: nodes.Node) -> str | None:
        for other in self.placed.on(node.metadata.name):
            if other.metadata.uid == self.uid:
                continue
            for used in host_ports(other):
                if used[2] in self.ports and any(conflicts(w, used) for w in self.wanted):
                    return REASON
        return None


def prepare(pod: pods.Pod, placed: placedpods.PlacedPods) -> Check | None:
    """None when the pod asks for no host port (the fast path: nothing to check)."""
    wanted = host_ports(pod)
    return Check(pod, wanted, placed) if wanted else None


def share_a_port(one: pods.Pod, other: pods.Pod) -> bool:
    """Whether two pods placed together on one node ask for a host port that conflicts (a gang's members,
    which the filter does not count against each other)."""
    wanted = host_ports(one)
    return bool(wanted) and any(conflicts(w, used) for used in host_ports(other) for w in wanted)
