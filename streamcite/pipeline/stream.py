"""``ChatStream``: the public object that composes one run of the pipeline.

It owns every resource (response, client, enricher tasks) and every wait, through
the stage modules: :mod:`~streamcite.pipeline.opening` (request, status, retries),
:mod:`~streamcite.pipeline.reading` (bytes → events under timeouts),
:mod:`~streamcite.pipeline.enrichment` (after-stream enrichers) and
:mod:`~streamcite.pipeline.recorder` (timings, logs, scrubbed errors).
"""

from __future__ import annotations

import asyncio
import functools
import itertools
from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import urlsplit

from streamcite.core.api import parser_for
from streamcite.core.bounds import DEFAULT_BOUNDS, StreamBounds
from streamcite.core.enricher import Enricher
from streamcite.core.events import ErrorEvent, Event, GroundingEvent, TokenEvent
from streamcite.core.markers import MarkerMode
from streamcite.core.models import CitedAnswer
from streamcite.core.redact import Redactor, header_secrets
from streamcite.logs import get_logger
from streamcite.pipeline.apis import Api, check_api, prepare_request
from streamcite.pipeline.claims import ClaimStage
from streamcite.pipeline.enrichment import EnrichmentStage
from streamcite.pipeline.opening import OpenFailed, make_transport, open_upstream
from streamcite.pipeline.reading import read_batches
from streamcite.pipeline.recorder import Recorder
from streamcite.pipeline.sse_reads import Batches, SseReads
from streamcite.pipeline.timeouts import Budget, Timeouts
from streamcite.telemetry.switch import active as telemetry_active
from streamcite.transports.base import Transport, UpstreamResponse

if TYPE_CHECKING:
    from streamcite.telemetry.otel import StreamSpan

__all__ = ["ChatStream", "stream_chat"]

_log = get_logger("streamcite")
_ids = itertools.count(1)
_DEFAULT_TIMEOUTS = Timeouts()  # frozen: one shared default is safe


