"""The reasoning, tool_call and refusal events and the answer fields they fill."""

from __future__ import annotations

import orjson

from streamcite import (
    AnswerBuilder,
    CitationsEvent,
    CitationSpan,
    ErrorEvent,
    ReasoningEvent,
    RefusalEvent,
    ToolCallEvent,
)
from streamcite.core.answer import MAX_ERRORS
from streamcite.core.models import Citation


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
    assert ev.to_dict()["spans"] == [{"document_index": 0, "start": 3, "end": 9}]
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
