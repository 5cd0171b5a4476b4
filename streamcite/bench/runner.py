"""Load generation and per-request measurement for ``streamcite bench``.

A run sends ``requests`` chat requests through the real pipeline
(:func:`streamcite.stream_chat`) over one shared HTTP client and times each one
from the events the pipeline yields: every token, the finish chunk (citations),
the quoted sources, the grounding check and ``done``.

Two ways to generate load:

* closed loop (no ``rate``): ``concurrency`` workers each send the next request as
  soon as their previous one is done;
* open loop (``rate`` requests per second, Poisson or fixed arrivals): requests are
  released on a schedule, at most ``concurrency`` in flight; a request that has to
  wait for a free slot records that wait as ``queue_ms``.

Warm-up requests run first (closed loop, same concurrency) and are excluded.

What happens on the event loop while measuring is kept to the minimum: one
``time.perf_counter()`` and one ``list.append`` per token, one per stage event.
Conversion to milliseconds, statistics, JSON and plots happen after the run.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import itertools
import multiprocessing
import multiprocessing.connection
import signal
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import orjson

from streamcite.core.events import (
    DoneEvent,
    ErrorEvent,
    FinishEvent,
    GroundingEvent,
    SourcesEvent,
    TokenEvent,
)
from streamcite.core.models import CitedAnswer
from streamcite.enrich.base import Enricher
from streamcite.logs import get_logger
from streamcite.pipeline import Timeouts, stream_chat

__all__ = [
    "BenchTarget",
    "ErrorRecord",
    "LoadSpec",
    "LocalUpstream",
    "RequestRecord",
    "RunResult",
    "load_questions",
    "run_load",
    "run_sweep",
]

_log = get_logger("streamcite.bench")

Schedule = Literal["poisson", "fixed"]
TransportName = Literal["aiohttp", "httpx"]

# How often the loop-lag probe wakes up. Coarse enough to cost nothing, fine enough
# to see a loop that is blocked for more than a few milliseconds.
_LAG_PROBE_INTERVAL = 0.01


@dataclass(slots=True, frozen=True)
class LoadSpec:
    """How much load one run generates."""

    requests: int
    """Measured requests (warm-up excluded)."""
    concurrency: int = 1
    """Closed loop: number of workers. Open loop: most requests in flight."""
    rate: float | None = None
    """Open loop: requests per second. ``None``: closed loop."""
    schedule: Schedule = "poisson"
    """Open loop arrivals: ``poisson`` (exponential gaps) or ``fixed`` (1/rate apart)."""
    warmup: int = 0
    """Requests sent first, closed loop, and not measured."""
    seed: int = 0
    """Seed of the Poisson schedule (same seed, same arrival times)."""

    def __post_init__(self) -> None:
        if self.requests < 1:
            raise ValueError("requests must be >= 1")
        if self.concurrency < 1:
            raise ValueError("concurrency must be >= 1")
        if self.rate is not None and not self.rate > 0:
            raise ValueError("rate must be > 0 requests per second")
        if self.warmup < 0:
            raise ValueError("warmup must be >= 0")
        if self.schedule not in ("poisson", "fixed"):
            raise ValueError("schedule must be 'poisson' or 'fixed'")

    def arrivals(self) -> list[float]:
        """Open loop: send time of each measured request, seconds after the phase start."""
        if self.rate is None:
            return [0.0] * self.requests
        if self.schedule == "fixed":
            return [i / self.rate for i in range(self.requests)]
        gaps = np.random.default_rng(self.seed).exponential(1.0 / self.rate, self.requests)
        gaps[0] = 0.0  # the first request goes at once, as in the fixed schedule
        return [float(x) for x in np.cumsum(gaps)]

    def to_dict(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "concurrency": self.concurrency,
            "rate": self.rate,
            "schedule": self.schedule if self.rate is not None else None,
            "warmup": self.warmup,
            "seed": self.seed,
        }


@dataclass(slots=True)
class BenchTarget:
    """Where and how requests are sent."""

    base_url: str
    """API root; ``/chat/completions`` is appended."""
    model: str = "streamcite-local"
    api_key: str | None = field(default=None, repr=False)
    transport: TransportName = "aiohttp"
    headers: dict[str, str] = field(default_factory=dict, repr=False)
    """Extra request headers (fault injection, provider options)."""
    timeouts: Timeouts = field(default_factory=Timeouts)
    extra_body: dict[str, Any] = field(default_factory=dict)
    """Merged into every request body (e.g. ``max_tokens``)."""

    def body(self, question: str) -> dict[str, Any]:
        return {
            "model": self.model,
            "messages": [{"role": "user", "content": question}],
            "stream": True,
            "stream_options": {"include_usage": True},
            **self.extra_body,
        }


@dataclass(slots=True, frozen=True)
class ErrorRecord:
    """One error of one request."""

    code: str
    stage: str
    status: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "stage": self.stage, "status": self.status}


@dataclass(slots=True)
class RequestRecord:
    """Timings of one request. Times are milliseconds after the request was sent."""

    index: int
    """Position in the run (warm-up requests have their own numbering)."""
    question: int
    """Index of the question used."""
    warmup: bool
    scheduled_ms: float
    """When the request was due, after the start of its phase."""
    start_ms: float
    """When it was actually sent, after the start of its phase."""
    queue_ms: float
    """``start_ms - scheduled_ms``: waiting for a free slot (open loop)."""
    ttft_ms: float | None
    """First token of choice 0 as seen by the pipeline's consumer."""
    token_ms: list[float]
    """Arrival of every token of choice 0; inter-token latencies are its differences."""
    citations_ms: float | None
    """Finish chunk of choice 0 (citations captured)."""
    sources_ms: float | None
    """Sources event received."""
    grounding_ms: float | None
    """Grounding event received."""
    stream_ms: float | None
    """End of the upstream stream (pipeline timing)."""
    total_ms: float | None
    """``done`` received."""
    finish_reason: str | None
    citations: int
    citation_refs: int
    sources: int
    support_score: float | None
    completion_tokens: int | None
    """From the usage chunk, when the upstream sent one."""
    errors: list[ErrorRecord]
    pipeline: dict[str, float | None]
    """``answer.timings`` as the pipeline measured them (its ``sources_ms`` and
    ``grounding_ms`` are durations, not times since the request was sent)."""
    complete: bool

    @property
    def ok(self) -> bool:
        """Completed with no error of any stage."""
        return self.complete and not self.errors

    @property
    def tokens(self) -> int:
        return len(self.token_ms)

    def itl_ms(self) -> list[float]:
        """Inter-token latencies (ms)."""
        t = self.token_ms
        return [b - a for a, b in itertools.pairwise(t)]

    @property
    def tokens_per_s(self) -> float | None:
        """Decode rate: tokens after the first, over the time from first to last token."""
        t = self.token_ms
        if len(t) < 2 or t[-1] <= t[0]:
            return None
        return (len(t) - 1) / ((t[-1] - t[0]) / 1000.0)

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "question": self.question,
            "warmup": self.warmup,
            "ok": self.ok,
            "complete": self.complete,
            "scheduled_ms": self.scheduled_ms,
            "start_ms": self.start_ms,
            "queue_ms": self.queue_ms,
            "ttft_ms": self.ttft_ms,
            "citations_ms": self.citations_ms,
            "sources_ms": self.sources_ms,
            "grounding_ms": self.grounding_ms,
            "stream_ms": self.stream_ms,
            "total_ms": self.total_ms,
            "tokens": self.tokens,
            "tokens_per_s": _r(self.tokens_per_s),
            "token_ms": self.token_ms,
            "finish_reason": self.finish_reason,
            "citations": self.citations,
            "citation_refs": self.citation_refs,
            "sources": self.sources,
            "support_score": self.support_score,
            "completion_tokens": self.completion_tokens,
            "errors": [e.to_dict() for e in self.errors],
            "pipeline": self.pipeline,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RequestRecord:
        """Inverse of :meth:`to_dict` (for ``--compare`` and re-plotting)."""
        return cls(
            index=int(d["index"]),
            question=int(d["question"]),
            warmup=bool(d["warmup"]),
            scheduled_ms=float(d["scheduled_ms"]),
            start_ms=float(d["start_ms"]),
            queue_ms=float(d["queue_ms"]),
            ttft_ms=_opt(d["ttft_ms"]),
            token_ms=[float(x) for x in d["token_ms"]],
            citations_ms=_opt(d["citations_ms"]),
            sources_ms=_opt(d["sources_ms"]),
            grounding_ms=_opt(d["grounding_ms"]),
            stream_ms=_opt(d["stream_ms"]),
            total_ms=_opt(d["total_ms"]),
            finish_reason=d["finish_reason"],
            citations=int(d["citations"]),
            citation_refs=int(d["citation_refs"]),
            sources=int(d["sources"]),
            support_score=_opt(d["support_score"]),
            completion_tokens=d["completion_tokens"],
            errors=[ErrorRecord(e["code"], e["stage"], e.get("status")) for e in d["errors"]],
            pipeline={k: _opt(v) for k, v in d["pipeline"].items()},
            complete=bool(d["complete"]),
        )


