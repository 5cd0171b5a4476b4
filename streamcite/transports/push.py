"""The push transport: HTTP/1.1 responses whose body bytes are handed on as they arrive.

A pull transport (aiohttp, httpx) wakes the reading task once per upstream read: a future
made and resolved, the task stepped through its chain of coroutines, a read call — for a
relay whose upstream sends one token a read, most of what a token costs. Here the socket's
``data_received`` feeds the response parser (``httptools``: llhttp, the parser uvicorn
uses), whose body callback hands the bytes to a :class:`BodySink` in the same call: the
relay's stream decodes and logs a read's tokens there, with no task step
(:class:`~streamcite.pipeline.sse_reads.SseReads` in push mode). A response without a sink
is read the usual way (:meth:`PushResponse.read_chunk`: error bodies, JSON answers).

Connections are kept alive and reused per origin (:class:`ConnectionPool`, bounded, idle
ones closed after ``idle_seconds``); a request on a reused connection the server had
closed is sent again once on a new one, before any byte of an answer. Like the other
transports it follows no redirect (a 3xx is reported as ``redirected``), asks for the body
unencoded (``Accept-Encoding: identity``; an encoded body is an error, not garbage) and
bounds the response head (``MAX_HEAD_BYTES``, ``MAX_HEADERS``) and the bytes buffered for a
reader (reading pauses past ``BUFFER_BYTES``). Used by the relay when ``httptools`` is
installed (``pip install streamcite[fast]``); ``RelayConfig.upstream_transport`` chooses.
"""

from __future__ import annotations

import asyncio
import ssl
import weakref
from collections import deque
from collections.abc import AsyncIterator, Mapping

import httptools
from multidict import CIMultiDict, CIMultiDictProxy

from streamcite.core.quote import quote
from streamcite.transports.aiohttp import mime_essence
from streamcite.transports.base import BodySink, PushBody, TransportError, read_limited
from streamcite.transports.push_request import Origin, request_head

__all__ = [
    "BUFFER_BYTES",
    "MAX_HEADERS",
    "MAX_HEAD_BYTES",
    "ConnectionPool",
    "PushResponse",
    "PushTransport",
]

MAX_HEAD_BYTES = 64 * 1024
"""Largest response head (status line and headers) taken."""
MAX_HEADERS = 128
BUFFER_BYTES = 256 * 1024
"""Body bytes buffered for a pull reader before the socket's reading pauses."""
_DRAIN_SECONDS = 0.25
"""How long closing a response whose answer ended waits for the rest of its body."""
_DRAIN_BYTES = 4096


def _lost(message: str) -> TransportError:
    return TransportError(message, code="connection_lost", stage="http")


def _protocol_error(message: str) -> TransportError:
    return TransportError(message, code="protocol_error", stage="http", retryable=False)


def _head_too_large() -> TransportError:
    return _protocol_error("response head (or trailers) too large")


