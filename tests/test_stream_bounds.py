"""Per-stream state stays bounded whatever a hostile stream numbers: choices, tool calls,
url_citation annotations (each measured with tracemalloc where it is about memory)."""

from __future__ import annotations

import tracemalloc
from typing import Any

import orjson
import pytest

from streamcite.core.api import ChatStreamParser, iter_events
from streamcite.core.chunks import MAX_CHOICES
from streamcite.core.deltas import MAX_TOOL_CALLS, MAX_URL_CITATIONS
from streamcite.core.events import CitationsEvent, ErrorEvent, Event, ToolCallEvent

DONE = b"data: [DONE]\n\n"


def _data(obj: dict[str, Any]) -> bytes:
    return b"data: " + orjson.dumps(obj) + b"\n\n"


def _choice(index: Any, delta: dict[str, Any], finish: str | None = None) -> bytes:
    ch = {"index": index, "delta": delta, "finish_reason": finish}
    return _data({"id": "x", "model": "m", "choices": [ch]})


def _codes(events: list[Event]) -> list[str]:
    return [e.code for e in events if isinstance(e, ErrorEvent)]


def _peak(chunks: list[bytes]) -> int:
    """Peak traced memory of a parser fed ``chunks`` (allocated before tracing)."""
    tracemalloc.start()
    p = ChatStreamParser()
    for c in chunks:
        p.feed(c)
    p.close()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak


def test_choice_indexes_outside_the_range_are_errors_and_hold_nothing() -> None:
    chunks = [_choice(0, {"content": "Hi"})]
    chunks += [_choice(i, {"content": "x"}) for i in range(MAX_CHOICES, MAX_CHOICES + 20_000)]
    events = list(iter_events([*chunks, _choice(-1, {"content": "y"}), DONE]))
    assert events[-1].answer.text == "Hi"  # type: ignore[attr-defined]
    assert not [e for e in events if e.type == "token" and e.index != 0]  # type: ignore[attr-defined]
    assert _codes(events)[:2] == ["bad_chunk", "bad_chunk"]
    # Skipped choices hold no per-choice state (a detector each, before): 20,000 of them
    # hold what 2,000 do (both keep the 1,000 errors an answer keeps at most).
    assert _peak(chunks) < _peak(chunks[:2_001]) * 1.2


def test_the_last_choice_in_range_is_interpreted() -> None:
    events = list(iter_events([_choice(MAX_CHOICES - 1, {"content": "last"}), DONE]))
    assert [(e.index, e.text) for e in events if e.type == "token"] == [(MAX_CHOICES - 1, "last")]  # type: ignore[attr-defined]
    assert not _codes(events)


def _calls(index: int, ids: range) -> list[bytes]:
    return [
        _choice(
            index, {"tool_calls": [{"id": f"c{k}", "function": {"name": "f", "arguments": "{}"}}]}
        )
        for k in ids
    ]


@pytest.mark.parametrize("index", [0, 1])
def test_tool_calls_beyond_the_cap_are_errors_and_not_remembered(index: int) -> None:
    n = MAX_TOOL_CALLS + 3
    events = list(iter_events([*_calls(index, range(n)), DONE]))
    calls = [e for e in events if isinstance(e, ToolCallEvent)]
    assert [e.tool_index for e in calls] == list(range(MAX_TOOL_CALLS))
    assert _codes(events) == ["bad_tool_call"] * 3
    if index == 0:
        assert len(events[-1].answer.tool_calls) == MAX_TOOL_CALLS  # type: ignore[attr-defined]


def test_tool_call_ids_of_another_choice_hold_bounded_memory() -> None:
    # Choice 1 keeps nothing in the answer: 20,000 ids must not hold 20,000 entries
    # (both runs keep the 1,000 errors an answer keeps at most).
    small = _peak(_calls(1, range(2 * MAX_TOOL_CALLS)))
    large = _peak(_calls(1, range(20 * MAX_TOOL_CALLS)))
    assert large < small * 1.2


def _note(k: int) -> dict[str, Any]:
    body = {"url": f"https://example.org/{k}", "title": f"t{k}", "start_index": 0, "end_index": 1}
    return {"type": "url_citation", "url_citation": body}


def test_url_citations_beyond_the_cap_are_reported_once_and_dropped() -> None:
    chunks = [_choice(0, {"content": "ab"})]
    chunks += [_choice(0, {"annotations": [_note(k)]}) for k in range(MAX_URL_CITATIONS + 50)]
    events = list(iter_events([*chunks, _choice(0, {}, "stop"), DONE]))
    answer = events[-1].answer  # type: ignore[attr-defined]
    assert len(answer.citations) == MAX_URL_CITATIONS
    assert _codes(events) == ["too_many_citations"]
    # The citations events carry the list so far: bounded by the cap, not the flood.
    sizes = [len(e.citations) for e in events if isinstance(e, CitationsEvent)]
    assert max(sizes) == MAX_URL_CITATIONS and len(sizes) == MAX_URL_CITATIONS


def test_annotations_of_another_choice_are_not_the_answer_s() -> None:
    # Choice 1's spans index choice 1's text: never checked against choice 0's, and its
    # citations are not the answer's (documented as ignored).
    chunks = [_choice(0, {"content": "abc"}), _choice(1, {"content": "x" * 50})]
    chunks.append(
        _choice(
            1,
            {
                "annotations": [
                    _note(1) | {"url_citation": {"url": "u", "start_index": 20, "end_index": 40}}
                ]
            },
        )
    )
    events = list(iter_events([*chunks, _choice(0, {}, "stop"), DONE]))
    assert not _codes(events)
    assert events[-1].answer.citations == []  # type: ignore[attr-defined]