@dataclass(slots=True)
class RunResult:
    """One run: a load spec, its measured requests and the client's own health."""

    load: LoadSpec
    records: list[RequestRecord]
    """Measured requests only, in the order they were sent."""
    wall_s: float
    """Measured phase: from its start to the last ``done``."""
    started_at: float
    """Unix time the measured phase started."""
    warmup_records: list[RequestRecord] = field(default_factory=list)
    loop_lag_ms: list[float] = field(default_factory=list)
    """Oversleep of a 10 ms timer during the measured phase: how busy the loop was."""
    cpu_s: float = 0.0
    """CPU time of this process during the measured phase."""


# -- questions --------------------------------------------------------------------


def load_questions(path: str | Path) -> list[str]:
    """Questions from a file: one per line, or JSON Lines objects with ``"question"``.

    Blank lines and lines starting with ``#`` are skipped.
    """
    out: list[str] = []
    for n, raw in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("{"):
            try:
                obj = orjson.loads(line)
            except orjson.JSONDecodeError as exc:
                raise ValueError(f"{path}:{n}: not valid JSON: {exc}") from exc
            q = obj.get("question") if isinstance(obj, dict) else None
            if not isinstance(q, str) or not q.strip():
                raise ValueError(f'{path}:{n}: a JSON line needs a non-empty "question" string')
            out.append(q.strip())
        else:
            out.append(line)
    if not out:
        raise ValueError(f"{path}: no questions")
    return out


