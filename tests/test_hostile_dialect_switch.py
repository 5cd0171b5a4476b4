"""A stream read as Chat Completions that switches to another API's events (named, as
Anthropic and Cohere send them, or not) ends with a typed ``wrong_dialect`` error and
``complete: false``: their text was not read, and the answer must not pass for a whole
one (docs/security.md, "Nested, oversized and flooding upstream events")."""

from __future__ import annotations

import pytest

from streamcite.core.api import iter_events
from tests._dialect_sse import sse

CHAT = sse({"choices": [{"index": 0, "delta": {"content": "Hi. "}}]})
FINISH = sse({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
ANTHROPIC_TEXT = {
    "type": "content_block_delta",
    "index": 0,
    "delta": {"type": "text_delta", "text": "Text that is never read."},
}
COHERE_TEXT = {
    "type": "content-delta",
    "index": 0,
    "delta": {"message": {"content": {"text": "Text that is never read."}}},
}


@pytest.mark.parametrize("named", [True, False])
@pytest.mark.parametrize("marker_mode", ["keep", "strip"])  # the fast path, and not
@pytest.mark.parametrize("foreign", [ANTHROPIC_TEXT, COHERE_TEXT])
def test_a_chat_stream_switching_to_another_apis_events_is_wrong_dialect(
    named: bool, marker_mode: str, foreign: dict[str, object]
) -> None:
    name = str(foreign["type"]) if named else None
    stream = [CHAT, sse(foreign, name), sse(foreign, name), FINISH, b"data: [DONE]\n\n"]
    for dialect in ("auto", "chat"):
        events = list(iter_events(stream, dialect=dialect, marker_mode=marker_mode))  # type: ignore[arg-type]
        answer = events[-1].answer
        assert answer.text == "Hi. "
        assert [e.code for e in answer.errors] == ["wrong_dialect"]  # once, not per event
        assert answer.complete is False


def test_a_chat_providers_own_named_events_are_still_ignored() -> None:
    ping = sse({"type": "ping"}, "ping")
    extension = sse({"type": "x_provider.progress", "step": 1}, "progress")
    answer = list(iter_events([CHAT, ping, extension, FINISH, b"data: [DONE]\n\n"]))[-1].answer
    assert answer.complete is True and answer.errors == []
