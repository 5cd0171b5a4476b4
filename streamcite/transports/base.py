"""What the pipeline needs from an HTTP client: open a POST, read bytes, close.

Transports map their library's exceptions onto :class:`TransportError` with a
stable ``code`` so both give identical events for the same bytes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Protocol

from streamcite.core.errors import StreamciteError

__all__ = ["Transport", "TransportError", "UpstreamResponse", "read_limited"]


async def read_limited(chunks: AsyncIterator[bytes], limit: int) -> bytes:
    """Up to ``limit`` bytes of a body; a body cut short is returned as far as it came
    (an error body is still worth reporting)."""
    parts: list[bytes] = []
    size = 0
    try:
        async for data in chunks:
            parts.append(data)
            size += len(data)
            if size >= limit:
                break
    except TransportError:
        pass
    return b"".join(parts)[:limit]


class TransportError(StreamciteError):
    """Connecting or reading failed below HTTP (refused, reset, TLS, DNS, timeout)."""

    code = "connection_error"
    retryable = True

    def __init__(self, message: str, *, code: str, stage: str = "connect", retryable: bool = True):
        super().__init__(message, code=code, retryable=retryable)
        self.stage = stage


class UpstreamResponse(Protocol):
    status: int
    headers: Mapping[str, str]

    @property
    def content_type(self) -> str:
        """Media type without parameters, lower-case (``text/event-stream``)."""
        ...

    def aiter_bytes(self) -> AsyncIterator[bytes]:
        """Body bytes as they arrive (raises TransportError on a broken connection)."""
        ...

    async def read(self, limit: int = 1 << 20) -> bytes:
        """Up to ``limit`` bytes of the body (error bodies, non-streaming answers)."""
        ...

    async def aclose(self) -> None:
        """Release the connection (closing it when the body was not read to the end)."""
        ...


class Transport(Protocol):
    name: str

    async def open(
        self, url: str, headers: Mapping[str, str], body: bytes, connect_timeout: float | None
    ) -> UpstreamResponse: ...

    async def aclose(self) -> None:
        """Close the client if the transport created it (a caller's client is left open)."""
        ...
