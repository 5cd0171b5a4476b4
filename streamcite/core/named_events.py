"""Payloads under a named SSE event (``event: completion``, ``event: ping``...). Sans-I/O.

Some servers name every event; a chat chunk, ``[DONE]`` or a provider error carried
that way is interpreted as if unnamed (never silently lost). What is clearly not a chat
chunk (pings, ``{}``, a provider's own extension events) carries nothing and is ignored.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import orjson

from streamcite.core.quote import quote

if TYPE_CHECKING:
    from streamcite.core.chat_state import ChatState
    from streamcite.core.events import Event

__all__ = ["named_event"]

_CHAT_BYTES = (b'"choices"', b'"usage"', b'"error"', b"chat.completion")
"""A payload that is not JSON but contains one of these was meant as a chat chunk."""
_CHAT_KEYS = frozenset({"choices", "usage", "error"})
_CHAT_OBJECTS = ("chat.completion.chunk", "chat.completion", "error")  # a tuple: never hashed


def named_event(it: ChatState, event: bytes, payload: bytes, out: list[Event]) -> None:
    """One ``data`` payload of event type ``event`` (neither empty nor ``message``)."""
    if event == b"error":
        it._sse_error(payload, out)
        return
    if payload == b"[DONE]":
        it._done(out)
        return
    try:
        obj = orjson.loads(payload)
    except orjson.JSONDecodeError as exc:
        if any(k in payload for k in _CHAT_BYTES):
            name = event.decode("utf-8", "replace")
            msg = (
                f"chunk under event {quote(name, 60)} is not valid JSON ({exc}): {payload[:120]!r}"
            )
            it._fault(out, "invalid_json", msg)
        return
    # An unhashable "object" value cannot be tested against a set: the tuple compares.
    if type(obj) is dict and (not _CHAT_KEYS.isdisjoint(obj) or obj.get("object") in _CHAT_OBJECTS):
        it._interpret(obj, "delta", out)