class _Connection(asyncio.Protocol):
    """One HTTP/1.1 connection: the response of one request at a time."""

    def __init__(self, loop: asyncio.AbstractEventLoop, origin: Origin) -> None:
        self.loop = loop
        self.origin = origin
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.reused = False
        self.idle_since = 0.0
        self.paused = False
        self._begin()

    def _begin(self) -> None:
        """Ready for a new response."""
        self.parser = httptools.HttpResponseParser(self)
        self.status = 0
        self.headers: CIMultiDict[str] = CIMultiDict()
        self.head_bytes = 0
        self.gap = 0
        """Bytes fed since the last body bytes, or since the request: a head, 1xx answers,
        chunk framing, trailers (httptools gathers a header whole: the bound is here)."""
        self.head: asyncio.Future[None] = self.loop.create_future()
        self.interim = False
        self.got_bytes = False
        self.buffer: deque[bytes] = deque()
        self.buffered = 0
        self.waiter: asyncio.Future[None] | None = None
        self.sink: BodySink | None = None
        self.complete = False
        self.keep_alive = False
        self.to_close = False
        """The body ends when the connection closes (no length, not chunked)."""
        self.failure: TransportError | None = None

    # -- asyncio.Protocol --------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.got_bytes = True
        if self.complete:  # no request waits for these bytes: the connection is not kept
            self._retire()
            return
        self.gap += len(data)
        try:
            self.parser.feed_data(data)
            if self.gap > MAX_HEAD_BYTES and not self.complete:
                self._fail(_head_too_large())
        except httptools.HttpParserCallbackError as exc:
            cause = exc.__context__
            failure = cause if isinstance(cause, TransportError) else _lost(f"{exc}")
            self._fail(failure)
        except httptools.HttpParserUpgrade:  # (not an HttpParserError: a 101 to the POST)
            self._fail(_protocol_error("the upstream switched protocols"))
        except httptools.HttpParserError as exc:
            self._fail(_protocol_error(f"invalid HTTP response: {quote(str(exc), 120)}"))

    def eof_received(self) -> bool:
        return False  # close our side too: connection_lost follows

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.complete:
            return
        if self.head.done() and self.to_close and self.failure is None:
            self._complete()  # a body that ends with the connection
            return
        why = f": {exc}" if exc is not None else ""
        if not self.head.done():
            self._fail(_lost(f"connection closed before the response headers{why}"))
        else:
            self._fail(_lost(f"connection lost mid-body{why}"))

    def pause_writing(self) -> None:  # (a request body is written once, whole)
        pass

    def resume_writing(self) -> None:
        pass

    # -- httptools callbacks -----------------------------------------------------------

    def on_message_begin(self) -> None:
        if self.complete:  # a second response in the read that ended the first one:
            self._retire()  # not this request's (parsing stops here: nothing is buffered)
            raise _lost("a response nobody asked for")

    def on_header(self, name: bytes, value: bytes) -> None:
        self.head_bytes += len(name) + len(value) + 4
        if self.head_bytes > MAX_HEAD_BYTES or len(self.headers) >= MAX_HEADERS:
            raise _head_too_large()
        self.headers.add(name.decode("latin-1"), value.decode("latin-1"))

    def on_headers_complete(self) -> None:
        status = self.parser.get_status_code()
        if status < 200:  # 1xx (103 Early Hints): the real response follows
            self.interim = True
            self.headers = CIMultiDict()
            self.head_bytes = 0
            return
        self.gap = 0
        self.status = status
        self.keep_alive = self.parser.should_keep_alive()
        chunked = "chunked" in self.headers.get("Transfer-Encoding", "").lower()
        self.to_close = (
            not chunked and "Content-Length" not in self.headers and status not in (204, 304)
        )
        if not self.head.done():
            self.head.set_result(None)

    def on_body(self, body: bytes) -> None:
        self.gap = 0
        sink = self.sink
        if sink is not None:
            sink.body(body)
            return
        self.buffer.append(body)
        self.buffered += len(body)
        if self.buffered > BUFFER_BYTES:
            self.pause_reading()
        self._wake()

    def on_message_complete(self) -> None:
        if self.interim:
            self.interim = False
            return
        self.keep_alive = self.keep_alive and self.parser.should_keep_alive()
        self._complete()

    # -- the response's side -----------------------------------------------------------

    def pause_reading(self) -> None:
        if not self.paused and self.transport is not None and not self.closed:
            self.paused = True
            self.transport.pause_reading()

    def resume_reading(self) -> None:
        if self.paused and self.transport is not None and not self.closed:
            self.paused = False
            self.transport.resume_reading()

    def _complete(self) -> None:
        self.complete = True
        if self.sink is not None:
            self.sink.end(None)
        self._wake()

    def _fail(self, failure: TransportError) -> None:
        if self.failure is not None or self.complete:
            return
        self.failure = failure
        if not self.head.done():
            self.head.set_exception(failure)
            self.head.exception()  # (retrieved: an abandoned request logs nothing)
        elif self.sink is not None:
            self.sink.end(failure)
        self._wake()
        self.close()

    def _retire(self) -> None:
        """The server spoke out of turn: not reused (its response, if any, ended)."""
        self.keep_alive = False
        self.close()

    def _wake(self) -> None:
        waiter = self.waiter
        if waiter is not None:
            self.waiter = None
            if not waiter.done():
                waiter.set_result(None)

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()

    def reusable(self) -> bool:
        return (
            self.complete
            and self.keep_alive
            and self.failure is None
            and not self.closed
            and self.sink is None
        )


