"""manifests/ renders with kustomize into the objects DESIGN.md §1 promises, consistently wired.

`kubectl kustomize manifests/` must succeed with kustomize's default load restrictor, so
the CRDs live in manifests/crds/ as byte-for-byte copies of crds/ (checked here).
Built-in kinds are validated offline against the Kubernetes 1.32 OpenAPI schemas
(kubernetes-validate, strict: unknown fields are errors).
"""

from __future__ import annotations

import collections
import json
import tomllib

import kubernetes_validate
import pytest
import yaml
from tests.manifests.rendered import (
    MANIFESTS,
    MONITORING,
    NAMESPACE,
    REPO,
    find,
    is_crd,
    load,
    load_monitoring,
    needs_kubectl,
    render,
)

from dralloc import cli

EXPECTED_KINDS = collections.Counter({
    "Namespace": 1,
    "CustomResourceDefinition": 2,  # allocationpolicies, devicehealthpolicies
    "ServiceAccount": 1,
    "ClusterRole": 1,
    "ClusterRoleBinding": 1,
    "Deployment": 1,
    "PodDisruptionBudget": 1,
    "Service": 1,
    "ConfigMap": 1,
})
# manifests-monitoring/ adds these (CRDs of the Prometheus Operator) to everything above.
MONITORING_KINDS = collections.Counter({"ServiceMonitor": 1, "PrometheusRule": 1})
CLUSTER_SCOPED = {"Namespace", "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding"}
NO_OFFLINE_SCHEMA = {"ServiceMonitor", "PrometheusRule"}  # CRD types: no built-in schema


def yaml_files() -> list[str]:
    return sorted(str(p.relative_to(MANIFESTS)) for p in MANIFESTS.rglob("*") if p.suffix in (".yaml", ".yml"))


@pytest.mark.parametrize("name", yaml_files())
def test_every_yaml_file_parses(name: str) -> None:
    docs = load(name)
    assert docs, f"{name} is empty"
    for doc in docs:
        assert isinstance(doc, dict), f"{name}: a document is not a mapping"
        if name != "kustomization.yaml":
            assert doc.get("apiVersion") and doc.get("kind") and doc.get("metadata", {}).get("name"), name


def test_the_monitoring_overlay_lists_the_base_and_its_file() -> None:
    assert load("kustomization.yaml", MONITORING)[0]["resources"] == ["../manifests", "monitoring.yaml"]
    assert sorted(p.name for p in MONITORING.iterdir()) == ["kustomization.yaml", "monitoring.yaml"]
    assert {o["kind"] for o in load_monitoring()} == {"ServiceMonitor", "PrometheusRule"}


def test_dashboard_json_parses() -> None:
    dashboard = json.loads((MANIFESTS / "dashboard.json").read_text())
    assert dashboard["uid"] == "dralloc" and dashboard["panels"]


def test_crd_copies_are_identical_to_crds() -> None:
    sources = {p.name: p.read_bytes() for p in (REPO / "crds").glob("*.yaml")}
    copies = {p.name: p.read_bytes() for p in (MANIFESTS / "crds").glob("*.yaml")}
    assert sources, "crds/ is empty"
    assert sorted(copies) == sorted(sources), "manifests/crds/ must hold exactly the files of crds/"
    stale = [name for name in sources if copies[name] != sources[name]]
    assert not stale, f"manifests/crds/ is stale, run: cp crds/*.yaml manifests/crds/  ({stale})"


def test_kustomization_lists_every_file() -> None:
    kustomization = load("kustomization.yaml")[0]
    listed = set(kustomization["resources"])
    files = set(yaml_files()) - {"kustomization.yaml"}
    assert listed == files, f"not listed: {sorted(files - listed)}; missing: {sorted(listed - files)}"
    generated = [f for g in kustomization["configMapGenerator"] for f in g["files"]]
    assert generated == ["dralloc.json=dashboard.json"]


@needs_kubectl
def test_renders_the_promised_kinds() -> None:
    """manifests/ holds only built-in kinds and dralloc's CRDs, so `kubectl apply -k manifests/` succeeds on
    any cluster (issue 32: with the ServiceMonitor and PrometheusRule in it, it exited 1 on a cluster
    without the Prometheus Operator); manifests-monitoring/ is the same plus those two."""
    assert collections.Counter(o["kind"] for o in render()) == EXPECTED_KINDS
    objs = render(MONITORING)
    assert collections.Counter(o["kind"] for o in objs) == EXPECTED_KINDS + MONITORING_KINDS
    for obj in objs:
        meta = obj["metadata"]
        if obj["kind"] in CLUSTER_SCOPED:
            assert "namespace" not in meta, f"{obj['kind']} {meta['name']} is cluster-scoped"
        else:
            assert meta.get("namespace") == NAMESPACE, f"{obj['kind']} {meta['name']} is not in {NAMESPACE}"


@needs_kubectl
def test_built_in_kinds_are_valid_for_kubernetes_1_32() -> None:
    for obj in render():
        if obj["kind"] not in NO_OFFLINE_SCHEMA:
            kubernetes_validate.validate(obj, "1.32.0", strict=True)


