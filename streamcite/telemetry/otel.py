"""The OpenTelemetry implementation: one span per stream, a child span per enricher,
the GenAI client metrics and streamcite's own. Imported only by
:func:`streamcite.telemetry.instrument` (``opentelemetry-api`` must be installed).

Nothing here runs per token, and next to nothing before the request: the stream span
starts at the moment the request was sent, but the object is made when first needed (the
first enricher, the end, or a ``traceparent`` to send); it is finished from the final
answer, its events (first token, citations, first claim) stamped afterwards at the times
the pipeline measured. Attributes come from the
request's model and the answer (model, id, finish reason, usage, error codes): never a
header, a key, a URL's userinfo or query, nor the text of the question or answer.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, MutableMapping
from contextvars import Token
from typing import Any
from urllib.parse import urlsplit

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.metrics import Histogram, MeterProvider, get_meter
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, TracerProvider
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from streamcite.core.events import ErrorEvent
from streamcite.core.models import CitedAnswer
from streamcite.telemetry import conventions as cv

__all__ = ["EnricherSpan", "OtelTelemetry", "StreamSpan"]

_SCOPE = "streamcite"
_STREAM_STAGES = frozenset({"connect", "http", "sse", "chunk", "timeout", "cancelled"})
"""Error stages that fail the chat operation itself (enricher stages fail their own span)."""
_RECOVERABLE_STAGES = frozenset({"sse", "chunk"})
"""Stages of errors the stream can go past: they fail the span only if the answer was cut."""
_MAX_EXCEPTION_EVENTS = 16
_MAX_TEXT = 256
"""Longest string attribute taken from the upstream (a model name, a response id)."""
_MAX_METRIC_VALUES = 64
"""Distinct values of one metric attribute (models, error types); the rest are ``_OTHER``."""
_REQUEST_PARAMS = (
    ("max_tokens", "gen_ai.request.max_tokens"),
    ("max_completion_tokens", "gen_ai.request.max_tokens"),
    ("max_output_tokens", "gen_ai.request.max_tokens"),
    ("temperature", "gen_ai.request.temperature"),
    ("top_p", "gen_ai.request.top_p"),
)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("streamcite")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "0"


class OtelTelemetry:
    """The tracer, the meter's instruments and the options of one ``instrument()``."""

    def __init__(
        self,
        *,
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
        propagate: bool = False,
    ) -> None:
        version = _version()
        self.tracer = trace.get_tracer(_SCOPE, version, tracer_provider=tracer_provider)
        meter = get_meter(_SCOPE, version, meter_provider=meter_provider)
        self.propagate = propagate
        self._seen: dict[str, set[str]] = {}
        self._propagator = TraceContextTextMapPropagator()
        self.duration = meter.create_histogram(
            cv.METRIC_DURATION,
            unit="s",
            description="GenAI operation duration (request sent to done).",
            explicit_bucket_boundaries_advisory=cv.DURATION_BUCKETS,
        )
        self.tokens = meter.create_histogram(
            cv.METRIC_TOKEN_USAGE,
            unit="{token}",
            description="Number of input and output tokens used.",
            explicit_bucket_boundaries_advisory=cv.TOKEN_BUCKETS,
        )
        self.ttfc = meter.create_histogram(
            cv.METRIC_TIME_TO_FIRST_CHUNK,
            unit="s",
            description="Request sent to the first answer token.",
            explicit_bucket_boundaries_advisory=cv.TTFT_BUCKETS,
        )
        self.latencies: dict[str, Histogram] = {
            what: meter.create_histogram(
                name,
                unit="s",
                description=f"Request sent to {what.replace('_', ' ')}.",
                explicit_bucket_boundaries_advisory=cv.DURATION_BUCKETS,
            )
            for what, name in cv.STREAMCITE_METRICS.items()
        }

    def stream(
        self,
        *,
        stream_id: str,
        request: Mapping[str, Any],
        url: str,
        t0: float,
        api: str = "chat",
    ) -> StreamSpan:
        """The span of one stream to ``url`` whose clock (``perf_counter``) started at
        ``t0`` (made when first needed; its start time is ``t0``)."""
        return StreamSpan(self, stream_id, request, url, t0, api)

    def bounded(self, key: str, value: str) -> str:
        """``value`` as a metric attribute: the first 64 distinct values of ``key`` as they
        are, later ones ``_OTHER`` (an upstream must not make a series per response)."""
        seen = self._seen.setdefault(key, set())
        if value in seen:
            return value
        if len(seen) < _MAX_METRIC_VALUES:
            seen.add(value)
            return value
        return "_OTHER"

    def inject(self, span: Span, headers: MutableMapping[str, str]) -> None:
        """W3C ``traceparent`` (and ``tracestate``) of ``span`` into ``headers``; no baggage
        (it may hold the application's data and the upstream is a third party)."""
        self._propagator.inject(headers, context=trace.set_span_in_context(span))


