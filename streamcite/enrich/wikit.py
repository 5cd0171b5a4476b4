"""Wikit Semantics quoted sources, fetched after the stream (v2, and the deprecated v1).

v2: ``GET {base}/semantics/apps/{app}/query-execution-sources/{query_id}/get-quoted-sources``
with ``X-Wikit-Organization-Id`` and, for private apps only, ``Wikit-Semantics-API-Key``.
The sources of an answer appear a moment after it: 404 means "not there yet" and is
retried with backoff until a deadline (10 s by default); 429/500/502/503/504 are
retried too (``Retry-After`` honoured); 401/403 stop at once with
:class:`WikitAuthError`, which says what to check.

v1 (deprecated): ``POST {base}/semantics/apps/{app}/query-executions/{id}/citations``
with a Bearer token, parsed into :class:`WikitCitationV1`.

Helpers for Wikit's documented best practices: :func:`by_document` (the API may
return one document several times), :func:`sources_without_url`, :func:`match_refs`
(``quoted_as`` ↔ the answer's ``[n]``), :func:`page_label` (pages are 0-based in
the API, 1-based for people).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import aiohttp
import orjson

from streamcite.core import _validate as v
from streamcite.core.errors import MalformedResponse, UpstreamError
from streamcite.core.events import SourcesEvent
from streamcite.core.markers import footnote_numbers
from streamcite.core.models import CitationRef, CitedAnswer
from streamcite.core.sources import QuotedSource, SourceDocument
from streamcite.enrich._http import (
    HttpResponse,
    RetryPolicy,
    Secret,
    SessionHolder,
    parse_retry_after,
    send,
    with_retries,
)
from streamcite.enrich.base import EnrichContext
from streamcite.logs import get_logger

__all__ = [
    "DocumentGroup",
    "RefMatch",
    "SourcesNotReady",
    "WikitAuthError",
    "WikitCitationV1",
    "WikitSources",
    "by_document",
    "match_refs",
    "page_label",
    "sources_without_url",
]

DEFAULT_BASE_URL = "https://apis.wikit.ai"
_RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})


class WikitAuthError(UpstreamError):
    """401/403 from Wikit: the API key or the organization id is wrong (not retried)."""

    code = "wikit_auth"


class SourcesNotReady(UpstreamError):
    """404 until the deadline: the query id is wrong, or Wikit never produced the sources."""

    code = "wikit_not_found"


@dataclass(slots=True)
class WikitCitationV1:
    """One citation of the deprecated v1 ``/citations`` endpoint (every documented field).

    ``chunk_page_start``/``chunk_page_end`` are 0-based as sent; ``display_page_*``
    are 1-based for people. ``start_char_idx``/``end_char_idx`` locate
    ``source_sentence`` in the chunk.
    """

    id: str
    """``_id`` in the JSON."""
    query_execution_id: str | None = None
    created_at: str | None = None
    total_count: int | None = None
    reply_sentence: str | None = None
    source_sentence: str | None = None
    chunk_data_snapshot: str | None = None
    start_char_idx: int | None = None
    end_char_idx: int | None = None
    chunk_id: str | None = None
    chunk_page_start: int | None = None
    chunk_page_end: int | None = None
    chunk_position: int | None = None
    document_id: str | None = None
    document_name: str | None = None
    document_title: str | None = None
    document_url: str | None = None
    organization_id: str | None = None
    threshold: float | None = None

    @property
    def display_page_start(self) -> int | None:
        return None if self.chunk_page_start is None else self.chunk_page_start + 1

    @property
    def display_page_end(self) -> int | None:
        return None if self.chunk_page_end is None else self.chunk_page_end + 1

    @classmethod
    def from_dict(cls, d: Any, path: str = "citation") -> WikitCitationV1:
        d = v.obj(d, path)
        return cls(
            id=v.req_str(d, "_id", path),
            query_execution_id=v.opt_str(d, "query_execution_id", path),
            created_at=v.opt_str(d, "created_at", path),
            total_count=v.opt_int(d, "total_count", path),
            reply_sentence=v.opt_str(d, "reply_sentence", path),
            source_sentence=v.opt_str(d, "source_sentence", path),
            chunk_data_snapshot=v.opt_str(d, "chunk_data_snapshot", path),
            start_char_idx=v.opt_int(d, "start_char_idx", path),
            end_char_idx=v.opt_int(d, "end_char_idx", path),
            chunk_id=v.opt_str(d, "chunk_id", path),
            chunk_page_start=v.opt_int(d, "chunk_page_start", path),
            chunk_page_end=v.opt_int(d, "chunk_page_end", path),
            chunk_position=v.opt_int(d, "chunk_position", path),
            document_id=v.opt_str(d, "document_id", path),
            document_name=v.opt_str(d, "document_name", path),
            document_title=v.opt_str(d, "document_title", path),
            document_url=v.opt_str(d, "document_url", path),
            organization_id=v.opt_str(d, "organization_id", path),
            threshold=v.opt_float(d, "threshold", path),
        )

    @classmethod
    def list_from_json(cls, body: Any) -> list[WikitCitationV1]:
        items = v.arr(body, "$")
        return [cls.from_dict(item, f"$[{i}]") for i, item in enumerate(items)]


class WikitSources:
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
        app_id: str,
        organization_id: str,
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
    ) -> None:
        """``deadline``: how long 404 ("not there yet") and 5xx/429 are retried.

        ``headers``: extra headers of every sources request (e.g. the local backend's
        ``X-Streamcite-Fault``); they never replace the organisation or key headers.

        ``request_timeout``: one HTTP attempt. ``timeout``: the enricher's overall
        budget the pipeline enforces (default ``deadline + 1``, so this client's own,
        more telling error surfaces first). ``retry`` overrides the whole policy.
        """
        if not app_id or not organization_id:
            raise ValueError("app_id and organization_id are required")
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
        self._log = get_logger("streamcite.enrich.wikit").bind(app_id=app_id)

    def __repr__(self) -> str:
        key = "'***'" if self._api_key else "None"
        return (
            f"WikitSources(app_id={self.app_id!r}, organization_id={self.organization_id!r}, "
            f"api_key={key}, base_url={self.base_url!r})"
        )

    async def __aenter__(self) -> WikitSources:
        await self._sessions.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connection pool this client opened (never the caller's session)."""
        await self._sessions.aclose()

    # -- v2 -----------------------------------------------------------------

    def sources_url(self, query_id: str) -> str:
        return (
            f"{self.base_url}/semantics/apps/{quote(self.app_id, safe='')}"
            f"/query-execution-sources/{quote(query_id, safe='')}/get-quoted-sources"
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
            self._raise_for_status(resp, what="quoted sources", query_id=query_id)
            return QuotedSource.list_from_json(_json(resp, "Wikit quoted sources"))

        sources = await with_retries(attempt, self.retry, what="Wikit quoted sources", log=log)
        log.debug("sources fetched", count=len(sources))
        return sources

    # -- v1 (deprecated) ----------------------------------------------------

    def citations_v1_url(self, query_execution_id: str) -> str:
        return (
            f"{self.base_url}/semantics/apps/{quote(self.app_id, safe='')}"
            f"/query-executions/{quote(query_execution_id, safe='')}/citations"
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
            self._raise_for_status(resp, what="v1 citations", query_id=query_execution_id)
            return WikitCitationV1.list_from_json(_json(resp, "Wikit v1 citations"))

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

    def _raise_for_status(self, resp: HttpResponse, *, what: str, query_id: str) -> None:
        status = resp.status
        if 200 <= status < 300:
            return
        if status in (401, 403):
            if status == 401 and not self._api_key:
                hint = (
                    "this app is probably private: pass api_key= (sent as "
                    "Wikit-Semantics-API-Key), and check the organization id "
                    f"{self.organization_id!r}"
                )
            elif status == 401:
                hint = (
                    "the API key is invalid or does not belong to organization "
                    f"{self.organization_id!r}: check the key and the organization id"
                )
            else:
                hint = (
                    f"organization {self.organization_id!r} has no access to app "
                    f"{self.app_id!r}: check the organization id and the API key's rights"
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


def _json(resp: HttpResponse, what: str) -> Any:
    try:
        return orjson.loads(resp.body)
    except orjson.JSONDecodeError as e:
        raise MalformedResponse(f"{what}: body is not JSON ({e}): {_snippet(resp.body)}") from e


def _snippet(body: bytes, limit: int = 200) -> str:
    text = body[:limit].decode("utf-8", "replace")
    return repr(text + ("…" if len(body) > limit else ""))


# -- helpers for Wikit's best practices ---------------------------------------


@dataclass(slots=True)
class DocumentGroup:
    """One document and every quoted source taken from it, in answer order."""

    document: SourceDocument
    sources: list[QuotedSource] = field(default_factory=list)

    @property
    def quoted_as(self) -> list[str]:
        """The ``[n]`` labels that point into this document."""
        return [s.quoted_as for s in self.sources]

    @property
    def url(self) -> str | None:
        return self.document.url

    @property
    def best_score(self) -> float | None:
        scores = [s.score for s in self.sources if s.score is not None]
        return max(scores) if scores else None

    @property
    def pages(self) -> list[int]:
        """1-based page numbers quoted from this document, sorted, without repeats."""
        out: set[int] = set()
        for s in self.sources:
            start, end = s.chunk.display_page_start, s.chunk.display_page_end
            if start is not None:
                out.update(range(start, (end if end is not None and end >= start else start) + 1))
        return sorted(out)


def by_document(sources: Iterable[QuotedSource]) -> list[DocumentGroup]:
    """Group sources by document id, documents in order of first appearance.

    Wikit may return the same document several times (one entry per quoted chunk);
    a UI usually lists each document once with its ``[n]`` labels.
    """
    groups: dict[str, DocumentGroup] = {}
    for s in sources:
        group = groups.get(s.document.id)
        if group is None:
            group = groups[s.document.id] = DocumentGroup(s.document)
        group.sources.append(s)
    return list(groups.values())


def sources_without_url(sources: Iterable[QuotedSource]) -> list[QuotedSource]:
    """Sources whose document has no URL (show them as plain text, not as links)."""
    return [s for s in sources if not s.document.url]


def page_label(source: QuotedSource) -> str | None:
    """``"p. 3"`` or ``"pp. 3–4"`` with 1-based page numbers; None when pages are unknown."""
    start, end = source.chunk.display_page_start, source.chunk.display_page_end
    if start is None:
        return None
    if end is None or end == start:
        return f"p. {start}"
    return f"pp. {start}–{end}"


@dataclass(slots=True)
class RefMatch:
    """How the answer's ``[n]`` footnotes and the sources' ``quoted_as`` line up."""

    matched: dict[int, list[QuotedSource]] = field(default_factory=dict)
    """Footnote number → the sources quoted as it (several when a chunk repeats)."""
    refs_without_source: list[int] = field(default_factory=list)
    """Numbers written in the answer that no source is quoted as."""
    sources_never_referenced: list[QuotedSource] = field(default_factory=list)
    """Sources whose ``quoted_as`` appears nowhere in the answer."""

    @property
    def ok(self) -> bool:
        return not self.refs_without_source and not self.sources_never_referenced


def _ref_numbers(answer_or_refs: CitedAnswer | str | Iterable[int | CitationRef]) -> list[int]:
    if isinstance(answer_or_refs, CitedAnswer):
        # ``text`` is choice 0; so are the sources Wikit returns for it.
        refs0 = [r for r in answer_or_refs.citation_refs if r.index == 0]
        if not refs0:
            return _ref_numbers(answer_or_refs.text)
        items: Iterable[int | CitationRef] = refs0
    elif isinstance(answer_or_refs, str):
        return footnote_numbers(answer_or_refs)
    else:
        items = answer_or_refs
    return [r.number if isinstance(r, CitationRef) else int(r) for r in items]


def match_refs(
    answer_or_refs: CitedAnswer | str | Iterable[int | CitationRef],
    sources: Sequence[QuotedSource],
) -> RefMatch:
    """Pair the answer's footnotes with the sources' ``quoted_as``.

    ``answer_or_refs``: a CitedAnswer (its ``citation_refs``, else markers found in
    its text), the answer text, or the footnote numbers. Numbers keep their first
    appearance order; a source whose ``quoted_as`` is not a number is never matched.
    """
    by_label: dict[str, list[QuotedSource]] = {}
    for s in sources:
        by_label.setdefault(s.quoted_as.strip(), []).append(s)
    numbers = list(dict.fromkeys(_ref_numbers(answer_or_refs)))
    out = RefMatch()
    for n in numbers:
        hits = by_label.get(str(n))
        if hits:
            out.matched[n] = hits
        else:
            out.refs_without_source.append(n)
    referenced = {str(n) for n in numbers}
    out.sources_never_referenced = [s for s in sources if s.quoted_as.strip() not in referenced]
    return out
