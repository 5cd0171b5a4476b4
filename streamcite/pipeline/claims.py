"""Live claims: checks run off the event loop, their ``claim`` events interleaved.

:class:`ClaimStage` wraps the stream's events. Each event is yielded first, then shown
to the claim sessions (:mod:`streamcite.enrich.claims`); the jobs they return run in a
worker thread (one shared thread: checks never run on the loop, never in parallel
with each other), each under ``timeout`` seconds. A finished check is yielded as soon
as the consumer asks for the next event — while the upstream is silent too: when
checks are in flight the stage waits for whichever comes first, the next upstream
event or a check. With none in flight it awaits the upstream directly (no extra task
per token).

Bounded: at most ``max_in_flight`` checks are queued to the worker per stream (more
wait in a deque, in order); a check that times out (``timeout``, or the session's
own ``timeout`` attribute) becomes an unchecked claim (score
and ``supported`` ``None``) and one ``claim_timeout`` error. The stream's end waits
for the checks in flight (each within its timeout) before the enrichers' results.

Prepared: each session's ``prepare()`` (the local checker's loads its
lexicon: 0.2-3 s the first time in a process, more than a check's timeout) has it run
in the worker thread as the stage is made, before the upstream answers; the checks
wait for it (at most :data:`PREPARE_TIMEOUT`) before their own timeout starts, so the
first claim of a fresh process is checked, not timed out. Tokens never wait for it.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from streamcite.core.answer import AnswerBuilder
from streamcite.core.claim_channel import ClaimJob, ClaimSession, claims_from_grounding
from streamcite.core.events import (
    CitationsEvent,
    ClaimEvent,
    ErrorEvent,
    Event,
    FinishEvent,
    GroundingEvent,
    TokenEvent,
)

__all__ = [
    "CLAIM_TIMEOUT",
    "MAX_ABANDONED",
    "MAX_IN_FLIGHT",
    "PREPARE_TIMEOUT",
    "ClaimStage",
    "claim_executor",
]

CLAIM_TIMEOUT = 2.0
"""Seconds one check may take (queue wait included) before its claim goes out unchecked."""

MAX_IN_FLIGHT = 32
"""Checks queued to the worker per stream; more wait in order."""

PREPARE_TIMEOUT = 30.0
"""Seconds the checks wait for the sessions' ``prepare()`` (then they start anyway,
queued behind it in the worker: their own timeout then applies)."""

MAX_ABANDONED = 4
"""Worker threads left to a check that never returned, at most, before live checks stop
getting a fresh thread (each such thread is lost until its check returns)."""


class _Worker:
    """The worker thread and when its running check started (None: idle)."""

    __slots__ = ("abandoned", "busy_since", "executor")

    def __init__(self) -> None:
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="streamcite-claims")
        self.busy_since: float | None = None
        self.abandoned = False
        """Left to a stuck check: its slot of :data:`MAX_ABANDONED` is given back when
        that check returns."""

    def call(self, fn: Callable[[Any], ClaimEvent], job: ClaimJob) -> ClaimEvent:
        self.busy_since = time.monotonic()
        try:
            return fn(job)
        finally:
            self.busy_since = None
            _returned(self)


_worker: _Worker | None = None
_abandoned = 0
_abandoned_lock = threading.Lock()  # (the loop's thread and workers' threads count)


def _returned(w: _Worker) -> None:
    """A check of ``w`` returned: a thread abandoned to it is no longer lost (without
    this, four stuck checks in a process's life, even released since, ended fresh
    threads for good)."""
    global _abandoned
    with _abandoned_lock:
        if w.abandoned:
            w.abandoned = False
            _abandoned -= 1


def _current_worker() -> _Worker:
    global _worker
    if _worker is None:
        _worker = _Worker()
    return _worker


def claim_executor() -> ThreadPoolExecutor:
    """The one worker thread every live claim check runs in (made on first use)."""
    return _current_worker().executor


def _unstick(timeout: float) -> None:
    """A check timed out: when the worker has been running one check for longer than a
    check may take, that check will not come back in time; later checks (of any stream)
    go to a fresh worker thread, the stuck one is left to finish (at most
    :data:`MAX_ABANDONED` such threads)."""
    global _worker, _abandoned
    w = _worker
    with _abandoned_lock:
        if w is None or w.busy_since is None or _abandoned >= MAX_ABANDONED:
            return
        if time.monotonic() - w.busy_since < timeout:
            return
        _abandoned += 1
        w.abandoned = True
    _worker = None
    w.executor.shutdown(wait=False)  # the queued checks still run there, after it


@dataclass(slots=True)
class _Check:
    session: ClaimSession
    job: ClaimJob
    future: asyncio.Future[ClaimEvent]
    deadline: float
    timeout: float


class ClaimStage:
    """The live claims of one stream (see the module doc)."""

    def __init__(
        self,
        sessions: list[ClaimSession],
        builder: AnswerBuilder,
        elapsed_ms: Callable[[], float],
        *,
        timeout: float = CLAIM_TIMEOUT,
        max_in_flight: int = MAX_IN_FLIGHT,
    ) -> None:
        self.sessions = sessions
        self.checkers = frozenset(s.checker for s in sessions)
        self._builder = builder
        self._elapsed_ms = elapsed_ms
        self._timeout = timeout
        self._max_in_flight = max_in_flight
        self._in_flight: deque[_Check] = deque()
        self._queued: deque[tuple[ClaimSession, ClaimJob]] = deque()
        self._finished = False
        self._preparing: asyncio.Future[None] | None = None
        self._prepare_deadline = 0.0
        self._prepare()

    def _prepare(self) -> None:
        """Run the sessions' ``prepare()`` in the worker thread (see the module doc)."""
        ready = [s.prepare for s in self.sessions]
        if not ready:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # made outside a loop (tests): the checks prepare themselves
            return

        def run() -> None:
            for prepare in ready:
                prepare()

        self._preparing = loop.run_in_executor(claim_executor(), run)
        self._prepare_deadline = time.monotonic() + PREPARE_TIMEOUT

    def _gated(self) -> bool:
        """Checks are held back: the preparation runs (within its deadline)."""
        p = self._preparing
        if p is None:
            return False
        if p.done() or time.monotonic() >= self._prepare_deadline:
            self._preparing = None
            if p.done() and not p.cancelled():
                p.exception()  # retrieved: a failed preparation only means a slower check
            return False
        return True

    def _busy(self) -> bool:
        """Something to wait for besides the upstream: checks in flight, or queued ones
        behind the preparation (those start here once it ended)."""
        if self._queued and not self._in_flight and not self._gated():
            self._start_queued()
        return bool(self._in_flight) or bool(self._queued)

    def _futures(self) -> list[asyncio.Future[Any]]:
        waits: list[asyncio.Future[Any]] = [c.future for c in self._in_flight]
        if self._queued and self._preparing is not None:
            waits.append(self._preparing)
        return waits

    async def interleave(self, events: AsyncIterator[Event]) -> AsyncIterator[Event]:
        """``events``, each as it comes, with ``claim`` events as their checks end."""
        it = events.__aiter__()
        upcoming: asyncio.Future[Event] | None = None
        try:
            while True:
                if upcoming is None and not self._busy():
                    try:
                        ev = await anext(it)
                    except StopAsyncIteration:
                        break
                else:
                    if upcoming is None:
                        upcoming = asyncio.ensure_future(anext(it))
                    waits: list[asyncio.Future[Any]] = [upcoming]
                    waits.extend(self._futures())
                    await asyncio.wait(
                        waits,
                        timeout=self._wait_limit(),
                        return_when=asyncio.FIRST_COMPLETED,
                    )
                    for out in self._done():
                        yield out
                    if not upcoming.done():
                        continue
                    try:
                        ev = upcoming.result()
                    except StopAsyncIteration:
                        upcoming = None
                        break
                    upcoming = None
                yield ev
                self._observe(ev)
                for out in self._done():
                    yield out
        finally:
            if upcoming is not None and not upcoming.done():
                upcoming.cancel()
        # The upstream ended (with or without a finish chunk): check the rest.
        self._builder.timings.stream_ms = self._elapsed_ms()
        self._finish()
        async for out in self.drain():
            yield out
        dropped = self.dropped_error()
        if dropped is not None:
            yield dropped
        cut = self.cut_error()
        if cut is not None:
            yield cut

    def after_stream(self, event: GroundingEvent) -> list[ClaimEvent]:
        """The ``claim`` events of an after-stream ``grounding`` event whose checker had no
        live session (Google, Azure; local on Wikit sources), recorded on the answer."""
        if event.provider in self.checkers:
            return []
        text = self._builder.snapshot().text
        return [self._claim(c) for c in claims_from_grounding(event, text)]

    async def drain(self) -> AsyncIterator[Event]:
        """The claims still being checked, each within its timeout."""
        while self._busy():
            await asyncio.wait(
                self._futures(),
                timeout=self._wait_limit(),
                return_when=asyncio.FIRST_COMPLETED,
            )
            for out in self._done():
                yield out

    def cancel(self) -> None:
        """Forget the checks not started yet (the stream was closed)."""
        for c in self._in_flight:
            c.future.cancel()
        self._in_flight.clear()
        self._queued.clear()
        self._preparing = None

    # -- internals -------------------------------------------------------------------

    def _observe(self, ev: Event) -> None:
        t = type(ev)
        if t is TokenEvent:
            if ev.index == 0:  # type: ignore[union-attr]
                text = ev.text  # type: ignore[union-attr]
                for s in self.sessions:
                    self._submit(s, s.on_token(text))
        elif t is CitationsEvent:
            for s in self.sessions:
                self._submit(s, s.on_citations(ev))  # type: ignore[arg-type]
        elif t is FinishEvent and ev.index == 0:  # type: ignore[union-attr]
            self._finish()

    def _finish(self) -> None:
        if self._finished:
            return
        self._finished = True
        for s in self.sessions:
            self._submit(s, s.on_finish())

    def _submit(self, session: ClaimSession, jobs: list[ClaimJob]) -> None:
        for job in jobs:
            self._queued.append((session, job))
        self._start_queued()

    def _start_queued(self) -> None:
        if self._gated():
            return  # started when the preparation ends (_done)
        loop = asyncio.get_running_loop()
        while self._queued and len(self._in_flight) < self._max_in_flight:
            session, job = self._queued.popleft()
            worker = _current_worker()
            fut = loop.run_in_executor(worker.executor, worker.call, session.run, job)
            timeout = getattr(session, "timeout", None) or self._timeout
            self._in_flight.append(_Check(session, job, fut, time.monotonic() + timeout, timeout))

    def _wait_limit(self) -> float | None:
        deadlines = [c.deadline for c in self._in_flight]
        if self._queued and self._preparing is not None:
            deadlines.append(self._prepare_deadline)
        if not deadlines:
            return None
        return max(0.0, min(deadlines) - time.monotonic())

    def _done(self) -> list[Event]:
        """The claims ready, in the order their checks were made (a later one waits for
        an earlier one; a check past its deadline goes out unchecked)."""
        out: list[Event] = []
        if self._queued and not self._in_flight and not self._gated():
            self._start_queued()  # the preparation ended: the held checks start now
        now = time.monotonic()
        while self._in_flight:
            c = self._in_flight[0]
            if c.future.done():
                self._in_flight.popleft()
                exc = None if c.future.cancelled() else c.future.exception()
                if c.future.cancelled() or exc is not None:
                    out.append(self._error(c, "claim_failed", f"the check failed: {exc!r}"[:300]))
                    out.append(self._claim(c.job.unchecked(c.session.checker)))
                else:
                    out.append(self._claim(c.future.result()))
            elif now >= c.deadline:
                self._in_flight.popleft()
                c.future.cancel()  # not started yet: never runs; running: result ignored
                _unstick(c.timeout)
                out.append(self._error(c, "claim_timeout", f"the check took over {c.timeout} s"))
                out.append(self._claim(c.job.unchecked(c.session.checker)))
            else:
                break
        if out:
            self._start_queued()
        return out

    def _claim(self, ev: ClaimEvent) -> ClaimEvent:
        timings = self._builder.timings
        if timings.first_claim_ms is None:
            timings.first_claim_ms = self._elapsed_ms()
        self._builder.add(ev)
        return ev

    def _error(self, c: _Check, code: str, message: str) -> ErrorEvent:
        ev = ErrorEvent(
            code=code, message=message, retryable=code == "claim_timeout", stage="grounding"
        )
        self._builder.error(ev)
        return ev

    def cut_error(self) -> ErrorEvent | None:
        """One error when sessions checked only the start of a long answer (else None)."""
        chars = sum(getattr(s, "unchecked_chars", 0) for s in self.sessions)
        if not chars:
            return None
        ev = ErrorEvent(
            code="claims_cut",
            message=f"the last {chars:,} character(s) of the answer not checked live: "
            "beyond the checked part",
            stage="grounding",
        )
        self._builder.error(ev)
        return ev

    def dropped_error(self) -> ErrorEvent | None:
        """One error when sessions could not keep some sentences waiting (else None)."""
        dropped = sum(s.dropped for s in self.sessions)
        if not dropped:
            return None
        ev = ErrorEvent(
            code="claims_dropped",
            message=f"{dropped} sentence(s) not checked live: too many waiting for facts",
            stage="grounding",
        )
        self._builder.error(ev)
        return ev
