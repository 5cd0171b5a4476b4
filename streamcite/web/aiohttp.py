"""An aiohttp handler factory for ``POST /api/chat`` (the AI SDK's ``DefaultChatTransport``)."""

from __future__ import annotations

from collections.abc import AsyncIterable, Awaitable, Callable
from typing import Any

import orjson
from aiohttp import web

from streamcite.web.stream import question_from_ui_messages, ui_message_stream
from streamcite.web.uimessage import UI_MESSAGE_STREAM_HEADERS

__all__ = ["ui_message_handler"]

MakeEvents = Callable[[str, dict[str, Any]], AsyncIterable[Any] | Awaitable[AsyncIterable[Any]]]


def ui_message_handler(
    make_events: MakeEvents, *, max_body_bytes: int = 1 << 20
) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    """A handler answering with the UI message stream of ``make_events(question, body)``
    (for instance a :func:`streamcite.stream_chat` ``ChatStream``). A client that goes
    away closes the events' upstream."""

    async def handle(request: web.Request) -> web.StreamResponse:
        raw = await request.content.read(max_body_bytes + 1)
        if len(raw) > max_body_bytes:
            return web.json_response({"error": "the request body is too large"}, status=413)
        try:
            body = orjson.loads(raw)
            if not isinstance(body, dict):
                raise ValueError("the body is not a JSON object")
            question = question_from_ui_messages(body)
        except ValueError as exc:  # orjson.JSONDecodeError is a ValueError
            return web.json_response({"error": str(exc)}, status=400)
        events = make_events(question, body)
        if isinstance(events, Awaitable):
            events = await events
        resp = web.StreamResponse(headers=dict(UI_MESSAGE_STREAM_HEADERS))
        stream = ui_message_stream(events)
        try:
            await resp.prepare(request)
            async for chunk in stream:
                await resp.write(chunk)
        finally:
            await stream.aclose()  # also when the browser aborted: the upstream closes now
        return resp

    return handle
