"""The Wikit Semantics API of the local backend, for the completion id of an answer.

- ``GET /semantics/apps/{app}/query-execution-sources/{query_id}/get-quoted-sources``
  (v2: the quoted sources, ``Wikit-Semantics-API-Key``);
- ``POST /semantics/apps/{app}/query-executions/{query_id}/citations`` (v1: one
  citation per answer sentence, bearer token).

Only configured credentials are checked (``BackendConfig.wikit_org_id`` /
``wikit_api_key``); ``sources_404_until`` makes the sources "not ready yet" for the
first calls, as Wikit is while it indexes.
"""

from __future__ import annotations

import secrets
from datetime import UTC, datetime

from aiohttp import web

from streamcite.local.corpus import stable_id
from streamcite.local.faults import FaultSpec, FaultSpecError, request_faults
from streamcite.local.replies import detail_error, json_response
from streamcite.local.request_guards import fault_status, faults_of, injected_delay
from streamcite.local.state import STATE, root_url
from streamcite.local.store import StoredAnswer

__all__ = ["V1_CITATIONS_PATH", "V2_SOURCES_PATH", "wikit_v1_citations", "wikit_v2_sources"]

V2_SOURCES_PATH = "/semantics/apps/{app_id}/query-execution-sources/{query_id}/get-quoted-sources"
V1_CITATIONS_PATH = "/semantics/apps/{app_id}/query-executions/{query_id}/citations"


def _wikit_auth(request: web.Request, *, bearer: bool) -> str | None:
    """Why the request is refused (401), or None. Only configured credentials are checked."""
    config = request.app[STATE].config
    if config.wikit_org_id is not None:
        org = request.headers.get("X-Wikit-Organization-Id")
        if org is None:
            return "missing X-Wikit-Organization-Id header"
        if not secrets.compare_digest(org.encode(), config.wikit_org_id.encode()):
            return "invalid organization id"
    if config.wikit_api_key is not None:
        if bearer:
            auth = request.headers.get("Authorization", "")
            scheme, _, token = auth.partition(" ")
            if scheme.lower() != "bearer" or not token:
                return "missing bearer token"
        else:
            token = request.headers.get("Wikit-Semantics-API-Key", "")
            if not token:
                return "missing Wikit-Semantics-API-Key header"
        if not secrets.compare_digest(token.strip().encode(), config.wikit_api_key.encode()):
            return "invalid API key"
    return None


async def _wikit_record(request: web.Request, *, bearer: bool) -> StoredAnswer | web.Response:
    """The stored answer for the path's query id, or the error response to send."""
    state = request.app[STATE]
    try:
        spec = faults_of(request)
    except FaultSpecError as exc:
        return detail_error(fault_status(exc), f"fault spec: {exc}")
    refusal = _wikit_auth(request, bearer=bearer)
    if refusal is not None:
        return detail_error(401, refusal)
    if spec.status is not None:
        return detail_error(spec.status, f"injected fault: HTTP {spec.status}", spec)
    await injected_delay(spec.sources_delay)
    query_id = request.match_info["query_id"]
    record = state.store.get(query_id)
    if record is None:
        return detail_error(404, f"query execution {query_id} not found")
    record.sources_calls += 1
    header_or_query = request_faults(FaultSpec(), request.headers, request.query).sources_404_until
    until = header_or_query
    if until is None:
        until = record.sources_404_until
    if until is None:
        until = state.server_faults.sources_404_until
    if until is not None and record.sources_calls <= until:
        return detail_error(404, f"query execution {query_id} not found (sources not ready yet)")
    return record


def _squash(score: float) -> float:
    """A BM25 score mapped into (0, 1), as Wikit reports relevance."""
    return round(score / (score + 1.0), 8)


async def wikit_v2_sources(request: web.Request) -> web.Response:
    """Wikit v2: the quoted sources of the answer, in footnote order."""
    found = await _wikit_record(request, bearer=False)
    if isinstance(found, web.Response):
        return found
    state = request.app[STATE]
    root = root_url(request)
    out = []
    for p in found.answer.passages:
        doc, chunk = p.document, p.chunk
        out.append(
            {
                "quoted_as": str(p.number),
                "document": {
                    "id": doc.id,
                    "name": doc.name,
                    "title": doc.title,
                    "url": f"{root}/documents/{doc.id}#chunk-{chunk.position}",
                    "public_link": True,
                    "storage_name": f"corpus/{doc.name}",
                    "data_source_id": doc.data_source_id,
                    "organization_id": state.organization_id,
                },
                "chunk": {
                    "id": chunk.id,
                    "data": chunk.data,
                    "document_id": doc.id,
                    "data_source_id": doc.data_source_id,
                    "llm_app_id": None,
                    "user_id": None,
                    "flags": None,
                    "position": chunk.position,
                    # Wikit counts pages from 0.
                    "page_start": None if chunk.page_start is None else chunk.page_start - 1,
                    "page_end": None if chunk.page_end is None else chunk.page_end - 1,
                },
                "data_source": {"id": doc.data_source_id, "name": doc.data_source},
                "score": _squash(p.score),
                "retriever_type": "BM25",
            }
        )
    return json_response(out)


async def wikit_v1_citations(request: web.Request) -> web.Response:
    """Wikit v1: one citation per sentence of the answer."""
    found = await _wikit_record(request, bearer=True)
    if isinstance(found, web.Response):
        return found
    state = request.app[STATE]
    root = root_url(request)
    answer = found.answer
    passages = {p.number: p for p in answer.passages}
    created_at = datetime.fromtimestamp(found.created, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    out = []
    for i, sentence in enumerate(answer.sentences):
        p = passages[sentence.number]
        chunk, doc = p.chunk, p.document
        offset = chunk.data_offset
        before = sentence.chunk_start > 0
        after = sentence.chunk_end < len(chunk.text)
        out.append(
            {
                "_id": stable_id("citation", found.id, str(i)),
                "created_at": created_at,
                "query_execution_id": found.id,
                "total_count": len(answer.sentences),
                "reply_sentence": sentence.text,
                "source_sentence": chunk.text[sentence.chunk_start : sentence.chunk_end],
                "chunk_data_snapshot": (" [...] " if before else " ")
                + " {{source_sentence}} "
                + (" [...] " if after else " "),
                "start_char_idx": offset + sentence.chunk_start,
                "end_char_idx": offset + sentence.chunk_end,
                "chunk_id": chunk.id,
                "chunk_page_start": None if chunk.page_start is None else chunk.page_start - 1,
                "chunk_page_end": None if chunk.page_end is None else chunk.page_end - 1,
                "chunk_position": chunk.position,
                "document_id": doc.id,
                "document_name": doc.name,
                "document_title": doc.title,
                "document_url": f"{root}/documents/{doc.id}",
                "organization_id": state.organization_id,
                "threshold": 50,
            }
        )
    return json_response(out)
