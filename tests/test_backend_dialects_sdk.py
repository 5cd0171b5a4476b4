"""The vendors' own SDKs, unchanged, as clients of the embedded backend on 127.0.0.1.

Each of ``openai`` (Responses), ``anthropic`` (Messages), ``google-genai`` (Gemini) and
``cohere`` (v2 chat) must read the backend's answer, streamed and whole, with its
citations in the SDK's own typed objects, and the citation spans must slice the text
exactly in the SDK's own units: characters (Responses, Cohere), the text block
(Anthropic), UTF-8 bytes (Gemini). The answers include a Hebrew one (bytes differ from
characters) and one with emoji after the first citation (bytes, characters and UTF-16
all differ), from ``tests/fixtures/corpus_nonascii``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anthropic
import cohere
import openai
import orjson
import pytest
from google import genai
from google.genai import types as genai_types

from streamcite.local.corpus import load_corpus
from streamcite.local.server import LocalBackend
from streamcite.local.state import STATE

NONASCII_CORPUS = Path(__file__).parent / "fixtures" / "corpus_nonascii" / "corpus"
EN_Q = "How many days a week can I work from home?"
HE_Q = "כמה ימים בשבוע מותר לעבוד מהבית?"
EMOJI_Q = (
    "Quel est l'émoji officiel de Kestrel Works, et que signalent l'étoile et la fusée "
    "dans les messages d'équipe ?"
)
CASES = [("builtin", EN_Q), ("builtin", HE_Q), ("nonascii", EMOJI_Q)]
MODEL = "streamcite-local"


@dataclass(frozen=True)
class Span:
    """A cited sentence as the backend's answerer wrote it (character offsets)."""

    start: int
    end: int
    url: str
    title: str
    quote: str


@dataclass(frozen=True)
class Expected:
    text: str
    spans: list[Span]


@pytest.fixture
async def backends() -> AsyncIterator[dict[str, LocalBackend]]:
    async with (
        LocalBackend() as builtin,
        LocalBackend(corpus=load_corpus(NONASCII_CORPUS)) as nonascii,
    ):
        yield {"builtin": builtin, "nonascii": nonascii}


def expected(backend: LocalBackend, question: str) -> Expected:
    """What every API must carry: the answerer's text and cited sentences."""
    answer = backend.app[STATE].answer(question)
    citations = answer.citations(backend.root_url)
    spans = [
        Span(
            s.answer_start,
            s.answer_end,
            citations[s.number - 1]["source_url"],
            citations[s.number - 1]["document_title"],
            s.text,
        )
        for s in answer.sentences
    ]
    assert spans, "the question must get a cited answer"
    return Expected(answer.text, spans)


def test_the_emoji_answer_has_three_different_units() -> None:
    """The non-ASCII case is what it claims: a span after a character outside the BMP."""
    from streamcite.local.answerer import Answerer

    answer = Answerer(load_corpus(NONASCII_CORPUS)).answer(EMOJI_Q)
    second = answer.sentences[1].answer_start
    prefix = answer.text[:second]
    assert len(prefix) < len(prefix.encode("utf-16-le")) // 2 < len(prefix.encode("utf-8"))


# --- OpenAI Responses --------------------------------------------------------------


def _openai(backend: LocalBackend) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=backend.base_url, api_key="sk-local", max_retries=0)


def _responses_spans(resp: Any) -> list[tuple[int, int, str, str]]:
    (item,) = resp.output
    (part,) = item.content
    return [(a.start_index, a.end_index, a.url, a.title) for a in part.annotations]


