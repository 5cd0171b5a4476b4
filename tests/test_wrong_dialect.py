"""A stream of another API read as Chat Completions (``stream_chat``'s default
``api="chat"`` against an Anthropic, Responses, Cohere or Gemini endpoint) is a typed
``wrong_dialect`` error and an incomplete answer, reported once — before, its events were
ignored and, ended by ``[DONE]``, it passed for a whole empty answer."""

from __future__ import annotations

import orjson
import pytest

from streamcite import iter_events
from streamcite.core.events import DoneEvent, ErrorEvent

FOREIGN = {
    "anthropic": [
        {"type": "message_start", "message": {"id": "m", "content": [], "usage": {}}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}},
        {"type": "message_stop"},
    ],
    "cohere": [
        {"type": "message-start", "id": "c"},
        {"type": "content-delta", "index": 0, "delta": {"message": {"content": {"text": "Hi"}}}},
        {"type": "message-end", "delta": {"finish_reason": "COMPLETE"}},
    ],
    "responses": [
        {"type": "response.created", "response": {"id": "r"}},
        {"type": "response.output_text.delta", "delta": "Hi"},
    ],
    "gemini": [{"candidates": [{"content": {"parts": [{"text": "Hi"}]}}]}],
}


def _sse(events: list[dict[str, object]], done: bool) -> bytes:
    body = b"".join(b"data: " + orjson.dumps(e) + b"\n\n" for e in events)
    return body + (b"data: [DONE]\n\n" if done else b"")


@pytest.mark.parametrize("done", [True, False])
@pytest.mark.parametrize("api", sorted(FOREIGN))
def test_another_apis_stream_read_as_chat_is_a_typed_error(api: str, done: bool) -> None:
    events = list(iter_events([_sse(FOREIGN[api], done)], dialect="chat"))
    errors = [e for e in events if isinstance(e, ErrorEvent)]
    assert [e.code for e in errors if e.code == "wrong_dialect"] == ["wrong_dialect"]
    answer = events[-1]
    assert isinstance(answer, DoneEvent)
    assert answer.answer.complete is False and answer.answer.text == ""


@pytest.mark.parametrize(
    "chunk",
    [
        {"type": "ping"},  # a gateway's keep-alive object
        {"id": "x", "object": "chat.completion.chunk", "model": "m"},  # meta only
        {"usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}},
        {"type": "content-delta", "error": {"message": "boom"}},  # an error is an error
    ],
)
def test_chat_chunks_without_choices_are_not_taken_for_another_api(
    chunk: dict[str, object],
) -> None:
    head = {"choices": [{"index": 0, "delta": {"content": "Hi"}, "finish_reason": "stop"}]}
    events = list(iter_events([_sse([head, chunk], True)], dialect="chat"))
    assert not [e for e in events if isinstance(e, ErrorEvent) and e.code == "wrong_dialect"]
    assert events[-1].answer.text == "Hi"  # type: ignore[attr-defined]