class ConnectionPool:
    """Idle keep-alive connections per origin: at most ``max_idle`` each, none older than
    ``idle_seconds`` (the server may have closed it). :meth:`close` closes every connection
    it opened, in use or idle (as closing an aiohttp session does)."""

    def __init__(self, *, max_idle: int = 256, idle_seconds: float = 15.0) -> None:
        self.max_idle = max_idle
        self.idle_seconds = idle_seconds
        self._idle: dict[Origin, list[_Connection]] = {}
        self._ssl: ssl.SSLContext | None = None
        self._open: weakref.WeakSet[_Connection] = weakref.WeakSet()
        self._closed = False
        self.opened = 0
        """Connections opened so far (tests and metrics: reuse shows as few)."""

    async def connect(
        self, origin: Origin, connect_timeout: float | None, *, fresh: bool = False
    ) -> _Connection:
        loop = asyncio.get_running_loop()
        idle = None if fresh else self._idle.get(origin)
        now = loop.time()
        while idle:
            conn = idle.pop()
            if not conn.closed and now - conn.idle_since < self.idle_seconds:
                conn.reused = True
                conn._begin()
                return conn
            conn.close()
        scheme, host, port = origin
        if scheme == "https" and self._ssl is None:
            self._ssl = ssl.create_default_context()
        try:
            async with asyncio.timeout(connect_timeout):
                _, conn = await loop.create_connection(
                    lambda: _Connection(loop, origin),
                    host,
                    port,
                    ssl=self._ssl if scheme == "https" else None,
                )
        except TimeoutError as exc:
            raise TransportError(
                "connect timed out", code="connect_timeout", stage="timeout"
            ) from exc
        except OSError as exc:
            raise TransportError(f"cannot connect: {exc}", code="connect_failed") from exc
        self.opened += 1
        self._open.add(conn)
        return conn

    def release(self, conn: _Connection) -> None:
        """Keep ``conn`` for the next request to its origin, or close it."""
        if self._closed or not conn.reusable():
            conn.close()
            return
        idle = self._idle.setdefault(conn.origin, [])
        if len(idle) >= self.max_idle:
            conn.close()
            return
        conn.resume_reading()  # (paused by a sink: a closing server must be seen while idle)
        conn.idle_since = conn.loop.time()
        idle.append(conn)

    def transport(self) -> PushTransport:
        """A transport on these connections (not closing them when it is closed)."""
        return PushTransport(self)

    def close(self) -> None:
        self._closed = True
        for conn in list(self._open):
            conn.close()  # (a response still reading sees connection_lost)
        self._idle.clear()


