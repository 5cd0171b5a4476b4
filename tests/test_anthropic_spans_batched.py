"""A text block's spans added at its ``content_block_stop`` in one step
(:meth:`Citing.spans`: the offsets converted once, the list copied once) are exactly
what :meth:`Citing.span` gives called for each in turn — whatever the passages, the
metadata, the offsets (within the text or not), the caps (clipped passages, the total
reached, :data:`MAX_SPANS` reached); and a block cited twice goes that one step, not
span by span."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamcite.core.answer import AnswerBuilder
from streamcite.core.bounds import StreamBounds
from streamcite.core.dialects import citing
from streamcite.core.dialects.anthropic import AnthropicInterpreter
from streamcite.core.events import Event

_passage = st.one_of(st.none(), st.just(""), st.text(max_size=30), st.just("x" * 200))
_meta = st.one_of(
    st.none(),
    st.just({}),
    st.fixed_dictionaries({"type": st.just("web_search_result_location"), "k": st.text()}),
)
_cited = st.lists(st.tuples(st.integers(0, 3), _passage, _meta), min_size=1, max_size=5)


def _state(text: str, bounds: StreamBounds, prefilled: int) -> AnthropicInterpreter:
    it = AnthropicInterpreter(AnswerBuilder(bounds))
    out: list[Event] = []
    if text:
        it.token(0, text, out)
    for _ in range(prefilled):  # spans already there (towards MAX_SPANS)
        it.span(0, 0, 0, out)
    return it


@settings(max_examples=300, deadline=None)
@given(
    text=st.sampled_from(["", "abc", "a😀b😀c" * 3, "plain text of a block"]),
    cited=_cited,
    start=st.integers(-1, 12),
    length=st.integers(-1, 12),
    text_cap=st.sampled_from([5, 50, 4096]),
    total=st.sampled_from([150, 400, 10**6]),
    near_cap=st.booleans(),
)
def test_spans_at_once_equal_span_by_span(
    text: str,
    cited: list[tuple[int, str | None, Any]],
    start: int,
    length: int,
    text_cap: int,
    total: int,
    near_cap: bool,
) -> None:
    bounds = StreamBounds(max_citation_text_chars=text_cap, max_citation_bytes=total)
    prefilled = citing.MAX_SPANS - 2 if near_cap else 0
    end = start + length
    one = _state(text, bounds, prefilled)
    each = _state(text, bounds, prefilled)
    out_one: list[Event] = []
    out_each: list[Event] = []
    got = one.spans(cited, start, end, out_one)
    want = False
    for doc, passage, meta in cited:
        want = each.span(doc, start, end, out_each, passage, meta) or want
    assert got == want
    assert orjson.dumps(one.builder.citation_spans) == orjson.dumps(each.builder.citation_spans)
    assert [e.to_dict() for e in out_one] == [e.to_dict() for e in out_each]
    assert (one.spans_dropped, one.citations_clipped) == (
        each.spans_dropped,
        each.citations_clipped,
    )


def _stream() -> bytes:
    """A web search answer's shape (written for this test): one text block cited by
    two sources, then a plain one."""
    cite = {"type": "web_search_result_location", "cited_text": "q", "title": "T"}
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": {"id": "m", "model": "c", "usage": {}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text"}},
        *(
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "citations_delta", "citation": {**cite, "url": u}},
            }
            for u in ("https://a.example", "https://b.example")
        ),
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "x"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_stop"},
    ]
    return b"".join(b"event: e\ndata: %s\n\n" % orjson.dumps(e) for e in events)


def test_a_block_cited_twice_is_spanned_in_one_step(monkeypatch: pytest.MonkeyPatch) -> None:
    from streamcite.core.api import ChatStreamParser

    calls = {"span": 0, "spans": 0}
    span, spans = citing.Citing.span, citing.Citing.spans

    def counted_span(self: Any, *a: Any, **k: Any) -> bool:
        calls["span"] += 1
        return span(self, *a, **k)

    def counted_spans(self: Any, *a: Any) -> bool:
        calls["spans"] += 1
        return spans(self, *a)

    monkeypatch.setattr(citing.Citing, "span", counted_span)
    monkeypatch.setattr(citing.Citing, "spans", counted_spans)
    p = ChatStreamParser(dialect="anthropic")
    p.feed(_stream())
    p.close()
    assert calls == {"span": 0, "spans": 1}
    assert len(p.answer.citation_spans) == 2
