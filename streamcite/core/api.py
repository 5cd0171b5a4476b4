"""The sans-I/O entry points: bytes of an SSE stream in (any dialect), typed events out."""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator
from typing import Any

import orjson

from streamcite.core._aiter import aiter_parsed
from streamcite.core._fields import expect_fields
from streamcite.core.answer import COMPACT_EVERY, AnswerBuilder
from streamcite.core.bounds import DEFAULT_BOUNDS, StreamBounds
from streamcite.core.dialects import (
    DIALECTS,
    Dialect,
    DialectInterpreter,
    DialectName,
    detect_body,
    detect_stream,
    make_interpreter,
)
from streamcite.core.dialects.responses import event_limit
from streamcite.core.events import DoneEvent, ErrorEvent, Event
from streamcite.core.markers import FootnoteDetector, MarkerMode
from streamcite.core.models import CitedAnswer
from streamcite.core.sse import OVERFLOW, RawEvent, SSEDecoder
from streamcite.core.surrogates import loads_lone_surrogates, scrub_surrogates

_new = object.__new__
expect_fields(DoneEvent, ["type", "answer"], "api.py (ChatStreamParser.done_event)")

__all__ = [
    "SIZE_CHECK_BYTES",
    "ChatStreamParser",
    "Dialect",
    "aiter_events",
    "answer_from_response",
    "iter_events",
]

SIZE_CHECK_BYTES = 1024 * 1024
"""The parser checks the answer's size at least once per this many bytes fed (and at
each compaction), so an answer goes beyond its cap by at most this and one read."""


_HOLD_ERRORS = 8
"""Leading error (or empty) events an ``auto`` parser holds while it waits for a telling
event."""


def _is_error(name: bytes, data: bytes) -> bool:
    return name == b"error" or data.startswith(b'{"type":"error"')


class _Undecided:
    """The interpreter of an ``auto`` parser until its first event: that event decides
    the dialect (:func:`~streamcite.core.dialects.detect_stream`), the real interpreter
    takes this one's place in the parser, and nothing is guessed again.

    An error event tells little (every dialect has one, and a chat server may send one
    in another's shape), an event without data nothing (``event: ping`` + ``data``):
    leading ones are held, the first other event decides, and the
    held ones go first to the interpreter it chose. A stream of nothing but errors is
    read as a chat stream."""

    __slots__ = ("_held", "_mode", "_parser", "builder")

    def __init__(self, parser: ChatStreamParser, builder: AnswerBuilder, mode: MarkerMode):
        self._parser = parser
        self.builder = builder
        self._mode = mode
        self._held: list[RawEvent] = []

    @property
    def finished(self) -> bool:
        return False

    @property
    def done(self) -> bool:
        return False

    def _decide(self, dialect: DialectName) -> DialectInterpreter:
        it = make_interpreter(dialect, self.builder, self._mode)
        self._parser._interpreter = it
        self._parser._dialect = dialect
        self._parser._limit_for(dialect)
        return it

    def _decide_by(self, item: RawEvent) -> DialectInterpreter:
        name, data = (b"", item) if isinstance(item, bytes) else (item[0], item[1])
        if len(data) > self._parser._max_event_size:
            # Too large to parse for its keys: its name (or a Responses type) tells.
            if data.startswith(b'{"type":"response.'):
                return self._decide("responses")
            return self._decide(detect_stream(name, b""))
        return self._decide(detect_stream(name, data))

    def feed_raw(self, raw: list[RawEvent], out: list[Event]) -> None:
        for k, item in enumerate(raw):
            if item is OVERFLOW:
                # Held (a marker, no bytes): the interpreter chosen reports it and ends
                # the answer incomplete.
                self._held.append(item)
                continue
            name, data = (b"", item) if isinstance(item, bytes) else (item[0], item[1])
            if len(self._held) < _HOLD_ERRORS and (not data.strip() or _is_error(name, data)):
                self._held.append(item)
                continue
            it = self._decide_by(item)
            it.feed_raw(self._parser._within_limit([*self._held, *raw[k:]]), out)
            return

    def feed_completion(self, obj: Any, out: list[Event] | None = None) -> list[Event]:
        return self._decide(detect_body(obj)).feed_completion(obj, out)

    def cut_for_size(self, ev: ErrorEvent, out: list[Event]) -> None:
        self._held.clear()
        self._decide("chat").cut_for_size(ev, out)

    def close(self, *, truncated_block: bool = False) -> list[Event]:
        # Nothing but errors (or nothing) was decoded: the chat dialect, as before
        # dialects (Anthropic and Responses send their own events before any error in a
        # stream; an error before them is an HTTP error response, not an event).
        out: list[Event] = []
        it = self._decide("chat")
        if self._held:
            it.feed_raw(self._held, out)
        return out + it.close(truncated_block=truncated_block)


