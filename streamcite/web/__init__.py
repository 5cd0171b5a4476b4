"""Serve streamcite answers to web stacks: the Vercel AI SDK UI message stream (v1).

``ui_message_stream(events)`` is the library function; ``streamcite.web.aiohttp``
is an aiohttp handler factory.
"""

from streamcite.web.stream import question_from_ui_messages, ui_message_stream
from streamcite.web.uimessage import UI_MESSAGE_STREAM_HEADERS, UIMessageEncoder
from streamcite.web.uiparts import finish_reason

__all__ = [
    "UI_MESSAGE_STREAM_HEADERS",
    "UIMessageEncoder",
    "finish_reason",
    "question_from_ui_messages",
    "ui_message_stream",
]
