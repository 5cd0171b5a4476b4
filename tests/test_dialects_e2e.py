"""Every API end to end over the embedded backend (127.0.0.1): ``stream_chat(api=...)``
against the vendors' own SDKs on the same server, streamed against whole answers (a
hypothesis property per dialect), HTTP errors retried per policy and mid-stream errors,
and the ``--api`` of ``ask``, ``relay`` (WebSocket and ``/api/chat``) and ``bench``.

The SDKs are clients only: what they parse is the reference for what streamcite must
read from the same bytes (the same text, the same sources, the same anchored spans).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import anthropic
import cohere
import openai
import pytest
from google import genai
from google.genai import types as genai_types
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamcite import stream_chat
from streamcite.core.api import answer_from_response
from streamcite.core.events import ErrorEvent
from streamcite.core.models import CitedAnswer
from streamcite.local.corpus import load_corpus
from streamcite.local.server import LocalBackend
from streamcite.pipeline.apis import APIS, api_root, prepare_request
from streamcite.pipeline.bodies import chat_request_as

MODEL = "streamcite-local"
EN_Q = "How many days a week can I work from home?"
HE_Q = "כמה ימים בשבוע מותר לעבוד מהבית?"
"""Hebrew: UTF-8 bytes and characters differ (Gemini's offsets are bytes)."""
EMOJI_Q = (
    "Quel est l'émoji officiel de Kestrel Works, et que signalent l'étoile et la fusée "
    "dans les messages d'équipe ?"
)
"""Answered from tests/fixtures/corpus_nonascii with emoji before a cited sentence:
bytes, characters and UTF-16 units all differ."""
NONASCII_CORPUS = Path(__file__).parent / "fixtures" / "corpus_nonascii" / "corpus"
CASES = [("builtin", EN_Q), ("builtin", HE_Q), ("emoji", EMOJI_Q)]
QUESTIONS = [
    EN_Q,
    HE_Q,
    "Which security rules apply outside the office?",
    "Quali spese di trasferta sono rimborsate?",
    "Combien de jours de télétravail ?",
    "How many days of annual leave do I get?",
]
"""Questions the built-in corpus answers with citations (one cites two documents)."""
DIALECTS = [a for a in APIS if a != "chat"]


@pytest.fixture
async def backend() -> AsyncIterator[LocalBackend]:
    async with LocalBackend() as be:
        yield be


@pytest.fixture
async def backends(backend: LocalBackend) -> AsyncIterator[dict[str, LocalBackend]]:
    async with LocalBackend(corpus=load_corpus(NONASCII_CORPUS)) as emoji:
        yield {"builtin": backend, "emoji": emoji}


def request_for(api: str, question: str, *, stream: bool = True) -> dict[str, Any]:
    chat = {"model": MODEL, "stream": stream, "messages": [{"role": "user", "content": question}]}
    return chat_request_as(api, chat)


async def ours(backend: LocalBackend, api: str, question: str, **kw: Any) -> CitedAnswer:
    base_url = api_root(backend.root_url, api)
    async with stream_chat(request_for(api, question), base_url=base_url, api=api, **kw) as s:
        return await s.until_done()


def anchored(answer: CitedAnswer) -> list[tuple[str, str | None]]:
    """Each span's slice of the text and the URL of its citation; the UTF-16 offsets
    checked to slice the same text."""
    out = []
    js = answer.text.encode("utf-16-le")
    for sp in answer.citation_spans:
        assert sp.start is not None and sp.end is not None and sp.document_index is not None
        piece = answer.text[sp.start : sp.end]
        assert js[2 * sp.start_utf16 : 2 * sp.end_utf16].decode("utf-16-le") == piece
        out.append((piece, answer.citations[sp.document_index].source_url))
    return out


def units_differ(answer: CitedAnswer, corpus: str) -> None:
    """The emoji answer is what it claims: a span whose UTF-16 offsets are not its
    character offsets (so a client that mixes them up would be caught)."""
    if corpus == "emoji":
        assert any(sp.end_utf16 != sp.end for sp in answer.citation_spans)


def distinct(pairs: list[tuple[str | None, str | None]]) -> list[tuple[str | None, str | None]]:
    return list(dict.fromkeys(pairs))


def sources(answer: CitedAnswer) -> list[tuple[str | None, str | None]]:
    return [(c.source_url, c.document_title) for c in answer.citations]


# -- the same text and sources as each vendor's SDK -----------------------------------


@pytest.mark.parametrize(("corpus", "question"), CASES)
async def test_responses_like_the_openai_sdk(
    backends: dict[str, LocalBackend], corpus: str, question: str
) -> None:
    backend = backends[corpus]
    client = openai.AsyncOpenAI(base_url=backend.base_url, api_key="sk-local", max_retries=0)
    async with client.responses.stream(model=MODEL, input=question) as stream:
        final = await stream.get_final_response()
    notes = [a for item in final.output for part in item.content for a in part.annotations]  # type: ignore[union-attr]
    text = final.output_text
    answer = await ours(backend, "responses", question)
    units_differ(answer, corpus)
    assert answer.text == text and answer.complete and not answer.errors
    assert sources(answer) == distinct([(a.url, a.title) for a in notes])  # type: ignore[union-attr]
    assert anchored(answer) == [(text[a.start_index : a.end_index], a.url) for a in notes]  # type: ignore[union-attr]


@pytest.mark.parametrize(("corpus", "question"), CASES)
async def test_anthropic_like_the_anthropic_sdk(
    backends: dict[str, LocalBackend], corpus: str, question: str
) -> None:
    backend = backends[corpus]
    # the Anthropic SDK's base URL is the server root; streamcite's is the API root (…/v1)
    client = anthropic.AsyncAnthropic(base_url=backend.root_url, api_key="sk-local", max_retries=0)
    messages: Any = [{"role": "user", "content": question}]
    async with client.messages.stream(model=MODEL, max_tokens=1024, messages=messages) as stream:
        final = await stream.get_final_message()
    blocks = [b for b in final.content if b.type == "text"]
    text = "".join(b.text for b in blocks)
    cites = [(b.text, c) for b in blocks for c in b.citations or []]
    answer = await ours(backend, "anthropic", question)
    units_differ(answer, corpus)
    assert answer.text == text and answer.complete and not answer.errors
    assert sources(answer) == distinct([(c.source, c.title) for _, c in cites])  # type: ignore[union-attr]
    assert anchored(answer) == [(block, c.source) for block, c in cites]  # type: ignore[union-attr]


@pytest.mark.parametrize(("corpus", "question"), CASES)
async def test_gemini_like_google_genai(
    backends: dict[str, LocalBackend], corpus: str, question: str
) -> None:
    backend = backends[corpus]
    options = genai_types.HttpOptions(base_url=backend.root_url, api_version="v1beta")
    client = genai.Client(api_key="local-key", http_options=options)
    text, metadata = "", None
    async for chunk in await client.aio.models.generate_content_stream(
        model=MODEL, contents=question
    ):
        text += chunk.text or ""
        if chunk.candidates and chunk.candidates[0].grounding_metadata is not None:
            metadata = chunk.candidates[0].grounding_metadata
    assert metadata is not None
    docs = [c.retrieved_context or c.web for c in metadata.grounding_chunks or []]
    raw = text.encode("utf-8")
    want = []
    for s in metadata.grounding_supports or []:
        assert s.segment is not None and s.grounding_chunk_indices
        piece = raw[s.segment.start_index or 0 : s.segment.end_index].decode("utf-8")  # bytes
        for i in s.grounding_chunk_indices:
            want.append((piece, docs[i].uri))  # type: ignore[union-attr]
    answer = await ours(backend, "gemini", question)
    units_differ(answer, corpus)
    assert answer.text == text and answer.complete and not answer.errors
    assert sources(answer) == distinct([(d.uri, d.title) for d in docs])  # type: ignore[union-attr]
    assert anchored(answer) == want


@pytest.mark.parametrize(("corpus", "question"), CASES)
async def test_cohere_like_the_cohere_sdk(
    backends: dict[str, LocalBackend], corpus: str, question: str
) -> None:
    backend = backends[corpus]
    client = cohere.AsyncClientV2(base_url=backend.root_url, api_key="local-key")
    messages: Any = [{"role": "user", "content": question}]
    text, cites = "", []
    async for event in client.chat_stream(model=MODEL, messages=messages):
        if event.type == "content-delta":
            text += event.delta.message.content.text  # type: ignore[union-attr]
        elif event.type == "citation-start":
            cites.append(event.delta.message.citations)  # type: ignore[union-attr]
    docs = [(c, s.document) for c in cites for s in c.sources]
    answer = await ours(backend, "cohere", question)
    units_differ(answer, corpus)
    assert answer.text == text and answer.complete and not answer.errors
    assert sources(answer) == distinct([(d["url"], d["title"]) for _, d in docs])
    assert anchored(answer) == [(text[c.start : c.end], d["url"]) for c, d in docs]


# -- streamed and whole answers carry the same text and citations -----------------------


async def whole(backend: LocalBackend, api: str, question: str) -> bytes:
    """The API's non-streaming JSON body of the answer."""
    req = prepare_request(
        api, request_for(api, question, stream=False), base_url=api_root(backend.root_url, api)
    )
    async with (
        aiohttp.ClientSession() as session,
        session.post(req.url, data=req.body, headers=req.headers) as resp,
    ):
        assert resp.status == 200 and resp.content_type == "application/json"
        return await resp.read()


@pytest.mark.parametrize("api", APIS)
@settings(
    max_examples=8,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(question=st.sampled_from(QUESTIONS))
async def test_streamed_and_whole_answers_agree(
    backend: LocalBackend, api: str, question: str
) -> None:
    streamed = await ours(backend, api, question)
    raw = await whole(backend, api, question)
    body = answer_from_response(raw, dialect=api)
    assert streamed.text == body.text and streamed.text
    assert streamed.citations == body.citations and streamed.citations
    assert streamed.citation_spans == body.citation_spans
    assert (streamed.finish_reason, body.finish_reason) == ("stop", "stop")
    auto = answer_from_response(raw)  # the body's keys tell its API
    assert (auto.text, auto.citations) == (body.text, body.citations)


@pytest.mark.parametrize("api", APIS)
async def test_a_non_streaming_request_through_stream_chat(backend: LocalBackend, api: str) -> None:
    """``"stream": false`` (Gemini: ``:generateContent``) gives a JSON body; the pipeline
    reads it with the same dialect into the streamed answer's text and citations."""
    streamed = await ours(backend, api, EN_Q)
    base_url = api_root(backend.root_url, api)
    request = request_for(api, EN_Q, stream=False)
    async with stream_chat(request, base_url=base_url, api=api) as s:
        kinds = [e.type async for e in s]
        answer = s.answer
    assert answer.text == streamed.text and answer.complete and not answer.errors
    assert answer.citations == streamed.citations
    assert answer.citation_spans == streamed.citation_spans
    assert kinds[-1] == "done" and "token" in kinds and "citations" in kinds


# -- errors: retried per policy before any byte, typed mid-stream -------------------------

STATUS = {"chat": 429, "responses": 429, "anthropic": 529, "gemini": 429, "cohere": 429}


@pytest.mark.parametrize("api", APIS)
async def test_retryable_status_retried_then_reported(
    backend: LocalBackend, api: str, captured_logs: Any
) -> None:
    fault = {"X-Streamcite-Fault": f"status={STATUS[api]};retry_after=0"}
    answer = await ours(backend, api, EN_Q, headers=fault, retries=2)
    (err,) = answer.errors
    assert isinstance(err, ErrorEvent)
    assert (err.status, err.retryable, err.stage) == (STATUS[api], True, "http")
    assert err.code == ("upstream_unavailable" if api == "anthropic" else "rate_limited")
    retried = [e for e in captured_logs if e.get("event") == "stream.retry"]
    assert len(retried) == 2 and not answer.text
    if api == "anthropic":
        assert "overloaded_error" in err.message
    if api == "gemini":
        assert "RESOURCE_EXHAUSTED" in err.message


@pytest.mark.parametrize("api", APIS)
async def test_an_error_mid_stream_is_an_error_event(backend: LocalBackend, api: str) -> None:
    full = await ours(backend, api, EN_Q)
    cut = await ours(backend, api, EN_Q, headers={"X-Streamcite-Fault": "error_at=3"}, retries=2)
    assert cut.errors and not cut.complete
    assert all(e.stage != "http" for e in cut.errors)  # from the stream, never retried
    assert full.text.startswith(cut.text) and len(cut.text) < len(full.text)
