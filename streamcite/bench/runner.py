"""Load generation and per-request measurement for ``streamcite bench``.

A run sends chat requests through the real pipeline (:func:`streamcite.stream_chat`)
over one shared HTTP client and times each one from the events the pipeline yields:
every reasoning and answer token, the finish chunk (citations), the quoted sources,
the grounding check and ``done``.

Load shapes are in :mod:`streamcite.bench.schedule`: a closed loop of ``concurrency``
workers, or an open loop on a Poisson or constant schedule with at most
``concurrency`` in flight (a request that waits for a free slot records the wait as
``queue_ms``). Warm-up and ramp-up requests go first in the same stream, unmeasured.

What happens on the event loop while measuring is kept to the minimum: one
``time.perf_counter()`` and one ``list.append`` per token, one per stage event.
Conversion to milliseconds, token counting, statistics, JSON and plots happen after
the run.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import itertools
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from streamcite.bench.local_upstream import LocalUpstream
from streamcite.bench.probe import Probe, count_input
from streamcite.bench.records import ErrorRecord, RequestRecord, RunResult
from streamcite.bench.schedule import LoadSpec, Schedule
from streamcite.bench.tokens import TokenCounter
from streamcite.bench.workload import Prompt, as_prompts, load_questions
from streamcite.core.events import (
    ClaimEvent,
    DoneEvent,
    FinishEvent,
    GroundingEvent,
    ReasoningEvent,
    SourcesEvent,
    TokenEvent,
)
from streamcite.enrich.base import Enricher
from streamcite.logs import get_logger
from streamcite.pipeline import Timeouts, stream_chat
from streamcite.pipeline.apis import Api
from streamcite.pipeline.bodies import chat_request_as

__all__ = [
    "BenchTarget",
    "ErrorRecord",
    "LoadSpec",
    "LocalUpstream",
    "RequestRecord",
    "RunResult",
    "Schedule",
    "load_questions",
    "run_load",
    "run_rate_sweep",
    "run_sweep",
]

_log = get_logger("streamcite.bench")

TransportName = Literal["aiohttp", "httpx"]

# How often the loop-lag probe wakes up. Coarse enough to cost nothing, fine enough
# to see a loop that is blocked for more than a few milliseconds.
_LAG_PROBE_INTERVAL = 0.01


@dataclass(slots=True)
class BenchTarget:
    """Where and how requests are sent."""

    base_url: str
    """API root; ``api`` sets the path appended (``/chat/completions`` for ``chat``)."""
    model: str = "streamcite-local"
    api: Api = "chat"
    """The endpoint's API: each prompt is sent in that API's own body
    (:func:`~streamcite.pipeline.bodies.chat_request_as`)."""
    api_key: str | None = field(default=None, repr=False)
    transport: TransportName = "aiohttp"
    headers: dict[str, str] = field(default_factory=dict, repr=False)
    """Extra request headers (fault injection, provider options)."""
    timeouts: Timeouts = field(default_factory=Timeouts)
    extra_body: dict[str, Any] = field(default_factory=dict)
    """Merged into every request body (e.g. ``max_tokens``, ``temperature``)."""
    tokenizer: TokenCounter | None = field(default=None, repr=False)
    """Counts tokens after the run when the stream sends no usage (``--tokenizer``)."""

    def body(self, question: str | Prompt) -> dict[str, Any]:
        prompt = question if isinstance(question, Prompt) else Prompt.question(question)
        return chat_request_as(self.api, prompt.body(self.model, self.extra_body))


class _Phase:
    """The measured window: opened by the first measured request, with the client's
    own health (loop lag, CPU) recorded while it lasts."""

    def __init__(self) -> None:
        self.start: float | None = None
        self.started_at = 0.0
        self.cpu0 = 0.0
        self.lag: list[float] = []
        self.task: asyncio.Task[None] | None = None

    def begin(self, at: float) -> None:
        if self.start is not None:
            return
        self.start = at
        self.started_at = time.time() - (time.perf_counter() - at)
        self.cpu0 = time.process_time()
        self.task = asyncio.create_task(_lag_probe(self.lag), name="bench-loop-lag")

    async def end(self) -> float:
        cpu = time.process_time() - self.cpu0
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.task
        return cpu


class _Runner:
    def __init__(
        self,
        target: BenchTarget,
        questions: Sequence[str | Prompt],
        enrichers: Sequence[Enricher],
        session: Any,
        on_done: Callable[[bool, bool], None] | None,
    ) -> None:
        if not questions:
            raise ValueError("at least one question is needed")
        self.target = target
        self.prompts = as_prompts(questions)
        self.bodies = [target.body(p) for p in self.prompts]
        self.enrichers = list(enrichers)
        self.session = session
        self.on_done = on_done

    async def one(self, probe: Probe) -> None:
        """Send one request and stamp its events. Never raises (except cancellation)."""
        target = self.target
        perf = time.perf_counter
        add_token = probe.tokens.append
        stream = stream_chat(
            self.bodies[probe.question],
            base_url=target.base_url,
            api=target.api,
            api_key=target.api_key,
            transport=target.transport,
            headers=target.headers,
            session=self.session,
            timeouts=target.timeouts,
            after=self.enrichers,
            stream_id=f"bench-{'w' if probe.warmup else 'm'}{probe.index}",
        )
        try:
            async with stream:
                probe.t_start = perf()
                async for ev in stream:
                    t = type(ev)
                    if t is TokenEvent:
                        if ev.index == 0:  # type: ignore[union-attr]
                            add_token(perf())
                    else:
                        _stamp(probe, ev, t, perf())
        except Exception as exc:
            # The pipeline reports faults as events; an exception here is a bug or a
            # misconfiguration, still counted rather than ending the whole run.
            probe.exc = f"client_{type(exc).__name__}"
            _log.warning("bench.request_failed", index=probe.index, error=repr(exc))
        probe.t_end = perf()
        if self.on_done is not None:
            answer = probe.answer
            ok = probe.exc is None and answer is not None and answer.complete and not answer.errors
            self.on_done(probe.warmup, ok)

    async def closed_loop(self, load: LoadSpec, phase: _Phase) -> tuple[list[Probe], list[Probe]]:
        """Workers share one stream of requests: the first ``warmup`` ones (and any sent
        during the ramp-up) are unmeasured, and the window opens at the first measured
        send while warm-up requests may still be in flight: no barrier, no burst."""
        warm: list[Probe] = []
        measured: list[Probe] = []
        seq = itertools.count()
        nq = len(self.bodies)
        perf = time.perf_counter
        ramp_end = perf() + load.ramp_up_s

        def done_sending(now: float) -> bool:
            if len(measured) >= load.requests:
                return True
            start = phase.start
            return bool(load.duration_s and start is not None and now - start >= load.duration_s)

        async def worker(k: int) -> None:
            if load.ramp_up_s:
                await asyncio.sleep(k * load.ramp_up_s / load.concurrency)
            while not done_sending(now := perf()):
                n = next(seq)
                if n < load.warmup or now < ramp_end:
                    probe = Probe(len(warm), n % nq, True, now, scheduled=False)
                    warm.append(probe)
                else:
                    phase.begin(now)
                    probe = Probe(len(measured), n % nq, False, now, scheduled=False)
                    measured.append(probe)
                await self.one(probe)

        async with asyncio.TaskGroup() as tg:
            for k in range(min(load.concurrency, load.warmup + load.requests)):
                tg.create_task(worker(k))
        return warm, measured

    async def open_loop(self, load: LoadSpec, phase: _Phase) -> tuple[list[Probe], list[Probe]]:
        """Requests released on their due time, at most ``concurrency`` in flight."""
        slots = asyncio.Semaphore(load.concurrency)
        nq = len(self.bodies)
        warm: list[Probe] = []
        measured: list[Probe] = []
        perf = time.perf_counter

        async def gated(probe: Probe) -> None:
            async with slots:
                await self.one(probe)

        t0 = perf()
        async with asyncio.TaskGroup() as tg:
            for n, (offset, is_warm) in enumerate(load.plan()):
                due = t0 + offset
                delay = due - perf()
                if delay > 0:
                    await asyncio.sleep(delay)
                group = warm if is_warm else measured
                if not is_warm:
                    phase.begin(due)
                probe = Probe(len(group), n % nq, is_warm, due, scheduled=True)
                probe.t_release = perf()
                group.append(probe)
                tg.create_task(gated(probe))
        return warm, measured

    def result(
        self, load: LoadSpec, warm: list[Probe], measured: list[Probe], phase: _Phase, cpu: float
    ) -> RunResult:
        start = phase.start if phase.start is not None else time.perf_counter()
        ends = [p.t_end for p in measured if p.t_end is not None]
        wall = max(ends) - start if ends else 0.0
        counter = self.target.tokenizer
        records = []
        for p in measured:
            rec = p.record(start, counter)
            count_input(rec, self.prompts[p.question].text, counter)
            records.append(rec)
        span = None
        if load.open_loop and measured:
            span = max(p.t_start for p in measured) - start
        return RunResult(
            load=load,
            records=records,
            wall_s=wall,
            started_at=phase.started_at or time.time(),
            warmup_records=[p.record(start, counter) for p in warm],
            loop_lag_ms=[round(x, 3) for x in phase.lag],
            cpu_s=cpu,
            send_span_s=span,
            release_lag_ms=[round((p.t_release - p.t_sched) * 1000.0, 3) for p in measured]
            if load.open_loop
            else [],
        )


async def _lag_probe(samples: list[float]) -> None:
    perf = time.perf_counter
    add = samples.append
    while True:
        due = perf() + _LAG_PROBE_INTERVAL
        await asyncio.sleep(_LAG_PROBE_INTERVAL)
        add((perf() - due) * 1000.0)


async def _run_one_load(runner: _Runner, load: LoadSpec) -> RunResult:
    # Collect garbage left by earlier runs now rather than in the middle of a token.
    gc.collect()
    phase = _Phase()
    try:
        if load.rate is None:
            warm, measured = await runner.closed_loop(load, phase)
        else:
            warm, measured = await runner.open_loop(load, phase)
    finally:
        cpu = await phase.end()
    return runner.result(load, warm, measured, phase, cpu)


@contextlib.asynccontextmanager
async def _shared_client(transport: TransportName, max_connections: int) -> AsyncIterator[Any]:
    """One HTTP client for the whole benchmark, with a pool no smaller than the load."""
    if transport == "aiohttp":
        import aiohttp

        connector = aiohttp.TCPConnector(limit=max_connections, limit_per_host=max_connections)
        async with aiohttp.ClientSession(connector=connector) as session:
            yield session
    elif transport == "httpx":
        import httpx

        limits = httpx.Limits(
            max_connections=max_connections, max_keepalive_connections=max_connections
        )
        async with httpx.AsyncClient(limits=limits, timeout=None) as client:
            yield client
    else:
        raise ValueError(f"unknown transport {transport!r}")


async def run_load(
    target: BenchTarget,
    questions: Sequence[str | Prompt],
    load: LoadSpec,
    *,
    enrichers: Sequence[Enricher] = (),
    session: Any = None,
    on_done: Callable[[bool, bool], None] | None = None,
) -> RunResult:
    """One run. ``session``: an ``aiohttp.ClientSession`` / ``httpx.AsyncClient`` to share
    (one is made for the run otherwise). ``on_done(warmup, ok)`` is called on the event
    loop after each request, warm-up included: keep it cheap (a progress bar update)."""
    results = await run_sweep(
        target, questions, [load], enrichers=enrichers, session=session, on_done=on_done
    )
    return results[0]


async def run_sweep(
    target: BenchTarget,
    questions: Sequence[str | Prompt],
    loads: Sequence[LoadSpec],
    *,
    enrichers: Sequence[Enricher] = (),
    session: Any = None,
    on_done: Callable[[bool, bool], None] | None = None,
    on_run_start: Callable[[LoadSpec], None] | None = None,
    keep_going: Callable[[RunResult], bool] | None = None,
) -> list[RunResult]:
    """Several runs in a row (e.g. one per concurrency) over one shared HTTP client.
    ``keep_going(run)``, when given, is asked after each run; ``False`` ends the sweep."""
    async with contextlib.AsyncExitStack() as stack:
        if session is None:
            # Each request holds one connection; the pool must never be the bottleneck.
            most = max(load.concurrency for load in loads)
            session = await stack.enter_async_context(_shared_client(target.transport, most))
        runner = _Runner(target, questions, enrichers, session, on_done)
        results: list[RunResult] = []
        for load in loads:
            if on_run_start is not None:
                on_run_start(load)
            _log.info("bench.run", **load.to_dict())
            results.append(await _run_one_load(runner, load))
            if keep_going is not None and not keep_going(results[-1]):
                break
        return results


async def run_rate_sweep(
    target: BenchTarget,
    questions: Sequence[str | Prompt],
    loads: Sequence[LoadSpec],
    *,
    tolerance: float = 0.1,
    **kwargs: Any,
) -> list[RunResult]:
    """Open-loop runs at rising rates, until the achieved send rate falls more than
    ``tolerance`` (a fraction) behind the offered one: the last run is the first one
    past saturation."""
    from streamcite.bench.stats import achieved_rate

    def keep_going(run: RunResult) -> bool:
        achieved, offered = achieved_rate(run), run.load.rate
        return achieved is None or offered is None or achieved >= offered * (1.0 - tolerance)

    ordered = sorted(loads, key=lambda ld: ld.rate or 0.0)
    return await run_sweep(target, questions, ordered, keep_going=keep_going, **kwargs)


def _stamp(probe: Probe, ev: Any, t: type, now: float) -> None:
    """Stamp one event other than a token on ``probe`` (first of a kind, or the last)."""
    if t is ReasoningEvent:
        if ev.index == 0:
            probe.t_reasoning_last = now
            if probe.t_reasoning is None:
                probe.t_reasoning = now
            probe.n_reasoning += 1
    elif t is FinishEvent:
        if ev.index == 0 and probe.t_finish is None:
            probe.t_finish = now
    elif t is SourcesEvent:
        probe.t_sources = now
    elif t is GroundingEvent:
        probe.t_grounding = now
    elif t is ClaimEvent:
        if probe.t_claim is None:
            probe.t_claim = now
    elif t is DoneEvent:
        probe.t_done = now
        probe.answer = ev.answer