class PushResponse(PushBody):
    """A response of :class:`PushTransport`: pull reads, or its body pushed to a sink."""

    __slots__ = ("_conn", "_pool", "headers", "status")

    def __init__(self, conn: _Connection, pool: ConnectionPool) -> None:
        self._conn = conn
        self._pool = pool
        self.status = conn.status
        self.headers: Mapping[str, str] = CIMultiDictProxy(conn.headers)

    @property
    def content_type(self) -> str:
        return mime_essence(self.headers.get("Content-Type", ""))

    def check_event_stream(self) -> None:
        """Raise TransportError unless the response is ``text/event-stream``."""
        if self.content_type != "text/event-stream":
            raise TransportError(
                f"expected Content-Type text/event-stream, got "
                f"{quote(self.headers.get('Content-Type'), 200)}",
                code="unexpected_content_type",
                stage="http",
                retryable=False,
            )

    async def read_chunk(self) -> bytes:
        """The body's next bytes, ``b""`` at its end."""
        conn = self._conn
        while True:
            if conn.buffer:
                data = conn.buffer.popleft()
                conn.buffered -= len(data)
                if conn.paused and conn.buffered <= BUFFER_BYTES // 2:
                    conn.resume_reading()
                return data
            if conn.failure is not None:
                raise conn.failure
            if conn.complete:
                return b""
            conn.waiter = waiter = conn.loop.create_future()
            try:
                await waiter
            finally:
                conn.waiter = None

    def aiter_bytes(self) -> AsyncIterator[bytes]:
        return _Chunks(self)

    async def read(self, limit: int = 1 << 20) -> bytes:
        return await read_limited(self.aiter_bytes(), limit)

    def push(self, sink: BodySink | None) -> None:
        conn = self._conn
        conn.sink = sink
        if sink is None:
            return
        conn.resume_reading()  # (before the sink may pause it again)
        while conn.buffer and conn.sink is sink:  # what came before the sink did
            data = conn.buffer.popleft()
            conn.buffered -= len(data)
            sink.body(data)
        if conn.sink is sink:
            if conn.failure is not None:
                sink.end(conn.failure)
            elif conn.complete:
                sink.end(None)

    def pause_reading(self) -> None:
        self._conn.pause_reading()

    def resume_reading(self) -> None:
        self._conn.resume_reading()

    async def aclose(self) -> None:
        conn = self._conn
        conn.sink = None
        if not (conn.complete or conn.closed or conn.failure is not None):
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                conn.close()  # cancelled mid-body (a stream stopped): no wait for the rest
            else:
                await _drain(conn)
        conn.buffer.clear()
        conn.buffered = 0
        self._pool.release(conn)


async def _drain(conn: _Connection) -> None:
    """The answer ended ([DONE]) before its body did: the body's last bytes (the chunked
    terminator) are on their way; a moment's wait keeps the connection."""
    if conn.buffered <= _DRAIN_BYTES:
        conn.resume_reading()  # (a sink paused it: the rest cannot come otherwise)
    try:
        async with asyncio.timeout(_DRAIN_SECONDS):
            while not (conn.complete or conn.closed or conn.failure is not None):
                if conn.buffered > _DRAIN_BYTES:
                    break  # more than a terminator: not worth keeping
                conn.waiter = waiter = conn.loop.create_future()
                await waiter
    except TimeoutError:
        pass
    except BaseException:
        conn.close()
        raise


class _Chunks:
    __slots__ = ("_resp",)

    def __init__(self, resp: PushResponse) -> None:
        self._resp = resp

    def __aiter__(self) -> _Chunks:
        return self

    async def __anext__(self) -> bytes:
        data = await self._resp.read_chunk()
        if not data:
            raise StopAsyncIteration
        return data


class PushTransport:
    """POSTs on pooled HTTP/1.1 connections (the caller's :class:`ConnectionPool`, or one of
    its own closed by :meth:`aclose`)."""

    name = "push"

    def __init__(self, pool: ConnectionPool | None = None) -> None:
        self._pool = pool or ConnectionPool()
        self._owned = pool is None

    async def open(
        self, url: str, headers: Mapping[str, str], body: bytes, connect_timeout: float | None
    ) -> PushResponse:
        origin, head = request_head(url, headers, len(body))
        pool = self._pool
        for attempt in (0, 1):
            conn = await pool.connect(origin, connect_timeout, fresh=attempt > 0)
            try:
                assert conn.transport is not None
                conn.transport.write(head + body)
                await conn.head
            except TransportError:
                conn.close()
                if attempt == 0 and conn.reused and not conn.got_bytes:
                    continue  # the server had closed the idle connection: a new one, once
                raise
            except BaseException:  # cancelled (the first-token timeout): the request is cut
                conn.close()
                raise
            break
        encoding = conn.headers.get("Content-Encoding", "identity").strip().lower()
        if encoding not in ("", "identity"):
            conn.close()
            raise TransportError(
                f"the upstream sent a {quote(encoding, 40)}-encoded body to a request for none",
                code="protocol_error",
                stage="http",
                retryable=False,
            )
        return PushResponse(conn, pool)

    async def aclose(self) -> None:
        if self._owned:
            self._pool.close()