class ChatStreamParser:
    """SSE decoder + dialect interpreter + answer accumulator, fed bytes.

    ``dialect`` is one of ``chat``, ``responses``, ``anthropic``, ``gemini``, ``cohere``,
    or ``auto`` (the default): decided from the first SSE event (its ``event:`` name or
    its JSON keys), never guessed again.

    >>> p = ChatStreamParser()
    >>> [e.type for e in p.feed(b'data: {"choices":[{"index":0,"delta":{"content":"Hi"}}]}\\n\\n')]
    ['token']
    >>> p.dialect
    'chat'
    >>> p = ChatStreamParser(dialect="anthropic")
    >>> ev = p.feed(b'event: content_block_delta\\ndata: {"type":"content_block_delta",'
    ...     b'"index":0,"delta":{"type":"text_delta","text":"Bonjour"}}\\n\\n')
    >>> [(e.type, e.text) for e in ev]
    [('token', 'Bonjour')]
    """

    __slots__ = (
        "_decoder",
        "_dialect",
        "_fed",
        "_interpreter",
        "_max_event_size",
        "builder",
        "closed",
    )

    def __init__(
        self,
        marker_mode: MarkerMode = "keep",
        max_event_size: int | None = None,
        bounds: StreamBounds = DEFAULT_BOUNDS,
        *,
        dialect: Dialect = "auto",
    ) -> None:
        if max_event_size is None:
            max_event_size = bounds.max_event_bytes
        self._max_event_size = max_event_size
        b = self.builder = AnswerBuilder(bounds)
        self._interpreter: DialectInterpreter
        self._dialect: Dialect = dialect
        if dialect == "auto":
            FootnoteDetector(marker_mode)  # validate the mode now, not at the first event
            self._interpreter = _Undecided(self, b, marker_mode)
            self._decoder = SSEDecoder(event_limit(max_event_size, bounds))
        elif dialect in DIALECTS:
            self._interpreter = make_interpreter(dialect, b, marker_mode)
            self._decoder = SSEDecoder(
                max_event_size if dialect != "responses" else event_limit(max_event_size, bounds)
            )  # (what _event_limit says, without the call: every stream makes a parser)
        else:
            raise ValueError(
                f"unknown dialect {dialect!r}: expected auto or one of {', '.join(DIALECTS)}"
            )
        self.closed = False
        self._fed = 0  # bytes fed since the last size check

    def _event_limit(self, dialect: Dialect) -> int:
        """The decoder's per-event limit for ``dialect``: a Responses stream repeats the
        whole answer in single events, so its limit covers an answer at the cap
        (:func:`~streamcite.core.dialects.responses.event_limit`; until an ``auto``
        parser knows its dialect, the same); any other, ``max_event_size``."""
        if dialect == "responses" or dialect == "auto":
            return event_limit(self._max_event_size, self.builder.bounds)
        return self._max_event_size

    def _limit_for(self, dialect: Dialect) -> None:
        """Set the decoder's limit for ``dialect`` (an ``auto`` parser that decided)."""
        self._decoder.max_event_size = self._event_limit(dialect)

    def _within_limit(self, raw: list[RawEvent]) -> list[RawEvent]:
        """The events an ``auto`` parser decoded before its dialect was known, those
        beyond that dialect's limit replaced by :data:`OVERFLOW` (never parsed)."""
        limit = self._decoder.max_event_size
        return [
            OVERFLOW
            if item is not OVERFLOW and len(item if isinstance(item, bytes) else item[1]) > limit
            else item
            for item in raw
        ]

    @property
    def dialect(self) -> Dialect:
        """The dialect read: ``auto`` until the first event decided it."""
        return self._dialect

    @property
    def finished(self) -> bool:
        """Choice 0's finish chunk has been seen."""
        return self._interpreter.finished

    @property
    def done(self) -> bool:
        """``[DONE]`` (or a whole non-streaming body) has been seen, or the answer went
        beyond ``bounds.max_answer_chars`` (``answer_too_large``: nothing more is read)."""
        return self._interpreter.done

    @property
    def answer(self) -> CitedAnswer:
        return self.builder.snapshot()

    def feed(self, data: bytes | bytearray | memoryview) -> list[Event]:
        """Events completed by ``data`` (any split of the stream; a ``bytearray`` or
        ``memoryview`` read is copied to ``bytes`` first).

        The answer's size is checked at each compaction (every :data:`COMPACT_EVERY`
        parts) and after each :data:`SIZE_CHECK_BYTES` fed: beyond
        ``bounds.max_answer_chars`` an ``answer_too_large`` error ends the stream (the
        answer kept so far, ``complete: false``, nothing more decoded)."""
        out: list[Event] = []
        if self._interpreter.done:
            return out
        # The events are cut from the read, and every reader of them takes bytes.
        chunk = data if type(data) is bytes else bytes(data)
        raw = self._decoder.feed_raw(chunk)
        if raw:
            try:
                self._interpreter.feed_raw(raw, out)
            except RecursionError:
                out.append(self.add_error(_too_deep()))  # the stream goes on
            fed = self._fed + len(chunk)
            b = self.builder
            # (AnswerBuilder.uncompacted, inline: a relay calls this once per upstream
            # read, and the property call was a tenth of a one-event feed)
            if (
                len(b.text_parts) + len(b.reasoning_parts) + len(b.refusal_parts) + b.arg_pending
                > COMPACT_EVERY
                or fed > SIZE_CHECK_BYTES
            ):
                self._fed = 0
                if (too_large := b.check_size()) is not None:
                    self._interpreter.cut_for_size(too_large, out)
                    self._decoder = SSEDecoder()  # the bytes it holds dropped
            else:
                self._fed = fed
        return out

    def feed_body(self, body: bytes) -> list[Event]:
        """A non-streaming JSON body of the parser's dialect (``auto``: decided from its
        keys) → the same events as the stream of the same answer (held to the same caps:
        beyond ``max_answer_chars``, ``answer_too_large``; a body beyond
        ``bounds.body_limit()`` is not parsed: ``event_too_large``)."""
        out: list[Event] = []
        if (too_big := self._body_too_large(body)) is not None:
            return [too_big]
        try:
            obj: Any = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            obj = loads_lone_surrogates(body)  # JSON but for lone surrogate escapes?
            if obj is None:
                return [
                    self.add_error(
                        ErrorEvent(
                            code="invalid_json",
                            message=f"response body is not JSON: {exc}",
                            stage="chunk",
                        )
                    )
                ]
            obj, lone = scrub_surrogates(obj)  # a whole body: a lone one is alone
            if lone:
                msg = f"{lone} lone UTF-16 surrogate(s) in the response: replaced by U+FFFD"
                out.append(self.add_error(ErrorEvent(code="lone_surrogate", message=msg)))
        try:
            self._interpreter.feed_completion(obj, out)
        except RecursionError:
            out.append(self.add_error(_too_deep()))
            self.builder.complete = False
        if (too_large := self.builder.check_size()) is not None:
            out.append(too_large)
        return out

    def _body_too_large(self, body: bytes | str) -> ErrorEvent | None:
        """A body beyond ``bounds.body_limit()``: recorded (``event_too_large``, the answer
        incomplete), never parsed (orjson spends ~13-30 times the bytes it parses)."""
        limit = self.builder.bounds.body_limit()
        if len(body) <= limit:
            return None
        msg = f"a response body of {len(body):,} bytes (beyond {limit:,}) was not read"
        self.builder.complete = False
        return self.add_error(ErrorEvent(code="event_too_large", message=msg, stage="chunk"))

    def close(self) -> list[Event]:
        """End of input: held markers released, truncation reported as an error event."""
        if self.closed:
            return []
        self.closed = True
        self._decoder.close()
        return self._interpreter.close(truncated_block=self._decoder.truncated)

    def add_error(self, ev: ErrorEvent) -> ErrorEvent:
        """Record an error that happened outside the byte stream (transport, timeout...)."""
        self.builder.error(ev)
        return ev

    def done_event(self) -> DoneEvent:
        ev = _new(DoneEvent)  # (its __init__ and default factory: a sixth of a done)
        ev.type = "done"
        ev.answer = self.builder.snapshot()
        return ev


