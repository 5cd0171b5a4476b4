"""OpenTelemetry spans and metrics of real streams, read with the SDK's in-memory
exporter and reader: the embedded backend over loopback, its fault injection, the
Wikit, Google and local enrichers."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from aiohttp import web
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from streamcite import stream_chat, telemetry
from streamcite.core.events import ErrorEvent
from streamcite.core.models import CitedAnswer
from streamcite.enrich._http import RetryPolicy
from streamcite.enrich.google import GoogleGrounding
from streamcite.enrich.wikit import WikitSources
from streamcite.grounding.checker import LocalGrounding
from streamcite.local.server import MODEL, BackendConfig, LocalBackend
from streamcite.pipeline import Timeouts
from streamcite.telemetry import conventions as cv

try:
    from _upstream import chunk, full_stream
except ImportError:  # tests/ imported as a package
    from tests._upstream import chunk, full_stream

QUESTION = "How many days a week can I work from home?"
GOOGLE_CONFIG = "projects/p/locations/global/groundingConfigs/default_grounding_config"
FAST = Timeouts(connect=5.0, first_token=1.0, idle=0.5, total=20.0)


@dataclass
class Otel:
    spans: InMemorySpanExporter
    metrics: InMemoryMetricReader

    def finished(self) -> list[ReadableSpan]:
        return list(self.spans.get_finished_spans())

    def one(self, name: str) -> ReadableSpan:
        found = [s for s in self.finished() if s.name == name]
        assert len(found) == 1, [s.name for s in self.finished()]
        return found[0]

    def points(self, metric: str) -> list[HistogramDataPoint]:
        data = self.metrics.get_metrics_data()
        out: list[HistogramDataPoint] = []
        if data is None:
            return out
        for rm in data.resource_metrics:
            for sm in rm.scope_metrics:
                for m in sm.metrics:
                    if m.name == metric:
                        out += [p for p in m.data.data_points if isinstance(p, HistogramDataPoint)]
        return out


@pytest.fixture
def otel() -> Iterator[Otel]:
    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    telemetry.instrument(tracer_provider=tracer_provider, meter_provider=meter_provider)
    try:
        yield Otel(spans, reader)
    finally:
        telemetry.uninstrument()
        meter_provider.shutdown()


@pytest.fixture
async def backend() -> AsyncIterator[LocalBackend]:
    async with LocalBackend(BackendConfig()) as b:
        yield b


@pytest.fixture
def unused_port() -> int:
    """A loopback port nothing listens on (bound, then released, by the OS)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def body(**extra: Any) -> dict[str, Any]:
    return {
        "model": MODEL,
        "messages": [{"role": "user", "content": QUESTION}],
        "stream": True,
        "stream_options": {"include_usage": True},
        **extra,
    }


def fault(spec: str) -> dict[str, str]:
    return {"X-Streamcite-Fault": spec} if spec else {}


async def run(backend: LocalBackend, spec: str = "", **kwargs: Any) -> CitedAnswer:
    kwargs.setdefault("timeouts", FAST)
    stream = stream_chat(body(), base_url=backend.base_url, headers=fault(spec), **kwargs)
    async with stream:
        return await stream.until_done()


# --------------------------------------------------------------------------- the stream span


async def test_stream_span_follows_the_genai_conventions(otel: Otel, backend: LocalBackend) -> None:
    answer = await run(backend, stream_id="t-conv")
    span = otel.one(f"chat {MODEL}")
    a = dict(span.attributes or {})
    assert span.kind is SpanKind.CLIENT
    assert a["gen_ai.operation.name"] == "chat"
    assert a["gen_ai.provider.name"] == a["gen_ai.system"] == "openai"
    assert a["gen_ai.request.model"] == MODEL
    assert a["gen_ai.response.model"] == answer.model == MODEL
    assert a["gen_ai.response.id"] == answer.id and answer.id
    assert tuple(a["gen_ai.response.finish_reasons"]) == ("stop",)
    assert answer.usage is not None
    assert a["gen_ai.usage.input_tokens"] == answer.usage.prompt_tokens
    assert a["gen_ai.usage.output_tokens"] == answer.usage.completion_tokens
    assert a["server.address"] == "127.0.0.1" and a["server.port"] == backend.port
    assert a["streamcite.stream_id"] == "t-conv"
    assert a["streamcite.citations.count"] == len(answer.citations) > 0
    assert span.status.status_code is StatusCode.UNSET
    assert "error.type" not in a

    events = {e.name: e for e in span.events}
    assert span.start_time is not None and span.end_time is not None
    first = events["streamcite.first_token"]
    assert (first.timestamp - span.start_time) / 1e6 == pytest.approx(
        answer.timings.ttft_ms, abs=0.01
    )
    cites = events["streamcite.citations"]
    assert cites.attributes is not None
    assert cites.attributes["streamcite.citations.count"] == len(answer.citations)
    assert (cites.timestamp - span.start_time) / 1e6 == pytest.approx(
        answer.timings.citations_ms, abs=0.01
    )
    assert answer.timings.total_ms is not None
    assert (span.end_time - span.start_time) / 1e6 == pytest.approx(
        answer.timings.total_ms, abs=0.01
    )