class StreamSpan:
    """The span of one stream (``chat {model}``, kind CLIENT) and its metrics."""

    __slots__ = (
        "_api", "_attrs", "_context", "_request", "_span", "_url", "_wall0", "done_at",
        "stream_id", "t0", "tel",
    )  # fmt: skip

    def __init__(
        self,
        tel: OtelTelemetry,
        stream_id: str,
        request: Mapping[str, Any],
        url: str,
        t0: float,
        api: str,
    ) -> None:
        # Only what the span will need: it is made later (at the first enricher, the end,
        # or the traceparent), so nothing but these stores runs before the request is sent.
        self.tel = tel
        self.t0 = t0
        self.stream_id = stream_id
        self._api = api
        self._request = request
        self._url = url
        self._span: Span | None = None
        self._context = otel_context.get_current()  # the caller's span is the parent
        self._attrs: dict[str, Any] = {}
        # Wall-clock nanoseconds of t0: the pipeline's perf_counter times map onto it.
        self._wall0 = time.time_ns() - int((time.perf_counter() - t0) * 1e9)
        self.done_at: dict[str, float] = {}
        """Kind of enricher → seconds after t0 when its result came (not its error)."""

    @property
    def span(self) -> Span:
        """The stream's span, started (at ``t0``) on first use."""
        if self._span is None:
            self._span = self._start()
        return self._span

    def _start(self) -> Span:
        request = self._request
        parts = urlsplit(self._url)
        host = parts.hostname  # never the userinfo, path or query
        port = parts.port or (443 if parts.scheme == "https" else 80)
        model = request.get("model")
        provider = cv.provider_name(host, self._api)
        attrs: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": provider,
            "gen_ai.system": provider,
        }
        if isinstance(model, str):
            attrs["gen_ai.request.model"] = model[:_MAX_TEXT]
        if host:
            attrs["server.address"] = host
        attrs["server.port"] = port
        self._attrs = dict(attrs)  # the metrics' attributes (low cardinality)
        if isinstance(model, str):  # an application may forward its clients' choice
            self._attrs["gen_ai.request.model"] = self.tel.bounded(
                "request.model", model[:_MAX_TEXT]
            )
        attrs["streamcite.stream_id"] = self.stream_id
        attrs["streamcite.api"] = self._api
        for key, name in _REQUEST_PARAMS:
            value = request.get(key)
            if isinstance(value, int | float) and not isinstance(value, bool):
                attrs[name] = value
        return self.tel.tracer.start_span(
            f"chat {model}" if isinstance(model, str) and model else "chat",
            context=self._context,
            kind=SpanKind.CLIENT,
            attributes=attrs,
            start_time=self._wall0,
        )

    def inject(self, headers: MutableMapping[str, str]) -> None:
        """Add ``traceparent`` to the upstream request's headers when propagation is on."""
        if self.tel.propagate:
            self.tel.inject(self.span, headers)

    def enricher(self, kind: str, enricher: object) -> EnricherSpan:
        """Start the child span of one enricher (call inside the enricher's task)."""
        return EnricherSpan(self, kind, enricher)

    def _ns(self, ms: float) -> int:
        return self._wall0 + int(ms * 1e6)

    def end(self, answer: CitedAnswer) -> None:
        """Set the response attributes and events from the final answer; end the span and
        record the metrics. Called once, after the enrichers' spans ended."""
        span, timings = self.span, answer.timings
        attrs: dict[str, Any] = {
            "streamcite.citations.count": len(answer.citations),
            "streamcite.complete": answer.complete,
        }
        if answer.model:
            attrs["gen_ai.response.model"] = answer.model[:_MAX_TEXT]
        if answer.id:
            attrs["gen_ai.response.id"] = answer.id[:_MAX_TEXT]
        if answer.finish_reason:
            attrs["gen_ai.response.finish_reasons"] = [answer.finish_reason]
        usage = answer.usage
        if usage is not None:
            if usage.prompt_tokens is not None:
                attrs["gen_ai.usage.input_tokens"] = usage.prompt_tokens
            if usage.completion_tokens is not None:
                attrs["gen_ai.usage.output_tokens"] = usage.completion_tokens
        if timings.ttft_ms is not None:
            span.add_event(
                "streamcite.first_token",
                {"streamcite.ttft_ms": timings.ttft_ms},
                timestamp=self._ns(timings.ttft_ms),
            )
        if timings.citations_ms is not None and answer.citations:
            span.add_event(
                "streamcite.citations",
                {
                    "streamcite.citations.count": len(answer.citations),
                    "streamcite.time_to_citations_ms": timings.citations_ms,
                },
                timestamp=self._ns(timings.citations_ms),
            )
        first_claim = getattr(timings, "first_claim_ms", None)
        if first_claim is not None:
            span.add_event("streamcite.first_claim", timestamp=self._ns(first_claim))
        error_type = self._errors(answer)
        if error_type is not None:
            attrs["error.type"] = error_type = error_type[:_MAX_TEXT]
            span.set_status(Status(StatusCode.ERROR, error_type))
        span.set_attributes(attrs)
        end_ms = timings.total_ms
        if end_ms is None:
            end_ms = (time.perf_counter() - self.t0) * 1000
        span.end(end_time=self._ns(end_ms))
        self._record(answer, end_ms, error_type)

    def _errors(self, answer: CitedAnswer) -> str | None:
        """One ``exception`` event per error of the chat operation; the first one's code."""
        first: str | None = None
        for n, err in enumerate(answer.errors):
            if not isinstance(err, ErrorEvent) or err.stage not in _STREAM_STAGES:
                continue  # an enricher's error is on the enricher's span
            if n < _MAX_EXCEPTION_EVENTS:
                self.span.add_event("exception", _error_attributes(err))
            # A bad chunk the stream went past (the answer complete) is an event only.
            failed = not (answer.complete and err.stage in _RECOVERABLE_STAGES)
            if first is None and failed:
                first = err.code
        return first

    def _record(self, answer: CitedAnswer, end_ms: float, error_type: str | None) -> None:
        tel, timings = self.tel, answer.timings
        attrs = dict(self._attrs)
        if answer.model:
            attrs["gen_ai.response.model"] = tel.bounded("model", answer.model[:_MAX_TEXT])
        if error_type is not None:
            attrs["error.type"] = tel.bounded("error.type", error_type[:_MAX_TEXT])
        tel.duration.record(end_ms / 1000, attrs)
        usage = answer.usage
        if usage is not None:
            if usage.prompt_tokens is not None:
                tel.tokens.record(usage.prompt_tokens, {**attrs, "gen_ai.token.type": "input"})
            if usage.completion_tokens is not None:
                tel.tokens.record(usage.completion_tokens, {**attrs, "gen_ai.token.type": "output"})
        if timings.ttft_ms is not None:
            tel.ttfc.record(timings.ttft_ms / 1000, attrs)
        lat = tel.latencies
        if timings.citations_ms is not None and answer.citations:
            lat["citations"].record(timings.citations_ms / 1000, attrs)
        for kind in ("sources", "grounding"):
            at = self.done_at.get(kind)
            if at is not None:
                lat[kind].record(at, attrs)
        first_claim = getattr(timings, "first_claim_ms", None)
        if first_claim is not None:
            lat["first_claim"].record(first_claim / 1000, attrs)


