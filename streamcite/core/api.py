"""The sans-I/O entry points: bytes of a chat SSE stream in, typed events out."""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator
from typing import Any

import orjson

from streamcite.core.answer import COMPACT_EVERY, AnswerBuilder
from streamcite.core.bounds import DEFAULT_BOUNDS, StreamBounds
from streamcite.core.chunks import ChunkInterpreter
from streamcite.core.events import DoneEvent, ErrorEvent, Event
from streamcite.core.markers import MarkerMode
from streamcite.core.models import CitedAnswer
from streamcite.core.sse import DEFAULT_MAX_EVENT_SIZE, SSEDecoder
from streamcite.core.surrogates import loads_lone_surrogates, scrub_surrogates

__all__ = ["SIZE_CHECK_BYTES", "ChatStreamParser", "aiter_events", "iter_events"]

SIZE_CHECK_BYTES = 1024 * 1024
"""The parser checks the answer's size at least once per this many bytes fed (and at
each compaction), so an answer goes beyond its cap by at most this and one read."""


class ChatStreamParser:
    """SSE decoder + chunk interpreter + answer accumulator, fed bytes.

    >>> p = ChatStreamParser()
    >>> [e.type for e in p.feed(b'data: {"choices":[{"index":0,"delta":{"content":"Hi"}}]}\\n\\n')]
    ['token']
    """

    __slots__ = ("_decoder", "_fed", "_interpreter", "builder", "closed")

    def __init__(
        self,
        marker_mode: MarkerMode = "keep",
        max_event_size: int = DEFAULT_MAX_EVENT_SIZE,
        bounds: StreamBounds = DEFAULT_BOUNDS,
    ) -> None:
        self._decoder = SSEDecoder(max_event_size)
        self.builder = AnswerBuilder(bounds)
        self._interpreter = ChunkInterpreter(self.builder, marker_mode)
        self.closed = False
        self._fed = 0  # bytes fed since the last size check

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

    def feed(self, data: bytes) -> list[Event]:
        """Events completed by ``data`` (any split of the stream).

        The answer's size is checked at each compaction (every :data:`COMPACT_EVERY`
        parts) and after each :data:`SIZE_CHECK_BYTES` fed: beyond
        ``bounds.max_answer_chars`` an ``answer_too_large`` error ends the stream (the
        answer kept so far, ``complete: false``, nothing more decoded)."""
        out: list[Event] = []
        if self._interpreter.done:
            return out
        raw = self._decoder.feed_raw(data)
        if raw:
            self._interpreter.feed_raw(raw, out)
            self._fed += len(data)
            if self.builder.uncompacted > COMPACT_EVERY or self._fed > SIZE_CHECK_BYTES:
                self._fed = 0
                if (too_large := self.builder.check_size()) is not None:
                    self._interpreter.cut_for_size(too_large, out)
                    self._decoder = SSEDecoder()  # the bytes it holds dropped
        return out

    def feed_body(self, body: bytes) -> list[Event]:
        """A non-streaming ``chat.completion`` JSON body → the same events as a stream
        (held to the same caps: beyond ``max_answer_chars``, ``answer_too_large``)."""
        out: list[Event] = []
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
        self._interpreter.feed_completion(obj, out)
        if (too_large := self.builder.check_size()) is not None:
            out.append(too_large)
        return out

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
        return DoneEvent(answer=self.builder.snapshot())


def iter_events(chunks: Iterable[bytes], *, marker_mode: MarkerMode = "keep") -> Iterator[Event]:
    """Events of a recorded chat SSE stream given as byte chunks; the last is ``done``."""
    parser = ChatStreamParser(marker_mode)
    for chunk in chunks:
        yield from parser.feed(chunk)
    yield from parser.close()
    yield parser.done_event()


async def aiter_events(
    chunks: AsyncIterable[bytes], *, marker_mode: MarkerMode = "keep"
) -> AsyncIterator[Event]:
    """Async twin of :func:`iter_events`, for byte streams read from a socket."""
    parser = ChatStreamParser(marker_mode)
    for_events = parser.feed
    async for chunk in chunks:
        for ev in for_events(chunk):
            yield ev
    for ev in parser.close():
        yield ev
    yield parser.done_event()
