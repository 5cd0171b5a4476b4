"""The async pipeline: HTTP → sans-I/O core → events → enrichers → ``done``.

``stream_chat(...)`` is an async context manager and an async iterator of events.
It owns every wait (connect, first token, idle, total, each enricher) and every
resource (response, client, enricher tasks): leaving the ``async with`` early or
cancelling the task closes them all.
"""

from __future__ import annotations

import asyncio
import itertools
import random
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

import orjson
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception

from streamcite.core.api import ChatStreamParser
from streamcite.core.errors import StreamciteError
from streamcite.core.events import (
    ErrorEvent,
    Event,
    FinishEvent,
    TokenEvent,
)
from streamcite.core.markers import MarkerMode
from streamcite.core.models import CitedAnswer
from streamcite.core.redact import Redactor, header_secrets
from streamcite.core.retry_after import parse_retry_after
from streamcite.enrich.base import EnrichContext, Enricher
from streamcite.enrich.gate import skip_reason
from streamcite.logs import get_logger
from streamcite.transports.base import (
    Transport,
    TransportError,
    UpstreamResponse,
    is_redirect,
    redirect_message,
)

__all__ = ["ChatStream", "Timeouts", "stream_chat"]

_log = get_logger("streamcite")
_ids = itertools.count(1)
_MAX_RETRY_WAIT = 30.0


@dataclass(slots=True, frozen=True)
class Timeouts:
    """Seconds. ``None`` disables one bound (``total`` still caps everything)."""

    connect: float | None = 10.0
    """TCP/TLS connect and request send."""
    first_token: float | None = 60.0
    """Request sent → first byte of a token (providers may think for a while)."""
    idle: float | None = 30.0
    """Longest silence between two reads once tokens flow."""
    total: float | None = 600.0
    """Request sent → end of the upstream stream."""


class _OpenFailed(Exception):
    """The request failed before any token; carries the error event to report."""

    def __init__(self, event: ErrorEvent) -> None:
        super().__init__(event.message)
        self.event = event


_STATUS_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    408: "request_timeout",
    409: "conflict",
    413: "payload_too_large",
    422: "unprocessable",
    429: "rate_limited",
}


def _http_error(status: int, body: bytes, headers: Mapping[str, str]) -> ErrorEvent:
    """An HTTP error response → ErrorEvent with the provider's own message."""
    message = ""
    provider_code: str | None = None
    try:
        obj = orjson.loads(body)
    except orjson.JSONDecodeError:
        message = body[:500].decode("utf-8", "replace").strip()
    else:
        err = obj.get("error", obj) if isinstance(obj, dict) else obj
        if isinstance(err, dict):
            message = str(err.get("message") or err.get("detail") or "")
            code = err.get("code") or err.get("type")
            provider_code = str(code) if code else None
        elif isinstance(err, str):
            message = err
    code = _STATUS_CODES.get(status) or (
        "upstream_unavailable" if status >= 500 else f"http_{status}"
    )
    if provider_code and provider_code != code:
        message = f"{message} ({provider_code})" if message else provider_code
    return ErrorEvent(
        code=code,
        message=f"HTTP {status}: {message}" if message else f"HTTP {status}",
        retryable=status in (408, 409, 429) or status >= 500,
        stage="http",
        status=status,
        retry_after=parse_retry_after(headers.get("retry-after") or headers.get("Retry-After")),
    )


