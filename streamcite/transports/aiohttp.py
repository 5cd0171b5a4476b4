"""aiohttp transport."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping

import aiohttp

from streamcite.core.quote import quote
from streamcite.transports.base import TransportError, read_limited

__all__ = ["AiohttpTransport"]

_READ_SIZE = 64 * 1024
_SSE_HEADERS = {"Accept": "text/event-stream", "Cache-Control": "no-store"}
"""Sent on every request, as httpx-sse (the httpx transport) does."""


_TIMEOUTS: dict[float | None, aiohttp.ClientTimeout] = {}
"""The request timeouts by connect limit (one or two values in practice: the streams'
``Timeouts.connect``, or less of a nearly spent ``total``); at most 16 kept."""


def _client_timeout(connect: float | None) -> aiohttp.ClientTimeout:
    """The (frozen, so shared) ``ClientTimeout`` of a request whose connect limit is
    ``connect``: made once, not per stream."""
    timeout = _TIMEOUTS.get(connect)
    if timeout is None:
        if len(_TIMEOUTS) >= 16:
            _TIMEOUTS.clear()
        timeout = aiohttp.ClientTimeout(total=None, connect=connect, sock_read=None)
        _TIMEOUTS[connect] = timeout
    return timeout


def mime_essence(header: str) -> str:
    """The MIME type of a Content-Type header value, as Fetch extracts it: of the
    comma-separated values, the last valid ``type/subtype`` (``*/*`` skipped),
    lower-cased, without parameters ("" if none)."""
    found = ""
    for value in header.split(","):
        essence = value.partition(";")[0].strip().lower()
        kind, slash, sub = essence.partition("/")
        if slash and kind and sub and essence != "*/*" and " " not in essence and "/" not in sub:
            found = essence
    return found


def _read_error(exc: aiohttp.ClientError) -> TransportError:
    if isinstance(exc, aiohttp.ClientPayloadError):
        return TransportError(
            f"connection lost mid-body: {exc}", code="connection_lost", stage="http"
        )
    return TransportError(
        f"read failed: {type(exc).__name__}: {exc}", code="connection_lost", stage="http"
    )


class _Chunks:
    """The body's chunks as they arrive (an async iterator class, not an async generator:
    the compiled build compiles this module)."""

    __slots__ = ("_read",)

    def __init__(self, resp: aiohttp.ClientResponse) -> None:
        self._read = resp.content.readany

    def __aiter__(self) -> _Chunks:
        return self

    async def __anext__(self) -> bytes:
        try:
            data = await self._read()
        except aiohttp.ClientError as exc:
            raise _read_error(exc) from exc
        if not data:
            raise StopAsyncIteration
        return data


class _Response:
    __slots__ = ("_resp", "headers", "status")

    def __init__(self, resp: aiohttp.ClientResponse) -> None:
        self._resp = resp
        self.status = resp.status
        self.headers: Mapping[str, str] = resp.headers

    @property
    def content_type(self) -> str:
        return mime_essence(self._resp.headers.get("Content-Type", ""))

    def check_event_stream(self) -> None:
        """Raise TransportError unless the response is ``text/event-stream``."""
        if self.content_type != "text/event-stream":
            header = self._resp.headers.get("Content-Type")
            raise TransportError(
                f"expected Content-Type text/event-stream, got {quote(header, 200)}",
                code="unexpected_content_type",
                stage="http",
                retryable=False,
            )

    def aiter_bytes(self) -> AsyncIterator[bytes]:
        return _Chunks(self._resp)

    async def read_chunk(self) -> bytes:
        """The body's next bytes as they arrive, ``b""`` at its end: one read, without the
        iterator of :meth:`aiter_bytes` (a step less per read on the streaming hot path)."""
        try:
            return await self._resp.content.readany()
        except aiohttp.ClientError as exc:
            raise _read_error(exc) from exc

    async def read(self, limit: int = 1 << 20) -> bytes:
        return await read_limited(self.aiter_bytes(), limit)

    async def aclose(self) -> None:
        if self._resp.content.at_eof():
            self._resp.release()
        else:
            self._resp.close()  # unread body: drop the connection, don't reuse it


class AiohttpTransport:
    """POSTs with an :class:`aiohttp.ClientSession` (the caller's, or one of its own)."""

    name = "aiohttp"

    def __init__(self, session: aiohttp.ClientSession | None = None) -> None:
        self._session = session
        self._owned = session is None

    async def open(
        self, url: str, headers: Mapping[str, str], body: bytes, connect_timeout: float | None
    ) -> _Response:
        if self._session is None:
            self._session = aiohttp.ClientSession(auto_decompress=True)
        timeout = _client_timeout(connect_timeout)
        try:
            resp = await self._session.post(
                url,
                data=body,
                headers={**headers, **_SSE_HEADERS},
                timeout=timeout,
                allow_redirects=False,  # a 3xx is reported as `redirected` (transports.base)
            )
        except TimeoutError as exc:
            raise TransportError(
                "connect timed out", code="connect_timeout", stage="timeout"
            ) from exc
        except aiohttp.ClientConnectorError as exc:
            raise TransportError(f"cannot connect: {exc.os_error}", code="connect_failed") from exc
        except aiohttp.ClientError as exc:
            raise TransportError(f"{type(exc).__name__}: {exc}", code="connect_failed") from exc
        return _Response(resp)

    async def aclose(self) -> None:
        if self._owned and self._session is not None:
            await self._session.close()
            self._session = None
