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
from collections.abc import AsyncGenerator, AsyncIterator

from streamcite.core.api import ChatStreamParser
from streamcite.core.events import ErrorEvent, Event, TokenEvent
from streamcite.pipeline.recorder import Recorder
from streamcite.pipeline.sse_reads import SseReads, warn_skipped
from streamcite.pipeline.timeouts import Budget
from streamcite.transports.base import TransportError, UpstreamResponse

__all__ = ["read_batches"]

_MAX_JSON_BODY = 64 * 1024 * 1024


def read_batches(
    resp: UpstreamResponse, parser: ChatStreamParser, budget: Budget, rec: Recorder
) -> SseReads | AsyncGenerator[list[Event], None]:
    """The events of ``resp``, one list per read as it is decoded (never empty; choose the
    reader once, no extra layer): a consumer pays one step per read, not per event."""
    ctype = resp.content_type
    if ctype == "application/json":
        return _each(_read_json(resp, parser, budget, rec))
    if ctype != "text/event-stream":
        refused = _content_type_error(resp, ctype)
        if refused is not None:
            return _each(_only_error(refused, rec))
    return SseReads(resp, parser, budget, rec)


async def _each(events: AsyncIterator[Event]) -> AsyncGenerator[list[Event], None]:
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
    warn_skipped(parser, rec)
