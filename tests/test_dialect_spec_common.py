"""Spec suite, across dialects (DESIGN.md "Dialects"): ``auto`` decides from the first event and
never guesses later; the three entry points agree; no exception escapes ``iter_events``."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests._dialect_streams import (
    AnthropicBlock,
    ResponsesItem,
    anthropic_stream,
    check_run,
    cohere_stream,
    collect,
    gemini_stream,
    responses_stream,
    run,
    split_at,
    sse,
    wire,
)

CHAT = sse(
    {
        "id": "c1",
        "object": "chat.completion.chunk",
        "model": "m",
        "choices": [{"index": 0, "delta": {"content": "chat!"}}],
    }
)

STREAMS = {
    "anthropic": anthropic_stream([AnthropicBlock("text", ["Un ", "deux"])]),
    "responses": responses_stream([ResponsesItem("message", ["Un ", "deux"])]),
    "gemini": gemini_stream(["Un ", "deux"]),
    "cohere": cohere_stream(["Un ", "deux"]),
    "chat": sse(
        {
            "id": "c1",
            "object": "chat.completion.chunk",
            "model": "m",
            "choices": [{"index": 0, "delta": {"content": "Un "}}],
        }
    )
    + sse(
        {
            "id": "c1",
            "object": "chat.completion.chunk",
            "model": "m",
            "choices": [{"index": 0, "delta": {"content": "deux"}, "finish_reason": "stop"}],
        }
    )
    + b"data: [DONE]\n\n",
}

# a first event of each dialect (a complete SSE block)
FIRSTS = {
    "anthropic": STREAMS["anthropic"][: STREAMS["anthropic"].index(b"\n\n") + 2],
    "responses": STREAMS["responses"][: STREAMS["responses"].index(b"\n\n") + 2],
    "gemini": sse(
        {"candidates": [{"index": 0, "content": {"role": "model", "parts": [{"text": "G"}]}}]}
    ),
    "cohere": STREAMS["cohere"][: STREAMS["cohere"].index(b"\n\n") + 2],
    "chat": CHAT,
}
# a later event of each dialect that carries text
LATERS = {
    "anthropic": sse(
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "text_delta", "text": "INTRUDER"},
        },
        "content_block_delta",
    ),
    "responses": sse(
        {
            "type": "response.output_text.delta",
            "item_id": "m",
            "output_index": 0,
            "content_index": 0,
            "delta": "INTRUDER",
            "sequence_number": 9,
        },
        "response.output_text.delta",
    ),
    "gemini": sse(
        {
            "candidates": [
                {"index": 0, "content": {"role": "model", "parts": [{"text": "INTRUDER"}]}}
            ]
        }
    ),
    "cohere": sse(
        {
            "type": "content-delta",
            "index": 0,
            "delta": {"message": {"content": {"text": "INTRUDER"}}},
        },
        "content-delta",
    ),
    "chat": sse({"choices": [{"index": 0, "delta": {"content": "INTRUDER"}}]}),
}


@pytest.mark.parametrize("dialect", sorted(STREAMS))
def test_auto_equals_explicit(dialect: str) -> None:
    events = run(STREAMS[dialect], "auto")
    a = check_run(events)
    assert a.text == "Un deux"
    assert wire(events) == wire(run(STREAMS[dialect], dialect))
    assert a.finish_reason == "stop"


@pytest.mark.parametrize("dialect", sorted(STREAMS))
def test_auto_detects_from_first_event_split_byte_by_byte(dialect: str) -> None:
    data = STREAMS[dialect]
    assert wire(run([data[i : i + 1] for i in range(len(data))], "auto")) == wire(
        run(data, dialect)
    )


@pytest.mark.parametrize(
    ("first", "later"), [(f, g) for f in sorted(FIRSTS) for g in sorted(LATERS) if f != g]
)
def test_stream_changing_dialect_is_a_typed_error_never_a_guess(first: str, later: str) -> None:
    events = run(FIRSTS[first] + LATERS[later], "auto")
    a = check_run(events)
    assert "INTRUDER" not in a.text
    assert collect(events).get("error"), (first, later)


@pytest.mark.parametrize("dialect", ["anthropic", "cohere", "gemini", "responses"])
def test_explicit_dialect_given_another_dialects_stream_is_a_typed_error(dialect: str) -> None:
    other = "gemini" if dialect != "gemini" else "anthropic"
    events = run(STREAMS[other], dialect)
    check_run(events)
    assert collect(events).get("error")


def test_unknown_dialect_name_is_rejected_at_call() -> None:
    from streamcite import iter_events

    with pytest.raises(ValueError):
        list(iter_events([STREAMS["chat"]], dialect="klingon"))  # type: ignore[arg-type]


@pytest.mark.parametrize("dialect", sorted(STREAMS))
def test_chat_stream_parser_with_dialect(dialect: str) -> None:
    from streamcite import ChatStreamParser

    p = ChatStreamParser(dialect=dialect)  # type: ignore[call-arg]
    evs = []
    for i in range(0, len(STREAMS[dialect]), 7):
        evs += p.feed(STREAMS[dialect][i : i + 7])
    evs += p.close()
    evs.append(p.done_event())
    assert wire(evs) == wire(run(STREAMS[dialect], dialect))


@pytest.mark.parametrize("dialect", sorted(STREAMS))
async def test_aiter_events_with_dialect(dialect: str) -> None:
    from streamcite import aiter_events

    async def chunks() -> AsyncIterator[bytes]:
        data = STREAMS[dialect]
        for i in range(0, len(data), 5):
            yield data[i : i + 5]

    evs = [e async for e in aiter_events(chunks(), dialect="auto")]  # type: ignore[call-arg]
    assert wire(evs) == wire(run(STREAMS[dialect], dialect))


@pytest.mark.parametrize("dialect", [*sorted(STREAMS), "auto"])
def test_no_exception_escapes_on_garbage(dialect: str) -> None:
    garbage = [
        b"data: {}\n\n",
        b"data: null\n\n",
        b"data: 1e999\n\n",
        b"event: x\ndata: []\n\n",
        b'data: "s"\n\n',
        b"\xff\xfe\n\n",
    ]
    for g in garbage:
        check_run(run(g, dialect))


@settings(max_examples=80, deadline=None)
@given(
    st.sampled_from(sorted(STREAMS)),
    st.binary(max_size=60),
    st.integers(min_value=0, max_value=400),
)
def test_fuzzed_streams_never_raise(dialect: str, junk: bytes, at: int) -> None:
    data = STREAMS[dialect]
    at = min(at, len(data))
    mutated = data[:at] + junk + data[at:]
    for d in (dialect, "auto"):
        check_run(run(split_at(mutated, [at, at + 3]), d))


def test_empty_stream_is_incomplete_not_a_crash() -> None:
    for d in [*STREAMS, "auto"]:
        a = check_run(run(b"", d))
        assert a.text == "" and a.complete is False


def test_citation_span_and_finish_fields_on_the_wire() -> None:
    events = run(STREAMS["anthropic"], "anthropic")
    fin = next(e for e in events if e.type == "finish").to_dict()
    assert fin["raw_reason"] == "end_turn"
    from streamcite import CitationSpan

    span = CitationSpan(document_index=0, start=1, end=2, start_utf16=1, end_utf16=3)  # type: ignore[call-arg]
    assert (span.start_utf16, span.end_utf16) == (1, 3)
    d = events[-1].to_dict()["answer"]
    assert "citation_spans" in d
    from streamcite.core.models import Citation

    assert Citation().provider_metadata in (None, {})  # type: ignore[attr-defined]


def test_chat_dialect_keeps_raw_reason() -> None:
    fin = collect(run(STREAMS["chat"], "chat"))["finish"]
    # the chat reason is the provider's own: raw_reason repeats it or is null (documented)
    assert fin[0].reason == "stop" and fin[0].raw_reason in ("stop", None)


@pytest.mark.parametrize(
    ("dialect", "ident", "model"),
    [
        ("anthropic", "msg_01SpecSuite", "claude-sonnet-4-5"),
        ("responses", "resp_spec01", "gpt-4.1-mini"),
        ("gemini", "spec-gemini-01", "gemini-2.5-flash"),
        ("cohere", "c0ffee00-0000-4000-8000-000000000001", None),
    ],
)
def test_meta_event_once_with_id_and_model(dialect: str, ident: str, model: str | None) -> None:
    events = run(STREAMS[dialect], dialect)
    a = check_run(events)
    metas = collect(events).get("meta", [])
    assert len(metas) == 1
    assert metas[0].id == ident and a.id == ident
    if model is not None:
        assert metas[0].model == model and a.model == model


def _cited() -> dict[str, bytes]:
    from tests.test_dialect_spec_deep import CITED

    return CITED


@pytest.mark.parametrize("dialect", ["anthropic", "cohere", "responses"])
def test_stream_without_event_lines_reads_the_same(dialect: str) -> None:
    # each of these APIs repeats the event name as the data's "type": a proxy that drops the
    # event: lines changes nothing ("auto decides from its event: name or its JSON keys")
    import re

    data = _cited()[dialect]
    stripped = re.sub(rb"event: [^\n]*\n", b"", data)
    whole = wire(run(data, dialect))
    for d in (dialect, "auto"):
        assert wire(run(stripped, d)) == whole


@pytest.mark.parametrize("dialect", ["anthropic", "cohere", "gemini", "responses"])
def test_strip_mode_hides_markers_in_every_dialect(dialect: str) -> None:
    from streamcite import iter_events

    parts = ["Paris [", "1] est", " belle[2]."]
    data = {
        "anthropic": anthropic_stream([AnthropicBlock("text", parts)]),
        "gemini": gemini_stream(parts),
        "responses": responses_stream([ResponsesItem("message", parts)]),
        "cohere": cohere_stream(parts),
    }[dialect]
    events = list(iter_events([data], dialect=dialect, marker_mode="strip"))  # type: ignore[call-arg]
    a = events[-1].answer
    assert a.text == "".join(parts)
    assert a.display_text == "Paris est belle."
    assert "".join(e.display for e in events if e.type == "token") == "Paris est belle."
    assert [r.number for r in a.citation_refs] == [1, 2]


@pytest.mark.parametrize("dialect", ["anthropic", "cohere", "gemini", "responses"])
def test_events_round_trip_through_their_json(dialect: str) -> None:
    from streamcite.core.events import event_from_json, event_to_json

    for e in run(_cited()[dialect], dialect):
        assert event_from_json(event_to_json(e)).to_dict() == e.to_dict()
