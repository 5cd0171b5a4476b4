"""JSON replies of the local backend and the error shapes of the OpenAI and Wikit APIs.

OpenAI's errors are ``{"error": {"message", "type", "param", "code"}}``; Wikit's (and
the documents pages') are FastAPI's ``{"detail": message}``. Google's error shape
lives with the Google routes (:func:`streamcite.local.apis.google.google_error`). An
injected fault with ``retry_after`` adds its ``Retry-After`` header to any of them.
"""

from __future__ import annotations

from typing import Any

import orjson
from aiohttp import web

from streamcite.local.faults import FaultSpec

__all__ = ["detail_error", "json_response", "openai_error", "retry_headers"]

_JSON = "application/json"
_OPENAI_ERRORS: dict[int, tuple[str, str]] = {
    400: ("invalid_request_error", "invalid_request"),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("invalid_request_error", "forbidden"),
    404: ("invalid_request_error", "not_found"),
    408: ("server_error", "timeout"),
    409: ("invalid_request_error", "conflict"),
    422: ("invalid_request_error", "unprocessable"),
    429: ("requests", "rate_limit_exceeded"),
    500: ("server_error", "internal_error"),
    502: ("server_error", "bad_gateway"),
    503: ("server_error", "upstream_overloaded"),
    504: ("server_error", "timeout"),
}
"""HTTP status -> OpenAI's error ``type`` and default ``code``."""


def json_response(
    data: Any, status: int = 200, headers: dict[str, str] | None = None
) -> web.Response:
    """``data`` serialised by orjson, as ``application/json``."""
    return web.Response(body=orjson.dumps(data), status=status, content_type=_JSON, headers=headers)


def retry_headers(spec: FaultSpec | None) -> dict[str, str] | None:
    """The ``Retry-After`` header an injected fault asks for, or None."""
    if spec is None or spec.retry_after is None:
        return None
    return {"Retry-After": f"{spec.retry_after:g}"}


def openai_error(
    status: int,
    message: str,
    *,
    param: str | None = None,
    spec: FaultSpec | None = None,
    code: str | None = None,
) -> web.Response:
    """OpenAI's error body with ``status``."""
    kind, default_code = _OPENAI_ERRORS.get(
        status, ("server_error" if status >= 500 else "invalid_request_error", "error")
    )
    code = code or default_code
    body = {"error": {"message": message, "type": kind, "param": param, "code": code}}
    return json_response(body, status, retry_headers(spec))


def detail_error(status: int, message: str, spec: FaultSpec | None = None) -> web.Response:
    """FastAPI's ``{"detail": message}`` error body (Wikit, documents)."""
    return json_response({"detail": message}, status, retry_headers(spec))