async def test_the_callers_span_is_the_parent(otel: Otel, backend: LocalBackend) -> None:
    tracer = telemetry_tracer(otel)
    with tracer.start_as_current_span("handler") as handler:
        await run(backend, after=[LocalGrounding()])
    chat, check = otel.one(f"chat {MODEL}"), otel.one("enrich grounding")
    assert chat.parent is not None and chat.parent.span_id == handler.get_span_context().span_id
    assert check.parent is not None and check.parent.span_id == chat.context.span_id


def telemetry_tracer(otel: Otel) -> Any:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(otel.spans))
    return provider.get_tracer("app")


@pytest.mark.parametrize(
    ("spec", "code"),
    [
        ("status=429", "rate_limited"),
        ("status=500", "upstream_unavailable"),
        ("status=401", "unauthorized"),
        ("drop_after=2", "connection_lost"),
        ("error_at=2", "upstream_overloaded"),
        ("stall_after=2", "idle_timeout"),
        ("first_token_delay=3", "first_token_timeout"),
        ("provider_error=503", "503"),
    ],
)
async def test_each_fault_sets_error_status_and_an_exception_event(
    otel: Otel, backend: LocalBackend, spec: str, code: str
) -> None:
    answer = await run(backend, spec)
    assert answer.errors and answer.errors[0].code == code
    span = otel.one(f"chat {MODEL}")
    assert span.status.status_code is StatusCode.ERROR
    assert span.status.description == code
    assert (span.attributes or {})["error.type"] == code
    exceptions = [e for e in span.events if e.name == "exception"]
    assert [(e.attributes or {})["error.type"] for e in exceptions] == [
        e.code for e in answer.errors if isinstance(e, ErrorEvent)
    ]
    first = exceptions[0].attributes or {}
    assert first["exception.type"] == code
    assert first["streamcite.error.stage"] == answer.errors[0].stage
    # the duration metric carries the error type too
    (point,) = [
        p for p in otel.points(cv.METRIC_DURATION) if p.attributes.get("error.type") == code
    ]
    assert point.count == 1


async def test_a_skipped_bad_chunk_is_an_event_not_a_failure(
    otel: Otel, backend: LocalBackend
) -> None:
    answer = await run(backend, "malformed_at=2")
    assert answer.complete and answer.errors[0].code == "invalid_json"
    span = otel.one(f"chat {MODEL}")
    assert span.status.status_code is StatusCode.UNSET
    assert [(e.attributes or {})["error.type"] for e in span.events if e.name == "exception"] == [
        "invalid_json"
    ]


# --------------------------------------------------------------------------- enricher spans


async def test_each_enricher_is_a_child_span(otel: Otel, backend: LocalBackend) -> None:
    wikit = WikitSources("app", "org", base_url=backend.root_url)
    google = GoogleGrounding(GOOGLE_CONFIG, token="local", endpoint=backend.root_url)
    answer = await run(backend, after=[wikit, google])
    assert answer.sources and answer.grounding is not None and not answer.errors
    chat = otel.one(f"chat {MODEL}")
    sources, grounding = otel.one("enrich sources"), otel.one("enrich grounding")
    for child, cls in ((sources, "WikitSources"), (grounding, "GoogleGrounding")):
        assert child.parent is not None and child.parent.span_id == chat.context.span_id
        assert child.context.trace_id == chat.context.trace_id
        assert child.status.status_code is StatusCode.OK
        attrs = child.attributes or {}
        assert attrs["streamcite.enricher.class"] == cls
        assert attrs["streamcite.enricher.retries"] == 0
        assert child.end_time is not None and chat.end_time is not None
        assert child.end_time <= chat.end_time
    assert len(otel.points("streamcite.client.time_to_sources")) == 1
    assert len(otel.points("streamcite.client.time_to_grounding")) == 1


