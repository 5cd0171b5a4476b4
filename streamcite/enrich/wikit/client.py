"""``WikitSources``: the client of Wikit's quoted sources (v2, deprecated v1), an enricher.

Requests go out under the retry policy of :mod:`streamcite.enrich._http`; statuses
map onto the errors of :mod:`.errors`; v1 citations parse into :mod:`.v1`.
"""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Mapping

import aiohttp
from yarl import URL

from streamcite.core.errors import UpstreamError
from streamcite.core.events import SourcesEvent
from streamcite.core.sources import QuotedSource
from streamcite.enrich._http import (
    HttpResponse,
    PooledClient,
    RetryPolicy,
    Secret,
    SessionHolder,
    send,
    url_with_segments,
    with_retries,
)
from streamcite.enrich.base import EnrichContext
from streamcite.enrich.wikit.errors import json_body, raise_for_status
from streamcite.enrich.wikit.v1 import WikitCitationV1
from streamcite.logs import get_logger

__all__ = [
    "DEFAULT_BASE_URL",
    "LOCAL_APP_ID",
    "LOCAL_ORGANIZATION_ID",
    "MAX_SOURCES",
    "WikitSources",
]

DEFAULT_BASE_URL = "https://apis.wikit.ai"
LOCAL_APP_ID = "streamcite-demo"
"""App id used against the embedded backend when none is given (it serves any app)."""
LOCAL_ORGANIZATION_ID = "streamcite-local"
"""Organisation id used against the embedded backend when none is given."""


def _is_loopback(base_url: str) -> bool:
    """``base_url`` names this machine (127.0.0.0/8, ::1 or localhost): the embedded
    backend, never Wikit itself."""
    import ipaddress
    from urllib.parse import urlsplit

    host = (urlsplit(base_url).hostname or "").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


MAX_SOURCES = 1000
"""Default cap on the sources of one reply (``max_sources``): a reply with more is the
typed error ``wikit_too_many_sources``, found before the body is parsed."""
_OFF_LOOP_BYTES = 256 * 1024
"""Bodies larger than this are parsed in a worker thread, not on the event loop."""


def _parse_sources(body: bytes, max_sources: int) -> list[QuotedSource]:
    """The v2 body → sources, at most ``max_sources`` of them.

    Every source carries the required key ``"quoted_as"`` and a JSON string cannot hold
    those bytes unescaped, so counting them bounds the sources from above in one C-speed
    scan: a 30 MB reply of minimal sources is refused without building 500k objects.
    """
    keys = body.count(b'"quoted_as"')
    if keys > max_sources:
        raise _too_many(keys, max_sources)
    # A key may also be written with escapes ("quoted\u005fas"): counted again once parsed.
    data = json_body(HttpResponse(200, {}, body), "Wikit quoted sources")
    if isinstance(data, list) and len(data) > max_sources:
        raise _too_many(len(data), max_sources)
    return QuotedSource.list_from_json(data)


def _parse_v1(body: bytes, max_sources: int) -> list[WikitCitationV1]:
    """The v1 body → citations, at most ``max_sources`` (counted once parsed)."""
    data = json_body(HttpResponse(200, {}, body), "Wikit v1 citations")
    if isinstance(data, list) and len(data) > max_sources:
        raise _too_many(len(data), max_sources)
    return WikitCitationV1.list_from_json(data)


def _too_many(count: int, max_sources: int) -> UpstreamError:
    return UpstreamError(
        f"Wikit quoted sources: the reply holds up to {count} sources, more than the "
        f"{max_sources} accepted (max_sources)",
        code="wikit_too_many_sources",
    )


