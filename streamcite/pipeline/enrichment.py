"""The after-stream stage: the ``after=[...]`` enrichers, run concurrently.

They start once choice 0 finishes (not on a refusal, nor on an answer cut by an
error unless ``enrich_incomplete``), each under its own ``timeout``; one that
waits for another (``needs``, e.g. grounding on the Wikit sources) gets its
result through ``ctx.wait_for``. Every failure becomes one typed error event with
the stage's name; the events are yielded in the order they complete.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from streamcite.core.answer import AnswerBuilder
from streamcite.core.enrich_gate import skip_reason
from streamcite.core.enricher import EnrichContext, Enricher
from streamcite.core.errors import StreamciteError
from streamcite.core.events import ErrorEvent, Event
from streamcite.telemetry import switch

if TYPE_CHECKING:
    from streamcite.telemetry.otel import StreamSpan

__all__ = ["EnrichmentStage"]


class EnrichmentStage:
    """The enricher tasks of one stream: start, collect in completion order, cancel."""

    def __init__(
        self,
        enrichers: Sequence[Enricher],
        *,
        name: str,
        log: Any,
        scrub: Callable[[str], str],
        enrich_incomplete: bool = False,
    ) -> None:
        self.enrichers = list(enrichers)
        self.enrich_incomplete = enrich_incomplete
        self._name = name
        self._log = log
        self._scrub = scrub
        self._tasks: list[asyncio.Task[Event | None]] = []
        self._results: dict[str, asyncio.Future[Event | None]] = {}
        self.observer: StreamSpan | None = None
        """The stream's span when telemetry is on: each enricher gets a child span."""
        self._decided = False
        """Started or skipped: the decision is made once per stream (at choice 0's
        finish, or when the stream ends without one)."""

    def start(
        self,
        builder: AnswerBuilder,
        request: Mapping[str, Any],
        response_headers: Mapping[str, str],
    ) -> None:
        """Start every enricher on the answer so far, unless started or gated out."""
        if self._decided or not self.enrichers:
            return
        self._decided = True
        why = skip_reason(builder, enrich_incomplete=self.enrich_incomplete)
        if why is not None:
            builder.enrichment_skipped = why
            self._log.info("stream.enrichment_skipped", reason=why)
            return
        loop = asyncio.get_running_loop()
        self._results = {e.kind: loop.create_future() for e in self.enrichers}
        ctx = EnrichContext(
            answer=builder.snapshot(),
            request=request,
            response_headers=dict(response_headers),
            chunk_fields=dict(builder.chunk_fields),
            wait_for=self._wait_for,
        )
        # Enrichers that wait for others start last: independent requests go out first.
        ordered = sorted(self.enrichers, key=lambda e: len(getattr(e, "needs", ()) or ()))
        # One start for all: each duration counts from the moment enrichment began (not
        # from its task's first step), so one that waits for another includes the wait.
        started = time.perf_counter()
        self._tasks = [
            asyncio.create_task(
                self._enrich(e, ctx, builder, started), name=f"{self._name}:{e.kind}"
            )
            for e in ordered
        ]

    async def collect(
        self, builder: AnswerBuilder, error: Callable[[ErrorEvent], ErrorEvent]
    ) -> AsyncIterator[Event]:
        """Each result as it completes, added to the answer (errors through ``error``)."""
        if not self._tasks:
            return  # (no enricher ran: as_completed's set-up costs ~10 µs a stream)
        for next_done in asyncio.as_completed(self._tasks):
            ev = await next_done
            if ev is None:
                continue
            if isinstance(ev, ErrorEvent):
                yield error(ev)
                continue
            builder.add(ev)  # sources → answer.sources, grounding → answer.grounding
            yield ev
        self._tasks = []

    async def cancel(self) -> None:
        """Cancel the running enrichers and wait for them to end. Idempotent."""
        tasks, self._tasks = self._tasks, []
        for t in tasks:
            t.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        for fut in self._results.values():
            if not fut.done():
                fut.cancel()

    async def _wait_for(self, kind: str) -> Event | None:
        fut = self._results.get(kind)
        return None if fut is None else await asyncio.shield(fut)

    async def _enrich(
        self, enricher: Enricher, ctx: EnrichContext, builder: AnswerBuilder, started: float
    ) -> Event | None:
        kind = enricher.kind
        span = None if self.observer is None else self.observer.enricher(kind, enricher)
        token = None if span is None else switch.enter_enricher(span)
        try:
            result = await self._run_one(enricher, ctx)
        except BaseException:  # cancelled from outside: the span says so
            if span is not None:
                span.end(None, cancelled=True)
            raise
        if span is not None:
            switch.leave_enricher(token)
            span.end(result)
        elapsed = (time.perf_counter() - started) * 1000
        if kind == "sources":
            builder.timings.sources_ms = elapsed
        elif kind == "grounding":
            builder.timings.grounding_ms = elapsed
        fut = self._results.get(kind)
        if fut is not None and not fut.done():
            fut.set_result(None if isinstance(result, ErrorEvent) else result)
        return result

    async def _run_one(self, enricher: Enricher, ctx: EnrichContext) -> Event | None:
        """The enricher's event, or its failure as an error event (timeouts included)."""
        try:
            async with asyncio.timeout(enricher.timeout):
                return await enricher.enrich(ctx)
        except Exception as exc:  # TimeoutError included: every failure is an event
            return self._failure(enricher, exc)
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise  # we are being cancelled: let it through
            # The enricher itself raised CancelledError: a failure like any other.
            return ErrorEvent(
                code=f"{enricher.kind}_failed",
                message="the enricher was cancelled",
                stage=enricher.kind,
            )

    def _failure(self, enricher: Enricher, exc: Exception) -> ErrorEvent:
        """The error event of an enricher that timed out or raised."""
        kind = enricher.kind
        if isinstance(exc, TimeoutError):
            return ErrorEvent(
                code=f"{kind}_timeout",
                message=f"{kind} took longer than {enricher.timeout} s",
                retryable=True,
                stage=kind,
            )
        if isinstance(exc, StreamciteError):
            return ErrorEvent(
                code=exc.code,
                message=self._scrub(exc.message),
                retryable=exc.retryable,
                stage=kind,
                status=getattr(exc, "status", None),
                retry_after=getattr(exc, "retry_after", None),
            )
        return ErrorEvent(
            code=f"{kind}_failed",
            message=self._scrub(f"{type(exc).__name__}: {exc}"),
            stage=kind,
        )