@needs_kubectl
def test_crds_render_unchanged() -> None:
    rendered = {o["metadata"]["name"]: o for o in render() if is_crd(o)}
    for path in sorted((REPO / "crds").glob("*.yaml")):
        for crd in yaml.safe_load_all(path.read_text()):
            assert rendered[crd["metadata"]["name"]] == crd


@needs_kubectl
def test_dashboard_config_map_is_generated_from_dashboard_json() -> None:
    cm = find(render(), "ConfigMap")
    assert cm["metadata"]["name"] == "dralloc-grafana-dashboard"  # no hash suffix: a stable name
    assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert cm["data"] == {"dralloc.json": (MANIFESTS / "dashboard.json").read_text()}


@needs_kubectl
def test_image_is_tagged_with_the_project_version() -> None:
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    container = find(render(), "Deployment")["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == f"dralloc:{version}"


def _container() -> dict:
    return find(load("deployment.yaml"), "Deployment")["spec"]["template"]["spec"]["containers"][0]


def test_deployment_runs_dralloc_with_flags_the_cli_accepts() -> None:
    args = cli.build_parser().parse_args(_container()["args"])
    assert args.command == "run" and args.in_cluster is True and args.standalone is False
    assert args.namespaces == []  # cluster-wide: the ClusterRole assumes it
    assert args.leader_elect_resource_name == "dralloc"  # the Lease the ClusterRole names
    # The endpoints listen on the pod's IP, which the kubelet expands from the env.
    assert args.metrics_address == args.health_address == "$(POD_IP)"
    ports = {p["name"]: p["containerPort"] for p in _container()["ports"]}
    assert ports == {"metrics": args.metrics_port, "health": args.health_port} == {"metrics": 8080, "health": 8081}
    # Given explicitly: the Service and the probes rely on them, so they never move.


def test_deployment_is_two_hardened_replicas_with_probes() -> None:
    deployment = find(load("deployment.yaml"), "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    container = _container()
    assert deployment["spec"]["replicas"] == 2
    env = {e["name"]: e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") for e in container["env"]}
    assert env["POD_NAME"] == "metadata.name"  # the replica's identity and Event reportingInstance
    assert env["POD_NAMESPACE"] == "metadata.namespace"  # where the Lease lives
    assert env["POD_IP"] == "status.podIP"  # the endpoints' address
    for probe in ("livenessProbe", "readinessProbe"):
        http = container[probe]["httpGet"]
        assert http["path"] == "/healthz" and http["port"] == "health", probe
    assert set(container["resources"]["requests"]) == {"cpu", "memory"}
    assert set(container["resources"]["limits"]) == {"cpu", "memory"}
    sc = container["securityContext"]
    assert sc["readOnlyRootFilesystem"] is True and sc["allowPrivilegeEscalation"] is False
    assert sc["runAsNonRoot"] is True and sc["runAsUser"] == 65532
    assert sc["capabilities"] == {"drop": ["ALL"]}
    assert sc["seccompProfile"] == {"type": "RuntimeDefault"}
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert pod["securityContext"]["runAsNonRoot"] is True
    # A read-only root needs a writable /tmp: kopf writes the cluster CA to a temporary file.
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    assert {v["name"]: "emptyDir" in v for v in pod["volumes"]}[mounts["/tmp"]]


def test_objects_are_wired_to_each_other() -> None:
    rbac = load("rbac.yaml")
    account = find(rbac, "ServiceAccount")
    binding = find(rbac, "ClusterRoleBinding")
    deployment = find(load("deployment.yaml"), "Deployment")
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == account["metadata"]["name"]
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                  "name": find(rbac, "ClusterRole")["metadata"]["name"]}
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": account["metadata"]["name"],
                                    "namespace": NAMESPACE}]
    selector = deployment["spec"]["selector"]["matchLabels"]
    assert selector.items() <= pod_labels.items()
    service = find(load("service.yaml"), "Service")
    assert service["spec"]["selector"].items() <= pod_labels.items()
    assert service["spec"]["ports"] == [{"name": "metrics", "port": 8080, "targetPort": "metrics", "protocol": "TCP"}]
    monitor = find(load_monitoring(), "ServiceMonitor")
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert [e["port"] for e in monitor["spec"]["endpoints"]] == ["metrics"]
    assert monitor["spec"]["namespaceSelector"] == {"matchNames": [NAMESPACE]}


def test_a_drain_takes_at_most_one_replica() -> None:
    """The PodDisruptionBudget selects exactly the Deployment's pods and keeps one of its two replicas: a
    node drain or an upgrade never stops every replica at once (issue 32)."""
    deployment = find(load("deployment.yaml"), "Deployment")
    budget = find(load("pdb.yaml"), "PodDisruptionBudget")
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    selected = budget["spec"]["selector"]["matchLabels"]
    assert selected == deployment["spec"]["selector"]["matchLabels"]
    assert all(labels.get(k) == v for k, v in selected.items())
    assert budget["spec"]["minAvailable"] == deployment["spec"]["replicas"] - 1 == 1
    assert budget["metadata"]["namespace"] == NAMESPACE