class ChatStream:
    """Stream a chat completion with citations; an async context manager and iterator.

    >>> async with stream_chat({"model": "streamcite-local", "messages": msgs, "stream": True},
    ...                        base_url="http://127.0.0.1:8765/v1") as stream:
    ...     async for event in stream:
    ...         print(event.type)
    >>> claude = {"model": "claude-sonnet-4-5", "max_tokens": 1024, "stream": True,
    ...           "messages": [{"role": "user", "content": "Who won?"}]}
    >>> async with stream_chat(claude, base_url="https://api.anthropic.com/v1",
    ...                        api="anthropic", api_key=key) as stream:
    ...     answer = await stream.until_done()  # answer.citation_spans slice answer.text

    Iterate it for events (the last is always ``done``); ``answer`` is the
    :class:`CitedAnswer` so far and, after ``done``, the final one.

    ``api`` is the provider API ``request`` is written for (``chat``, ``responses``,
    ``anthropic``, ``gemini``, ``cohere``): it sets the path appended to ``base_url`` (the
    API root with its version: ``…/v1`` for OpenAI and Anthropic, Gemini ``…/v1beta`` or
    ``…/v1``, Cohere ``…/v2``; or, for Anthropic, Gemini and Cohere, the server's root as
    their SDKs take it, ``https://api.anthropic.com``: the version is added), the header
    ``api_key`` goes in, and the core dialect that
    reads the answer (see :mod:`~streamcite.pipeline.apis`). ``session`` is an
    optional ``httpx.AsyncClient`` (transport ``httpx``) or ``aiohttp.ClientSession``
    (transport ``aiohttp``) to reuse; otherwise one is made and closed per stream.
    ``retries`` retries retryable failures (429, 5xx, connect errors) with jittered
    backoff, honouring Retry-After — only before any byte of the answer, so tokens are
    never duplicated. ``after`` enrichers run concurrently once the finish chunk arrives
    (not on a refusal, nor on an answer cut by an error unless ``enrich_incomplete``).
    ``bounds`` are the caps the stream is held to (:mod:`streamcite.core.bounds`: an
    answer beyond ``max_answer_chars`` is cut with ``answer_too_large`` and the
    connection closed).
    """

    def __init__(
        self,
        request: Mapping[str, Any],
        *,
        base_url: str,
        api: Api = "chat",
        api_key: str | None = None,
        transport: str | Transport = "aiohttp",
        headers: Mapping[str, str] | None = None,
        session: Any = None,
        timeouts: Timeouts = _DEFAULT_TIMEOUTS,
        marker_mode: MarkerMode = "keep",
        after: Sequence[Enricher] = (),
        retries: int = 0,
        stream_id: str | None = None,
        enrich_incomplete: bool = False,
        bounds: StreamBounds = DEFAULT_BOUNDS,
    ) -> None:
        self.request = dict(request)
        self.api: Api = check_api(api)
        prepared = prepare_request(
            self.api, self.request, base_url=base_url, api_key=api_key, headers=headers
        )
        self.url = prepared.url
        self.stream_id = stream_id or f"s{next(_ids)}"
        self.timeouts = timeouts
        self.retries = retries
        self.response_headers: Mapping[str, str] = {}
        self._transport = make_transport(transport, session)
        self._parser = parser_for(self.api, marker_mode, bounds)
        self._headers = prepared.headers
        self._body = prepared.body
        redactor, host = _redaction(tuple(self._headers.items()), self.url)
        self._host = host  # never the userinfo of the URL
        self._log = _log.bind(
            stream_id=self.stream_id, upstream=host, model=prepared.model, api=self.api
        )
        self._budget = Budget(timeouts)
        self._rec = Recorder(self._parser, self._budget, self._log, redactor, self._start_enrichers)
        self._enrichment = EnrichmentStage(
            after,
            name=self.stream_id,
            log=self._log,
            scrub=self._rec.scrub,
            enrich_incomplete=enrich_incomplete,
        )
        self._gen: AsyncIterator[Any] | None = None
        self._claims: ClaimStage | None = None
        self._resp: UpstreamResponse | None = None
        self._started = False
        self._batched = False

    def __repr__(self) -> str:  # never shows keys or headers
        return f"<ChatStream {self.stream_id} {self._host} model={self.request.get('model')!r}>"

    # -- public surface ------------------------------------------------------------

    @property
    def after(self) -> list[Enricher]:
        """The enrichers run after the stream (a list you may still change before it starts)."""
        return self._enrichment.enrichers

    @property
    def enrich_incomplete(self) -> bool:
        return self._enrichment.enrich_incomplete

    @property
    def answer(self) -> CitedAnswer:
        """The answer so far (final once ``done`` was yielded)."""
        return self._parser.builder.snapshot()

    async def __aenter__(self) -> ChatStream:
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    def __aiter__(self) -> AsyncIterator[Event]:
        if self._gen is None:
            # One run per stream: once closed, iterating again yields nothing (the
            # answer so far stays in ``answer``) rather than sending a new request.
            self._gen = _exhausted() if self._started else self._run()
            self._started = True
            self._batched = False
        elif self._batched:
            raise RuntimeError("this stream is being iterated by batches()")
        return cast(AsyncIterator[Event], self._gen)

    def batches(self) -> AsyncIterator[list[Event]]:
        """The same events as iterating the stream, a list at a time: each upstream read's
        events together (one step per read instead of one per event, for consumers such
        as a relay where that step counts), the cold ones (enrichment, ``done``) one a
        list. Never an empty list. A stream is iterated once, either way."""
        if self._gen is None:
            self._gen = _exhausted() if self._started else Batches(self._batches())
            self._started = True
            self._batched = True
        elif not self._batched:
            raise RuntimeError("this stream is being iterated event by event")
        return cast(AsyncIterator[list[Event]], self._gen)

    @property
    def text_stream(self) -> AsyncIterator[str]:
        """Only the displayable text of choice 0, as it arrives."""
        return self._text()

    async def _text(self) -> AsyncIterator[str]:
        async for ev in self:
            if type(ev) is TokenEvent and ev.index == 0 and ev.display:
                yield ev.display

    async def until_done(self) -> CitedAnswer:
        """Consume the rest of the stream; return the final answer."""
        async for _ in self:
            pass
        return self.answer

    async def aclose(self) -> None:
        """Stop: close the upstream response and client, cancel enrichers. Idempotent."""
        gen, self._gen = self._gen, None
        if gen is not None and hasattr(gen, "aclose"):
            await gen.aclose()
        await self._cleanup()

    # -- the run -------------------------------------------------------------------

    async def _run(self) -> AsyncIterator[Event]:
        batches = Batches(self._batches())
        try:
            async for batch in batches:
                for ev in batch:
                    yield ev
        finally:
            await batches.aclose()  # its cleanup now, not when it is collected

    async def _batches(self) -> AsyncGenerator[list[Event] | SseReads, None]:
        parser, rec, budget = self._parser, self._rec, self._budget
        timings = parser.builder.timings
        budget.start()
        obs = self._observe()  # None unless streamcite.telemetry.instrument() was called
        claims = self._claims = ClaimStage(
            self._claim_sessions(), parser.builder, budget.elapsed_ms
        )
        self._log.info("stream.start", transport=getattr(self._transport, "name", "custom"))
        try:
            try:
                resp = await self._open()
            except OpenFailed as failed:
                yield [rec.error(failed.event)]
            else:
                batches = read_batches(resp, parser, budget, rec)
                try:
                    if not claims.sessions and isinstance(batches, SseReads):
                        yield batches  # the plain hot path: iterated in place (Batches)
                    elif not claims.sessions:
                        async for batch in batches:
                            yield batch
                    else:  # live claims interleaved
                        async for ev in claims.interleave(_flat(batches)):
                            yield [ev]
                finally:
                    await batches.aclose()  # (its read timer, when abandoned early)
                if timings.stream_ms is None:
                    timings.stream_ms = budget.elapsed_ms()
            # Not started at a finish chunk: [DONE] without a finish_reason, a stream cut
            # before its finish (dropped connection, timeout), or no answer at all. The
            # gate decides (a cut answer is enriched only with ``enrich_incomplete``, an
            # empty one never), and ``enrichment_skipped`` says what happened.
            self._start_enrichers()
            async for ev in self._enrichment.collect(parser.builder, rec.error):
                if type(ev) is GroundingEvent:  # one claim channel: its claims first
                    for claim in claims.after_stream(ev):
                        yield [claim]
                yield [ev]
            timings.total_ms = budget.elapsed_ms()
            done = parser.done_event()
            self._log.info(
                "stream.done",
                ttft_ms=timings.ttft_ms,
                stream_ms=timings.stream_ms,
                total_ms=timings.total_ms,
                errors=[e.code for e in done.answer.errors],
            )
            yield [done]
        except asyncio.CancelledError:
            parser.add_error(
                ErrorEvent(code="cancelled", message="the stream was cancelled", stage="cancelled")
            )
            self._log.info("stream.cancelled")
            raise
        finally:
            try:
                await self._cleanup()
            finally:
                if obs is not None:
                    obs.end(self.answer)  # after the enrichers' spans ended

    def _observe(self) -> StreamSpan | None:
        """The span of this run when telemetry is on (its traceparent sent if asked)."""
        tel = telemetry_active()
        if tel is None:
            return None
        obs = tel.stream(
            stream_id=self.stream_id,
            request=self.request,
            url=self.url,
            t0=self._budget.t0,
            api=str(getattr(self, "api", "chat")),
        )
        obs.inject(self._headers)
        self._enrichment.observer = obs
        return obs

    async def _open(self) -> UpstreamResponse:
        resp = await open_upstream(
            self._transport,
            self.url,
            self._headers,
            self._body,
            self._budget,
            retries=self.retries,
            log=self._log,
        )
        self._resp = resp
        self.response_headers = resp.headers
        return resp

    def _claim_sessions(self) -> list[Any]:
        """The live claim sessions of the enrichers that have one (``claim_session``)."""
        sessions = []
        for e in self._enrichment.enrichers:
            make = getattr(e, "claim_session", None)
            session = make(self.request) if callable(make) else None
            if session is not None:
                sessions.append(session)
        return sessions

    def _start_enrichers(self) -> None:
        self._enrichment.start(self._parser.builder, self.request, self.response_headers)

    async def _cleanup(self) -> None:
        if self._claims is not None:
            self._claims.cancel()
        await self._enrichment.cancel()
        resp, self._resp = self._resp, None
        if resp is not None:
            await resp.aclose()
        await self._transport.aclose()


@functools.lru_cache(maxsize=32)
def _redaction(headers: tuple[tuple[str, str], ...], url: str) -> tuple[Redactor, str]:
    """The redactor of a request's secrets (its credential headers' values, the URL's
    password) and its host as logged (never the URL's userinfo).

    Kept per headers and URL: every stream of a relay (or of an application's client)
    sends the same, and a redactor compiles a pattern of each secret's prefixes. A
    redactor holds nothing but its patterns: shared, it is the same for every stream."""
    secrets = header_secrets(headers)
    parts = urlsplit(url)
    if parts.password:
        secrets.append(parts.password)
    host = f"{parts.hostname}:{parts.port}" if parts.port else str(parts.hostname)
    return Redactor(secrets), host


stream_chat = ChatStream
"""``stream_chat(request, *, base_url, ...)`` opens one :class:`ChatStream` (the
constructor is the API: one signature, documented once)."""


async def _exhausted() -> AsyncIterator[Any]:
    return
    yield  # makes this an async generator


async def _flat(batches: AsyncIterator[list[Event]]) -> AsyncIterator[Event]:
    async for batch in batches:
        for ev in batch:
            yield ev
