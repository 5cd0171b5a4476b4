"""What one producer run has seen, and how a run that ended without ``done`` ends."""

from __future__ import annotations

from typing import Any

from streamcite.core.events import CitationsEvent, DoneEvent, ErrorEvent, Event
from streamcite.core.models import CitedAnswer

__all__ = ["CITATIONS_RESEND", "Run", "final_events"]

CITATIONS_RESEND = 8
"""A citations event (which carries every citation and span so far) is logged, and so sent
to every reader, when the items of the citations frames logged so far are at most this
many times its own; a newer one then replaces it, else it waits, and the newest is logged
before ``done``. So a stream's citations frames total at most ``CITATIONS_RESEND + 2``
times its largest one (counted in citations and spans): an Anthropic answer of 1,024 cited blocks sent 99 MB of citations
frames to each browser (quadratic), from 0.6 MB upstream."""

_END_MESSAGES = {
    "cancelled": "the stream was cancelled",
    "abandoned": "no client listened to the stream within the resume grace period",
    "shutdown": "the relay shut down before the stream finished",
}


class Run:
    """What one producer run has seen so far (read after it ended, however it ended)."""

    __slots__ = (
        "citations_seq",
        "cited",
        "done",
        "failure",
        "held",
        "log_failed",
        "reraise",
        "time_to",
    )

    def __init__(self, time_to: dict[str, Any]) -> None:
        self.done: DoneEvent | None = None
        self.failure: ErrorEvent | None = None
        self.log_failed = False
        self.reraise = False
        self.held: CitationsEvent | None = None
        """The newest citations event, not logged yet (see :data:`CITATIONS_RESEND`)."""
        self.citations_seq = 0
        """The citations frame in the log that a newer one supersedes."""
        self.cited = 0
        """Citations and spans in the citations frames logged so far."""
        self.time_to = time_to
        """The relay's time-to histograms not observed yet (the first event of each kind)."""

    def hold(self, event: CitationsEvent) -> bool:
        """Whether to hold ``event`` back rather than log it now (:data:`CITATIONS_RESEND`)."""
        items = len(event.citations) + len(event.spans) + 1
        if self.cited > CITATIONS_RESEND * items:
            self.held = event
            return True
        self.cited += items
        self.held = None
        return False


def final_events(
    answer: CitedAnswer, reason: str | None, failure: ErrorEvent | None
) -> list[Event]:
    """``error`` + ``done`` for a stream that ended without its own ``done``."""
    if failure is not None:
        error = failure
    else:
        code = reason or "cancelled"
        error = ErrorEvent(
            code=code,
            message=_END_MESSAGES.get(code, "the stream was cancelled"),
            retryable=code == "shutdown",
            stage="cancelled",
        )
    # The pipeline records a generic "cancelled" error; the relay's says why.
    answer.errors = [
        e for e in answer.errors if not (isinstance(e, ErrorEvent) and e.code == "cancelled")
    ]
    answer.errors.append(error)
    return [error, DoneEvent(answer=answer)]
