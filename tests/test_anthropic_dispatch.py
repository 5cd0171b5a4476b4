"""Anthropic's parsed events handed straight to their handlers
(``AnthropicInterpreter._general``, a block's delta read in place) give exactly the
events of the general way (``event`` → the type table → ``_block_delta``), whatever
the deltas' types, indexes and fields; and a recording-like stream's deltas are read in
place, not through the general dispatch."""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

import streamcite.core.dialects.anthropic as anthropic_mod
from streamcite.core.answer import AnswerBuilder
from streamcite.core.dialects import make_interpreter
from streamcite.core.dialects.base import StreamState
from streamcite.core.events import Event
from streamcite.core.sse import RawEvent


def _run(raw: list[RawEvent], general: bool) -> tuple[list[Event], Any]:
    it = make_interpreter("anthropic", AnswerBuilder(), "keep")
    assert isinstance(it, StreamState)
    out: list[Event] = []
    for item in raw:
        if general:
            StreamState.feed_raw(it, [item], out)
        else:
            it.feed_raw([item], out)
    out += it.close()
    return out, it.builder.snapshot()


def _ev(obj: Any) -> RawEvent:
    kind = obj.get("type", "x") if isinstance(obj, dict) else "x"
    return (str(kind).encode(), orjson.dumps(obj), "", None)


_index = st.one_of(st.integers(-1, 4), st.just(0.0), st.just(True), st.none(), st.just("1"))
_text = st.one_of(st.text(max_size=8), st.none(), st.integers(0, 3), st.just("see [1]"))
_citation = st.one_of(
    st.none(),
    st.just("not an object"),
    st.fixed_dictionaries(
        {
            "type": st.sampled_from(["web_search_result_location", "char_location", "odd"]),
            "cited_text": _text,
            "url": st.sampled_from(["https://a.example", "https://b.example"]),
            "document_index": st.integers(0, 2),
        }
    ),
)
_delta = st.one_of(
    st.builds(lambda t: {"type": "text_delta", "text": t}, _text),
    st.builds(lambda t: {"type": "thinking_delta", "thinking": t}, _text),
    st.builds(lambda t: {"type": "input_json_delta", "partial_json": t}, _text),
    st.builds(lambda c: {"type": "citations_delta", "citation": c}, _citation),
    st.builds(lambda t: {"type": "signature_delta", "signature": t}, _text),
    st.builds(lambda t: {"type": "compaction_delta", "content": t}, _text),
    st.builds(lambda t: {"type": "brand_new_delta", "x": t}, _text),
    st.just("not an object"),
    st.just({"text": "no type"}),
)
_block = st.one_of(
    st.just({"type": "text", "text": ""}),
    st.just({"type": "thinking", "thinking": ""}),
    st.just({"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}),
    st.just({"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search"}),
    st.just({"type": "brand_new_block"}),
)
_event = st.one_of(
    st.builds(lambda i, d: {"type": "content_block_delta", "index": i, "delta": d}, _index, _delta),
    st.builds(
        lambda i, b: {"type": "content_block_start", "index": i, "content_block": b},
        _index,
        _block,
    ),
    st.builds(lambda i: {"type": "content_block_stop", "index": i}, _index),
    st.just({"type": "ping"}),
    st.just({"type": "brand_new_event"}),
    st.just({"index": 0}),
    st.just({"type": 3}),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_event, max_size=14))
def test_in_place_dispatch_is_the_general_way(events: list[Any]) -> None:
    start = {"type": "message_start", "message": {"id": "msg_1", "model": "claude"}}
    raw = [_ev(start), *map(_ev, events)]
    raw.append(_ev({"type": "message_delta", "delta": {"stop_reason": "end_turn"}}))
    raw.append(_ev({"type": "message_stop"}))
    assert _run(raw, general=False) == _run(raw, general=True)


def test_deltas_skip_the_general_dispatch(monkeypatch: Any) -> None:
    """A stream like a web search answer (a server tool's input fragments, a citation,
    a thinking signature): no delta goes through ``_block_delta`` or ``_typed``."""
    called: list[str] = []
    block_delta = anthropic_mod.AnthropicInterpreter._block_delta

    def spy(self: Any, obj: dict[str, Any], out: list[Event]) -> None:
        called.append("block_delta")
        block_delta(self, obj, out)

    monkeypatch.setitem(anthropic_mod._TABLE, "content_block_delta", spy)
    cite = {
        "type": "web_search_result_location",
        "cited_text": "Mild.",
        "url": "https://weather.example/sf",
        "title": "SF weather",
        "encrypted_index": "Eo8B",
    }
    events: list[Any] = [
        {"type": "message_start", "message": {"id": "msg_1", "model": "claude"}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking"}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "Look it up."}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "EqQB"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1, "content_block": {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": '{"query": '}},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": '"sf weather"}'}},
        {"type": "content_block_stop", "index": 1},
        {"type": "content_block_start", "index": 2, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 2, "delta": {"type": "citations_delta", "citation": cite}},
        {"type": "content_block_delta", "index": 2, "delta": {"type": "text_delta", "text": "It is mild."}},
        {"type": "content_block_stop", "index": 2},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 9}},
        {"type": "message_stop"},
    ]  # fmt: skip
    raw = [_ev(e) for e in events]
    out, answer = _run(raw, general=False)
    assert called == []
    assert answer.text == "It is mild."
    assert [c.source_url for c in answer.citations] == ["https://weather.example/sf"]
    assert [t.phase for t in answer.provider_tools] == ["call"]
    assert answer.provider_tools[0].input == '{"query":"sf weather"}'
    assert (out, answer) == _run(raw, general=True)
    assert called  # the general way does go through it
