"""The reasoning, tool_call and refusal events and the answer fields they fill."""

from __future__ import annotations

import orjson

from streamcite.core.answer import MAX_ERRORS, AnswerBuilder
from streamcite.core.models import Citation
from streamcite.events import (
    CitationsEvent,
    ErrorEvent,
    ReasoningEvent,
    RefusalEvent,
    ToolCallEvent,
)
from streamcite.models import CitationSpan


def test_wire_forms_type_first_unknown_null() -> None:
    assert list(orjson.loads(ReasoningEvent(0, "hm").to_json()).items()) == [
        ("type", "reasoning"),
        ("index", 0),
        ("text", "hm"),
    ]
    assert orjson.loads(ToolCallEvent(1, 2, arguments='{"a"').to_json()) == {
        "type": "tool_call",
        "index": 1,
        "tool_index": 2,
        "id": None,
        "name": None,
        "arguments": '{"a"',
    }
    assert next(iter(ToolCallEvent().to_dict())) == "type"
    assert RefusalEvent(0, "no").to_dict() == {"type": "refusal", "index": 0, "text": "no"}
    ev = CitationsEvent([Citation(source_url="u", document_index=0)], [CitationSpan(0, 3, 9)])
    assert ev.to_dict()["spans"] == [
        {
            "document_index": 0,
            "start": 3,
            "end": 9,
            "start_utf16": None,
            "end_utf16": None,
            "cited_text": None,
            "provider_metadata": None,
        }
    ]
    assert CitationsEvent().to_dict() == {"type": "citations", "citations": [], "spans": []}


def test_builder_accumulates_choice_zero() -> None:
    b = AnswerBuilder()
    for ev in (
        ReasoningEvent(0, "Let me "),
        ReasoningEvent(1, "other choice"),
        ReasoningEvent(0, "think."),
        ToolCallEvent(0, 0, "call_1", "get_weather", ""),
        ToolCallEvent(0, 1, "call_2", "get_time", '{"tz":'),
        ToolCallEvent(0, 0, None, None, '{"city": '),
        ToolCallEvent(0, 0, None, None, '"Paris"}'),
        ToolCallEvent(0, 1, None, None, ' "UTC"}'),
        ToolCallEvent(1, 0, "x", "ignored", "{}"),
        RefusalEvent(0, "I can't "),
        RefusalEvent(0, "help with that."),
    ):
        b.add(ev)
    a = b.snapshot()
    assert a.reasoning_text == "Let me think."
    assert [orjson.loads(orjson.dumps(t)) for t in a.tool_calls] == [
        {
            "id": "call_1",
            "type": "function",
            "name": "get_weather",
            "arguments": '{"city": "Paris"}',
        },
        {"id": "call_2", "type": "function", "name": "get_time", "arguments": '{"tz": "UTC"}'},
    ]
    assert a.refusal == "I can't help with that."
    d = a.to_dict()
    for key in ("reasoning_text", "tool_calls", "refusal", "references", "citation_spans"):
        assert key in d
    assert d["errors_dropped"] == 0 and d["enrichment_skipped"] is None


def test_empty_answer_fields() -> None:
    a = AnswerBuilder().snapshot()
    assert (a.reasoning_text, a.tool_calls, a.refusal, a.complete) == ("", [], None, False)


def test_errors_bounded_with_count() -> None:
    b = AnswerBuilder()
    for i in range(MAX_ERRORS + 250):
        b.add(ErrorEvent(code="bad_chunk", message=str(i)))
    a = b.snapshot()
    assert len(a.errors) == MAX_ERRORS and a.errors_dropped == 250
    assert a.errors[0].message == "0" and a.errors[-1].message == str(MAX_ERRORS - 1)


def _sse(*chunks: object) -> bytes:
    return b"".join(b"data: " + orjson.dumps(c) + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"


def _events(data: bytes) -> list[object]:
    from streamcite import iter_events

    return list(iter_events([data]))


def _ch(delta: dict[str, object], finish: str | None = None, **top: object) -> dict[str, object]:
    return {
        "id": "c",
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        **top,
    }


def test_bad_tool_arguments_error_but_kept() -> None:
    data = _sse(
        _ch({"tool_calls": [{"index": 0, "id": "t", "function": {"name": "f", "arguments": "{"}}]}),
        _ch({"tool_calls": [{"index": 0, "function": {"arguments": '"a": 1'}}]}),
        _ch({}, "tool_calls"),
    )
    evs = _events(data)
    errs = [e for e in evs if isinstance(e, ErrorEvent)]
    assert [e.code for e in errs] == ["bad_tool_arguments"]
    a = evs[-1].answer  # type: ignore[attr-defined]
    assert a.tool_calls[0].arguments == '{"a": 1'
    assert [e.code for e in a.errors] == ["bad_tool_arguments"]


def test_fast_path_content_beside_reasoning_is_not_lost() -> None:
    # After the first token the fast path runs: a delta with content AND reasoning.
    data = _sse(
        _ch({"content": "A"}),
        _ch({"content": "B", "reasoning": "r1"}),
        _ch({"content": "", "reasoning_content": "r2"}),
        _ch({"content": "C", "reasoning": None}),
        _ch({}, "stop"),
    )
    a = _events(data)[-1].answer  # type: ignore[attr-defined]
    assert (a.text, a.reasoning_text, a.errors) == ("ABC", "r1r2", [])


def test_finish_reason_error_without_error_object() -> None:
    evs = _events(_sse(_ch({"content": "x"}), _ch({}, "error")))
    errs = [e for e in evs if isinstance(e, ErrorEvent)]
    assert [e.code for e in errs] == ["finish_error"]
    a = evs[-1].answer  # type: ignore[attr-defined]
    assert a.complete is False and a.finish_reason == "error"


def test_error_code_numeric_string_sets_status() -> None:
    evs = _events(_sse(_ch({"content": "x"}), {"error": {"code": "503", "message": "busy"}}))
    (err,) = [e for e in evs if isinstance(e, ErrorEvent)]
    assert (err.code, err.status, err.retryable) == ("503", 503, True)
    evs = _events(_sse({"error": {"code": "404", "message": "nope"}}))
    err = next(e for e in evs if isinstance(e, ErrorEvent))
    assert (err.status, err.retryable) == (404, False)


def test_usage_on_every_chunk_gives_one_usage_event() -> None:
    u = {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}
    data = _sse(
        _ch({"content": "a"}, usage=u),
        _ch({"content": "b"}, usage={**u, "completion_tokens": 5}),
    )
    # no finish chunk: the pending usage comes out at [DONE]
    evs = _events(data)
    usage = [e for e in evs if getattr(e, "type", "") == "usage"]
    assert len(usage) == 1 and usage[0].completion_tokens == 5  # type: ignore[attr-defined]


def test_unknown_content_part_is_an_error_not_bad_chunk() -> None:
    evs = _events(
        _sse(_ch({"content": [{"type": "image_url", "image_url": "x"}]}), _ch({}, "stop"))
    )
    assert [e.code for e in evs if isinstance(e, ErrorEvent)] == ["bad_content_part"]


def test_many_malformed_lines_bounded() -> None:
    data = b"data: {nope\n\n" * (MAX_ERRORS + 500) + b"data: [DONE]\n\n"
    a = _events(data)[-1].answer  # type: ignore[attr-defined]
    assert len(a.errors) == MAX_ERRORS and a.errors_dropped == 500
