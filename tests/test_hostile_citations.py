"""Citation bytes are capped per field and in total, in every dialect, and the
``citations`` events of a stream stay within a small constant times its input
(docs/security.md, "Nested, oversized and flooding upstream events")."""

from __future__ import annotations

import orjson

from streamcite.core.api import iter_events
from tests._dialect_sse import sse


def _anthropic(n: int, passage: int) -> list[bytes]:
    out = [sse({"type": "message_start", "message": {"id": "m", "model": "c"}}, "message_start")]
    start = {"type": "content_block_start", "index": 0, "content_block": {"type": "text"}}
    out.append(sse(start, "content_block_start"))
    for i in range(n):
        cit = {
            "type": "web_search_result_location",
            "url": f"https://example.org/{i}",
            "title": f"Source {i}",
            "cited_text": "p" * passage,
            "encrypted_index": "e" * passage,
        }
        delta = {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "citations_delta", "citation": cit},
        }
        out.append(sse(delta, "content_block_delta"))
    text = {
        "type": "content_block_delta",
        "index": 0,
        "delta": {"type": "text_delta", "text": "Answer [1]."},
    }
    out.append(sse(text, "content_block_delta"))
    out.append(sse({"type": "content_block_stop", "index": 0}, "content_block_stop"))
    out.append(
        sse(
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn"},
                "usage": {"output_tokens": 3},
            },
            "message_delta",
        )
    )
    out.append(sse({"type": "message_stop"}, "message_stop"))
    return out


def _wire(events: list) -> int:  # type: ignore[type-arg]
    return sum(len(orjson.dumps(e)) for e in events if e.type == "citations")


def test_one_huge_citation_is_cut_to_the_field_caps() -> None:
    events = list(iter_events(_anthropic(1, 512 * 1024), dialect="anthropic"))
    answer = events[-1].answer
    (c,) = answer.citations
    assert c.cited_text is not None and len(c.cited_text) <= 17 * 1024  # old: 512 KiB
    assert len(orjson.dumps(c.provider_metadata)) <= 17 * 1024  # old: 512 KiB
    assert "citation_too_large" in {e.code for e in answer.errors}


def test_citation_flood_keeps_bounded_bytes_and_wire_amplification() -> None:
    chunks = _anthropic(256, 12 * 1024)
    fed = sum(map(len, chunks))  # ~6.3 MB
    events = list(iter_events(chunks, dialect="anthropic"))
    answer = events[-1].answer
    kept = sum(len(orjson.dumps(c)) for c in answer.citations)
    assert kept <= 2.2 * 1024 * 1024  # old: all 6.3 MB kept
    # Every event carries the whole set: old 256 events, 800 MB (x130 the input).
    assert _wire(events) <= 4 * fed
    last = [e for e in events if e.type == "citations"][-1]
    assert len(last.citations) == len(answer.citations)  # the whole set at the end


def test_cohere_citation_with_a_flood_of_sources_keeps_the_first() -> None:
    sources = [
        {"type": "document", "id": f"d{i}", "document": {"id": f"d{i}", "snippet": "s"}}
        for i in range(20_000)
    ]
    cit = {"start": 0, "end": 5, "text": "Paris", "sources": sources}
    stream = [
        sse({"type": "message-start", "id": "x"}, "message-start"),
        sse(
            {
                "type": "content-start",
                "index": 0,
                "delta": {"message": {"content": {"type": "text", "text": ""}}},
            },
            "content-start",
        ),
        sse(
            {
                "type": "content-delta",
                "index": 0,
                "delta": {"message": {"content": {"text": "Paris."}}},
            },
            "content-delta",
        ),
        sse(
            {"type": "citation-start", "index": 0, "delta": {"message": {"citations": cit}}},
            "citation-start",
        ),
        sse({"type": "message-end", "delta": {"finish_reason": "COMPLETE"}}, "message-end"),
    ]
    answer = list(iter_events(stream, dialect="cohere"))[-1].answer
    assert len(answer.citations) <= 64  # old: 256
    assert "citation_too_large" in {e.code for e in answer.errors}


def test_chat_citations_are_held_to_the_same_caps() -> None:
    cits = [
        {"document_index": i, "cited_text": "q" * 200_000, "source_url": f"u{i}"} for i in range(40)
    ]
    stream = [
        sse({"choices": [{"index": 0, "delta": {"content": "Hi [1]."}}]}),
        sse({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], "citations": cits}),
        b"data: [DONE]\n\n",
    ]
    answer = list(iter_events(stream, dialect="chat"))[-1].answer
    assert sum(len(c.cited_text or "") for c in answer.citations) <= 2 * 1024 * 1024
    assert "citation_too_large" in {e.code for e in answer.errors}
