"""API errors as the Kubernetes API server reports them: an HTTP code plus a `Status` body.

Clients do not look at the message text, but at `code`, `reason` and, for 422, at
`details.causes[].field`. kopf and the generated clients turn these into typed
exceptions, so every refusal of the sandbox must be an `ApiError` with the reason the
real server would give. Handlers raise; the HTTP layer renders `status_body()`.
"""

from __future__ import annotations

import json
from typing import Any

REASONS: dict[int, str] = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    406: "NotAcceptable",
    409: "Conflict",
    410: "Expired",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


class ApiError(Exception):
    """A refusal with the HTTP code, the Status reason, and optional details."""

    def __init__(
        self,
        code: int,
        message: str,
        *,
        reason: str | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.reason = reason or REASONS.get(code, "Unknown")
        self.details = details

    def status_body(self) -> dict[str, Any]:
        return status_body(self.code, self.message, reason=self.reason, details=self.details)


def status_body(
    code: int,
    message: str = "",
    *,
    reason: str | None = None,
    details: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A `meta.k8s.io/v1 Status`; `Success` for 2xx codes."""
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success" if code < 300 else "Failure",
        "code": code,
    }
    if message:
        body["message"] = message
    if code >= 300:
        body["reason"] = reason or REASONS.get(code, "Unknown")
    if details is not None:
        body["details"] = details
    return body


def not_found(resource: str, name: str, group: str = "") -> ApiError:
    qualified = f"{resource}.{group}" if group else resource
    return ApiError(404, f'{qualified} "{name}" not found',
                    details={"name": name, "group": group, "kind": resource})


def already_exists(resource: str, name: str, group: str = "") -> ApiError:
    qualified = f"{resource}.{group}" if group else resource
    return ApiError(409, f'{qualified} "{name}" already exists', reason="AlreadyExists",
                    details={"name": name, "group": group, "kind": resource})


def conflict(resource: str, name: str, group: str = "", why: str = "") -> ApiError:
    qualified = f"{resource}.{group}" if group else resource
    why = why or "the object has been modified; please apply your changes to the latest version and try again"
    return ApiError(409, f'Operation cannot be fulfilled on {qualified} "{name}": {why}',
                    details={"name": name, "group": group, "kind": resource})


def go_value(value: Any) -> str:
    """A bad value as apimachinery's field errors print it: strings %q-quoted, others %v."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        return go_quote(value)
    return str(value)


def go_quote(text: str) -> str:
    """Go's %q of a string: double quotes, backslash escapes, non-printable characters as \\x/\\u."""
    out = ['"']
    for ch in text:
        code = ord(ch)
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif ch in _GO_ESCAPES:
            out.append(_GO_ESCAPES[ch])
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\x{code:02x}")
        elif not ch.isprintable() and code > 0x7F:
            out.append(f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


_GO_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t",
               "\v": "\\v"}


# apimachinery's field.ErrorType: the cause reason each message's prefix stands for.
_CAUSE_REASONS = (
    ("Required value", "FieldValueRequired"),
    ("Duplicate value", "FieldValueDuplicate"),
    ("Unsupported value", "FieldValueNotSupported"),
    ("Not found", "FieldValueNotFound"),
    ("Forbidden", "FieldValueForbidden"),
    ("Too long", "FieldValueTooLong"),
    ("Too many", "FieldValueTooMany"),
    ("Internal error", "InternalError"),
)


def cause_reason(message: str) -> str:
    """The `details.causes[].reason` of a field error, read off its message as upstream builds both."""
    for prefix, reason in _CAUSE_REASONS:
        if message.startswith(prefix):
            return reason
    return "FieldValueInvalid"


def go_json(value: Any) -> str:
    """A struct as a bad value in a field error: Go's compact JSON (HTML characters escaped)."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def invalid(kind: str, group: str, name: str, causes: list[tuple[str, str]]) -> ApiError:
    """422 Invalid; `causes` are (field path, message) pairs, as `kubectl` prints them.

    The message is upstream's: `Kind.group "name" is invalid: ` + the field errors as an
    aggregate (one error as is, several as `[a, b]`, repeats dropped). Each cause's
    reason follows from its message (`Required value` is FieldValueRequired, ...).
    """
    qualified = f"{kind}.{group}" if group else kind
    texts = list(dict.fromkeys(f"{field}: {msg}" if field else msg for field, msg in causes))
    summary = texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"
    details: dict[str, Any] = {"name": name, "group": group, "kind": kind} if group else {"name": name, "kind": kind}
    details["causes"] = [{"reason": cause_reason(msg), "message": msg, "field": field}
                         for field, msg in dict.fromkeys(causes)]
    return ApiError(422, f'{qualified} "{name}" is invalid: {summary}', details=details)


def gone(message: str) -> ApiError:
    return ApiError(410, message, reason="Expired")