def parser_for(
    dialect: Dialect, marker_mode: MarkerMode = "keep", bounds: StreamBounds = DEFAULT_BOUNDS
) -> ChatStreamParser:
    """``ChatStreamParser(marker_mode, bounds=bounds, dialect=dialect)`` with positional
    arguments: what the pipeline makes for every stream (in the compiled build a call
    with keyword arguments is parsed by name, a quarter of a parser's creation; this
    one's call to the class is a direct one)."""
    return ChatStreamParser(marker_mode, None, bounds, dialect=dialect)


def iter_events(
    chunks: Iterable[bytes], *, marker_mode: MarkerMode = "keep", dialect: Dialect = "auto"
) -> Iterator[Event]:
    """Events of a recorded SSE stream given as byte chunks; the last is ``done``.

    >>> body = [b'event: message_start\\ndata: {"type":"message_start","message":',
    ...         b'{"id":"msg_1","model":"claude"}}\\n\\n']
    >>> [e.type for e in iter_events(body)]
    ['meta', 'error', 'done']
    """
    parser = ChatStreamParser(marker_mode, dialect=dialect)
    for chunk in chunks:
        yield from parser.feed(chunk)
    yield from parser.close()
    yield parser.done_event()


def aiter_events(
    chunks: AsyncIterable[bytes], *, marker_mode: MarkerMode = "keep", dialect: Dialect = "auto"
) -> AsyncIterator[Event]:
    """Async twin of :func:`iter_events`, for byte streams read from a socket."""
    return aiter_parsed(lambda: ChatStreamParser(marker_mode, dialect=dialect), chunks)


