"""Every passage in, every passage out: whatever a provider quotes (Anthropic
``cited_text``, a Cohere source's text, a Gemini grounding chunk's text, a chat
citation's ``cited_text``) is in the answer — on a citation or on a span — however
many times one source is cited. Over the real recordings (``/work/shared/dialects``,
skipped where absent), over the embedded backend's answers in every API (streamed and
whole), and over generated streams per dialect (one source cited many times)."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamcite import iter_events
from streamcite.core.api import answer_from_response
from streamcite.core.citations import answer_passages
from streamcite.core.events import DoneEvent
from streamcite.core.models import CitedAnswer
from streamcite.local.server import LocalBackend
from streamcite.pipeline.apis import APIS
from tests._passages import answer_passages_of, passages_sent
from tests.test_dialects_e2e import QUESTIONS, ours, whole

SHARED = Path(os.environ.get("STREAMCITE_DIALECT_RECORDINGS", "/work/shared/dialects/fixtures"))
RECORDINGS = [
    p
    for d in (SHARED, SHARED.parent / "holdout")
    if d.is_dir()
    for p in sorted(d.iterdir())
    if p.suffix in (".sse", ".json")
]


def _answer(raw: bytes, dialect: str, *, whole_body: bool) -> CitedAnswer:
    if whole_body:
        return answer_from_response(orjson.loads(raw), dialect=dialect)
    done = list(iter_events([raw], dialect=dialect))[-1]
    assert isinstance(done, DoneEvent)
    return done.answer


def _kept(raw: bytes, dialect: str, answer: CitedAnswer) -> None:
    sent = passages_sent(raw, dialect)
    kept = answer_passages_of(answer)
    assert sent <= kept, sorted(sent - kept)[:3]
    # ... and the facts a check uses are exactly those passages, each once.
    facts = [c.cited_text for _, c in answer_passages(answer.citations, answer.citation_spans)]
    assert len(facts) == len(set(facts)) and set(facts) == kept


@pytest.mark.skipif(not RECORDINGS, reason="recordings not on this machine")
@pytest.mark.parametrize("path", RECORDINGS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_recorded_passage_is_kept(path: Path) -> None:
    dialect = path.name.split("__")[0]
    raw = path.read_bytes()
    _kept(raw, dialect, _answer(raw, dialect, whole_body=path.suffix == ".json"))


@pytest.fixture
async def backend() -> AsyncIterator[LocalBackend]:
    async with LocalBackend() as be:
        yield be


@pytest.mark.parametrize("api", APIS)
async def test_every_passage_of_the_backend_is_kept(backend: LocalBackend, api: str) -> None:
    for question in QUESTIONS:
        raw = await whole(backend, api, question)
        _kept(raw, api, answer_from_response(orjson.loads(raw), dialect=api))
        streamed = await ours(backend, api, question)
        body = answer_from_response(orjson.loads(raw), dialect=api)
        assert answer_passages_of(streamed) == answer_passages_of(body)
        # a streamed and a whole answer carry the same spans, passages included
        assert streamed.citation_spans == body.citation_spans


# -- generated: one source cited many times, each time with its own passage ------------

_PASSAGES = st.lists(
    st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=12)
    .map(str.strip)
    .filter(bool),
    min_size=1,
    max_size=6,
)


def _sse(events: list[tuple[str, dict[str, Any]]]) -> bytes:
    return b"".join(
        b"event: %s\ndata: %s\n\n" % (name.encode(), orjson.dumps(obj)) for name, obj in events
    )


def _anthropic(passages: list[str]) -> bytes:
    ev: list[tuple[str, dict[str, Any]]] = [
        ("message_start", {"type": "message_start", "message": {"id": "m", "model": "c"}})
    ]
    for i, p in enumerate(passages):
        cit = {"type": "search_result_location", "cited_text": p, "source": "https://x/doc",
               "title": "Doc", "search_result_index": 0, "start_block_index": i,
               "end_block_index": i}  # fmt: skip
        ev += [
            ("content_block_start", {"type": "content_block_start", "index": i,
                                     "content_block": {"type": "text", "text": "", "citations": []}}),
            ("content_block_delta", {"type": "content_block_delta", "index": i,
                                     "delta": {"type": "citations_delta", "citation": cit}}),
            ("content_block_delta", {"type": "content_block_delta", "index": i,
                                     "delta": {"type": "text_delta", "text": f"Claim {i}. "}}),
            ("content_block_stop", {"type": "content_block_stop", "index": i}),
        ]  # fmt: skip
    ev += [
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                           "usage": {"output_tokens": 3}}),
        ("message_stop", {"type": "message_stop"}),
    ]  # fmt: skip
    return _sse(ev)


def _cohere(passages: list[str]) -> bytes:
    text = "".join(f"Claim {i}. " for i in range(len(passages)))
    ev: list[tuple[str, dict[str, Any]]] = [
        ("message-start", {"type": "message-start", "id": "c", "delta": {"message": {}}}),
        ("content-start", {"type": "content-start", "index": 0,
                           "delta": {"message": {"content": {"type": "text", "text": ""}}}}),
        ("content-delta", {"type": "content-delta", "index": 0,
                           "delta": {"message": {"content": {"text": text}}}}),
    ]  # fmt: skip
    for i, p in enumerate(passages):
        src = {
            "type": "document",
            "id": f"doc_{i}",
            "document": {"id": f"doc_{i}", "title": "Doc", "url": "https://x/doc", "text": p},
        }
        cit = {
            "start": 9 * i,
            "end": 9 * i + 8,
            "text": f"Claim {i}.",
            "sources": [src],
            "type": "TEXT_CONTENT",
            "content_index": 0,
        }
        ev.append(("citation-start", {"type": "citation-start", "index": i,
                                      "delta": {"message": {"citations": cit}}}))  # fmt: skip
    ev.append(("message-end", {"type": "message-end", "delta": {"finish_reason": "COMPLETE"}}))
    return _sse(ev)


def _gemini(passages: list[str]) -> bytes:
    text = "".join(f"Claim {i}. " for i in range(len(passages)))
    chunks = [{"retrievedContext": {"uri": "https://x/doc", "title": "Doc", "text": p}}
              for p in passages]  # fmt: skip
    supports = [
        {"segment": {"startIndex": 9 * i, "endIndex": 9 * i + 8}, "groundingChunkIndices": [i]}
        for i in range(len(passages))
    ]
    body = {
        "candidates": [
            {
                "content": {"role": "model", "parts": [{"text": text}]},
                "finishReason": "STOP",
                "index": 0,
                "groundingMetadata": {"groundingChunks": chunks, "groundingSupports": supports},
            }
        ],
        "responseId": "g",
    }
    return b"data: " + orjson.dumps(body) + b"\n\n"


def _chat(passages: list[str]) -> bytes:
    text = " ".join(f"Claim {i} [{i + 1}]." for i in range(len(passages)))
    cits = [{"cited_text": p, "document_index": i, "document_title": "Doc",
             "source_url": "https://x/doc"} for i, p in enumerate(passages)]  # fmt: skip
    chunk = {"id": "c", "object": "chat.completion.chunk", "model": "m",
             "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": "stop"}],
             "citations": cits}  # fmt: skip
    return b"data: " + orjson.dumps(chunk) + b"\n\ndata: [DONE]\n\n"


_BUILD = {"anthropic": _anthropic, "cohere": _cohere, "gemini": _gemini, "chat": _chat}


@pytest.mark.parametrize("dialect", sorted(_BUILD))
@settings(max_examples=40, deadline=None)
@given(passages=_PASSAGES)
def test_one_source_cited_many_times_keeps_every_passage(dialect: str, passages: list[str]) -> None:
    raw = _BUILD[dialect](passages)
    answer = _answer(raw, dialect, whole_body=False)
    assert answer.complete and not answer.errors, answer.errors
    assert passages_sent(raw, dialect) == set(passages)
    _kept(raw, dialect, answer)
    if dialect != "chat":
        assert len({c.source_url for c in answer.citations}) == len(answer.citations) == 1
        spans = [s.cited_text for s in answer.citation_spans]
        assert spans == passages  # each span its own passage, in order
