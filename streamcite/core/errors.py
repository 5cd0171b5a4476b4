"""Typed exceptions. Every fault carries a machine-readable ``code`` and ``retryable``."""

from __future__ import annotations

from typing import Any

__all__ = [
    "EventTooLarge",
    "MalformedResponse",
    "StreamciteError",
    "UpstreamError",
]


class StreamciteError(Exception):
    """Base class of every streamcite error."""

    code: str = "error"
    retryable: bool = False

    def __init__(self, message: str, *, code: str | None = None, retryable: bool | None = None):
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        if retryable is not None:
            self.retryable = retryable

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code!r}, message={self.message!r})"


class EventTooLarge(StreamciteError):
    """An SSE event (or line) grew past the decoder's ``max_event_size``.

    ``events`` holds the events the same read completed besides the dropped one.
    """

    code = "event_too_large"

    def __init__(self, message: str, *, events: list[Any] | None = None):
        super().__init__(message)
        self.events: list[Any] = events or []


class MalformedResponse(StreamciteError):
    """A cold-path response body (citations, sources, grounding) did not match its schema."""

    code = "malformed_response"


class UpstreamError(StreamciteError):
    """An HTTP-level failure talking to an upstream service."""

    code = "upstream_error"

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        retryable: bool | None = None,
        status: int | None = None,
        retry_after: float | None = None,
    ):
        super().__init__(message, code=code, retryable=retryable)
        self.status = status
        self.retry_after = retry_after