@pytest.mark.parametrize(("corpus", "question"), CASES)
async def test_openai_responses_stream_and_create(
    backends: dict[str, LocalBackend], corpus: str, question: str
) -> None:
    backend = backends[corpus]
    want = expected(backend, question)
    client = _openai(backend)
    live: list[tuple[str, Any]] = []
    async with client.responses.stream(model=MODEL, input=question) as stream:
        async for event in stream:
            live.append((event.type, event))
        streamed = await stream.get_final_response()
    text = streamed.output_text
    assert text == want.text
    spans = _responses_spans(streamed)
    assert spans == [(s.start, s.end, s.url, s.title) for s in want.spans]
    for start, end, _, _ in spans:  # character offsets: Python slices them
        assert text[start:end] in {text[s.start : s.end] for s in want.spans}
    # Each annotation arrived as soon as its sentence was complete, before the end.
    kinds = [k for k, _ in live]
    added = [e.annotation for k, e in live if k == "response.output_text.annotation.added"]
    assert [(a.start_index, a.end_index) for a in added] == [(s[0], s[1]) for s in spans]
    if len(spans) > 1:
        first_note = kinds.index("response.output_text.annotation.added")
        assert first_note < max(i for i, k in enumerate(kinds) if k == "response.output_text.delta")
    assert [e.sequence_number for _, e in live] == list(range(len(live)))
    assert streamed.usage is not None and streamed.usage.output_tokens > 0
    assert streamed.model == MODEL and streamed.id.startswith("resp_")

    whole = await client.responses.create(model=MODEL, input=question)
    assert whole.output_text == text
    assert _responses_spans(whole) == spans
    assert whole.status == "completed"


async def test_openai_responses_with_input_items_and_max_tokens(
    backends: dict[str, LocalBackend],
) -> None:
    backend = backends["builtin"]
    want = expected(backend, EN_Q)
    client = _openai(backend)
    items: Any = [{"role": "user", "content": [{"type": "input_text", "text": EN_Q}]}]
    cut = await client.responses.create(model=MODEL, input=items, max_output_tokens=16)
    assert cut.status == "incomplete"
    assert cut.incomplete_details is not None
    assert cut.incomplete_details.reason == "max_output_tokens"
    assert want.text.startswith(cut.output_text) and cut.output_text != want.text
    assert all(end <= len(cut.output_text) for _, end, _, _ in _responses_spans(cut))


# --- Anthropic Messages ------------------------------------------------------------


def _anthropic(backend: LocalBackend) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(base_url=backend.root_url, api_key="sk-local", max_retries=0)


def _blocks(message: Any) -> list[tuple[str, list[tuple[str, str, str, int]]]]:
    return [
        (
            b.text,
            [(c.cited_text, c.source, c.title, c.search_result_index) for c in b.citations or []],
        )
        for b in message.content
    ]


@pytest.mark.parametrize(("corpus", "question"), CASES)
async def test_anthropic_messages_stream_and_create(
    backends: dict[str, LocalBackend], corpus: str, question: str
) -> None:
    backend = backends[corpus]
    want = expected(backend, question)
    client = _anthropic(backend)
    request: dict[str, Any] = {
        "model": MODEL,
        "max_tokens": 1024,
        "messages": [{"role": "user", "content": question}],
    }
    deltas: list[str] = []
    async with client.messages.stream(**request) as stream:
        async for event in stream:
            if event.type == "content_block_delta":
                deltas.append(event.delta.type)
        streamed = await stream.get_final_message()
    blocks = _blocks(streamed)
    assert "".join(text for text, _ in blocks) == want.text
    # The cited span is the block: each cited block is exactly one cited sentence.
    cited = [(text, cites) for text, cites in blocks if cites]
    assert [text for text, _ in cited] == [want.text[s.start : s.end] for s in want.spans]
    assert [cites for _, cites in cited] == [
        [(s.quote, s.url, s.title, _index(want, s))] for s in want.spans
    ]
    assert all(
        c.type == "search_result_location" for b in streamed.content for c in b.citations or []
    )
    assert deltas.count("citations_delta") == len(want.spans)
    assert deltas.index("citations_delta") < len(deltas) - 1  # live, not at the end
    assert streamed.stop_reason == "end_turn"
    assert streamed.usage.output_tokens > 0 and streamed.model == MODEL

    whole = await client.messages.create(**request)
    assert _blocks(whole) == blocks
    assert whole.stop_reason == "end_turn"


