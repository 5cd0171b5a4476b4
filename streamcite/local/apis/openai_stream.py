"""The streamed chat completion of the local backend: SSE chunks and stream faults.

The handler is kept lean — chunks are pre-serialised byte templates written straight
to the socket — so benchmarks with many concurrent streams measure the client. The
stream faults (``malformed_at``, ``error_at``, ``drop_after``, ``stall_after``,
``no_done``, ``bom``) are applied to the pre-serialised events before writing.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import orjson
from aiohttp import web

from streamcite.local.config import MODEL
from streamcite.local.faults import FaultSpec
from streamcite.local.profiles import profile_events
from streamcite.local.state import STATE

__all__ = ["DEFAULT_STALL", "StreamPlan", "stream_completion"]

DEFAULT_STALL = 300.0
"""How long a ``stall_after`` stall lasts unless the spec says ``stall_for``."""

_SSE_HEADERS = {
    "Content-Type": "text/event-stream; charset=utf-8",
    "Cache-Control": "no-cache",
    "X-Accel-Buffering": "no",
}
_DONE = b"data: [DONE]\n\n"
_BOM = b"\xef\xbb\xbf"
_ERROR_EVENT = (
    b"data: "
    + orjson.dumps(
        {
            "error": {
                "message": "The upstream model is overloaded (injected fault).",
                "type": "server_error",
                "code": "upstream_overloaded",
            }
        }
    )
    + b"\n\n"
)


class _Closing(Exception):
    """The connection was closed on purpose (``drop_after``); nothing more to send."""


@dataclass(slots=True)
class StreamPlan:
    """Everything a streamed answer sends, decided before the first byte."""

    completion_id: str
    created: int
    pieces: list[str]
    finish_reason: str
    citations: list[dict[str, Any]]
    usage: dict[str, int] | None
    spec: FaultSpec
    first_delay: float
    token_delay: float


@dataclass(slots=True)
class _Script:
    """The events to write, in order, and how the stream ends (after the faults)."""

    role: bytes
    contents: list[bytes]
    closing: list[bytes]
    action: str
    """``done``, ``error``, ``drop`` or ``stall``."""
    sent: int = 0
    """Content chunks written so far."""


def _stream_events(plan: StreamPlan) -> tuple[bytes, list[bytes], list[bytes]]:
    """The role chunk, the content chunks and the closing events, pre-serialised."""
    usage_null = b',"usage":null' if plan.usage is not None else b""
    head = b'{"id":"%s","object":"chat.completion.chunk","created":%d,"model":"%s",' % (
        plan.completion_id.encode(),
        plan.created,
        MODEL.encode(),
    )
    role = (
        b"data: "
        + head
        + b'"choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,'
        + b'"finish_reason":null}]'
        + usage_null
        + b"}\n\n"
    )
    content_head = b"data: " + head + b'"choices":[{"index":0,"delta":{"content":'
    content_tail = b'},"logprobs":null,"finish_reason":null}]' + usage_null + b"}\n\n"
    contents = [content_head + orjson.dumps(p) + content_tail for p in plan.pieces]
    finish = (
        b"data: "
        + head
        + b'"choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":'
        + orjson.dumps(plan.finish_reason)
        + b"}]"
        + usage_null
        + b',"citations":'
        + orjson.dumps(plan.citations)
        + b"}\n\n"
    )
    closing = [finish]
    if plan.usage is not None:
        closing.append(
            b"data: " + head + b'"choices":[],"usage":' + orjson.dumps(plan.usage) + b"}\n\n"
        )
    return role, contents, closing


def _malformed(event: bytes) -> bytes:
    """The first half of an event's JSON: a chunk that does not parse."""
    payload = event[len(b"data: ") : -2]
    return b"data: " + payload[: max(1, len(payload) // 2)] + b"\n\n"


def _script(plan: StreamPlan) -> _Script:
    """The plan's events (a provider profile's, else OpenAI's) with its faults applied."""
    spec = plan.spec
    role, contents, closing = profile_events(
        spec,
        completion_id=plan.completion_id,
        created=plan.created,
        model=MODEL,
        pieces=plan.pieces,
        finish_reason=plan.finish_reason,
        citations=plan.citations,
        usage=plan.usage,
    ) or _stream_events(plan)
    count = len(contents)
    # Each fault position points at a content chunk; past the end means the finish chunk.
    if spec.malformed_at is not None:
        at = min(spec.malformed_at, count + 1) - 1
        if at < count:
            contents[at] = _malformed(contents[at])
        else:
            closing[0] = _malformed(closing[0])
    cut: int | None = None  # content chunks sent before the stream stops
    action = "done"
    if spec.error_at is not None:
        cut, action = min(spec.error_at, count + 1) - 1, "error"
    for key, name in ((spec.drop_after, "drop"), (spec.stall_after, "stall")):
        if key is not None and (cut is None or min(key, count) < cut):
            cut, action = min(key, count), name
    if cut is not None:
        contents = contents[:cut]
    if action == "done" and not spec.no_done:
        closing.append(_DONE)
    return _Script(role, contents, closing, action)


async def stream_completion(request: web.Request, plan: StreamPlan, log: Any) -> web.StreamResponse:
    """Send ``plan`` as an SSE stream, faults included; a client leaving ends it quietly."""
    script = _script(plan)
    response = web.StreamResponse(headers=_SSE_HEADERS)
    await response.prepare(request)
    try:
        await response.write((_BOM if plan.spec.bom else b"") + script.role)
        if plan.first_delay:
            await asyncio.sleep(plan.first_delay)
        await _write_contents(response, script, plan.token_delay)
        await _end(request, response, script, plan.spec)
    except (ConnectionError, _Closing):
        # The client went away, or we closed the connection on purpose: nothing to finish.
        log.debug("stream ended early", sent=script.sent, action=script.action)
    return response


async def _write_contents(
    response: web.StreamResponse, script: _Script, token_delay: float
) -> None:
    """Write the content chunks, paced by ``token_delay`` (counted in ``script.sent``)."""
    contents = script.contents
    if token_delay and len(contents) > 1:
        # Each gap is at least token_delay, measured from the previous write's start,
        # so the write itself does not slow the pace (clients measure inter-token
        # latency against it).
        loop = asyncio.get_running_loop()
        last = loop.time()
        for i, event in enumerate(contents):
            if i:
                await asyncio.sleep(max(0.0, last + token_delay - loop.time()))
                last = loop.time()
            await response.write(event)
            script.sent += 1
    elif contents:
        # No pacing: one write for all content chunks (still one SSE event each).
        await response.write(b"".join(contents))
        script.sent = len(contents)


async def _end(
    request: web.Request, response: web.StreamResponse, script: _Script, spec: FaultSpec
) -> None:
    """Finish the stream as the script says: closing events, an error, a drop or a stall."""
    if script.action == "done":
        await response.write(b"".join(script.closing))
    elif script.action == "error":
        await response.write(_ERROR_EVENT)
    elif script.action == "drop":
        _drop(request)
        raise _Closing
    elif script.action == "stall":
        closing = request.app[STATE].closing
        await _stall(
            request, closing, spec.stall_for if spec.stall_for is not None else DEFAULT_STALL
        )
        _drop(request)
        raise _Closing
    await response.write_eof()


def _drop(request: web.Request) -> None:
    """Close the TCP connection now: no chunked-encoding terminator, no finish, no [DONE]."""
    transport = request.transport
    if transport is not None:
        transport.close()


async def _stall(request: web.Request, closing: asyncio.Event, seconds: float) -> None:
    """Send nothing, keep the connection, until ``seconds`` pass, the client leaves or we stop."""
    deadline = asyncio.get_running_loop().time() + seconds
    while not closing.is_set():
        transport = request.transport
        if transport is None or transport.is_closing():
            return
        remaining = deadline - asyncio.get_running_loop().time()
        if remaining <= 0:
            return
        try:
            await asyncio.wait_for(closing.wait(), timeout=min(0.25, remaining))
        except TimeoutError:
            continue
