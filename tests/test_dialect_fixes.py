"""Regressions of issue 24's open questions on the dialects (docs/provider-streams.md
"Dialects"), and of the Responses per-event limit: each test fails on the code before."""

from __future__ import annotations

import tracemalloc

from streamcite.core.api import ChatStreamParser
from streamcite.core.bounds import MAX_EVENT_BYTES, StreamBounds
from tests._dialect_streams import (
    ResponsesItem,
    check_run,
    cohere_stream,
    collect,
    gemini_chunk,
    responses_stream,
    run,
    sse,
)

R = ResponsesItem


def test_cohere_citation_without_sources_is_reported() -> None:
    c = {"start": 0, "end": 3, "text": "Oui", "sources": [], "type": "TEXT_CONTENT"}
    cit = {"type": "citation-start", "index": 0, "delta": {"message": {"citations": c}}}
    events = run(cohere_stream(["Oui."], tail=sse(cit, "citation-start")), "cohere")
    a = check_run(events)
    errs = collect(events)["error"]
    assert [e.code for e in errs] == ["bad_citations"]
    assert "without sources" in errs[0].message
    assert a.citation_spans == [] and a.complete is True  # the answer itself is whole


def test_responses_arguments_of_an_unknown_item_are_no_tool_call() -> None:
    delta = {
        "type": "response.function_call_arguments.delta",
        "item_id": "fc_nobody",
        "output_index": 5,
        "delta": '{"q": 1}',
    }
    events = run(
        responses_stream([R("message", ["Oui."])], tail=sse(delta, delta["type"])), "responses"
    )
    a = check_run(events)
    g = collect(events)
    assert "tool_call" not in g and a.tool_calls == []
    assert [e.code for e in g["error"]] == ["bad_tool_call"]
    assert a.finish_reason == "stop"


def test_gemini_empty_chunk_is_an_error_not_an_empty_meta() -> None:
    stream = sse(gemini_chunk([{"text": "Oui."}], finish="STOP"))
    events = run(b"data: {}\n\n" + stream, "gemini")
    g = collect(events)
    assert [e.code for e in g["error"]] == ["bad_chunk"]
    assert len(g["meta"]) == 1 and g["meta"][0].model == "gemini-2.5-flash"
    assert check_run(events).text == "Oui."


def test_gemini_segment_beyond_the_answer_message_has_no_none() -> None:
    grounding = {
        "groundingChunks": [{"web": {"uri": "https://e.org/", "title": "e"}}],
        "groundingSupports": [
            {"segment": {"startIndex": 0, "endIndex": 99}, "groundingChunkIndices": [0]}
        ],
    }
    events = run(sse(gemini_chunk([{"text": "Oui."}], finish="STOP", grounding=grounding)))
    msgs = [e.message for e in collect(events)["error"]]
    assert len(msgs) == 1 and "beyond the answer" in msgs[0]
    assert "None" not in msgs[0]


def test_responses_event_limit_covers_an_answer_at_the_cap() -> None:
    from streamcite.core.dialects.responses import REPEAT_BYTES_PER_CHAR, event_limit

    b = StreamBounds(max_answer_chars=1000)
    assert event_limit(1 << 16, b) == (1 << 16) + REPEAT_BYTES_PER_CHAR * 1000
    p = ChatStreamParser(dialect="responses", bounds=b, max_event_size=1 << 16)
    assert p._decoder.max_event_size == event_limit(1 << 16, b)
    # Other dialects keep the limit given (by default, the bounds' max_event_bytes).
    assert ChatStreamParser(dialect="anthropic")._decoder.max_event_size == MAX_EVENT_BYTES
    assert ChatStreamParser(dialect="anthropic", max_event_size=99)._decoder.max_event_size == 99


def test_auto_raises_the_limit_once_it_reads_responses() -> None:
    parts = ["中文字" * 300] * 40
    data = responses_stream([R("message", parts)])
    p = ChatStreamParser(max_event_size=1 << 16)  # auto
    first = data.index(b"\n\n") + 2
    events = p.feed(data[:first]) + p.feed(data[first:]) + p.close()
    events.append(p.done_event())
    a = check_run(events)
    assert p.dialect == "responses"
    assert a.complete is True and a.finish_reason == "stop" and a.usage is not None
    assert "error" not in collect(events)


def test_responses_large_answer_memory_is_within_a_few_times_its_bytes() -> None:
    """The raised limit holds one repeat event at a time: the peak of reading an answer
    whose repeats are each well beyond max_event_size stays a small multiple of one
    repeat (measured: 14x, orjson's own peak parsing response.completed being ~13x the
    bytes it parses; the .done echoes are not parsed)."""
    parts = ["中文字" * 1000] * 200  # 600,000 characters, 1.8 MB per repeat
    data = responses_stream([R("message", parts)])
    chunks = [data[i : i + 65536] for i in range(0, len(data), 65536)]
    tracemalloc.start()
    try:
        p = ChatStreamParser(dialect="responses", max_event_size=1 << 16)
        n = 0
        for c in chunks:
            n += len(p.feed(c))
        p.close()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    a = p.answer
    assert a.complete is True and len(a.text) == 600_000 and a.usage is not None
    repeat = len("".join(parts).encode())
    assert peak < 16 * repeat, (peak, repeat)


def test_a_large_event_named_as_an_echo_but_holding_else_is_read() -> None:
    """Only an event whose data starts with the ignored type its name says is passed
    unparsed: a delta under an echo's name is read (and its text kept)."""
    big = "x" * 70_000
    hidden = {
        "type": "response.output_text.delta",
        "item_id": "msg_0",
        "output_index": 0,
        "content_index": 0,
        "delta": big,
    }
    events = run(
        responses_stream([R("message", ["Oui."])], tail=sse(hidden, "response.output_text.done")),
        "responses",
    )
    assert check_run(events).text.endswith(big)
