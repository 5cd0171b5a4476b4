"""The producer: one task per stream runs the upstream request and logs every event.

It never waits for a client: events go to the :class:`~streamcite.streamlog.StreamLog`
and the pumps (:mod:`streamcite.relay.delivery`) read them from there, so a slow client
cannot slow the upstream read or another stream. Every stream ends with ``done`` —
also when it is cancelled, abandoned (nobody listened within ``resume_grace``), cut
by a shutdown, or when the log or the relay itself failed.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import aiohttp
import orjson

from streamcite.core.errors import StreamciteError
from streamcite.core.events import CitationsEvent, DoneEvent, ErrorEvent, Event, TokenEvent
from streamcite.core.models import CitedAnswer
from streamcite.logs import LibraryLogger
from streamcite.pipeline import ChatStream, stream_chat
from streamcite.pipeline.bodies import chat_request_as
from streamcite.relay.bounds import StreamBounds
from streamcite.relay.config import RelayConfig
from streamcite.relay.guard import Identity, StreamBinder
from streamcite.relay.live import Taps
from streamcite.relay.metrics import RelayMetrics
from streamcite.relay.protocol import TOKEN_STARTS, AskMessage, token_start
from streamcite.relay.pushed import PushedTokens, first_token_observer, push_tokens
from streamcite.relay.quotas import StreamQuotas
from streamcite.relay.readers import ReaderHeartbeat
from streamcite.relay.replay import rebuild_answer
from streamcite.relay.runs import CITATIONS_RESEND, Run, final_events
from streamcite.streamlog import StreamLog
from streamcite.streamlog.protocol import SupersedeLog, SyncAppendLog

if TYPE_CHECKING:
    from streamcite.transports.push import ConnectionPool

__all__ = [
    "CITATIONS_RESEND",
    "SUPERSEDED",
    "OnEvent",
    "ProducedStream",
    "Producer",
    "SupersedeLog",
    "SyncAppendLog",
    "final_events",
]

SUPERSEDED = b'{"type":"superseded","by":%d}'
"""What a citations frame becomes in the log once a newer one (``seq`` ``by``) replaced
it: the newer frame carries the whole set, so a reader that arrives later loses nothing."""

OnEvent = Callable[[str, int, float], None]
"""Benchmark hook: ``(stream_id, seq, perf_counter())``."""

_FAULT_HEADER = "X-Streamcite-Fault"


@dataclass(slots=True, eq=False)
class ProducedStream:
    """A stream whose upstream request runs in this relay process."""

    stream_id: str
    task: asyncio.Task[None] | None = None
    subscribers: int = 0
    """Pumps (of any client) delivering this stream now."""
    cancel_reason: str | None = None
    grace: asyncio.TimerHandle | None = None
    """The ``resume_grace`` timer, armed while nobody listens."""
    grace_check: asyncio.Task[None] | None = None
    """Grace over: asking the log whether another instance reads the stream."""
    started: float = field(default_factory=time.perf_counter)
    quota_key: str | None = None
    """The client whose quota this stream counts against (released when it ends)."""
    taps: Taps | None = None
    """Pumps of caught-up clients, handed each event as it is logged (a log that appends
    without awaiting only: see :mod:`streamcite.relay.live`)."""
    pushed: PushedTokens | None = None
    """The push sink logging its tokens in the upstream connection's callback, if any."""


