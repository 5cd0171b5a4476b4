"""Live claims fed by a hostile stream's citations: each passage is read once a stream
(every ``citations`` event carries the whole set), a new fact index is made only when
the facts changed, one stream's facts are read outside the process-wide engine lock,
and neither the event loop nor a concurrent benign stream waits for them
(docs/security.md, "Nested, oversized and flooding upstream events")."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest
from aiohttp import web

from streamcite.core.events import CitationsEvent, ErrorEvent
from streamcite.core.grounding import GroundingFact
from streamcite.core.models import Citation, CitationSpan
from streamcite.enrich import facts as enrich_facts
from streamcite.grounding import live, live_claims
from streamcite.grounding.checker import LocalGrounding
from streamcite.grounding.live_claims import LocalClaimSession
from streamcite.pipeline import stream_chat
from tests._cpu import loop_held
from tests._dialect_sse import sse
from tests._served import served
from tests._upstream import chunk

WORDS = [
    "river",
    "mountain",
    "castle",
    "bridge",
    "harbour",
    "engine",
    "library",
    "garden",
    "tower",
    "market",
]


def _passage(i: int, n: int) -> str:
    rnd = random.Random(i)
    out: list[str] = []
    while sum(map(len, out)) < n:
        out.append(" ".join(rnd.choice(WORDS) for _ in range(12)) + f" number {i}.")
    return " ".join(out)[:n]


class CountingChecker:
    """A one-claim checker that counts the indexes it is asked to make."""

    name = "counting"

    def __init__(self) -> None:
        self.indexes = 0

    def index(self, facts: Sequence[str], *, lang: str | None, sample: str) -> list[str]:
        self.indexes += 1
        return list(facts)

    def check(self, index: Any, text: str, *, heading: bool = False) -> Any:
        from streamcite.enrich.claims import ClaimScore

        return ClaimScore(True, 1.0, [(0, 1.0)] if index else [])


def test_each_passage_is_read_once_a_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = 0
    real = enrich_facts.fact_from

    def counted(item: Any, position: int | None = None) -> GroundingFact | None:
        nonlocal calls
        calls += 1
        return real(item, position)

    monkeypatch.setattr(enrich_facts, "fact_from", counted)
    monkeypatch.setattr(live_claims, "fact_from", counted, raising=False)
    s = LocalClaimSession(checker=CountingChecker())
    cits: list[Citation] = []
    for i in range(256):  # each event carries the whole set so far, as streams send it
        cits.append(Citation(cited_text=_passage(i, 400), document_index=i))
        s.on_citations(CitationsEvent(citations=list(cits)))
    assert calls <= 4 * 256, calls  # was 32,896: every passage re-read on every event


def test_a_new_index_only_when_the_facts_change() -> None:
    checker = CountingChecker()
    s = LocalClaimSession(checker=checker)
    cits = [Citation(cited_text=_passage(i, 400), document_index=i) for i in range(100)]
    for k in range(200):  # the same passages, spans growing (an Anthropic or Cohere stream)
        spans = [CitationSpan(0, j * 10, j * 10 + 5) for j in range(k + 1)]
        s.on_citations(CitationsEvent(citations=cits, spans=spans))
    assert checker.indexes == 1, checker.indexes  # was 200: one per event
    s.on_citations(CitationsEvent(citations=[*cits, Citation(cited_text="New passage here.")]))
    assert checker.indexes == 2


def test_facts_are_read_outside_the_engine_lock(monkeypatch: pytest.MonkeyPatch) -> None:
    locked: list[bool] = []
    real = live.Facts

    def spy(texts: Any, table: Any) -> Any:
        locked.append(live.ENGINE_LOCK.locked())
        return real(texts, table)

    monkeypatch.setattr(live, "Facts", spy)
    index = live.FactIndex([_passage(i, 2000) for i in range(20)], lang="en")
    index.check("The castle stands by the river.")
    index.check("The tower stands in the market.")
    assert locked == [False]  # read once, and not while holding every stream's checks


# ------------------------------------------------------------------ over loopback


def _hostile(blocks: int = 256, size: int = 40_000) -> list[bytes]:
    out = [sse({"type": "message_start", "message": {"id": "m", "model": "c"}}, "message_start")]
    for i in range(blocks):
        start = {"type": "content_block_start", "index": i, "content_block": {"type": "text"}}
        out.append(sse(start, "content_block_start"))
        cit = {
            "type": "char_location",
            "cited_text": _passage(i, size),
            "document_index": i,
            "document_title": f"D{i}",
            "start_char_index": 0,
            "end_char_index": size,
        }
        delta = {"type": "citations_delta", "citation": cit}
        out.append(
            sse({"type": "content_block_delta", "index": i, "delta": delta}, "content_block_delta")
        )
        text = {"type": "text_delta", "text": f"The castle {i} stands by the river. "}
        out.append(
            sse({"type": "content_block_delta", "index": i, "delta": text}, "content_block_delta")
        )
        out.append(sse({"type": "content_block_stop", "index": i}, "content_block_stop"))
    end = {
        "type": "message_delta",
        "delta": {"stop_reason": "end_turn"},
        "usage": {"output_tokens": 3},
    }
    out.append(sse(end, "message_delta"))
    out.append(sse({"type": "message_stop"}, "message_stop"))
    return out


FACTS = ["Titanic was directed by James Cameron and released in 1997."]
REQUEST = {"model": "m", "messages": [{"role": "user", "content": "Who made Titanic?"}]}
GUARD = 30.0
"""Seconds of the safety-net timeouts: far above any figure measured, never the thing tested."""
BENIGN = ["Titanic was directed by James Cameron. ", "It stars Brad Pitt. "] * 5


@pytest.fixture
async def upstream() -> AsyncIterator[str]:
    hostile = _hostile()

    async def messages(request: web.Request) -> web.StreamResponse:
        await request.read()
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        for part in hostile:
            await resp.write(part)
        return resp

    async def chat(request: web.Request) -> web.StreamResponse:
        await request.read()
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        for t in BENIGN:
            await resp.write(chunk(t))
        await resp.write(chunk(None, "stop"))
        await resp.write(b"data: [DONE]\n\n")
        return resp

    app = web.Application()
    app.router.add_post("/v1/messages", messages)
    app.router.add_post("/v1/chat/completions", chat)
    async with served(app) as url:
        yield url + "/v1"


async def test_a_hostile_streams_facts_stall_neither_the_loop_nor_a_benign_stream(
    upstream: str,
) -> None:
    """Measured in CPU time, not wall time (tests/_cpu.py): a loaded machine stretches
    every wall-clock figure, not the work done. ``held`` is the loop thread's own work
    between two of its turns; ``h_cpu``/``b_cpu`` are the process's CPU time (every
    thread) while each stream was open: a benign stream waiting behind the hostile one's
    fact reading would have that work in its window."""

    async def benign() -> tuple[float, list[Any]]:
        t = time.process_time()
        # The claim timeout is a safety net (the default 2 s is wall time, which a loaded
        # machine can exceed): the work the stream waited behind is measured instead.
        after = [LocalGrounding(facts=FACTS, claim_timeout=GUARD)]
        async with stream_chat(REQUEST, base_url=upstream, after=after) as s:
            events = [e async for e in s]
        return time.process_time() - t, events

    async def hostile() -> tuple[float, list[Any]]:
        t = time.process_time()
        grounding = LocalGrounding(claim_timeout=GUARD)
        async with stream_chat(REQUEST, base_url=upstream, api="anthropic", after=[grounding]) as s:
            events = [e async for e in s]
        return time.process_time() - t, events

    async with asyncio.timeout(4 * GUARD):
        await benign()  # the lexicon read, the connection pool warm
        async with loop_held() as held:
            (h_cpu, h_events), (b_cpu, b_events) = await asyncio.gather(hostile(), benign())
    assert sum(e.type == "claim" for e in h_events) == 256
    timeouts = [
        e for e in [*h_events, *b_events] if isinstance(e, ErrorEvent) and "timeout" in e.code
    ]
    assert not timeouts, timeouts
    assert sum(e.type == "claim" for e in b_events) == len(BENIGN)
    # Measured before (wall time, quiet machine): the hostile stream 7.1-7.5 s with
    # ~3.7 s of loop stall, the benign one 2.6-3.1 s (1.0 s alone) with claim timeouts.
    # Now (CPU): held ~5 ms (0.18 s with the checks run on the loop), the hostile stream
    # ~0.8 s, the benign one ~0.04 s.
    assert held.worst < 0.06, held.worst
    assert h_cpu < 4.0, h_cpu
    assert b_cpu < 1.5, b_cpu