class EnricherSpan:
    """The child span of one enricher: ``enrich {kind}``, its retries, its outcome."""

    __slots__ = ("_token", "kind", "parent", "retries", "span")

    def __init__(self, parent: StreamSpan, kind: str, enricher: object) -> None:
        self.parent = parent
        self.kind = kind
        self.retries = 0
        self.span = parent.tel.tracer.start_span(
            f"enrich {kind}",
            context=trace.set_span_in_context(parent.span),
            kind=SpanKind.INTERNAL,  # its HTTP calls, if instrumented, are the CLIENT spans
            attributes={
                "streamcite.enricher.kind": kind,
                "streamcite.enricher.class": type(enricher).__name__,
                "streamcite.stream_id": parent.stream_id,
            },
        )
        # The enricher's own HTTP client spans (an instrumented aiohttp) nest under it.
        self._token: Token[Context] | None = otel_context.attach(
            trace.set_span_in_context(self.span)
        )

    def retry(self, attempt: int, code: str | None, status: int | None, sleep_s: float) -> None:
        self.retries += 1
        attrs: dict[str, Any] = {
            "streamcite.retry.attempt": attempt,
            "streamcite.retry.sleep_s": sleep_s,
        }
        if code is not None:
            attrs["error.type"] = str(code)[:_MAX_TEXT]
        if status is not None:
            attrs["http.response.status_code"] = status
        self.span.add_event("retry", attrs)

    def end(self, result: object, *, cancelled: bool = False) -> None:
        """End the span with the enricher's result (an event, an error event, or None)."""
        span = self.span
        span.set_attribute("streamcite.enricher.retries", self.retries)
        if cancelled:
            span.set_attribute("error.type", "cancelled")
            span.set_status(Status(StatusCode.ERROR, "cancelled"))
        elif isinstance(result, ErrorEvent):
            code = result.code[:_MAX_TEXT]
            span.add_event("exception", _error_attributes(result))
            span.set_attribute("error.type", code)
            span.set_status(Status(StatusCode.ERROR, code))
        else:
            span.set_status(Status(StatusCode.OK))
            if result is not None:  # a result: its latency is recorded (time_to_{kind})
                self.parent.done_at[self.kind] = time.perf_counter() - self.parent.t0
        token, self._token = self._token, None
        if token is not None:
            otel_context.detach(token)
        span.end()


