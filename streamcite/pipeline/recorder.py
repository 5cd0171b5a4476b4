"""Cold-path reactions to a stream's events: timings, log lines, scrubbed errors.

The reading loop calls :meth:`Recorder.note` only for the rare events (finish,
error) so tokens pass untouched; the finish of choice 0 starts the enrichers
through the ``on_finish`` hook.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from streamcite.core.api import ChatStreamParser
from streamcite.core.events import ErrorEvent, Event, FinishEvent
from streamcite.core.redact import Redactor
from streamcite.pipeline.timeouts import Budget

__all__ = ["Recorder"]


class Recorder:
    """Records what happened to one stream in its answer, and logs it."""

    __slots__ = ("_on_finish", "_redact", "budget", "log", "parser")

    def __init__(
        self,
        parser: ChatStreamParser,
        budget: Budget,
        log: Any,
        redact: Redactor,
        on_finish: Callable[[], None],
    ) -> None:
        self.parser = parser
        self.budget = budget
        self.log = log
        self._redact = redact
        self._on_finish = on_finish

    def first_token(self) -> None:
        ttft = self.budget.elapsed_ms()
        self.parser.builder.timings.ttft_ms = ttft
        self.log.info("stream.first_token", ttft_ms=round(ttft, 3))

    def note(self, ev: Event) -> Event:
        """Start enrichers on choice 0's finish; scrub and log errors. Returns ``ev``."""
        if type(ev) is FinishEvent and ev.index == 0:
            self.parser.builder.timings.citations_ms = self.budget.elapsed_ms()
            self.log.info(
                "stream.finish", reason=ev.reason, citations=len(self.parser.builder.citations)
            )
            self._on_finish()
        elif type(ev) is ErrorEvent:
            ev.message = self.scrub(ev.message)
            self.log.info("stream.error", code=ev.code, stage=ev.stage, retryable=ev.retryable)
        return ev

    def error(self, ev: ErrorEvent) -> ErrorEvent:
        """Record an error raised outside the byte stream and return it for yielding."""
        self.parser.add_error(ev)
        self.note(ev)
        return ev

    def scrub(self, text: str) -> str:
        """``text`` without the stream's secrets (key, header values, URL password)."""
        return self._redact.text(text)