async def test_local_checker_gets_a_span_too(otel: Otel, backend: LocalBackend) -> None:
    answer = await run(backend, after=[LocalGrounding()])
    assert answer.grounding is not None
    span = otel.one("enrich grounding")
    assert (span.attributes or {})["streamcite.enricher.class"] == "LocalGrounding"
    assert span.status.status_code is StatusCode.OK
    # live claims: the first one is an event of the stream's span and a latency metric
    first_claim = answer.timings.first_claim_ms
    assert answer.claims and first_claim is not None
    chat = otel.one(f"chat {MODEL}")
    assert chat.start_time is not None
    (event,) = [e for e in chat.events if e.name == "streamcite.first_claim"]
    assert (event.timestamp - chat.start_time) / 1e6 == pytest.approx(first_claim, abs=0.01)
    (point,) = otel.points("streamcite.client.time_to_first_claim")
    assert point.sum == pytest.approx(first_claim / 1000, abs=1e-6)


async def test_azure_groundedness_gets_its_span_with_no_code_of_its_own(
    otel: Otel, backend: LocalBackend
) -> None:
    from streamcite.enrich.azure import AzureGroundedness

    azure = AzureGroundedness(backend.root_url, api_key="azure-" + SECRET_KEY, retries=0)
    answer = await run(backend, after=[azure])
    assert answer.grounding is not None, answer.errors
    span = otel.one("enrich grounding")
    assert (span.attributes or {})["streamcite.enricher.class"] == "AzureGroundedness"
    assert span.status.status_code is StatusCode.OK
    assert span.parent is not None
    assert span.parent.span_id == otel.one(f"chat {MODEL}").context.span_id
    assert not [v for v in _all_values(otel) if SECRET_KEY in v]


async def test_enricher_retries_and_failure_are_on_its_span(
    otel: Otel, backend: LocalBackend
) -> None:
    wikit = WikitSources(
        "app",
        "org",
        base_url=backend.root_url,
        # Three attempts, each with all the time it needs: with a 0.6 s deadline the last
        # attempt could start with 1 ms left on a loaded machine and fail as "timeout".
        retry=RetryPolicy(deadline=15.0, request_timeout=5.0, max_attempts=3, backoff_base=0.01),
        timeout=20.0,
        headers=fault("sources_404_until=1000"),
    )
    answer = await run(backend, after=[wikit])
    assert [e.code for e in answer.errors] == ["wikit_not_found"]
    span = otel.one("enrich sources")
    attrs = span.attributes or {}
    retries = [e for e in span.events if e.name == "retry"]
    assert attrs["streamcite.enricher.retries"] == len(retries) >= 1
    assert all((e.attributes or {})["http.response.status_code"] == 404 for e in retries)
    assert span.status.status_code is StatusCode.ERROR
    assert attrs["error.type"] == "wikit_not_found"
    (exc,) = [e for e in span.events if e.name == "exception"]
    assert (exc.attributes or {})["error.type"] == "wikit_not_found"
    # an enricher's failure is not the chat operation's, nor a latency to record
    assert otel.one(f"chat {MODEL}").status.status_code is StatusCode.UNSET
    assert otel.points("streamcite.client.time_to_sources") == []


async def test_enricher_timeout_is_its_error_type(otel: Otel, backend: LocalBackend) -> None:
    wikit = WikitSources(
        "app", "org", base_url=backend.root_url, timeout=0.2, headers=fault("sources_delay=2")
    )
    answer = await run(backend, after=[wikit])
    assert [e.code for e in answer.errors] == ["sources_timeout"]
    span = otel.one("enrich sources")
    assert span.status.status_code is StatusCode.ERROR
    assert (span.attributes or {})["error.type"] == "sources_timeout"