class WikitSources(PooledClient):
    """Client of Wikit Semantics quoted sources; also an enricher for ``after=[...]``.

    As an enricher (``kind = "sources"``) it fetches the sources of the answer that
    just streamed and returns a ``SourcesEvent``. The query id is, in order: the
    ``query_id`` given here, the response header named by ``query_id_header``, a
    stream field named by ``query_id_field`` (needs the pipeline to expose the
    stream's top-level chunk fields as ``ctx.chunk_fields``), else the completion id.

    Use ``async with WikitSources(...) as wikit:`` to keep one connection pool across
    calls; without it each call opens and closes its own. ``session=`` reuses yours.
    """

    kind = "sources"
    needs: tuple[str, ...] = ()

    def __init__(
        self,
        app_id: str | None = None,
        organization_id: str | None = None,
        api_key: str | None = None,
        base_url: str = DEFAULT_BASE_URL,
        *,
        query_id: str | None = None,
        query_id_header: str | None = None,
        query_id_field: str | None = None,
        deadline: float = 10.0,
        request_timeout: float = 5.0,
        timeout: float | None = None,
        retry: RetryPolicy | None = None,
        session: aiohttp.ClientSession | None = None,
        headers: Mapping[str, str] | None = None,
        max_sources: int = MAX_SOURCES,
    ) -> None:
        """``app_id`` / ``organization_id``: required for Wikit; against the embedded
        backend (a loopback ``base_url`` such as ``http://127.0.0.1:8765``) they default
        to :data:`LOCAL_APP_ID` / :data:`LOCAL_ORGANIZATION_ID`, which it accepts
        (unless it was started with ``--wikit-org``).

        ``deadline``: how long 404 ("not there yet") and 5xx/429 are retried.

        ``headers``: extra headers of every sources request (e.g. the local backend's
        ``X-Streamcite-Fault``); they never replace the organisation or key headers.

        ``request_timeout``: one HTTP attempt. ``timeout``: the enricher's overall
        budget the pipeline enforces (default ``deadline + 1``, so this client's own,
        more telling error surfaces first). ``retry`` overrides the whole policy.

        ``max_sources``: the most sources one reply may hold (more: the error
        ``wikit_too_many_sources``); large replies are parsed off the event loop.
        """
        if not app_id or not organization_id:
            if not _is_loopback(base_url):
                raise ValueError(
                    "app_id and organization_id are required (only the embedded backend, "
                    "on a loopback base_url, has defaults)"
                )
            app_id = app_id or LOCAL_APP_ID
            organization_id = organization_id or LOCAL_ORGANIZATION_ID
        self.app_id = app_id
        self.organization_id = organization_id
        self._api_key = Secret(api_key) if api_key else None
        self.base_url = base_url.rstrip("/")
        self.query_id = query_id
        self.query_id_header = query_id_header
        self.query_id_field = query_id_field
        self.retry = retry or RetryPolicy(deadline=deadline, request_timeout=request_timeout)
        self.timeout = float(timeout) if timeout is not None else self.retry.deadline + 1.0
        self._sessions = SessionHolder(session)
        self._extra_headers = dict(headers or {})
        self.max_sources = max_sources
        self._log = get_logger("streamcite.enrich.wikit").bind(app_id=app_id)

    def __repr__(self) -> str:
        key = "'***'" if self._api_key else "None"
        return (
            f"WikitSources(app_id={self.app_id!r}, organization_id={self.organization_id!r}, "
            f"api_key={key}, base_url={self.base_url!r})"
        )

    # -- v2 -----------------------------------------------------------------

    def sources_url(self, query_id: str) -> URL:
        """The v2 URL; the ids are path segments that ``.``, ``..`` or ``/`` cannot leave
        (sent encoded as is: see :func:`~streamcite.enrich._http.path_segment`)."""
        return url_with_segments(
            self.base_url,
            "/semantics/apps/{}/query-execution-sources/{}/get-quoted-sources",
            self.app_id,
            query_id,
        )

    def _headers(self) -> dict[str, str]:
        headers = {
            **self._extra_headers,
            "accept": "application/json",
            "X-Wikit-Organization-Id": self.organization_id,
        }
        if self._api_key:
            headers["Wikit-Semantics-API-Key"] = self._api_key.get()
        return headers

    async def fetch(self, query_id: str) -> list[QuotedSource]:
        """The quoted sources of one query execution (v2), retried as documented.

        Raises :class:`WikitAuthError` (401/403, at once), :class:`SourcesNotReady`
        (still 404 at the deadline), ``UpstreamError`` (other statuses, timeouts,
        connection failures after retries) or ``MalformedResponse``.
        """
        if not query_id:
            raise ValueError("query_id is required")
        url = self.sources_url(query_id)
        log = self._log.bind(query_id=query_id)
        headers = self._headers()

        async def attempt(_budget: float) -> list[QuotedSource]:
            async with self._sessions.session() as session:
                resp = await send(session, "GET", url, headers=headers)
            self._check(resp, what="quoted sources", query_id=query_id)
            if len(resp.body) > _OFF_LOOP_BYTES:
                return await asyncio.to_thread(_parse_sources, resp.body, self.max_sources)
            return _parse_sources(resp.body, self.max_sources)

        sources = await with_retries(attempt, self.retry, what="Wikit quoted sources", log=log)
        log.debug("sources fetched", count=len(sources))
        return sources

    # -- v1 (deprecated) ----------------------------------------------------

    def citations_v1_url(self, query_execution_id: str) -> URL:
        """The v1 URL (ids encoded as in :meth:`sources_url`)."""
        return url_with_segments(
            self.base_url,
            "/semantics/apps/{}/query-executions/{}/citations",
            self.app_id,
            query_execution_id,
        )

    async def fetch_v1(
        self, query_execution_id: str, *, token: str | None = None
    ) -> list[WikitCitationV1]:
        """Deprecated v1 citations: ``POST .../query-executions/{id}/citations`` with ``{}``.

        Authenticates with ``Authorization: Bearer`` (``token``, else the API key).
        Same retry policy and errors as :meth:`fetch`.
        """
        warnings.warn(
            "Wikit citations v1 is deprecated by Wikit; use fetch() (v2 quoted sources)",
            DeprecationWarning,
            stacklevel=2,
        )
        if not query_execution_id:
            raise ValueError("query_execution_id is required")
        bearer = Secret(token) if token else self._api_key
        if not bearer:
            raise ValueError("v1 needs a Bearer token: pass token= or api_key=")
        url = self.citations_v1_url(query_execution_id)
        headers = {
            "Authorization": f"Bearer {bearer.get()}",
            "X-Wikit-Organization-Id": self.organization_id,
            "X-Wikit-Response-Format": "json",
            "Content-Type": "application/json",
            "accept": "application/json",
        }
        log = self._log.bind(query_execution_id=query_execution_id, api="v1")

        async def attempt(_budget: float) -> list[WikitCitationV1]:
            async with self._sessions.session() as session:
                resp = await send(session, "POST", url, headers=headers, body=b"{}")
            self._check(resp, what="v1 citations", query_id=query_execution_id)
            if len(resp.body) > _OFF_LOOP_BYTES:
                return await asyncio.to_thread(_parse_v1, resp.body, self.max_sources)
            return _parse_v1(resp.body, self.max_sources)

        return await with_retries(attempt, self.retry, what="Wikit v1 citations", log=log)

    # -- enricher -----------------------------------------------------------

    def resolve_query_id(self, ctx: EnrichContext) -> str:
        """The query id for this answer (explicit, header, stream field, completion id)."""
        if self.query_id:
            return self.query_id
        if self.query_id_header:
            value = ctx.header(self.query_id_header)
            if value:
                return value
            raise UpstreamError(
                f"the response has no {self.query_id_header!r} header to take the Wikit "
                "query id from",
                code="wikit_no_query_id",
            )
        if self.query_id_field:
            fields = getattr(ctx, "chunk_fields", None)
            value = fields.get(self.query_id_field) if fields is not None else None
            if isinstance(value, str | int) and not isinstance(value, bool) and str(value):
                return str(value)
            raise UpstreamError(
                f"no {self.query_id_field!r} field in the stream's chunks to take the Wikit "
                "query id from",
                code="wikit_no_query_id",
            )
        if ctx.answer.id:
            return ctx.answer.id
        raise UpstreamError(
            "no Wikit query id: the stream carried no completion id; pass query_id=",
            code="wikit_no_query_id",
        )

    async def enrich(self, ctx: EnrichContext) -> SourcesEvent:
        """Fetch the sources of the answer that just streamed (``SourcesEvent``)."""
        query_id = self.resolve_query_id(ctx)
        sources = await self.fetch(query_id)
        return SourcesEvent(provider="wikit", query_id=query_id, sources=sources)

    # -- errors -------------------------------------------------------------

    def _check(self, resp: HttpResponse, *, what: str, query_id: str) -> None:
        raise_for_status(
            resp,
            what=what,
            query_id=query_id,
            app_id=self.app_id,
            organization_id=self.organization_id,
            has_key=bool(self._api_key),
        )