# -- measurement ------------------------------------------------------------------


class _Probe:
    """Raw perf_counter stamps of one request, converted after the run."""

    __slots__ = (
        "answer",
        "exc",
        "index",
        "question",
        "t_done",
        "t_finish",
        "t_grounding",
        "t_sched",
        "t_sources",
        "t_start",
        "tokens",
        "warmup",
    )

    def __init__(self, index: int, question: int, warmup: bool, t_sched: float) -> None:
        self.index = index
        self.question = question
        self.warmup = warmup
        self.t_sched = t_sched
        self.t_start = t_sched
        self.tokens: list[float] = []
        self.t_finish: float | None = None
        self.t_sources: float | None = None
        self.t_grounding: float | None = None
        self.t_done: float | None = None
        self.answer: CitedAnswer | None = None
        self.exc: str | None = None

    def record(self, phase_start: float) -> RequestRecord:
        t0 = self.t_start

        def ms(t: float | None) -> float | None:
            return None if t is None else round((t - t0) * 1000.0, 3)

        answer = self.answer or CitedAnswer()
        errors = [
            ErrorRecord(e.code, e.stage, e.status)
            for e in answer.errors
            if isinstance(e, ErrorEvent)
        ]
        if self.exc is not None:
            errors.append(ErrorRecord(self.exc, "client"))
        if not answer.complete and not errors:
            errors.append(ErrorRecord("incomplete", "chunk"))
        pipeline = {
            name: (None if value is None else round(float(value), 3))
            for name, value in (
                ("ttft_ms", answer.timings.ttft_ms),
                ("stream_ms", answer.timings.stream_ms),
                ("citations_ms", answer.timings.citations_ms),
                ("sources_ms", answer.timings.sources_ms),
                ("grounding_ms", answer.timings.grounding_ms),
                ("total_ms", answer.timings.total_ms),
            )
        }
        usage = answer.usage
        return RequestRecord(
            index=self.index,
            question=self.question,
            warmup=self.warmup,
            scheduled_ms=round((self.t_sched - phase_start) * 1000.0, 3),
            start_ms=round((t0 - phase_start) * 1000.0, 3),
            queue_ms=round((t0 - self.t_sched) * 1000.0, 3),
            ttft_ms=ms(self.tokens[0]) if self.tokens else None,
            token_ms=[round((t - t0) * 1000.0, 3) for t in self.tokens],
            citations_ms=ms(self.t_finish),
            sources_ms=ms(self.t_sources),
            grounding_ms=ms(self.t_grounding),
            stream_ms=pipeline["stream_ms"],
            total_ms=ms(self.t_done),
            finish_reason=answer.finish_reason,
            citations=len(answer.citations),
            citation_refs=len(answer.citation_refs),
            sources=len(answer.sources),
            support_score=answer.grounding.support_score if answer.grounding else None,
            completion_tokens=usage.completion_tokens if usage else None,
            errors=errors,
            pipeline=pipeline,
            complete=answer.complete,
        )