class Producer:
    """Starts, runs, cancels and abandons the streams this relay produces."""

    def __init__(
        self,
        config: RelayConfig,
        log: StreamLog,
        *,
        metrics: RelayMetrics,
        quotas: StreamQuotas,
        binder: StreamBinder,
        session: Callable[[], aiohttp.ClientSession | None],
        logger: LibraryLogger,
        readers: ReaderHeartbeat,
    ) -> None:
        self.config = config
        self.readers = readers
        """Pumps of streams owned by other instances (noted in the log for their owners)."""
        self.log = log
        self.metrics = metrics
        self.quotas = quotas
        self.binder = binder
        self.session = session
        """The upstream session (the relay makes its own at startup)."""
        self.logger = logger
        self.streams: dict[str, ProducedStream] = {}
        self.on_event: OnEvent | None = None
        """Benchmark hook for every event the pipeline yields, taken before it is logged."""
        self.open_upstream: Callable[[AskMessage, str], ChatStream] = self._upstream
        """Makes a stream's upstream request (``(ask, stream_id)``; a benchmark's seam: a
        compiled producer's methods cannot be replaced on the instance)."""
        self.push_pool: ConnectionPool | None = None
        """Upstream connections of the push transport (None: aiohttp's session)."""
        self._append_nowait = log.append_nowait if isinstance(log, SyncAppendLog) else None
        self._supersede = log.supersede_nowait if isinstance(log, SupersedeLog) else None
        log.on_cancel(self.on_cancel_request)

    # -- start, cancel -------------------------------------------------------------

    def request_body(self, msg: AskMessage) -> dict[str, Any]:
        """The upstream request for an ask (model and system prompt: the config's), in the
        body of the config's ``api``."""
        messages: list[dict[str, str]] = []
        if self.config.system_prompt:
            messages.append({"role": "system", "content": self.config.system_prompt})
        messages.append({"role": "user", "content": msg.question})
        chat = {
            "model": self.config.model,
            "messages": messages,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        return chat_request_as(self.config.api, chat)

    async def start(self, msg: AskMessage, who: Identity) -> ProducedStream:
        """Start a stream for ``who`` (its quota was checked by the caller, with no await
        since, so counting it here cannot overshoot)."""
        sid = self.binder.new_stream_id(who)
        key = who.quota_key
        self.quotas.acquire(key)
        try:
            await self.log.open_stream(sid, owner=self.config.instance_id)
        except BaseException:
            self.quotas.release(key)
            raise
        stream = ProducedStream(
            sid, quota_key=key, taps=Taps(sid) if self._append_nowait is not None else None
        )
        self.streams[sid] = stream
        self.metrics.streams_started += 1
        self.metrics.set_active(len(self.streams))
        stream.task = asyncio.create_task(self._run(stream, msg), name=f"relay-stream:{sid}")
        return stream

    def on_cancel_request(self, sid: str) -> None:
        """The log's cancel callback (a cancel sent to any instance reaches the owner)."""
        stream = self.streams.get(sid)
        if stream is not None:
            self.cancel(stream, "cancelled")

    def cancel(self, stream: ProducedStream, reason: str) -> None:
        """Cancel the upstream request; the stream ends with ``error`` (``reason``) + ``done``."""
        if stream.cancel_reason is None and stream.task is not None and not stream.task.done():
            stream.cancel_reason = reason
            if stream.pushed is not None:
                stream.pushed.stopped = True  # no token logged after the cancel, as pulled
            stream.task.cancel()

    # -- subscribers and the grace period ----------------------------------------------

    def attach(self, sid: str) -> None:
        """A pump started delivering ``sid`` (a stream of another instance: its owner
        learns of the reader through the log's heartbeat)."""
        stream = self.streams.get(sid)
        if stream is None:
            self.readers.attach(sid)
            return
        stream.subscribers += 1
        if stream.grace is not None:
            stream.grace.cancel()
            stream.grace = None

    def detach(self, sid: str) -> None:
        stream = self.streams.get(sid)
        if stream is None:
            self.readers.detach(sid)
            return
        stream.subscribers -= 1
        self.maybe_abandon(stream)

    def maybe_abandon(self, stream: ProducedStream) -> None:
        """Nobody listens: cancel the stream after ``resume_grace`` unless someone attaches."""
        if stream.subscribers > 0 or stream.grace is not None:
            return
        if stream.task is None or stream.task.done():
            return
        grace = self.config.resume_grace
        if grace <= 0:
            self.cancel(stream, "abandoned")
        else:
            stream.grace = asyncio.get_running_loop().call_later(grace, self._grace_over, stream)

    def _grace_over(self, stream: ProducedStream) -> None:
        stream.grace = None
        if stream.subscribers <= 0 and stream.grace_check is None:
            stream.grace_check = asyncio.create_task(
                self._abandon_unless_read_elsewhere(stream), name="relay-grace-check"
            )

    async def _abandon_unless_read_elsewhere(self, stream: ProducedStream) -> None:
        """Nobody here listened for a grace period: cancel the stream unless a client reads
        it on another instance; then ask again one heartbeat later (its note lapses
        ``3 × interval`` after that client left)."""
        try:
            elsewhere = await self.readers.readers_elsewhere(stream.stream_id)
        finally:
            stream.grace_check = None
        if stream.subscribers > 0 or stream.task is None or stream.task.done():
            return
        if elsewhere:
            loop = asyncio.get_running_loop()
            stream.grace = loop.call_later(self.readers.interval, self._grace_over, stream)
        else:
            self.cancel(stream, "abandoned")

    # -- one stream's run ----------------------------------------------------------------

    def _upstream(self, msg: AskMessage, sid: str) -> ChatStream:
        cfg = self.config
        headers = dict(cfg.upstream_headers)
        if msg.options.faults and cfg.allow_client_faults:
            headers[_FAULT_HEADER] = msg.options.faults
        enrichers = [
            e
            for e in cfg.enrichers
            if (e.kind != "sources" or msg.options.sources)
            and (e.kind != "grounding" or msg.options.grounding)
        ]
        pool = self.push_pool
        return stream_chat(
            self.request_body(msg),
            base_url=cfg.base_url,
            api=cfg.api,
            api_key=cfg.api_key,
            transport="aiohttp" if pool is None else pool.transport(),
            session=self.session(),
            headers=headers,
            timeouts=cfg.timeouts,
            marker_mode=msg.options.marker_mode,
            after=enrichers,
            retries=cfg.retries,
            stream_id=sid,
        )

    async def _run(self, stream: ProducedStream, msg: AskMessage) -> None:
        """Run the upstream request and log every event; always ends with ``done``."""
        sid = stream.stream_id
        upstream = self.open_upstream(msg, sid)
        logger = self.logger.bind(stream_id=sid)
        logger.info("relay.stream.start", question_chars=len(msg.question))
        cfg = self.config
        bounds = StreamBounds(
            max_errors=cfg.max_stream_errors, max_done_bytes=cfg.max_done_bytes, logger=logger
        )
        run = Run(dict(self.metrics.time_to))
        try:
            async with upstream:
                await self._log_events(stream, upstream, bounds, run)
        except asyncio.CancelledError:
            if stream.cancel_reason is None:
                stream.cancel_reason = "cancelled"
                run.reraise = True  # cancelled from outside (loop shutdown): finish, then re-raise
            else:
                task = asyncio.current_task()
                if task is not None:
                    task.uncancel()
        except StreamciteError as exc:  # the log failed (Redis unreachable, say)
            logger.warning("relay.stream.log_failed", code=exc.code)
            run.log_failed = True
            run.failure = ErrorEvent(
                code=exc.code,
                message=f"the relay's stream log failed ({exc.code}); the answer is partial",
                retryable=exc.retryable,
                stage="relay",
            )
        except Exception as exc:  # a bug: end the stream cleanly anyway
            logger.exception("relay.stream.failed")
            run.failure = ErrorEvent(
                code="relay_error", message=f"the relay failed: {type(exc).__name__}", stage="relay"
            )
        try:
            if run.done is None:
                await self._log_end(stream, upstream.answer, bounds, run)
            with contextlib.suppress(Exception):
                await self.log.finish(sid)
        finally:
            self._release(stream, run, logger)
        if run.reraise:
            raise asyncio.CancelledError

    async def _log_events(
        self, stream: ProducedStream, upstream: ChatStream, bounds: StreamBounds, run: Run
    ) -> None:
        """The hot loop: each pipeline event → its wire JSON → the log (the events of one
        upstream read come as one batch: one async step per read, not per event). A read's
        tokens go to the live taps together, after the last of them is logged: one frame
        piece per read (nothing can read the log in between: no await)."""
        sid = stream.stream_id
        log = self.log
        append_nowait = self._append_nowait
        on_event = self.on_event
        taps = stream.taps
        first_token = True
        clock = time.perf_counter
        dumps, starts = orjson.dumps, TOKEN_STARTS
        batches = upstream.batches()
        on_first = first_token_observer(self.metrics.ttft, stream.started)
        pushed = stream.pushed = push_tokens(
            stream.stream_id, batches, append_nowait, taps, on_event, on_first
        )
        async for batch in batches:  # one step per upstream read
            if pushed is not None and pushed.failure is not None:
                raise pushed.failure  # (where this loop would have raised it)
            t = clock()  # (the events of one read arrived together)
            first = 0  # the first seq of the read's tokens not handed to the taps yet
            one = b""  # its payload
            more: list[bytes] | None = None  # the payloads from ``first`` on, past one
            for event in batch:
                if type(event) is TokenEvent:  # the hot path: token_json inlined
                    index, text, display = event.index, event.text, event.display
                    d = tj = dumps(text)
                    if display != text:
                        d = dumps(display)
                    start = starts[index] if 0 <= index < 8 else token_start(index)
                    payload = b"".join((start, tj, b',"display":', d, b"}"))
                    if append_nowait is None:
                        seq = await log.append(sid, payload)
                    else:
                        seq = append_nowait(sid, payload)
                        if taps is not None:
                            if not first:
                                first, one = seq, payload
                            elif more is None:
                                more = [one, payload]
                            else:
                                more.append(payload)
                    if on_event is not None:
                        on_event(sid, seq, t)
                    if first_token:
                        first_token = False
                        on_first(t)
                    continue
                if first and taps is not None:  # the read's tokens so far go first
                    taps.logged_read(first, one, more)
                    first, more = 0, None
                await self._log_cold(stream, event, t, bounds, run)
            if first and taps is not None:  # (Taps.logged_read inlined)
                if more is None:
                    taps.logged(first, one)
                else:
                    taps.logged_run(first, more)

    async def _log_cold(
        self, stream: ProducedStream, event: Event, t: float, bounds: StreamBounds, run: Run
    ) -> None:
        """Log one event that is not a token (its counts and metrics)."""
        sid = stream.stream_id
        metrics = self.metrics
        kind = type(event)
        if kind is CitationsEvent and run.hold(event):  # type: ignore[arg-type]
            return  # a newer one, or done, logs it
        if kind is ErrorEvent or kind is DoneEvent:
            if kind is DoneEvent and run.held is not None:
                await self._log_held(stream, run)
            bounded = bounds.payload(event)  # type: ignore[arg-type]
            if bounded is None:
                return  # one error too many: counted, not sent
            payload = bounded
        else:
            payload = orjson.dumps(event)
        seq = await self._append(stream, payload)
        if self.on_event is not None:
            self.on_event(sid, seq, t)
        if kind is CitationsEvent:
            hist = run.time_to.pop("citations", None)  # the first one only
            if hist is not None:
                hist.observe(t - stream.started)
            if run.citations_seq and self._supersede is not None:
                self._supersede(sid, run.citations_seq, SUPERSEDED % seq)
            run.citations_seq = seq
        elif isinstance(event, ErrorEvent):
            metrics.errors[event.code] += 1
        elif kind is DoneEvent:
            run.done = event  # type: ignore[assignment]
            metrics.stream_seconds.observe(t - stream.started)
        elif run.time_to:
            hist = run.time_to.pop(event.type, None)
            if hist is not None:
                hist.observe(t - stream.started)

    async def _append(self, stream: ProducedStream, payload: bytes) -> int:
        """Log one event off the hot loop (which inlines this); its ``seq``."""
        seq = await self.log.append(stream.stream_id, payload)
        if stream.taps is not None:
            stream.taps.logged(seq, payload)
        return seq

    async def _log_held(self, stream: ProducedStream, run: Run) -> int:
        """Log the citations event held back (before ``done``: a reader needs the newest set,
        and a ``done`` too large for its bound leaves out what was streamed)."""
        held, run.held = run.held, None
        if held is None:
            return run.citations_seq
        sid = stream.stream_id
        seq = await self._append(stream, orjson.dumps(held))
        if run.citations_seq and self._supersede is not None:
            self._supersede(sid, run.citations_seq, SUPERSEDED % seq)
        run.citations_seq = seq
        return seq

    async def _log_end(
        self, stream: ProducedStream, answer: CitedAnswer, bounds: StreamBounds, run: Run
    ) -> None:
        """Log ``error`` + ``done`` for a stream that ended without its own ``done``."""
        sid = stream.stream_id
        with contextlib.suppress(Exception):
            await self._log_held(stream, run)
        if run.log_failed:
            # The pipeline may have folded tokens it had not yielded yet (or that
            # never reached the log): the answer is what the clients were given.
            with contextlib.suppress(StreamciteError):
                answer = rebuild_answer(await self.log.read(sid, 0), None)
        for event in final_events(answer, stream.cancel_reason, run.failure):
            if type(event) is ErrorEvent:
                self.metrics.errors[event.code] += 1
            with contextlib.suppress(Exception):
                await self._append(stream, bounds.final_payload(event))

    def _release(self, stream: ProducedStream, run: Run, logger: LibraryLogger) -> None:
        """The stream is over: free its slot and quota, record its outcome."""
        metrics = self.metrics
        self.streams.pop(stream.stream_id, None)
        if stream.taps is not None:
            stream.taps.release_all()
        metrics.set_active(len(self.streams))
        if stream.quota_key is not None:
            self.quotas.release(stream.quota_key)
        if stream.grace is not None:
            stream.grace.cancel()
            stream.grace = None
        if stream.grace_check is not None:
            stream.grace_check.cancel()
            stream.grace_check = None
        outcome = stream.cancel_reason or ("error" if run.failure else "ok")
        done = run.done
        if done is not None:
            timings = done.answer.timings
            for stage, value in (
                ("ttft", timings.ttft_ms),
                ("stream", timings.stream_ms),
                ("citations", timings.citations_ms),
                ("sources", timings.sources_ms),
                ("grounding", timings.grounding_ms),
                ("first_claim", getattr(timings, "first_claim_ms", None)),
                ("total", timings.total_ms),
            ):
                if value is not None:
                    metrics.stages[stage].observe(value / 1000)
            if done.answer.errors:
                outcome = "error"
        metrics.streams_finished[outcome] += 1
        logger.info("relay.stream.end", outcome=outcome)
