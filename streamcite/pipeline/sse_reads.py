"""The hot path of reading a response: each read of an event stream → its events.

An async iterator written as a class (not an async generator, which mypyc cannot compile),
so the optional compiled build runs the per-read loop as C: one step per upstream read,
its events as soon as its bytes are decoded. Until the first token, reads share one
deadline (``first_token`` after the request was sent: keep-alive comments do not restart
it); then each read waits up to ``idle``, within what is left of ``total``. A read that
fails becomes one typed error event; the stream then ends with what it has.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import cast

from streamcite.core.api import ChatStreamParser
from streamcite.core.events import ErrorEvent, Event, FinishEvent, TokenEvent
from streamcite.pipeline.deadline import ReadDeadline
from streamcite.pipeline.recorder import Recorder
from streamcite.pipeline.timeouts import Budget
from streamcite.transports.base import PushBody, TransportError, UpstreamResponse

__all__ = [
    "Batches",
    "ReadChunk",
    "SseReads",
    "TokenSink",
    "chunk_reader",
    "read_failure",
    "warn_skipped",
]

ReadChunk = Callable[[], Awaitable[bytes]]
TokenSink = Callable[[list[TokenEvent]], bool]
"""Takes a read's events when they are all tokens, in the connection's callback (True:
taken; False: they go the usual way, to the task iterating the reads)."""


def warn_skipped(parser: ChatStreamParser, rec: Recorder) -> None:
    """One warning per provider type the dialect skipped (a newer API's), with its count."""
    for kind, count in parser.builder.skipped_types.items():
        rec.log.warning("stream.skipped_type", dialect=parser.dialect, type=kind, count=count)


def read_failure(exc: Exception, budget: Budget, waiting_first: bool) -> ErrorEvent:
    """A read that raised → its error event (timeouts, transport and unknown errors)."""
    if isinstance(exc, TimeoutError):
        return budget.timeout_error(waiting_first)
    if isinstance(exc, TransportError):
        return ErrorEvent(
            code=exc.code, message=exc.message, retryable=exc.retryable, stage=exc.stage
        )
    # An unexpected client-library error: typed, not raised.
    return ErrorEvent(
        code="connection_lost",
        message=f"{type(exc).__name__}: {exc}",
        retryable=True,
        stage="http",
    )


def _log_first_token(rec: Recorder, ttft_ms: float | None) -> None:
    rec.log.info("stream.first_token", ttft_ms=round(ttft_ms or 0.0, 3))


def chunk_reader(resp: UpstreamResponse) -> ReadChunk:
    """``resp.read_chunk`` (one read, ``b""`` at the end) where the transport has it; else
    the same over its ``aiter_bytes``."""
    read = getattr(resp, "read_chunk", None)
    if callable(read):
        return cast(ReadChunk, read)
    reads = resp.aiter_bytes().__aiter__()

    async def read_next() -> bytes:
        async for data in reads:
            if data:
                return data
        return b""

    return read_next


class SseReads:
    """The events of an event-stream response, one list per read (never empty), then the
    parser's closing events; :meth:`aclose` when abandoned early (cancels the timer).

    With a :meth:`take_tokens` sink and a response that pushes its body
    (:class:`~streamcite.transports.base.PushBody`), each read is decoded in the
    connection's callback and a read of tokens only goes to the sink there; the task
    iterating the reads wakes only for the rest (a finish, citations, an error, the end),
    with reading paused until it asks for more — events stay in order and what waits for
    the task is one read's."""

    __slots__ = (
        "_budget",
        "_closed",
        "_deadline",
        "_ended",
        "_failure",
        "_idle",
        "_log_first",
        "_parser",
        "_push",
        "_pushing",
        "_queued",
        "_read",
        "_reading",
        "_rec",
        "_sink",
        "_total_end",
        "_waiting_first",
        "_wake",
    )

    def __init__(
        self, resp: UpstreamResponse, parser: ChatStreamParser, budget: Budget, rec: Recorder
    ) -> None:
        self._read = chunk_reader(resp)
        self._parser = parser
        self._budget = budget
        self._rec = rec
        self._idle = budget.timeouts.idle
        total = budget.timeouts.total
        self._total_end = None if total is None else budget.t0 + total  # (perf_counter)
        self._waiting_first = True
        self._deadline = ReadDeadline()  # one timer for all the reads, not one per read
        self._reading = True
        self._closed = False
        self._log_first = False
        """The first token went out in the last batch: logged now, off the TTFT path."""
        self._push = resp if isinstance(resp, PushBody) else None
        self._sink: TokenSink | None = None
        self._pushing = False
        self._queued: list[Event] | None = None
        """Push mode: events decoded in the callback for the task (reading paused)."""
        self._ended = False
        self._failure: Exception | None = None
        self._wake: asyncio.Future[None] | None = None

    def take_tokens(self, sink: TokenSink) -> None:
        """Hand reads of tokens only to ``sink`` as they are decoded, when the response
        pushes its body (else: nothing changes); set before the first read."""
        if self._push is not None:
            self._sink = sink

    def __aiter__(self) -> SseReads:
        return self

    async def __anext__(self) -> list[Event]:
        if self._log_first:  # logged after the consumer has the token
            self._log_first = False
            _log_first_token(self._rec, self._parser.builder.timings.ttft_ms)
        if self._reading:
            batch = await self._next_read()
            if batch is not None:
                return batch
        if not self._closed:
            self._closed = True
            rec = self._rec
            closing = [rec.note(ev) for ev in self._parser.close()]
            if closing:
                return closing
        warn_skipped(self._parser, self._rec)
        raise StopAsyncIteration

    async def aclose(self) -> None:
        self._stop()

    def _stop(self) -> None:
        self._reading = False
        self._deadline.close()
        if self._pushing and self._push is not None:
            self._pushing = False
            self._push.push(None)

    def _window(self) -> float | None:
        # Until the first token, one deadline from the request's sending: reads that
        # bring no token (keep-alive comments, a byte at a time) do not restart it.
        # Then each read may last ``idle``, within what is left of ``total``.
        idle, total_end = self._idle, self._total_end
        if self._waiting_first:
            return self._budget.first_token_left()
        if total_end is None:
            return idle
        left = total_end - time.perf_counter()
        if left < 0.0:
            left = 0.0
        return left if idle is None or left < idle else idle

    def _arm(self) -> None:
        self._deadline.arm(self._window())

    async def _next_read(self) -> list[Event] | None:
        """The next read's events; None when the reads are over."""
        if self._sink is not None:
            return await self._next_pushed()
        deadline, parser = self._deadline, self._parser
        try:
            while not parser.done:  # [DONE]: don't wait for the server to close
                self._arm()
                try:
                    data = await self._read()
                except asyncio.CancelledError:
                    deadline.disarm()
                    if not deadline.expired():
                        raise
                    self._stop()
                    failure = read_failure(TimeoutError(), self._budget, self._waiting_first)
                    return [self._rec.error(failure)]
                except Exception as exc:
                    deadline.disarm()
                    self._stop()
                    return [self._rec.error(read_failure(exc, self._budget, self._waiting_first))]
                deadline.disarm()
                if not data:
                    break
                events = parser.feed(data)  # (a direct C call compiled)
                if events:
                    self._note(events)
                    return events
        except BaseException:
            self._stop()
            raise
        self._stop()
        return None

    # -- push mode ----------------------------------------------------------------------

    async def _next_pushed(self) -> list[Event] | None:
        """Push mode: the next events the callback left for the task; None at the end."""
        push = self._push
        assert push is not None
        if not self._pushing:
            if self._ended:
                return None
            self._pushing = True
            push.push(self)  # (bytes already received are decoded now)
        elif self._queued is None:
            push.resume_reading()  # paused when the last events were left for the task
        if self._queued is None and not self._ended:
            deadline = self._deadline
            self._wake = wake = asyncio.get_running_loop().create_future()
            self._arm()
            try:
                await wake
            except asyncio.CancelledError:
                deadline.disarm()
                if not deadline.expired():
                    self._stop()
                    raise
                self._stop()
                timeout = read_failure(TimeoutError(), self._budget, self._waiting_first)
                return [self._rec.error(timeout)]
            finally:
                self._wake = None
            deadline.disarm()
        queued = self._queued
        if queued is not None:
            self._queued = None
            return queued
        self._stop()
        if self._failure is not None:
            failure, self._failure = self._failure, None
            if not isinstance(failure, TransportError):
                raise failure  # the parser's (a bug), as a read would raise it
            return [self._rec.error(read_failure(failure, self._budget, self._waiting_first))]
        return None

    def body(self, data: bytes) -> None:
        """Push mode, from the connection's callback: one read of the body."""
        if self._ended:
            return
        parser = self._parser
        try:
            events = parser.feed(data)
        except Exception as exc:
            self.end(exc)
            return
        if events:
            logging_first = self._log_first
            self._note(events)
            self._log_first = self._log_first or logging_first
            queued = self._queued
            if queued is not None:
                queued.extend(events)  # (a read the pause did not stop: one socket read)
            elif self._tokens_taken(events):
                if self._log_first:
                    self._log_first = False
                    _log_first_token(self._rec, parser.builder.timings.ttft_ms)
            else:
                self._queued = events
                self._hand_over()
        if parser.done:  # [DONE]: don't wait for the server to close
            self.end(None)
        elif not self._waiting_first:
            self._deadline.extend(self._window())

    def _tokens_taken(self, events: list[Event]) -> bool:
        for ev in events:
            if type(ev) is not TokenEvent:
                return False
        sink = self._sink
        return sink is not None and sink(events)  # type: ignore[arg-type]

    def end(self, failure: Exception | None) -> None:
        """Push mode: the body ended, or the connection failed."""
        if self._ended:
            return
        self._ended = True
        self._failure = failure
        self._hand_over()

    def _hand_over(self) -> None:
        """Wake the task (its events, or the end), reading paused until it asks again."""
        push = self._push
        if push is not None and not self._ended:
            push.pause_reading()
        wake = self._wake
        if wake is not None and not wake.done():
            wake.set_result(None)

    def _note(self, events: list[Event]) -> None:
        """The first token's time; finishes and errors recorded (the first token's log
        line stays first)."""
        first = False
        for ev in events:
            t = type(ev)
            if t is TokenEvent:
                if self._waiting_first:
                    self._waiting_first = False
                    first = True
                    timings = self._parser.builder.timings
                    timings.ttft_ms = (time.perf_counter() - self._budget.t0) * 1000
            elif t is FinishEvent or t is ErrorEvent:
                if first:
                    first = False
                    _log_first_token(self._rec, self._parser.builder.timings.ttft_ms)
                self._rec.note(ev)
        self._log_first = first


class Batches:
    """The lists of events ``gen`` yields, where a reader it yields (:class:`SseReads`) is
    iterated in its place while ``gen`` waits at that ``yield``: one async step per
    upstream read, not two (``gen``'s own layer is skipped on the hot path). What the
    reader raises is thrown into ``gen`` at that ``yield``, so its handlers and cleanup run
    as if it read the reader itself; :meth:`aclose` closes ``gen`` (which closes the
    reader)."""

    __slots__ = ("_gen", "_reads", "_sink")

    def __init__(self, gen: AsyncGenerator[list[Event] | SseReads, None]) -> None:
        self._gen = gen
        self._reads: SseReads | None = None
        self._sink: TokenSink | None = None

    def take_tokens(self, sink: TokenSink) -> None:
        """Reads of tokens only go to ``sink`` where the response pushes its body
        (:meth:`SseReads.take_tokens`); set before the first step."""
        self._sink = sink

    def __aiter__(self) -> Batches:
        return self

    async def __anext__(self) -> list[Event]:
        while True:
            reads = self._reads
            if reads is None:
                item = await self._gen.__anext__()
            else:
                try:
                    return await reads.__anext__()
                except StopAsyncIteration:
                    self._reads = None
                    item = await self._gen.__anext__()
                except BaseException as exc:
                    self._reads = None
                    item = await self._gen.athrow(exc)
            if isinstance(item, list):
                return item
            if self._sink is not None:
                item.take_tokens(self._sink)
            self._reads = item

    async def aclose(self) -> None:
        self._reads = None
        await self._gen.aclose()
