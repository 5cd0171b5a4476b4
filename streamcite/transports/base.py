"""What the pipeline needs from an HTTP client: open a POST, read bytes, close.

Transports map their library's exceptions onto :class:`TransportError` with a
stable ``code`` so both give identical events for the same bytes.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Mapping
from typing import Protocol
from urllib.parse import urljoin, urlsplit

from streamcite.core.errors import StreamciteError

__all__ = [
    "BodySink",
    "PushBody",
    "Transport",
    "TransportError",
    "UpstreamResponse",
    "is_redirect",
    "read_limited",
    "redirect_message",
]


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


def is_redirect(status: int) -> bool:
    """A 3xx answer. streamcite follows none: a request carries credentials (API keys,
    Wikit keys, Google tokens, the conversation), and a redirect may point anywhere."""
    return 300 <= status < 400


_HOST_CHARS = re.compile(r"[^A-Za-z0-9.\-:\[\]]")


def redirect_message(status: int, location: str | None, request_url: str) -> str:
    """What a ``redirected`` error says: where it pointed, as an origin only.

    Path and query are left out (they may carry tokens), and so is any user:password.

    >>> redirect_message(307, "https://u:p@evil.example:8443/x?key=s", "http://api.local/v1/c")
    'HTTP 307 redirect to another origin (https://evil.example:8443); not followed, so no credentials left this origin'
    >>> redirect_message(308, "/v2/c", "http://api.local/v1/c")
    'HTTP 308 redirect within http://api.local; not followed: point the base URL at the new address'
    """
    target = urlsplit(urljoin(request_url, location or ""))
    source = urlsplit(request_url)
    host = _HOST_CHARS.sub("", target.netloc.rpartition("@")[2])[:255] or "?"
    scheme = target.scheme if target.scheme in ("http", "https") else "?"
    origin = f"{scheme}://{host}"
    if (target.scheme, target.netloc) == (source.scheme, source.netloc):
        return (
            f"HTTP {status} redirect within {origin}; "
            "not followed: point the base URL at the new address"
        )
    return (
        f"HTTP {status} redirect to another origin ({origin}); "
        "not followed, so no credentials left this origin"
    )


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


class BodySink(Protocol):
    """Where a :class:`PushBody` hands its body, from the connection's callback."""

    def body(self, data: bytes) -> None:
        """The body's next bytes (never raises: a sink keeps its own failures)."""
        ...

    def end(self, failure: TransportError | None) -> None:
        """The body ended (``None``) or the connection failed; nothing follows."""
        ...


class PushBody(ABC):
    """A response that can hand its body to a :class:`BodySink` as it arrives, instead of
    being read (:mod:`streamcite.transports.push`)."""

    __slots__ = ()

    @abstractmethod
    def push(self, sink: BodySink | None) -> None:
        """From now on, the body goes to ``sink`` (bytes already received first);
        ``None``: to nobody (the reader stopped)."""

    @abstractmethod
    def pause_reading(self) -> None:
        """Stop reading the socket until :meth:`resume_reading` (the sink has enough)."""

    @abstractmethod
    def resume_reading(self) -> None: ...
