"""Provider error payloads (``{"error": {...}}``, a bare string) → typed error events."""

from __future__ import annotations

from typing import Any

from streamcite.core.bounds import clip_message
from streamcite.core.events import ErrorEvent
from streamcite.core.quote import quote

__all__ = ["error_from_payload", "http_status"]

_RETRYABLE_CODES = frozenset(
    {
        "rate_limit_exceeded",
        "rate_limit_error",
        "overloaded",
        "overloaded_error",
        "server_error",
        "api_error",
        "timeout",
        "service_unavailable",
        "upstream_overloaded",
        "internal_error",
    }
)


def http_status(code: Any) -> int | None:
    """An ``error.code`` that is an HTTP status (``502`` or ``"502"``), else ``None``."""
    if type(code) is int:
        n = code
    elif type(code) is str and code.isascii() and code.isdigit() and len(code) == 3:
        n = int(code)
    else:
        return None
    return n if 100 <= n <= 599 else None


def error_from_payload(err: Any, stage: str) -> ErrorEvent:
    """An OpenAI/Anthropic-style ``{"error": ...}`` object (or a bare string) → ErrorEvent.

    The message and code come from upstream: each is cut to ``MAX_ERROR_MESSAGE``
    characters (:func:`~streamcite.core.bounds.clip_message`)."""
    if isinstance(err, dict):
        code = err.get("code") or err.get("type") or "upstream_error"
        message = err.get("message") or ""
        status = err.get("status") if isinstance(err.get("status"), int) else None
        if status is None:
            status = http_status(err.get("code"))
    else:
        code, message, status = "upstream_error", err if type(err) is str else quote(err, 300), None
    code = clip_message(code if type(code) is str else quote(code, 100), 100)
    retryable = code in _RETRYABLE_CODES or (
        status is not None and (status == 429 or status >= 500)
    )
    return ErrorEvent(
        code=code,
        message=clip_message(message if type(message) is str else quote(message, 300)),
        retryable=retryable,
        stage=stage,
        status=status,
    )
