"""Both after-the-stream clients in ``stream_chat(after=[...])`` against one real server.

A small aiohttp app on 127.0.0.1 speaks the three APIs: the chat stream (Magisterium
style, citations on the finish chunk), Wikit quoted sources and Google's grounding
check. It records when each request arrived and when each reply left, so the tests
see concurrency (or the wait for sources) in the ORDER of events on the server.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import orjson
import pytest
from aiohttp import web

from streamcite import stream_chat
from streamcite.core.events import DoneEvent, ErrorEvent, GroundingEvent, SourcesEvent
from streamcite.enrich.google import GoogleGrounding
from streamcite.enrich.wikit import WikitSources
from tests._served import served

try:
    from _streams import magisterium_stream
    from _streams import strip_markers as reference_strip
except ImportError:  # tests/ imported as a package
    from tests._streams import magisterium_stream
    from tests._streams import strip_markers as reference_strip

APP = "rh-app"
GUARD = 30.0
"""Seconds of a safety-net timeout: far above any wait here, never what is tested."""
ORG = "org-1"
CHAT_ID = "chatcmpl-pipe-1"
CONFIG = "projects/p/locations/global/groundingConfigs/default_grounding_config"

DELTAS = [
    "Le télétravail est autorisé ",
    "deux jours par semaine [1]",
    ". Les frais de repas ",
    "sont remboursés [2].",
]
TEXT = "".join(DELTAS)
CITATIONS = [
    {
        "cited_text": "Le télétravail est autorisé deux jours par semaine.",
        "document_title": "Charte",
        "document_index": 0,
    },
    {
        "cited_text": "Les frais de repas sont remboursés sur justificatif.",
        "document_title": "Frais",
        "document_index": 1,
    },
]
SOURCES = [
    {
        "quoted_as": str(i + 1),
        "document": {"id": f"doc{i}", "name": f"doc{i}.pdf", "title": None, "url": None},
        "chunk": {
            "id": f"chunk{i}",
            "data": c["cited_text"],
            "position": i,
            "page_start": 0,
            "page_end": 0,
        },
        "data_source": {"id": "ds", "name": "Ressources Humaines"},
        "score": 0.9,
        "retriever_type": "SEMANTIC_SEARCH",
    }
    for i, c in enumerate(CITATIONS)
]


def _words(s: str) -> set[str]:
    return {w for w in re.findall(r"\w+", s.lower()) if len(w) > 2}


def check_reply(body: dict[str, Any]) -> dict[str, Any]:
    """Sentences as claims with UTF-8 byte offsets, citing facts that share 2+ words."""
    answer, facts = body["answerCandidate"], body["facts"]
    chunks: list[dict[str, Any]] = []
    claims = []
    for m in re.finditer(r"\S[^.]*\.?", answer):
        cites = []
        for fi, f in enumerate(facts):
            if len(_words(m.group()) & _words(f["factText"])) >= 2:
                cites.append(len(chunks))
                chunks.append({"chunkText": f["factText"], "source": str(fi)})
        claims.append(
            {
                "claimText": m.group(),
                "startPos": len(answer[: m.start()].encode()),
                "endPos": len(answer[: m.end()].encode()),
                "citationIndices": cites,
            }
        )
    return {"citedChunks": chunks, "claims": claims, "supportScore": 1.0}


@dataclass
class Backend:
    url: str = ""
    sources_status: list[int] = field(default_factory=lambda: [200])
    sources_delay: float = 0.0
    sources_gate: asyncio.Event | None = None
    """When set: the sources reply waits for it (at most ``GUARD`` seconds)."""
    check_status: int = 200
    check_delay: float = 0.0
    log: list[tuple[str, float]] = field(default_factory=list)
    check_bodies: list[dict[str, Any]] = field(default_factory=list)
    query_ids: list[str] = field(default_factory=list)

    def when(self, what: str) -> float:
        return next(t for w, t in self.log if w == what)

    async def chat(self, request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "X-Query-Id": "hdr-q"}
        )
        await resp.prepare(request)
        await resp.write(magisterium_stream(DELTAS, CITATIONS, id=CHAT_ID))
        await resp.write_eof()
        self.log.append(("chat_end", time.monotonic()))
        return resp

    async def sources(self, request: web.Request) -> web.Response:
        self.log.append(("sources_in", time.monotonic()))
        self.query_ids.append(request.match_info["qid"])
        status = (
            self.sources_status.pop(0) if len(self.sources_status) > 1 else self.sources_status[0]
        )
        await asyncio.sleep(self.sources_delay)
        if self.sources_gate is not None:
            async with asyncio.timeout(GUARD):
                await self.sources_gate.wait()
        self.log.append(("sources_out", time.monotonic()))
        body = orjson.dumps(SOURCES) if status == 200 else b"{}"
        return web.Response(status=status, body=body, content_type="application/json")

    async def check(self, request: web.Request) -> web.Response:
        self.log.append(("check_in", time.monotonic()))
        body = orjson.loads(await request.read())
        self.check_bodies.append(body)
        await asyncio.sleep(self.check_delay)
        self.log.append(("check_out", time.monotonic()))
        if self.check_status != 200:
            err = {
                "error": {
                    "code": self.check_status,
                    "message": "denied",
                    "status": "PERMISSION_DENIED",
                }
            }
            return web.Response(
                status=self.check_status, body=orjson.dumps(err), content_type="application/json"
            )
        return web.Response(body=orjson.dumps(check_reply(body)), content_type="application/json")


@pytest.fixture
async def backend() -> AsyncIterator[Backend]:
    be = Backend()
    app = web.Application()
    app.router.add_post("/v1/chat/completions", be.chat)
    app.router.add_get(
        "/semantics/apps/{app}/query-execution-sources/{qid}/get-quoted-sources", be.sources
    )
    app.router.add_post("/v1/" + CONFIG + ":check", be.check)
    async with served(app) as be.url:
        yield be


def wikit(be: Backend, **kw: Any) -> WikitSources:
    kw.setdefault("deadline", 3.0)
    return WikitSources(APP, ORG, base_url=be.url, **kw)


def google(be: Backend, **kw: Any) -> GoogleGrounding:
    return GoogleGrounding(CONFIG, token="t", endpoint=be.url, **kw)


async def run(be: Backend, after: list[Any], transport: str = "aiohttp", **kw: Any) -> list[Any]:
    request = {
        "model": "streamcite-local",
        "messages": [{"role": "user", "content": "Télétravail ?"}],
        "stream": True,
    }
    async with stream_chat(
        request, base_url=be.url + "/v1", transport=transport, after=after, **kw
    ) as stream:
        return [ev async for ev in stream]


class _Then:
    """An enricher that calls ``then()`` once ``inner``'s enrich has ended."""

    def __init__(self, inner: Any, then: Callable[[], None]) -> None:
        self.inner, self.then = inner, then

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def enrich(self, ctx: Any) -> Any:
        try:
            return await self.inner.enrich(ctx)
        finally:
            self.then()


