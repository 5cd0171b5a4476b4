"""One big upstream event or body is never parsed whole: beyond its size limit
(``StreamBounds.max_event_bytes``, ``repeat_limit``, ``body_limit``) it is a typed
``event_too_large`` and ``complete: false``, and the memory orjson would spend on it
(~13-30 times its bytes) is never spent (docs/security.md, "Nested, oversized and
flooding upstream events")."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from typing import Any

import orjson

from streamcite.core.api import ChatStreamParser, answer_from_response, iter_events
from streamcite.core.bounds import StreamBounds
from streamcite.core.models import CitedAnswer
from tests._dialect_build_responses import ResponsesItem, responses_stream
from tests._dialect_sse import sse

MiB = 1024 * 1024


def _peak(fn: Callable[[], Any]) -> tuple[Any, int]:
    """``fn()`` and the peak of memory it allocated (tracemalloc, bytes)."""
    tracemalloc.start()
    try:
        result = fn()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _braces(n_bytes: int) -> bytes:
    """A JSON array of empty objects, ``n_bytes`` long: ~30 times its bytes once parsed."""
    return b"[" + b"{}," * (n_bytes // 3) + b"{}]"


def _codes(answer: CitedAnswer) -> set[str]:
    return {e.code for e in answer.errors}


def test_a_chat_chunk_of_15_mib_is_not_parsed() -> None:
    # Measured before: +471 MiB RSS for this event; now it is dropped by size.
    big = b"data: " + _braces(15 * MiB) + b"\n\n"
    stream = [
        sse({"choices": [{"index": 0, "delta": {"content": "Hi."}}]}),
        big,
        sse({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
        b"data: [DONE]\n\n",
    ]
    for dialect in ("auto", "chat"):
        events, peak = _peak(lambda d=dialect: list(iter_events(stream, dialect=d)))
        answer = events[-1].answer
        assert answer.text == "Hi."
        assert "event_too_large" in _codes(answer)
        assert answer.complete is False
        assert peak < 120 * MiB, f"{peak / MiB:.0f} MiB"  # was ~470 MiB


def test_the_first_event_of_an_auto_stream_is_held_to_the_same_limit() -> None:
    stream = [b"data: " + _braces(6 * MiB) + b"\n\n", b"data: [DONE]\n\n"]
    (events, peak) = _peak(lambda: list(iter_events(stream)))
    assert "event_too_large" in _codes(events[-1].answer)
    assert events[-1].answer.complete is False
    assert peak < 60 * MiB, f"{peak / MiB:.0f} MiB"  # parsed: ~190 MiB


def _responses_with_padded_completed(pad: bytes) -> bytes:
    head = responses_stream([ResponsesItem("message", ["Hello ", "world."])], end=False)
    completed = {
        "type": "response.completed",
        "sequence_number": 99,
        "response": {
            "id": "resp_1",
            "status": "completed",
            "output": [],
            "usage": {"input_tokens": 3, "output_tokens": 2, "total_tokens": 5},
            "metadata": "PAD",
        },
    }
    data = orjson.dumps(completed).replace(b'"PAD"', pad)
    return head + b"event: response.completed\ndata: " + data + b"\n\n"


def test_a_responses_completed_far_larger_than_its_answer_is_not_parsed() -> None:
    # Measured before: a 47 MiB response.completed (under the 48 MiB decoder limit)
    # cost +1.43 GB and 2.4-2.9 s; here 10 MiB (~300 MiB when parsed).
    stream = _responses_with_padded_completed(_braces(10 * MiB))
    events, peak = _peak(lambda: list(iter_events([stream])))
    answer = events[-1].answer
    assert answer.text == "Hello world."
    assert "event_too_large" in _codes(answer)
    assert answer.complete is False
    assert peak < 80 * MiB, f"{peak / MiB:.0f} MiB"


def test_a_responses_completed_repeating_a_long_answer_is_still_read() -> None:
    parts = ["中文字" * 1000] * 300  # 900k characters, 2.7 MB of UTF-8 in each repeat
    stream = responses_stream([ResponsesItem("message", parts)])
    answer = list(iter_events([stream]))[-1].answer
    assert answer.complete is True, _codes(answer)
    assert answer.usage is not None and answer.finish_reason == "stop"
    assert len(answer.text) == 900_000


def test_a_body_beyond_the_body_limit_is_not_parsed() -> None:
    # Measured before: answer_from_response on 60 MiB: +1.76 GB, 4.5 s, complete: true
    # and no error. The body limit follows from the answer cap (34 MiB by default).
    ok = {"choices": [{"index": 0, "message": {"content": "Hi."}, "finish_reason": "stop"}]}
    body = orjson.dumps({**ok, "pad": "PAD"}).replace(b'"PAD"', b'"' + b"x" * (40 * MiB) + b'"')
    answer, peak = _peak(lambda: answer_from_response(body))
    assert "event_too_large" in _codes(answer)
    assert answer.complete is False and answer.text == ""
    assert peak < 8 * MiB, f"{peak / MiB:.0f} MiB"  # parsed: >= 40 MiB
    assert answer_from_response(orjson.dumps(ok)).complete is True
    # The same limit on a parser's feed_body, from the parser's bounds.
    small = StreamBounds(max_answer_chars=100_000)  # body limit: 2 MiB + 400 KB
    p = ChatStreamParser(dialect="chat", bounds=small)
    big = b'{"x":' + _braces(4 * MiB) + b"}"
    events, peak = _peak(lambda: p.feed_body(big))
    assert [e.type for e in events] == ["error"] and events[0].code == "event_too_large"
    assert p.answer.complete is False
    assert peak < 8 * MiB, f"{peak / MiB:.0f} MiB"  # parsed: ~120 MiB