def _make_transport(kind: str | Transport, session: Any) -> Transport:
    if not isinstance(kind, str):
        return kind
    if kind == "aiohttp":
        from streamcite.transports.aiohttp import AiohttpTransport

        return AiohttpTransport(session)
    if kind == "httpx":
        from streamcite.transports.httpx import HttpxTransport

        return HttpxTransport(session)
    raise ValueError(f"unknown transport {kind!r}: 'httpx' or 'aiohttp'")


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
        timeouts: Timeouts = Timeouts(),
        marker_mode: MarkerMode = "keep",
        after: Sequence[Enricher] = (),
        retries: int = 0,
        stream_id: str | None = None,
        enrich_incomplete: bool = False,
    ) -> None:
        self.request = dict(request)
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.stream_id = stream_id or f"s{next(_ids)}"
        self.timeouts = timeouts
        self.retries = retries
        self.after = list(after)
        self.enrich_incomplete = enrich_incomplete
        self.response_headers: Mapping[str, str] = {}
        self._transport = _make_transport(transport, session)
        self._parser = ChatStreamParser(marker_mode)
        self._headers = {"Content-Type": "application/json", **(headers or {})}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self._secrets = header_secrets(self._headers.items())
        parts = urlsplit(self.url)
        host = f"{parts.hostname}:{parts.port}" if parts.port else str(parts.hostname)
        self._host = host  # never the userinfo of the URL
        if parts.password:
            self._secrets.append(parts.password)
        self._redact = Redactor(self._secrets)
        self._log = _log.bind(
            stream_id=self.stream_id, upstream=host, model=self.request.get("model")
        )
        self._gen: AsyncIterator[Event] | None = None
        self._resp: UpstreamResponse | None = None
        self._tasks: list[asyncio.Task[Event | None]] = []
        self._results: dict[str, asyncio.Future[Event | None]] = {}
        self._t0 = 0.0
        self._done = False
        self._started = False

    def __repr__(self) -> str:  # never shows keys or headers
        return f"<ChatStream {self.stream_id} {self._host} model={self.request.get('model')!r}>"

    # -- public surface ------------------------------------------------------------

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
        parser = self._parser
        timings = parser.builder.timings
        self._t0 = t0 = time.perf_counter()
        self._log.info("stream.start", transport=getattr(self._transport, "name", "custom"))
        try:
            try:
                resp = await self._open()
            except _OpenFailed as failed:
                yield self._error(failed.event)
            else:
                async for ev in self._read(resp):
                    yield ev
                timings.stream_ms = (time.perf_counter() - t0) * 1000
            if not self._tasks and parser.done and not parser.finished:
                self._start_enrichers()  # [DONE] without a finish_reason: still enrich
            async for ev in self._collect_enrichers():
                yield ev
            timings.total_ms = (time.perf_counter() - t0) * 1000
            self._done = True
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
            self._parser.add_error(
                ErrorEvent(code="cancelled", message="the stream was cancelled", stage="cancelled")
            )
            self._log.info("stream.cancelled")
            raise
        finally:
            await self._cleanup()

    async def _open(self) -> UpstreamResponse:
        body = orjson.dumps(self.request)

        async def attempt() -> UpstreamResponse:
            connect = self._bounded(self.timeouts.connect)
            try:
                # The connect timeout covers the socket; this one covers a server that
                # accepts the request and never sends its response headers.
                async with asyncio.timeout(self._bounded(self.timeouts.first_token)):
                    resp = await self._transport.open(self.url, self._headers, body, connect)
            except TimeoutError as exc:
                raise _OpenFailed(self._timeout_error(waiting_first=True)) from exc
            except TransportError as exc:
                raise _OpenFailed(
                    ErrorEvent(
                        code=exc.code, message=exc.message, retryable=exc.retryable, stage=exc.stage
                    )
                ) from exc
            except Exception as exc:  # a client library error we do not know: still typed
                raise _OpenFailed(
                    ErrorEvent(
                        code="connect_failed",
                        message=f"{type(exc).__name__}: {exc}",
                        retryable=False,
                        stage="connect",
                    )
                ) from exc
            if is_redirect(resp.status):
                location = resp.headers.get("Location")
                await resp.aclose()
                raise _OpenFailed(
                    ErrorEvent(
                        code="redirected",
                        message=redirect_message(resp.status, location, self.url),
                        retryable=False,
                        stage="http",
                        status=resp.status,
                    )
                )
            if resp.status >= 400:
                try:
                    async with asyncio.timeout(self._bounded(self.timeouts.idle)):
                        err_body = await resp.read(64 * 1024)
                except TimeoutError:
                    err_body = b""
                finally:
                    await resp.aclose()
                raise _OpenFailed(_http_error(resp.status, err_body, resp.headers))
            return resp

        def wait(state: RetryCallState) -> float:
            exc = state.outcome.exception() if state.outcome else None
            ra = exc.event.retry_after if isinstance(exc, _OpenFailed) else None
            backoff = random.uniform(0, min(_MAX_RETRY_WAIT, 0.25 * 2**state.attempt_number))
            delay = min(ra, _MAX_RETRY_WAIT) if ra is not None else backoff
            remaining = self._remaining()
            return delay if remaining is None else max(0.0, min(delay, remaining - 0.01))

        def log_retry(state: RetryCallState) -> None:
            exc = state.outcome.exception() if state.outcome else None
            if isinstance(exc, _OpenFailed):
                self._log.info("stream.retry", attempt=state.attempt_number, code=exc.event.code)

        if self.retries <= 0:
            first = await attempt()  # no retry policy to build on the TTFT path
            self._resp = first
            self.response_headers = first.headers
            return first

        def stop(state: RetryCallState) -> bool:
            if state.attempt_number >= self.retries + 1:
                return True
            # A Retry-After beyond the time left cannot be honoured: report the
            # rate limit (with retry_after) now instead of sleeping into a timeout.
            exc = state.outcome.exception() if state.outcome else None
            ra = exc.event.retry_after if isinstance(exc, _OpenFailed) else None
            remaining = self._remaining()
            return ra is not None and remaining is not None and ra > remaining

        retrying = AsyncRetrying(
            stop=stop,
            wait=wait,
            retry=retry_if_exception(lambda e: isinstance(e, _OpenFailed) and e.event.retryable),
            before_sleep=log_retry,
            reraise=True,
        )
        resp: UpstreamResponse = await retrying(attempt)
        self._resp = resp
        self.response_headers = resp.headers
        return resp

    async def _read(self, resp: UpstreamResponse) -> AsyncIterator[Event]:
        parser = self._parser
        timings = parser.builder.timings
        ctype = resp.content_type
        if ctype == "application/json":
            try:
                async with asyncio.timeout(self._bounded(self.timeouts.first_token)):
                    body = await resp.read(64 * 1024 * 1024)
            except TimeoutError:
                yield self._error(
                    ErrorEvent(
                        code="first_token_timeout",
                        message="no response body in time",
                        retryable=True,
                        stage="timeout",
                    )
                )
                return
            for ev in parser.feed_body(body):
                if type(ev) is TokenEvent and timings.ttft_ms is None:
                    self._first_token()
                yield self._note(ev)
            for ev in parser.close():
                yield self._note(ev)
            return
        if ctype != "text/event-stream":
            check = getattr(resp, "check_event_stream", None)
            try:
                if check is not None:
                    check()
                else:
                    raise TransportError(
                        f"expected Content-Type text/event-stream, got {ctype!r}",
                        code="unexpected_content_type",
                        stage="http",
                        retryable=False,
                    )
            except TransportError as exc:
                yield self._error(
                    ErrorEvent(
                        code=exc.code,
                        message=exc.message,
                        retryable=False,
                        stage="http",
                        status=resp.status,
                    )
                )
                return
        reads = resp.aiter_bytes().__aiter__()
        feed = parser.feed
        first_token = self.timeouts.first_token
        idle = self.timeouts.idle
        waiting_first = True
        while True:
            limit = self._bounded(first_token if waiting_first else idle)
            try:
                async with asyncio.timeout(limit):
                    data = await anext(reads)
            except StopAsyncIteration:
                break
            except TimeoutError:
                yield self._error(self._timeout_error(waiting_first))
                break
            except TransportError as exc:
                yield self._error(
                    ErrorEvent(
                        code=exc.code, message=exc.message, retryable=exc.retryable, stage=exc.stage
                    )
                )
                break
            except Exception as exc:  # an unexpected client-library error: typed, not raised
                yield self._error(
                    ErrorEvent(
                        code="connection_lost",
                        message=f"{type(exc).__name__}: {exc}",
                        retryable=True,
                        stage="http",
                    )
                )
                break
            for ev in feed(data):
                t = type(ev)
                if t is TokenEvent:
                    if waiting_first:
                        waiting_first = False
                        timings.ttft_ms = (time.perf_counter() - self._t0) * 1000
                        yield ev
                        # Logged after the consumer has the token: logging is not on the TTFT path.
                        self._log.info("stream.first_token", ttft_ms=round(timings.ttft_ms, 3))
                        continue
                elif t is FinishEvent or t is ErrorEvent:
                    self._note(ev)
                yield ev
            if parser.done:
                break  # [DONE]: don't wait for the server to close the connection
        for ev in parser.close():
            yield self._note(ev)

    # -- bookkeeping ---------------------------------------------------------------

    def _first_token(self) -> None:
        ttft = (time.perf_counter() - self._t0) * 1000
        self._parser.builder.timings.ttft_ms = ttft
        self._log.info("stream.first_token", ttft_ms=round(ttft, 3))

    def _note(self, ev: Event) -> Event:
        """Cold-path reactions to an event: start enrichers on finish, log errors."""
        if type(ev) is FinishEvent and ev.index == 0:
            self._parser.builder.timings.citations_ms = (time.perf_counter() - self._t0) * 1000
            self._log.info(
                "stream.finish", reason=ev.reason, citations=len(self._parser.builder.citations)
            )
            self._start_enrichers()
        elif type(ev) is ErrorEvent:
            ev.message = self._scrub(ev.message)
            self._log.info("stream.error", code=ev.code, stage=ev.stage, retryable=ev.retryable)
        return ev

    def _error(self, ev: ErrorEvent) -> ErrorEvent:
        """Record an error raised outside the byte stream and return it for yielding."""
        self._parser.add_error(ev)
        self._note(ev)
        return ev

    def _timeout_error(self, waiting_first: bool) -> ErrorEvent:
        remaining = self._remaining()
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

    def _remaining(self) -> float | None:
        if self.timeouts.total is None:
            return None
        return self.timeouts.total - (time.perf_counter() - self._t0)

    def _bounded(self, limit: float | None) -> float | None:
        remaining = self._remaining()
        if remaining is None:
            return limit
        remaining = max(remaining, 0.0)
        return remaining if limit is None else min(limit, remaining)

    def _scrub(self, text: str) -> str:
        return self._redact.text(text)

    # -- enrichers -----------------------------------------------------------------

    def _start_enrichers(self) -> None:
        if self._tasks or not self.after:
            return
        why = skip_reason(self._parser.builder, enrich_incomplete=self.enrich_incomplete)
        if why is not None:
            self._parser.builder.enrichment_skipped = why
            self._log.info("stream.enrichment_skipped", reason=why)
            return
        loop = asyncio.get_running_loop()
        self._results = {e.kind: loop.create_future() for e in self.after}
        ctx = EnrichContext(
            answer=self._parser.builder.snapshot(),
            request=self.request,
            response_headers=dict(self.response_headers),
            chunk_fields=dict(self._parser.builder.chunk_fields),
            wait_for=self._wait_for,
        )
        # Enrichers that wait for others start last: independent requests go out first.
        ordered = sorted(self.after, key=lambda e: len(getattr(e, "needs", ()) or ()))
        self._tasks = [
            asyncio.create_task(self._enrich(e, ctx), name=f"{self.stream_id}:{e.kind}")
            for e in ordered
        ]

    async def _wait_for(self, kind: str) -> Event | None:
        fut = self._results.get(kind)
        return None if fut is None else await asyncio.shield(fut)

    async def _enrich(self, enricher: Enricher, ctx: EnrichContext) -> Event | None:
        kind = enricher.kind
        started = time.perf_counter()
        result: Event | None
        try:
            async with asyncio.timeout(enricher.timeout):
                result = await enricher.enrich(ctx)
        except TimeoutError:
            result = ErrorEvent(
                code=f"{kind}_timeout",
                message=f"{kind} took longer than {enricher.timeout} s",
                retryable=True,
                stage=kind,
            )
        except StreamciteError as exc:
            result = ErrorEvent(
                code=exc.code,
                message=self._scrub(exc.message),
                retryable=exc.retryable,
                stage=kind,
                status=getattr(exc, "status", None),
                retry_after=getattr(exc, "retry_after", None),
            )
        except Exception as exc:
            result = ErrorEvent(
                code=f"{kind}_failed",
                message=self._scrub(f"{type(exc).__name__}: {exc}"),
                stage=kind,
            )
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise  # we are being cancelled: let it through
            # The enricher itself raised CancelledError: a failure like any other.
            result = ErrorEvent(
                code=f"{kind}_failed", message="the enricher was cancelled", stage=kind
            )
        elapsed = (time.perf_counter() - started) * 1000
        timings = self._parser.builder.timings
        if kind == "sources":
            timings.sources_ms = elapsed
        elif kind == "grounding":
            timings.grounding_ms = elapsed
        fut = self._results.get(kind)
        if fut is not None and not fut.done():
            fut.set_result(None if isinstance(result, ErrorEvent) else result)
        return result

    async def _collect_enrichers(self) -> AsyncIterator[Event]:
        for next_done in asyncio.as_completed(self._tasks):
            ev = await next_done
            if ev is None:
                continue
            if isinstance(ev, ErrorEvent):
                yield self._error(ev)
                continue
            self._parser.builder.add(ev)  # sources → answer.sources, grounding → answer.grounding
            yield ev
        self._tasks = []

    async def _cleanup(self) -> None:
        tasks, self._tasks = self._tasks, []
        for t in tasks:
            t.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        for fut in self._results.values():
            if not fut.done():
                fut.cancel()
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
