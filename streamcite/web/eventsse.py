"""streamcite's own event stream as SSE: ``id:`` = ``seq``, resumable from a stream log.

Without a log, events are numbered 1, 2, 3, ... as they are sent. With a
:class:`~streamcite.streamlog.StreamLog`, :func:`record_events` appends every event
(the log gives it its ``seq``) and :func:`sse_from_log` serves the entries after a
``Last-Event-ID``, then follows the live rest until the stream is finished.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterable
from typing import Any

import orjson

from streamcite.streamlog import StreamLog

__all__ = ["SSE_HEADERS", "event_sse", "parse_last_event_id", "record_events", "sse_from_log"]

SSE_HEADERS = {
    "Content-Type": "text/event-stream",
    "Cache-Control": "no-cache",
    "x-accel-buffering": "no",
}
_HEARTBEAT = b": heartbeat\n\n"


def _entry(seq: int, payload: bytes) -> bytes:
    return b"id: %d\ndata: " % seq + payload + b"\n\n"


_MAX_SEQ_DIGITS = 18  # a seq is a 64-bit counter; longer is not one


def parse_last_event_id(value: str | None) -> int:
    """The ``seq`` a ``Last-Event-ID`` header (or ``after_seq``) names; 0 when absent.

    ASCII digits only: ``str.isdigit`` also accepts ``²`` and ``①``, which ``int``
    refuses (an HTTP 500 once), and ``int`` accepts ``+1``, ``1_0`` and Arabic-Indic
    digits, which are no sequence numbers either.

    >>> parse_last_event_id("12"), parse_last_event_id(None)
    (12, 0)

    Raises ``ValueError`` for anything else.
    """
    if value is None:
        return 0
    value = value.strip(" \t")
    if not value:
        return 0
    if len(value) > _MAX_SEQ_DIGITS or not (value.isascii() and value.isdigit()):
        raise ValueError("Last-Event-ID must be a sequence number (ASCII digits)")
    return int(value)


async def event_sse(events: AsyncIterable[Any]) -> AsyncGenerator[bytes, None]:
    """Every event as ``id: <seq>`` + ``data: <wire JSON>``; the source is closed at the end."""
    seq = 0
    try:
        async for event in events:
            seq += 1
            yield _entry(seq, orjson.dumps(event))
    finally:
        aclose = getattr(events, "aclose", None)
        if aclose is not None:
            await aclose()


async def record_events(
    log: StreamLog, stream_id: str, events: AsyncIterable[Any], *, owner: str = "web"
) -> None:
    """Append every event of ``events`` to ``log`` under ``stream_id``, then finish it."""
    await log.open_stream(stream_id, owner=owner)
    try:
        async for event in events:
            await log.append(stream_id, orjson.dumps(event))
    finally:
        aclose = getattr(events, "aclose", None)
        if aclose is not None:
            await aclose()
        await log.finish(stream_id)


async def sse_from_log(
    log: StreamLog, stream_id: str, after_seq: int = 0, *, heartbeat: float = 15.0
) -> AsyncGenerator[bytes, None]:
    """The log's entries after ``after_seq``, live until the stream is finished.
    An unknown (or expired) stream ends at once with an ``error`` event."""
    while True:
        entries = await log.read(stream_id, after_seq, block=heartbeat)
        for entry in entries:
            after_seq = entry.seq
            yield _entry(entry.seq, entry.payload)
        if entries:
            continue
        status = await log.status(stream_id)
        if status is None:
            yield b"data: " + orjson.dumps(
                {"type": "error", "code": "unknown_stream", "message": "no such stream",
                 "retryable": False, "stage": "sse"}
            ) + b"\n\n"  # fmt: skip
            return
        if status.finished and status.last_seq <= after_seq:
            return
        yield _HEARTBEAT
