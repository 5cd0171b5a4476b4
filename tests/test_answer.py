"""`streamcite.core.answer.AnswerBuilder`: folding events into one answer, bounded."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from streamcite.core.answer import MAX_ERRORS, AnswerBuilder
from streamcite.core.events import (
    CitationRefEvent,
    CitationsEvent,
    ErrorEvent,
    FinishEvent,
    MetaEvent,
    ReasoningEvent,
    RefusalEvent,
    TokenEvent,
    ToolCallEvent,
    UsageEvent,
)
from streamcite.core.models import Citation


def test_choice_zero_makes_the_answer() -> None:
    b = AnswerBuilder()
    for ev in (
        MetaEvent(id="c1", model="m"),
        TokenEvent(index=0, text="Hello", display="Hello"),
        TokenEvent(index=1, text="other choice", display="other choice"),
        ReasoningEvent(index=0, text="think"),
        ReasoningEvent(index=1, text="not ours"),
        RefusalEvent(index=1, text="no"),
        TokenEvent(index=0, text=" world", display=" world"),
        MetaEvent(id="c2", model="m2"),  # first values kept
        UsageEvent(prompt_tokens=3, completion_tokens=2, total_tokens=5),
        FinishEvent(index=1, reason="length"),
        FinishEvent(index=0, reason="stop"),
    ):
        b.add(ev)
    a = b.snapshot()
    assert (a.text, a.display_text, a.reasoning_text, a.refusal) == (
        "Hello world",
        "Hello world",
        "think",
        None,
    )
    assert (a.id, a.model, a.finish_reason, a.complete) == ("c1", "m", "stop", True)
    assert a.usage is not None and a.usage.total_tokens == 5


def test_without_a_finish_the_answer_is_incomplete() -> None:
    b = AnswerBuilder()
    b.add(TokenEvent(text="cut"))
    assert b.snapshot().complete is False and b.snapshot().finish_reason is None


def test_refs_dangling_and_uncited_documents() -> None:
    b = AnswerBuilder()
    b.add(CitationRefEvent(number=1, document_index=0, offset=4))
    b.add(CitationRefEvent(number=3, document_index=2, offset=9))
    b.add(CitationRefEvent(number=3, document_index=2, offset=15))  # named once in dangling
    b.add(CitationRefEvent(index=1, number=9, document_index=8))  # another choice: not checked
    b.add(CitationsEvent(citations=[Citation(document_index=0), Citation(document_index=1)]))
    a = b.snapshot()
    assert a.dangling_refs == [3]
    assert a.uncited_documents == [1]
    assert [(r.number, r.offset) for r in a.citation_refs[:3]] == [(1, 4), (3, 9), (3, 15)]


def test_an_empty_citations_event_does_not_erase_earlier_ones() -> None:
    b = AnswerBuilder()
    b.add(CitationsEvent(citations=[Citation(document_index=0)]))
    b.add(CitationsEvent(citations=[]))
    assert len(b.snapshot().citations) == 1


def test_tool_call_fragments_are_joined_exactly() -> None:
    b = AnswerBuilder()
    b.add(ToolCallEvent(tool_index=0, id="call_1", name="search", arguments='{"q":'))
    b.add(ToolCallEvent(tool_index=1, id="call_2", name="other"))
    b.add(ToolCallEvent(tool_index=0, id="ignored", name="ignored", arguments=' "a b"}'))
    b.add(ToolCallEvent(index=1, tool_index=0, name="not ours", arguments="x"))
    calls = b.snapshot().tool_calls
    assert [(c.id, c.name, c.arguments) for c in calls] == [
        ("call_1", "search", '{"q": "a b"}'),
        ("call_2", "other", ""),
    ]


def test_errors_are_bounded_and_counted() -> None:
    b = AnswerBuilder()
    for i in range(MAX_ERRORS + 250):
        b.add(ErrorEvent(code="bad_chunk", message=str(i)))
    a = b.snapshot()
    assert len(a.errors) == MAX_ERRORS and a.errors_dropped == 250
    assert a.errors[0].message == "0"  # the first ones are kept: they say what went wrong first


def test_a_snapshot_is_independent_of_later_events() -> None:
    b = AnswerBuilder()
    b.add(TokenEvent(text="a", display="a"))
    b.add(ErrorEvent(code="x"))
    first = b.snapshot()
    b.add(TokenEvent(text="b", display="b"))
    b.add(ErrorEvent(code="y"))
    b.timings.ttft_ms = 5.0
    assert first.text == "a" and len(first.errors) == 1 and first.timings.ttft_ms != 5.0


@given(
    st.lists(st.text(max_size=5), max_size=60),
    st.sets(st.integers(0, 60), max_size=10),
)
def test_compaction_at_any_point_keeps_text_and_display(tokens: list[str], at: set[int]) -> None:
    b = AnswerBuilder()
    for i, t in enumerate(tokens):
        if i in at:
            b.compact()
        b.add(TokenEvent(text=t, display=t.upper()))
    if len(tokens) in at:
        b.compact()
    a = b.snapshot()
    assert a.text == "".join(tokens)
    assert a.display_text == "".join(t.upper() for t in tokens)
    b.compact()
    assert b.uncompacted == 0 and len(b.text_parts) <= len(at) + 2
