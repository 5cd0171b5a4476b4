"""``ChatStream``: the public object that composes one run of the pipeline.

It owns every resource (response, client, enricher tasks) and every wait, through
the stage modules: :mod:`~streamcite.pipeline.opening` (request, status, retries),
:mod:`~streamcite.pipeline.reading` (bytes → events under timeouts),
:mod:`~streamcite.pipeline.enrichment` (after-stream enrichers) and
:mod:`~streamcite.pipeline.recorder` (timings, logs, scrubbed errors).
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Mapping, Sequence
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

import orjson

from streamcite.core.api import ChatStreamParser
from streamcite.core.bounds import DEFAULT_BOUNDS, StreamBounds
from streamcite.core.events import ErrorEvent, Event, TokenEvent
from streamcite.core.markers import MarkerMode
from streamcite.core.models import CitedAnswer
from streamcite.core.redact import Redactor, header_secrets
from streamcite.enrich.base import Enricher
from streamcite.logs import get_logger
from streamcite.pipeline.enrichment import EnrichmentStage
from streamcite.pipeline.opening import OpenFailed, make_transport, open_upstream
from streamcite.pipeline.reading import read_events
from streamcite.pipeline.recorder import Recorder
from streamcite.pipeline.timeouts import Budget, Timeouts
from streamcite.transports.base import Transport, UpstreamResponse

__all__ = ["ChatStream", "stream_chat"]

_log = get_logger("streamcite")
_ids = itertools.count(1)
_DEFAULT_TIMEOUTS = Timeouts()  # frozen: one shared default is safe


class ChatStream:
    """Stream a chat completion with citations; an async context manager and iterator.

    >>> async with stream_chat({"model": "m", "messages": msgs, "stream": True},
    ...                        base_url="http://127.0.0.1:8000/v1") as stream:
    ...     async for event in stream:
    ...         print(event.type)

    Iterate it for events (the last is always ``done``); ``answer`` is the
    :class:`CitedAnswer` so far and, after ``done``, the final one.

    ``base_url`` is the API root (``/chat/completions`` is appended). ``session`` is an
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
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.stream_id = stream_id or f"s{next(_ids)}"
        self.timeouts = timeouts
        self.retries = retries
        self.response_headers: Mapping[str, str] = {}
        self._transport = make_transport(transport, session)
        self._parser = ChatStreamParser(marker_mode, bounds=bounds)
        self._headers = {"Content-Type": "application/json", **(headers or {})}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        secrets = header_secrets(self._headers.items())
        parts = urlsplit(self.url)
        host = f"{parts.hostname}:{parts.port}" if parts.port else str(parts.hostname)
        self._host = host  # never the userinfo of the URL
        if parts.password:
            secrets.append(parts.password)
        self._log = _log.bind(
            stream_id=self.stream_id, upstream=host, model=self.request.get("model")
        )
        self._budget = Budget(timeouts)
        self._rec = Recorder(
            self._parser, self._budget, self._log, Redactor(secrets), self._start_enrichers
        )
        self._enrichment = EnrichmentStage(
            after,
            name=self.stream_id,
            log=self._log,
            scrub=self._rec.scrub,
            enrich_incomplete=enrich_incomplete,
        )
        self._gen: AsyncIterator[Event] | None = None
        self._resp: UpstreamResponse | None = None
        self._started = False

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
        return self._gen

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
        parser, rec, budget = self._parser, self._rec, self._budget
        timings = parser.builder.timings
        budget.start()
        self._log.info("stream.start", transport=getattr(self._transport, "name", "custom"))
        try:
            try:
                resp = await self._open()
            except OpenFailed as failed:
                yield rec.error(failed.event)
            else:
                async for ev in read_events(resp, parser, budget, rec):
                    yield ev
                timings.stream_ms = budget.elapsed_ms()
            # Not started at a finish chunk: [DONE] without a finish_reason, a stream cut
            # before its finish (dropped connection, timeout), or no answer at all. The
            # gate decides (a cut answer is enriched only with ``enrich_incomplete``, an
            # empty one never), and ``enrichment_skipped`` says what happened.
            self._start_enrichers()
            async for ev in self._enrichment.collect(parser.builder, rec.error):
                yield ev
            timings.total_ms = budget.elapsed_ms()
            done = parser.done_event()
            self._log.info(
                "stream.done",
                ttft_ms=timings.ttft_ms,
                stream_ms=timings.stream_ms,
                total_ms=timings.total_ms,
                errors=[e.code for e in done.answer.errors],
            )
            yield done
        except asyncio.CancelledError:
            parser.add_error(
                ErrorEvent(code="cancelled", message="the stream was cancelled", stage="cancelled")
            )
            self._log.info("stream.cancelled")
            raise
        finally:
            await self._cleanup()

    async def _open(self) -> UpstreamResponse:
        resp = await open_upstream(
            self._transport,
            self.url,
            self._headers,
            orjson.dumps(self.request),
            self._budget,
            retries=self.retries,
            log=self._log,
        )
        self._resp = resp
        self.response_headers = resp.headers
        return resp

    def _start_enrichers(self) -> None:
        self._enrichment.start(self._parser.builder, self.request, self.response_headers)

    async def _cleanup(self) -> None:
        await self._enrichment.cancel()
        resp, self._resp = self._resp, None
        if resp is not None:
            await resp.aclose()
        await self._transport.aclose()


stream_chat = ChatStream
"""``stream_chat(request, *, base_url, ...)`` opens one :class:`ChatStream` (the
constructor is the API: one signature, documented once)."""


async def _exhausted() -> AsyncIterator[Event]:
    return
    yield  # makes this an async generator
