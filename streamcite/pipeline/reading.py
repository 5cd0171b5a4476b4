"""Reading the response: bytes → the sans-I/O core → events, each read under a timeout.

Three shapes of response: ``text/event-stream`` (the hot path: until the first token,
reads share one deadline, ``first_token`` after the request was sent, so keep-alive
comments do not restart it; then each read waits up to ``idle``), ``application/json`` (a
non-streaming answer read whole) and anything else (an error, unless the
transport's ``check_event_stream`` accepts it). A read that fails becomes one typed
error event; the stream then ends with what it has.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import cast

from streamcite.core.api import ChatStreamParser
from streamcite.core.events import ErrorEvent, Event, FinishEvent, TokenEvent
from streamcite.pipeline.deadline import ReadDeadline
from streamcite.pipeline.recorder import Recorder
from streamcite.pipeline.timeouts import Budget
from streamcite.transports.base import TransportError, UpstreamResponse

__all__ = ["read_batches"]

_MAX_JSON_BODY = 64 * 1024 * 1024


def read_batches(
    resp: UpstreamResponse, parser: ChatStreamParser, budget: Budget, rec: Recorder
) -> AsyncIterator[list[Event]]:
    """The events of ``resp``, one list per read as it is decoded (never empty; choose the
    reader once, no extra layer): a consumer pays one step per read, not per event."""
    ctype = resp.content_type
    if ctype == "application/json":
        return _each(_read_json(resp, parser, budget, rec))
    if ctype != "text/event-stream":
        refused = _content_type_error(resp, ctype)
        if refused is not None:
            return _each(_only_error(refused, rec))
    return _read_sse(resp, parser, budget, rec)


async def _each(events: AsyncIterator[Event]) -> AsyncIterator[list[Event]]:
    """Cold paths (a whole JSON body, a refusal): one event a batch."""
    async for ev in events:
        yield [ev]


def _content_type_error(resp: UpstreamResponse, ctype: str) -> ErrorEvent | None:
    """None when the transport accepts this body as an event stream anyway."""
    check = getattr(resp, "check_event_stream", None)
    try:
        if check is not None:
            check()
        else:
            raise TransportError(
                f"expected Content-Type text/event-stream, got {ctype!r}",
                code="unexpected_content_type",
                stage="http",
                retryable=False,
            )
    except TransportError as exc:
        return ErrorEvent(
            code=exc.code, message=exc.message, retryable=False, stage="http", status=resp.status
        )
    return None


async def _only_error(ev: ErrorEvent, rec: Recorder) -> AsyncIterator[Event]:
    yield rec.error(ev)


async def _read_json(
    resp: UpstreamResponse, parser: ChatStreamParser, budget: Budget, rec: Recorder
) -> AsyncIterator[Event]:
    timings = parser.builder.timings
    try:
        async with asyncio.timeout(budget.first_token_left()):
            body = await resp.read(_MAX_JSON_BODY)
    except TimeoutError:
        yield rec.error(
            ErrorEvent(
                code="first_token_timeout",
                message="no response body in time",
                retryable=True,
                stage="timeout",
            )
        )
        return
    for ev in parser.feed_body(body):
        if type(ev) is TokenEvent and timings.ttft_ms is None:
            rec.first_token()
        yield rec.note(ev)
    for ev in parser.close():
        yield rec.note(ev)
    _warn_skipped(parser, rec)


def _warn_skipped(parser: ChatStreamParser, rec: Recorder) -> None:
    """One warning per provider type the dialect skipped (a newer API's), with its count."""
    for kind, count in parser.builder.skipped_types.items():
        rec.log.warning("stream.skipped_type", dialect=parser.dialect, type=kind, count=count)


def _read_failure(exc: Exception, budget: Budget, waiting_first: bool) -> ErrorEvent:
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


ReadChunk = Callable[[], Awaitable[bytes]]


def _log_first_token(rec: Recorder, ttft_ms: float | None) -> None:
    rec.log.info("stream.first_token", ttft_ms=round(ttft_ms or 0.0, 3))


def _chunk_reader(resp: UpstreamResponse) -> ReadChunk:
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


async def _read_sse(  # noqa: C901  (the per-read loop, inlined: every call costs)
    resp: UpstreamResponse, parser: ChatStreamParser, budget: Budget, rec: Recorder
) -> AsyncIterator[list[Event]]:
    """The hot path: each read's events are yielded as soon as its bytes are decoded."""
    timings = parser.builder.timings
    read = _chunk_reader(resp)
    feed, note = parser.feed, rec.note
    idle, total = budget.timeouts.idle, budget.timeouts.total
    total_end = None if total is None else budget.t0 + total  # (perf_counter)
    t0 = budget.t0
    clock = time.perf_counter
    waiting_first = True
    deadline = ReadDeadline()  # one timer for all the reads, not one per read
    arm, disarm = deadline.arm, deadline.disarm
    try:
        while True:
            # Until the first token, one deadline from the request's sending: reads that
            # bring no token (keep-alive comments, a byte at a time) do not restart it.
            # Then each read may last ``idle``, within what is left of ``total``.
            if waiting_first:
                arm(budget.first_token_left())
            elif total_end is None:
                arm(idle)
            else:
                left = total_end - clock()
                if left < 0.0:
                    left = 0.0
                arm(left if idle is None or left < idle else idle)
            try:
                data = await read()
            except asyncio.CancelledError:
                if not deadline.expired():
                    raise
                yield [rec.error(_read_failure(TimeoutError(), budget, waiting_first))]
                break
            except Exception as exc:
                yield [rec.error(_read_failure(exc, budget, waiting_first))]
                break
            finally:
                disarm()
            if not data:
                break
            events = feed(data)
            if events:
                first = False
                for ev in events:
                    t = type(ev)
                    if t is TokenEvent:
                        if waiting_first:
                            waiting_first = False
                            first = True
                            timings.ttft_ms = (clock() - t0) * 1000
                    elif t is FinishEvent or t is ErrorEvent:
                        if first:  # (its log line stays first)
                            first = False
                            _log_first_token(rec, timings.ttft_ms)
                        note(ev)
                yield events
                if first:  # logged after the consumer has the token: not on the TTFT path
                    _log_first_token(rec, timings.ttft_ms)
            if parser.done:
                break  # [DONE]: don't wait for the server to close the connection
    finally:
        deadline.close()
    closing = [note(ev) for ev in parser.close()]
    if closing:
        yield closing
    _warn_skipped(parser, rec)