class _Runner:
    def __init__(
        self,
        target: BenchTarget,
        questions: Sequence[str],
        enrichers: Sequence[Enricher],
        session: Any,
        on_done: Callable[[bool, bool], None] | None,
    ) -> None:
        if not questions:
            raise ValueError("at least one question is needed")
        self.target = target
        self.bodies = [target.body(q) for q in questions]
        self.enrichers = list(enrichers)
        self.session = session
        self.on_done = on_done

    async def one(self, probe: _Probe) -> None:
        """Send one request and stamp its events. Never raises (except cancellation)."""
        target = self.target
        perf = time.perf_counter
        add_token = probe.tokens.append
        stream = stream_chat(
            self.bodies[probe.question],
            base_url=target.base_url,
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
                    elif t is FinishEvent:
                        if ev.index == 0 and probe.t_finish is None:  # type: ignore[union-attr]
                            probe.t_finish = perf()
                    elif t is SourcesEvent:
                        probe.t_sources = perf()
                    elif t is GroundingEvent:
                        probe.t_grounding = perf()
                    elif t is DoneEvent:
                        probe.t_done = perf()
                        probe.answer = ev.answer  # type: ignore[union-attr]
        except Exception as exc:
            # The pipeline reports faults as events; an exception here is a bug or a
            # misconfiguration, still counted rather than ending the whole run.
            probe.exc = f"client_{type(exc).__name__}"
            _log.warning("bench.request_failed", index=probe.index, error=repr(exc))
        if self.on_done is not None:
            answer = probe.answer
            ok = probe.exc is None and answer is not None and answer.complete and not answer.errors
            self.on_done(probe.warmup, ok)

    async def closed_loop(
        self, count: int, concurrency: int, warmup: bool, first_question: int
    ) -> list[_Probe]:
        probes: list[_Probe] = []
        indices = iter(range(count))
        nq = len(self.bodies)

        async def worker() -> None:
            for i in indices:  # the shared iterator hands out the next request
                probe = _Probe(i, (first_question + i) % nq, warmup, time.perf_counter())
                probes.append(probe)
                await self.one(probe)

        async with asyncio.TaskGroup() as tg:
            for _ in range(min(concurrency, count)):
                tg.create_task(worker())
        probes.sort(key=lambda p: p.index)
        return probes

    async def open_loop(
        self, load: LoadSpec, phase_start: float, first_question: int
    ) -> list[_Probe]:
        slots = asyncio.Semaphore(load.concurrency)
        nq = len(self.bodies)
        probes: list[_Probe] = []

        async def gated(probe: _Probe) -> None:
            async with slots:
                await self.one(probe)

        async with asyncio.TaskGroup() as tg:
            for i, offset in enumerate(load.arrivals()):
                due = phase_start + offset
                delay = due - time.perf_counter()
                if delay > 0:
                    await asyncio.sleep(delay)
                probe = _Probe(i, (first_question + i) % nq, False, due)
                probes.append(probe)
                tg.create_task(gated(probe))
        return probes


async def _lag_probe(samples: list[float]) -> None:
    perf = time.perf_counter
    add = samples.append
    while True:
        due = perf() + _LAG_PROBE_INTERVAL
        await asyncio.sleep(_LAG_PROBE_INTERVAL)
        add((perf() - due) * 1000.0)


async def _run_one_load(runner: _Runner, load: LoadSpec) -> RunResult:
    warm: list[_Probe] = []
    if load.warmup:
        warm = await runner.closed_loop(load.warmup, load.concurrency, True, 0)
    # Collect garbage left by the warm-up now rather than in the middle of a token.
    gc.collect()
    lag: list[float] = []
    lag_task = asyncio.create_task(_lag_probe(lag), name="bench-loop-lag")
    started_at = time.time()
    cpu0 = time.process_time()
    phase_start = time.perf_counter()
    try:
        if load.rate is None:
            probes = await runner.closed_loop(load.requests, load.concurrency, False, load.warmup)
        else:
            probes = await runner.open_loop(load, phase_start, load.warmup)
        wall = time.perf_counter() - phase_start
        cpu = time.process_time() - cpu0
    finally:
        lag_task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await lag_task
    return RunResult(
        load=load,
        records=[p.record(phase_start) for p in probes],
        wall_s=wall,
        started_at=started_at,
        warmup_records=[p.record(phase_start) for p in warm],
        loop_lag_ms=[round(x, 3) for x in lag],
        cpu_s=cpu,
    )


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
    questions: Sequence[str],
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
    questions: Sequence[str],
    loads: Sequence[LoadSpec],
    *,
    enrichers: Sequence[Enricher] = (),
    session: Any = None,
    on_done: Callable[[bool, bool], None] | None = None,
    on_run_start: Callable[[LoadSpec], None] | None = None,
) -> list[RunResult]:
    """Several runs in a row (e.g. one per concurrency) over one shared HTTP client."""
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
        return results


