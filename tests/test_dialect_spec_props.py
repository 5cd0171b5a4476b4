"""Spec suite, properties: for any texts (any Unicode outside surrogates: accents, RTL, astral,
combining marks, line breaks), split into any deltas, any spans given in each API's own units
(Gemini UTF-8 bytes, Responses and Cohere characters) slice ``answer.text`` exactly, in
characters and in UTF-16, and any re-chunking of the bytes gives the same events."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests._dialect_streams import (
    AnthropicBlock,
    ResponsesItem,
    anthropic_stream,
    check_run,
    cohere_stream,
    gemini_chunk,
    responses_stream,
    run,
    split_at,
    sse,
    wire,
)

deltas = st.lists(st.text(min_size=1, max_size=8), min_size=1, max_size=8)


@st.composite
def text_and_spans(draw: Any) -> tuple[list[str], list[tuple[int, int]]]:
    parts = draw(deltas)
    n = len("".join(parts))
    spans = []
    for _ in range(draw(st.integers(0, 4))):
        a = draw(st.integers(0, n))
        b = draw(st.integers(a, n))
        if a < b:
            spans.append((a, b))
    return parts, spans


def _check(events: list[Any], parts: list[str], spans: list[tuple[int, int]]) -> None:
    a = check_run(events)  # also: UTF-16 offsets agree, spans within the text
    text = "".join(parts)
    assert a.text == text
    assert [e.text for e in events if e.type == "token"] == parts
    assert sorted({(s.start, s.end) for s in a.citation_spans}) == sorted(set(spans))


@settings(max_examples=150, deadline=None)
@given(text_and_spans(), st.lists(st.integers(1, 1 << 16), max_size=6))
def test_gemini_byte_offsets_any_text(
    ts: tuple[list[str], list[tuple[int, int]]], cuts: list[int]
) -> None:
    parts, spans = ts
    text = "".join(parts)
    sups = []
    for a, b in spans:
        seg = {
            "startIndex": len(text[:a].encode()),
            "endIndex": len(text[:b].encode()),
            "text": text[a:b],
        }
        sups.append({"segment": seg, "groundingChunkIndices": [0]})
    g = {
        "groundingChunks": [{"web": {"uri": "https://a.example/", "title": "A"}}],
        "groundingSupports": sups,
    }
    chunks = [sse(gemini_chunk([{"text": p}])) for p in parts[:-1]]
    chunks.append(sse(gemini_chunk([{"text": parts[-1]}], finish="STOP", grounding=g)))
    data = b"".join(chunks)
    events = run(data, "gemini")
    _check(events, parts, spans)
    assert wire(run(split_at(data, [c % len(data) for c in cuts]), "gemini")) == wire(events)


@settings(max_examples=150, deadline=None)
@given(text_and_spans(), st.lists(st.integers(1, 1 << 16), max_size=6))
def test_responses_char_offsets_any_text(
    ts: tuple[list[str], list[tuple[int, int]]], cuts: list[int]
) -> None:
    parts, spans = ts
    anns = [
        (
            len(parts) - 1,
            {
                "type": "url_citation",
                "url": "https://a.example/",
                "title": "A",
                "start_index": a,
                "end_index": b,
            },
        )
        for a, b in spans
    ]
    data = responses_stream([ResponsesItem("message", parts, annotations=anns)])
    events = run(data, "responses")
    _check(events, parts, spans)
    assert wire(run(split_at(data, [c % len(data) for c in cuts]), "responses")) == wire(events)


@settings(max_examples=150, deadline=None)
@given(text_and_spans(), st.lists(st.integers(1, 1 << 16), max_size=6))
def test_cohere_char_offsets_any_text(
    ts: tuple[list[str], list[tuple[int, int]]], cuts: list[int]
) -> None:
    parts, spans = ts
    text = "".join(parts)
    tail = b"".join(
        sse(
            {
                "type": "citation-start",
                "index": k,
                "delta": {
                    "message": {
                        "citations": {
                            "start": a,
                            "end": b,
                            "text": text[a:b],
                            "sources": [
                                {
                                    "type": "document",
                                    "id": "d",
                                    "document": {"id": "d", "title": "T", "text": "t"},
                                }
                            ],
                            "type": "TEXT_CONTENT",
                            "content_index": 0,
                        }
                    }
                },
            },
            "citation-start",
        )
        for k, (a, b) in enumerate(spans)
    )
    data = cohere_stream(parts, tail=tail)
    events = run(data, "cohere")
    _check(events, parts, spans)
    assert wire(run(split_at(data, [c % len(data) for c in cuts]), "cohere")) == wire(events)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(deltas, st.booleans()), min_size=1, max_size=6),
    st.lists(st.integers(1, 1 << 16), max_size=6),
)
def test_anthropic_block_spans_any_text(
    blocks: list[tuple[list[str], bool]], cuts: list[int]
) -> None:
    cit = {
        "type": "web_search_result_location",
        "cited_text": "c",
        "url": "https://a.example/",
        "title": "A",
        "encrypted_index": "E",
    }
    data = anthropic_stream(
        [AnthropicBlock("text", parts, citations=[cit] if cited else []) for parts, cited in blocks]
    )
    events = run(data, "anthropic")
    a = check_run(events)
    assert a.text == "".join("".join(p) for p, _ in blocks)
    starts = [0]
    for p, _ in blocks:
        starts.append(starts[-1] + len("".join(p)))
    want = sorted({(starts[i], starts[i + 1]) for i, (_, cited) in enumerate(blocks) if cited})
    assert sorted({(s.start, s.end) for s in a.citation_spans}) == want
    assert wire(run(split_at(data, [c % len(data) for c in cuts]), "anthropic")) == wire(events)
