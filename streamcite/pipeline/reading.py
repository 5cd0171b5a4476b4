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
from collections.abc import AsyncIterator

from streamcite.core.api import ChatStreamParser
from streamcite.core.events import ErrorEvent, Event, FinishEvent, TokenEvent
from streamcite.pipeline.recorder import Recorder
from streamcite.pipeline.timeouts import Budget
from streamcite.transports.base import TransportError, UpstreamResponse

__all__ = ["read_events"]

_MAX_JSON_BODY = 64 * 1024 * 1024


def read_events(
    resp: UpstreamResponse, parser: ChatStreamParser, budget: Budget, rec: Recorder
) -> AsyncIterator[Event]:
    """The events of ``resp`` as they are read (choose the reader once, no extra layer)."""
    ctype = resp.content_type
    if ctype == "application/json":
        return _read_json(resp, parser, budget, rec)
    if ctype != "text/event-stream":
        refused = _content_type_error(resp, ctype)
        if refused is not None:
            return _only_error(refused, rec)
    return _read_sse(resp, parser, budget, rec)


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


async def _read_sse(
    resp: UpstreamResponse, parser: ChatStreamParser, budget: Budget, rec: Recorder
) -> AsyncIterator[Event]:
    """The hot path: each token is yielded as soon as its bytes are decoded."""
    timings = parser.builder.timings
    reads = resp.aiter_bytes().__aiter__()
    feed, note, bounded = parser.feed, rec.note, budget.bounded
    idle = budget.timeouts.idle
    t0 = budget.t0
    waiting_first = True
    while True:
        try:
            # Until the first token, one deadline from the request's sending: reads that
            # bring no token (keep-alive comments, a byte at a time) do not restart it.
            async with asyncio.timeout(
                budget.first_token_left() if waiting_first else bounded(idle)
            ):
                data = await anext(reads)
        except StopAsyncIteration:
            break
        except Exception as exc:
            yield rec.error(_read_failure(exc, budget, waiting_first))
            break
        for ev in feed(data):
            t = type(ev)
            if t is TokenEvent:
                if waiting_first:
                    waiting_first = False
                    timings.ttft_ms = (time.perf_counter() - t0) * 1000
                    yield ev
                    # Logged after the consumer has the token: logging is not on the TTFT path.
                    rec.log.info("stream.first_token", ttft_ms=round(timings.ttft_ms, 3))
                    continue
            elif t is FinishEvent or t is ErrorEvent:
                note(ev)
            yield ev
        if parser.done:
            break  # [DONE]: don't wait for the server to close the connection
    for ev in parser.close():
        yield note(ev)
    _warn_skipped(parser, rec)