def answer_from_response(
    body: bytes | str | dict[str, Any],
    *,
    dialect: Dialect = "auto",
    marker_mode: MarkerMode = "keep",
) -> CitedAnswer:
    """The :class:`CitedAnswer` of a non-streaming response body of any dialect.

    ``body`` is the JSON (bytes, str, or already parsed); ``auto`` decides the dialect
    from its keys. The text and citations are those the stream of the same answer gives.

    >>> a = answer_from_response({"type": "message", "id": "msg_1", "model": "claude",
    ...     "content": [{"type": "text", "text": "Paris."}], "stop_reason": "end_turn",
    ...     "usage": {"input_tokens": 5, "output_tokens": 2}})
    >>> a.text, a.finish_reason, a.complete, a.usage.total_tokens
    ('Paris.', 'stop', True, 7)
    """
    parser = ChatStreamParser(marker_mode, dialect=dialect)
    if isinstance(body, dict):
        obj: Any = body
    elif parser._body_too_large(body) is not None:
        return parser.answer
    else:
        try:
            obj = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            msg = f"response body is not JSON: {exc}"
            parser.add_error(ErrorEvent(code="invalid_json", message=msg, stage="chunk"))
            return parser.answer  # nothing to interpret, nothing cut short: no truncation
    try:
        parser._interpreter.feed_completion(obj)
    except RecursionError:
        parser.add_error(_too_deep())
        parser.builder.complete = False
    parser.close()
    return parser.answer


def _too_deep() -> ErrorEvent:
    """What a value nested deeper than the interpreter can walk becomes (a last guard:
    the dialects quote and copy upstream values with bounded, iterative helpers)."""
    return ErrorEvent(code="bad_chunk", message="an event nested too deeply to read", stage="chunk")
