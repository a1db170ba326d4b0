"""Typed API errors: nothing above `dralloc.kube` ever sees a kubernetes_asyncio or aiohttp type.

The HTTP library is an implementation detail of this package; if its exceptions leaked,
every handler would depend on it. So each failure is mapped once, here, to a class
chosen by HTTP status, carrying what the API server said (its `Status` body: reason,
message, field causes, retry hint), with the original exception chained as `__cause__`
for debugging.

    KubeError                  any failure talking to the API
      NotFoundError            404
      ConflictError            409 (stale resourceVersion, already bound, ...)
        AlreadyExistsError     409 with reason AlreadyExists (create of an existing name)
      GoneError                410 (watch or continue token too old: relist)
      ForbiddenError           403
      UnauthorizedError        401
      InvalidError             422 (.causes: the field paths the server rejected)
      TooManyRequestsError     429 (.retry_after seconds, if the server said)
      ServerError              5xx
      TransportError           no HTTP answer at all: connection refused/reset, timeout
      NotLeaderError           a write not sent: this replica does not hold the leader Lease
      ConfigError              the login configuration could not be loaded

`outcome_unknown(exc)` tells the writes that may have happened anyway (5xx, timeouts)
from those that certainly did not (4xx, not sent).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

# A body that is not a JSON Status (a proxy's HTML page, a stack trace) is cut to this
# many characters: enough to recognise it, not enough to flood a log line or an Event.
MAX_RAW_BODY = 256


class KubeError(Exception):
    """The API server (or the way to it) refused or failed a request."""

    def __init__(self, status: int, reason: str, message: str, *, details: Mapping[str, Any] | None = None) -> None:
        super().__init__(f"({status} {reason}) {message}" if message else f"({status} {reason})")
        self.status = status
        self.reason = reason
        self.message = message
        self.details: dict[str, Any] = dict(details or {})


class NotFoundError(KubeError):
    """404: the object (or the resource type) does not exist."""


class ConflictError(KubeError):
    """409: a precondition failed (stale resourceVersion, pod already bound, ...)."""


class AlreadyExistsError(ConflictError):
    """409 AlreadyExists: a create named an object that already exists."""


class GoneError(KubeError):
    """410: the resourceVersion or continue token is too old; list again."""


class ForbiddenError(KubeError):
    """403: RBAC does not allow this call."""


class UnauthorizedError(KubeError):
    """401: the credentials were not accepted."""


class InvalidError(KubeError):
    """422: the object or patch was rejected; `causes` name the fields.

    A JSON patch whose `test` operation fails is also a 422.
    """

    def __init__(self, status: int, reason: str, message: str, *, details: Mapping[str, Any] | None = None) -> None:
        super().__init__(status, reason, message, details=details)
        causes = self.details.get("causes")
        self.causes: list[dict[str, Any]] = [c for c in causes if isinstance(c, dict)] if isinstance(causes, list) else []


class TooManyRequestsError(KubeError):
    """429: throttled, or an eviction blocked by a disruption budget; `retry_after` in seconds."""

    def __init__(self, status: int, reason: str, message: str, *, details: Mapping[str, Any] | None = None,
                 retry_after: float | None = None) -> None:
        super().__init__(status, reason, message, details=details)
        self.retry_after = retry_after


class ServerError(KubeError):
    """5xx: the server failed; the request may or may not have taken effect."""


class TransportError(KubeError):
    """No HTTP answer: connection refused or reset, TLS failure, timeout (status 0)."""

    def __init__(self, message: str) -> None:
        super().__init__(0, "Transport", message)


class NotLeaderError(KubeError):
    """The write was not sent: this replica does not hold the leader Lease (or may no longer
    trust that it does). Definite: nothing happened on the server."""

    def __init__(self, message: str) -> None:
        super().__init__(0, "NotLeader", message)


def outcome_unknown(exc: KubeError) -> bool:
    """Whether a failed write may nevertheless have been applied.

    A 5xx (kube-apiserver answers 504 when etcd times out, possibly after committing), a
    408, or no answer at all (timeout, reset) leaves it open; a 4xx answer means the server
    refused the request and wrote nothing, and a write we never sent wrote nothing either.
    """
    if isinstance(exc, (NotLeaderError, ConfigError)):
        return False
    return isinstance(exc, (ServerError, TransportError)) or exc.status in (0, 408)


class ConfigError(KubeError):
    """The kubeconfig or in-cluster credentials could not be loaded (status 0)."""

    def __init__(self, message: str) -> None:
        super().__init__(0, "Config", message)


_BY_STATUS: dict[int, type[KubeError]] = {
    401: UnauthorizedError,
    403: ForbiddenError,
    404: NotFoundError,
    409: ConflictError,
    410: GoneError,
    422: InvalidError,
    429: TooManyRequestsError,
}


def from_status(status: int, body: str | bytes | None, *, http_reason: str = "",
                headers: Mapping[str, str] | None = None) -> KubeError:
    """The error for an HTTP answer `status` with `body` (ideally a Status object).

    Used for failed requests and for watch ERROR events (whose object is a Status);
    the caller raises it `from` the original exception when there is one.
    """
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else (body or "")
    parsed: Any = None
    try:
        parsed = json.loads(text) if text else None
    except ValueError:
        parsed = None
    if isinstance(parsed, dict) and parsed.get("kind") == "Status":
        return from_status_object(parsed, status=status, http_reason=http_reason, headers=headers)
    message = text if len(text) <= MAX_RAW_BODY else text[:MAX_RAW_BODY] + f"... ({len(text)} characters)"
    return _build(status, http_reason or _DEFAULT_REASONS.get(status, "Unknown"), message, {}, headers)


def from_status_object(status_obj: Mapping[str, Any], *, status: int | None = None, http_reason: str = "",
                       headers: Mapping[str, str] | None = None) -> KubeError:
    """The error a `Status` object describes (code from the object unless `status` is given)."""
    code = status if status is not None else _int(status_obj.get("code"))
    reason = status_obj.get("reason") or http_reason or _DEFAULT_REASONS.get(code, "Unknown")
    details = status_obj.get("details")
    return _build(code, str(reason), str(status_obj.get("message") or ""),
                  details if isinstance(details, dict) else {}, headers)


def from_api_exception(exc: Exception) -> KubeError:
    """Map a kubernetes_asyncio `ApiException` (status, reason, body, headers); raise the result `from exc`."""
    status = _int(getattr(exc, "status", 0))
    headers = getattr(exc, "headers", None)
    return from_status(status, getattr(exc, "body", None), http_reason=str(getattr(exc, "reason", "") or ""),
                       headers=dict(headers) if headers else None)


def _build(status: int, reason: str, message: str, details: dict[str, Any],
           headers: Mapping[str, str] | None) -> KubeError:
    if status == 409 and reason == "AlreadyExists":
        return AlreadyExistsError(status, reason, message, details=details)
    if status == 429:
        return TooManyRequestsError(status, reason, message, details=details,
                                    retry_after=_retry_after(details, headers))
    cls = _BY_STATUS.get(status) or (ServerError if 500 <= status <= 599 else KubeError)
    return cls(status, reason, message, details=details)


def _retry_after(details: Mapping[str, Any], headers: Mapping[str, str] | None) -> float | None:
    # The header is what clients are told to honour; the Status detail is the same hint.
    for raw in ((headers or {}).get("Retry-After"), (headers or {}).get("retry-after"),
                details.get("retryAfterSeconds")):
        if raw is None:
            continue
        try:
            return float(raw)
        except (TypeError, ValueError):
            continue
    return None


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


_DEFAULT_REASONS = {
    400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 405: "MethodNotAllowed",
    409: "Conflict", 410: "Expired", 415: "UnsupportedMediaType", 422: "Invalid", 429: "TooManyRequests",
    500: "InternalError", 503: "ServiceUnavailable", 504: "Timeout",
}