async def test_unreachable_grounding_retries_then_fails_on_its_span(
    otel: Otel, backend: LocalBackend, unused_port: int
) -> None:
    google = GoogleGrounding(
        GOOGLE_CONFIG,
        token="local",
        endpoint=f"http://127.0.0.1:{unused_port}",
        deadline=0.5,
        request_timeout=0.2,
    )
    answer = await run(backend, after=[google])
    (err,) = answer.errors
    span = otel.one("enrich grounding")
    assert span.status.status_code is StatusCode.ERROR
    assert (span.attributes or {})["error.type"] == err.code
    assert (span.attributes or {})["streamcite.enricher.retries"] >= 1


async def test_a_cancelled_stream_ends_its_spans_as_cancelled(
    otel: Otel, backend: LocalBackend
) -> None:
    started = asyncio.Event()

    class Slow:
        kind, timeout, needs = "sources", 30.0, ()

        async def enrich(self, ctx: Any) -> None:
            started.set()
            await asyncio.Event().wait()  # until cancelled

    async def consume() -> None:
        await run(backend, after=[Slow()])

    task = asyncio.create_task(consume())
    await asyncio.wait_for(started.wait(), 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    chat, slow = otel.one(f"chat {MODEL}"), otel.one("enrich sources")
    assert (slow.attributes or {})["error.type"] == "cancelled"
    assert slow.status.status_code is StatusCode.ERROR
    assert chat.status.status_code is StatusCode.ERROR
    assert (chat.attributes or {})["error.type"] == "cancelled"
    assert slow.parent is not None and slow.parent.span_id == chat.context.span_id


# --------------------------------------------------------------------------- metrics


async def test_metrics_have_the_conventions_buckets(otel: Otel, backend: LocalBackend) -> None:
    answer = await run(backend)
    assert answer.usage is not None and answer.timings.ttft_ms is not None
    (duration,) = otel.points(cv.METRIC_DURATION)
    assert tuple(duration.explicit_bounds) == cv.DURATION_BUCKETS
    assert duration.attributes["gen_ai.operation.name"] == "chat"
    assert duration.attributes["gen_ai.request.model"] == MODEL
    assert "streamcite.stream_id" not in duration.attributes  # no per-stream cardinality
    assert answer.timings.total_ms is not None
    assert duration.sum == pytest.approx(answer.timings.total_ms / 1000, abs=1e-5)

    tokens = {p.attributes["gen_ai.token.type"]: p for p in otel.points(cv.METRIC_TOKEN_USAGE)}
    assert tuple(tokens["input"].explicit_bounds) == cv.TOKEN_BUCKETS
    assert tokens["input"].sum == answer.usage.prompt_tokens
    assert tokens["output"].sum == answer.usage.completion_tokens

    (ttfc,) = otel.points(cv.METRIC_TIME_TO_FIRST_CHUNK)
    assert tuple(ttfc.explicit_bounds) == cv.TTFT_BUCKETS
    assert ttfc.sum == pytest.approx(answer.timings.ttft_ms / 1000, abs=1e-6)
    (cites,) = otel.points("streamcite.client.time_to_citations")
    assert answer.timings.citations_ms is not None
    assert cites.sum == pytest.approx(answer.timings.citations_ms / 1000, abs=1e-6)


# --------------------------------------------------------------------------- propagation, secrets


def _echo_app(seen: list[dict[str, str]]) -> web.Application:
    async def handle(request: web.Request) -> web.StreamResponse:
        seen.append(dict(request.headers))
        await request.read()
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        for part in full_stream():
            await resp.write(part)
        return resp

    app = web.Application()
    app.router.add_post("/v1/chat/completions", handle)
    return app


@pytest.mark.parametrize("propagate", [True, False])
async def test_traceparent_is_sent_only_when_asked(otel: Otel, serve: Any, propagate: bool) -> None:
    telemetry.instrument(
        tracer_provider=_provider(otel.spans),
        propagate=propagate,
    )
    seen: list[dict[str, str]] = []
    url = await serve(_echo_app(seen))
    async with stream_chat(body(model="m"), base_url=url + "/v1") as stream:
        await stream.until_done()
    span = otel.one("chat m")
    headers = {k.lower(): v for k, v in seen[0].items()}
    if propagate:
        trace_id = format(span.context.trace_id, "032x")
        span_id = format(span.context.span_id, "016x")
        assert headers["traceparent"].startswith(f"00-{trace_id}-{span_id}-")
        assert "baggage" not in headers
    else:
        assert "traceparent" not in headers


def _provider(exporter: InMemorySpanExporter) -> TracerProvider:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider


SECRET_KEY = "sk-SECRET-key-0123456789"
SECRET_PW = "pw-SECRET-2718"
SECRET_HDR = "hdr-SECRET-31415"


def _all_values(otel: Otel) -> list[str]:
    out: list[str] = []
    for span in otel.finished():
        out.append(span.name)
        out += [f"{k}={v}" for k, v in (span.attributes or {}).items()]
        out.append(str(span.status.description))
        for ev in span.events:
            out.append(ev.name)
            out += [f"{k}={v}" for k, v in (ev.attributes or {}).items()]
    data = otel.metrics.get_metrics_data()
    if data is not None:
        out.append(data.to_json())
    return out


@pytest.mark.parametrize("spec", ["", "status=401", "status=500", "drop_after=1"])
async def test_secrets_never_in_spans_or_metrics(
    otel: Otel, backend: LocalBackend, spec: str
) -> None:
    base = backend.base_url.replace("http://", f"http://user:{SECRET_PW}@")
    wikit = WikitSources(
        "app", "org", api_key=SECRET_KEY, base_url=backend.root_url, deadline=0.5,
        headers={"X-Extra": SECRET_HDR},
    )  # fmt: skip
    stream = stream_chat(
        body(),
        base_url=base,
        api_key=SECRET_KEY,
        headers={**fault(spec), "X-Tenant-Token": SECRET_HDR},
        after=[wikit],
        timeouts=FAST,
    )
    async with stream:
        await stream.until_done()
    values = _all_values(otel)
    assert len(otel.finished()) >= 1
    for secret in (SECRET_KEY, SECRET_PW, SECRET_HDR):
        assert not [v for v in values if secret in v], secret


async def test_an_upstream_cannot_grow_the_metric_series_or_the_attributes(
    otel: Otel, serve: Any
) -> None:
    served = 0

    async def handle(request: web.Request) -> web.StreamResponse:
        nonlocal served
        served += 1
        await request.read()
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        model = f"model-{served}-" + "x" * 5000  # a new, huge model name every time
        await resp.write(chunk("Hi", model=model, id="id-" + "y" * 5000))
        await resp.write(chunk(None, "stop", model=model))
        await resp.write(b"data: [DONE]\n\n")
        return resp

    app = web.Application()
    app.router.add_post("/v1/chat/completions", handle)
    url = await serve(app)
    for _ in range(80):
        async with stream_chat(body(model="m"), base_url=url + "/v1") as stream:
            await stream.until_done()
    models = {p.attributes["gen_ai.response.model"] for p in otel.points(cv.METRIC_DURATION)}
    assert len(models) == 65 and "_OTHER" in models
    assert max(len(m) for m in models) <= 256
    for span in otel.finished():
        for value in (span.attributes or {}).values():
            assert not isinstance(value, str) or len(value) <= 256


# --------------------------------------------------------------------------- off by default


async def test_off_means_no_span(backend: LocalBackend) -> None:
    exporter = InMemorySpanExporter()
    provider = _provider(exporter)
    telemetry.instrument(tracer_provider=provider)
    telemetry.uninstrument()
    assert not telemetry.is_instrumented()
    await run(backend, after=[LocalGrounding()])
    assert exporter.get_finished_spans() == ()


def test_pipeline_does_not_import_opentelemetry() -> None:
    probe = (
        "import sys, streamcite.pipeline, streamcite.enrich.wikit, streamcite.telemetry; "
        "print([m for m in sys.modules if m.startswith('opentelemetry')])"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "[]"


def test_provider_names() -> None:
    assert cv.provider_name("api.openai.com") == "openai"
    assert cv.provider_name("myres.openai.azure.com") == "azure.ai.openai"
    assert cv.provider_name("api.anthropic.com", "chat") == "anthropic"
    assert cv.provider_name("generativelanguage.googleapis.com") == "gcp.gemini"
    assert cv.provider_name("127.0.0.1", "cohere") == "cohere"
    assert cv.provider_name("127.0.0.1") == "openai"
    assert cv.provider_name("notapi.openai.com.evil.example") == "openai"  # by the API, not host


def test_the_example_prints_the_span_tree_and_the_metrics() -> None:
    from pathlib import Path

    example = Path(__file__).resolve().parent.parent / "examples" / "otel_tracing.py"
    out = subprocess.run(
        [sys.executable, str(example)], capture_output=True, text=True, check=True, timeout=120
    ).stdout
    assert f"chat {MODEL}" in out and "  enrich sources" in out and "  enrich grounding" in out
    assert "event streamcite.first_token" in out
    assert "gen_ai.client.operation.time_to_first_chunk" in out
    assert "streamcite.client.time_to_grounding" in out


_ENV_PROBE = """
import asyncio, sys
from streamcite import stream_chat, telemetry
from streamcite.local.server import MODEL, LocalBackend
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

# set up after streamcite was imported, as opentelemetry-instrument may do
exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)


async def main():
    async with LocalBackend() as backend:
        request = {"model": MODEL, "messages": [{"role": "user", "content": "remote work?"}]}
        async with stream_chat({**request, "stream": True}, base_url=backend.base_url) as s:
            await s.until_done()

asyncio.run(main())
print(telemetry.is_instrumented(), [s.name for s in exporter.get_finished_spans()])
"""


@pytest.mark.parametrize(("value", "traced"), [("1", True), ("propagate", True), ("", False)])
def test_the_environment_turns_it_on(value: str, traced: bool) -> None:
    import os

    env = {**os.environ, "STREAMCITE_OTEL": value}
    out = subprocess.run(
        [sys.executable, "-c", _ENV_PROBE], env=env, capture_output=True, text=True,
        check=True, timeout=120,
    ).stdout.strip()  # fmt: skip
    assert out == (f"True ['chat {MODEL}']" if traced else "False []")


def test_the_environment_without_opentelemetry_warns_and_stays_off() -> None:
    import os

    probe = (
        "import sys, warnings; sys.modules['opentelemetry'] = None; "
        "warnings.simplefilter('always'); "
        "from streamcite import telemetry; import streamcite.pipeline; "
        "print(telemetry.is_instrumented())"
    )
    env = {**os.environ, "STREAMCITE_OTEL": "1"}
    done = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True,
        timeout=60,
    )  # fmt: skip
    assert done.stdout.strip() == "False"
    assert "STREAMCITE_OTEL is set but OpenTelemetry is not installed" in done.stderr


SECRET = "The secret launch code is 7421"


async def test_a_malformed_chunk_puts_no_answer_text_in_telemetry(otel: Otel) -> None:
    # Fault messages quote the malformed event (kept on the error event, for the caller):
    # its content, the answer's own words, must not reach a span's exception.message.
    async def handle(request: web.Request) -> web.StreamResponse:
        await request.read()
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        await resp.write(chunk("Hello. "))
        await resp.write(
            b'data: {"choices":[{"index":0,"delta":{"content":"' + SECRET.encode() + b"\n\n"
        )
        await resp.write(
            b'data: {"choices":[{"index":0,"delta":{"content":["' + SECRET.encode() + b'"]}}]}\n\n'
        )
        await resp.write(chunk(None, "stop"))
        await resp.write(b"data: [DONE]\n\n")
        return resp

    app = web.Application()
    app.router.add_post("/v1/chat/completions", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        base = f"http://127.0.0.1:{runner.addresses[0][1]}/v1"
        async with stream_chat(body(model="m"), base_url=base, timeouts=FAST) as s:
            answer = await s.until_done()
    finally:
        await runner.cleanup()
    assert {e.code for e in answer.errors} >= {"invalid_json"}
    assert any(SECRET in e.message for e in answer.errors)  # the caller still sees it
    exceptions = [e for sp in otel.finished() for e in sp.events if e.name == "exception"]
    assert len(exceptions) == len(answer.errors)
    for sp in otel.finished():
        values = [*(sp.attributes or {}).values(), sp.status.description or ""]
        values += [v for e in sp.events for v in (e.attributes or {}).values()]
        assert not any(SECRET[4:20] in str(v) for v in values), sp.name
