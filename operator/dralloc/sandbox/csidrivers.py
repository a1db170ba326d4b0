"""CSIDrivers (storage.k8s.io/v1, cluster-scoped), admitted as kube-apiserver 1.37.2 does.

kube-scheduler's volume filters read them (a driver's `preventPodSchedulingIfMissing`, its
`storageCapacity`), so the sandbox serves them for dralloc to learn. Each rule was recorded
from the real 1.37.2 server (tests/sandbox/test_csidrivers.py) and follows upstream's v1
defaults (SetDefaults_CSIDriver) and pkg/apis/storage/validation (ValidateCSIDriver,
ValidateCSIDriverUpdate).

Defaults, on every write as Go decoding does: `attachRequired: true`, `podInfoOnMount:
false`, `volumeLifecycleModes: [Persistent]` (also for an empty list), `storageCapacity:
false`, `fsGroupPolicy: ReadWriteOnceWithFSType`, `requiresRepublish: false`, `seLinuxMount:
false` and `preventPodSchedulingIfMissing: false` (VolumeLimitScaling, beta, is on); the
spec's fields come back in the Go struct's order.

Refusals (422, upstream's paths and texts): the name is only checked as any object's (a DNS
subdomain; 1.37 no longer applies the 63-byte driver-name limit here); `fsGroupPolicy` one of
File, None, ReadWriteOnceWithFSType; each token request's audience unique and
`expirationSeconds` between 10 minutes and 2^32 seconds; each lifecycle mode Persistent or
Ephemeral (duplicates pass, although the schema calls the list a set);
`nodeAllocatableUpdatePeriodSeconds` at least 10; `serviceAccountTokenInSecrets` only with
token requests. After creation `attachRequired` (at upstream's misspelt path
`spec.attachedRequired`) and `volumeLifecycleModes` are immutable; the other fields may change.
"""

from __future__ import annotations

from typing import Any

from dralloc.sandbox import errors

Obj = dict[str, Any]
Causes = list[tuple[str, str]]

STORAGE = "storage.k8s.io/csidrivers"
FS_GROUP_POLICIES = ("File", "None", "ReadWriteOnceWithFSType")  # sorted, as upstream lists them
LIFECYCLE_MODES = ("Persistent", "Ephemeral")  # upstream's order
MIN_TOKEN_SECONDS = 10 * 60
MAX_TOKEN_SECONDS = 1 << 32
MIN_UPDATE_PERIOD = 10
IMMUTABLE = "field is immutable"

# CSIDriverSpec's fields in the Go struct's order (the order kube-apiserver writes them) and
# their v1 defaults (None: no default).
_SPEC_FIELDS: tuple[tuple[str, Any], ...] = (
    ("attachRequired", True), ("podInfoOnMount", False), ("volumeLifecycleModes", ["Persistent"]),
    ("storageCapacity", False), ("fsGroupPolicy", "ReadWriteOnceWithFSType"), ("tokenRequests", None),
    ("requiresRepublish", False), ("seLinuxMount", False), ("nodeAllocatableUpdatePeriodSeconds", None),
    ("serviceAccountTokenInSecrets", None), ("preventPodSchedulingIfMissing", False),
)


def default(driver: Obj) -> None:
    """SetDefaults_CSIDriver, the spec's fields in Go order (unknown ones, kept when not strict, last)."""
    spec = driver.get("spec")
    if not isinstance(spec, dict):
        spec = {}
    ordered: Obj = {}
    for field, fallback in _SPEC_FIELDS:
        value = spec.get(field)
        if field == "volumeLifecycleModes" and value == []:
            value = None  # len() == 0 is defaulted
        if value is None and fallback is not None:
            value = list(fallback) if isinstance(fallback, list) else fallback
        if value is not None:
            ordered[field] = value
    for request in ordered.get("tokenRequests") or []:
        if isinstance(request, dict):
            request.setdefault("audience", "")  # no omitempty on its JSON tag
    ordered.update((k, v) for k, v in spec.items() if k not in ordered and v is not None)
    driver["spec"] = ordered


