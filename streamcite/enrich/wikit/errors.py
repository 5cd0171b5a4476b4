"""Wikit errors, and the mapping of an HTTP status onto them.

401/403 stop at once with :class:`WikitAuthError` (what to check: the key, the
organisation id, the app's access); 404 is :class:`SourcesNotReady`, retryable (the
sources of an answer appear a moment after it); 429/500/502/503/504 are retryable
with ``Retry-After`` honoured; anything else is a plain ``UpstreamError``.
"""

from __future__ import annotations

from typing import Any

import orjson

from streamcite.core.errors import MalformedResponse, UpstreamError
from streamcite.core.retry_after import parse_retry_after
from streamcite.enrich._http import HttpResponse

__all__ = ["SourcesNotReady", "WikitAuthError", "json_body", "raise_for_status"]

_RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})


class WikitAuthError(UpstreamError):
    """401/403 from Wikit: the API key or the organization id is wrong (not retried)."""

    code = "wikit_auth"


class SourcesNotReady(UpstreamError):
    """404 until the deadline: the query id is wrong, or Wikit never produced the sources."""

    code = "wikit_not_found"


def raise_for_status(
    resp: HttpResponse,
    *,
    what: str,
    query_id: str,
    app_id: str,
    organization_id: str,
    has_key: bool,
) -> None:
    """Nothing for a 2xx; otherwise the typed error of this status, with what to check."""
    status = resp.status
    if 200 <= status < 300:
        return
    if status in (401, 403):
        if status == 401 and not has_key:
            hint = (
                "this app is probably private: pass api_key= (sent as "
                "Wikit-Semantics-API-Key), and check the organization id "
                f"{organization_id!r}"
            )
        elif status == 401:
            hint = (
                "the API key is invalid or does not belong to organization "
                f"{organization_id!r}: check the key and the organization id"
            )
        else:
            hint = (
                f"organization {organization_id!r} has no access to app "
                f"{app_id!r}: check the organization id and the API key's rights"
            )
        raise WikitAuthError(f"Wikit {what}: HTTP {status}: {hint}", status=status)
    if status == 404:
        raise SourcesNotReady(
            f"Wikit {what} for query {query_id!r} not found (HTTP 404): not there yet, "
            "or a wrong query id / app id",
            status=404,
            retryable=True,
        )
    retry_after = parse_retry_after(resp.header("Retry-After"))
    if status in _RETRY_STATUSES:
        raise UpstreamError(
            f"Wikit {what}: HTTP {status}",
            code="wikit_unavailable" if status != 429 else "wikit_rate_limited",
            status=status,
            retryable=True,
            retry_after=retry_after,
        )
    raise UpstreamError(
        f"Wikit {what}: unexpected HTTP {status}: {_snippet(resp.body)}",
        code="wikit_http_error",
        status=status,
    )


def json_body(resp: HttpResponse, what: str) -> Any:
    try:
        return orjson.loads(resp.body)
    except orjson.JSONDecodeError as e:
        raise MalformedResponse(f"{what}: body is not JSON ({e}): {_snippet(resp.body)}") from e


def _snippet(body: bytes, limit: int = 200) -> str:
    text = body[:limit].decode("utf-8", "replace")
    return repr(text + ("…" if len(body) > limit else ""))
