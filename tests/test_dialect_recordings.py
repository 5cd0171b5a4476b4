"""The real recordings of the four dialects kept outside the repository
(``/work/shared/dialects/fixtures``, provenance in its SOURCES.md; not copied here):
run where they exist, skipped elsewhere (a clean clone). Each asserts what the recording
shows: text, finish (chat vocabulary + the provider's value), sources, spans that slice the
text exactly (Gemini's byte offsets converted), typed errors."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from streamcite import iter_events
from streamcite.core.events import DoneEvent, FinishEvent
from tests.test_dialects import assert_spans_exact

ROOT = Path(os.environ.get("STREAMCITE_DIALECT_RECORDINGS", "/work/shared/dialects/fixtures"))
pytestmark = pytest.mark.skipif(not ROOT.is_dir(), reason="recordings not on this machine")

# name: (finish, raw_reason, complete, citations, spans, tool calls, error codes)
EXPECTED: dict[str, tuple[str | None, str | None, bool, int, int, int, list[str]]] = {
    "anthropic__parallel_tool_use.sse": ("tool_calls", "tool_use", True, 0, 0, 2, []),
    "anthropic__plain_text.sse": ("stop", "end_turn", True, 0, 0, 0, []),
    "anthropic__thinking.sse": ("stop", "end_turn", True, 0, 0, 0, []),
    "anthropic__thinking_tool_use.sse": ("tool_calls", "tool_use", True, 0, 0, 1, []),
    "anthropic__web_search_citations.sse": ("stop", "end_turn", True, 7, 9, 0, []),
    "anthropic__web_search_citations_2.sse": ("stop", "end_turn", True, 2, 5, 0, []),
    "anthropic__web_search_thinking_citations.sse": ("stop", "end_turn", True, 4, 7, 0, []),
    "cohere__document_citations_thinking.sse": ("stop", "COMPLETE", True, 2, 9, 0, []),
    "cohere__error_invalid_tool_generation.sse": (
        "error",
        "ERROR",
        False,
        0,
        0,
        0,
        ["invalid_tool_generation"],
    ),
    "cohere__parallel_tool_calls.sse": ("tool_calls", "TOOL_CALL", True, 0, 0, 2, []),
    "cohere__plain_text.sse": ("stop", "COMPLETE", True, 0, 0, 0, []),
    "cohere__tool_call.sse": ("tool_calls", "TOOL_CALL", True, 0, 0, 1, []),
    "cohere__tool_result_citation.sse": ("stop", "COMPLETE", True, 1, 1, 0, []),
    "gemini__function_call.sse": ("tool_calls", "STOP", True, 0, 0, 1, []),
    "gemini__malformed_function_call.sse": (
        "error",
        "MALFORMED_FUNCTION_CALL",
        False,
        0,
        0,
        0,
        ["malformed_function_call"],
    ),
    "gemini__plain_text.sse": ("stop", "STOP", True, 0, 0, 0, []),
    "gemini__search_grounding_nonascii.sse": ("stop", "STOP", True, 5, 9, 0, []),
    "gemini__thinking.sse": ("stop", "STOP", True, 0, 0, 0, []),
    "gemini__thinking_max_tokens.sse": ("length", "MAX_TOKENS", True, 0, 0, 0, []),
    "gemini__url_context_grounding.sse": ("stop", "STOP", True, 1, 1, 0, []),
    "responses__error_insufficient_quota.sse": (
        "error",
        "failed",
        False,
        0,
        0,
        0,
        ["insufficient_quota"],
    ),
    "responses__file_search_citation.sse": ("stop", "completed", True, 1, 0, 0, []),
    "responses__function_call.sse": ("tool_calls", "completed", True, 0, 0, 1, []),
    "responses__plain_text.sse": ("stop", "completed", True, 0, 0, 0, []),
    "responses__reasoning_summary.sse": ("stop", "completed", True, 0, 0, 0, []),
    "responses__reasoning_then_function_call.sse": ("tool_calls", "completed", True, 0, 0, 1, []),
    "responses__web_search_url_citation.sse": ("stop", "completed", True, 1, 1, 0, []),
    "responses__web_search_url_citation_2.sse": ("stop", "completed", True, 1, 1, 0, []),
    "chat__parallel_tool_calls.sse": ("tool_calls", None, True, 0, 0, 2, []),
    "chat__refusal.sse": ("stop", None, True, 0, 0, 0, []),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_recording(name: str) -> None:
    events = list(iter_events([(ROOT / name).read_bytes()]))
    done = events[-1]
    assert isinstance(done, DoneEvent)
    a = done.answer
    fin = [e for e in events if isinstance(e, FinishEvent) and e.index == 0]
    finish, raw, complete, n_cites, n_spans, n_tools, errors = EXPECTED[name]
    assert [(f.reason, f.raw_reason) for f in fin] == [(finish, raw)]
    assert (a.complete, len(a.citations), len(a.citation_spans), len(a.tool_calls)) == (
        complete,
        n_cites,
        n_spans,
        n_tools,
    )
    assert [e.code for e in a.errors] == errors
    assert_spans_exact(a)


def test_gemini_bytes_are_not_characters() -> None:
    """926 characters, 932 bytes: each segment's text is what its converted span slices."""
    a = list(iter_events([(ROOT / "gemini__search_grounding_nonascii.sse").read_bytes()]))[-1]
    assert isinstance(a, DoneEvent)
    text = a.answer.text
    assert (len(text), len(text.encode())) == (926, 932)
    last = a.answer.citation_spans[-1]
    assert text[last.start : last.end] == "The chance of rain remains low throughout the day."
    assert last.end == 926  # endIndex 932 in bytes


def test_responses_span_in_characters() -> None:
    a = list(iter_events([(ROOT / "responses__web_search_url_citation.sse").read_bytes()]))[-1]
    assert isinstance(a, DoneEvent)
    (sp,) = a.answer.citation_spans
    assert (sp.start, sp.end) == (94, 179)
    assert a.answer.text[sp.start : sp.end].startswith("([britannica.com](")
