"""The browser ↔ relay protocol: client messages (parsed strictly) and relay frames.

Client → relay (one JSON object per WebSocket text message, or the ``POST /sse`` body)::

    {"type": "ask", "question": "...", "ref": "r1", "options": {...}}
    {"type": "cancel", "stream_id": "..."}
    {"type": "resume", "stream_id": "...", "after_seq": 12}

Relay → client: every pipeline event of a stream as
``{"stream_id": ..., "seq": N, ...event}`` (``seq`` = 1, 2, 3, ... per stream, so a
client can see a gap), plus control frames that carry no ``seq`` and are not part of
any stream's log: ``hello``, ``accepted``, ``heartbeat`` and connection-level
``error`` (``"seq": null``, ``"stage": "relay"``).

Everything here is pure: bytes in, typed messages or bytes out.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

import orjson

from streamcite.core.errors import StreamciteError

__all__ = [
    "DONE_PREFIX",
    "PROTOCOL_VERSION",
    "TOKEN_STARTS",
    "WS_SHORT_HEADERS",
    "AskMessage",
    "AskOptions",
    "CancelMessage",
    "ClientMessage",
    "CloseCode",
    "ProtocolError",
    "ResumeMessage",
    "accepted_frame",
    "envelope",
    "heartbeat_frame",
    "hello_frame",
    "is_done_payload",
    "parse_client_message",
    "relay_error_frame",
    "token_json",
    "token_start",
    "valid_stream_id",
    "ws_text_frame",
]

PROTOCOL_VERSION = 1

_STREAM_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
_REF = re.compile(r"[\x20-\x7e]{1,64}")
_FAULTS_MAX = 256
DONE_PREFIX = b'{"type":"done"'
"""How the wire JSON of a ``done`` event starts (orjson writes ``type`` first)."""


class CloseCode:
    """WebSocket close codes the relay uses (4000-4999 are application codes)."""

    NORMAL = 1000
    GOING_AWAY = 1001
    """The relay is shutting down; reconnect (to another instance) and resume."""
    POLICY = 1008
    MESSAGE_TOO_BIG = 1009
    """A client message exceeded ``max_message_bytes`` (sent by aiohttp itself)."""
    TOO_SLOW = 4008
    """The client fell further behind than its buffer allows; reconnect and resume."""


class ProtocolError(StreamciteError):
    """A client message that cannot be accepted; ``code`` says why."""

    code = "bad_message"


@dataclass(slots=True, frozen=True)
class AskOptions:
    """What a client may choose per question. Never the upstream URL, key or model."""

    marker_mode: Literal["keep", "strip"] = "keep"
    """``keep``: footnote markers stay in the text (the page turns them into links)."""
    sources: bool = True
    """Run the quoted-sources enricher when the relay has one."""
    grounding: bool = True
    """Run the grounding check when the relay has one."""
    faults: str | None = None
    """Fault-injection header for the embedded backend; honoured only when the relay
    was started with ``allow_client_faults`` (tests and demos)."""


@dataclass(slots=True, frozen=True)
class AskMessage:
    question: str
    options: AskOptions = field(default_factory=AskOptions)
    ref: str | None = None
    """Client-chosen correlation id, echoed in ``accepted`` and relay errors."""
    type: Literal["ask"] = "ask"


@dataclass(slots=True, frozen=True)
class CancelMessage:
    stream_id: str
    type: Literal["cancel"] = "cancel"


@dataclass(slots=True, frozen=True)
class ResumeMessage:
    stream_id: str
    after_seq: int = 0
    type: Literal["resume"] = "resume"


ClientMessage: TypeAlias = AskMessage | CancelMessage | ResumeMessage

_ASK_KEYS = frozenset({"type", "question", "options", "ref"})
_CANCEL_KEYS = frozenset({"type", "stream_id"})
_RESUME_KEYS = frozenset({"type", "stream_id", "after_seq"})
_OPTION_KEYS = frozenset({"marker_mode", "sources", "grounding", "faults"})


def valid_stream_id(value: Any) -> bool:
    """True for ids the relay could have issued (``[A-Za-z0-9_-]{1,64}``)."""
    return isinstance(value, str) and _STREAM_ID.fullmatch(value) is not None


def parse_client_message(
    data: bytes | str, *, max_bytes: int = 16 * 1024, max_question_chars: int = 4000
) -> ClientMessage:
    """Parse and validate one client message; raise :class:`ProtocolError` with a code.

    Codes: ``message_too_large``, ``bad_json``, ``bad_message`` (wrong shape or field),
    ``unknown_type``, ``empty_question``, ``question_too_long``, ``bad_option``.
    """
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    if len(raw) > max_bytes:
        raise ProtocolError(
            f"message of {len(raw)} bytes exceeds the limit of {max_bytes}",
            code="message_too_large",
        )
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise ProtocolError(f"not valid JSON: {exc}", code="bad_json") from None
    if not isinstance(obj, dict):
        raise ProtocolError("a message must be a JSON object", code="bad_message")
    kind = obj.get("type")
    if kind == "ask":
        return _parse_ask(obj, max_question_chars)
    if kind == "cancel":
        _no_extra(obj, _CANCEL_KEYS)
        return CancelMessage(stream_id=_stream_id(obj))
    if kind == "resume":
        _no_extra(obj, _RESUME_KEYS)
        after = obj.get("after_seq", 0)
        if isinstance(after, bool) or not isinstance(after, int) or not 0 <= after < 2**63:
            raise ProtocolError("after_seq must be an integer >= 0", code="bad_message")
        return ResumeMessage(stream_id=_stream_id(obj), after_seq=after)
    if not isinstance(kind, str):
        raise ProtocolError("a message needs a string 'type'", code="bad_message")
    raise ProtocolError(
        f"unknown message type {kind[:40]!r}: ask, cancel or resume", code="unknown_type"
    )


def _no_extra(obj: dict[str, Any], allowed: frozenset[str]) -> None:
    extra = sorted(set(obj) - allowed)
    if extra:
        names = ", ".join(repr(k[:40]) for k in extra[:5])
        raise ProtocolError(f"unknown field(s) {names} in {obj['type']!r}", code="bad_message")


def _stream_id(obj: dict[str, Any]) -> str:
    sid = obj.get("stream_id")
    if not valid_stream_id(sid):
        raise ProtocolError("stream_id must match [A-Za-z0-9_-]{1,64}", code="bad_message")
    assert isinstance(sid, str)
    return sid


def _parse_ask(obj: dict[str, Any], max_question_chars: int) -> AskMessage:
    _no_extra(obj, _ASK_KEYS)
    question = obj.get("question")
    if not isinstance(question, str):
        raise ProtocolError("question must be a string", code="bad_message")
    question = question.strip()
    if not question:
        raise ProtocolError("the question is empty", code="empty_question")
    if len(question) > max_question_chars:
        raise ProtocolError(
            f"the question has {len(question)} characters; the limit is {max_question_chars}",
            code="question_too_long",
        )
    ref = obj.get("ref")
    if ref is not None and (not isinstance(ref, str) or _REF.fullmatch(ref) is None):
        raise ProtocolError("ref must be 1-64 printable ASCII characters", code="bad_message")
    return AskMessage(question=question, options=_parse_options(obj.get("options")), ref=ref)


def _parse_options(raw: Any) -> AskOptions:
    if raw is None:
        return AskOptions()
    if not isinstance(raw, dict):
        raise ProtocolError("options must be an object", code="bad_option")
    extra = sorted(set(raw) - _OPTION_KEYS)
    if extra:
        names = ", ".join(repr(k[:40]) for k in extra[:5])
        raise ProtocolError(
            f"unknown option(s) {names}: marker_mode, sources, grounding, faults",
            code="bad_option",
        )
    marker_mode = raw.get("marker_mode", "keep")
    if marker_mode not in ("keep", "strip"):
        raise ProtocolError("marker_mode must be 'keep' or 'strip'", code="bad_option")
    flags: dict[str, bool] = {}
    for name in ("sources", "grounding"):
        value = raw.get(name, True)
        if not isinstance(value, bool):
            raise ProtocolError(f"{name} must be true or false", code="bad_option")
        flags[name] = value
    faults = raw.get("faults")
    if faults is not None and (
        not isinstance(faults, str)
        or len(faults) > _FAULTS_MAX
        or not faults.isprintable()
        or not faults.isascii()
    ):
        raise ProtocolError(
            f"faults must be printable ASCII of at most {_FAULTS_MAX} characters",
            code="bad_option",
        )
    return AskOptions(
        marker_mode=marker_mode,
        sources=flags["sources"],
        grounding=flags["grounding"],
        faults=faults,
    )


# -- relay → client ---------------------------------------------------------------


def envelope(stream_id: str, seq: int, payload: bytes) -> bytes:
    """``{"stream_id","seq",...event}`` from an event's wire JSON, without re-parsing it.

    ``stream_id`` must be one the relay issued (``valid_stream_id``): it is spliced in
    as is. ``payload`` is a JSON object (``{"type": ...}``).
    """
    return b'{"stream_id":"%s","seq":%d,%s' % (stream_id.encode("ascii"), seq, payload[1:])


_WS_LEN1 = struct.Struct("!BB").pack
_WS_LEN2 = struct.Struct("!BBH").pack
_WS_LEN3 = struct.Struct("!BBQ").pack


def ws_text_frame(payload: bytes) -> bytes:
    """One unmasked, unfragmented WebSocket text frame (RFC 6455 §5.2; a server's frames
    carry no mask)."""
    return ws_text_header(len(payload)) + payload


_WS_SHORT = [_WS_LEN1(0x81, n) for n in range(126)]
WS_SHORT_HEADERS = _WS_SHORT
"""``ws_text_header(n)`` for ``n < 126``, by ``n`` (a list index: no call on the hot path)."""


def ws_text_header(n: int) -> bytes:
    """The header of :func:`ws_text_frame` for a payload of ``n`` bytes."""
    if n < 126:
        return _WS_SHORT[n]
    if n < 65536:
        return _WS_LEN2(0x81, 126, n)
    return _WS_LEN3(0x81, 127, n)


_dumps = orjson.dumps


def token_json(index: int, text: str, display: str) -> bytes:
    """``orjson.dumps(TokenEvent(index=index, text=text, display=display))``, byte for
    byte, without orjson's walk over a dataclass (about 2 µs of the relay's CPU per token);
    ``orjson.JSONEncodeError`` for the same strings (a lone surrogate)."""
    t = _dumps(text)
    d = t if display == text else _dumps(display)
    start = TOKEN_STARTS[index] if 0 <= index < 8 else token_start(index)
    return b"".join((start, t, b',"display":', d, b"}"))  # (join: faster than % here)


def token_start(index: int) -> bytes:
    """How the wire JSON of a token of choice ``index`` starts, up to its text."""
    return b'{"type":"token","index":%d,"text":' % index


TOKEN_STARTS = [token_start(i) for i in range(8)]
"""``token_start(i)`` for the first choices (a list index on the hot path)."""


def is_done_payload(payload: bytes) -> bool:
    """True for the wire JSON of a ``done`` event (orjson writes ``type`` first)."""
    return payload.startswith(DONE_PREFIX)


def heartbeat_frame(ts: float) -> bytes:
    """``{"type":"heartbeat","ts":...}`` — ``ts`` is the relay's Unix time in seconds."""
    return orjson.dumps({"type": "heartbeat", "ts": round(ts, 3)})


