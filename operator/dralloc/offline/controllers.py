"""The Pods that workload controllers in a `dralloc simulate --workload` file would create.

A Deployment, ReplicaSet, ReplicationController or StatefulSet stands for
`spec.replicas` Pods (default 1); a Job for the Pods it runs at once,
`min(spec.parallelism, spec.completions)` (parallelism defaults to 1; without
completions, parallelism Pods; `spec.suspend` is ignored: a suspended Job, as
Kueue creates them, is placed as if admitted); a JobSet (jobset.x-k8s.io) for
`replicas` Jobs (default 1) of each of its `spec.replicatedJobs`, each as a Job.
Each Pod is the controller's pod template in its namespace, named
`<name>-<i>` (i from 0; StatefulSets name theirs this way, the other
controllers add a random suffix instead), for a JobSet `<jobset>-<job>-<j>-<i>`.
Its `resourceClaimTemplateName` entries are then resolved like a bare Pod's.

A controller that another object controls (`ownerReferences[].controller`: a
ReplicaSet of a Deployment, a Job of a JobSet or CronJob, as `kubectl get -o
yaml` lists them) is left to its owner and mentioned on stderr, not expanded
twice. Kinds that make Pods in ways a file cannot show (a DaemonSet: one per eligible
node; a CronJob: on a schedule) are refused by name, never skipped.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dralloc.model import conversion

Raw = Mapping[str, Any]

# kind -> the path of its pod template, for messages
TEMPLATE_FIELD = {
    "Deployment": "spec.template",
    "ReplicaSet": "spec.template",
    "ReplicationController": "spec.template",
    "StatefulSet": "spec.template",
    "Job": "spec.template",
}
JOBSET_KIND = "JobSet"
REFUSED = {
    "DaemonSet": "a DaemonSet runs one Pod per eligible node, which simulate does not derive; "
                 "list the Pods it would run (with spec.nodeName) instead",
    "CronJob": "a CronJob makes Jobs on a schedule; put its spec.jobTemplate in the file as a Job",
}


def is_controller(raw: Raw) -> bool:
    kind = raw.get("kind")
    return kind in TEMPLATE_FIELD or kind == JOBSET_KIND or kind in REFUSED


def has_controller(raw: Raw) -> bool:
    """Whether another object controls this one (`metadata.ownerReferences[].controller`)."""
    meta = raw.get("metadata")
    owners = meta.get("ownerReferences") if isinstance(meta, Mapping) else None
    return isinstance(owners, list) and any(isinstance(o, Mapping) and o.get("controller") is True for o in owners)


def _ref(raw: Raw) -> str:
    meta = raw.get("metadata") if isinstance(raw.get("metadata"), Mapping) else {}
    assert isinstance(meta, Mapping)
    return f"{raw.get('kind')} {meta.get('namespace') or 'default'}/{meta.get('name') or '<unnamed>'}"


def _mapping(value: Any, ref: str, field: str) -> Raw:
    if not isinstance(value, Mapping):
        raise conversion.ObjectError(ref, field, f"expected a mapping, got {type(value).__name__}"
                                     if value is not None else "required for simulate to make its Pods")
    return value


def _count(spec: Raw, key: str, default: int | None, ref: str, field: str) -> int | None:
    value = spec.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise conversion.ObjectError(ref, f"{field}.{key}", f"expected a non-negative integer, got {value!r}")
    return value


def _job_pods(spec: Raw, ref: str, field: str) -> int:
    parallelism = _count(spec, "parallelism", 1, ref, field)
    completions = _count(spec, "completions", None, ref, field)
    assert parallelism is not None
    return parallelism if completions is None else min(parallelism, completions)


def _pods(template: Raw, names: list[str], namespace: str, ref: str, field: str) -> list[Raw]:
    meta = _mapping(template.get("metadata") or {}, ref, f"{field}.metadata")
    _mapping(template.get("spec"), ref, f"{field}.spec")
    out: list[Raw] = []
    for name in names:
        metadata = {k: v for k, v in meta.items() if k in ("labels", "annotations")}
        out.append({"apiVersion": "v1", "kind": "Pod",
                    "metadata": {**metadata, "name": name, "namespace": namespace},
                    "spec": template["spec"]})
    return out


def expand(raw: Raw) -> list[tuple[Raw, str]]:
    """The Pods (raw) a controller object stands for, each with the field path of its template.

    Raises ObjectError naming the object and field for a refused kind or a malformed object.
    """
    kind = str(raw.get("kind"))
    ref = _ref(raw)
    if kind in REFUSED:
        raise conversion.ObjectError(ref, "kind", f"not supported by simulate --workload: {REFUSED[kind]}")
    meta = _mapping(raw.get("metadata"), ref, "metadata")
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise conversion.ObjectError(ref, "metadata.name", "required")
    namespace = str(meta.get("namespace") or "default")
    spec = _mapping(raw.get("spec"), ref, "spec")
    if kind == JOBSET_KIND:
        out: list[tuple[Raw, str]] = []
        jobs = spec.get("replicatedJobs")
        if not isinstance(jobs, list):
            raise conversion.ObjectError(ref, "spec.replicatedJobs", "expected a list")
        for i, job in enumerate(jobs):
            field = f"spec.replicatedJobs[{i}]"
            job = _mapping(job, ref, field)
            job_name = job.get("name")
            if not isinstance(job_name, str) or not job_name:
                raise conversion.ObjectError(ref, f"{field}.name", "required")
            replicas = _count(job, "replicas", 1, ref, field)
            job_spec = _mapping(_mapping(job.get("template"), ref, f"{field}.template").get("spec"), ref,
                                f"{field}.template.spec")
            per_job = _job_pods(job_spec, ref, f"{field}.template.spec")
            template = _mapping(job_spec.get("template"), ref, f"{field}.template.spec.template")
            assert replicas is not None
            names = [f"{name}-{job_name}-{j}-{p}" for j in range(replicas) for p in range(per_job)]
            out.extend((pod, f"{field}.template.spec.template")
                       for pod in _pods(template, names, namespace, ref, f"{field}.template.spec.template"))
        return out
    field = TEMPLATE_FIELD[kind]
    count = _job_pods(spec, ref, "spec") if kind == "Job" else _count(spec, "replicas", 1, ref, "spec")
    assert count is not None
    template = _mapping(spec.get("template"), ref, field)
    return [(pod, field) for pod in _pods(template, [f"{name}-{i}" for i in range(count)], namespace, ref, field)]


def parse_pods(raw: Raw) -> list[Any]:
    """The controller's Pods as models; a malformed template is reported at the controller's field."""
    pods = []
    for pod_raw, field in expand(raw):
        try:
            parsed = conversion.parse(pod_raw)
        except conversion.ObjectError as exc:
            raise conversion.ObjectError(_ref(raw), f"{field}.{exc.field}" if exc.field else field,
                                         exc.detail) from exc
        pods.append(parsed)
    return pods
