"""Is a chat chunk without ``choices`` another API's event? An Anthropic, Cohere or
OpenAI Responses event type, or a Gemini response, read as Chat Completions (the
default ``api="chat"`` pointed at another API's endpoint) is the ``wrong_dialect``
error, never an empty answer passing for a whole one. Sans-I/O."""

from __future__ import annotations

from typing import Any

__all__ = ["is_foreign"]

_CHAT_KEYS = ("citations", "search_results", "usage", "error", "x_groq")
_FOREIGN_TYPES = frozenset(
    (
        # Anthropic Messages (not ``ping`` or ``error``: a gateway may send those)
        "message_start", "content_block_start", "content_block_delta",
        "content_block_stop", "message_delta", "message_stop",
        # Cohere v2 chat
        "message-start", "content-start", "content-delta", "content-end",
        "citation-start", "citation-end", "tool-plan-delta", "tool-call-start",
        "tool-call-delta", "tool-call-end", "message-end",
    )
)  # fmt: skip


def is_foreign(obj: dict[str, Any]) -> bool:
    """A chunk without ``choices`` that is another API's event: an Anthropic, Cohere or
    OpenAI Responses (``response.*``) event type, or a Gemini response (``candidates``),
    with none of the chunk-level fields a chat provider sends without choices."""
    kind = obj.get("type")
    if type(kind) is str:
        if kind not in _FOREIGN_TYPES and not kind.startswith("response."):
            return False
    elif "candidates" not in obj:
        return False
    return obj.get("object") != "error" and not any(k in obj for k in _CHAT_KEYS)
