"""Async helpers: a ChatStream (or any async iterator of events) as a UI message stream."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterable, Mapping
from typing import Any

from streamcite.web.uimessage import UIMessageEncoder

__all__ = ["question_from_ui_messages", "ui_message_stream"]

MAX_QUESTION_CHARS = 8000


async def ui_message_stream(
    events: AsyncIterable[Any], *, message_id: str | None = None
) -> AsyncGenerator[bytes, None]:
    """The SSE bytes of the UI message stream for ``events``, ending with ``[DONE]``.

    One write per event. When the consumer stops early (the browser aborted) or the
    events fail, the upstream is closed: ``events.aclose()`` is awaited when it has one
    (a :class:`~streamcite.ChatStream` closes its HTTP response and enrichers).
    """
    enc = UIMessageEncoder(message_id)
    feed = enc.feed
    try:
        yield enc.start()
        try:
            async for event in events:
                out = feed(event)
                if out:
                    yield out
        except Exception as exc:  # the event source raised: the client still gets an end
            yield enc.fail("stream_failed", type(exc).__name__)
            return
        tail = enc.close()
        if tail:
            yield tail
    finally:
        aclose = getattr(events, "aclose", None)
        if aclose is not None:
            await aclose()


def question_from_ui_messages(body: Mapping[str, Any], max_chars: int = MAX_QUESTION_CHARS) -> str:
    """The question of a ``DefaultChatTransport`` body: the text parts of the last user
    message, joined. ``ValueError`` when there is none or it is too long."""
    messages = body.get("messages")
    if not isinstance(messages, list):
        raise ValueError("the body has no messages list")
    for message in reversed(messages):
        if isinstance(message, Mapping) and message.get("role") == "user":
            parts = message.get("parts")
            if not isinstance(parts, list):
                raise ValueError("the last user message has no parts list")
            text = "".join(
                p["text"]
                for p in parts
                if isinstance(p, Mapping)
                and p.get("type") == "text"
                and isinstance(p.get("text"), str)
            ).strip()  # a non-string text is no text (its str() could recurse as deep as the JSON)
            if not text:
                raise ValueError("the last user message has no text")
            if len(text) > max_chars:
                raise ValueError(f"the question is longer than {max_chars} characters")
            return text
    raise ValueError("there is no user message")
