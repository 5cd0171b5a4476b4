"""``data-citation-spans`` in the AI SDK UI message stream: after the ``source-*`` parts,
UTF-16 offsets, the same ``sourceId`` as the source it anchors; live citations events
(each carrying the list so far) send each source once."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from aiohttp import web

from streamcite import Citation, CitationsEvent, DoneEvent, FinishEvent, TokenEvent, stream_chat
from streamcite.core.models import CitationSpan
from streamcite.local.server import LocalBackend
from streamcite.pipeline.apis import api_root
from streamcite.pipeline.bodies import chat_request_as
from streamcite.web import UIMessageEncoder
from streamcite.web.aiohttp import ui_message_handler
from tests.test_web import chunks
from tests.test_web_node import READY as NODE_READY
from tests.test_web_node import run_node

TEXT = "Ça coûte 5 € 🙂. Paris is big."
"""Accents, a three-byte € and an astral emoji: characters, UTF-16 and bytes all differ."""


def _utf16(i: int) -> int:
    return len(TEXT[:i].encode("utf-16-le")) // 2


def _span(doc: int, start: int, end: int) -> CitationSpan:
    return CitationSpan(doc, start, end, start_utf16=_utf16(start), end_utf16=_utf16(end))


def encode(events: list[Any]) -> list[Any]:
    enc = UIMessageEncoder("m1")
    raw = enc.start() + b"".join(enc.feed(e) for e in events) + enc.close()
    return chunks(raw)


def test_live_citations_send_each_source_once_and_spans_in_utf16() -> None:
    a = Citation(document_index=0, document_title="Prices", source_url="https://x/a")
    b = Citation(document_index=1, document_title="Cities", cited_text="Paris is big.")
    first = TEXT.index(".") + 1
    paris = TEXT.index("Paris")
    got = encode(
        [
            TokenEvent(text=TEXT[:first]),
            CitationsEvent(citations=[a], spans=[_span(0, 0, first)]),
            TokenEvent(text=TEXT[first:]),
            CitationsEvent(
                citations=[a, b], spans=[_span(0, 0, first), _span(1, paris, len(TEXT))]
            ),
            FinishEvent(reason="stop"),
            DoneEvent(),
        ]
    )
    kinds = [c["type"] for c in got]
    assert kinds == [
        "start", "start-step", "text-start", "text-delta",
        "source-url", "data-citation-spans",
        "text-delta", "source-document", "data-citation-spans",
        "text-end", "finish-step", "finish",
    ]  # fmt: skip
    sources = [c for c in got if c["type"].startswith("source-")]
    assert [s["sourceId"] for s in sources] == ["cite-1", "cite-2"]
    spans = [c for c in got if c["type"] == "data-citation-spans"]
    assert {c["id"] for c in spans} == {"citation-spans"}  # one part, replaced as it grows
    final = spans[-1]["data"]["spans"]
    assert final == [
        {"sourceId": "cite-1", "start": 0, "end": _utf16(first), "citedText": None},
        {"sourceId": "cite-2", "start": _utf16(paris), "end": _utf16(len(TEXT)), "citedText": None},
    ]
    # what JavaScript slices with those offsets is what each provider anchored
    js = TEXT.encode("utf-16-le")
    cut = js[2 * final[1]["start"] : 2 * final[1]["end"]].decode("utf-16-le")
    assert cut == "Paris is big." and final[0]["end"] != first  # the emoji counts twice


def test_spans_from_the_wire_form_and_bad_spans_left_out() -> None:
    """A relay frame (plain mappings) maps alike; a span naming no citation is dropped."""
    cites = [{"document_index": 0, "document_title": "A", "source_url": "https://x/a"}]
    wire = {
        "type": "citations",
        "citations": [SimpleNamespace(**c) for c in cites],
        "spans": [
            {
                "document_index": 0,
                "start": 0,
                "end": 3,
                "start_utf16": 0,
                "end_utf16": 4,
                "cited_text": "A quote.",
            },
            {"document_index": 5, "start": 0, "end": 1, "start_utf16": 0, "end_utf16": 1},
            {"document_index": 0, "start": None, "end": None, "start_utf16": "x", "end_utf16": 1},
        ],
    }
    got = encode([TokenEvent(text="a🙂b"), wire, DoneEvent()])
    (part,) = [c for c in got if c["type"] == "data-citation-spans"]
    want = {"sourceId": "cite-1", "start": 0, "end": 4, "citedText": "A quote."}
    assert part["data"] == {"spans": [want]}


def test_citations_without_spans_add_no_part() -> None:
    got = encode([TokenEvent(text="x [1]"), CitationsEvent(citations=[Citation(document_index=0)])])
    assert "data-citation-spans" not in [c["type"] for c in got]


@pytest.mark.skipif(not NODE_READY, reason="node or examples/usechat deps missing")
@pytest.mark.parametrize("api", ["anthropic", "gemini"])
async def test_the_ai_sdk_client_keeps_the_spans_part(serve: Any, api: str) -> None:
    """``readUIMessageStream`` (``ai`` from npm) accepts the part and keeps one, replaced
    as it grows; its offsets slice the UIMessage's JavaScript text at the cited sentences."""
    async with LocalBackend() as backend:

        def make(question: str, body: dict[str, Any]) -> Any:
            chat = {
                "model": "streamcite-local",
                "messages": [{"role": "user", "content": question}],
            }
            return stream_chat(
                chat_request_as(api, chat), base_url=api_root(backend.root_url, api), api=api
            )

        app = web.Application()
        app.router.add_post("/api/chat", ui_message_handler(make))
        url = await serve(app)
        got = await run_node(url + "/api/chat", "כמה ימים בשבוע מותר לעבוד מהבית?")
        async with make("כמה ימים בשבוע מותר לעבוד מהבית?", {}) as s:
            answer = await s.until_done()
    assert got["errors"] == []
    parts = got["message"]["parts"]
    (spans,) = [p for p in parts if p["type"] == "data-citation-spans"]
    assert spans["id"] == "citation-spans"
    sources = {p["sourceId"] for p in parts if p["type"].startswith("source-")}
    text = "".join(p["text"] for p in parts if p["type"] == "text")
    js = text.encode("utf-16-le")
    sliced = [js[2 * s["start"] : 2 * s["end"]].decode("utf-16-le") for s in spans["data"]["spans"]]
    assert sliced == [answer.text[sp.start : sp.end] for sp in answer.citation_spans]
    assert all(s["sourceId"] in sources for s in spans["data"]["spans"])


