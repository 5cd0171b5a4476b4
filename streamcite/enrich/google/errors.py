"""Google grounding errors, and the mapping of an HTTP status onto them.

429/500/502/503/504 are retryable :class:`UpstreamError` (``Retry-After`` or
``google.rpc.RetryInfo`` honoured); 401/403 are :class:`GoogleAuthError` and
400/404 :class:`GoogleRequestError`, each with a message that says what to fix
(enable the API, set a quota project, grant the IAM permission, …).
"""

from __future__ import annotations

from typing import Any

import orjson

from streamcite.core.errors import StreamciteError, UpstreamError
from streamcite.core.retry_after import parse_retry_after
from streamcite.enrich import limits
from streamcite.enrich._http import HttpResponse

__all__ = [
    "CHECK_PERMISSION",
    "GoogleAuthError",
    "GoogleRequestError",
    "GroundingInputError",
    "GroundingLimitError",
    "raise_for_status",
]

CHECK_PERMISSION = "discoveryengine.groundingConfigs.check"
_RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})


class GroundingLimitError(limits.InvalidGroundingRequest, ValueError):
    """The request would break one of Google's documented limits (nothing was sent)."""

    code = "grounding_limit"


class GroundingInputError(StreamciteError, ValueError):
    """Nothing to check: empty answer, no facts, or the Wikit sources it needs failed."""

    code = "grounding_input"


class GoogleAuthError(UpstreamError):
    """401/403: credentials, quota project, API enablement, IAM permission or scopes."""

    code = "google_auth"

    def __init__(self, message: str, *, code: str, status: int, reason: str | None) -> None:
        super().__init__(message, code=code, status=status, retryable=False)
        self.reason = reason


class GoogleRequestError(UpstreamError):
    """400/404 and other non-retryable statuses: the request or the config name is wrong."""

    code = "google_request"

    def __init__(self, message: str, *, code: str, status: int, reason: str | None) -> None:
        super().__init__(message, code=code, status=status, retryable=False)
        self.reason = reason


# -- google.rpc.Status ------------------------------------------------------------


def _google_error(body: bytes) -> tuple[str, str | None, str | None, dict[str, Any]]:
    """(message, status, reason, metadata) of a ``google.rpc.Status`` error body."""
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        return body[:300].decode("utf-8", "replace").strip(), None, None, {}
    err = data.get("error") if isinstance(data, dict) else None
    if not isinstance(err, dict):
        return "", None, None, {}
    message = err.get("message") if isinstance(err.get("message"), str) else ""
    status = err.get("status") if isinstance(err.get("status"), str) else None
    reason: str | None = None
    metadata: dict[str, Any] = {}
    details = err.get("details")
    for det in details if isinstance(details, list) else ():
        if not isinstance(det, dict):
            continue
        if str(det.get("@type", "")).endswith("google.rpc.ErrorInfo"):
            reason = det.get("reason") if isinstance(det.get("reason"), str) else reason
            if isinstance(det.get("metadata"), dict):
                metadata = det["metadata"]
        if str(det.get("@type", "")).endswith("google.rpc.RetryInfo"):
            delay = det.get("retryDelay")
            if isinstance(delay, str) and delay.endswith("s"):
                metadata.setdefault("retryDelay", delay[:-1])
    return str(message), status, reason, metadata


def _project_of(config: str) -> str:
    return config.split("/")[1]


def raise_for_status(resp: HttpResponse, grounding_config: str) -> None:
    """Nothing for a 2xx; otherwise the typed error of this status, with what to fix."""
    status = resp.status
    if 200 <= status < 300:
        return
    message, rpc_status, reason, meta = _google_error(resp.body)
    said = f": {message}" if message else ""
    if status in _RETRY_STATUSES:
        retry_after = parse_retry_after(resp.header("Retry-After"))
        if retry_after is None and "retryDelay" in meta:
            # google.rpc.RetryInfo's retryDelay is a JSON Duration: "2s", "1.500s".
            retry_after = parse_retry_after(str(meta["retryDelay"]).removesuffix("s"))
        raise UpstreamError(
            f"Google grounding check: HTTP {status}{said}",
            code="google_rate_limited" if status == 429 else "google_unavailable",
            status=status,
            retryable=True,
            retry_after=retry_after,
        )
    if status == 401:
        raise GoogleAuthError(
            f"Google grounding check: HTTP 401 (unauthenticated){said}. The access token "
            "is invalid or expired: pass a fresh token=, a token_provider=, or use "
            "Application Default Credentials (gcloud auth application-default login)",
            code="google_unauthenticated",
            status=401,
            reason=reason,
        )
    if status == 403:
        code, fix = _forbidden_fix(message, reason, meta, grounding_config)
        raise GoogleAuthError(
            f"Google grounding check: HTTP 403{said}. Fix: {fix}",
            code=code,
            status=403,
            reason=reason,
        )
    raise _request_error(status, said, rpc_status, reason, grounding_config)


def _forbidden_fix(
    message: str, reason: str | None, meta: dict[str, Any], grounding_config: str
) -> tuple[str, str]:
    """(code, what to do) of a 403: API disabled, quota project, scope, or IAM."""
    low = message.lower()
    if reason == "SERVICE_DISABLED" or "has not been used" in low or "is disabled" in low:
        consumer = str(meta.get("consumer", f"projects/{_project_of(grounding_config)}"))
        return "google_api_disabled", (
            "enable the Discovery Engine API: gcloud services enable "
            f"discoveryengine.googleapis.com --project {consumer.split('/')[-1]}"
        )
    if "quota project" in low or reason in ("USER_PROJECT_DENIED", "USER_PROJECT_INVALID"):
        return "google_quota_project", (
            "set a quota project: quota_project='PROJECT_ID' (sent as "
            "X-Goog-User-Project) or gcloud auth application-default "
            "set-quota-project PROJECT_ID; the caller needs serviceusage.services.use on it"
        )
    if reason == "ACCESS_TOKEN_SCOPE_INSUFFICIENT" or "scope" in low:
        return "google_scope", (
            "the token lacks an OAuth scope this API needs: request "
            "https://www.googleapis.com/auth/cloud-platform (or "
            "https://www.googleapis.com/auth/discoveryengine.readwrite)"
        )
    return "google_permission_denied", (
        f"grant the IAM permission {CHECK_PERMISSION} on {grounding_config} "
        "to the caller (e.g. role roles/discoveryengine.user)"
    )


def _request_error(
    status: int, said: str, rpc_status: str | None, reason: str | None, grounding_config: str
) -> GoogleRequestError:
    """400, 404 and any other status that retrying cannot fix."""
    if status == 400:
        return GoogleRequestError(
            f"Google grounding check: HTTP 400 ({rpc_status or 'INVALID_ARGUMENT'}){said}. "
            "Check the request against the limits (≤200 facts, factText ≤10,000 "
            "characters, answer ≤4,096 tokens, citationThreshold in [0,1], userLabels "
            "rules) and the grounding config name",
            code="google_invalid_argument",
            status=400,
            reason=reason,
        )
    if status == 404:
        return GoogleRequestError(
            f"Google grounding check: HTTP 404{said}. No grounding config "
            f"{grounding_config!r}: check the project id/number, the location "
            "(global) and the config name (default_grounding_config)",
            code="google_not_found",
            status=404,
            reason=reason,
        )
    return GoogleRequestError(
        f"Google grounding check: unexpected HTTP {status}{said}",
        code="google_http_error",
        status=status,
        reason=reason,
    )
