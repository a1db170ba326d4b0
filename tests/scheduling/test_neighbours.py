"""The pods around a node: host ports, and what one placer counts of the pods it placed itself.

kube-scheduler's NodePorts filter, row by row (`nodeports`), then the `Placer`: a pod it
placed counts for the next pod it decides (as kube-scheduler's assumed pods do), a pod
assumed (bound by us, the watch not caught up) counts too, and a node refused because of
the pods around it is asked again once they leave (these refusals are never remembered
per shape, unlike a node too small for the pod).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from tests.scheduling.objects import container, node_, pod_, pod_raw

from dralloc.allocation.features import Features
from dralloc.allocation.snapshots import Snapshot
from dralloc.model import conversion, pods
from dralloc.scheduling import nodeports, placedpods, placement

FEATURES = Features.from_gates({})
REASON = nodeports.REASON


def port_pod(name: str, *ports: Mapping[str, Any], node: str | None = None, **fields: Any) -> pods.Pod:
    raw = pod_raw(name, containers=[{**container(), "ports": [dict(p) for p in ports]}], node_name=node, **fields)
    parsed: pods.Pod = conversion.parse_as(pods.Pod, raw)
    return parsed


def host(port: int, *, protocol: str | None = None, ip: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"containerPort": port, "hostPort": port}
    if protocol:
        out["protocol"] = protocol
    if ip:
        out["hostIP"] = ip
    return out


PORT_CASES: dict[str, tuple[Sequence[dict[str, Any]], Sequence[dict[str, Any]], str | None]] = {
    # name: (the pod's ports, the ports of a pod on the node, the reason)
    "same-port-any-ip-conflicts": ([host(8080)], [host(8080)], REASON),
    "other-port-fits": ([host(8080)], [host(8081)], None),
    "other-protocol-fits": ([host(53, protocol="UDP")], [host(53)], None),
    "same-protocol-explicit-tcp-conflicts-with-default": ([host(53, protocol="TCP")], [host(53)], REASON),
    "two-specific-ips-fit": ([host(80, ip="10.0.0.1")], [host(80, ip="10.0.0.2")], None),
    "same-specific-ip-conflicts": ([host(80, ip="10.0.0.1")], [host(80, ip="10.0.0.1")], REASON),
    "wildcard-on-node-conflicts-with-specific": ([host(80, ip="10.0.0.1")], [host(80)], REASON),
    "specific-on-node-conflicts-with-wildcard": ([host(80)], [host(80, ip="10.0.0.1")], REASON),
    "container-port-without-host-port-takes-nothing": ([host(80)], [{"containerPort": 80}], None),
}


@pytest.mark.parametrize("name", sorted(PORT_CASES))
def test_host_port_rule(name: str) -> None:
    wanted, used, expect = PORT_CASES[name]
    node = node_("n1")
    placed = placedpods.PlacedPods([node], [port_pod("existing", *used, node="n1")])
    check = nodeports.prepare(port_pod("incoming", *wanted), placed)
    assert check is not None
    assert check.reject(node) == expect


def test_a_pod_without_host_ports_has_nothing_to_check() -> None:
    placed = placedpods.PlacedPods([node_("n1")], [port_pod("existing", host(80), node="n1")])
    assert nodeports.prepare(pod_("incoming"), placed) is None


def test_init_container_ports_take_no_host_port() -> None:
    """kube-scheduler counts the regular containers' and the sidecars' ports, not other init containers'."""
    placed = placedpods.PlacedPods([node_("n1")], [conversion.parse_as(pods.Pod, pod_raw(
        "existing", node_name="n1", init_containers=[{"name": "init", "ports": [host(80)]}]))])
    check = nodeports.prepare(port_pod("incoming", host(80)), placed)
    assert check is not None and check.reject(node_("n1")) is None


def _sidecar_pod(name: str, *ports: Mapping[str, Any], node: str | None = None) -> pods.Pod:
    raw = pod_raw(name, node_name=node, init_containers=[
        {"name": "proxy", "restartPolicy": "Always", "ports": [dict(p) for p in ports]}])
    parsed: pods.Pod = conversion.parse_as(pods.Pod, raw)
    return parsed


SIDECAR_CASES: dict[str, tuple[pods.Pod, pods.Pod, str | None]] = {
    # name: (the incoming pod, the pod on the node, the reason); upstream's GetHostPorts reads the
    # init containers with restartPolicy Always (they run as long as the pod) and the containers
    "port-of-a-sidecar-on-the-node-conflicts": (
        port_pod("incoming", host(80)), _sidecar_pod("existing", host(80), node="n1"), REASON),
    "port-of-the-incoming-pods-sidecar-conflicts": (
        _sidecar_pod("incoming", host(80)), port_pod("existing", host(80), node="n1"), REASON),
    "sidecars-on-both-sides-conflict": (
        _sidecar_pod("incoming", host(80)), _sidecar_pod("existing", host(80), node="n1"), REASON),
    "sidecar-port-of-other-protocol-fits": (
        _sidecar_pod("incoming", host(80, protocol="UDP")), _sidecar_pod("existing", host(80), node="n1"), None),
}