def _spec_causes(spec: Obj) -> Causes:
    """validateCSIDriverSpec, in upstream's order."""
    causes: Causes = []
    policy = spec.get("fsGroupPolicy")
    if policy is not None and policy not in FS_GROUP_POLICIES:
        listed = ", ".join(errors.go_quote(p) for p in FS_GROUP_POLICIES)
        causes.append(("spec.fsGroupPolicy", f"Unsupported value: {errors.go_value(policy)}: supported values: "
                                             f"{listed}"))
    requests = spec.get("tokenRequests") or []
    audiences: set[str] = set()
    for i, request in enumerate(requests):
        path = f"spec.tokenRequests[{i}]"
        audience = request.get("audience", "")
        if audience in audiences:
            causes.append((f"{path}.audience", f"Duplicate value: {errors.go_quote(audience)}"))
            continue
        audiences.add(audience)
        seconds = request.get("expirationSeconds")
        if seconds is None:
            continue
        if seconds < MIN_TOKEN_SECONDS:
            causes.append((f"{path}.expirationSeconds", f"Invalid value: {seconds}: may not specify a duration less "
                                                        "than 10 minutes"))
        if seconds > MAX_TOKEN_SECONDS:
            causes.append((f"{path}.expirationSeconds", f"Invalid value: {seconds}: may not specify a duration "
                                                        "larger than 2^32 seconds"))
    listed = ", ".join(errors.go_quote(m) for m in LIFECYCLE_MODES)
    for mode in spec.get("volumeLifecycleModes") or []:
        if mode not in LIFECYCLE_MODES:
            causes.append(("spec.volumeLifecycleModes", f"Unsupported value: {errors.go_value(mode)}: supported "
                                                        f"values: {listed}"))
    if spec.get("seLinuxMount") is None:
        causes.append(("spec.seLinuxMount", "Required value"))
    period = spec.get("nodeAllocatableUpdatePeriodSeconds")
    if period is not None and period < MIN_UPDATE_PERIOD:
        causes.append(("spec.nodeAllocatableUpdatePeriodSeconds", f"Invalid value: {period}: must be greater than or "
                                                                  f"equal to {MIN_UPDATE_PERIOD} seconds"))
    in_secrets = spec.get("serviceAccountTokenInSecrets")
    if in_secrets is not None and not requests:
        causes.append(("spec.serviceAccountTokenInSecrets", f"Invalid value: {errors.go_value(in_secrets)}: "
                                                            "serviceAccountTokenInSecrets is set but no tokenRequests "
                                                            "are specified"))
    return causes


def validate(driver: Obj, old: Obj | None) -> Causes:
    """ValidateCSIDriver, or ValidateCSIDriverUpdate: the same checks, then the immutable fields."""
    spec = driver.get("spec") or {}
    causes = _spec_causes(spec)
    if old is None:
        return causes
    before = old.get("spec") or {}
    if spec.get("attachRequired") != before.get("attachRequired"):
        causes.append(("spec.attachedRequired", f"Invalid value: {errors.go_value(spec.get('attachRequired'))}: "
                                                f"{IMMUTABLE}"))  # sic: upstream's path
    if spec.get("volumeLifecycleModes") != before.get("volumeLifecycleModes"):
        causes.append(("spec.volumeLifecycleModes", f"Invalid value: {errors.go_json(spec.get('volumeLifecycleModes'))}"
                                                    f": {IMMUTABLE}"))
    return causes


def schema_causes(causes: Causes) -> Causes:
    """The schema walk's causes without its duplicates of a set list: upstream lets
    `volumeLifecycleModes` repeat a mode."""
    return [(path, message) for path, message in causes if not message.startswith("Duplicate value")]