_QUOTING = frozenset(
    {
        "bad_annotation",
        "bad_chunk",
        "bad_citation_span",
        "bad_citations",
        "bad_content_part",
        "bad_tool_arguments",
        "bad_tool_call",
        "citation_too_large",
        "invalid_json",
        "lone_surrogate",
        "unknown_event",
        "wrong_dialect",
    }
)
"""Codes of the faults streamcite reports about a malformed upstream event: their
messages quote the event, which may hold the answer's (or the question's) text."""


def _error_message(err: ErrorEvent) -> str:
    """The ``exception.message`` of a typed error: the scrubbed message, but no quote of
    upstream content (docs/observability.md: no question or answer text in telemetry)."""
    if err.code in _QUOTING:
        return f"{err.code}: an upstream event could not be read as expected ({err.stage})"
    return err.message[:4096]


def _error_attributes(err: ErrorEvent) -> dict[str, Any]:
    """The ``exception`` event of a typed error: its code, stage and (scrubbed) message."""
    attrs: dict[str, Any] = {
        "exception.type": err.code[:_MAX_TEXT],
        "exception.message": _error_message(err),
        "error.type": err.code[:_MAX_TEXT],
        "streamcite.error.stage": err.stage,
        "streamcite.error.retryable": err.retryable,
    }
    status = getattr(err, "status", None)
    if status is not None:
        attrs["http.response.status_code"] = status
    return attrs