# -- the embedded backend, in a child process ---------------------------------------


def _opt(v: Any) -> float | None:
    return None if v is None else float(v)


def _r(v: float | None) -> float | None:
    return None if v is None else round(v, 3)


def _local_backend_main(
    conn: multiprocessing.connection.Connection,
    config: dict[str, Any],
    host: str,
) -> None:  # pragma: no cover - runs in the child process
    # structlog's default prints every debug line to stdout: in the server that would
    # be blocking work per request, and noise in the benchmark's own output.
    from streamcite.logs import configure_logging

    # Ctrl-C reaches the whole process group: the parent decides when the backend stops
    # (after its in-flight requests are cancelled), so the child ignores it.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    configure_logging("WARNING")
    asyncio.run(_local_backend_serve(conn, config, host))


async def _local_backend_serve(
    conn: multiprocessing.connection.Connection, config: dict[str, Any], host: str
) -> None:  # pragma: no cover - runs in the child process
    try:
        from streamcite.local.server import BackendConfig, LocalBackend

        backend_cm = LocalBackend(BackendConfig(**config), host=host, port=0)
        async with backend_cm as backend:
            conn.send(("ready", backend.base_url))
            # Wait for the parent's "stop" (or its death: EOF) without blocking the loop.
            with contextlib.suppress(EOFError, OSError):
                await asyncio.to_thread(conn.recv)
    except Exception as exc:
        with contextlib.suppress(Exception):
            conn.send(("error", f"{type(exc).__name__}: {exc}"))


class LocalUpstream:
    """The embedded local backend for a benchmark.

    ``mode="process"`` (default) runs it in a child process, so the server's work
    does not share the event loop (nor the GIL) with the client being measured.
    ``mode="inline"`` runs it on the caller's loop: quicker to start, fine for tests,
    but client and server then slow each other down.
    ``config``: keyword arguments of ``streamcite.local.server.BackendConfig``.
    """

    def __init__(
        self,
        config: Mapping[str, Any] | None = None,
        *,
        mode: Literal["process", "inline"] = "process",
        host: str = "127.0.0.1",
        start_timeout: float = 60.0,
    ) -> None:
        self.config = dict(config or {})
        self.mode = mode
        self.host = host
        self.start_timeout = start_timeout
        self.base_url = ""
        self._proc: Any = None
        self._conn: multiprocessing.connection.Connection | None = None
        self._inline: Any = None

    @property
    def root_url(self) -> str:
        """Server root (for the Wikit and grounding endpoints): ``base_url`` minus ``/v1``."""
        url = self.base_url.rstrip("/")
        return url[: -len("/v1")] if url.endswith("/v1") else url

    async def __aenter__(self) -> LocalUpstream:
        if self.mode == "inline":
            from streamcite.local.server import BackendConfig, LocalBackend

            self._inline = LocalBackend(BackendConfig(**self.config), host=self.host, port=0)
            backend = await self._inline.__aenter__()
            self.base_url = backend.base_url
            return self
        ctx = multiprocessing.get_context("spawn")
        parent, child = ctx.Pipe()
        self._conn = parent
        self._proc = ctx.Process(
            target=_local_backend_main,
            args=(child, self.config, self.host),
            name="streamcite-bench-backend",
            daemon=True,
        )
        self._proc.start()
        child.close()
        try:
            ready = await asyncio.to_thread(parent.poll, self.start_timeout)
            if not ready:
                raise RuntimeError(f"the local backend did not start in {self.start_timeout} s")
            kind, value = parent.recv()
        except EOFError:
            await self._stop()
            raise RuntimeError("the local backend process exited before it was ready") from None
        except BaseException:
            await self._stop()
            raise
        if kind != "ready":
            await self._stop()
            raise RuntimeError(f"the local backend failed to start: {value}")
        self.base_url = str(value)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._inline is not None:
            inline, self._inline = self._inline, None
            await inline.__aexit__(None, None, None)
            return
        await self._stop()

    async def _stop(self) -> None:
        conn, self._conn = self._conn, None
        proc, self._proc = self._proc, None
        if conn is not None:
            with contextlib.suppress(OSError, ValueError):
                conn.send("stop")
            conn.close()
        if proc is not None:
            await asyncio.to_thread(proc.join, 10.0)
            if proc.is_alive():
                proc.terminate()
                await asyncio.to_thread(proc.join, 5.0)
