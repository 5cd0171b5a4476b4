"""Hypothesis, per dialect: any split of a stream's bytes (inside multi-byte characters
too) gives the same events, sync and async; and no sequence of arbitrary JSON events of a
dialect crashes its interpreter or goes unreported — ``done`` is always last."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamcite import aiter_events, iter_events
from streamcite.core.api import ChatStreamParser
from streamcite.core.events import DoneEvent, Event
from tests._streams import normalise, split_at

FIXTURES = Path(__file__).parent / "fixtures" / "dialects"
STREAMS = {p.name: p.read_bytes() for p in sorted(FIXTURES.glob("*.sse"))}
REFERENCE = {name: normalise(iter_events([data])) for name, data in STREAMS.items()}


async def _agen(chunks: list[bytes]) -> AsyncIterator[bytes]:
    for c in chunks:
        yield c


async def _collect(chunks: list[bytes], dialect: Any) -> list[Event]:
    return [e async for e in aiter_events(_agen(chunks), dialect=dialect)]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    name=st.sampled_from(sorted(STREAMS)),
    cuts=st.lists(st.integers(0, 40_000), max_size=30),
    named=st.booleans(),
)
def test_any_split_same_events(name: str, cuts: list[int], named: bool) -> None:
    data = STREAMS[name]
    dialect = name.split("__")[0] if named else "auto"
    chunks = split_at(data, [c % (len(data) + 1) for c in cuts])
    assert normalise(iter_events(chunks, dialect=dialect)) == REFERENCE[name]  # type: ignore[arg-type]
    assert normalise(asyncio.run(_collect(chunks, dialect))) == REFERENCE[name]


@settings(max_examples=25, deadline=None)
@given(name=st.sampled_from(sorted(STREAMS)))
def test_byte_at_a_time(name: str) -> None:
    data = STREAMS[name]
    chunks = [data[i : i + 1] for i in range(len(data))]
    assert normalise(iter_events(chunks)) == REFERENCE[name]


_scalar = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 300), st.text(max_size=6), st.floats(allow_nan=False)
)
_json = st.recursive(
    _scalar,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=12,
)
# Keys and type names each dialect reads, so that the generated objects reach its handlers.
_KEYS = [
    "type", "index", "delta", "message", "content_block", "text", "citation", "citations",
    "response", "item", "item_id", "annotation", "content_index", "output", "usage", "error",
    "candidates", "content", "parts", "groundingMetadata", "groundingChunks", "groundingSupports",
    "segment", "startIndex", "endIndex", "groundingChunkIndices", "finishReason", "tool_calls",
    "function", "arguments", "start", "end", "sources", "document", "finish_reason", "stop_reason",
    "promptFeedback", "functionCall", "thought", "partial_json", "thinking", "web", "uri",
]  # fmt: skip
_TYPES = [
    "message_start", "content_block_start", "content_block_delta", "content_block_stop",
    "message_delta", "message_stop", "error", "text_delta", "citations_delta", "tool_use",
    "input_json_delta", "thinking_delta", "web_search_result_location", "char_location",
    "response.created", "response.output_item.added", "response.output_text.delta",
    "response.output_text.annotation.added", "response.function_call_arguments.delta",
    "response.completed", "response.failed", "url_citation", "file_citation", "function_call",
    "message-start", "content-start", "content-delta", "citation-start", "tool-call-start",
    "tool-call-delta", "message-end", "text", "thinking", "document",
]  # fmt: skip
_shaped: st.SearchStrategy[Any] = st.recursive(
    st.one_of(_scalar, st.sampled_from(_TYPES)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.sampled_from(_KEYS), inner, max_size=5),
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    dialect=st.sampled_from(["responses", "anthropic", "gemini", "cohere"]),
    objs=st.lists(st.one_of(_shaped, _json), min_size=1, max_size=8),
    names=st.lists(st.sampled_from([b"", b"error", b"message_start", b"ping"]), max_size=8),
)
def test_arbitrary_events_never_crash(dialect: str, objs: list[Any], names: list[bytes]) -> None:
    stream = b""
    for i, obj in enumerate(objs):
        name = names[i] if i < len(names) else b""
        head = b"event: " + name + b"\n" if name else b""
        stream += head + b"data: " + orjson.dumps(obj) + b"\n\n"
    p = ChatStreamParser(dialect=dialect)  # type: ignore[arg-type]
    events = p.feed(stream) + p.close()
    a = p.answer
    # Everything the answer holds came as events; spans stay inside the text.
    assert a.text == "".join(e.text for e in events if e.type == "token" and e.index == 0)  # type: ignore[union-attr]
    assert len(a.errors) == sum(1 for e in events if e.type == "error")
    for sp in a.citation_spans:
        assert sp.start is not None and sp.end is not None
        assert 0 <= sp.start <= sp.end <= len(a.text)
        assert sp.document_index is not None and sp.document_index < len(a.citations)
    done = list(iter_events([stream], dialect=dialect))[-1]  # type: ignore[arg-type]
    assert isinstance(done, DoneEvent)
