"""httpx transport, with httpx-sse for the SSE request headers and content-type check.

The bytes still go through streamcite's own WHATWG decoder: httpx-sse's line
decoder drops a leading BOM's first event and crashes on data-less blocks.
"""

from __future__ import annotations

import contextlib
import functools
import ssl
from collections.abc import AsyncIterator, Mapping

import httpx
import httpx_sse

from streamcite.transports.base import TransportError, read_limited

__all__ = ["HttpxTransport"]


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    # Building a default SSL context costs tens of milliseconds; a client made per
    # stream must not pay it on every time-to-first-token.
    return ssl.create_default_context()


class _Response:
    __slots__ = ("_resp", "_stack", "headers", "status")

    def __init__(self, resp: httpx.Response, stack: contextlib.AsyncExitStack) -> None:
        self._resp = resp
        self._stack = stack
        self.status = resp.status_code
        self.headers: Mapping[str, str] = resp.headers

    @property
    def content_type(self) -> str:
        value: str = self._resp.headers.get("content-type", "")
        return value.partition(";")[0].strip().lower()

    def check_event_stream(self) -> None:
        """Raise TransportError unless the response is ``text/event-stream`` (httpx-sse's rule)."""
        try:
            httpx_sse.EventSource(self._resp)._check_content_type()
        except httpx_sse.SSEError as exc:
            raise TransportError(
                str(exc), code="unexpected_content_type", stage="http", retryable=False
            ) from exc

    async def aiter_bytes(self) -> AsyncIterator[bytes]:
        try:
            async for data in self._resp.aiter_bytes():
                if data:
                    yield data
        except httpx.HTTPError as exc:  # transport and decoding errors alike
            raise TransportError(
                f"connection lost mid-body: {type(exc).__name__}: {exc}",
                code="connection_lost",
                stage="http",
            ) from exc

    async def read(self, limit: int = 1 << 20) -> bytes:
        return await read_limited(self.aiter_bytes(), limit)

    async def aclose(self) -> None:
        await self._stack.aclose()


class HttpxTransport:
    """POSTs with an :class:`httpx.AsyncClient` (the caller's, or one of its own)."""

    name = "httpx"

    def __init__(self, client: httpx.AsyncClient | None = None) -> None:
        self._client = client
        self._owned = client is None

    async def open(
        self, url: str, headers: Mapping[str, str], body: bytes, connect_timeout: float | None
    ) -> _Response:
        if self._client is None:
            self._client = httpx.AsyncClient(verify=_ssl_context())
        timeout = httpx.Timeout(
            connect=connect_timeout, read=None, write=connect_timeout, pool=connect_timeout
        )
        stack = contextlib.AsyncExitStack()
        try:
            source = await stack.enter_async_context(
                httpx_sse.aconnect_sse(
                    self._client,
                    "POST",
                    url,
                    content=body,
                    headers=dict(headers),
                    timeout=timeout,
                    follow_redirects=False,  # even on a caller's client that follows them
                )
            )
        except httpx.TimeoutException as exc:
            await stack.aclose()
            raise TransportError(
                "connect timed out", code="connect_timeout", stage="timeout"
            ) from exc
        except httpx.HTTPError as exc:
            await stack.aclose()
            raise TransportError(
                f"cannot connect: {type(exc).__name__}: {exc}", code="connect_failed"
            ) from exc
        except BaseException:
            await stack.aclose()
            raise
        return _Response(source.response, stack)

    async def aclose(self) -> None:
        if self._owned and self._client is not None:
            await self._client.aclose()
            self._client = None
