"""Regressions for the audit of issue 10's provider streams: reasoning sent in both
fields, tool calls without ``index`` (Gemini) and of the wrong shape, ``url_citation``
annotations (checked, and linear in their number), chat chunks under a named SSE event,
``x_groq.usage`` once the fast loop runs, and a provider error that cuts the answer."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamcite import iter_events
from streamcite.core.answer import AnswerBuilder
from streamcite.core.chunks import ChunkInterpreter
from streamcite.core.deltas import MAX_URL_CITATIONS
from streamcite.core.events import (
    DoneEvent,
    ErrorEvent,
    Event,
    ReasoningEvent,
    ToolCallEvent,
    UsageEvent,
)
from streamcite.core.models import CitedAnswer
from streamcite.enrich.gate import skip_reason

DONE = b"data: [DONE]\n\n"


def _ch(delta: dict[str, Any], finish: str | None = None, **top: Any) -> bytes:
    obj = {
        "id": "x",
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return b"data: " + orjson.dumps({**obj, **top}) + b"\n\n"


def _named(payload: bytes | dict[str, Any], name: bytes = b"completion") -> bytes:
    data = payload if isinstance(payload, bytes) else orjson.dumps(payload)
    return b"event: " + name + b"\ndata: " + data + b"\n\n"


def _run(*parts: bytes) -> list[Event]:
    return list(iter_events([b"".join(parts)]))


def _answer(events: list[Event]) -> CitedAnswer:
    done = events[-1]
    assert isinstance(done, DoneEvent)
    return done.answer


def _codes(events: list[Event]) -> list[str]:
    return [e.code for e in events if isinstance(e, ErrorEvent)]


def _splits(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    return [data[i:j] for i, j in zip([0, *points], [*points, len(data)], strict=True)]


def _wire(events: list[Event]) -> list[bytes]:
    return [e.to_json() for e in events]


# Many content chunks first, so that later chunks meet the fast loop (template proven).
WARM = [_ch({"content": f"w{i} "}) for i in range(6)]
WARM_TEXT = "".join(f"w{i} " for i in range(6))


# -- 1. reasoning sent in both fields ---------------------------------------------------


@pytest.mark.parametrize("warm", [False, True], ids=["first-chunk", "after-fast-loop"])
def test_same_reasoning_in_both_fields_is_one_event(warm: bool) -> None:
    lead = WARM if warm else []
    evs = _run(
        *lead, _ch({"reasoning_content": "think", "reasoning": "think"}), _ch({}, "stop"), DONE
    )
    assert [e.text for e in evs if isinstance(e, ReasoningEvent)] == ["think"]
    assert _answer(evs).reasoning_text == "think" and _codes(evs) == []


def test_different_reasoning_in_both_fields_keeps_both_reasoning_content_first() -> None:
    evs = _run(_ch({"reasoning": "B", "reasoning_content": "A"}), _ch({}, "stop"), DONE)
    assert [e.text for e in evs if isinstance(e, ReasoningEvent)] == ["A", "B"]
    assert _answer(evs).reasoning_text == "AB"


@settings(max_examples=60, deadline=None)
@given(
    texts=st.lists(
        st.tuples(st.sampled_from(["same", "rc", "r", "both"]), st.text(min_size=1, max_size=5)),
        max_size=12,
    ),
    cuts=st.lists(st.integers(0, 10_000), max_size=8),
)
def test_reasoning_fields_any_mix_any_split(texts: list[tuple[str, str]], cuts: list[int]) -> None:
    chunks, want = [], []
    for kind, t in texts:
        delta = {
            "same": {"reasoning_content": t, "reasoning": t},
            "rc": {"reasoning_content": t},
            "r": {"reasoning": t},
            "both": {"reasoning_content": t, "reasoning": t + "!"},
        }[kind]
        want += [t, t + "!"] if kind == "both" else [t]
        chunks.append(_ch(delta))
    data = b"".join([*WARM, *chunks, _ch({}, "stop"), DONE])
    whole = _run(data)
    assert [e.text for e in whole if isinstance(e, ReasoningEvent)] == want
    assert _wire(list(iter_events(_splits(data, cuts)))) == _wire(whole)


# -- 2. tool calls without index, and of the wrong shape ---------------------------------


def _tc(**fields: Any) -> dict[str, Any]:
    return {"tool_calls": [fields]}


def _fn(name: str | None = None, args: str | None = None) -> dict[str, Any]:
    fn: dict[str, Any] = {}
    if name is not None:
        fn["name"] = name
    if args is not None:
        fn["arguments"] = args
    return fn


def _calls(a: CitedAnswer) -> list[tuple[str | None, str | None, str]]:
    return [(t.id, t.name, t.arguments) for t in a.tool_calls]


def test_indexless_calls_with_new_ids_are_separate_calls() -> None:
    # Gemini's OpenAI-compatible stream: no index; each call whole, one per chunk.
    evs = _run(
        _ch(_tc(id="a", type="function", function=_fn("f", '{"x":1}'))),
        _ch(_tc(id="b", type="function", function=_fn("g", '{"y":2}'))),
        _ch({}, "tool_calls"),
        DONE,
    )
    assert [e.tool_index for e in evs if isinstance(e, ToolCallEvent)] == [0, 1]
    assert _calls(_answer(evs)) == [("a", "f", '{"x":1}'), ("b", "g", '{"y":2}')]
    assert _codes(evs) == []


def test_indexless_rules_known_id_fragment_and_new_name() -> None:
    evs = _run(
        *WARM,
        _ch(
            {
                "tool_calls": [
                    {"id": "a", "function": _fn("f", '{"x":')},
                    {"id": "b", "function": _fn("g", "{")},
                ]
            }
        ),
        _ch(_tc(function=_fn(args="}"))),  # no id, no index: the most recent call (b)
        _ch(_tc(id="a", function=_fn(args="1}"))),  # a known id continues that call
        _ch(_tc(function=_fn("h", "{}"))),  # a name while the last call has one: a new call
        _ch({}, "tool_calls"),
        DONE,
    )
    a = _answer(evs)
    assert _calls(a) == [("a", "f", '{"x":1}'), ("b", "g", "{}"), (None, "h", "{}")]
    assert [e.tool_index for e in evs if isinstance(e, ToolCallEvent)] == [0, 1, 1, 0, 2]
    assert _codes(evs) == [] and a.text == WARM_TEXT


def test_indexed_then_indexless_new_id_takes_the_next_free_index() -> None:
    evs = _run(
        _ch(_tc(index=0, id="a", function=_fn("f", "{}"))),
        _ch(_tc(index=3, id="c", function=_fn("h", "{}"))),
        _ch(_tc(id="z", function=_fn("g", "{}"))),
        _ch({}, "tool_calls"),
        DONE,
    )
    assert [e.tool_index for e in evs if isinstance(e, ToolCallEvent)] == [0, 3, 4]


def test_indexless_calls_of_another_choice_are_placed_apart() -> None:
    def ch1(call: dict[str, Any]) -> bytes:
        obj = {"choices": [{"index": 1, "delta": {"tool_calls": [call]}}]}
        return b"data: " + orjson.dumps(obj) + b"\n\n"

    evs = _run(
        _ch(_tc(id="a", function=_fn("f", "{}"))),
        ch1({"id": "p", "function": _fn("f", "{}")}),
        ch1({"id": "q", "function": _fn("g", "{}")}),
        _ch({}, "stop"),
        DONE,
    )
    tools = [(e.index, e.tool_index) for e in evs if isinstance(e, ToolCallEvent)]
    assert tools == [(0, 0), (1, 0), (1, 1)]


@pytest.mark.parametrize(
    "call",
    [
        {"index": 0, "id": "a", "function": ["f"]},
        {"index": 0, "id": "a", "function": "f"},
        {"index": 0, "id": "a", "type": 5, "function": _fn("f", "{}")},
        {"index": 0, "id": "a", "function": {"name": 5, "arguments": "{}"}},
        {"index": 0, "id": "a", "function": {"name": "f", "arguments": 5}},
        {"index": 0, "id": "a", "function": {"name": "f", "arguments": [1]}},
        {"index": 0, "id": 7, "function": _fn("f", "{}")},
        {"index": "0", "id": "a", "function": _fn("f", "{}")},
        {"index": True, "id": "a", "function": _fn("f", "{}")},
        {"index": -1, "id": "a", "function": _fn("f", "{}")},
        "call",
    ],
)
def test_tool_call_of_the_wrong_shape_is_bad_tool_call_and_not_folded(call: Any) -> None:
    evs = _run(*WARM, _ch({"tool_calls": [call]}), _ch({}, "tool_calls"), DONE)
    assert _codes(evs) == ["bad_tool_call"]
    assert not [e for e in evs if isinstance(e, ToolCallEvent)]
    assert _answer(evs).tool_calls == [] and _answer(evs).text == WARM_TEXT


def test_arguments_sent_parsed_and_null_fields_are_accepted() -> None:
    call = {
        "index": None,
        "id": "a",
        "type": None,
        "function": {"name": "f", "arguments": {"k": 1}},
    }
    evs = _run(_ch({"tool_calls": [call]}), _ch(_tc(function=None)), _ch({}, "tool_calls"), DONE)
    assert _codes(evs) == []
    assert _calls(_answer(evs)) == [("a", "f", '{"k":1}')]


_op = st.one_of(
    st.tuples(st.just("id"), st.sampled_from("abc"), st.sampled_from(["", "{", "1", "}"])),
    st.tuples(st.just("frag"), st.just(""), st.sampled_from(["", "x", ","])),
)


@settings(max_examples=80, deadline=None)
@given(
    ops=st.lists(_op, min_size=1, max_size=15), cuts=st.lists(st.integers(0, 10_000), max_size=8)
)
def test_indexless_placement_matches_the_rule_any_split(
    ops: list[tuple[str, str, str]], cuts: list[int]
) -> None:
    # The rule, written plainly: a known id continues its call, a new id starts the
    # next one, a fragment (no id, no name) continues the most recent call.
    want: dict[str, list[str]] = {}
    order: list[str] = []
    last: str | None = None
    chunks = []
    for kind, cid, args in ops:
        if kind == "id":
            if cid not in want:
                want[cid] = []
                order.append(cid)
            last = cid
            chunks.append(_ch(_tc(id=cid, function=_fn(args=args))))
        else:
            if last is None:
                last = "<none>"
                want[last] = []
                order.append(last)
            chunks.append(_ch(_tc(function=_fn(args=args))))
        want[last].append(args)
    data = b"".join([*WARM, *chunks, _ch({}, "tool_calls"), DONE])
    whole = _run(data)
    a = _answer(whole)
    expect = [(None if c == "<none>" else c, "".join(want[c])) for c in order]
    assert [(t.id, t.arguments) for t in a.tool_calls] == expect
    assert {e.code for e in a.errors} <= {"bad_tool_arguments"}
    assert _wire(list(iter_events(_splits(data, cuts)))) == _wire(whole)


# -- 3. url_citation annotations ---------------------------------------------------------


def _ann(**uc: Any) -> dict[str, Any]:
    return {"type": "url_citation", "url_citation": uc}


@pytest.mark.parametrize(
    "note",
    [
        _ann(url=5, start_index=0, end_index=1),
        _ann(title="t", start_index=0, end_index=1),
        _ann(url="u", title=3, start_index=0, end_index=1),
        _ann(url="u", start_index=2, end_index=1),
        _ann(url="u", start_index=-1, end_index=1),
        _ann(url="u", start_index=50, end_index=-3),
        _ann(url="u", start_index=0.5, end_index=1),
        _ann(url="u", start_index=False, end_index=True),
        _ann(url="u", start_index=0),
        _ann(url="u", end_index="2"),
        {"type": "file_citation", "file_citation": {}},
    ],
)
def test_bad_annotation_is_an_error_and_not_a_citation(note: dict[str, Any]) -> None:
    evs = _run(_ch({"content": "abc"}), _ch({"annotations": [note]}), _ch({}, "stop"), DONE)
    a = _answer(evs)
    assert _codes(evs) == ["bad_annotation"]
    assert a.citations == [] and a.citation_spans == [] and a.text == "abc"
    assert "citations" not in [e.type for e in evs]


def test_annotation_without_span_is_a_citation_with_no_span() -> None:
    evs = _run(
        _ch({"content": "abc"}), _ch({"annotations": [_ann(url="u")]}), _ch({}, "stop"), DONE
    )
    a = _answer(evs)
    assert _codes(evs) == [] and [c.source_url for c in a.citations] == ["u"]
    assert [(s.start, s.end) for s in a.citation_spans] == [(None, None)]


@pytest.mark.parametrize("after_finish", [False, True])
def test_span_beyond_the_final_text_is_reported_and_kept(after_finish: bool) -> None:
    notes = _ch(
        {
            "annotations": [
                _ann(url="in", start_index=0, end_index=3),
                _ann(url="out", start_index=1, end_index=9),
            ]
        }
    )
    body = [_ch({"content": "abc"}), notes, _ch({}, "stop")]
    if after_finish:  # spans index the final text: checked when they arrive after it
        body = [body[0], body[2], notes]
    evs = _run(*body, DONE)
    a = _answer(evs)
    errs = [e for e in evs if isinstance(e, ErrorEvent)]
    assert [e.code for e in errs] == ["bad_annotation"] and "3 characters" in errs[0].message
    assert [c.source_url for c in a.citations] == ["in", "out"]


def test_span_ending_after_text_still_streaming_is_not_an_error() -> None:
    # The annotation arrives before the text it points at: fine once the text is final.
    evs = _run(
        _ch({"content": "ab", "annotations": [_ann(url="u", start_index=0, end_index=5)]}),
        _ch({"content": "cde"}),
        DONE,  # no finish: [DONE] makes the text final
    )
    assert _codes(evs) == [] and _answer(evs).text == "abcde"


class _CountingBuilder(AnswerBuilder):
    """Counts the list elements assigned to ``citations`` / ``citation_spans``: every
    element copied into a new list on the way (what a per-annotation rebuild multiplies)."""

    def __init__(self) -> None:
        self.copied = 0
        super().__init__()

    @property
    def citations(self) -> Any:
        return self.__dict__["_c"]

    @citations.setter
    def citations(self, v: Any) -> None:
        self.copied += len(v)
        self.__dict__["_c"] = v

    @property
    def citation_spans(self) -> Any:
        return self.__dict__["_s"]

    @citation_spans.setter
    def citation_spans(self, v: Any) -> None:
        self.copied += len(v)
        self.__dict__["_s"] = v


@pytest.mark.parametrize("n", [1, MAX_URL_CITATIONS, 20_000])
def test_annotations_in_one_chunk_cost_linear_copies(n: int) -> None:
    b = _CountingBuilder()
    it = ChunkInterpreter(b)
    note = _ann(url="u", title="t", start_index=0, end_index=1)
    payload = orjson.dumps(
        {"choices": [{"index": 0, "delta": {"content": "a", "annotations": [note] * n}}]}
    )
    out = it.feed(payload)
    kept = min(n, MAX_URL_CITATIONS)  # beyond the cap: reported once, dropped
    assert len(b.citations) == kept and len(b.citation_spans) == kept
    assert [c.document_index for c in b.citations[:3]] == list(range(min(n, 3)))
    assert [e.type for e in out].count("citations") == 1
    assert [e.code for e in out if isinstance(e, ErrorEvent)] == ["too_many_citations"] * (n > kept)
    # One list of each per chunk: 2 * kept elements (a rebuild per annotation was n * n).
    assert b.copied == 2 * kept


@settings(max_examples=60, deadline=None)
@given(
    batches=st.lists(
        st.lists(st.tuples(st.booleans(), st.integers(0, 4), st.integers(0, 4)), max_size=6),
        max_size=5,
    ),
    cuts=st.lists(st.integers(0, 10_000), max_size=6),
)
def test_annotations_valid_ones_become_citations_any_split(
    batches: list[list[tuple[bool, int, int]]], cuts: list[int]
) -> None:
    chunks: list[bytes] = []
    want: list[tuple[str, int, int]] = []
    bad = 0
    for batch in batches:
        notes = []
        for ok_url, s, e in batch:
            notes.append(_ann(url=f"u{len(want)}" if ok_url else None, start_index=s, end_index=e))
            if ok_url and s <= e:
                want.append((f"u{len(want)}", s, e))
            else:
                bad += 1
        chunks.append(_ch({"annotations": notes}))
    data = b"".join([_ch({"content": "abcd"}), *chunks, _ch({}, "stop"), DONE])
    whole = _run(data)
    a = _answer(whole)
    got = [
        (c.source_url, s.start, s.end) for c, s in zip(a.citations, a.citation_spans, strict=True)
    ]
    assert got == want
    assert [c.document_index for c in a.citations] == list(range(len(want)))
    beyond = sum(1 for _, _, e in want if e > 4)
    assert _codes(whole).count("bad_annotation") == bad + beyond
    assert _wire(list(iter_events(_splits(data, cuts)))) == _wire(whole)


# -- 4. named SSE events ------------------------------------------------------------------


def _chunk_obj(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "a",
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def test_done_under_a_named_event_ends_the_stream() -> None:
    evs = _run(
        _named(_chunk_obj({"content": "hi"})),
        _named(b"[DONE]"),
        _named(_chunk_obj({"content": " LEAK"})),
    )
    a = _answer(evs)
    assert a.text == "hi" and _codes(evs) == [] and a.complete is True


def test_done_under_a_named_event_after_the_fast_loop() -> None:
    evs = _run(*WARM, _named(b"[DONE]", b"done"), _ch({"content": "LEAK"}))
    assert _answer(evs).text == WARM_TEXT and _codes(evs) == []


def test_invalid_chunk_under_a_named_event_is_invalid_json_naming_it() -> None:
    evs = _run(_named(b'{"choices": [oops'), _ch({"content": "hi"}, "stop"), DONE)
    errs = [e for e in evs if isinstance(e, ErrorEvent)]
    assert [e.code for e in errs] == ["invalid_json"] and "'completion'" in errs[0].message
    assert _answer(evs).text == "hi"


def test_usage_only_chunk_under_a_named_event_is_usage() -> None:
    usage = {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}
    evs = _run(
        _named(_chunk_obj({"content": "hi"})),
        _named({"id": "a", "object": "chat.completion.chunk", "usage": usage}),
        _named(_chunk_obj({}, "stop")),
        DONE,
    )
    assert [e.type for e in evs].count("usage") == 1
    got = _answer(evs).usage
    assert got is not None and got.total_tokens == 3


@pytest.mark.parametrize(
    "payload",
    [{"error": {"code": 502, "message": "x"}}, {"object": "error", "message": "boom", "code": 500}],
)
def test_error_under_a_named_event_is_an_error_and_cuts(payload: dict[str, Any]) -> None:
    evs = _run(_named(_chunk_obj({"content": "hi"})), _named(payload), DONE)
    a = _answer(evs)
    assert [(e.code, e.status) for e in evs if isinstance(e, ErrorEvent)] in (
        [("502", 502)],
        [("500", 500)],
    )
    assert a.complete is False and a.text == "hi"


def test_choices_of_the_wrong_type_under_a_named_event_is_bad_chunk() -> None:
    evs = _run(_named({"choices": {"index": 0}}), _ch({"content": "hi"}, "stop"), DONE)
    assert _codes(evs) == ["bad_chunk"]


@pytest.mark.parametrize(
    ("name", "payload"),
    [
        (b"ping", b"{}"),
        (b"ping", b""),
        (b"keepalive", b"keepalive"),
        (b"ping", b'{"type": "ping"}'),
        (b"metadata", b'{"object": ["list"], "trace": 1}'),
        (b"completion", b"[1, 2]"),
        (b"completion", b'"text"'),
        (b"progress", b'{"step": 3, "of": 7}'),
    ],
)
def test_payloads_that_are_not_chat_chunks_are_ignored(name: bytes, payload: bytes) -> None:
    evs = _run(_ch({"content": "hi"}), _named(payload, name), _ch({}, "stop"), DONE)
    assert _codes(evs) == [] and [e.type for e in evs] == ["meta", "token", "finish", "done"]


@settings(max_examples=50, deadline=None)
@given(
    names=st.lists(
        st.sampled_from([b"", b"message", b"completion", b"ping"]), min_size=3, max_size=10
    ),
    cuts=st.lists(st.integers(0, 10_000), max_size=8),
)
def test_named_events_any_split(names: list[bytes], cuts: list[int]) -> None:
    parts = []
    for i, name in enumerate(names):
        obj = _chunk_obj({"content": f"t{i}"})
        if name == b"ping":
            parts.append(_named(b"{}", name))  # a ping carries nothing
        else:
            parts.append(_named(obj, name) if name else b"data: " + orjson.dumps(obj) + b"\n\n")
    data = b"".join([*parts, _named(b"[DONE]", b"completion"), _ch({"content": "LEAK"})])
    whole = _run(data)
    want = "".join(f"t{i}" for i, n in enumerate(names) if n != b"ping")
    assert _answer(whole).text == want
    assert _wire(list(iter_events(_splits(data, cuts)))) == _wire(whole)


# -- 5. x_groq.usage ----------------------------------------------------------------------

U = {"prompt_tokens": 4, "completion_tokens": 5, "total_tokens": 9}


def _usage_events(evs: list[Event]) -> list[tuple[Any, ...]]:
    return [
        (e.prompt_tokens, e.completion_tokens, e.total_tokens)
        for e in evs
        if isinstance(e, UsageEvent)
    ]


def test_xgroq_usage_on_a_content_chunk_after_the_fast_loop() -> None:
    evs = _run(
        *WARM, _ch({"content": "X"}, x_groq={"id": "req", "usage": U}), _ch({}, "stop"), DONE
    )
    a = _answer(evs)
    assert a.usage is not None and a.usage.total_tokens == 9
    assert _usage_events(evs) == [(4, 5, 9)] and a.text == WARM_TEXT + "X"


@pytest.mark.parametrize("where", ["first", "middle", "finish", "trailing"])
def test_xgroq_usage_captured_on_whichever_chunk_carries_it(where: str) -> None:
    xg = {"id": "req", "usage": U}
    first = _ch(
        {"role": "assistant", "content": ""}, x_groq=xg if where == "first" else {"id": "req"}
    )
    mid = _ch({"content": "m"}, x_groq=xg) if where == "middle" else _ch({"content": "m"})
    fin = _ch({}, "stop", x_groq=xg) if where == "finish" else _ch({}, "stop")
    tail = [b"data: " + orjson.dumps({"id": "x", "choices": [], "x_groq": xg}) + b"\n\n"]
    evs = _run(first, *WARM, mid, fin, *(tail if where == "trailing" else []), DONE)
    assert _usage_events(evs) == [(4, 5, 9)]
    assert _answer(evs).text == WARM_TEXT + "m" and _codes(evs) == []


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 12), cuts=st.lists(st.integers(0, 10_000), max_size=8))
def test_xgroq_usage_on_every_chunk_gives_one_usage_event(n: int, cuts: list[int]) -> None:
    chunks = [
        _ch({"content": f"c{i}"}, x_groq={"usage": {**U, "completion_tokens": i}}) for i in range(n)
    ]
    data = b"".join([*WARM, *chunks, DONE])
    whole = _run(data)
    assert _usage_events(whole) == [(4, n - 1, 9)]
    assert _wire(list(iter_events(_splits(data, cuts)))) == _wire(whole)


def test_top_level_usage_on_every_chunk_after_the_fast_loop_gives_one_usage_event() -> None:
    chunks = [_ch({"content": f"c{i}"}, usage={**U, "completion_tokens": i}) for i in range(5)]
    evs = _run(*WARM, *chunks, _ch({}, "stop"), DONE)
    assert _usage_events(evs) == [(4, 4, 9)]


# -- 6. a provider error in a chunk cuts the answer ---------------------------------------

ERR = b'data: {"error": {"code": 502, "message": "upstream"}}\n\n'


@pytest.mark.parametrize(
    "tail",
    [[DONE], [_ch({}, "stop"), DONE], [_ch({"content": " more"}), DONE]],
    ids=["done", "finish-then-done", "more-content"],
)
def test_error_object_then_done_is_incomplete_and_not_enriched(tail: list[bytes]) -> None:
    p = ChunkInterpreter()
    out: list[Event] = []
    for part in [_ch({"content": "hi"}), ERR, *tail]:
        out += p.feed(part[len(b"data: ") : -2])
    out += p.close()
    assert p.builder.complete is False and "502" in _codes(out)
    assert skip_reason(p.builder, enrich_incomplete=False) == "incomplete"
    assert skip_reason(p.builder, enrich_incomplete=True) is None
    a = _answer(_run(_ch({"content": "hi"}), ERR, *tail))
    assert a.complete is False and a.text.startswith("hi")


def test_error_in_the_finish_chunk_cuts_but_after_the_finish_does_not() -> None:
    err = {"code": 500, "message": "x"}
    a = _answer(_run(_ch({"content": "hi"}), _ch({}, "stop", error=err), DONE))
    assert a.complete is False
    # Choice 0 finished in an earlier chunk: nothing of the answer was lost.
    a = _answer(_run(_ch({"content": "hi"}), _ch({}, "stop"), ERR, DONE))
    assert a.complete is True and [e.code for e in a.errors] == ["502"]


def test_error_frame_event_still_does_not_cut() -> None:
    # `event: error` frames keep their documented meaning: reported, the stream goes on.
    frame = b'event: error\ndata: {"error": {"message": "Overloaded"}}\n\n'
    a = _answer(_run(_ch({"content": "a"}), frame, _ch({"content": "b"}, "stop"), DONE))
    assert a.complete is True and a.text == "ab"
