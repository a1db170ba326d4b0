"""DRA-backed extended resources (KEP-5004): the special claim for a pod's extended-resource requests.

(Work in progress: only the status lookup exists so far.)
"""

from __future__ import annotations

from collections.abc import Mapping

from dralloc.model.pods import Pod


def recorded_claim_name(pod: Pod) -> str | None:
    """`pod.status.extendedResourceClaimStatus.resourceClaimName`, or None when not recorded."""
    extra = pod.status.model_extra or {}
    status = extra.get("extendedResourceClaimStatus")
    if isinstance(status, Mapping):
        name = status.get("resourceClaimName")
        return name if isinstance(name, str) and name else None
    return None