def of(events: list[Any], cls: type) -> list[Any]:
    return [e for e in events if isinstance(e, cls)]


@pytest.mark.parametrize("transport", ["aiohttp", "httpx"])
async def test_both_run_concurrently_and_land_in_the_answer(
    backend: Backend, transport: str
) -> None:
    # The sources reply only once the grounding check has ended (an event, not a delay a
    # loaded machine could outlast): had the check waited for the sources, neither ends.
    backend.sources_gate = asyncio.Event()
    grounding_then = _Then(google(backend), backend.sources_gate.set)
    events = await run(backend, [wikit(backend, deadline=GUARD), grounding_then], transport)
    assert isinstance(events[-1], DoneEvent)
    (sources,) = of(events, SourcesEvent)
    (grounding,) = of(events, GroundingEvent)
    assert of(events, ErrorEvent) == []
    # The grounding check (from citations) did not wait for the slow sources.
    assert backend.when("check_in") < backend.when("sources_out")
    assert sources.query_id == CHAT_ID and backend.query_ids == [CHAT_ID]
    answer = events[-1].answer
    assert answer.text == TEXT
    assert [s.quoted_as for s in answer.sources] == ["1", "2"]
    assert answer.grounding is not None and answer.grounding.provider == "google"
    assert answer.grounding.support_score == grounding.support_score == 1.0
    claims = answer.grounding.claims
    assert [TEXT[c.start : c.end] for c in claims] == [
        "Le télétravail est autorisé deux jours par semaine [1].",
        "Les frais de repas sont remboursés [2].",
    ]
    assert [answer.grounding.origins_for(c, answer.citations) for c in claims] == [
        [answer.citations[0]],
        [answer.citations[1]],
    ]
    assert answer.timings.sources_ms is not None and answer.timings.grounding_ms is not None
    assert answer.timings.total_ms is not None
    # The slow one finished last.
    assert [type(e) for e in events[-3:]] == [GroundingEvent, SourcesEvent, DoneEvent]


async def test_grounding_from_wikit_sources_waits_for_them(backend: Backend) -> None:
    backend.sources_delay = 0.2
    g = google(backend, facts_from="sources")
    events = await run(backend, [g, wikit(backend)])
    assert of(events, ErrorEvent) == []
    assert backend.when("check_in") >= backend.when("sources_out")
    (body,) = backend.check_bodies
    assert [f["attributes"]["quoted_as"] for f in body["facts"]] == ["1", "2"]
    answer = events[-1].answer
    grounding = answer.grounding
    assert grounding is not None
    assert [
        grounding.origins_for(c, answer.citations, answer.sources) for c in grounding.claims
    ] == [
        [answer.sources[0]],
        [answer.sources[1]],
    ]
    assert answer.timings.grounding_ms >= answer.timings.sources_ms  # it includes the wait