def hello_frame(
    *,
    heartbeat_interval: float,
    max_message_bytes: int,
    max_question_chars: int,
    max_streams: int,
    features: dict[str, bool],
    max_streams_per_client: int | None = None,
) -> bytes:
    """First frame on a WebSocket: protocol version, limits and what the relay can do."""
    return orjson.dumps(
        {
            "type": "hello",
            "protocol": PROTOCOL_VERSION,
            "heartbeat_interval": heartbeat_interval,
            "limits": {
                "max_message_bytes": max_message_bytes,
                "max_question_chars": max_question_chars,
                "max_streams_per_connection": max_streams,
                **(
                    {}
                    if max_streams_per_client is None
                    else {"max_streams_per_client": max_streams_per_client}
                ),
            },
            "features": features,
        }
    )


def accepted_frame(stream_id: str, ref: str | None, *, resumed: bool = False) -> bytes:
    """The answer to ``ask`` (and ``resume``): the stream's id, before any of its events."""
    return orjson.dumps(
        {"type": "accepted", "stream_id": stream_id, "ref": ref, "resumed": resumed}
    )


def relay_error_frame(
    code: str,
    message: str,
    *,
    stream_id: str | None = None,
    ref: str | None = None,
    retryable: bool = False,
) -> bytes:
    """A connection-level error (``"seq": null``): not part of any stream's log."""
    return orjson.dumps(
        {
            "type": "error",
            "stream_id": stream_id,
            "seq": None,
            "code": code,
            "message": message,
            "retryable": retryable,
            "stage": "relay",
            "ref": ref,
        }
    )
