"""Gemini's plain-chunk path (one text part of candidate 0, usage and ids; a thought part;
an empty ``groundingMetadata``, as search grounding sends on every chunk) takes exactly
what the general way would: the same events with it on and off for any mix of plain and
odd chunks, any split; and it is on: on a search-grounded, thinking stream written here
(the shape of Google's streams: ``"role": "model"``, ``"index": 0``, usage on every chunk)
only the grounded finish takes the general way."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamcite.core.api import ChatStreamParser
from streamcite.core.dialects.gemini import GeminiInterpreter
from tests._dialect_sse import byte_span, split_at, sse

Obj = dict[str, Any]
_USAGE = {"promptTokenCount": 17, "totalTokenCount": 40, "thoughtsTokenCount": 12}


def _chunk(part: Obj, **cand: Any) -> Obj:
    return {
        "candidates": [{"content": {"parts": [part], "role": "model"}, "index": 0, **cand}],
        "usageMetadata": _USAGE,
        "modelVersion": "gemini-2.5-pro",
        "responseId": "plain-path-01",
    }


_TEXTS = st.text(alphabet=st.sampled_from(["a", " ", "[", "1", "]", "°", "🙂", "\n", '"']))
_PART = st.one_of(
    st.builds(lambda t: {"text": t}, _TEXTS),
    st.builds(lambda t: {"text": t, "thought": True}, _TEXTS),
    st.builds(lambda t, v: {"text": t, "thought": v}, _TEXTS, st.sampled_from([False, 1, None])),
    st.builds(lambda t: {"text": t, "thoughtSignature": "c2ln"}, _TEXTS),
    st.builds(lambda t: {"text": t, "thought": True, "thoughtSignature": "c2ln"}, _TEXTS),
    st.just({"text": 7}),
    st.just({"functionCall": {"name": "f", "args": {}}}),
)
_CAND_EXTRAS: list[Obj] = [
    {},
    {"groundingMetadata": {}},
    {"groundingMetadata": []},
    {"groundingMetadata": {"webSearchQueries": ["q"]}},
    {"index": False},
    {"index": 1},
    {"safetyRatings": []},
    {"finishReason": "STOP"},
    {"finishReason": "MAX_TOKENS", "groundingMetadata": {}},
    {"finishReason": "MALFORMED_FUNCTION_CALL"},
    {"finishReason": None},
    {"finishReason": 5},
]
_CAND_EXTRA = st.sampled_from(_CAND_EXTRAS)
_LAST_EXTRAS: list[Obj] = [{}, {"groundingMetadata": {}}, {"index": 1}]
_TOP_EXTRAS: list[Obj] = [
    {},
    {"error": {"code": 500}},
    {"promptFeedback": {}},
    {"usageMetadata": None},
]
_TOP_EXTRA = st.sampled_from(_TOP_EXTRAS)


@st.composite
def _stream(draw: st.DrawFn) -> bytes:
    """A first chunk, then chunks of any shape near the plain one, grounding supports
    that wait for their text (the empty metadata after them goes the general way) at
    any point, lone-surrogate escapes (a joined stream) sometimes."""
    texts: list[str] = []
    out = [sse(_chunk({"text": "Hello "}))]
    texts.append("Hello ")
    for _ in range(draw(st.integers(0, 8))):
        kind = draw(st.integers(0, 9))
        if kind == 0:  # a support over text to come: pending until it arrives
            text = "".join(texts)
            end = len(text.encode()) + draw(st.integers(0, 6))
            sup = {"segment": {"endIndex": end}, "groundingChunkIndices": [0]}
            meta = {"groundingChunks": [{"web": {"uri": "https://a.example", "title": "A"}}]}
            out.append(
                sse(_chunk({"text": ""}, groundingMetadata={**meta, "groundingSupports": [sup]}))
            )
            continue
        if kind == 1:
            out.append(b'data: {"candidates": [{"content": {"parts": [{"text": "\\ud83d"}]}}]}\n\n')
            continue
        part: Obj = draw(_PART)
        cand: Obj = draw(_CAND_EXTRA)
        top: Obj = draw(_TOP_EXTRA)
        obj = {**_chunk(part, **cand), **top}
        if obj.get("usageMetadata") is None:
            del obj["usageMetadata"]
        if isinstance(part.get("text"), str) and part.get("thought") is not True:
            texts.append(part["text"])
        out.append(sse(obj))
    last: Obj = draw(st.sampled_from(_LAST_EXTRAS))
    out.append(sse(_chunk({"text": "."}, finishReason="STOP", **last)))
    return b"".join(out)


@contextmanager
def _general_only() -> Iterator[None]:
    """Every chunk the general way (the plain path off)."""
    with mock.patch.object(GeminiInterpreter, "_plain_text", lambda self, obj, out: None):
        yield


def _events(parts: list[bytes]) -> list[Any]:
    p = ChatStreamParser(dialect="gemini")
    evs = [e for piece in parts for e in p.feed(piece)] + p.close() + [p.done_event()]
    return [orjson.loads(e.to_json()) for e in evs]


@settings(max_examples=200, deadline=None)
@given(body=_stream(), cuts=st.lists(st.integers(0, 4000), max_size=6))
def test_the_plain_path_takes_what_the_general_way_would(body: bytes, cuts: list[int]) -> None:
    parts = split_at(body, cuts)
    fast = _events(parts)
    with _general_only():
        general = _events(parts)
    assert fast == general


def _grounded_thinking_stream() -> bytes:
    """Two thoughts, six grounded text chunks with ``groundingMetadata: {}``, the finish
    with the grounding (one source, one support)."""
    texts = ["It is 21°C ", "in San Francisco ", "today, ", "partly ", "cloudy ", "and mild."]
    whole = "".join(texts)
    b0, b1 = byte_span(whole, "It is 21°C in San Francisco today")
    grounding = {
        "groundingChunks": [{"web": {"uri": "https://weather.example", "title": "Weather"}}],
        "groundingSupports": [
            {"segment": {"startIndex": b0, "endIndex": b1}, "groundingChunkIndices": [0]}
        ],
    }
    chunks = [_chunk({"text": "**Planning**\n\nLooking up.", "thought": True})]
    chunks.append(_chunk({"text": "**Answering**", "thought": True}))
    chunks += [_chunk({"text": t}, groundingMetadata={}) for t in texts[:-1]]
    chunks.append(_chunk({"text": texts[-1]}, finishReason="STOP", groundingMetadata=grounding))
    return b"".join(sse(c) for c in chunks)


def _general_calls(body: bytes) -> tuple[int, list[Any]]:
    """How many chunks of ``body`` took the general way, and the events."""
    calls = 0
    general = GeminiInterpreter.event

    def counted(self: GeminiInterpreter, name: bytes, obj: Obj, out: list[Any]) -> None:
        nonlocal calls
        calls += 1
        general(self, name, obj, out)

    with mock.patch.object(GeminiInterpreter, "event", counted):
        events = _events([body])
    return calls, events


@pytest.mark.source_only
def test_the_plain_path_is_on() -> None:
    body = _grounded_thinking_stream()
    calls, events = _general_calls(body)
    assert calls == 1  # only the grounded finish; the first chunk (its meta) too is plain
    kinds = [e["type"] for e in events]
    assert kinds.count("reasoning") == 2 and kinds.count("token") == 6
    assert kinds[-4:] == ["citations", "finish", "usage", "done"]
    with _general_only():
        assert _events([body]) == events
    # Without grounding, the finish chunk too is plain: no chunk goes the general way.
    plain = sse(_chunk({"text": "Hi"})) + sse(_chunk({"text": "!"}, finishReason="STOP"))
    calls, events = _general_calls(plain)
    assert calls == 0
    assert [e["type"] for e in events] == ["meta", "token", "token", "finish", "usage", "done"]


def test_no_candidate_read_when_max_choices_is_zero() -> None:
    """With ``max_choices=0`` the plain path takes nothing: every candidate is refused
    the general way (``bad_chunk``), as it refuses a chunk that is not plain."""
    from streamcite.core.api import ChatStreamParser
    from streamcite.core.bounds import StreamBounds

    body = (
        b'data: {"candidates":[{"content":{"parts":[{"text":"Hi"}],"role":"model"},'
        b'"index":0}],"modelVersion":"g"}\n\n'
    )
    p = ChatStreamParser(dialect="gemini", bounds=StreamBounds(max_choices=0))
    events = p.feed(body)
    assert [e.type for e in events] == ["meta", "error"]
    assert p.answer.text == ""