async def test_failed_sources_keep_grounding_and_answer(backend: Backend) -> None:
    backend.sources_status = [401]
    events = await run(backend, [wikit(backend, api_key="wk-secret"), google(backend)])
    (err,) = of(events, ErrorEvent)
    assert (err.stage, err.code, err.status) == ("sources", "wikit_auth", 401)
    assert "wk-secret" not in err.message
    answer = events[-1].answer
    assert answer.text == TEXT and len(answer.citations) == 2
    assert answer.sources == [] and answer.grounding is not None
    assert answer.errors == [err]


async def test_failed_grounding_keeps_sources(backend: Backend) -> None:
    backend.check_status = 403
    events = await run(backend, [wikit(backend), google(backend)])
    (err,) = of(events, ErrorEvent)
    assert (err.stage, err.code) == ("grounding", "google_permission_denied")
    assert "discoveryengine.groundingConfigs.check" in err.message
    answer = events[-1].answer
    assert len(answer.sources) == 2 and answer.grounding is None


async def test_grounding_on_failed_sources_fails_too(backend: Backend) -> None:
    backend.sources_status = [403]
    events = await run(backend, [wikit(backend), google(backend, facts_from="sources")])
    errors = {e.stage: e.code for e in of(events, ErrorEvent)}
    assert errors == {"sources": "wikit_auth", "grounding": "grounding_no_sources"}
    assert backend.check_bodies == []
    assert isinstance(events[-1], DoneEvent) and events[-1].answer.text == TEXT


async def test_sources_404_then_200_within_the_stream(backend: Backend) -> None:
    backend.sources_status = [404, 404, 200]
    events = await run(backend, [wikit(backend)])
    assert len(of(events, SourcesEvent)[0].sources) == 2
    assert len(backend.query_ids) == 3


async def test_enricher_timeout_is_an_error_of_its_stage(backend: Backend) -> None:
    backend.sources_delay = 2.0
    slow = wikit(backend, timeout=0.2)
    events = await run(backend, [slow, google(backend)])
    (err,) = of(events, ErrorEvent)
    assert (err.stage, err.code) == ("sources", "sources_timeout")
    assert events[-1].answer.grounding is not None


async def test_query_id_from_a_response_header(backend: Backend) -> None:
    events = await run(backend, [wikit(backend, query_id_header="x-query-id")])
    assert of(events, SourcesEvent)[0].query_id == "hdr-q" and backend.query_ids == ["hdr-q"]


async def test_strip_display_mode_keeps_offsets_on_the_raw_text(backend: Backend) -> None:
    events = await run(backend, [google(backend, strip_markers=False)], marker_mode="strip")
    answer = events[-1].answer
    assert answer.display_text != answer.text
    assert backend.check_bodies[0]["answerCandidate"] == TEXT
    assert [answer.text[c.start : c.end] for c in answer.grounding.claims][
        1
    ] == "Les frais de repas sont remboursés [2]."


# -- against the embedded local backend (the project's emulator of the three APIs) -----


async def test_embedded_backend_speaks_both_services() -> None:
    local = pytest.importorskip("streamcite.local.server")
    config = local.BackendConfig(
        wikit_org_id=ORG, wikit_api_key="local-key", faults="sources_404_until=2"
    )
    async with local.LocalBackend(config) as be:
        w = WikitSources(APP, ORG, "local-key", be.root_url, deadline=5.0)
        g = GoogleGrounding(CONFIG, token="t", endpoint=be.root_url, facts_from="both")
        request = {
            "model": "streamcite-local",
            "messages": [{"role": "user", "content": "Quanti giorni di ferie spettano all'anno?"}],
            "stream": True,
        }
        async with stream_chat(
            request, base_url=be.base_url, transport="aiohttp", after=[w, g]
        ) as s:
            answer = await s.until_done()
    assert answer.errors == []
    assert answer.sources and answer.citations
    grounding = answer.grounding
    assert grounding is not None and grounding.provider == "google" and grounding.claims
    for claim in grounding.claims:
        span = answer.text[claim.start : claim.end]
        assert reference_strip(span).strip() == claim.claim_text.strip()
        assert claim.start_utf16 == len(answer.text[: claim.start].encode("utf-16-le")) // 2
    supported = [c for c in grounding.claims if c.supported]
    assert supported
    assert all(grounding.origins_for(c, answer.citations, answer.sources) for c in supported)
