"""The wire dialects the core reads, and how ``auto`` picks one. Sans-I/O.

One interpreter per dialect, none importing another: ``chat`` (Chat Completions,
:class:`streamcite.core.chunks.ChunkInterpreter`), ``responses`` (OpenAI Responses),
``anthropic`` (Anthropic Messages), ``gemini`` (Gemini ``streamGenerateContent``) and
``cohere`` (Cohere v2 chat). Each turns its provider's events into the same events and
the same :class:`~streamcite.core.models.CitedAnswer`.

>>> detect_stream(b"message_start", b'{"type":"message_start","message":{}}')
'anthropic'
>>> detect_stream(b"", b'{"choices":[]}')
'chat'
>>> detect_body({"candidates": []})
'gemini'
"""

from __future__ import annotations

from typing import Any, Literal, TypeAlias, get_args

import orjson

from streamcite.core.answer import AnswerBuilder
from streamcite.core.chunks import ChunkInterpreter
from streamcite.core.dialects.anthropic import AnthropicInterpreter
from streamcite.core.dialects.cohere import CohereInterpreter
from streamcite.core.dialects.gemini import GeminiInterpreter
from streamcite.core.dialects.protocol import DialectInterpreter
from streamcite.core.dialects.responses import ResponsesInterpreter
from streamcite.core.markers import MarkerMode
from streamcite.core.surrogates import loads_lone_surrogates

__all__ = [
    "DIALECTS",
    "Dialect",
    "DialectInterpreter",
    "DialectName",
    "detect_body",
    "detect_stream",
    "make_interpreter",
]

DialectName: TypeAlias = Literal["chat", "responses", "anthropic", "gemini", "cohere"]
"""A wire dialect the core reads."""
Dialect: TypeAlias = Literal["auto", "chat", "responses", "anthropic", "gemini", "cohere"]
"""What a caller may ask for: a dialect, or ``auto`` (decided from the first event)."""
DIALECTS: tuple[DialectName, ...] = get_args(DialectName)

_ANTHROPIC = frozenset(
    {
        "message_start",
        "message_delta",
        "message_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "ping",
    }
)
_COHERE = frozenset(
    {
        "message-start",
        "message-end",
        "content-start",
        "content-delta",
        "content-end",
        "tool-plan-delta",
        "tool-call-start",
        "tool-call-delta",
        "tool-call-end",
        "citation-start",
        "citation-end",
        "debug",
    }
)


def detect_stream(name: bytes, data: bytes) -> DialectName:
    """The dialect of a stream whose first SSE event is ``name`` / ``data``.

    Decided by the data's ``type`` (Responses, Anthropic and Cohere name every event in
    it; the event name only when the data is not a JSON object), then by Gemini's keys; anything else (a chat chunk,
    ``[DONE]``, text that is not JSON) is the chat dialect, whose interpreter reports
    what it does not understand.
    """
    try:
        obj: Any = orjson.loads(data)
    except orjson.JSONDecodeError:
        obj = loads_lone_surrogates(data)  # JSON but for a split surrogate pair?
    kind = obj.get("type") if type(obj) is dict else None
    if type(obj) is not dict:
        # Not an object: only the event name can tell (the chosen interpreter reports it).
        kind = name.decode("utf-8", "replace")
    elif type(kind) is not str:
        return _by_keys(obj)  # a chat chunk named `ping` or `completion` stays chat
    if kind.startswith("response."):
        return "responses"
    if kind in _ANTHROPIC:
        return "anthropic"
    if kind in _COHERE:
        return "cohere"
    if type(obj) is not dict:
        return "chat"
    if kind == "error":
        # Responses' error event carries a sequence number; Anthropic's an error object.
        return "responses" if "sequence_number" in obj else "anthropic"
    return _by_keys(obj)


def _by_keys(obj: dict[str, Any]) -> DialectName:
    if "candidates" in obj or "usageMetadata" in obj or "promptFeedback" in obj:
        return "gemini"
    err = obj.get("error")
    if type(err) is dict and type(err.get("status")) is str:
        return "gemini"  # Google's error object: {"code": 429, "status": "RESOURCE_EXHAUSTED"}
    return "chat"


def detect_body(obj: Any) -> DialectName:
    """The dialect of a non-streaming JSON response body (already parsed)."""
    if type(obj) is not dict:
        return "chat"
    if obj.get("object") == "response" or type(obj.get("output")) is list:
        return "responses"
    if obj.get("type") == "message" and type(obj.get("content")) is list:
        return "anthropic"
    if "candidates" in obj or "promptFeedback" in obj:
        return "gemini"
    msg = obj.get("message")
    if type(msg) is dict and "choices" not in obj and ("finish_reason" in obj or "role" in msg):
        return "cohere"
    err = obj.get("error")
    if type(err) is dict and type(err.get("status")) is str:
        return "gemini"
    if obj.get("type") == "error" and type(err) is dict:
        return "anthropic"
    return "chat"


def make_interpreter(
    dialect: DialectName, builder: AnswerBuilder, marker_mode: MarkerMode = "keep"
) -> DialectInterpreter:
    """A new interpreter of ``dialect`` folding into ``builder``."""
    if dialect == "chat":
        return ChunkInterpreter(builder, marker_mode)
    if dialect == "responses":
        return ResponsesInterpreter(builder, marker_mode)
    if dialect == "anthropic":
        return AnthropicInterpreter(builder, marker_mode)
    if dialect == "gemini":
        return GeminiInterpreter(builder, marker_mode)
    if dialect == "cohere":
        return CohereInterpreter(builder, marker_mode)
    raise ValueError(f"unknown dialect {dialect!r}: expected auto or one of {', '.join(DIALECTS)}")
