"""Starlette / FastAPI responses (``pip install streamcite[asgi]``).

``UIMessageStreamResponse(events)`` answers with the AI SDK UI message stream;
``EventStreamResponse`` with streamcite's own events as SSE (``id:`` = ``seq``,
``Last-Event-ID`` resume when given a stream log). A client that disconnects
cancels the body, which closes the upstream (``events.aclose()``).
"""

from __future__ import annotations

from collections.abc import AsyncIterable
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import StreamingResponse

from streamcite.streamlog import StreamLog
from streamcite.web.eventsse import SSE_HEADERS, event_sse, parse_last_event_id, sse_from_log
from streamcite.web.stream import question_from_ui_messages, ui_message_stream
from streamcite.web.uimessage import UI_MESSAGE_STREAM_HEADERS

__all__ = ["EventStreamResponse", "UIMessageStreamResponse", "question_from_request"]


class UIMessageStreamResponse(StreamingResponse):
    def __init__(self, events: AsyncIterable[Any], *, message_id: str | None = None) -> None:
        headers = dict(UI_MESSAGE_STREAM_HEADERS)
        media_type = headers.pop("Content-Type")
        super().__init__(
            ui_message_stream(events, message_id=message_id), headers=headers, media_type=media_type
        )


class EventStreamResponse(StreamingResponse):
    """``EventStreamResponse(events)``: the events, numbered from 1. With ``log`` and
    ``stream_id``: the log's entries after ``Last-Event-ID`` (from ``request``, or
    ``after_seq``), live to the end. ``ValueError`` for a bad ``Last-Event-ID``."""

    def __init__(
        self,
        events: AsyncIterable[Any] | None = None,
        *,
        log: StreamLog | None = None,
        stream_id: str | None = None,
        request: Request | None = None,
        after_seq: int = 0,
    ) -> None:
        headers = dict(SSE_HEADERS)
        media_type = headers.pop("Content-Type")
        if log is not None and stream_id is not None:
            if request is not None:
                try:
                    after_seq = (
                        parse_last_event_id(request.headers.get("last-event-id")) or after_seq
                    )
                except ValueError as exc:
                    # A bad header is the client's mistake: 400, never an exception (500).
                    error = orjson.dumps(
                        {"type": "error", "code": "bad_message", "message": str(exc)}
                    )
                    super().__init__(iter([error]), status_code=400, media_type="application/json")
                    return
            body = sse_from_log(log, stream_id, after_seq)
        elif events is not None:
            body = event_sse(events)
        else:
            raise ValueError("give events, or a log and a stream_id")
        super().__init__(body, headers=headers, media_type=media_type)


async def question_from_request(request: Request) -> str:
    """The question of a ``DefaultChatTransport`` request (``ValueError`` when none)."""
    body = await request.json()
    if not isinstance(body, dict):
        raise ValueError("the body is not a JSON object")
    return question_from_ui_messages(body)