def _index(want: Expected, span: Span) -> int:
    """The footnote - 1 of ``span``: the position of its URL among the distinct URLs."""
    urls = list(dict.fromkeys(s.url for s in want.spans))
    return urls.index(span.url)


async def test_anthropic_max_tokens(backends: dict[str, LocalBackend]) -> None:
    client = _anthropic(backends["builtin"])
    message = await client.messages.create(
        model=MODEL, max_tokens=5, messages=[{"role": "user", "content": EN_Q}]
    )
    assert message.stop_reason == "max_tokens"
    assert all(not b.citations for b in message.content)  # no sentence was completed


# --- Gemini ------------------------------------------------------------------------


def _genai(backend: LocalBackend, version: str | None = None) -> genai.Client:
    options = genai_types.HttpOptions(base_url=backend.root_url, api_version=version)
    return genai.Client(api_key="local-key", http_options=options)


def _supports(metadata: Any) -> list[tuple[int, int, str, list[int]]]:
    return [
        (
            s.segment.start_index or 0,  # Gemini leaves a start of 0 out
            s.segment.end_index,
            s.segment.text,
            list(s.grounding_chunk_indices),
        )
        for s in metadata.grounding_supports
    ]


@pytest.mark.parametrize("version", [None, "v1beta"])
@pytest.mark.parametrize(("corpus", "question"), CASES)
async def test_gemini_generate_content_stream_and_whole(
    backends: dict[str, LocalBackend], corpus: str, question: str, version: str | None
) -> None:
    backend = backends[corpus]
    want = expected(backend, question)
    client = _genai(backend, version)
    text = ""
    metadata = None
    finish = None
    async for chunk in await client.aio.models.generate_content_stream(
        model=MODEL, contents=question
    ):
        text += chunk.text or ""
        candidate = chunk.candidates[0] if chunk.candidates else None
        if candidate is not None and candidate.grounding_metadata is not None:
            metadata = candidate.grounding_metadata
            finish = candidate.finish_reason
    assert text == want.text
    assert metadata is not None and finish == genai_types.FinishReason.STOP
    raw = text.encode("utf-8")
    supports = _supports(metadata)
    assert len(supports) == len(want.spans)
    for (start, end, seg_text, indices), span in zip(supports, want.spans, strict=True):
        # UTF-8 byte offsets: they slice the encoded text, not the str.
        assert raw[start:end].decode("utf-8") == seg_text == text[span.start : span.end]
        chunk_ = metadata.grounding_chunks[indices[0]].retrieved_context
        assert (chunk_.uri, chunk_.title) == (span.url, span.title)
    if corpus == "nonascii":
        assert supports[1][0] > want.spans[1].start  # bytes, not characters

    whole = await client.aio.models.generate_content(model=MODEL, contents=question)
    assert whole.text == text
    assert whole.candidates is not None
    assert _supports(whole.candidates[0].grounding_metadata) == supports
    assert whole.usage_metadata is not None and whole.usage_metadata.candidates_token_count


# --- Cohere v2 ---------------------------------------------------------------------


def _cohere(backend: LocalBackend) -> cohere.AsyncClientV2:
    return cohere.AsyncClientV2(base_url=backend.root_url, api_key="local-key")


def _cohere_cites(citations: Any) -> list[tuple[int, int, str, str, str]]:
    out = []
    for c in citations:
        (source,) = c.sources
        out.append((c.start, c.end, c.text, source.document["url"], source.document["title"]))
    return out


