"""The four time bounds of one stream, and the clock that enforces them.

``Timeouts`` is what a caller sets; ``Budget`` is one run's view of it: how much of
``total`` is left, each wait clipped to that, and the error event a wait that ran
out becomes (``total_timeout`` wins over the wait's own bound).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from streamcite.core.events import ErrorEvent

__all__ = ["Budget", "Timeouts"]


@dataclass(slots=True, frozen=True)
class Timeouts:
    """Seconds. ``None`` disables one bound (``total`` still caps everything)."""

    connect: float | None = 10.0
    """TCP/TLS connect and request send."""
    first_token: float | None = 60.0
    """Request sent → first byte of a token (providers may think for a while): one
    deadline for the response headers and the body's first token together. Bytes that
    complete no token (``: keep-alive`` comments, empty or role-only chunks, a byte
    at a time) do not restart it."""
    idle: float | None = 30.0
    """Longest silence between two reads once tokens flow."""
    total: float | None = 600.0
    """Request sent → end of the upstream stream."""


class Budget:
    """One run's deadline: ``start()`` once, then every wait asks ``bounded(limit)``."""

    __slots__ = ("sent", "t0", "timeouts")

    def __init__(self, timeouts: Timeouts) -> None:
        self.timeouts = timeouts
        self.t0 = 0.0
        self.sent = 0.0
        """When the request (its last attempt) was sent: ``first_token`` counts from here."""

    def start(self) -> float:
        self.t0 = self.sent = time.perf_counter()
        return self.t0

    def mark_sent(self) -> None:
        """A request is being sent (each attempt): the first-token deadline starts over."""
        self.sent = time.perf_counter()

    def first_token_left(self) -> float | None:
        """Seconds left until the first-token deadline (``sent + first_token``), clipped
        to what is left of ``total``; never negative."""
        limit = self.timeouts.first_token
        if limit is not None:
            limit = max(limit - (time.perf_counter() - self.sent), 0.0)
        return self.bounded(limit)

    def elapsed_ms(self) -> float:
        return (time.perf_counter() - self.t0) * 1000

    def remaining(self) -> float | None:
        """Seconds left of ``total`` (None: no total bound)."""
        if self.timeouts.total is None:
            return None
        return self.timeouts.total - (time.perf_counter() - self.t0)

    def bounded(self, limit: float | None) -> float | None:
        """``limit`` clipped to what is left of ``total`` (never negative)."""
        remaining = self.remaining()
        if remaining is None:
            return limit
        remaining = max(remaining, 0.0)
        return remaining if limit is None else min(limit, remaining)

    def timeout_error(self, waiting_first: bool) -> ErrorEvent:
        """The error of a wait that ran out: total, first token, or idle."""
        remaining = self.remaining()
        if remaining is not None and remaining <= 0.001:
            return ErrorEvent(
                code="total_timeout",
                message=f"the stream took longer than {self.timeouts.total} s",
                retryable=True,
                stage="timeout",
            )
        if waiting_first:
            return ErrorEvent(
                code="first_token_timeout",
                message=f"no token within {self.timeouts.first_token} s",
                retryable=True,
                stage="timeout",
            )
        return ErrorEvent(
            code="idle_timeout",
            message=f"no data for {self.timeouts.idle} s",
            retryable=True,
            stage="timeout",
        )
