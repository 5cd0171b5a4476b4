"""Typed exceptions. Every fault carries a machine-readable ``code`` and ``retryable``."""

from __future__ import annotations

from typing import Any

__all__ = [
    "AnswerError",
    "AnswerIncomplete",
    "AnswerTimeout",
    "ConnectFailed",
    "EnrichmentFailed",
    "EventTooLarge",
    "MalformedResponse",
    "StreamciteError",
    "UpstreamError",
    "UpstreamRefused",
    "answer_error",
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


class AnswerError(StreamciteError):
    """An answer that failed, raised by :meth:`CitedAnswer.raise_for_error
    <streamcite.core.models.CitedAnswer.raise_for_error>`.

    ``code``, ``stage``, ``status``, ``retryable`` and ``retry_after`` are those of the
    answer's first error (``code`` ``incomplete`` when the stream was cut with no error
    recorded); ``errors`` holds every ``ErrorEvent`` of the answer and ``answer`` the
    answer itself (its text so far, its citations). The message is one line: the code,
    then what happened and, where one is known, what to do.
    """

    code = "answer_error"

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        retryable: bool | None = None,
        stage: str | None = None,
        status: int | None = None,
        retry_after: float | None = None,
        errors: list[Any] | None = None,
        answer: Any = None,
    ):
        super().__init__(message, code=code, retryable=retryable)
        self.stage = stage
        self.status = status
        self.retry_after = retry_after
        self.errors: list[Any] = errors or []
        self.answer: Any = answer

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


class ConnectFailed(AnswerError):
    """The upstream could not be reached (nothing listening, DNS, TLS, connect timeout)."""


class UpstreamRefused(AnswerError):
    """The upstream answered with an HTTP error status (``status``): a wrong key, model
    or URL, a rate limit, a server error."""


class AnswerTimeout(AnswerError):
    """A time limit of ``Timeouts`` ran out (first token, idle, total)."""


class AnswerIncomplete(AnswerError):
    """The stream broke off before its end (connection lost, an error chunk, a cut)."""


class EnrichmentFailed(AnswerError):
    """The answer streamed whole, but an enricher after it failed (Wikit sources, a
    grounding check) or a claim could not be checked."""


_BY_STAGE: dict[str, type[AnswerError]] = {
    "connect": ConnectFailed,
    "http": UpstreamRefused,
    "timeout": AnswerTimeout,
    "sources": EnrichmentFailed,
    "grounding": EnrichmentFailed,
}


def answer_error(answer: Any) -> AnswerError | None:
    """The exception :meth:`CitedAnswer.raise_for_error` raises for ``answer`` (None when
    it completed with no error): typed by the first error's stage."""
    errors = list(answer.errors)
    if answer.complete and not errors:
        return None
    if not errors:
        return AnswerIncomplete(
            "the stream ended before the answer did", code="incomplete", answer=answer
        )
    first = errors[0]
    stage = str(first.stage)
    kind = _BY_STAGE.get(stage)
    if kind is None:
        kind = AnswerIncomplete if not answer.complete else AnswerError
    message = " ".join(str(first.message).split()) or stage
    more = len(errors) - 1 + int(getattr(answer, "errors_dropped", 0) or 0)
    if more:
        message += f" (and {more} more error{'s' if more > 1 else ''}: answer.errors)"
    return kind(
        message,
        code=str(first.code),
        retryable=bool(first.retryable),
        stage=stage,
        status=first.status,
        retry_after=first.retry_after,
        errors=errors,
        answer=answer,
    )