@pytest.mark.parametrize(("corpus", "question"), CASES)
async def test_cohere_chat_stream_and_chat(
    backends: dict[str, LocalBackend],
    corpus: str,
    question: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    backend = backends[corpus]
    want = expected(backend, question)
    client = _cohere(backend)
    messages: Any = [{"role": "user", "content": question}]
    text = ""
    citations = []
    kinds: list[str] = []
    finish = None
    async for event in client.chat_stream(model=MODEL, messages=messages):
        kinds.append(event.type)
        if event.type == "content-delta":
            text += event.delta.message.content.text
        elif event.type == "citation-start":
            citations.append(event.delta.message.citations)
        elif event.type == "message-end":
            finish = event.delta.finish_reason
    assert text == want.text
    cites = _cohere_cites(citations)
    assert cites == [(s.start, s.end, text[s.start : s.end], s.url, s.title) for s in want.spans]
    if len(cites) > 1:  # the first citation arrived before the text ended
        assert kinds.index("citation-start") < max(
            i for i, k in enumerate(kinds) if k == "content-delta"
        )
    assert finish == "COMPLETE"
    # The SDK skips an event it cannot validate with only a logged warning: none here.
    assert "Skipping SSE event" not in caplog.text

    whole = await client.chat(model=MODEL, messages=messages)
    assert whole.message.content is not None
    assert whole.message.content[0].text == text
    assert _cohere_cites(whole.message.citations) == cites
    assert whole.finish_reason == "COMPLETE"
    assert whole.usage is not None and whole.usage.tokens is not None
    assert whole.usage.tokens.output_tokens


# --- streamed and whole agree, over the retrieval question set ---------------------

QUESTIONS = [
    orjson.loads(line)["question"]
    for line in (Path(__file__).parent / "data" / "retrieval_eval.jsonl").read_bytes().splitlines()
    if line.strip()
][::6]


async def _responses_pair(backend: LocalBackend, q: str) -> tuple[Any, Any]:
    client = _openai(backend)
    async with client.responses.stream(model=MODEL, input=q) as stream:
        streamed = await stream.get_final_response()
    whole = await client.responses.create(model=MODEL, input=q)
    return (
        (streamed.output_text, _responses_spans(streamed)),
        (whole.output_text, _responses_spans(whole)),
    )


async def _anthropic_pair(backend: LocalBackend, q: str) -> tuple[Any, Any]:
    client = _anthropic(backend)
    request: dict[str, Any] = {
        "model": MODEL,
        "max_tokens": 4096,
        "messages": [{"role": "user", "content": q}],
    }
    async with client.messages.stream(**request) as stream:
        streamed = await stream.get_final_message()
    return _blocks(streamed), _blocks(await client.messages.create(**request))


async def _gemini_pair(backend: LocalBackend, q: str) -> tuple[Any, Any]:
    client = _genai(backend)
    text, supports = "", []
    async for chunk in await client.aio.models.generate_content_stream(model=MODEL, contents=q):
        text += chunk.text or ""
        if chunk.candidates and chunk.candidates[0].grounding_metadata is not None:
            supports = _supports(chunk.candidates[0].grounding_metadata)
    whole = await client.aio.models.generate_content(model=MODEL, contents=q)
    assert whole.candidates is not None
    return (text, supports), (whole.text or "", _supports(whole.candidates[0].grounding_metadata))


async def _cohere_pair(backend: LocalBackend, q: str) -> tuple[Any, Any]:
    client = _cohere(backend)
    messages: Any = [{"role": "user", "content": q}]
    text, cites = "", []
    async for event in client.chat_stream(model=MODEL, messages=messages):
        if event.type == "content-delta":
            text += event.delta.message.content.text
        elif event.type == "citation-start":
            cites.append(event.delta.message.citations)
    whole = await client.chat(model=MODEL, messages=messages)
    assert whole.message.content is not None
    return (
        (text, _cohere_cites(cites)),
        (whole.message.content[0].text, _cohere_cites(whole.message.citations or [])),
    )


PAIRS = {
    "responses": _responses_pair,
    "anthropic": _anthropic_pair,
    "gemini": _gemini_pair,
    "cohere": _cohere_pair,
}


@pytest.mark.parametrize("api", list(PAIRS))
async def test_streamed_and_whole_agree_over_the_question_set(
    backends: dict[str, LocalBackend], api: str
) -> None:
    backend = backends["builtin"]
    cited = 0
    for q in QUESTIONS:
        streamed, whole = await PAIRS[api](backend, q)
        assert streamed == whole, q
        answer = backend.app[STATE].answer(q)
        cited += bool(answer.sentences)
    assert cited >= len(QUESTIONS) // 2  # most of them are cited answers
