"""The Google API of the embedded backend: the grounding ``:check``, JSON errors.

Google's client libraries call ``groundingConfigs.check`` on ``v1``, ``v1alpha`` and
``v1beta`` (langchain-google-community's grounding parser uses ``v1alpha``); all three
are served by one handler. Under any ``/v1…/projects/`` path, every error — an unknown
path, a wrong method, a body too large, an unexpected fault — is Google's JSON error
``{"error": {"code", "message", "status"}}``, never aiohttp's plain-text page.
The check itself is the offline checker's (:mod:`streamcite.grounding.checker`).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable

import orjson
from aiohttp import web

from streamcite.local.faults import FaultSpecError
from streamcite.local.replies import json_response, retry_headers
from streamcite.local.request_guards import fault_status, faults_of, read_body
from streamcite.local.state import STATE
from streamcite.logs import get_logger

__all__ = [
    "GOOGLE_PATH_RE",
    "GOOGLE_STATUS",
    "GOOGLE_VERSIONS",
    "add_google_routes",
    "google_error",
    "google_error_middleware",
    "grounding_check",
]

GOOGLE_VERSIONS = ("v1", "v1alpha", "v1beta")
"""API versions whose ``:check`` path is served."""

GOOGLE_STATUS: dict[int, str] = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    405: "UNIMPLEMENTED",
    408: "DEADLINE_EXCEEDED",
    409: "ABORTED",
    413: "INVALID_ARGUMENT",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    501: "UNIMPLEMENTED",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
"""HTTP status -> ``google.rpc.Code`` name, as Google's REST front end maps them."""

GOOGLE_PATH_RE = re.compile(r"^/v1(?:alpha|beta)?/projects/")
"""Paths whose errors are Google's JSON errors."""
_CHECK_PATH = "/{version}/projects/{project}/locations/{location}/groundingConfigs/{config}:check"

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

_log = get_logger("streamcite.local.apis.google")


def google_error(status: int, message: str, headers: dict[str, str] | None = None) -> web.Response:
    """Google's JSON error body with ``status`` (``code``, ``message``, ``status``)."""
    body = {
        "error": {
            "code": status,
            "message": message,
            "status": GOOGLE_STATUS.get(status, "INTERNAL" if status >= 500 else "UNKNOWN"),
        }
    }
    return web.Response(
        body=orjson.dumps(body), status=status, content_type="application/json", headers=headers
    )


def add_google_routes(app: web.Application, check: Handler) -> None:
    """Serve ``check`` on ``POST /{v1,v1alpha,v1beta}/projects/…/groundingConfigs/{g}:check``."""
    for version in GOOGLE_VERSIONS:
        app.router.add_post(_CHECK_PATH.replace("{version}", version), check)


def _message(exc: web.HTTPException, request: web.Request) -> str:
    if exc.status == 404:
        return f"The requested URL {request.path} was not found on this server."
    if exc.status == 405:
        return f"Method {request.method} is not allowed on {request.path}."
    if exc.status == 413:
        return "Request payload size exceeds the limit."
    return exc.reason or "error"


@web.middleware
async def google_error_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Turn every error under a Google path into Google's JSON error."""
    if not GOOGLE_PATH_RE.match(request.path):
        return await handler(request)
    try:
        return await handler(request)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        headers = {"Allow": exc.headers["Allow"]} if "Allow" in exc.headers else None
        return google_error(exc.status, _message(exc, request), headers)
    except Exception as exc:  # an unexpected fault: still Google's shape, logged
        _log.warning("google_check_failed", error=type(exc).__name__)
        return google_error(500, "Internal error encountered.")


async def grounding_check(request: web.Request) -> web.Response:
    """``POST …/groundingConfigs/{g}:check``: the offline checker's answer."""
    try:
        spec = faults_of(request)
    except FaultSpecError as exc:
        return google_error(fault_status(exc), f"fault spec: {exc}")
    if spec.status is not None:
        return google_error(spec.status, f"injected fault: HTTP {spec.status}", retry_headers(spec))
    raw = await read_body(request, request.app[STATE].config.max_check_body_bytes)
    if raw is None:
        return google_error(413, "Request payload size exceeds the limit.")
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return google_error(400, "Invalid JSON payload received.")
    if not isinstance(body, dict):
        return google_error(400, "Invalid JSON payload received: expected an object.")
    try:
        # Imported here: the checker is a separate module the server must not need to start.
        from streamcite.grounding import google_check
    except ImportError:
        return google_error(501, "the offline grounding checker is not installed")
    try:
        # The async variant moves large checks off the event loop, where streams are served.
        result = await google_check.acheck_google_request(body)
    except google_check.InvalidGroundingRequest as exc:
        return google_error(400, str(exc))
    return json_response(result)
