"""Five APIs, one answer: the same questions asked of the embedded backend through chat,
Responses, Anthropic, Gemini and Cohere tell the user the same thing — the same text
(footnote markers aside), every passage each API sent kept, and the same grounding
verdict for each sentence.

English: the backend cites one document twice for it (two sentences of the Remote Work
Policy, each quoted on its own by Anthropic); French; Hebrew (bytes, characters and
UTF-16 units differ). Real components: ``serve-local`` on 127.0.0.1, ``stream_chat``,
the offline checker; the raw bytes each API sent are read again independently
(:mod:`tests._passages`).
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from streamcite import stream_chat
from streamcite.core.events import ClaimEvent, DoneEvent, Event, GroundingEvent
from streamcite.core.grounding import NO_FACTS_REASON
from streamcite.core.models import CitedAnswer
from streamcite.enrich.wikit import WikitSources
from streamcite.grounding.checker import LocalGrounding
from streamcite.local.server import LocalBackend
from streamcite.pipeline.apis import APIS, api_root, prepare_request
from streamcite.pipeline.bodies import chat_request_as
from streamcite.pipeline.timeouts import Timeouts
from tests._passages import answer_passages_of, passages_sent

MODEL = "streamcite-local"
EN_TWICE = "How many days a week can I work from home?"
"""Answered with two sentences of one passage, both footnoted [1]."""
FR = "Combien de jours de télétravail ?"
HE = "כמה ימים בשבוע מותר לעבוד מהבית?"
QUESTIONS = [EN_TWICE, FR, HE]
QUOTING = [a for a in APIS if a != "responses"]
"""The APIs whose citations quote the passage (Responses' ``url_citation`` does not)."""
TIMEOUTS = Timeouts(connect=10.0, first_token=30.0, idle=30.0, total=60.0)
_MARKER = re.compile(r"\s*\[\d+\]")


@pytest.fixture
async def backend() -> AsyncIterator[LocalBackend]:
    async with LocalBackend() as be:
        yield be


def _request(api: str, question: str) -> dict[str, Any]:
    chat = {"model": MODEL, "stream": True, "messages": [{"role": "user", "content": question}]}
    return chat_request_as(api, chat)


async def _raw(backend: LocalBackend, api: str, question: str) -> bytes:
    """The bytes the API sends for the question (read apart from streamcite)."""
    req = prepare_request(api, _request(api, question), base_url=api_root(backend.root_url, api))
    async with (
        aiohttp.ClientSession() as session,
        session.post(req.url, data=req.body, headers=req.headers) as resp,
    ):
        assert resp.status == 200
        return await resp.read()


async def _ask(
    backend: LocalBackend, api: str, question: str, after: list[Any]
) -> tuple[CitedAnswer, list[Event]]:
    async with stream_chat(
        _request(api, question),
        base_url=api_root(backend.root_url, api),
        api=api,
        after=after,
        timeouts=TIMEOUTS,
    ) as s:
        events = [e async for e in s]
    done = events[-1]
    assert isinstance(done, DoneEvent)
    return done.answer, events


def _verdicts(events: list[Event]) -> list[tuple[str, bool | None]]:
    """Each checked sentence (markers aside) and whether it is supported."""
    (g,) = [e for e in events if isinstance(e, GroundingEvent)]
    return [
        (_MARKER.sub("", c.claim_text).strip(), c.supported)
        for c in g.claims
        if c.grounding_check_required is not False
    ]


def _live(events: list[Event]) -> list[tuple[str, bool | None]]:
    claims = sorted((e for e in events if isinstance(e, ClaimEvent)), key=lambda e: e.start)
    return [(_MARKER.sub("", c.text).strip(), c.supported) for c in claims]


@pytest.mark.parametrize("question", QUESTIONS)
async def test_same_text_passages_and_verdicts_from_the_passages(
    backend: LocalBackend, question: str
) -> None:
    texts: dict[str, str] = {}
    verdicts: dict[str, list[tuple[str, bool | None]]] = {}
    live: dict[str, list[tuple[str, bool | None]]] = {}
    for api in APIS:
        answer, events = await _ask(backend, api, question, [LocalGrounding()])
        assert answer.complete and not answer.errors, (api, answer.errors)
        texts[api] = _MARKER.sub("", answer.text)
        # Every passage the API sent is in the answer (citations' or spans').
        sent = passages_sent(await _raw(backend, api, question), api)
        assert sent <= answer_passages_of(answer), (api, sent - answer_passages_of(answer))
        if api in QUOTING:
            assert sent, f"{api} quoted nothing"
        verdicts[api] = _verdicts(events)
        live[api] = _live(events)
    assert len(set(texts.values())) == 1, texts
    # The APIs that quote their passages: one verdict per sentence, the same, all true.
    first = verdicts[QUOTING[0]]
    assert first and all(ok for _, ok in first), first
    for api in QUOTING:
        assert verdicts[api] == first, api
        assert live[api] == first, api
    # Responses quotes nothing: no verdict (not "unsupported"), and it says why.
    answer, events = await _ask(backend, "responses", question, [LocalGrounding()])
    (g,) = [e for e in events if isinstance(e, GroundingEvent)]
    assert g.support_score is None and g.reason == NO_FACTS_REASON and not g.unsupported_claims
    assert live["responses"] and all(ok is None for _, ok in live["responses"])


async def test_one_document_cited_twice_keeps_both_quotes(backend: LocalBackend) -> None:
    answer, _ = await _ask(backend, "anthropic", EN_TWICE, [])
    assert len(answer.citations) == 1  # one source...
    quotes = [s.cited_text for s in answer.citation_spans]
    assert len(quotes) == 2 and len(set(quotes)) == 2  # ...two passages, one per sentence
    for span, quote in zip(answer.citation_spans, quotes, strict=True):
        assert quote is not None
        said = _MARKER.sub("", answer.text[span.start : span.end]).strip()
        assert said == quote  # the backend quotes the sentence as the passage says it


@pytest.mark.parametrize("question", QUESTIONS)
async def test_with_wikit_sources_all_five_agree(backend: LocalBackend, question: str) -> None:
    """With the Wikit quoted sources as facts too, every API gets a verdict, the same."""
    root = backend.root_url
    verdicts = {}
    for api in APIS:
        sources = WikitSources("streamcite-demo", "streamcite-local", base_url=root)
        after = [sources, LocalGrounding(facts_from="both")]
        _, events = await _ask(backend, api, question, after)
        verdicts[api] = _verdicts(events)
    first = verdicts["chat"]
    assert first and all(ok for _, ok in first), first
    assert all(v == first for v in verdicts.values()), verdicts
