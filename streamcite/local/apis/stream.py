"""Streaming for the four other APIs: SSE framing, stream faults, the writer.

Each API module turns a :class:`~streamcite.local.apis.plan.DialectPlan` into a
:class:`Script` — its events pre-serialised as bytes: the opening events, one *unit*
per text delta (with the events that go with it: a block start, an annotation), and
the ending (the closing events, or the API's own error events) — after asking
:func:`cut_of` where the faults stop the stream. :func:`send_script` writes it with the
pacing and the ending the faults ask for, exactly as the chat stream does
(:mod:`streamcite.local.apis.openai_stream`): stream positions count text deltas from 1.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import orjson
from aiohttp import web

from streamcite.local.apis.openai_stream import DEFAULT_STALL, _drop, _stall
from streamcite.local.apis.plan import DialectPlan
from streamcite.local.faults import FaultSpec
from streamcite.local.state import STATE

__all__ = ["SSE_HEADERS", "Cut", "Script", "cut_of", "send_script", "sse", "sse_malformed"]

SSE_HEADERS = {
    "Content-Type": "text/event-stream; charset=utf-8",
    "Cache-Control": "no-cache",
    "X-Accel-Buffering": "no",
}
_BOM = b"\xef\xbb\xbf"


def sse(event: str | None, payload: Any) -> bytes:
    """One SSE event: ``event: NAME`` (when named) and ``data: JSON`` (with the space
    every SDK's parser accepts), then the blank line."""
    data = b"data: " + orjson.dumps(payload) + b"\n\n"
    return b"event: " + event.encode() + b"\n" + data if event else data


def sse_malformed(event: str | None, payload: Any) -> bytes:
    """The event with the first half of its JSON only: a chunk that does not parse."""
    data = orjson.dumps(payload)
    half = b"data: " + data[: max(1, len(data) // 2)] + b"\n\n"
    return b"event: " + event.encode() + b"\n" + half if event else half


@dataclass(slots=True, frozen=True)
class Cut:
    """Where the faults stop a stream of ``units`` text deltas."""

    sent: int
    """Text deltas written before the stream stops (all of them when ``done``)."""
    action: str
    """``done``, ``error`` (the API's error events), ``drop`` or ``stall``."""
    malformed: int | None
    """0-based text delta sent malformed; ``units`` means the finishing event."""
    units: int

    @property
    def finish_malformed(self) -> bool:
        """The finishing event (the one carrying the finish reason) is sent malformed."""
        return self.action == "done" and self.malformed is not None and self.malformed >= self.units


def cut_of(spec: FaultSpec, units: int) -> Cut:
    """The faults of ``spec`` over a stream of ``units`` text deltas (the chat rules:
    a position past the last delta means the finishing event)."""
    malformed = None
    if spec.malformed_at is not None:
        malformed = min(spec.malformed_at, units + 1) - 1
    cut: int | None = None
    action = "done"
    if spec.error_at is not None:
        cut, action = min(spec.error_at, units + 1) - 1, "error"
    for key, name in ((spec.drop_after, "drop"), (spec.stall_after, "stall")):
        if key is not None and (cut is None or min(key, units) < cut):
            cut, action = min(key, units), name
    return Cut(units if cut is None else cut, action, malformed, units)


@dataclass(slots=True)
class Script:
    """The bytes of one streamed answer, faults applied."""

    opening: bytes
    units: list[bytes]
    ending: bytes
    """Written after the units for ``done`` (closing events) and ``error`` (error events)."""
    action: str
    sent: int = 0


async def send_script(
    request: web.Request, script: Script, plan: DialectPlan, log: Any
) -> web.StreamResponse:
    """Write ``script`` as an SSE response, paced by the plan; a client leaving ends it."""
    response = web.StreamResponse(headers=SSE_HEADERS)
    await response.prepare(request)
    spec = plan.spec
    try:
        await response.write((_BOM if spec.bom else b"") + script.opening)
        if plan.first_delay:
            await asyncio.sleep(plan.first_delay)
        await _write_units(response, script, plan.token_delay)
        if script.action in ("done", "error"):
            await response.write(script.ending)
            await response.write_eof()
        elif script.action == "drop":
            _drop(request)
        else:  # stall
            seconds = spec.stall_for if spec.stall_for is not None else DEFAULT_STALL
            await _stall(request, request.app[STATE].closing, seconds)
            _drop(request)
    except ConnectionError:
        log.debug("stream ended early", sent=script.sent, action=script.action)
    return response


async def _write_units(response: web.StreamResponse, script: Script, token_delay: float) -> None:
    units = script.units
    if token_delay and len(units) > 1:
        loop = asyncio.get_running_loop()
        last = loop.time()
        for i, unit in enumerate(units):
            if i:
                await asyncio.sleep(max(0.0, last + token_delay - loop.time()))
                last = loop.time()
            await response.write(unit)
            script.sent += 1
    elif units:
        await response.write(b"".join(units))
        script.sent = len(units)