def test_lists_that_are_not_continuations_are_sent_whole_and_bounded() -> None:
    """Events carrying new citations only (not the list so far) each send theirs; what the
    encoder remembers is the last list, not every list it was given."""
    enc = UIMessageEncoder("m1")
    enc.start()
    sent = []
    for i in range(50):
        one = [Citation(document_index=i, source_url=f"https://x/{i}")]
        out = enc.feed(CitationsEvent(citations=one))
        sent.append(out.count(b'"type":"source-url"'))
    assert sent == [1] * 50
    assert len(enc._cited) == 1


def test_a_thousand_live_spans_are_written_in_linear_bytes() -> None:
    # An Anthropic-like stream: one cited block after another, each citations event
    # carrying every citation and span so far. Each part replaced the last one whole:
    # 1024 spans wrote 25.6 MB of span parts (quadratic); now each of the first 16 is
    # written at once, then whenever the spans grew by an eighth, and the rest at the end.
    n = 1000  # MAX_SOURCE_PARTS: a span of a source not written is left out
    text = "Word. " * n
    cites: list[Citation] = []
    spans: list[CitationSpan] = []
    events: list[Any] = []
    for i in range(n):
        events.append(TokenEvent(text="Word. "))
        cites = [*cites, Citation(document_index=i, source_url=f"https://e.org/{i}")]
        spans = [*spans, CitationSpan(i, 6 * i, 6 * i + 5, 6 * i, 6 * i + 5)]
        events.append(CitationsEvent(citations=cites, spans=spans))
    events += [FinishEvent(reason="stop"), DoneEvent(answer=SimpleNamespace(finish_reason="stop"))]
    enc = UIMessageEncoder("m1")
    raw = enc.start() + b"".join(enc.feed(e) for e in events) + enc.close()
    parts = [c for c in chunks(raw) if isinstance(c, dict) and c["type"] == "data-citation-spans"]
    span_bytes = sum(len(str(p)) for p in parts)
    assert span_bytes < 12 * len(str(parts[-1]))  # linear: a few times the last part
    assert len(parts) < 80
    # the first 16 live, one part each; the last part carries every span
    assert [len(p["data"]["spans"]) for p in parts[:16]] == list(range(1, 17))
    assert len(parts[-1]["data"]["spans"]) == n
    assert parts[-1]["data"]["spans"][-1] == {
        "sourceId": f"cite-{n}",
        "start": 6 * n - 6,
        "end": 6 * n - 1,
        "citedText": None,
    }
    assert len(text) == 6 * n
