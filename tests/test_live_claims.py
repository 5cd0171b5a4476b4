"""``claim`` events while the answer streams: the local checker's live session, the
pipeline stage that runs its checks off the event loop, and the one claim channel."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest
from aiohttp import web

from streamcite.core.events import (
    CitationsEvent,
    ClaimEvent,
    DoneEvent,
    ErrorEvent,
    GroundingEvent,
    event_from_json,
)
from streamcite.core.grounding import GroundingFact
from streamcite.core.models import Citation, CitationSpan
from streamcite.grounding.checker import LocalGrounding
from streamcite.grounding.live import FactIndex
from streamcite.grounding.live_claims import LocalClaimSession
from streamcite.pipeline import stream_chat
from tests._served import served
from tests._upstream import chunk

FACTS = [
    "Titanic was directed by James Cameron and released in 1997.",
    "The film stars Leonardo DiCaprio and Kate Winslet.",
]
SENTENCE_1 = ["Titanic", " was", " directed", " by", " James", " Cameron", "."]
SENTENCE_2 = [" It", " stars", " Brad", " Pitt", "."]
REQUEST = {"model": "m", "messages": [{"role": "user", "content": "Who made Titanic?"}]}


def _texts(jobs: list[Any]) -> list[str]:
    return [j.text for j in jobs]


# ------------------------------------------------------------------ the session (sans-I/O)


def test_request_time_facts_check_each_sentence_when_it_ends() -> None:
    s = LocalClaimSession([GroundingFact(f) for f in FACTS])
    jobs = [j for t in [*SENTENCE_1, *SENTENCE_2] for j in s.on_token(t)]
    assert _texts(jobs) == ["Titanic was directed by James Cameron."]
    [rest] = s.on_finish()
    assert rest.text == "It stars Brad Pitt." and rest.index == 1
    first, second = s.run(jobs[0]), s.run(rest)
    assert (first.supported, second.supported) == (True, False)
    assert first.score is not None and first.score >= 0.6 and first.checker == "local"
    assert first.citation_indices == []  # request facts are no citations of the answer


def test_without_facts_sentences_wait_for_the_citations_or_the_finish() -> None:
    s = LocalClaimSession()
    assert [j for t in [*SENTENCE_1, *SENTENCE_2, " Why?"] for j in s.on_token(t)] == []
    cited = CitationsEvent(citations=[Citation(cited_text=FACTS[0], document_index=0)])
    jobs = s.on_citations(cited)  # (the finish chunk's citations come before its finish)
    assert _texts(jobs) == ["Titanic was directed by James Cameron.", "It stars Brad Pitt."]
    jobs += s.on_finish()
    assert _texts(jobs)[-1] == "Why?"
    claims = [s.run(j) for j in jobs]
    assert [c.supported for c in claims] == [True, False, None]
    assert claims[0].citation_indices == [0]
    assert claims[2].score is None  # a question needs no check


def test_spans_that_arrive_mid_stream_check_the_sentences_they_anchor() -> None:
    s = LocalClaimSession()
    for t in [*SENTENCE_1, *SENTENCE_2, " More"]:
        s.on_token(t)
    cit = [Citation(cited_text=FACTS[0], document_index=0), Citation(cited_text=FACTS[1])]
    # The first sentence's span arrives: only that sentence is checked.
    jobs = s.on_citations(CitationsEvent(citations=cit, spans=[CitationSpan(0, 0, 38)]))
    assert _texts(jobs) == ["Titanic was directed by James Cameron."]
    assert s.run(jobs[0]).citation_indices == [0]
    # The second one's span: now it is.
    spans = [CitationSpan(0, 0, 38), CitationSpan(1, 39, 58)]
    assert _texts(s.on_citations(CitationsEvent(citations=cit, spans=spans))) == [
        "It stars Brad Pitt."
    ]
    assert _texts(s.on_finish()) == ["More"]


def test_citations_without_spans_check_at_once() -> None:
    s = LocalClaimSession()
    for t in SENTENCE_1:
        s.on_token(t)
    jobs = s.on_citations(CitationsEvent(citations=[Citation(cited_text=FACTS[0])]))
    assert jobs == []  # the sentence is not complete yet
    assert _texts(s.on_token(" It")) == ["Titanic was directed by James Cameron."]


def test_waiting_sentences_are_bounded_and_counted() -> None:
    s = LocalClaimSession(max_waiting=3)
    for i in range(10):
        s.on_token(f"Sentence number {i} is here. ")
    assert s.dropped == 6  # 9 complete sentences, 3 kept
    assert len(s.on_finish()) == 4  # the 3 kept and the last one


def test_one_claim_check_matches_the_whole_answer_check() -> None:
    index = FactIndex(FACTS)
    for sentence in ["Titanic was directed by James Cameron.", "It stars Brad Pitt.", "Hi!"]:
        live = index.check(sentence)
        whole = LocalGrounding().check_sync(sentence, FACTS, claim_level_scores=True).claims[0]
        assert live.required == bool(whole.grounding_check_required)
        if live.required:
            assert round(live.score or 0, 4) == whole.score


def test_claim_event_wire_form_and_codec() -> None:
    ev = ClaimEvent(index=2, start=3, end=9, start_utf16=3, end_utf16=10, text="It 😀 s.")
    wire = orjson.loads(ev.to_json())
    assert list(wire) == [
        "type", "index", "start", "end", "start_utf16", "end_utf16", "text", "score",
        "supported", "citation_indices", "checker",
    ]  # fmt: skip
    assert wire["score"] is None and wire["supported"] is None and wire["checker"] == "local"
    assert event_from_json(ev.to_json()) == ev


# ------------------------------------------------------------------ the pipeline, on loopback


class GatedUpstream:
    """Sends ``before``, waits for ``gate`` (bounded), then sends ``after``."""

    def __init__(self, before: list[bytes], after: list[bytes]) -> None:
        self.before, self.after = before, after
        self.gate = asyncio.Event()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        await request.read()
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        for part in self.before:
            await resp.write(part)
        async with asyncio.timeout(10):
            await self.gate.wait()
        for part in self.after:
            await resp.write(part)
        return resp


@pytest.fixture
async def gated() -> AsyncIterator[tuple[GatedUpstream, str]]:
    up = GatedUpstream(
        [chunk(t) for t in [*SENTENCE_1, " It"]],
        [
            *(chunk(t) for t in [" stars", " Brad", " Pitt", "."]),
            chunk(None, "stop"),
            b"data: [DONE]\n\n",
        ],
    )
    app = web.Application()
    app.router.add_post("/v1/chat/completions", up.handle)
    async with served(app) as url:
        try:
            yield up, url + "/v1"
        finally:
            up.gate.set()


async def test_a_claim_arrives_while_the_upstream_is_silent(gated: Any) -> None:
    up, base = gated
    seen: list[Any] = []
    async with asyncio.timeout(20):
        async with stream_chat(REQUEST, base_url=base, after=[LocalGrounding(facts=FACTS)]) as s:
            async for ev in s:
                seen.append(ev)
                if isinstance(ev, ClaimEvent) and not up.gate.is_set():
                    # The upstream sends nothing until we open the gate: this claim came
                    # from the check alone, not on the back of a token.
                    up.gate.set()
    types = [e.type for e in seen]
    first_claim = types.index("claim")
    assert types[:first_claim].count("token") == len(SENTENCE_1) + 1
    claims = [e for e in seen if isinstance(e, ClaimEvent)]
    assert [(c.text, c.supported) for c in claims] == [
        ("Titanic was directed by James Cameron.", True),
        ("It stars Brad Pitt.", False),
    ]
    assert types.index("grounding") > types.index("claim", first_claim + 1)
    answer = s.answer
    assert answer.claims == claims
    t = answer.timings
    assert t.first_claim_ms is not None and t.ttft_ms is not None
    assert t.ttft_ms < t.first_claim_ms <= (t.total_ms or 0)
    done = seen[-1]
    assert isinstance(done, DoneEvent)
    assert event_from_json(done.to_json()).answer.claims == claims  # type: ignore[union-attr]


async def test_a_slow_check_never_holds_a_token_back(
    gated: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    up, base = gated
    up.gate.set()
    release = threading.Event()
    threads: list[int] = []
    real = FactIndex.check

    def slow(self: FactIndex, text: str, *, heading: bool = False) -> Any:
        threads.append(threading.get_ident())
        release.wait(10)
        return real(self, text, heading=heading)

    monkeypatch.setattr(FactIndex, "check", slow)
    seen: list[str] = []
    async with asyncio.timeout(20):
        async with stream_chat(REQUEST, base_url=base, after=[LocalGrounding(facts=FACTS)]) as s:
            async for ev in s:
                seen.append(ev.type)
                if ev.type == "finish":
                    release.set()  # every token came while the first check was blocked
    assert seen.index("finish") < seen.index("claim")
    assert seen.count("token") == len(SENTENCE_1) + 5
    assert threads and threading.get_ident() not in threads  # never on the loop's thread


async def test_a_check_past_its_timeout_goes_out_unchecked(
    gated: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    up, base = gated
    up.gate.set()
    release = threading.Event()
    real = FactIndex.check

    def stuck(self: FactIndex, text: str, *, heading: bool = False) -> Any:
        release.wait(10)
        return real(self, text, heading=heading)

    monkeypatch.setattr(FactIndex, "check", stuck)
    grounding = LocalGrounding(facts=FACTS, claim_timeout=0.2)
    try:
        async with asyncio.timeout(20):
            async with stream_chat(REQUEST, base_url=base, after=[grounding]) as s:
                events = [e async for e in s]
    finally:
        release.set()
    claims = [e for e in events if isinstance(e, ClaimEvent)]
    errors = [e for e in events if isinstance(e, ErrorEvent) and e.code == "claim_timeout"]
    assert len(claims) == 2 and all(c.supported is None and c.score is None for c in claims)
    assert len(errors) == 2 and errors[0].stage == "grounding"


async def test_no_live_session_no_claim_stage(gated: Any) -> None:
    up, base = gated
    up.gate.set()
    async with stream_chat(
        REQUEST, base_url=base, after=[LocalGrounding(facts=FACTS, live_claims=False)]
    ) as s:
        events = [e async for e in s]
    types = [e.type for e in events]
    # The grounding event's claims are then delivered on the claim channel, before it.
    assert types[-4:] == ["claim", "claim", "grounding", "done"]
    assert "claim" not in types[:-4]
    assert all(e.checker == "local" for e in events if isinstance(e, ClaimEvent))


# ------------------------------------------------------------------ one claim channel


@pytest.fixture
async def backend() -> AsyncIterator[Any]:
    from streamcite.local import server

    async with server.LocalBackend(server.BackendConfig()) as b:
        yield b


async def test_google_claims_come_as_claim_events_before_the_grounding(backend: Any) -> None:
    from streamcite.enrich.google import GoogleGrounding

    google = GoogleGrounding(
        "projects/p/locations/global/groundingConfigs/default_grounding_config",
        token="local-token",
        endpoint=backend.root_url,
        retries=0,
        claim_level_scores=True,
    )
    request = {
        "model": "streamcite-local",
        "messages": [{"role": "user", "content": "How many days of remote work per week?"}],
        "stream": True,
    }
    headers = {"X-Streamcite-Fault": "hallucinate=1"}
    async with stream_chat(
        request, base_url=backend.base_url, headers=headers, after=[google]
    ) as s:
        events = [e async for e in s]
    grounding = next(e for e in events if isinstance(e, GroundingEvent))
    claims = [e for e in events if isinstance(e, ClaimEvent)]
    assert claims and all(c.checker == "google" for c in claims)
    assert events.index(claims[-1]) < events.index(grounding)
    assert len(claims) == len(grounding.claims)
    text = s.answer.text
    for c, g in zip(claims, grounding.claims, strict=True):
        assert text[c.start : c.end] == c.text
        assert g.claim_text in c.text or c.text.startswith(g.claim_text[:-1])
        assert c.supported == (g.supported if g.grounding_check_required else None)
    assert any(c.supported is False for c in claims)  # the injected hallucination
    supported = [c for c in claims if c.supported]
    assert supported and all(c.citation_indices for c in supported)
    assert s.answer.claims == claims


def test_memory_of_a_long_stream_stays_bounded() -> None:
    import tracemalloc

    session = LocalClaimSession(max_waiting=100, max_chars=10**7)  # no facts: they wait
    line = "Line number {} says something about the value {}.{} here.\n"
    tracemalloc.start()
    try:
        for i in range(200):  # warm up the regex caches and the splitter
            session.on_token(line.format(i, i, i))
        before, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        for i in range(200, 5200):
            session.on_token(line.format(i, i, i))
        after, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert session.dropped == 5199 - 100
    # 5,000 more sentences (300 KB of text) cost nothing more: the waiting ones are
    # capped and the lines already split are dropped.
    assert after - before < 16_000 and peak - before < 64_000


async def test_citations_that_arrive_early_check_each_sentence_as_it_ends() -> None:
    # A chat stream whose first chunk carries the citations (cited text, no spans): the
    # sentences are checked against them while the answer streams, not at the finish.
    citations = [{"cited_text": FACTS[0], "document_index": 0, "document_title": "Films"}]
    up = GatedUpstream(
        [chunk(SENTENCE_1[0], citations=citations), *(chunk(t) for t in [*SENTENCE_1[1:], " It"])],
        [
            *(chunk(t) for t in [" stars", " Brad", " Pitt", "."]),
            chunk(None, "stop"),
            b"data: [DONE]\n\n",
        ],
    )
    app = web.Application()
    app.router.add_post("/v1/chat/completions", up.handle)
    seen: list[Any] = []
    async with served(app) as url:
        try:
            async with (
                asyncio.timeout(20),
                stream_chat(REQUEST, base_url=url + "/v1", after=[LocalGrounding()]) as s,
            ):
                async for ev in s:
                    seen.append(ev)
                    if isinstance(ev, ClaimEvent):
                        up.gate.set()
        finally:
            up.gate.set()
    claims = [e for e in seen if isinstance(e, ClaimEvent)]
    assert [(c.supported, c.citation_indices) for c in claims] == [(True, [0]), (False, [])]
    # the first claim came while the upstream held the rest of the answer back
    assert seen.index(claims[0]) < [e.type for e in seen].index("finish")
    assert orjson.loads(claims[0].to_json())["citation_indices"] == [0]


class KeywordChecker:
    """A custom one-claim checker: supported when a fact shares its last word."""

    name = "keywords"

    def index(self, facts: Any, *, lang: str | None, sample: str) -> list[set[str]]:
        return [set(f.lower().replace(".", "").split()) for f in facts]

    def check(self, index: Any, text: str, *, heading: bool = False) -> Any:
        from streamcite.enrich.claims import ClaimScore

        last = text.lower().rstrip(".?!").split()[-1]
        hits = [(i, 1.0) for i, words in enumerate(index) if last in words]
        return ClaimScore(True, 1.0 if hits else 0.0, hits)


class KeywordEnricher:
    kind = "keywords"
    timeout = 5.0
    needs: tuple[str, ...] = ()

    def claim_session(self, request: Any) -> LocalClaimSession:
        return LocalClaimSession([GroundingFact(f) for f in FACTS], checker=KeywordChecker())

    async def enrich(self, ctx: Any) -> None:
        return None


async def test_a_custom_checker_scores_claims_live(gated: Any) -> None:
    from streamcite.enrich.claims import ClaimChecker, LiveClaims

    assert isinstance(KeywordChecker(), ClaimChecker) and isinstance(KeywordEnricher(), LiveClaims)
    up, base = gated
    up.gate.set()
    async with stream_chat(REQUEST, base_url=base, after=[KeywordEnricher()]) as s:
        events = [e async for e in s]
    claims = [e for e in events if isinstance(e, ClaimEvent)]
    assert [(c.checker, c.supported, c.score) for c in claims] == [
        ("keywords", True, 1.0),  # "cameron" is a word of fact 0
        ("keywords", False, 0.0),  # "pitt" is in no fact
    ]