@pytest.mark.parametrize("name", sorted(SIDECAR_CASES))
def test_sidecar_host_port_rule(name: str) -> None:
    incoming, existing, expect = SIDECAR_CASES[name]
    check = nodeports.prepare(incoming, placedpods.PlacedPods([node_("n1")], [existing]))
    assert check is not None
    assert check.reject(node_("n1")) == expect


def _placer(*node_names: str, bound: Sequence[pods.Pod] = ()) -> placement.Placer:
    snapshot = Snapshot.build(device_classes=[], resource_slices=[], features=FEATURES)
    return placement.Placer(node_list=[node_(n) for n in node_names], snapshot=snapshot, features=FEATURES,
                            bound_pods=bound)


def _item(pod: pods.Pod) -> placement.Item:
    return placement.Item(name=pod.metadata.name, pod=pod)


def _placed_on(placer: placement.Placer, pod: pods.Pod) -> str | None:
    decision = placer.place(_item(pod))
    if not isinstance(decision, placement.Placement):
        return None
    placer.commit(_item(pod), decision)
    return decision.node


def test_replicas_asking_one_host_port_spread_over_nodes_within_one_placer() -> None:
    placer = _placer("n1", "n2")
    where = [_placed_on(placer, port_pod(f"web-{i}", host(8080))) for i in range(3)]
    assert where == ["n1", "n2", None]


def test_a_replica_that_fits_nowhere_is_told_about_the_ports_on_each_node() -> None:
    placer = _placer("n1", "n2", bound=[port_pod("a", host(8080), node="n1"), port_pod("b", host(8080), node="n2")])
    decision = placer.place(_item(port_pod("web", host(8080))))
    assert isinstance(decision, placement.NoPlacement)
    assert decision.reasons == ((REASON, ("n1", "n2")),)


def test_a_node_short_of_both_a_port_and_cpu_says_ports_as_kube_scheduler_does() -> None:
    """kube-scheduler runs NodePorts before NodeResourcesFit: the first filter a node fails is its reason."""
    snapshot = Snapshot.build(device_classes=[], resource_slices=[], features=FEATURES)
    holder = pods_with_cpu(port_pod("holder", host(8080), node="n1"), "1")
    placer = placement.Placer(node_list=[node_("n1", cpu="1")], snapshot=snapshot, features=FEATURES,
                              bound_pods=[holder])
    web = _item(pods_with_cpu(port_pod("web", host(8080)), "1"))
    assert placer.misfit(web, 0) == REASON
    alone = _item(pods_with_cpu(port_pod("web"), "1"))
    assert placer.misfit(alone, 0) == "Insufficient cpu"


def pods_with_cpu(pod: pods.Pod, cpu: str) -> pods.Pod:
    raw = pod.model_dump(mode="json", by_alias=True, exclude_none=True)
    raw["spec"]["containers"][0].setdefault("resources", {})["requests"] = {"cpu": cpu}
    parsed: pods.Pod = conversion.parse_as(pods.Pod, raw)
    return parsed


def test_a_pod_the_watch_has_not_shown_bound_yet_counts_where_it_was_assumed() -> None:
    placer = _placer("n1", "n2")
    placer.assume(port_pod("web-0", host(8080)), "n1")
    assert _placed_on(placer, port_pod("web-1", host(8080))) == "n2"


def test_a_node_refused_for_its_neighbours_is_asked_again_when_they_leave() -> None:
    """A refusal because of other pods is not remembered per shape: releasing the pod frees the port."""
    holder = port_pod("holder", host(8080), node="n1")
    placer = _placer("n1", bound=[holder])
    assert _placed_on(placer, port_pod("web-0", host(8080))) is None
    placer.release("n1", (), holder)
    assert _placed_on(placer, port_pod("web-1", host(8080))) == "n1"


def test_the_placers_own_placements_do_not_leak_into_the_view_it_was_forked_from() -> None:
    view = placedpods.PlacedPods([node_("n1"), node_("n2")])
    snapshot = Snapshot.build(device_classes=[], resource_slices=[], features=FEATURES)
    first = placement.Placer(node_list=[node_("n1"), node_("n2")], snapshot=snapshot, features=FEATURES,
                             usage={}, placed=view)
    assert _placed_on(first, port_pod("web-0", host(8080))) == "n1"
    second = placement.Placer(node_list=[node_("n1"), node_("n2")], snapshot=snapshot, features=FEATURES,
                              usage={}, placed=view)
    assert view.count == 0
    assert _placed_on(second, port_pod("web-1", host(8080))) == "n1"
